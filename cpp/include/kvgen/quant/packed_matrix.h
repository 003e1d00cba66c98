// A GGUF weight matrix (32-weight blocks, K-quants, lookup or int8 types, F16 / BF16), repacked once at load
// into 16-row interleaved tiles (kernel_abi.h) that the matmul kernels read directly:
// never expanded to float.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kvgen/platform.h"
#include "kvgen/quant/kernel_abi.h"
#include "kvgen/quant/quant_type.h"

namespace kvgen::quant {

class PackedMatrix {
 public:
  // Repacks `raw`, the file's bytes of a [rows, cols] tensor of `type` (row-major: row n
  // is cols / block_weights(type) blocks). ValueError if cols is not a positive multiple of
  // block_weights(type) (32; 256 for K-quants; 1 for F16 / BF16), rows < 1, a size is above
  // kvgen's limits, or raw_bytes is not rows * cols / block_weights(type) * block_bytes(type).
  PackedMatrix(QuantType type, const uint8_t* raw, int64_t raw_bytes, int64_t rows, int64_t cols);
  // Movable, not copyable: view() points into the buffer (a move keeps the buffer).
  PackedMatrix(PackedMatrix&&) = default;
  PackedMatrix& operator=(PackedMatrix&&) = default;
  PackedMatrix(const PackedMatrix&) = delete;
  PackedMatrix& operator=(const PackedMatrix&) = delete;

  QuantType type() const { return view_.type; }
  int64_t rows() const { return view_.rows; }
  int64_t cols() const { return view_.cols; }
  int64_t groups() const { return view_.groups; }
  // Bytes held: the file's bytes plus the zero padding of a last group of < 16 rows (K-quants:
  // plus their decoded sub-block scales, under 3%).
  int64_t bytes() const { return bytes_; }
  const PackedView& view() const { return view_; }

  // Row n as float (the file's values, bit for bit) into out[0, cols): for embedding lookups.
  void dequantize_row(int64_t n, float* out) const;

  // Rows [first_row, first_row + rows) of `whole`, sharing its buffer (which they keep
  // alive): one matrix of a 3-D tensor of experts repacked at once. ValueError unless
  // first_row and rows are multiples of 16 (whole groups) inside whole's rows.
  static std::shared_ptr<const PackedMatrix> rows_of(std::shared_ptr<const PackedMatrix> whole, int64_t first_row,
                                                     int64_t rows);

 private:
  PackedMatrix() = default;
  std::shared_ptr<const PackedMatrix> whole_;  // rows_of's: the matrix whose buffer view_ points into
  platform::ZeroedMemory tiles_;  // (groups, blocks, tile bytes)
  PackedView view_;
  int64_t bytes_ = 0;  // of view_'s tiles
};

// Row n of a [rows, cols] matrix of `type` read from the file's own bytes `raw` (row-major
// blocks, as PackedMatrix's constructor takes them) into out[0, cols): the values
// PackedMatrix::dequantize_row gives, without repacking the matrix, so that a table read a
// row per token can stay in the file's mapping (only the pages of the rows read are touched).
// The caller has checked raw's size (rows * row_bytes(type, cols)) and n < rows.
void dequantize_file_row(QuantType type, const uint8_t* raw, int64_t cols, int64_t n, float* out);
// Bytes of one row of `cols` weights of `type` in a file (ValueError as PackedMatrix's for a bad cols).
int64_t file_row_bytes(QuantType type, int64_t cols);

}  // namespace kvgen::quant
