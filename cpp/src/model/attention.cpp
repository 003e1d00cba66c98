// Causal attention: S = scale * Q K^T over the cached keys, masked softmax, O = S V.
#include "kvgen/model/attention.h"

#include <algorithm>
#include <vector>

#include "kvgen/model/kernels.h"

namespace kvgen {

void causal_attention(float* out, int64_t ldo, const float* q, int64_t ldq, KVCache& cache, int64_t layer,
                      int64_t row, int64_t start, int64_t count, int64_t heads, int64_t kv_heads, int64_t head_dim,
                      float scale, Range heads_here, float* scores) {
  const int64_t len = start + count;      // keys visible to the last token
  const int64_t group = heads / kv_heads; // query heads per kv head
  thread_local std::vector<int64_t> valid;
  valid.resize(count);
  for (int64_t i = 0; i < count; ++i) valid[i] = start + i + 1;
  if (count == 1) {  // decode: plain loops beat a BLAS call per head at these sizes
    for (int64_t h = heads_here.first; h < heads_here.last; ++h) {
      const float* keys = cache.keys(layer, row, h / group);  // (len, head_dim)
      const float* values = cache.values(layer, row, h / group);
      const float* qh = q + h * head_dim;
      for (int64_t j = 0; j < len; ++j) {
        const float* kj = keys + j * head_dim;
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int64_t d = 0; d < head_dim; ++d) dot += qh[d] * kj[d];
        scores[j] = dot * scale;
      }
      kernels::softmax_rows(scores, 1, len, nullptr);
      float* oh = out + h * head_dim;
      std::fill(oh, oh + head_dim, 0.0f);
      for (int64_t j = 0; j < len; ++j) {
        const float p = scores[j];
        const float* vj = values + j * head_dim;
#pragma omp simd
        for (int64_t d = 0; d < head_dim; ++d) oh[d] += p * vj[d];
      }
    }
    return;
  }
  for (int64_t h = heads_here.first; h < heads_here.last; ++h) {
    const float* keys = cache.keys(layer, row, h / group);    // (len, head_dim)
    const float* values = cache.values(layer, row, h / group);
    // scores (count, len) = scale * q_h (count, head_dim) @ keys^T
    kernels::matmul(scores, q + h * head_dim, keys, count, len, head_dim, /*b_transposed=*/true,
                    /*accumulate=*/false, /*lda=*/ldq, /*ldb=*/head_dim, /*ldc=*/len, /*alpha=*/scale);
    kernels::softmax_rows(scores, count, len, valid.data());
    // out_h (count, head_dim) = scores @ values (len, head_dim)
    kernels::matmul(out + h * head_dim, scores, values, count, head_dim, len, /*b_transposed=*/false,
                    /*accumulate=*/false, /*lda=*/len, /*ldb=*/head_dim, /*ldc=*/ldo);
  }
}

}  // namespace kvgen
