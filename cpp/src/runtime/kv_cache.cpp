// KVCache: preallocated per-layer keys/values (sliding-window layers in rings); beam
// search's reorder through the rows' blocks.
#include "kvgen/runtime/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "kvgen/errors.h"
#include "kvgen/limits.h"
#include "kvgen/runtime/half.h"

namespace kvgen {

int64_t KVCache::capacity_for(int64_t window, int64_t max_context) {
  return window > 0 && window < max_context - kRingSlack ? window + kRingSlack : max_context;
}

int64_t KVCache::layer_capacity(int64_t l, const std::vector<int64_t>& windows,
                                const std::vector<RecurrentLayerShape>& recurrent, int64_t max_context,
                                const KVLayers& kv_layers) {
  if (!recurrent.empty() && (recurrent[l].conv_channels > 0 || recurrent[l].heads > 0)) return 0;
  if (kv_layers.source(l) != l) return 0;
  if (kv_layers.read_by_others(l)) return max_context;
  return capacity_for(windows.empty() ? 0 : windows[l], max_context);
}

namespace {
bool any_recurrent(const std::vector<RecurrentLayerShape>& layers) {
  return std::any_of(layers.begin(), layers.end(),
                     [](const RecurrentLayerShape& s) { return s.conv_channels > 0 || s.heads > 0; });
}
}  // namespace

KVCache::KVCache(int64_t layers, int64_t rows, int64_t max_context, int64_t kv_heads, int64_t head_dim,
                 const std::vector<int64_t>& windows, KVType type, const std::vector<RecurrentLayerShape>& recurrent,
                 int64_t snapshots, const KVLayers& kv_layers)
    : max_context_(max_context), type_(type) {
  // The element count must fit before anything is allocated (bytes_for checks it).
  bytes_for(layers, rows, max_context, kv_heads, head_dim, windows, type, recurrent, snapshots, kv_layers);
  if (any_recurrent(recurrent)) state_ = std::make_unique<StateCache>(recurrent, rows, snapshots);
  int64_t floats = 0;
  for (int64_t l = 0; l < layers; ++l) {
    const int64_t window = windows.empty() ? 0 : windows[l];
    capacity_.push_back(layer_capacity(l, windows, recurrent, max_context, kv_layers));
    kv_heads_.push_back(kv_layers.kv_heads_of(l, kv_heads));
    head_dim_.push_back(kv_layers.head_dim_of(l, head_dim));
    if (capacity_.back() > 0 && capacity_.back() < max_context && capacity_.back() - window + 1 < max_rollback_) {
      // a ring: after writing up to position E - 1 it holds E - capacity .. E - 1, and the
      // window of position T needs T - window + 1 .. T
      max_rollback_ = capacity_.back() - window + 1;
      ring_layer_ = l;
      ring_window_ = window;
    }
    layer_offset_.push_back(floats);
    scale_offset_.push_back(scales_);
    floats += rows * kv_heads_.back() * capacity_.back() * head_dim_.back();
    scales_ += rows * kv_heads_.back() * capacity_.back();
  }
  length_.assign(rows, 0);
  physical_.resize(rows);
  for (int64_t r = 0; r < rows; ++r) physical_[r] = r;
  written_ = xt::xtensor<uint64_t, 1>::from_shape({static_cast<size_t>(rows * max_context)});
  elements_ = floats;
  k_ = storage(floats);
  v_ = storage(floats);
  if (int8()) {
    ks_ = xt::xtensor<float, 1>::from_shape({static_cast<size_t>(scales_)});
    vs_ = xt::xtensor<float, 1>::from_shape({static_cast<size_t>(scales_)});
  }
}

namespace {
// q (n) = x (n) / scale rounded to the nearest int8, scale = max|x| / 127 (returned; 0 for a zero row).
float quantize_row(int8_t* q, const float* x, int64_t n) {
  float top = 0.0f;
  for (int64_t i = 0; i < n; ++i) top = std::max(top, std::fabs(x[i]));
  const float inv = top > 0.0f ? 127.0f / top : 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float y = x[i] * inv;  // a NaN (a broken model's key) becomes -127, never an undefined conversion
    q[i] = static_cast<int8_t>(std::nearbyint(y >= -127.0f ? (y <= 127.0f ? y : 127.0f) : -127.0f));
  }
  return top / 127.0f;
}

// x (n) = q (n) * scale.
void dequantize_row(float* x, const int8_t* q, float scale, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(q[i]) * scale;
}
}  // namespace

xt::xtensor<float, 1> KVCache::storage(int64_t elements) const {
  const int64_t floats = (elements * element_bytes(type_) + 3) / 4;  // halves: two to a float
  return xt::xtensor<float, 1>::from_shape({static_cast<size_t>(floats)});
}

void KVCache::store(int64_t layer, int64_t row, int64_t slot, const float* k, const float* v) {
  const int64_t hd = head_dim_[layer];
  for (int64_t h = 0; h < kv_heads_[layer]; ++h) {
    const int64_t to = offset(layer, row, h) + slot * hd;
    if (half()) {
      half::from_floats(halves(k_) + to, k + h * hd, hd);
      half::from_floats(halves(v_) + to, v + h * hd, hd);
    } else if (int8()) {
      const int64_t s = scale_offset(layer, physical_[row], h) + slot;
      ks_[s] = quantize_row(bytes_of(k_) + to, k + h * hd, hd);
      vs_[s] = quantize_row(bytes_of(v_) + to, v + h * hd, hd);
    } else {
      std::memcpy(k_.data() + to, k + h * hd, sizeof(float) * hd);
      std::memcpy(v_.data() + to, v + h * hd, sizeof(float) * hd);
    }
  }
}

void KVCache::load(float* keys, float* values, int64_t layer, int64_t row, int64_t head, int64_t first, int64_t n) {
  const int64_t hd = head_dim_[layer];
  const int64_t from = offset(layer, row, head) + first * hd;
  if (half()) {
    half::to_floats(keys, halves(k_) + from, n * hd);
    half::to_floats(values, halves(v_) + from, n * hd);
  } else if (int8()) {
    const int64_t s = scale_offset(layer, physical_[row], head) + first;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t at_i = from + i * hd;
      dequantize_row(keys + i * hd, bytes_of(k_) + at_i, ks_[s + i], hd);
      dequantize_row(values + i * hd, bytes_of(v_) + at_i, vs_[s + i], hd);
    }
  } else {
    std::memcpy(keys, k_.data() + from, sizeof(float) * n * hd);
    std::memcpy(values, v_.data() + from, sizeof(float) * n * hd);
  }
}

int64_t KVCache::bytes_for(int64_t layers, int64_t rows, int64_t max_context, int64_t kv_heads, int64_t head_dim,
                           const std::vector<int64_t>& windows, KVType type,
                           const std::vector<RecurrentLayerShape>& recurrent, int64_t snapshots,
                           const KVLayers& kv_layers) {
  if (!recurrent.empty() && static_cast<int64_t>(recurrent.size()) != layers)
    throw ValueError(std::to_string(recurrent.size()) + " recurrent layer shapes for " + std::to_string(layers) +
                     " layers");
  int64_t bytes = 0;
  for (int64_t l = 0; l < layers; ++l) {
    // keys and values (and an Int8 cache's scale per head's row)
    int64_t per_position =
        limits::checked_mul(element_bytes(type), kv_layers.head_dim_of(l, head_dim), "KV cache bytes");
    per_position = limits::checked_mul(2, per_position + scale_bytes(type), "KV cache bytes");
    for (int64_t n : {rows, kv_layers.kv_heads_of(l, kv_heads)})
      per_position = limits::checked_mul(per_position, n, "KV cache bytes");
    const int64_t slots = layer_capacity(l, windows, recurrent, max_context, kv_layers);
    const int64_t layer = limits::checked_mul(per_position, slots, "KV cache bytes");
    if (__builtin_add_overflow(bytes, layer, &bytes))
      throw ValueError("KV cache bytes: the size of " + std::to_string(layers) + " layers overflows");
  }
  if (any_recurrent(recurrent)) {
    const int64_t state = StateCache::bytes_for(recurrent, rows, snapshots);
    if (__builtin_add_overflow(bytes, state, &bytes)) throw ValueError("KV cache bytes: the recurrent state overflows");
  }
  return bytes;
}

void KVCache::copy_slots(int64_t src, int64_t dst, int64_t from, int64_t len) {
  for (int64_t l = 0; l < layers(); ++l) {
    const int64_t first = capacity_[l] < max_context_ ? 0 : std::min(from, len);  // a ring: every valid slot
    const int64_t skip = first * head_dim_[l];
    const int64_t bytes = (valid_slots(l, len) - first) * head_dim_[l] * element_bytes(type_);
    if (bytes <= 0) continue;
    for (int64_t h = 0; h < kv_heads_[l]; ++h) {
      std::memcpy(at(k_, block_offset(l, dst, h) + skip), at(k_, block_offset(l, src, h) + skip), bytes);
      std::memcpy(at(v_, block_offset(l, dst, h) + skip), at(v_, block_offset(l, src, h) + skip), bytes);
      if (int8()) {  // the rows' scales
        const int64_t d = scale_offset(l, dst, h) + first, s = scale_offset(l, src, h) + first;
        const int64_t n = valid_slots(l, len) - first;
        std::copy(ks_.data() + s, ks_.data() + s + n, ks_.data() + d);
        std::copy(vs_.data() + s, vs_.data() + s + n, vs_.data() + d);
      }
    }
  }
}

void KVCache::set_length(int64_t row, int64_t n) {
  if (n == 0 && state_) state_->reset(row);
  uint64_t* ids = written(physical_[row]);
  for (int64_t p = length_[row]; p < std::min(n, max_context_); ++p) ids[p] = next_write_++;
  length_[row] = n;
}

int64_t KVCache::shared_prefix(int64_t a, int64_t a_len, int64_t b, int64_t b_len) {
  const uint64_t* x = written(a);
  const int64_t n = std::min({a_len, b_len, max_context_});
  return std::mismatch(x, x + n, written(b)).first - x;
}

void KVCache::take_block(int64_t src, int64_t src_len, int64_t dst, int64_t dst_len) {
  const int64_t from = shared_prefix(src, src_len, dst, dst_len);
  copy_slots(src, dst, from, src_len);
  std::copy(written(src) + from, written(src) + std::min(src_len, max_context_), written(dst) + from);
}

void KVCache::check_rollback(int64_t row, int64_t length) const {
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
}

void KVCache::truncate(int64_t row, int64_t length) {
  check_rollback(row, length);
  if (state_ && length != length_[row]) {
    if (length != 0)
      throw ValueError("cannot truncate row " + std::to_string(row) + " to " + std::to_string(length) +
                       " positions: the model's recurrent layers keep a state of all " +
                       std::to_string(length_[row]) + " positions, which cannot step back");
    state_->reset(row);
  }
  length_[row] = length;
}

void KVCache::snapshot(int64_t row, int64_t slot) {
  if (!state_) throw ValueError("the model keeps no recurrent state to snapshot");
  state_->snapshot(row, slot);
}

void KVCache::resume(int64_t row, int64_t length, int64_t slot) {
  if (!state_) throw ValueError("the model keeps no recurrent state to restore");
  check_rollback(row, length);
  state_->restore(slot, row);  // checks the slot before copying anything
  length_[row] = length;
}

void KVCache::copy_row(int64_t src, int64_t dst) {
  if (src == dst) return;
  if (state_) state_->copy_row(src, dst);
  take_block(physical_[src], length_[src], physical_[dst], length_[dst]);
  length_[dst] = length_[src];
}

void KVCache::reorder(const int64_t* parents) {
  // children_[p]: the rows that take row p. One of them (p itself when it stays) takes
  // p's block as it is; each other one takes the block of a row nobody takes, with p's
  // positions copied in from where the two blocks differ.
  const int64_t n = rows();
  children_.assign(n, 0);
  for (int64_t r = 0; r < n; ++r) ++children_[parents[r]];
  spare_.clear();  // rows nobody takes: their blocks are free
  for (int64_t q = 0; q < n; ++q)
    if (children_[q] == 0) spare_.push_back(q);
  new_physical_.assign(n, -1);
  new_length_.resize(n);
  given_.assign(n, 0);  // whether p's block went to one of its children
  for (int64_t r = 0; r < n; ++r)
    if (parents[r] == r) new_physical_[r] = physical_[r], given_[r] = 1;
  for (int64_t r = 0; r < n; ++r) {
    const int64_t p = parents[r];
    new_length_[r] = length_[p];
    if (new_physical_[r] >= 0) continue;
    if (!given_[p]) {
      new_physical_[r] = physical_[p];
      given_[p] = 1;
      continue;
    }
    // the free block that shares the longest prefix with p's
    size_t best = 0;
    int64_t best_shared = -1;
    for (size_t i = 0; i < spare_.size(); ++i) {
      const int64_t q = spare_[i];
      const int64_t shared = shared_prefix(physical_[p], length_[p], physical_[q], length_[q]);
      if (shared > best_shared) best = i, best_shared = shared;
    }
    const int64_t q = spare_[best];
    spare_[best] = spare_.back();
    spare_.pop_back();
    take_block(physical_[p], length_[p], physical_[q], length_[q]);
    new_physical_[r] = physical_[q];
  }
  std::swap(physical_, new_physical_);
  std::swap(length_, new_length_);
  if (state_) state_->reorder(parents);
}

}  // namespace kvgen
