// The Gated DeltaNet mixer's math on given projections (Qwen3.5, Qwen3-Next; transformers'
// modeling_qwen3_next.py and flash-linear-attention): the gates, the delta-rule update of
// the per-head recurrent matrix in a recurrent form (decode: a constant cost per token)
// and a chunked form (prefill: the WY / triangular-solve form of torch_chunk_gated_delta_rule,
// equal to the recurrent form within float tolerance), and the gated RMSNorm of the output.
// The causal conv1d with SiLU that comes before is causal_conv.h. Work is split over the
// value heads on the compute pool.
#pragma once

#include <cstdint>

namespace kvgen {

// The sizes of one sequence's delta-rule call. Value head h reads key head
// h / (value_heads / key_heads) (transformers' repeat_interleave of q and k).
struct DeltaRuleShape {
  int64_t tokens = 0;
  int64_t key_heads = 0, value_heads = 0;
  int64_t key_dim = 0, value_dim = 0;
};

// g (tokens, heads) = -exp(a_log) * softplus(a + dt_bias) (the decay, in log space) and
// beta (tokens, heads) = sigmoid(b); a, b (tokens, heads), a_log, dt_bias (heads).
void gated_delta_gates(float* g, float* beta, const float* a, const float* b, const float* a_log,
                       const float* dt_bias, int64_t tokens, int64_t heads);

// The gated delta rule over `tokens` positions from the recurrent matrix `state`:
//   S = S * exp(g_t); S += k_t (beta_t (v_t - S^T k_t))^T; out_t = S^T q_t,
// per value head, with q scaled by key_dim^-0.5 (and q, k L2-normalised first when
// l2norm_qk, eps 1e-6 as transformers' l2norm). The recurrent form steps token by token;
// the chunked form processes chunk_size tokens at a time (transformers uses 64) and gives
// the same result within float tolerance. ValueError for a shape that does not fit
// (value_heads not a multiple of key_heads, chunk_size < 1).
// out (tokens, value_heads, value_dim); state (value_heads, key_dim, value_dim), updated;
// q, k (tokens, key_heads, key_dim); v (tokens, value_heads, value_dim); g, beta (tokens, value_heads).
void gated_delta_rule_recurrent(float* out, float* state, const float* q, const float* k, const float* v,
                                const float* g, const float* beta, bool l2norm_qk, const DeltaRuleShape& shape);
void gated_delta_rule_chunked(float* out, float* state, const float* q, const float* k, const float* v,
                              const float* g, const float* beta, bool l2norm_qk, const DeltaRuleShape& shape,
                              int64_t chunk_size = 64);

// out (rows, dim) = weight * x / sqrt(mean(x^2) + eps) * silu(z): the gated RMSNorm of the
// mixer's output (Qwen3NextRMSNormGated, norm before gate); x, z (rows, dim), weight (dim).
void gated_rms_norm(float* out, const float* x, const float* z, const float* weight, float eps, int64_t rows,
                    int64_t dim);

}  // namespace kvgen
