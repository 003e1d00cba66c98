// KVCache: keys and values of every layer for `rows` sequences, preallocated once for
// max_context positions and written by position, never grown.
// Layout (layer, row, kv_head, position, head_dim): the keys one head attends over are
// contiguous, so attention is a matrix product over a plain block.
#pragma once

#include <cstdint>
#include <vector>

#include <xtensor/xtensor.hpp>

namespace kvgen {

class KVCache {
 public:
  KVCache(int64_t layers, int64_t rows, int64_t max_context, int64_t kv_heads, int64_t head_dim);

  int64_t rows() const { return dim(k_, 1); }
  int64_t max_context() const { return dim(k_, 3); }
  int64_t length(int64_t row) const { return length_[row]; }
  void set_length(int64_t row, int64_t n) { length_[row] = n; }

  // (max_context, head_dim) block of one layer, row and head.
  float* keys(int64_t layer, int64_t row, int64_t head) { return k_.data() + offset(layer, row, head); }
  float* values(int64_t layer, int64_t row, int64_t head) { return v_.data() + offset(layer, row, head); }

  // Row r takes the contents of row parents[r] (before the call), for every r. Copies
  // only rows whose parent is another row, and only their valid positions: at most
  // rows x layers x 2 x length x kv_dim floats; a permutation cycle goes through one
  // row of scratch.
  void reorder(const int64_t* parents);

  // Row dst becomes a copy of row src.
  void copy_row(int64_t src, int64_t dst);

  // Bytes held by keys and values.
  int64_t bytes() const { return bytes_for(layers(), rows(), max_context(), kv_heads(), head_dim()); }

  // Bytes the keys and values of a cache of these sizes take (ValueError when the
  // product does not fit in int64): the one formula, for a cache that exists or not.
  static int64_t bytes_for(int64_t layers, int64_t rows, int64_t max_context, int64_t kv_heads, int64_t head_dim);

 private:
  // Sizes and offsets are read from the tensors' shapes and strides (in floats).
  static int64_t dim(const auto& t, size_t axis) { return static_cast<int64_t>(t.shape(axis)); }
  int64_t layers() const { return dim(k_, 0); }
  int64_t kv_heads() const { return dim(k_, 2); }
  int64_t head_dim() const { return dim(k_, 4); }
  // Offset of the (position, head_dim) block of (layer, row, head) in k_ / v_.
  int64_t offset(int64_t layer, int64_t row, int64_t head) const {
    const auto& s = k_.strides();
    return layer * s[0] + row * s[1] + head * s[2];
  }
  // Offset of the (position, head_dim) block of (layer, head) in scratch_k_ / scratch_v_.
  int64_t scratch_offset(int64_t layer, int64_t head) const {
    const auto& s = scratch_k_.strides();
    return layer * s[0] + head * s[1];
  }
  void copy_row_to(const float* k_src_base, const float* v_src_base, int64_t src_row, int64_t dst, int64_t len,
                   bool src_is_scratch);

  xt::xtensor<float, 5> k_, v_;             // (layer, row, kv_head, position, head_dim)
  xt::xtensor<float, 4> scratch_k_, scratch_v_;  // (layer, kv_head, position, head_dim): one row
  std::vector<int64_t> length_;
  std::vector<int64_t> refs_, pending_, new_length_;  // reorder bookkeeping
};

}  // namespace kvgen
