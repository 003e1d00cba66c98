// Mamba-2's selective state-space scan and its gated group RMSNorm (mamba2.h).
#include "kvgen/models/mamba2.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "kvgen/errors.h"
#include "kvgen/runtime/thread_pool.h"

namespace kvgen {
namespace {

// Below this many multiply-adds one thread does it all (a small decode step).
constexpr int64_t kSerialWork = int64_t{1} << 15;

}  // namespace

void mamba2_scan(float* out, int64_t ld_out, float* state, const float* x, const float* B, const float* C,
                 int64_t ld_xbc, const float* dt_raw, int64_t ld_dt, const float* a_log, const float* dt_bias,
                 const float* d, const Mamba2Shape& s) {
  if (s.groups < 1 || s.heads < 1 || s.heads % s.groups != 0)
    throw ValueError("Mamba-2: " + std::to_string(s.heads) + " heads are not a positive multiple of " +
                     std::to_string(s.groups) + " groups");
  const int64_t P = s.head_dim, N = s.state_size, per_group = s.heads / s.groups;
  // Head h over every token: its (P, N) state stays in cache from token to token.
  auto head = [&](int64_t h) {
    const int64_t g = h / per_group;
    const float A = -std::exp(a_log[h]);
    float* S = state + h * P * N;  // (P, N)
    for (int64_t t = 0; t < s.tokens; ++t) {
      const float raw = dt_raw[t * ld_dt + h] + dt_bias[h];
      const float dt = raw > 20.0f ? raw : std::log1p(std::exp(raw));  // torch's softplus, threshold 20
      const float dA = std::exp(dt * A);
      const float* xt = x + t * ld_xbc + h * P;  // (P)
      const float* Bt = B + t * ld_xbc + g * N;  // (N)
      const float* Ct = C + t * ld_xbc + g * N;  // (N)
      float* yt = out + t * ld_out + h * P;      // (P)
      for (int64_t p = 0; p < P; ++p) {
        float* row = S + p * N;
        const float dx = dt * xt[p];
        float y = 0.0f;
        // vectorized across the state, y summed in lanes: without the reduction clause the loop
        // stayed scalar (GCC does not reorder a float sum by itself)
#pragma omp simd reduction(+ : y)
        for (int64_t n = 0; n < N; ++n) {
          const float v = row[n] * dA + dx * Bt[n];
          row[n] = v;
          y += v * Ct[n];
        }
        yt[p] = y + d[h] * xt[p];
      }
    }
  };
  if (s.tokens * s.heads * P * N < kSerialWork) {
    for (int64_t h = 0; h < s.heads; ++h) head(h);
    return;
  }
  compute_pool()->for_each(s.heads, [&](int64_t h, int) { head(h); }, "mamba2_scan", P * N);
}

void mamba2_gated_norm(float* out, const float* y, int64_t ld_y, const float* z, int64_t ld_z, const float* weight,
                       float eps, int64_t rows, int64_t width, int64_t groups) {
  if (groups < 1 || width % groups != 0)
    throw ValueError("Mamba-2: the gated norm's " + std::to_string(width) + " channels are not a multiple of " +
                     std::to_string(groups) + " groups");
  const int64_t size = width / groups;
  for (int64_t r = 0; r < rows; ++r) {
    const float* yr = y + r * ld_y;
    const float* zr = z + r * ld_z;
    float* o = out + r * width;
    for (int64_t c = 0; c < width; ++c) o[c] = yr[c] * (zr[c] / (1.0f + std::exp(-zr[c])));  // y * silu(z)
    for (int64_t g = 0; g < groups; ++g) {
      float* v = o + g * size;
      float sum = 0.0f;
      for (int64_t i = 0; i < size; ++i) sum += v[i] * v[i];
      const float inv = 1.0f / std::sqrt(sum / static_cast<float>(size) + eps);
      for (int64_t i = 0; i < size; ++i) v[i] = weight[g * size + i] * (v[i] * inv);
    }
  }
}

}  // namespace kvgen
