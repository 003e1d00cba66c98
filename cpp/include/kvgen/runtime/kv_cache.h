// KVCache: keys and values of every layer for `rows` sequences, preallocated once and
// written by position, never grown. A full-attention layer holds max_context positions;
// a sliding-window layer of window w holds a ring of min(max_context, w + kRingSlack)
// positions, position p at slot p % capacity, so its memory does not grow with the
// context (the slack lets a prefill write and attend kRingSlack + 1 tokens at a time,
// decoder.cpp).
// Layout per layer (block, kv_head, slot, head_dim), row r in block physical_[r] (beam
// search permutes rows without moving them): the keys one head attends over are
// contiguous, so attention is a matrix product over a plain block (two, where a ring wraps).
// Elements are float32 or IEEE half (KVType::Float16: half the bytes a decode step reads
// at long context; the model's default int8 mode uses it, exact mode keeps float32), or
// int8 (KVType::Int8, opt-in: a quarter of float32's bytes) with one float scale per
// (position, kv head) row of head_dim elements, x ~ q * scale, scale = max|x| / 127
// (symmetric rounding). The scales live in their own arrays in the same (layer, block,
// kv_head, slot) layout and move with their elements.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "kvgen/runtime/kv_layers.h"
#include "kvgen/runtime/state_cache.h"

namespace kvgen {

// What the cache stores keys and values as.
enum class KVType { Float32, Float16, Int8 };

class KVCache {
 public:
  // Slots a sliding-window layer keeps beyond its window.
  static constexpr int64_t kRingSlack = 31;

  // windows: per layer, 0 = full attention, w > 0 = a sliding window of w positions
  // (empty = every layer full).
  // recurrent: per layer of a hybrid model, the recurrent state it keeps (ModelConfig::
  // recurrent_layers; empty = none). Such a layer keeps no keys or values; its state lives
  // in state(), which every row operation below moves with the row's positions.
  // snapshots: spare copies of a row's recurrent state the state cache keeps (StateCache;
  // ignored without a recurrent layer): the prefix cache's and speculative rollback's.
  // kv_layers: per layer, a (kv_heads, head_dim) of its own, or another layer's keys and
  // values it reads (kv_layers.h): such a reader keeps none, and a sliding-window layer that
  // others read keeps every position rather than a ring (its readers run after it in the same
  // forward, over all of that forward's positions).
  KVCache(int64_t layers, int64_t rows, int64_t max_context, int64_t kv_heads, int64_t head_dim,
          const std::vector<int64_t>& windows = {}, KVType type = KVType::Float32,
          const std::vector<RecurrentLayerShape>& recurrent = {}, int64_t snapshots = 0,
          const KVLayers& kv_layers = {});
  // The recurrent layers' state of every row (a hybrid model), or null: indexed by the
  // model's layer (a layer that attends has an empty shape there).
  StateCache* state() { return state_.get(); }

  KVType type() const { return type_; }
  bool half() const { return type_ == KVType::Float16; }
  bool int8() const { return type_ == KVType::Int8; }
  // The kv heads and head_dim of `layer`'s keys and values.
  int64_t kv_heads(int64_t layer) const { return kv_heads_[layer]; }
  int64_t head_dim(int64_t layer) const { return head_dim_[layer]; }

  int64_t rows() const { return static_cast<int64_t>(length_.size()); }
  int64_t max_context() const { return max_context_; }
  int64_t length(int64_t row) const { return length_[row]; }
  // The row holds n positions. Positions it gains (from length(row) to n) were just written
  // (store): each gets a new write id (see reorder). n = 0 also resets the row's recurrent
  // state (a new sequence starts there).
  void set_length(int64_t row, int64_t n);
  // Rolls row back to its first `length` positions without copying (speculative decoding
  // discards rejected drafts): the next forward writes over the rest. A sliding-window
  // ring keeps only kRingSlack + 1 positions beyond its window, so a rollback of more
  // positions than that is refused (ValueError naming the layer) rather than leaving the
  // window with overwritten keys; so is a length outside [0, length(row)]. A recurrent
  // state holds its row's whole past in a fixed size and cannot step back: with one, only
  // a truncate to 0 (the state reset) or to the row's length is accepted.
  void truncate(int64_t row, int64_t length);
  // Snapshot `slot` of the state cache takes row's recurrent state (StateCache::snapshot).
  // ValueError without a recurrent state, for a row or slot out of range.
  void snapshot(int64_t row, int64_t slot);
  // Rolls row back to its first `length` positions and gives it the recurrent state of
  // snapshot `slot`, in one operation: the snapshot must hold the state of exactly those
  // positions (the caller's bookkeeping: taken at that length of this row, or of a row
  // whose first `length` positions were the same tokens). ValueError, changing nothing,
  // without a recurrent state, for a row or slot out of range, a slot never taken, or a
  // length truncate would refuse for the attention layers (beyond the row's length, or a
  // sliding-window ring that cannot roll back so far).
  void resume(int64_t row, int64_t length, int64_t slot);
  // The most positions truncate may discard (INT64_MAX when no layer keeps a ring).
  int64_t max_rollback() const { return max_rollback_; }
  // Positions layer `layer` keeps: max_context, or a sliding window's ring (position p at
  // slot p % capacity; a slot holds the last position written to it).
  int64_t capacity(int64_t layer) const { return capacity_[layer]; }

  // (capacity(layer), head_dim) block of one layer, row and head, of a float32 cache.
  float* keys(int64_t layer, int64_t row, int64_t head) { return k_.data() + offset(layer, row, head); }
  float* values(int64_t layer, int64_t row, int64_t head) { return v_.data() + offset(layer, row, head); }
  // The same block of a Float16 cache.
  uint16_t* half_keys(int64_t layer, int64_t row, int64_t head) { return halves(k_) + offset(layer, row, head); }
  uint16_t* half_values(int64_t layer, int64_t row, int64_t head) { return halves(v_) + offset(layer, row, head); }
  // The same block of an Int8 cache, and its (capacity) scales: element x ~ q * scale[slot].
  int8_t* int8_keys(int64_t layer, int64_t row, int64_t head) { return bytes_of(k_) + offset(layer, row, head); }
  int8_t* int8_values(int64_t layer, int64_t row, int64_t head) { return bytes_of(v_) + offset(layer, row, head); }
  float* key_scales(int64_t layer, int64_t row, int64_t head) { return ks_.data() + scale_offset(layer, physical_[row], head); }
  float* value_scales(int64_t layer, int64_t row, int64_t head) { return vs_.data() + scale_offset(layer, physical_[row], head); }
  // Writes the keys k and values v (kv_heads(layer) * head_dim(layer) each) of one position into `slot`
  // of every head of (layer, row), rounded to half in a Float16 cache, to int8 with a scale
  // per head's row (max|x| / 127, round to nearest) in an Int8 cache.
  void store(int64_t layer, int64_t row, int64_t slot, const float* k, const float* v);
  // keys (n, head_dim), values (n, head_dim) = slots [first, first + n) of (layer, row,
  // head) as floats (a copy, converted in a Float16 or Int8 cache).
  void load(float* keys, float* values, int64_t layer, int64_t row, int64_t head, int64_t first, int64_t n);

  // Row r takes the contents of row parents[r] (before the call), for every r. A row's
  // keys and values live in a block of the buffers that the row points to, so a row
  // whose parent has no other child takes its parent's block without a copy (a
  // permutation of rows copies nothing). A parent's other children take the blocks of
  // rows that nobody takes, and only the positions where the two blocks differ are
  // copied: every cached position carries the id of the write that produced it
  // (set_length), copied with it, and a position whose id is the same in both blocks
  // holds the same keys and values. Beams share their prompt and the tokens up to where
  // they parted, so a beam step copies about the positions since then, for each
  // duplicated beam only. A sliding-window ring is copied whole (its slots are
  // overwritten in place).
  void reorder(const int64_t* parents);

  // Row dst becomes a copy of row src (the positions they share are not copied, as in reorder).
  void copy_row(int64_t src, int64_t dst);

  // Bytes held by keys and values (and an Int8 cache's scales) and the recurrent state (its
  // snapshot slots counted whole, as if every one had been written: StateCache::bytes).
  int64_t bytes() const {
    return 2 * (element_bytes(type_) * elements_ + scale_bytes(type_) * scales_) +
           (state_ ? state_->bytes() : 0);
  }
  // Bytes of one key or value element.
  static int64_t element_bytes(KVType type) { return type == KVType::Float16 ? 2 : type == KVType::Int8 ? 1 : 4; }
  // Bytes of the scale of one row of head_dim keys (or values).
  static int64_t scale_bytes(KVType type) { return type == KVType::Int8 ? 4 : 0; }

  // Bytes the keys and values (and recurrent state) of a cache of these sizes take
  // (ValueError when the product does not fit in int64): the one formula, for a cache that
  // exists or not.
  static int64_t bytes_for(int64_t layers, int64_t rows, int64_t max_context, int64_t kv_heads, int64_t head_dim,
                           const std::vector<int64_t>& windows = {}, KVType type = KVType::Float32,
                           const std::vector<RecurrentLayerShape>& recurrent = {}, int64_t snapshots = 0,
                           const KVLayers& kv_layers = {});
  // The slots a layer of window `window` (0 = full) keeps in a cache of max_context positions.
  static int64_t capacity_for(int64_t window, int64_t max_context);
  // The slots layer l keeps: capacity_for its window (every position where other layers read
  // it), none where it is recurrent or reads another layer's keys and values.
  static int64_t layer_capacity(int64_t l, const std::vector<int64_t>& windows,
                                const std::vector<RecurrentLayerShape>& recurrent, int64_t max_context,
                                const KVLayers& kv_layers = {});

 private:
  int64_t layers() const { return static_cast<int64_t>(capacity_.size()); }
  static uint16_t* halves(xt::xtensor<float, 1>& buf) { return reinterpret_cast<uint16_t*>(buf.data()); }
  static int8_t* bytes_of(xt::xtensor<float, 1>& buf) { return reinterpret_cast<int8_t*>(buf.data()); }
  // Storage of `elements` keys (or values) of this cache's type, untouched (pages become
  // resident when written).
  xt::xtensor<float, 1> storage(int64_t elements) const;
  // Offset (in elements) of the (capacity, head_dim) block of (layer, row, head) in k_ / v_.
  int64_t offset(int64_t layer, int64_t row, int64_t head) const { return block_offset(layer, physical_[row], head); }
  // The same for block `block` (a row's place in the buffers, physical_).
  int64_t block_offset(int64_t layer, int64_t block, int64_t head) const {
    return layer_offset_[layer] + (block * kv_heads_[layer] + head) * capacity_[layer] * head_dim_[layer];
  }
  // Offset of the (capacity) scales of that block in ks_ / vs_ (an Int8 cache).
  int64_t scale_offset(int64_t layer, int64_t block, int64_t head) const {
    return scale_offset_[layer] + (block * kv_heads_[layer] + head) * capacity_[layer];
  }
  // Slots of a row of cached length len that layer `layer` holds.
  int64_t valid_slots(int64_t layer, int64_t len) const { return std::min(len, capacity_[layer]); }
  // ValueError unless row is in range and its positions past `length` may be dropped
  // (truncate's checks for the attention layers).
  void check_rollback(int64_t row, int64_t length) const;
  // Copies block src's positions to block dst: of a full-attention layer [from, len), of a
  // ring every valid slot of a row of len positions.
  void copy_slots(int64_t src, int64_t dst, int64_t from, int64_t len);
  // (max_context) write ids of a block's positions (valid below its row's length).
  uint64_t* written(int64_t block) { return written_.data() + block * max_context_; }
  // The positions blocks a and b (of a_len and b_len valid positions) share: the first
  // position whose write id differs, at most min(a_len, b_len).
  int64_t shared_prefix(int64_t a, int64_t a_len, int64_t b, int64_t b_len);
  // Block dst (dst_len valid positions) takes the src_len positions of block src.
  void take_block(int64_t src, int64_t src_len, int64_t dst, int64_t dst_len);
  // Byte address of element `offset` of buf.
  char* at(xt::xtensor<float, 1>& buf, int64_t offset) const {
    return reinterpret_cast<char*>(buf.data()) + offset * element_bytes(type_);
  }
  const char* at(const xt::xtensor<float, 1>& buf, int64_t offset) const {
    return reinterpret_cast<const char*>(buf.data()) + offset * element_bytes(type_);
  }

  int64_t max_context_ = 0;
  std::vector<int64_t> kv_heads_, head_dim_;   // (layer) each layer's key/value shape
  KVType type_ = KVType::Float32;
  int64_t elements_ = 0;                       // keys (as many values) of every layer
  int64_t scales_ = 0;                         // rows of head_dim keys (as many of values) of every layer
  std::vector<int64_t> capacity_;              // (layer) slots per row and head
  std::vector<int64_t> layer_offset_;          // (layer) where each layer starts in k_ / v_
  std::vector<int64_t> scale_offset_;          // (layer) where each layer starts in ks_ / vs_
  // per layer (block, kv_head, slot, head_dim), layer after layer: floats, or halves two to a
  // float, or int8 four to a float; as many blocks as rows, row r's in block physical_[r]
  xt::xtensor<float, 1> k_, v_;
  // Int8: per layer (block, kv_head, slot) the scale of each row of k_ / v_ (empty otherwise)
  xt::xtensor<float, 1> ks_, vs_;
  std::vector<int64_t> length_;                // (rows)
  std::vector<int64_t> physical_;              // (rows) the block of each row
  // (blocks, max_context) per block and position, the id of the write it holds
  // (set_length): equal ids, equal keys and values. Untouched until written, as the keys.
  xt::xtensor<uint64_t, 1> written_;
  uint64_t next_write_ = 1;
  int64_t max_rollback_ = INT64_MAX;  // see max_rollback(); ring_layer_ is the layer that sets it (-1: none)
  int64_t ring_layer_ = -1, ring_window_ = 0;
  std::vector<int64_t> children_, spare_, new_physical_, new_length_;  // reorder bookkeeping
  std::vector<uint8_t> given_;
  std::unique_ptr<StateCache> state_;  // the recurrent layers' state (null: none)
};

}  // namespace kvgen
