// KVCache: preallocated per-layer keys/values (sliding-window layers in rings); in-place
// reorder for beam search.
#include "kvgen/model/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "kvgen/errors.h"
#include "kvgen/limits.h"
#include "kvgen/model/half.h"

namespace kvgen {

int64_t KVCache::capacity_for(int64_t window, int64_t max_context) {
  return window > 0 && window < max_context - kRingSlack ? window + kRingSlack : max_context;
}

KVCache::KVCache(int64_t layers, int64_t rows, int64_t max_context, int64_t kv_heads, int64_t head_dim,
                 const std::vector<int64_t>& windows, KVType type)
    : max_context_(max_context), kv_heads_(kv_heads), head_dim_(head_dim), type_(type) {
  // The element count must fit before anything is allocated (bytes_for checks it).
  bytes_for(layers, rows, max_context, kv_heads, head_dim, windows, type);
  int64_t floats = 0, scratch_floats = 0;
  for (int64_t l = 0; l < layers; ++l) {
    const int64_t window = windows.empty() ? 0 : windows[l];
    capacity_.push_back(capacity_for(window, max_context));
    if (capacity_.back() < max_context && capacity_.back() - window + 1 < max_rollback_) {
      // a ring: after writing up to position E - 1 it holds E - capacity .. E - 1, and the
      // window of position T needs T - window + 1 .. T
      max_rollback_ = capacity_.back() - window + 1;
      ring_layer_ = l;
      ring_window_ = window;
    }
    layer_offset_.push_back(floats);
    scratch_layer_offset_.push_back(scratch_floats);
    floats += rows * kv_heads * capacity_.back() * head_dim;
    scratch_floats += kv_heads * capacity_.back() * head_dim;
  }
  length_.assign(rows, 0);
  written_ = xt::xtensor<uint64_t, 1>::from_shape({static_cast<size_t>(rows * max_context)});
  elements_ = floats;
  k_ = storage(floats);
  v_ = storage(floats);
}

xt::xtensor<float, 1> KVCache::storage(int64_t elements) const {
  const int64_t floats = (elements * element_bytes(type_) + 3) / 4;  // halves: two to a float
  return xt::xtensor<float, 1>::from_shape({static_cast<size_t>(floats)});
}

void KVCache::store(int64_t layer, int64_t row, int64_t slot, const float* k, const float* v) {
  for (int64_t h = 0; h < kv_heads_; ++h) {
    const int64_t to = offset(layer, row, h) + slot * head_dim_;
    if (half()) {
      half::from_floats(halves(k_) + to, k + h * head_dim_, head_dim_);
      half::from_floats(halves(v_) + to, v + h * head_dim_, head_dim_);
    } else {
      std::memcpy(k_.data() + to, k + h * head_dim_, sizeof(float) * head_dim_);
      std::memcpy(v_.data() + to, v + h * head_dim_, sizeof(float) * head_dim_);
    }
  }
}

void KVCache::load(float* keys, float* values, int64_t layer, int64_t row, int64_t head, int64_t first, int64_t n) {
  const int64_t from = offset(layer, row, head) + first * head_dim_;
  if (half()) {
    half::to_floats(keys, halves(k_) + from, n * head_dim_);
    half::to_floats(values, halves(v_) + from, n * head_dim_);
  } else {
    std::memcpy(keys, k_.data() + from, sizeof(float) * n * head_dim_);
    std::memcpy(values, v_.data() + from, sizeof(float) * n * head_dim_);
  }
}

int64_t KVCache::bytes_for(int64_t layers, int64_t rows, int64_t max_context, int64_t kv_heads, int64_t head_dim,
                           const std::vector<int64_t>& windows, KVType type) {
  int64_t per_position = 2 * element_bytes(type);  // keys and values
  for (int64_t n : {rows, kv_heads, head_dim}) per_position = limits::checked_mul(per_position, n, "KV cache bytes");
  int64_t bytes = 0;
  for (int64_t l = 0; l < layers; ++l) {
    const int64_t slots = capacity_for(windows.empty() ? 0 : windows[l], max_context);
    const int64_t layer = limits::checked_mul(per_position, slots, "KV cache bytes");
    if (__builtin_add_overflow(bytes, layer, &bytes))
      throw ValueError("KV cache bytes: the size of " + std::to_string(layers) + " layers overflows");
  }
  return bytes;
}

void KVCache::copy_row_to(const xt::xtensor<float, 1>& k_src, const xt::xtensor<float, 1>& v_src, int64_t src_row,
                          int64_t dst, int64_t from, int64_t len, bool src_is_scratch) {
  for (int64_t l = 0; l < layers(); ++l) {
    const int64_t first = capacity_[l] < max_context_ ? 0 : std::min(from, len);  // a ring: every valid slot
    const int64_t skip = first * head_dim_;
    const int64_t bytes = (valid_slots(l, len) - first) * head_dim_ * element_bytes(type_);
    if (bytes <= 0) continue;
    for (int64_t h = 0; h < kv_heads_; ++h) {
      const int64_t src = (src_is_scratch ? scratch_offset(l, h) : offset(l, src_row, h)) + skip;
      std::memcpy(at(k_, offset(l, dst, h) + skip), at(k_src, src), bytes);
      std::memcpy(at(v_, offset(l, dst, h) + skip), at(v_src, src), bytes);
    }
  }
}

void KVCache::set_length(int64_t row, int64_t n) {
  uint64_t* ids = written(row);
  for (int64_t p = length_[row]; p < std::min(n, max_context_); ++p) ids[p] = next_write_++;
  length_[row] = n;
}

int64_t KVCache::shared_prefix(int64_t dst, const uint64_t* ids, int64_t len) {
  const uint64_t* own = written(dst);
  const int64_t n = std::min(len, length_[dst]);
  return std::mismatch(own, own + n, ids).first - own;
}

void KVCache::take_row(const xt::xtensor<float, 1>& k_src, const xt::xtensor<float, 1>& v_src, const uint64_t* ids,
                       int64_t src_row, int64_t dst, int64_t len, bool src_is_scratch) {
  const int64_t from = shared_prefix(dst, ids, len);
  copy_row_to(k_src, v_src, src_row, dst, from, len, src_is_scratch);
  std::copy(ids + from, ids + len, written(dst) + from);
}

void KVCache::truncate(int64_t row, int64_t length) {
  if (row < 0 || row >= rows())
    throw ValueError("cache row " + std::to_string(row) + " is outside [0, " + std::to_string(rows()) + ")");
  if (length < 0 || length > length_[row])
    throw ValueError("cannot truncate row " + std::to_string(row) + " to " + std::to_string(length) +
                     " positions: it holds " + std::to_string(length_[row]));
  if (length_[row] - length > max_rollback_)
    throw ValueError("cannot roll row " + std::to_string(row) + " back by " + std::to_string(length_[row] - length) +
                     " positions: layer " + std::to_string(ring_layer_) + "'s sliding-window ring (window " +
                     std::to_string(ring_window_) + ") keeps only " + std::to_string(max_rollback_) +
                     " positions beyond its window");
  length_[row] = length;
}

void KVCache::copy_row(int64_t src, int64_t dst) {
  if (src == dst) return;
  take_row(k_, v_, written(src), src, dst, length_[src], false);
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
        take_row(scratch_k_, scratch_v_, scratch_written_.data(), p, r, scratch_len, true);
        new_length[r] = scratch_len;
      } else {
        take_row(k_, v_, written(p), p, r, length_[p], false);
        new_length[r] = length_[p];
      }
      --refs_[p];
      pending_[i] = pending_.back();
      pending_.pop_back();
      progressed = true;
    }
    if (!progressed) {  // every pending row is read by another: a cycle
      if (scratch_k_.size() == 0) {
        const int64_t floats = layers() ? scratch_layer_offset_.back() + kv_heads_ * capacity_.back() * head_dim_ : 0;
        scratch_k_ = storage(floats);
        scratch_v_ = storage(floats);
        scratch_written_ = xt::xtensor<uint64_t, 1>::from_shape({static_cast<size_t>(max_context_)});
      }
      const int64_t r = pending_.front();
      scratch_len = length_[r];
      // the positions of r that a row reading it lacks: from the shortest prefix they share
      // (those rows are pending, so unchanged until they read the scratch)
      int64_t from = scratch_len;
      for (const int64_t q : pending_)
        if (parents[q] == r) from = std::min(from, shared_prefix(q, written(r), scratch_len));
      for (int64_t l = 0; l < layers(); ++l) {
        const int64_t first = capacity_[l] < max_context_ ? 0 : from;  // a ring: every valid slot
        const int64_t bytes = (valid_slots(l, scratch_len) - first) * head_dim_ * element_bytes(type_);
        if (bytes <= 0) continue;
        for (int64_t h = 0; h < kv_heads_; ++h) {
          const int64_t to = scratch_offset(l, h) + first * head_dim_;
          std::memcpy(at(scratch_k_, to), at(k_, offset(l, r, h) + first * head_dim_), bytes);
          std::memcpy(at(scratch_v_, to), at(v_, offset(l, r, h) + first * head_dim_), bytes);
        }
      }
      std::copy(written(r), written(r) + scratch_len, scratch_written_.data());
      in_scratch = r;
      refs_[r] = 0;  // its readers now read the scratch copy
    }
  }
  std::swap(length_, new_length_);
}

}  // namespace kvgen
