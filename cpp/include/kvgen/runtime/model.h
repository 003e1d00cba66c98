// Model: the interface every built-in architecture implements. A forward pass appends
// new tokens of some cache rows (a whole prompt at prefill, one token per row when
// decoding) and writes next-token logits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kvgen/runtime/kv_cache.h"
#include "kvgen/runtime/linear_weight.h"
#include "kvgen/runtime/model_config.h"

namespace kvgen {

// Prompts are fed in chunks of this many tokens from their start (kvgen.generation.engine).
// A layer that keeps every position attends each token on its own (attention.h); a sliding
// window's ring attends the queries of a chunk a block of this many positions at a time (a block
// ends at each multiple of it). Either way a prompt gets the same logits, bit for bit, alone or
// batched, fed one chunk per pass or several (one attention call over a longer block would sum
// in another order). 32 tokens: a step that carries a chunk costs about 3x a
// decode step of 8 rows (128: 6x).
inline constexpr int64_t kPrefillChunk = 32;

// The new tokens of one cache row.
struct RowTokens {
  int64_t row;
  const int64_t* tokens;
  int64_t count;
  // Without all_positions: when set, the logits of every token of the chunk, (count,
  // vocab), are written here instead of the last token's at its row (speculative
  // decoding verifies a row's drafts with them).
  float* logits = nullptr;
  // The rest of a prompt whose first positions are cached (a reused prefix): attended as a fresh
  // prefill of the whole prompt attends it. In a sliding window's ring that is in
  // kPrefillChunk-aligned query blocks even when the chunk is short, its first block computed
  // whole from its aligned start (the cached positions' queries padded), so that every position
  // gets the numbers a fresh prefill gives it; other layers attend each token on its own anyway.
  bool in_blocks = false;
  // Without all_positions: when set, the final-normed hidden states of every token of the chunk,
  // (count, hidden), the LM head's input, are written here instead of any logits (embeddings:
  // pooled by the caller), or beside them with logits_too. Not with `logits` unless logits_too.
  float* hidden = nullptr;
  // With hidden: the chunk gets its logits as well, as it would without hidden (speculative
  // decoding with a multi-token-prediction head, which reads the target's hidden states).
  bool logits_too = false;
  // (count, hidden): a second input per token for a model that reads one (Model::
  // reads_input_hidden: a multi-token-prediction head, which combines each token's embedding
  // with the target model's final-normed hidden state at the position before it). Required by
  // such a model, refused by the others.
  const float* input_hidden = nullptr;
  // >= 0: a row of a model with token checkpoints (Model::token_checkpoints) verifying drafts:
  // its recurrent state after each token i of the chunk but the last (whose state is the row's
  // after the pass) is copied into snapshot slot checkpoints + i of the cache's state
  // (StateCache::snapshot_layer), so that a verdict resumes at any accepted position
  // (KVCache::resume) without computing it again. The
  // recurrent layers then run the chunk token by token, as decode steps do.
  int64_t checkpoints = -1;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelConfig& config() const = 0;

  // What quantized weights multiply (linear_weight.h): int8 activations in two levels by
  // default, one level, or float32 (exact mode: transformers' arithmetic on the
  // dequantized weights). No effect on float32 weights. Not to be changed during a forward.
  virtual Activations activations() const = 0;
  virtual void set_activations(Activations activations) = 0;
  // Bytes of the weights the model holds (quantized tensors at their packed size).
  virtual int64_t weight_bytes() const = 0;

  // Runs each chunk's tokens at the positions following its row's cached length,
  // writes their keys/values into the cache and advances the row's length. Logits:
  // with all_positions, of every token, chunk after chunk (sum of counts, vocab);
  // otherwise of each chunk's last token, at its row: logits + row * vocab (or of every
  // token of a chunk that sets RowTokens::logits, there; none of a chunk that sets
  // RowTokens::hidden, which gets its final-normed hidden states instead).
  virtual void forward(const std::vector<RowTokens>& chunks, KVCache& cache, float* logits, bool all_positions) = 0;
  // Whether every chunk must carry RowTokens::input_hidden (a multi-token-prediction head).
  virtual bool reads_input_hidden() const { return false; }
  // Whether the model writes a chunk's per-token state checkpoints (RowTokens::checkpoints).
  virtual bool token_checkpoints() const { return false; }

  // What a cache made now stores: Float16 where the model computes with int8 activations
  // (its default mode on quantized weights: half keys and values change its logits far less
  // than the activations' rounding does), Float32 in exact mode and for float weights, whose
  // logits follow transformers' within float tolerance.
  // A type chosen at load (Model.load's kv_cache_dtype) replaces that default.
  virtual KVType kv_type() const { return kv_choice_.value_or(KVType::Float32); }
  // The chosen type (none: the default above). Not to be changed while caches are in use.
  std::optional<KVType> kv_choice() const { return kv_choice_; }
  void set_kv_choice(std::optional<KVType> type) { kv_choice_ = type; }

  KVCache make_cache(int64_t rows, int64_t max_context) const {
    const ModelConfig& c = config();
    return KVCache(c.layers, rows, max_context, c.kv_heads, c.head_dim, c.layer_windows, kv_type(), c.recurrent_layers,
                   /*snapshots=*/0, c.kv_layers);
  }

 protected:
  std::optional<KVType> kv_choice_;
};

}  // namespace kvgen
