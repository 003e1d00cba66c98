// Gated DeltaNet: gates, the delta rule (recurrent and chunked) and the gated RMSNorm
// (gated_delta_net.h). Follows transformers' torch_recurrent_gated_delta_rule and
// torch_chunk_gated_delta_rule (modeling_qwen3_next.py) step for step.
#include "kvgen/models/gated_delta_net.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kvgen/errors.h"
#include "kvgen/ops/layer_ops.h"
#include "kvgen/runtime/thread_pool.h"

namespace kvgen {
namespace {

void check_shape(const DeltaRuleShape& s) {
  if (s.tokens < 0 || s.key_heads < 1 || s.value_heads < 1 || s.key_dim < 1 || s.value_dim < 1)
    throw ValueError("gated delta rule: tokens = " + std::to_string(s.tokens) + ", key_heads = " +
                     std::to_string(s.key_heads) + ", value_heads = " + std::to_string(s.value_heads) +
                     ", key_dim = " + std::to_string(s.key_dim) + ", value_dim = " + std::to_string(s.value_dim) +
                     " (heads and dims must be at least 1)");
  if (s.value_heads % s.key_heads != 0)
    throw ValueError("gated delta rule: value_heads = " + std::to_string(s.value_heads) +
                     " is not a multiple of key_heads = " + std::to_string(s.key_heads));
}

// qs, ks (tokens, key_heads, key_dim) = q * key_dim^-0.5 and k, both L2-normalised first
// (x * rsqrt(sum x^2 + 1e-6), transformers' l2norm) when l2norm.
void prepare_qk(std::vector<float>& qs, std::vector<float>& ks, const float* q, const float* k, bool l2norm,
                const DeltaRuleShape& s) {
  const int64_t rows = s.tokens * s.key_heads, d = s.key_dim;
  qs.assign(q, q + rows * d);
  ks.assign(k, k + rows * d);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t r = 0; r < rows; ++r) {
    float* qr = qs.data() + r * d;
    float* kr = ks.data() + r * d;
    float qq = 0.0f, kk = 0.0f;
    if (l2norm)
      for (int64_t i = 0; i < d; ++i) {
        qq += qr[i] * qr[i];
        kk += kr[i] * kr[i];
      }
    const float qf = (l2norm ? 1.0f / std::sqrt(qq + 1e-6f) : 1.0f) * scale;
    const float kf = l2norm ? 1.0f / std::sqrt(kk + 1e-6f) : 1.0f;
    for (int64_t i = 0; i < d; ++i) {
      qr[i] *= qf;
      kr[i] *= kf;
    }
  }
}

float dot(const float* a, const float* b, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// y (n) += a * x (n)
void axpy(float* y, float a, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

}  // namespace

void gated_delta_gates(float* g, float* beta, const float* a, const float* b, const float* a_log,
                       const float* dt_bias, int64_t tokens, int64_t heads) {
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t i = t * heads + h;
      const float x = a[i] + dt_bias[h];
      const float softplus = x > 20.0f ? x : std::log1p(std::exp(x));  // torch's threshold
      g[i] = -std::exp(a_log[h]) * softplus;
      beta[i] = 1.0f / (1.0f + std::exp(-b[i]));
    }
}

void gated_delta_rule_recurrent(float* out, float* state, const float* q, const float* k, const float* v,
                                const float* g, const float* beta, bool l2norm_qk, const DeltaRuleShape& s) {
  check_shape(s);
  // A decode step calls this once per DeltaNet layer: the calling thread's buffers keep their
  // capacity from one call to the next, so a step allocates nothing here. The workers reach
  // them through the pointers below (in the lambda the names would be each worker's own).
  thread_local std::vector<float> qk_buffers[2];  // q and k, each (tokens, key_heads, key_dim)
  thread_local std::vector<float> delta_buffer;   // (threads, value_dim) the delta
  prepare_qk(qk_buffers[0], qk_buffers[1], q, k, l2norm_qk, s);
  const int64_t T = s.tokens, Hk = s.key_heads, Hv = s.value_heads, Dk = s.key_dim, Dv = s.value_dim;
  const int64_t group = Hv / Hk;
  auto pool = compute_pool();
  delta_buffer.resize(static_cast<size_t>(pool->size() * Dv));
  const float* qs = qk_buffers[0].data();
  const float* ks = qk_buffers[1].data();
  float* scratch = delta_buffer.data();
  pool->for_each(
      Hv,
      [&](int64_t h, int thread) {
        float* S = state + h * Dk * Dv;  // (key_dim, value_dim)
        float* delta = scratch + thread * Dv;
        for (int64_t t = 0; t < T; ++t) {
          const float* qt = qs + (t * Hk + h / group) * Dk;  // (key_dim)
          const float* kt = ks + (t * Hk + h / group) * Dk;
          const float* vt = v + (t * Hv + h) * Dv;  // (value_dim)
          float* ot = out + (t * Hv + h) * Dv;
          const float decay = std::exp(g[t * Hv + h]), b = beta[t * Hv + h];
          // S *= decay; delta = beta * (v - S^T k)
          std::fill_n(delta, Dv, 0.0f);
          for (int64_t i = 0; i < Dk; ++i) {
            float* Si = S + i * Dv;
            for (int64_t j = 0; j < Dv; ++j) Si[j] *= decay;
            axpy(delta, kt[i], Si, Dv);
          }
          for (int64_t j = 0; j < Dv; ++j) delta[j] = (vt[j] - delta[j]) * b;
          // S += k delta^T; out = S^T q
          std::fill_n(ot, Dv, 0.0f);
          for (int64_t i = 0; i < Dk; ++i) {
            float* Si = S + i * Dv;
            axpy(Si, kt[i], delta, Dv);
            axpy(ot, qt[i], Si, Dv);
          }
        }
      },
      "gated_delta_rule_recurrent", Dv);
}

void gated_delta_rule_chunked(float* out, float* state, const float* q, const float* k, const float* v,
                              const float* g, const float* beta, bool l2norm_qk, const DeltaRuleShape& s,
                              int64_t chunk_size) {
  check_shape(s);
  if (chunk_size < 1 || chunk_size > 4096)
    throw ValueError("gated delta rule: chunk_size = " + std::to_string(chunk_size) + " must be in [1, 4096]");
  std::vector<float> qs, ks;  // (tokens, key_heads, key_dim)
  prepare_qk(qs, ks, q, k, l2norm_qk, s);
  const int64_t T = s.tokens, Hk = s.key_heads, Hv = s.value_heads, Dk = s.key_dim, Dv = s.value_dim;
  const int64_t group = Hv / Hk, C = std::min(chunk_size, std::max<int64_t>(T, 1));
  const int64_t ldk = Hk * Dk, ldv = Hv * Dv;  // row strides of one head's q / k and v / out
  auto pool = compute_pool();
  // per thread: cum (C), T and A (C, C), B (C, value_dim) beta v, U (C, value_dim), E (C, key_dim)
  // beta e^cum k, then the decayed keys transposed (key_dim, C), W (C, key_dim)
  const int64_t per_thread = C + 2 * C * C + 2 * C * Dv + 2 * C * Dk;
  std::vector<float> scratch(static_cast<size_t>(pool->size() * per_thread));
  pool->for_each(
      Hv,
      [&](int64_t h, int thread) {
        float* S = state + h * Dk * Dv;  // (key_dim, value_dim)
        float* cum = scratch.data() + thread * per_thread;  // (C) cumulative log decay in the chunk
        float* Tm = cum + C;                                // (C, C) (I + L)^-1
        float* A = Tm + C * C;                              // (C, C) k k^T, then q k^T, masked and decayed
        float* B = A + C * C;                               // (C, value_dim) beta v
        float* U = B + C * Dv;                              // (C, value_dim) (I + L)^-1 beta v, then v_new
        float* E = U + C * Dv;                              // (C, key_dim) beta e^cum k; keys^T (key_dim, C)
        float* W = E + C * Dk;                              // (C, key_dim) (I + L)^-1 beta e^cum k
        const float* qh = qs.data() + (h / group) * Dk;     // row t at qh + t * ldk
        const float* kh = ks.data() + (h / group) * Dk;
        for (int64_t c0 = 0; c0 < T; c0 += C) {
          const int64_t n = std::min(C, T - c0);  // a short last chunk equals transformers' zero padding
          const float* qc = qh + c0 * ldk;         // (n, key_dim), row stride ldk
          const float* kc = kh + c0 * ldk;
          const float* vc = v + c0 * ldv + h * Dv;  // (n, value_dim), row stride ldv
          float* oc = out + c0 * ldv + h * Dv;
          float acc = 0.0f;
          for (int64_t i = 0; i < n; ++i) cum[i] = acc += g[(c0 + i) * Hv + h];
          // L strictly lower, L_ij = beta_i (k_i . k_j) e^(cum_i - cum_j); Tm = (I + L)^-1 by
          // forward substitution, row by row (Tm_i = e_i - sum_{j < i} L_ij Tm_j)
          ops::matmul(A, kc, kc, n, n, Dk, /*b_transposed=*/true, /*accumulate=*/false, ldk, ldk, n);
          std::fill_n(Tm, n * n, 0.0f);
          for (int64_t i = 0; i < n; ++i) {
            const float bi = beta[(c0 + i) * Hv + h];
            float* Ti = Tm + i * n;
            for (int64_t j = 0; j < i; ++j) axpy(Ti, -bi * A[i * n + j] * std::exp(cum[i] - cum[j]), Tm + j * n, j + 1);
            Ti[i] = 1.0f;
          }
          // U = Tm (beta v), W = Tm (beta e^cum k)
          for (int64_t i = 0; i < n; ++i) {
            const float bi = beta[(c0 + i) * Hv + h], ei = bi * std::exp(cum[i]);
            for (int64_t d = 0; d < Dv; ++d) B[i * Dv + d] = bi * vc[i * ldv + d];
            for (int64_t d = 0; d < Dk; ++d) E[i * Dk + d] = ei * kc[i * ldk + d];
          }
          ops::matmul(U, Tm, B, n, Dv, n, /*b_transposed=*/false, /*accumulate=*/false, n, Dv, Dv);
          ops::matmul(W, Tm, E, n, Dk, n, /*b_transposed=*/false, /*accumulate=*/false, n, Dk, Dk);
          // v_new = U - W S (in U)
          ops::matmul(U, W, S, n, Dv, Dk, /*b_transposed=*/false, /*accumulate=*/true, Dk, Dv, Dv, -1.0f);
          // out_i = e^cum_i q_i^T S + sum_{j <= i} (q_i . k_j) e^(cum_i - cum_j) v_new_j
          ops::matmul(oc, qc, S, n, Dv, Dk, /*b_transposed=*/false, /*accumulate=*/false, ldk, Dv, ldv);
          ops::matmul(A, qc, kc, n, n, Dk, /*b_transposed=*/true, /*accumulate=*/false, ldk, ldk, n);
          for (int64_t i = 0; i < n; ++i) {
            const float ei = std::exp(cum[i]);
            float* oi = oc + i * ldv;
            for (int64_t d = 0; d < Dv; ++d) oi[d] *= ei;
            float* Ai = A + i * n;
            for (int64_t j = 0; j <= i; ++j) Ai[j] *= std::exp(cum[i] - cum[j]);
            std::fill(Ai + i + 1, Ai + n, 0.0f);
          }
          ops::matmul(oc, A, U, n, Dv, n, /*b_transposed=*/false, /*accumulate=*/true, n, Dv, ldv);
          // S = S e^cum_last + sum_j e^(cum_last - cum_j) k_j v_new_j^T (the decayed keys transposed in E)
          const float last = cum[n - 1], chunk_decay = std::exp(last);
          for (int64_t j = 0; j < n; ++j) {
            const float ej = std::exp(last - cum[j]);
            for (int64_t d = 0; d < Dk; ++d) E[d * n + j] = ej * kc[j * ldk + d];
          }
          for (int64_t d = 0; d < Dk * Dv; ++d) S[d] *= chunk_decay;
          ops::matmul(S, E, U, Dk, Dv, n, /*b_transposed=*/false, /*accumulate=*/true, n, Dv, Dv);
        }
      },
      "gated_delta_rule_chunked", Dv);
}

void gated_rms_norm(float* out, const float* x, const float* z, const float* weight, float eps, int64_t rows,
                    int64_t dim) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;  // (dim)
    const float* zr = z + r * dim;
    float* o = out + r * dim;
    const float inv = 1.0f / std::sqrt(dot(xr, xr, dim) / static_cast<float>(dim) + eps);
    for (int64_t i = 0; i < dim; ++i) o[i] = weight[i] * (xr[i] * inv) * (zr[i] / (1.0f + std::exp(-zr[i])));
  }
}

}  // namespace kvgen
