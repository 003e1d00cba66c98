// ModelDecodeLoop: a Generator driven by a built-in model. The prompts are prefilled in
// batched forward passes of kPrefillChunk tokens each (once per input; beam and sampling rows of the same input
// get a copy of its cache), then each step feeds every running row's last token.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "kvgen/generator.h"
#include "kvgen/model/model.h"

namespace kvgen {

// Prompts are prefilled in chunks of this many tokens from their start. The batching
// engine (python/kvgen/_engine.py) cuts them the same way, and a row's logits depend only
// on its own chunks, so a prompt gets the same logits, bit for bit, alone or batched
// (one pass over a whole prompt would sum attention in another order). 32 tokens: a step
// that carries a chunk costs about 3x a decode step of 8 rows (128: 6x), and prefill runs
// as fast in 32-token chunks as in one pass (measured on SmolLM2, 512 tokens, 1 thread).
inline constexpr int64_t kPrefillChunk = 32;

class ModelDecodeLoop {
 public:
  ModelDecodeLoop(Model& model, GenerationConfig config);

  Generator& generator() { return gen_; }
  const Generator& generator() const { return gen_; }

  // Checks that every prompt plus its new tokens fits the model's context (before any
  // work), allocates the KV cache, prefills and takes the first step. sequence_ids: as
  // Generator::append_tokens (empty: 0, 1, 2, ...). allowed: the first step's
  // allowed-token bitmask under a constraint (see Generator::step).
  void start(const std::vector<std::vector<int64_t>>& prompts, const std::vector<int64_t>& sequence_ids = {},
             const uint32_t* allowed = nullptr);
  // One decode step: forward(), then step(allowed).
  void advance(const uint32_t* allowed = nullptr) {
    forward();
    step(allowed);
  }
  // The two halves of advance(), so that the caller can compute the next allowed-token
  // mask while the forward pass runs: forward() reorders the cache for beam search and
  // computes the logits of every running row's last token; step() picks the next tokens.
  void forward();
  void step(const uint32_t* allowed = nullptr);
  bool done() const { return gen_.done(); }
  const KVCache& cache() const { return *cache_; }

 private:
  Model& model_;
  Generator gen_;
  std::optional<KVCache> cache_;
  xt::xtensor<float, 2> logits_;    // (rows, vocab)
  std::vector<RowTokens> chunks_;
  std::vector<int64_t> fed_;        // (rows) the token each running row is fed
  int64_t forwarded_step_ = -1;     // the generator step whose tokens forward() fed
};

}  // namespace kvgen
