// Raw-pointer kernels of the transformer forward pass: BLAS matrix products (projections
// go through linear_weight.h), layer and
// RMS norms, GELU, SiLU, RoPE, softmax. Outputs first, shapes last (llm.c style); every
// buffer is row-major.
#pragma once

#include <cstdint>

namespace kvgen::ops {

// out (M, N) = (accumulate ? out : 0) + alpha * a (M, K) @ b, with b (K, N) or, if b_transposed,
// b (N, K). lda / ldb / ldc are the row strides (0 = dense). Callers name the flags and
// strides they pass (`/*b_transposed=*/true`).
void matmul(float* out, const float* a, const float* b, int64_t M, int64_t N, int64_t K, bool b_transposed,
            bool accumulate = false, int64_t lda = 0, int64_t ldb = 0, int64_t ldc = 0, float alpha = 1.0f);

// out (M, C) = layernorm(x) * gamma + beta (torch.nn.LayerNorm, biased variance).
void layernorm(float* out, const float* x, const float* gamma, const float* beta, int64_t M, int64_t C, float eps);

// out (M, C) = x / sqrt(mean(x^2) + eps) * gamma (Llama RMSNorm, computed in float32).
void rmsnorm(float* out, const float* x, const float* gamma, int64_t M, int64_t C, float eps);

// gate = silu(gate) * up over n floats (the SwiGLU MLP's activation; silu(x) = x sigmoid(x)).
void silu_mul(float* gate, const float* up, int64_t n);

// Rotary position embedding in place, in Hugging Face's rotate_half layout: for each of the
// n tokens (row stride ld) and each head of head_dim values, the pairs (x[i], x[i + r/2])
// of its first r = rotary_dim values turn by the angle of position positions[t] and
// frequency i; the others pass through. cos/sin: (positions, rotary_dim / 2) tables.
void rope(float* x, int64_t ld, int64_t n, int64_t heads, int64_t head_dim, int64_t rotary_dim,
          const int64_t* positions, const float* cos, const float* sin);

// x = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) in place (HF "gelu_new").
void gelu_tanh(float* x, int64_t n);

// x = 0.5 x (1 + erf(x / sqrt(2))) in place (HF "gelu").
void gelu_erf(float* x, int64_t n);

// x += y over n floats.
void add_inplace(float* x, const float* y, int64_t n);

// x += y * scale over n floats (y * scale rounded first, as torch computes x + y * scale).
void add_scaled_inplace(float* x, const float* y, float scale, int64_t n);

// x *= scale over n floats.
void scale_inplace(float* x, float scale, int64_t n);

// Softmax of each of the M rows of x (M, N) in place, over its first valid[i] entries
// (the rest set to 0); valid = null: all N.
void softmax_rows(float* x, int64_t M, int64_t N, const int64_t* valid);

// Sets the number of threads OpenBLAS uses (thread_pool.h keeps it at 1: the compute pool
// splits the products itself).
void set_blas_threads(int n);
int blas_threads();

}  // namespace kvgen::ops
