// Causal attention: S = scale * Q K^T over the cached keys, masked softmax, O = S V.
#include "kvgen/model/attention.h"

#include <algorithm>
#include <vector>

#include "kvgen/model/kernels.h"

namespace kvgen {
namespace {

// One query head of one token against len cached keys and values (head_dim HD, or
// head_dim_at_run_time when HD = 0): oh (head_dim) = softmax(scale q K^T) V.
template <int HD>
void decode_head(float* oh, const float* qh, const float* keys, const float* values, int64_t len,
                 int64_t head_dim_at_run_time, float scale, float* scores) {
  const int64_t hd = HD ? HD : head_dim_at_run_time;
  int64_t j = 0;
  for (; j + 4 <= len; j += 4) {  // four keys at a time: four independent reductions in flight
    const float *k0 = keys + j * hd, *k1 = k0 + hd, *k2 = k1 + hd, *k3 = k2 + hd;
    float d0 = 0.0f, d1 = 0.0f, d2 = 0.0f, d3 = 0.0f;
#pragma omp simd reduction(+ : d0, d1, d2, d3)
    for (int64_t d = 0; d < hd; ++d) {
      d0 += qh[d] * k0[d];
      d1 += qh[d] * k1[d];
      d2 += qh[d] * k2[d];
      d3 += qh[d] * k3[d];
    }
    scores[j] = d0 * scale;
    scores[j + 1] = d1 * scale;
    scores[j + 2] = d2 * scale;
    scores[j + 3] = d3 * scale;
  }
  for (; j < len; ++j) {
    const float* kj = keys + j * hd;
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int64_t d = 0; d < hd; ++d) dot += qh[d] * kj[d];
    scores[j] = dot * scale;
  }
  kernels::softmax_rows(scores, 1, len, nullptr);
  if constexpr (HD > 0) {
    float acc[HD] = {};  // the output row stays in registers across the keys
    for (int64_t t = 0; t < len; ++t) {
      const float p = scores[t];
      const float* vt = values + t * HD;
#pragma omp simd
      for (int d = 0; d < HD; ++d) acc[d] += p * vt[d];
    }
    std::copy(acc, acc + HD, oh);
  } else {
    std::fill(oh, oh + hd, 0.0f);
    for (int64_t t = 0; t < len; ++t) {
      const float p = scores[t];
      const float* vt = values + t * hd;
#pragma omp simd
      for (int64_t d = 0; d < hd; ++d) oh[d] += p * vt[d];
    }
  }
}

}  // namespace

void causal_attention(float* out, int64_t ldo, const float* q, int64_t ldq, KVCache& cache, int64_t layer,
                      int64_t row, int64_t start, int64_t count, int64_t heads, int64_t kv_heads, int64_t head_dim,
                      float scale, int64_t h, float* scores) {
  const int64_t len = start + count;      // keys visible to the last token
  const int64_t group = heads / kv_heads; // query heads per kv head
  thread_local std::vector<int64_t> valid;
  valid.resize(count);
  for (int64_t i = 0; i < count; ++i) valid[i] = start + i + 1;
  const float* keys = cache.keys(layer, row, h / group);  // (len, head_dim)
  const float* values = cache.values(layer, row, h / group);
  if (count == 1) {  // decode: plain loops beat a BLAS call per head at these sizes
    float* oh = out + h * head_dim;
    switch (head_dim) {  // the common widths unrolled, with the output row in registers
      case 64: decode_head<64>(oh, q + h * head_dim, keys, values, len, 64, scale, scores); break;
      case 128: decode_head<128>(oh, q + h * head_dim, keys, values, len, 128, scale, scores); break;
      default: decode_head<0>(oh, q + h * head_dim, keys, values, len, head_dim, scale, scores);
    }
    return;
  }
  // scores (count, len) = scale * q_h (count, head_dim) @ keys^T
  kernels::matmul(scores, q + h * head_dim, keys, count, len, head_dim, /*b_transposed=*/true,
                  /*accumulate=*/false, /*lda=*/ldq, /*ldb=*/head_dim, /*ldc=*/len, /*alpha=*/scale);
  kernels::softmax_rows(scores, count, len, valid.data());
  // out_h (count, head_dim) = scores @ values (len, head_dim)
  kernels::matmul(out + h * head_dim, scores, values, count, head_dim, len, /*b_transposed=*/false,
                  /*accumulate=*/false, /*lda=*/len, /*ldb=*/head_dim, /*ldc=*/ldo);
}

}  // namespace kvgen
