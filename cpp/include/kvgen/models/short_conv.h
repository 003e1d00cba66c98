// LFM2's gated short convolution (transformers' Lfm2ShortConv, after in_proj and before
// out_proj): y = C * conv(B * x), a causal depthwise convolution of kernel L_cache whose
// window of the last L_cache - 1 gated inputs is the layer's state (state_cache.h).
#pragma once

#include <cstdint>

namespace kvgen {

// out (tokens, channels) = C * causal_conv1d(B * x) with the window (channels, kernel - 1),
// which then holds the last kernel - 1 values of B * x. bcx (tokens, 3 * channels): per
// token B, C and x one after the other (in_proj's output, split in that order);
// weight (channels, kernel), bias (channels) or null.
void short_conv(float* out, float* window, const float* bcx, const float* weight, const float* bias,
                int64_t tokens, int64_t channels, int64_t kernel);
// The same with the caller's scratch bx (tokens, channels) for B * x, so that a model's
// forward allocates nothing.
void short_conv(float* out, float* window, float* bx, const float* bcx, const float* weight, const float* bias,
                int64_t tokens, int64_t channels, int64_t kernel);

}  // namespace kvgen
