// Causal self-attention of new tokens of one row against the KV cache, for prefill
// (many tokens) and decode (one) alike, with grouped-query attention.
#pragma once

#include <cstdint>

#include "kvgen/model/kv_cache.h"

namespace kvgen {

// For the `count` tokens of `row` at positions [start, start + count), whose keys and
// values are already in the cache: out (count, heads * head_dim; row stride ldo) from
// q (count, heads * head_dim; row stride ldq). Token i attends to positions <= start + i.
// Only query head `head` is computed (its head_dim columns of out), so that threads can
// split the heads. scores: scratch of count * (start + count) floats.
void causal_attention(float* out, int64_t ldo, const float* q, int64_t ldq, KVCache& cache, int64_t layer,
                      int64_t row, int64_t start, int64_t count, int64_t heads, int64_t kv_heads, int64_t head_dim,
                      float scale, int64_t head, float* scores);

}  // namespace kvgen
