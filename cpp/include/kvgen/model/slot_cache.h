// SlotCache: a built-in model's KV cache of `slots` rows and their next-token logits, for
// the engine (python/kvgen/generation/engine.py) that runs requests through one model:
// each request holds a contiguous range of slots. A forward pass takes chunks of mixed
// lengths (a prompt chunk of one slot, one token of another); the model continues each
// slot at its cached length and writes the chunk's last-token logits at the slot's row.
//
// The cache is allocated untouched: a page becomes resident only when a slot's positions
// reach it, so slots x context is mostly address space until used.
#pragma once

#include <cstdint>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "kvgen/model/kv_cache.h"
#include "kvgen/model/model.h"

namespace kvgen {

// Prompts are fed in chunks of this many tokens from their start. A row's logits depend
// only on its own chunks, so a prompt gets the same logits, bit for bit, alone or batched
// (one pass over a whole prompt would sum attention in another order). 32 tokens: a step
// that carries a chunk costs about 3x a decode step of 8 rows (128: 6x), and prefill runs
// as fast in 32-token chunks as in one pass (measured on SmolLM2, 512 tokens, 1 thread).
inline constexpr int64_t kPrefillChunk = 32;

class SlotCache {
 public:
  // A cache of `slots` rows of `context` positions each for a model of these sizes;
  // ValueError when a size is out of range or the cache's size overflows.
  // windows: per layer, 0 (full attention) or the sliding window its ring keeps (KVCache).
  SlotCache(int64_t layers, int64_t slots, int64_t context, int64_t kv_heads, int64_t head_dim, int64_t vocab,
            const std::vector<int64_t>& windows = {});
  // The same for `model`; context is at most the model's.
  static SlotCache for_model(const Model& model, int64_t slots, int64_t context);

  int64_t slots() const { return cache_.rows(); }
  int64_t context() const { return cache_.max_context(); }
  int64_t vocab() const { return static_cast<int64_t>(logits_.shape(1)); }
  int64_t bytes() const { return cache_.bytes(); }
  int64_t length(int64_t slot) const { return cache_.length(checked(slot, "slot")); }
  KVCache& cache() { return cache_; }
  // (slots, vocab): each slot's next-token logits after its last forward. Never moves.
  float* logits() { return logits_.data(); }

  // ValueError unless every chunk names a slot in range, once, with at least one token.
  void check_chunks(const std::vector<RowTokens>& chunks);
  // check_chunks, then one forward pass of `model` over the chunks (nothing is computed
  // when a chunk is refused: the model checks positions and token ids first).
  void forward(Model& model, const std::vector<RowTokens>& chunks);

  // The slot forgets its positions (a new request starts there).
  void reset(int64_t slot) { cache_.set_length(checked(slot, "slot"), 0); }
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
};

}  // namespace kvgen
