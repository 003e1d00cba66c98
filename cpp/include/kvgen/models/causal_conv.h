// The causal depthwise convolution of the recurrent mixers (Gated DeltaNet's conv1d over
// the fused q/k/v, LFM2's short convolution, Mamba-2's conv1d), with the window of past
// inputs that the state cache keeps (state_cache.h), as transformers' causal_conv1d_fn
// (prefill) and causal_conv1d_update (decode) compute it: both are this one function.
#pragma once

#include <cstdint>

namespace kvgen {

// out (tokens, channels): out[t][c] = bias[c] + sum_j weight[c][j] * in[t - kernel + 1 + j][c],
// where in is the window (channels, kernel - 1; oldest first) followed by x (tokens,
// channels); SiLU applied when `silu`. The window then holds the last kernel - 1 inputs.
// weight (channels, kernel), bias (channels) or null. out must not alias x or the window.
void causal_conv1d(float* out, float* window, const float* x, const float* weight, const float* bias, bool silu,
                   int64_t tokens, int64_t channels, int64_t kernel);

}  // namespace kvgen
