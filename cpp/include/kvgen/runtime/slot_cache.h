// SlotCache: a built-in model's KV cache of `slots` rows and their next-token logits, for
// the engine (python/kvgen/generation/engine.py) that runs requests through one model:
// each request holds a contiguous range of slots. A forward pass takes chunks of mixed
// lengths (a prompt chunk of one slot, one token of another); the model continues each
// slot at its cached length and writes the chunk's last-token logits at the slot's row.
// Speculative decoding feeds a row its last token and k draft tokens as one chunk and asks
// for the logits of all k + 1 positions (verify_logits), then rolls the rejected
// positions back with truncate, which copies nothing.
//
// The cache is allocated untouched: a page becomes resident only when a slot's positions
// reach it, so slots x context is mostly address space until used.
#pragma once

#include <cstdint>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "kvgen/runtime/kv_cache.h"
#include "kvgen/runtime/model.h"

namespace kvgen {

// kPrefillChunk (model.h): prompts are fed in chunks of that many tokens from their start.

class SlotCache {
 public:
  // A cache of `slots` rows of `context` positions each for a model of these sizes;
  // ValueError when a size is out of range or the cache's size overflows.
  // windows: per layer, 0 (full attention) or the sliding window its ring keeps (KVCache).
  // verify_positions: the longest chunk whose every position's logits a forward may return
  // (0: none); their buffer, (slots, verify_positions, vocab), is reserved here, once.
  // type: what the KV cache stores (kv_cache.h). recurrent: the recurrent state of each
  // layer of a hybrid model (ModelConfig::recurrent_layers), kept per slot beside the KV
  // rows and moved with them by reset, copy_row and reorder (truncate refuses to step it back:
  // resume restores a snapshot instead). snapshots: spare copies of a slot's state (StateCache),
  // ignored without a recurrent layer. kv_layers: per-layer key/value shapes and layers that
  // read another's keys and values (ModelConfig::kv_layers).
  SlotCache(int64_t layers, int64_t slots, int64_t context, int64_t kv_heads, int64_t head_dim, int64_t vocab,
            const std::vector<int64_t>& windows = {}, int64_t verify_positions = 0,
            KVType type = KVType::Float32, const std::vector<RecurrentLayerShape>& recurrent = {},
            int64_t snapshots = 0, const KVLayers& kv_layers = {});
  // The same for `model` (its kv_type() now); context is at most the model's.
  static SlotCache for_model(const Model& model, int64_t slots, int64_t context, int64_t verify_positions = 0,
                             int64_t snapshots = 0);

  int64_t slots() const { return cache_.rows(); }
  int64_t context() const { return cache_.max_context(); }
  int64_t vocab() const { return static_cast<int64_t>(logits_.shape(1)); }
  int64_t bytes() const { return cache_.bytes(); }
  int64_t length(int64_t slot) const { return cache_.length(checked(slot, "slot")); }
  KVCache& cache() { return cache_; }
  // (slots, vocab): each slot's next-token logits after its last forward. Never moves.
  float* logits() { return logits_.data(); }
  int64_t verify_positions() const { return verify_positions_; }
  // (slots, verify_width(), vocab): after a forward with all_logits, the logits of every
  // position of each such chunk at its slot (positions past the chunk's count and slots
  // without such a chunk are stale). Never moves.
  float* verify_logits() { return verify_logits_.data(); }
  // The longest chunk with all_logits in the last forward (0: none).
  int64_t verify_width() const { return verify_width_; }

  // ValueError unless every chunk names a slot in range, once, with at least one token.
  void check_chunks(const std::vector<RowTokens>& chunks);
  // check_chunks, then one forward pass of `model` over the chunks (nothing is computed
  // when a chunk is refused: the model checks positions and token ids first).
  // all_logits: empty, or per chunk whether to write the logits of all its positions into
  // verify_logits() (at most verify_positions tokens) instead of its last one's into logits().
  // A chunk that sets RowTokens::hidden gets its positions' final-normed hidden states there
  // and no logits (its slot's logits row is left as it was).
  void forward(Model& model, const std::vector<RowTokens>& chunks, const std::vector<uint8_t>& all_logits = {});

  // The slot forgets its positions (a new request starts there).
  void reset(int64_t slot) { cache_.set_length(checked(slot, "slot"), 0); }
  // The slot keeps its first `length` positions and forgets the rest, copying nothing
  // (KVCache::truncate: ValueError where a sliding-window ring cannot roll back so far).
  void truncate(int64_t slot, int64_t length) { cache_.truncate(checked(slot, "slot"), length); }
  // A hybrid model's recurrent state of the slot into snapshot `snapshot` (KVCache::snapshot).
  void snapshot(int64_t slot, int64_t snapshot) { cache_.snapshot(checked(slot, "slot"), snapshot); }
  // The slot keeps its first `length` positions and takes the recurrent state of snapshot
  // `snapshot`, taken when it held exactly those positions (KVCache::resume): the prefix
  // cache's reuse and speculative rollback on a hybrid model. ValueError, changing nothing,
  // for a bad slot, snapshot or length.
  void resume(int64_t slot, int64_t length, int64_t snapshot) {
    cache_.resume(checked(slot, "slot"), length, snapshot);
  }
  // Snapshots the state cache keeps (0 without a recurrent layer).
  int64_t snapshots() { return cache_.state() ? cache_.state()->snapshots() : 0; }
  // dst takes src's cached positions and its logits row (rows of one request share a prompt).
  void copy_row(int64_t src, int64_t dst);
  // Beam search within slots [first, first + parents.size()): slot first + r takes the
  // contents of slot first + parents[r] (parents index within the range).
  void reorder(int64_t first, const std::vector<int64_t>& parents);

 private:
  int64_t checked(int64_t slot, const char* name) const;

  KVCache cache_;
  xt::xtensor<float, 2> logits_;      // (slots, vocab) last-token logits of each slot's last chunk
  std::vector<uint8_t> in_chunk_;     // (slots) scratch of check_chunks' duplicate test
  std::vector<int64_t> parents_;      // (slots) scratch of reorder: every slot's parent
  int64_t verify_positions_ = 0, verify_width_ = 0;
  xt::xtensor<float, 1> verify_logits_;  // (slots, verify_width_, vocab), sized for verify_positions_
  std::vector<RowTokens> chunks_;        // (chunks) scratch of forward: the chunks with their logits targets
};

}  // namespace kvgen
