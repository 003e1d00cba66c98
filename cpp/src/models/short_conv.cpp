// LFM2's gated short convolution (short_conv.h).
#include "kvgen/models/short_conv.h"

#include <cstddef>
#include <vector>

#include "kvgen/models/causal_conv.h"

namespace kvgen {

void short_conv(float* out, float* window, const float* bcx, const float* weight, const float* bias,
                int64_t tokens, int64_t channels, int64_t kernel) {
  std::vector<float> bx(static_cast<size_t>(tokens * channels));  // (tokens, channels) B * x
  short_conv(out, window, bx.data(), bcx, weight, bias, tokens, channels, kernel);
}

void short_conv(float* out, float* window, float* bx, const float* bcx, const float* weight, const float* bias,
                int64_t tokens, int64_t channels, int64_t kernel) {
  for (int64_t t = 0; t < tokens; ++t) {
    const float* b = bcx + t * 3 * channels;  // (channels) each: B, C, x
    const float* x = b + 2 * channels;
    float* o = bx + t * channels;
    for (int64_t c = 0; c < channels; ++c) o[c] = b[c] * x[c];
  }
  causal_conv1d(out, window, bx, weight, bias, /*silu=*/false, tokens, channels, kernel);
  for (int64_t t = 0; t < tokens; ++t) {
    const float* gate = bcx + t * 3 * channels + channels;  // (channels) C
    float* o = out + t * channels;
    for (int64_t c = 0; c < channels; ++c) o[c] *= gate[c];
  }
}

}  // namespace kvgen
