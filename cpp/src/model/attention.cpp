// Causal attention: S = scale * Q K^T over the cached keys (optionally soft-capped),
// masked softmax, O = S V. The keys one call reads are positions [lo, start + count) in
// position order: one block of the cache, or two where a sliding-window ring wraps.
#include "kvgen/model/attention.h"

#include <algorithm>
#include <cmath>

#include "kvgen/model/kernels.h"

namespace kvgen {
namespace {

// The keys and values of positions [lo, lo + len) of one layer, row and kv head: slots
// [first, first + n1) of the block, then slots [0, n2) where the ring wraps.
struct KeySpan {
  const float *k1, *v1, *k2, *v2;  // (n1, head_dim), (n2, head_dim)
  int64_t n1, n2;
};

KeySpan key_span(KVCache& cache, int64_t layer, int64_t row, int64_t kv_head, int64_t lo, int64_t len,
                 int64_t head_dim) {
  const int64_t cap = cache.capacity(layer);
  const int64_t first = lo % cap;
  const int64_t n1 = std::min(len, cap - first);
  const float* keys = cache.keys(layer, row, kv_head);  // (capacity, head_dim)
  const float* values = cache.values(layer, row, kv_head);
  return {keys + first * head_dim, values + first * head_dim, keys, values, n1, len - n1};
}

void softcap_scores(float* s, int64_t n, float softcap) {
  if (softcap <= 0.0f) return;
  const float inv = 1.0f / softcap;
  for (int64_t i = 0; i < n; ++i) s[i] = softcap * std::tanh(s[i] * inv);
}

// scores (len) = scale * keys (len, head_dim) @ qh (head_dim), head_dim HD (or
// head_dim_at_run_time when HD = 0).
template <int HD>
void dot_keys(float* scores, const float* qh, const float* keys, int64_t len, int64_t head_dim_at_run_time,
              float scale) {
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
}

// acc (head_dim) += p (len) @ values (len, head_dim).
template <int HD>
void weigh_values(float* acc, const float* p, const float* values, int64_t len, int64_t head_dim_at_run_time) {
  const int64_t hd = HD ? HD : head_dim_at_run_time;
  for (int64_t t = 0; t < len; ++t) {
    const float pt = p[t];
    const float* vt = values + t * hd;
#pragma omp simd
    for (int64_t d = 0; d < hd; ++d) acc[d] += pt * vt[d];
  }
}

// One query head of one token against the span's keys and values (head_dim HD, or
// head_dim_at_run_time when HD = 0): oh (head_dim) = softmax(softcap(scale q K^T)) V.
template <int HD>
void decode_head(float* oh, const float* qh, const KeySpan& s, int64_t head_dim_at_run_time,
                 const AttentionOptions& o, float* scores) {
  const int64_t hd = HD ? HD : head_dim_at_run_time;
  const int64_t len = s.n1 + s.n2;
  dot_keys<HD>(scores, qh, s.k1, s.n1, hd, o.scale);
  dot_keys<HD>(scores + s.n1, qh, s.k2, s.n2, hd, o.scale);
  softcap_scores(scores, len, o.softcap);
  kernels::softmax_rows(scores, 1, len, nullptr);
  if constexpr (HD > 0) {
    float acc[HD] = {};  // the output row stays in registers across the keys
    weigh_values<HD>(acc, scores, s.v1, s.n1, HD);
    weigh_values<HD>(acc, scores + s.n1, s.v2, s.n2, HD);
    std::copy(acc, acc + HD, oh);
  } else {
    std::fill(oh, oh + hd, 0.0f);
    weigh_values<0>(oh, scores, s.v1, s.n1, hd);
    weigh_values<0>(oh, scores + s.n1, s.v2, s.n2, hd);
  }
}

}  // namespace

void causal_attention(float* out, int64_t ldo, const float* q, int64_t ldq, KVCache& cache, int64_t layer,
                      int64_t row, int64_t start, int64_t count, int64_t heads, int64_t kv_heads, int64_t head_dim,
                      const AttentionOptions& o, int64_t h, float* scores) {
  const int64_t group = heads / kv_heads;  // query heads per kv head
  if (count <= kTokenByTokenAttention) {
    // decode, and the few tokens of a speculative verification: plain loops, token by
    // token, beat a BLAS call per head at these sizes and give each token the very sums
    // that decoding it alone gives (so verifying drafts never changes a greedy choice)
    for (int64_t i = 0; i < count; ++i) {
      const int64_t t = start + i;
      const int64_t lo_t = o.window > 0 ? std::max<int64_t>(0, t - o.window + 1) : 0;
      const KeySpan s = key_span(cache, layer, row, h / group, lo_t, t + 1 - lo_t, head_dim);
      float* oh = out + i * ldo + h * head_dim;
      const float* qh = q + i * ldq + h * head_dim;
      switch (head_dim) {  // the common widths unrolled, with the output row in registers
        case 64: decode_head<64>(oh, qh, s, 64, o, scores); break;
        case 128: decode_head<128>(oh, qh, s, 128, o, scores); break;
        case 256: decode_head<256>(oh, qh, s, 256, o, scores); break;
        default: decode_head<0>(oh, qh, s, head_dim, o, scores);
      }
    }
    return;
  }
  const int64_t lo = o.window > 0 ? std::max<int64_t>(0, start - o.window + 1) : 0;  // the first key any token sees
  const int64_t len = start + count - lo;  // keys visible to the last token
  const KeySpan s = key_span(cache, layer, row, h / group, lo, len, head_dim);
  // scores (count, len) = scale * q_h (count, head_dim) @ keys^T, key block after key block
  kernels::matmul(scores, q + h * head_dim, s.k1, count, s.n1, head_dim, /*b_transposed=*/true,
                  /*accumulate=*/false, /*lda=*/ldq, /*ldb=*/head_dim, /*ldc=*/len, /*alpha=*/o.scale);
  if (s.n2)
    kernels::matmul(scores + s.n1, q + h * head_dim, s.k2, count, s.n2, head_dim, /*b_transposed=*/true,
                    /*accumulate=*/false, /*lda=*/ldq, /*ldb=*/head_dim, /*ldc=*/len, /*alpha=*/o.scale);
  softcap_scores(scores, count * len, o.softcap);
  // token i (position start + i) sees the keys [a, b) of the row: its window, up to itself
  for (int64_t i = 0; i < count; ++i) {
    float* row_scores = scores + i * len;
    const int64_t t = start + i;
    const int64_t a = o.window > 0 ? std::max<int64_t>(0, t - o.window + 1 - lo) : 0, b = t + 1 - lo;
    std::fill(row_scores, row_scores + a, 0.0f);
    kernels::softmax_rows(row_scores + a, 1, b - a, nullptr);
    std::fill(row_scores + b, row_scores + len, 0.0f);
  }
  // out_h (count, head_dim) = scores @ values (len, head_dim), value block after value block
  kernels::matmul(out + h * head_dim, scores, s.v1, count, head_dim, s.n1, /*b_transposed=*/false,
                  /*accumulate=*/false, /*lda=*/len, /*ldb=*/head_dim, /*ldc=*/ldo);
  if (s.n2)
    kernels::matmul(out + h * head_dim, scores + s.n1, s.v2, count, head_dim, s.n2, /*b_transposed=*/false,
                    /*accumulate=*/true, /*lda=*/len, /*ldb=*/head_dim, /*ldc=*/ldo);
}

}  // namespace kvgen
