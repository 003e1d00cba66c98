// A table read a row per token and too large to hold in the working set (Gemma 4's per-layer
// embeddings: a row of layers x 256 weights for each of 262,144 tokens), left where the loader
// put it, in the file's mapping: row(n) decodes one row from the file's own blocks, so only
// the pages of the rows read are ever touched and nothing is repacked at load.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "kvgen/quant/quant_type.h"

namespace kvgen {

class RowTable {
 public:
  RowTable() = default;
  // `data`: the file's bytes of a [rows, cols] tensor of `type` ("F32" or a GGUF type that
  // kvgen::quant reads), `bytes` long (ValueError naming `name` when that is not its size).
  RowTable(const std::string& name, const void* data, const std::string& type, int64_t bytes, int64_t rows,
           int64_t cols);

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  // Bytes of the table in the file (mapped, not held).
  int64_t bytes() const { return rows_ * row_bytes_; }
  // out[0, cols) = row n as float, the file's values (ValueError when n is not a row).
  void row(int64_t n, float* out) const;

 private:
  const uint8_t* data_ = nullptr;
  std::optional<quant::QuantType> type_;  // none: float32
  int64_t rows_ = 0, cols_ = 0, row_bytes_ = 0;
};

}  // namespace kvgen
