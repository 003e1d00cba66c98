// Transformer kernels: OpenBLAS for the matrix products, plain loops for the rest.
#include "kvgen/ops/layer_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kvgen/ops/vector_math.h"
#include "kvgen/ops/blas.h"

extern "C" {
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
}

namespace kvgen::ops {

void matmul(float* out, const float* a, const float* b, int64_t M, int64_t N, int64_t K, bool b_transposed,
            bool accumulate, int64_t lda, int64_t ldb, int64_t ldc, float alpha) {
  if (M == 0 || N == 0) return;
  if (M == 1 && (ldc == 0 || ldc == N)) {  // one row (decode at batch 1): a matrix-vector product
    if (b_transposed)  // out (N) = b (N, K) @ a (K)
      cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<blasint>(N), static_cast<blasint>(K), alpha, b,
                  static_cast<blasint>(ldb ? ldb : K), a, 1, accumulate ? 1.0f : 0.0f, out, 1);
    else  // out (N) = b^T (N, K) @ a (K), b stored (K, N)
      cblas_sgemv(CblasRowMajor, CblasTrans, static_cast<blasint>(K), static_cast<blasint>(N), alpha, b,
                  static_cast<blasint>(ldb ? ldb : N), a, 1, accumulate ? 1.0f : 0.0f, out, 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, b_transposed ? CblasTrans : CblasNoTrans, static_cast<blasint>(M),
              static_cast<blasint>(N), static_cast<blasint>(K), alpha, a, static_cast<blasint>(lda ? lda : K), b,
              static_cast<blasint>(ldb ? ldb : (b_transposed ? K : N)), accumulate ? 1.0f : 0.0f, out,
              static_cast<blasint>(ldc ? ldc : N));
}

void layernorm(float* out, const float* x, const float* gamma, const float* beta, int64_t M, int64_t C, float eps) {
  for (int64_t i = 0; i < M; ++i) {
    const float* xi = x + i * C;
    float* oi = out + i * C;
    float mean = 0.0f;
#pragma omp simd reduction(+ : mean)
    for (int64_t c = 0; c < C; ++c) mean += xi[c];
    mean /= static_cast<float>(C);
    float var = 0.0f;
#pragma omp simd reduction(+ : var)
    for (int64_t c = 0; c < C; ++c) var += (xi[c] - mean) * (xi[c] - mean);
    const float rstd = 1.0f / std::sqrt(var / static_cast<float>(C) + eps);
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) oi[c] = (xi[c] - mean) * rstd * gamma[c] + beta[c];
  }
}

void rmsnorm(float* out, const float* x, const float* gamma, int64_t M, int64_t C, float eps) {
  for (int64_t i = 0; i < M; ++i) {
    const float* xi = x + i * C;
    float* oi = out + i * C;
    float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
    for (int64_t c = 0; c < C; ++c) ss += xi[c] * xi[c];
    const float rstd = 1.0f / std::sqrt(ss / static_cast<float>(C) + eps);
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) oi[c] = gamma[c] * (xi[c] * rstd);
  }
}

void silu_mul(float* gate, const float* up, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + fast_exp(-gate[i])) * up[i];
}

void rope(float* x, int64_t ld, int64_t n, int64_t heads, int64_t head_dim, int64_t rotary_dim,
          const int64_t* positions, const float* cos, const float* sin) {
  const int64_t half = rotary_dim / 2;
  for (int64_t t = 0; t < n; ++t) {
    const float* c = cos + positions[t] * half;
    const float* s = sin + positions[t] * half;
    for (int64_t h = 0; h < heads; ++h) {
      float* a = x + t * ld + h * head_dim;
      float* b = a + half;
#pragma omp simd
      for (int64_t i = 0; i < half; ++i) {
        const float a0 = a[i], b0 = b[i];
        a[i] = a0 * c[i] - b0 * s[i];
        b[i] = b0 * c[i] + a0 * s[i];
      }
    }
  }
}

void gelu_tanh(float* x, int64_t n) {
  // 0.5 x (1 + tanh(u)) = x * sigmoid(2u) = x / (1 + exp(-2u)): one vectorised exp
  // instead of a scalar tanh call per element (which dominated the prefill).
  constexpr float k = 0.7978845608028654f;  // sqrt(2 / pi)
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float u = k * (v + 0.044715f * v * v * v);
    x[i] = v / (1.0f + fast_exp(-2.0f * u));
  }
}

void gelu_erf(float* x, int64_t n) {
  constexpr float inv_sqrt2 = 0.7071067811865476f;
  for (int64_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * inv_sqrt2));
}

void add_inplace(float* x, const float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void add_scaled_inplace(float* x, const float* y, float scale, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) x[i] += y[i] * scale;
}

void scale_inplace(float* x, float scale, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) x[i] *= scale;
}

void softmax_rows(float* x, int64_t M, int64_t N, const int64_t* valid) {
  for (int64_t i = 0; i < M; ++i) {
    float* row = x + i * N;
    const int64_t n = valid ? valid[i] : N;
    const float m = max_of(row, n);
    const double s = exp_into(row, row, n, m);
    const float inv = static_cast<float>(1.0 / s);
    scale(row, n, inv);
    std::fill(row + n, row + N, 0.0f);
  }
}

void set_blas_threads(int n) { openblas_set_num_threads(n); }
int blas_threads() { return openblas_get_num_threads(); }

}  // namespace kvgen::ops
