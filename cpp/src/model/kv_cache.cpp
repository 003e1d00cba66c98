// KVCache: preallocated per-layer keys/values; in-place reorder for beam search.
#include "kvgen/model/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "kvgen/limits.h"

namespace kvgen {

KVCache::KVCache(int64_t layers, int64_t rows, int64_t max_context, int64_t kv_heads, int64_t head_dim) {
  // The element count must fit before from_shape multiplies it in size_t.
  [[maybe_unused]] int64_t floats = 1;
  for (int64_t n : {layers, rows, kv_heads, max_context, head_dim}) floats = limits::checked_mul(floats, n, "KV cache");
  length_.assign(rows, 0);
  const std::array<size_t, 5> shape{static_cast<size_t>(layers), static_cast<size_t>(rows),
                                    static_cast<size_t>(kv_heads), static_cast<size_t>(max_context),
                                    static_cast<size_t>(head_dim)};
  k_ = xt::xtensor<float, 5>::from_shape(shape);
  v_ = xt::xtensor<float, 5>::from_shape(shape);
}

int64_t KVCache::bytes_for(int64_t layers, int64_t rows, int64_t max_context, int64_t kv_heads, int64_t head_dim) {
  int64_t bytes = 2 * static_cast<int64_t>(sizeof(float));  // keys and values
  for (int64_t n : {layers, rows, max_context, kv_heads, head_dim})
    bytes = limits::checked_mul(bytes, n, "KV cache bytes");
  return bytes;
}

void KVCache::copy_row_to(const float* k_src, const float* v_src, int64_t src_row, int64_t dst, int64_t len,
                          bool src_is_scratch) {
  const int64_t floats = len * head_dim();
  for (int64_t l = 0; l < layers(); ++l)
    for (int64_t h = 0; h < kv_heads(); ++h) {
      const int64_t from = src_is_scratch ? scratch_offset(l, h) : offset(l, src_row, h);
      std::memcpy(k_.data() + offset(l, dst, h), k_src + from, sizeof(float) * floats);
      std::memcpy(v_.data() + offset(l, dst, h), v_src + from, sizeof(float) * floats);
    }
}

void KVCache::copy_row(int64_t src, int64_t dst) {
  if (src == dst) return;
  copy_row_to(k_.data(), v_.data(), src, dst, length_[src], false);
  length_[dst] = length_[src];
}

void KVCache::reorder(const int64_t* parents) {
  // refs_[s]: rows still to be written that read row s. A row can be overwritten once
  // nothing reads it; a cycle is broken by saving one row to scratch.
  refs_.assign(rows(), 0);
  pending_.clear();
  for (int64_t r = 0; r < rows(); ++r)
    if (parents[r] != r) {
      pending_.push_back(r);
      ++refs_[parents[r]];
    }
  int64_t in_scratch = -1, scratch_len = 0;
  std::vector<int64_t>& new_length = new_length_;
  new_length = length_;
  while (!pending_.empty()) {
    bool progressed = false;
    for (size_t i = 0; i < pending_.size();) {
      const int64_t r = pending_[i];
      if (refs_[r] > 0) {
        ++i;
        continue;
      }
      const int64_t p = parents[r];
      if (p == in_scratch) {
        copy_row_to(scratch_k_.data(), scratch_v_.data(), p, r, scratch_len, true);
        new_length[r] = scratch_len;
      } else {
        copy_row_to(k_.data(), v_.data(), p, r, length_[p], false);
        new_length[r] = length_[p];
      }
      --refs_[p];
      pending_[i] = pending_.back();
      pending_.pop_back();
      progressed = true;
    }
    if (!progressed) {  // every pending row is read by another: a cycle
      if (scratch_k_.size() == 0) {
        const std::array<size_t, 4> shape{k_.shape(0), k_.shape(2), k_.shape(3), k_.shape(4)};
        scratch_k_ = xt::xtensor<float, 4>::from_shape(shape);
        scratch_v_ = xt::xtensor<float, 4>::from_shape(shape);
      }
      const int64_t r = pending_.front();
      scratch_len = length_[r];
      const int64_t floats = scratch_len * head_dim();
      for (int64_t l = 0; l < layers(); ++l)
        for (int64_t h = 0; h < kv_heads(); ++h) {
          const int64_t to = scratch_offset(l, h);
          std::memcpy(scratch_k_.data() + to, k_.data() + offset(l, r, h), sizeof(float) * floats);
          std::memcpy(scratch_v_.data() + to, v_.data() + offset(l, r, h), sizeof(float) * floats);
        }
      in_scratch = r;
      refs_[r] = 0;  // its readers now read the scratch copy
    }
  }
  std::swap(length_, new_length_);
}

}  // namespace kvgen
