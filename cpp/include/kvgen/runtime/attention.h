// Causal self-attention of new tokens of one row against the KV cache, for prefill
// (many tokens) and decode (one) alike, with grouped-query attention, optional tanh
// soft-capping of the scores, sliding windows over ring-buffer layers and attention sinks
// (a learned logit per query head that joins the softmax's denominator only).
#pragma once

#include <algorithm>
#include <cstdint>

#include "kvgen/runtime/kv_cache.h"

namespace kvgen {

struct AttentionOptions {
  float scale = 1.0f;    // scores = scale * q . k
  float softcap = 0.0f;  // > 0: scores = softcap * tanh(scores / softcap) (Gemma 2), before the mask
  int64_t window = 0;    // > 0: a token at position t sees positions (t - window, t] only
  // (heads) or null: attention sinks, one learned logit per query head that joins the
  // softmax as a key without a value (GPT-OSS): the weights sum to less than 1, as
  // transformers' eager_attention_forward computes softmax([scores, sink]) and drops the sink.
  const float* sinks = nullptr;
};

// Tokens attend one by one in blocks of positions (attention_block): each token gets the sums
// decoding it alone gives, so speculative verification is exact and a prompt's prefill attends
// as its decode would. A forward pass cuts a chunk into pieces of at most this many tokens,
// which share each block's keys and values. In a sliding window's ring (fewer slots than the
// context), only chunks of at most this many tokens do; longer ones (a prefill's) attend in query
// blocks with matrix products (causal_attention). A prefill chunk is 32 tokens (slot_cache.h).
inline constexpr int64_t kTokenByTokenAttention = 16;

// For the `count` tokens of `row` at positions [start, start + count), whose keys and
// values are already in the cache: out (count, heads * head_dim; row stride ldo) from
// q (count, heads * head_dim; row stride ldq). Token i attends to positions <= start + i
// (and > start + i - window). The positions a call reads, from the first key of the
// first token's window to start + count, must all be in the layer's slots (a ring layer
// holds capacity() of them: decoder.cpp cuts a prefill into blocks that fit).
// Only query head `head` is computed (its head_dim columns of out), so that threads can
// split the heads. scores: scratch of count * (start + count) floats. kv: scratch of
// 2 * (start + count) * head_dim floats where the cache stores halves (converted there for
// the matrix products), else null.
void causal_attention(float* out, int64_t ldo, const float* q, int64_t ldq, KVCache& cache, int64_t layer,
                      int64_t row, int64_t start, int64_t count, int64_t heads, int64_t kv_heads, int64_t head_dim,
                      const AttentionOptions& options, int64_t head, float* scores, float* kv = nullptr);

// ---- one token against the cache, cut into blocks of positions (decode) ----
// A token's attention is split into items of one kv head and one block of at most
// kAttentionBlock positions: each item reads its keys and values once for all the query
// heads of its group, and threads share the items of a long context. The blocks of a token
// are fixed by its position alone (not by the threads or the batch), and merged in block
// order, so a token gets the same sums at any thread count, alone or in a chunk.
inline constexpr int64_t kAttentionBlock = 256;

// The first position a token at position t sees (window 0: full attention).
inline int64_t first_key(int64_t t, int64_t window) { return window > 0 ? std::max<int64_t>(0, t - window + 1) : 0; }
// Blocks of positions the token at t attends over.
inline int64_t key_blocks(int64_t t, int64_t window) {
  return (t + 1 - first_key(t, window) + kAttentionBlock - 1) / kAttentionBlock;
}
// Floats of an item's partial result: per query head of the group, the max score, the sum
// of exp(score - max), and the exp-weighted sum of values (head_dim).
inline int64_t block_part_floats(int64_t group, int64_t head_dim) { return group * (head_dim + 2); }
// Floats of scratch attention_block needs (one per thread).
int64_t block_scratch_floats(int64_t group, int64_t head_dim);

// part (block_part_floats) = the partial attention of the query heads [kv_head * group,
// (kv_head + 1) * group) of q (heads * head_dim: one token at position t) over block `block`
// of the positions it sees in (layer, row) of the cache. scratch: block_scratch_floats.
void attention_block(float* part, const float* q, KVCache& cache, int64_t layer, int64_t row, int64_t t,
                     int64_t kv_head, int64_t block, int64_t group, const AttentionOptions& options, float* scratch);

// attention_block for `count` tokens of one row at positions t (ascending) that all see block
// `block`: parts[i] and q[i] are token i's. The same parts as attention_block's, bit for bit; a
// half cache without a window converts the block's keys and values to floats once for all of them
// (a verify pass's tokens otherwise each convert the whole row).
void attention_block_tokens(float* const* parts, const float* const* q, const int64_t* t, int64_t count,
                            KVCache& cache, int64_t layer, int64_t row, int64_t kv_head, int64_t block, int64_t group,
                            const AttentionOptions& options, float* scratch);

// The floats of parts (block_part_floats each) a forward pass holds at once for the tokens it
// attends token by token, where they need more than one piece of kTokenByTokenAttention tokens
// does (decoder.cpp cuts them into rounds): 4 Mi floats (16 MiB) by default. The rounds give the
// same parts as one pass; tests lower it (_core._set_attention_parts_budget) to run many.
int64_t attention_parts_budget();
void set_attention_parts_budget(int64_t floats);

// out (kv_heads * group * head_dim) = one token's attention from its items' parts
// (kv_heads, blocks, block_part_floats), blocks merged in order; sinks (kv_heads * group) or
// null: each query head's attention sink joins the denominator (AttentionOptions::sinks).
void merge_blocks(float* out, const float* parts, int64_t kv_heads, int64_t blocks, int64_t group, int64_t head_dim,
                  const float* sinks = nullptr);

}  // namespace kvgen
