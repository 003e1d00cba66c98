#include "kvgen/runtime/row_table.h"

#include <cstring>

#include "kvgen/errors.h"
#include "kvgen/limits.h"
#include "kvgen/quant/packed_matrix.h"

namespace kvgen {

RowTable::RowTable(const std::string& name, const void* data, const std::string& type, int64_t bytes, int64_t rows,
                   int64_t cols)
    : data_(static_cast<const uint8_t*>(data)), rows_(rows), cols_(cols) {
  if (rows < 1 || cols < 1)
    throw ValueError("tensor '" + name + "': a table of " + std::to_string(rows) + " x " + std::to_string(cols));
  limits::check_at_most("tensor '" + name + "' rows", rows, limits::kMaxVocab);
  try {
    if (type != "F32") type_ = quant::parse_quant_type(type);
    row_bytes_ = type_ ? quant::file_row_bytes(*type_, cols) : 4 * cols;
  } catch (const ValueError& e) {
    throw ValueError("tensor '" + name + "': " + e.what());
  }
  const int64_t expected = limits::checked_mul(rows, row_bytes_, "tensor '" + name + "' bytes");
  if (bytes != expected)
    throw ValueError("tensor '" + name + "' [" + std::to_string(rows) + ", " + std::to_string(cols) + "] of type " +
                     type + " needs " + std::to_string(expected) + " bytes, got " + std::to_string(bytes));
}

void RowTable::row(int64_t n, float* out) const {
  if (n < 0 || n >= rows_)
    throw ValueError("row " + std::to_string(n) + " is out of range [0, " + std::to_string(rows_) + ")");
  if (!type_) {
    std::memcpy(out, data_ + n * row_bytes_, static_cast<size_t>(row_bytes_));
    return;
  }
  quant::dequantize_file_row(*type_, data_, cols_, n, out);
}

}  // namespace kvgen
