// Causal self-attention of new tokens of one row against the KV cache, for prefill
// (many tokens) and decode (one) alike, with grouped-query attention, optional tanh
// soft-capping of the scores and sliding windows over ring-buffer layers.
#pragma once

#include <cstdint>

#include "kvgen/model/kv_cache.h"

namespace kvgen {

struct AttentionOptions {
  float scale = 1.0f;    // scores = scale * q . k
  float softcap = 0.0f;  // > 0: scores = softcap * tanh(scores / softcap) (Gemma 2), before the mask
  int64_t window = 0;    // > 0: a token at position t sees positions (t - window, t] only
};

// Chunks of at most this many tokens attend token by token with the decode loops (each
// token gets the sums decoding it alone gives: speculative verification is exact); longer
// ones (prefill) with matrix products. A prefill chunk is 32 tokens (slot_cache.h).
inline constexpr int64_t kTokenByTokenAttention = 16;

// For the `count` tokens of `row` at positions [start, start + count), whose keys and
// values are already in the cache: out (count, heads * head_dim; row stride ldo) from
// q (count, heads * head_dim; row stride ldq). Token i attends to positions <= start + i
// (and > start + i - window). The positions a call reads, from the first key of the
// first token's window to start + count, must all be in the layer's slots (a ring layer
// holds capacity() of them: decoder.cpp cuts a prefill into blocks that fit).
// Only query head `head` is computed (its head_dim columns of out), so that threads can
// split the heads. scores: scratch of count * (start + count) floats.
void causal_attention(float* out, int64_t ldo, const float* q, int64_t ldq, KVCache& cache, int64_t layer,
                      int64_t row, int64_t start, int64_t count, int64_t heads, int64_t kv_heads, int64_t head_dim,
                      const AttentionOptions& options, int64_t head, float* scores);

}  // namespace kvgen
