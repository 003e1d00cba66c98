// TensorMap: name, type and shape checks with errors that name the tensor.
#include "kvgen/runtime/tensors.h"

#include <algorithm>
#include <memory>
#include <sstream>

#include "kvgen/errors.h"
#include "kvgen/limits.h"
#include "kvgen/platform.h"
#include "kvgen/quant/packed_matrix.h"

namespace kvgen {
namespace {

template <class Shape>
std::string shape_str(const Shape& s) {
  std::ostringstream out;
  out << "(";
  for (size_t i = 0; i < s.size(); ++i) out << (i ? ", " : "") << s[i];
  out << (s.size() == 1 ? ",)" : ")");
  return out.str();
}

}  // namespace

void TensorMap::add(std::string name, TensorView view) {
  int64_t count = 1;
  for (int64_t d : view.shape) {
    if (d < 0) throw ValueError("tensor '" + name + "' has a negative dimension: " + shape_str(view.shape));
    count = limits::checked_mul(count, d, "tensor '" + name + "' size");
  }
  if (view.type == "F32" && view.bytes != limits::checked_mul(count, 4, "tensor '" + name + "' bytes"))
    throw ValueError("tensor '" + name + "' of shape " + shape_str(view.shape) + " holds " +
                     std::to_string(view.bytes) + " bytes, not 4 per float");
  tensors_.insert_or_assign(std::move(name), std::move(view));
}

const TensorView& TensorMap::find(const std::string& name, const std::vector<int64_t>& shape) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw ValueError("the model file has no tensor '" + name + "'");
  const std::vector<int64_t>& have = it->second.shape;
  if (have != shape)
    throw ValueError("tensor '" + name + "' has shape " + shape_str(have) + ", expected " + shape_str(shape) +
                     " from the model config");
  return it->second;
}

const float* TensorMap::get(const std::string& name, const std::vector<int64_t>& shape) const {
  const TensorView& v = find(name, shape);
  if (v.type != "F32")
    throw TypeError("tensor '" + name + "' is " + v.type + "; kvgen reads it only as float32");
  return static_cast<const float*>(v.data);
}

LinearWeight TensorMap::linear(const std::string& name, int64_t out, int64_t in) const {
  const TensorView& v = find(name, {out, in});
  if (v.type == "F32") return LinearWeight::dense(static_cast<const float*>(v.data), out, in);
  std::shared_ptr<const quant::PackedMatrix> packed;
  try {
    packed = std::make_shared<const quant::PackedMatrix>(quant::parse_quant_type(v.type),
                                                         static_cast<const uint8_t*>(v.data), v.bytes, out, in);
  } catch (const ValueError& e) {
    throw ValueError("tensor '" + name + "': " + e.what());
  }
  if (v.mapped) platform::release_mapped_pages(v.data, v.bytes);
  return LinearWeight::packed(std::move(packed));
}

RowTable TensorMap::row_table(const std::string& name, int64_t rows, int64_t cols) const {
  const TensorView& v = find(name, {rows, cols});
  RowTable table(name, v.data, v.type, v.bytes, rows, cols);
  if (v.type != "F32") read_in_place_.push_back(name);
  // pages the loader's checks read are dropped from the process: only the rows read come back
  if (v.mapped) platform::release_mapped_pages(v.data, v.bytes);
  return table;
}

std::vector<LinearWeight> TensorMap::stacked_linear(const std::string& name, int64_t count, int64_t out,
                                                    int64_t in) const {
  const TensorView& v = find(name, {count, out, in});
  std::vector<LinearWeight> weights;
  if (v.type == "F32") {
    const float* w = static_cast<const float*>(v.data);  // (count, out, in), its size checked by add()
    for (int64_t e = 0; e < count; ++e) weights.push_back(LinearWeight::dense(w + e * out * in, out, in));
    return weights;
  }
  if (count < 1 || v.bytes % count != 0)
    throw ValueError("tensor '" + name + "' holds " + std::to_string(v.bytes) + " bytes, which do not split into " +
                     std::to_string(count) + " matrices");
  const int64_t each = v.bytes / count;
  try {
    const quant::QuantType type = quant::parse_quant_type(v.type);
    if (out % 16 == 0) {  // repacked at once, as one (count * out, in) matrix (whole 16-row groups each)
      const auto whole = std::make_shared<const quant::PackedMatrix>(type, static_cast<const uint8_t*>(v.data), v.bytes,
                                                                     limits::checked_mul(count, out, name), in);
      for (int64_t e = 0; e < count; ++e)
        weights.push_back(LinearWeight::packed(quant::PackedMatrix::rows_of(whole, e * out, out)));
    } else {
      for (int64_t e = 0; e < count; ++e)
        weights.push_back(LinearWeight::packed(std::make_shared<const quant::PackedMatrix>(
            type, static_cast<const uint8_t*>(v.data) + e * each, each, out, in)));
    }
  } catch (const ValueError& e) {
    throw ValueError("tensor '" + name + "': " + e.what());
  }
  if (v.mapped) platform::release_mapped_pages(v.data, v.bytes);
  return weights;
}

std::vector<std::string> TensorMap::names() const {
  std::vector<std::string> out;
  for (const auto& [name, view] : tensors_) out.push_back(name);
  return out;
}

}  // namespace kvgen
