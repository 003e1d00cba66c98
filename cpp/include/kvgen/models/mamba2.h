// The Mamba-2 mixer's math on given projections (Granite 4.0's hybrid layers; transformers'
// modeling_granitemoehybrid.py, GraniteMoeHybridMambaLayer, and mamba2_selective_state_update):
// the selective state-space scan with grouped B and C, the D skip, and the gated RMSNorm over
// groups of channels. The causal conv1d with SiLU over x | B | C that comes before is
// causal_conv.h. The scan runs token by token in its recurrent form, for a prefill as for a
// decode step (a constant cost per token); transformers' prefill computes the same recurrence
// in chunks (mamba2_chunk_scan), equal within float tolerance. Work is split over the heads on
// the compute pool.
#pragma once

#include <cstdint>

namespace kvgen {

// The sizes of one sequence's scan. Head h reads group h / (heads / groups) of B and C
// (transformers' repeat_interleave).
struct Mamba2Shape {
  int64_t tokens = 0;
  int64_t heads = 0;       // mamba_n_heads
  int64_t head_dim = 0;    // P, mamba_d_head
  int64_t state_size = 0;  // N, mamba_d_state
  int64_t groups = 0;      // mamba_n_groups (heads a multiple of it)
};

// The scan over `tokens` positions from the state (heads, head_dim, state_size), per head h:
//   dt = softplus(dt_raw[h] + dt_bias[h]) (torch's, threshold 20), dA = exp(dt * -exp(a_log[h]));
//   S = S * dA + dt * x_t[h] B_t[g]^T;  y_t[h] = S C_t[g] + d[h] * x_t[h].
// out (tokens, heads * head_dim), row stride ld_out; x (tokens, heads * head_dim), B and C
// (tokens, groups * state_size), all three with row stride ld_xbc (the convolution's output);
// dt_raw (tokens, heads), row stride ld_dt; a_log, dt_bias, d (heads); state updated in place.
// ValueError for a shape that does not fit (heads not a positive multiple of groups).
void mamba2_scan(float* out, int64_t ld_out, float* state, const float* x, const float* B, const float* C,
                 int64_t ld_xbc, const float* dt_raw, int64_t ld_dt, const float* a_log, const float* dt_bias,
                 const float* d, const Mamba2Shape& shape);

// out (rows, width) = weight * groupnorm(y * silu(z)): the gated RMSNorm of the mixer's output
// with the gate applied first (GraniteMoeHybridRMSNormGated, norm_before_gate=False), each group
// of width / groups channels normalised on its own (x / sqrt(mean(x^2) + eps)). y (rows, width)
// row stride ld_y, z (rows, width) row stride ld_z, weight (width). out may be y.
void mamba2_gated_norm(float* out, const float* y, int64_t ld_y, const float* z, int64_t ld_z, const float* weight,
                       float eps, int64_t rows, int64_t width, int64_t groups);

}  // namespace kvgen
