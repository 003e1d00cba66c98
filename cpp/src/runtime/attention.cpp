// Causal attention: S = scale * Q K^T over the cached keys (optionally soft-capped),
// masked softmax, O = S V. The keys one call reads are positions [lo, start + count) in
// position order: one block of the cache, or two where a sliding-window ring wraps.
#include "kvgen/runtime/attention.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "kvgen/ops/vector_math.h"
#include "kvgen/runtime/half.h"
#include "kvgen/ops/layer_ops.h"

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

// Keys of a tile converted from half at a time (in L1 while every head of the group reads them).
int64_t tile_keys(int64_t head_dim) { return std::max<int64_t>(1, 2048 / head_dim); }

// rows (each head_dim elements) from src as floats: src itself when it holds floats, else
// converted into tile (int8 rows times their scales: scale[i] for row i).
const float* as_floats(const float* src, int64_t /*rows*/, int64_t /*head_dim*/, const float* /*scale*/,
                       float* /*tile*/) {
  return src;
}
const float* as_floats(const uint16_t* src, int64_t rows, int64_t head_dim, const float* /*scale*/, float* tile) {
  half::to_floats(tile, src, rows * head_dim);
  return tile;
}
const float* as_floats(const int8_t* src, int64_t rows, int64_t head_dim, const float* scale, float* tile) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t d = 0; d < head_dim; ++d) tile[i * head_dim + d] = static_cast<float>(src[i * head_dim + d]) * scale[i];
  return tile;
}

#if defined(__AVX512F__)
// out (8) = the sums of the 16 lanes of each of a[0..7] (a transpose-and-add tree:
// about three instructions per sum instead of a reduction each).
inline __m256 sum_lanes8(const __m512* a) {
  __m512 b[4], c[2];
  for (int i = 0; i < 4; ++i)
    b[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
  for (int i = 0; i < 2; ++i) {
    const __m512d x = _mm512_castps_pd(b[2 * i]), y = _mm512_castps_pd(b[2 * i + 1]);
    c[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)), _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
  }
  // c[i]: keys 4i..4i+3 in every 128-bit lane, each lane a partial sum
  const __m512 d = _mm512_add_ps(_mm512_shuffle_f32x4(c[0], c[1], 0x44), _mm512_shuffle_f32x4(c[0], c[1], 0xEE));
  return _mm512_castps512_ps256(_mm512_add_ps(_mm512_shuffle_f32x4(d, d, 0x88), _mm512_shuffle_f32x4(d, d, 0xDD)));
}

// out (16) = the sums of the 16 lanes of each of a[0..15]: sum_lanes8 of each half.
inline __m512 sum_lanes16(const __m512* a) {
  const __m512d low = _mm512_castps_pd(_mm512_castps256_ps512(sum_lanes8(a)));
  return _mm512_castpd_ps(_mm512_insertf64x4(low, _mm256_castps_pd(sum_lanes8(a + 8)), 1));
}
#endif

// scores (len) = scale * keys (len, head_dim) @ qh (head_dim): with AVX-512, 16 keys at a
// time for head_dim a multiple of 16.
template <int HD>
void score_tile(float* scores, const float* qh, const float* keys, int64_t len, int64_t head_dim_at_run_time,
                float scale) {
#if defined(__AVX512F__)
  if constexpr (HD > 0 && HD % 16 == 0) {
    constexpr int NV = HD / 16;
    __m512 q[NV];
    for (int v = 0; v < NV; ++v) q[v] = _mm512_loadu_ps(qh + 16 * v);
    const __m512 s = _mm512_set1_ps(scale);
    int64_t j = 0;
    for (; j + 16 <= len; j += 16) {
      __m512 a[16];
      for (int i = 0; i < 16; ++i) {
        const float* k = keys + (j + i) * HD;
        a[i] = _mm512_mul_ps(q[0], _mm512_loadu_ps(k));
        for (int v = 1; v < NV; ++v) a[i] = _mm512_fmadd_ps(q[v], _mm512_loadu_ps(k + 16 * v), a[i]);
      }
      _mm512_storeu_ps(scores + j, _mm512_mul_ps(sum_lanes16(a), s));
    }
    for (; j < len; ++j) {
      const float* k = keys + j * HD;
      __m512 a = _mm512_mul_ps(q[0], _mm512_loadu_ps(k));
      for (int v = 1; v < NV; ++v) a = _mm512_fmadd_ps(q[v], _mm512_loadu_ps(k + 16 * v), a);
      scores[j] = _mm512_reduce_add_ps(a) * scale;
    }
    return;
  }
#endif
  dot_keys<HD>(scores, qh, keys, len, head_dim_at_run_time, scale);
}

// acc (head_dim) += p (len) @ values (len, head_dim), the accumulator in registers when HD > 0.
template <int HD>
void weigh_tile(float* acc, const float* p, const float* values, int64_t len, int64_t head_dim_at_run_time) {
#if defined(__AVX512F__)
  if constexpr (HD > 0 && HD % 16 == 0) {
    constexpr int NV = HD / 16;
    __m512 a[NV];
    for (int v = 0; v < NV; ++v) a[v] = _mm512_loadu_ps(acc + 16 * v);
    for (int64_t t = 0; t < len; ++t) {
      const __m512 pt = _mm512_set1_ps(p[t]);
      for (int v = 0; v < NV; ++v) a[v] = _mm512_fmadd_ps(pt, _mm512_loadu_ps(values + t * HD + 16 * v), a[v]);
    }
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(acc + 16 * v, a[v]);
    return;
  }
#endif
  if constexpr (HD > 0) {
    float a[HD];
    std::copy(acc, acc + HD, a);
    weigh_values<HD>(a, p, values, len, HD);
    std::copy(a, a + HD, acc);
  } else {
    weigh_values<0>(acc, p, values, len, head_dim_at_run_time);
  }
}

#if defined(__AVX512F__)
// 16 elements of a key or value row as floats: halves converted in registers.
inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 load16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
// int8 elements as floats (the row's scale is applied to its score or softmax weight).
inline __m512 load16(const int8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

// Brings the cache lines of row (HD elements of T) at p towards L1 before they are read.
template <class T, int HD>
inline void prefetch_row(const T* p) {
  constexpr int kLines = (HD * static_cast<int>(sizeof(T)) + 63) / 64;
  for (int c = 0; c < kLines; ++c) _mm_prefetch(reinterpret_cast<const char*>(p) + 64 * c, _MM_HINT_T0);
}

// Rows (keys or values of HD elements of T) prefetched ahead of the one being read: about
// 8 KiB (the hardware prefetcher alone leaves a cold block's rows waiting on memory).
template <class T, int HD>
inline constexpr int64_t kAhead = std::max<int64_t>(4, 8192 / (HD * static_cast<int64_t>(sizeof(T))));


// scores[g * kAttentionBlock + i] (i < n <= 8) = scale * keys[i] (HD) . q[g] (HD), for the
// G heads g < G: each key is loaded (and converted) once for the G heads, and the 8 x G
// lane-partials stay in registers until they are summed.
template <class T, int HD, int G, bool kFull>
inline void score_keys8(float* scores, const float* q, const T* keys, const T* ahead_end, int64_t n, float scale) {
  constexpr int NV = HD / 16;
  __m512 a[G][8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    if (kFull || i < n) {
      const T* row = keys + i * HD;
      if (ahead_end - row > kAhead<T, HD> * HD) prefetch_row<T, HD>(row + kAhead<T, HD> * HD);
      __m512 k[NV];
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) k[v] = load16(row + 16 * v);
#pragma GCC unroll 8
      for (int g = 0; g < G; ++g) {
        a[g][i] = _mm512_mul_ps(_mm512_loadu_ps(q + g * HD), k[0]);
#pragma GCC unroll 16
        for (int v = 1; v < NV; ++v) a[g][i] = _mm512_fmadd_ps(_mm512_loadu_ps(q + g * HD + 16 * v), k[v], a[g][i]);
      }
    } else {
      for (int g = 0; g < G; ++g) a[g][i] = _mm512_setzero_ps();
    }
  }
  const __m256 s = _mm256_set1_ps(scale);
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g) {
    const __m256 r = _mm256_mul_ps(sum_lanes8(a[g]), s);
    if constexpr (kFull) _mm256_storeu_ps(scores + g * kAttentionBlock, r);
    else _mm256_mask_storeu_ps(scores + g * kAttentionBlock, static_cast<__mmask8>((1u << n) - 1u), r);
  }
}

// score_keys8 over all the heads of the group, as many at a time as the registers hold.
template <class T, int HD>
void score_group(float* scores, const float* q, const T* keys, const T* ahead_end, int64_t n, int64_t group,
                 float scale) {
  constexpr int HP = std::max(1, (28 - HD / 16) / 8);
  for (int64_t g = 0; g < group;) {
    const int64_t hp = std::min<int64_t>(HP, group - g);
    float* sg = scores + g * kAttentionBlock;
    const float* qg = q + g * HD;
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
      switch (hp) {
        case 1: score_keys8<T, HD, 1, true>(sg + j, qg, keys + j * HD, ahead_end, 8, scale); break;
        case 2: if constexpr (HP >= 2) score_keys8<T, HD, 2, true>(sg + j, qg, keys + j * HD, ahead_end, 8, scale); break;
        default: if constexpr (HP >= 3) score_keys8<T, HD, 3, true>(sg + j, qg, keys + j * HD, ahead_end, 8, scale); break;
      }
    if (j < n)
      switch (hp) {
        case 1: score_keys8<T, HD, 1, false>(sg + j, qg, keys + j * HD, ahead_end, n - j, scale); break;
        case 2: if constexpr (HP >= 2) score_keys8<T, HD, 2, false>(sg + j, qg, keys + j * HD, ahead_end, n - j, scale); break;
        default: if constexpr (HP >= 3) score_keys8<T, HD, 3, false>(sg + j, qg, keys + j * HD, ahead_end, n - j, scale); break;
      }
    g += hp;
  }
}

// acc[g] (HD) += p[g * kAttentionBlock + t] * values[t] (HD) over t < len, for the G heads
// g < G: each value row is loaded (and converted) once for the G heads, whose accumulators
// stay in registers (two sets, even and odd rows, when G * HD / 16 < 8 chains).
template <class T, int HD, int G>
void weigh_heads(float* acc, const float* p, const T* values, const T* ahead_end, int64_t len) {
  constexpr int NV = HD / 16, SETS = G * NV < 8 ? 2 : 1;
  // the loops over sets, heads and vectors fully unrolled (as score_keys8's), so that the
  // accumulators stay in registers: left to the compiler, -O2 kept them in memory, a load and a
  // store around every multiply-add
  __m512 a[SETS][G][NV];
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) {
      a[0][g][v] = _mm512_loadu_ps(acc + g * HD + 16 * v);
      if constexpr (SETS == 2) a[SETS - 1][g][v] = _mm512_setzero_ps();
    }
  int64_t t = 0;
  for (; t + SETS <= len; t += SETS)
#pragma GCC unroll 2
    for (int e = 0; e < SETS; ++e) {
      const T* row = values + (t + e) * HD;
      if (ahead_end - row > kAhead<T, HD> * HD) prefetch_row<T, HD>(row + kAhead<T, HD> * HD);
      __m512 x[NV];
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) x[v] = load16(row + 16 * v);
#pragma GCC unroll 8
      for (int g = 0; g < G; ++g) {
        const __m512 pt = _mm512_set1_ps(p[g * kAttentionBlock + t + e]);
#pragma GCC unroll 16
        for (int v = 0; v < NV; ++v) a[e][g][v] = _mm512_fmadd_ps(pt, x[v], a[e][g][v]);
      }
    }
  for (; t < len; ++t) {
    const T* row = values + t * HD;
#pragma GCC unroll 8
    for (int g = 0; g < G; ++g) {
      const __m512 pt = _mm512_set1_ps(p[g * kAttentionBlock + t]);
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) a[0][g][v] = _mm512_fmadd_ps(pt, load16(row + 16 * v), a[0][g][v]);
    }
  }
#pragma GCC unroll 8
  for (int g = 0; g < G; ++g)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) {
      __m512 sum = a[0][g][v];
      if constexpr (SETS == 2) sum = _mm512_add_ps(sum, a[SETS - 1][g][v]);
      _mm512_storeu_ps(acc + g * HD + 16 * v, sum);
    }
}

// weigh_heads over all the heads of the group, as many at a time as keep 24 accumulators.
template <class T, int HD>
void weigh_group(float* acc, const float* p, const T* values, const T* ahead_end, int64_t len, int64_t group) {
  constexpr int HP = std::max(1, 24 / (HD / 16));
  for (int64_t g = 0; g < group;) {
    const int64_t hp = std::min<int64_t>(HP, group - g);
    float* ag = acc + g * HD;
    const float* pg = p + g * kAttentionBlock;
    switch (hp) {
      case 1: weigh_heads<T, HD, 1>(ag, pg, values, ahead_end, len); break;
      case 2: if constexpr (HP >= 2) weigh_heads<T, HD, 2>(ag, pg, values, ahead_end, len); break;
      case 3: if constexpr (HP >= 3) weigh_heads<T, HD, 3>(ag, pg, values, ahead_end, len); break;
      case 4: if constexpr (HP >= 4) weigh_heads<T, HD, 4>(ag, pg, values, ahead_end, len); break;
      case 5: if constexpr (HP >= 5) weigh_heads<T, HD, 5>(ag, pg, values, ahead_end, len); break;
      default: if constexpr (HP >= 6) weigh_heads<T, HD, 6>(ag, pg, values, ahead_end, len); break;
    }
    g += hp;
  }
}
#endif

// use(j, slot, run) for the runs of contiguous slots holding positions [p0, p0 + n) of a
// row's ring of `capacity` slots: one run, two where the ring wraps (j: the run's first
// position, counted from p0).
template <class Use>
inline void for_slot_runs(int64_t p0, int64_t n, int64_t capacity, Use&& use) {
  for (int64_t j = 0; j < n;) {
    const int64_t slot = (p0 + j) % capacity, run = std::min(n - j, capacity - slot);
    use(j, slot, run);
    j += run;
  }
}

// s (n) = softmax([s, sink]) without the sink's own weight: exp(s - m) / (sum exp(s - m) +
// exp(sink - m)), m the max of s and the sink (transformers' eager_attention_forward with sinks).
void softmax_with_sink(float* s, int64_t n, float sink) {
  const float m = std::max(ops::max_of(s, n), sink);
  const double total = ops::exp_into(s, s, n, m) + static_cast<double>(ops::fast_exp(sink - m));
  ops::scale_inplace(s, static_cast<float>(1.0 / total), n);
}

// Each head g of the group: scores (n, at g * kAttentionBlock) soft-capped, then replaced
// by exp(score - m[g]); m[g] is their max and l[g] the sum of the exps.
inline void softmax_heads(float* scores, int64_t group, int64_t n, float softcap, float* m, float* l) {
  for (int64_t g = 0; g < group; ++g) {
    float* s = scores + g * kAttentionBlock;
    softcap_scores(s, n, softcap);
    m[g] = ops::max_of(s, n);
    l[g] = static_cast<float>(ops::exp_into(s, s, n, m[g]));
  }
}

#if defined(__AVX512F__)
// block_of's register path: rows of T (half bits, int8, or floats converted from halves by
// converted_blocks) read in registers, each once for the group's heads. An int8 cache's rows carry
// a scale each (ks, vs: (capacity)): a key's scale multiplies its score after the dot product, a
// value's its softmax weight before the weighted sum.
template <class T, int HD>
void registers_block(float* part, const float* q, const T* keys, const T* values, const float* ks, const float* vs,
                     int64_t capacity, int64_t p0, int64_t n, int64_t group, const AttentionOptions& o,
                     float* scratch) {
  float* scores = scratch;                                      // (group, kAttentionBlock)
  float *m = part, *l = part + group, *acc = part + 2 * group;  // (group), (group), (group, head_dim)
  // scores[g][j + i] *= scale[slot + i] over a run of slots, for every head of the group
  const auto scale_run = [&](const float* scale, int64_t j, int64_t slot, int64_t run) {
    if constexpr (std::is_same_v<T, int8_t>)
      for (int64_t g = 0; g < group; ++g) {
        float* s = scores + g * kAttentionBlock + j;
        for (int64_t i = 0; i < run; ++i) s[i] *= scale[slot + i];
      }
  };
  const T* keys_end = keys + capacity * HD;
  for_slot_runs(p0, n, capacity, [&](int64_t j, int64_t slot, int64_t run) {
    score_group<T, HD>(scores + j, q, keys + slot * HD, keys_end, run, group, o.scale);
    scale_run(ks, j, slot, run);
  });
  softmax_heads(scores, group, n, o.softcap, m, l);
  std::fill(acc, acc + group * HD, 0.0f);
  const T* values_end = values + capacity * HD;
  for_slot_runs(p0, n, capacity, [&](int64_t j, int64_t slot, int64_t run) {
    scale_run(vs, j, slot, run);
    weigh_group<T, HD>(acc, scores + j, values + slot * HD, values_end, run, group);
  });
}
#endif

// See attention_block: keys and values of type T (float, half bits or int8), head_dim HD (0:
// run time). An int8 cache's rows carry a scale each (ks, vs: (capacity); null otherwise).
template <class T, int HD>
void block_of(float* part, const float* q, const T* keys, const T* values, const float* ks, const float* vs,
              int64_t capacity, int64_t p0, int64_t n, int64_t group, int64_t head_dim_at_run_time,
              const AttentionOptions& o, float* scratch) {
  const int64_t hd = HD ? HD : head_dim_at_run_time;
  float* scores = scratch;                         // (group, kAttentionBlock)
  float *m = part, *l = part + group, *acc = part + 2 * group;  // (group), (group), (group, head_dim)
#if defined(__AVX512F__)
  // a half or int8 cache: rows converted in registers, each read once for the group's heads
  if constexpr ((std::is_same_v<T, uint16_t> || std::is_same_v<T, int8_t>) && HD > 0 && HD % 16 == 0) {
    registers_block<T, HD>(part, q, keys, values, ks, vs, capacity, p0, n, group, o, scratch);
    return;
  }
#endif
  const int64_t tile = tile_keys(hd);  // floats are read in place, others converted a tile at a time
  float* converted = scratch + group * kAttentionBlock;  // (tile, head_dim) keys or values as floats
  // tiles within the runs of contiguous slots
  const auto for_tiles = [&](const T* base, const float* scale, auto&& use) {
    for_slot_runs(p0, n, capacity, [&](int64_t j, int64_t slot, int64_t run) {
      for (int64_t jj = 0; jj < run; jj += tile) {
        const int64_t tn = std::min(tile, run - jj);
        use(j + jj, tn, as_floats(base + (slot + jj) * hd, tn, hd, scale ? scale + slot + jj : nullptr, converted));
      }
    });
  };
  for_tiles(keys, ks, [&](int64_t j, int64_t tn, const float* k) {
    for (int64_t g = 0; g < group; ++g) score_tile<HD>(scores + g * kAttentionBlock + j, q + g * hd, k, tn, hd, o.scale);
  });
  softmax_heads(scores, group, n, o.softcap, m, l);
  std::fill(acc, acc + group * hd, 0.0f);
  for_tiles(values, vs, [&](int64_t j, int64_t tn, const float* v) {
    for (int64_t g = 0; g < group; ++g) weigh_tile<HD>(acc + g * hd, scores + g * kAttentionBlock + j, v, tn, hd);
  });
}

template <class T>
void block_dispatch(float* part, const float* q, const T* keys, const T* values, const float* ks, const float* vs,
                    int64_t capacity, int64_t p0, int64_t n, int64_t group, int64_t head_dim,
                    const AttentionOptions& o, float* scratch) {
  switch (head_dim) {  // the common widths unrolled
    case 64: block_of<T, 64>(part, q, keys, values, ks, vs, capacity, p0, n, group, 64, o, scratch); break;
    case 128: block_of<T, 128>(part, q, keys, values, ks, vs, capacity, p0, n, group, 128, o, scratch); break;
    case 256: block_of<T, 256>(part, q, keys, values, ks, vs, capacity, p0, n, group, 256, o, scratch); break;
    default: block_of<T, 0>(part, q, keys, values, ks, vs, capacity, p0, n, group, head_dim, o, scratch);
  }
}

// block_of's scratch: the scores, then a tile of keys or values as floats.
int64_t block_floats(int64_t group, int64_t head_dim) { return group * kAttentionBlock + tile_keys(head_dim) * head_dim; }

#if defined(__AVX512F__)
// attention_block_tokens of a half cache without a window: the block's keys and values converted
// to floats once (after block_of's scratch), then each token's registers_block over them. The
// floats are the halves' exact values and registers_block does the same arithmetic on them as
// on the halves, so each part is attention_block's bit for bit.
template <int HD>
void converted_blocks(float* const* parts, const float* const* q, const int64_t* t, int64_t count, KVCache& cache,
                      int64_t layer, int64_t row, int64_t kv_head, int64_t block, int64_t group,
                      const AttentionOptions& o, float* scratch) {
  const int64_t p0 = block * kAttentionBlock, n = std::min(kAttentionBlock, t[count - 1] + 1 - p0);
  float* keys = scratch + block_floats(group, HD);  // (n, HD)
  float* values = keys + kAttentionBlock * HD;      // (n, HD)
  const uint16_t* hk = cache.half_keys(layer, row, kv_head);
  const uint16_t* hv = cache.half_values(layer, row, kv_head);
  for_slot_runs(p0, n, cache.capacity(layer), [&](int64_t j, int64_t slot, int64_t run) {
    half::to_floats(keys + j * HD, hk + slot * HD, run * HD);
    half::to_floats(values + j * HD, hv + slot * HD, run * HD);
  });
  for (int64_t i = 0; i < count; ++i)
    registers_block<float, HD>(parts[i], q[i] + kv_head * group * HD, keys, values, nullptr, nullptr, n, 0,
                               std::min(kAttentionBlock, t[i] + 1 - p0), group, o, scratch);
}
#endif

}  // namespace

int64_t block_scratch_floats(int64_t group, int64_t head_dim) {
  return block_floats(group, head_dim) + 2 * kAttentionBlock * head_dim;
}

void attention_block_tokens(float* const* parts, const float* const* q, const int64_t* t, int64_t count,
                            KVCache& cache, int64_t layer, int64_t row, int64_t kv_head, int64_t block, int64_t group,
                            const AttentionOptions& o, float* scratch) {
#if defined(__AVX512F__)
  if (count > 1 && cache.half() && o.window == 0) switch (cache.head_dim(layer)) {
      case 64: return converted_blocks<64>(parts, q, t, count, cache, layer, row, kv_head, block, group, o, scratch);
      case 128: return converted_blocks<128>(parts, q, t, count, cache, layer, row, kv_head, block, group, o, scratch);
      case 256: return converted_blocks<256>(parts, q, t, count, cache, layer, row, kv_head, block, group, o, scratch);
      default: break;
    }
#endif
  for (int64_t i = 0; i < count; ++i)
    attention_block(parts[i], q[i], cache, layer, row, t[i], kv_head, block, group, o, scratch);
}

void attention_block(float* part, const float* q, KVCache& cache, int64_t layer, int64_t row, int64_t t,
                     int64_t kv_head, int64_t block, int64_t group, const AttentionOptions& o, float* scratch) {
  const int64_t hd = cache.head_dim(layer), lo = first_key(t, o.window);
  const int64_t p0 = lo + block * kAttentionBlock, n = std::min(kAttentionBlock, t + 1 - p0);
  const float* qg = q + kv_head * group * hd;
  const int64_t cap = cache.capacity(layer);
  if (cache.int8())
    block_dispatch(part, qg, cache.int8_keys(layer, row, kv_head), cache.int8_values(layer, row, kv_head),
                   cache.key_scales(layer, row, kv_head), cache.value_scales(layer, row, kv_head), cap, p0, n, group,
                   hd, o, scratch);
  else if (cache.half())
    block_dispatch(part, qg, cache.half_keys(layer, row, kv_head), cache.half_values(layer, row, kv_head), nullptr,
                   nullptr, cap, p0, n, group, hd, o, scratch);
  else
    block_dispatch(part, qg, cache.keys(layer, row, kv_head), cache.values(layer, row, kv_head), nullptr, nullptr,
                   cap, p0, n, group, hd, o, scratch);
}

void merge_blocks(float* out, const float* parts, int64_t kv_heads, int64_t blocks, int64_t group, int64_t hd,
                  const float* sinks) {
  const int64_t part = block_part_floats(group, hd);
  for (int64_t kv = 0; kv < kv_heads; ++kv)
    for (int64_t g = 0; g < group; ++g) {
      const float* first = parts + kv * blocks * part;  // the head's parts, block after block
      float top = first[g];
      for (int64_t b = 1; b < blocks; ++b) top = std::max(top, first[b * part + g]);
      const float* sink = sinks != nullptr ? sinks + kv * group + g : nullptr;  // a key without a value
      if (sink != nullptr) top = std::max(top, *sink);
      float* oh = out + (kv * group + g) * hd;
      std::fill(oh, oh + hd, 0.0f);
      float total = sink == nullptr ? 0.0f : (*sink == top ? 1.0f : ops::fast_exp(*sink - top));
      for (int64_t b = 0; b < blocks; ++b) {
        const float* pb = first + b * part;
        const float w = pb[g] == top ? 1.0f : ops::fast_exp(pb[g] - top);  // rescales exp(score - block max)
        total += w * pb[group + g];
        ops::add_scaled_inplace(oh, pb + 2 * group + g * hd, w, hd);
      }
      ops::scale_inplace(oh, 1.0f / total, hd);
    }
}

void causal_attention(float* out, int64_t ldo, const float* q, int64_t ldq, KVCache& cache, int64_t layer,
                      int64_t row, int64_t start, int64_t count, int64_t heads, int64_t kv_heads, int64_t head_dim,
                      const AttentionOptions& o, int64_t h, float* scores, float* kv) {
  const int64_t group = heads / kv_heads;  // query heads per kv head
  const int64_t lo = o.window > 0 ? std::max<int64_t>(0, start - o.window + 1) : 0;  // the first key any token sees
  const int64_t len = start + count - lo;  // keys visible to the last token
  KeySpan s{};
  if (cache.type() != KVType::Float32) {  // the span as floats in kv: keys (len, head_dim), then values (len, head_dim)
    const int64_t cap = cache.capacity(layer), first = lo % cap, n1 = std::min(len, cap - first);
    cache.load(kv, kv + len * head_dim, layer, row, h / group, first, n1);
    if (len > n1) cache.load(kv + n1 * head_dim, kv + (len + n1) * head_dim, layer, row, h / group, 0, len - n1);
    s = {kv, kv + len * head_dim, nullptr, nullptr, len, 0};
  } else {
    s = key_span(cache, layer, row, h / group, lo, len, head_dim);
  }
  // scores (count, len) = scale * q_h (count, head_dim) @ keys^T, key block after key block
  ops::matmul(scores, q + h * head_dim, s.k1, count, s.n1, head_dim, /*b_transposed=*/true,
              /*accumulate=*/false, /*lda=*/ldq, /*ldb=*/head_dim, /*ldc=*/len, /*alpha=*/o.scale);
  if (s.n2)
    ops::matmul(scores + s.n1, q + h * head_dim, s.k2, count, s.n2, head_dim, /*b_transposed=*/true,
                /*accumulate=*/false, /*lda=*/ldq, /*ldb=*/head_dim, /*ldc=*/len, /*alpha=*/o.scale);
  softcap_scores(scores, count * len, o.softcap);
  // token i (position start + i) sees the keys [a, b) of the row: its window, up to itself
  for (int64_t i = 0; i < count; ++i) {
    float* row_scores = scores + i * len;
    const int64_t t = start + i;
    const int64_t a = o.window > 0 ? std::max<int64_t>(0, t - o.window + 1 - lo) : 0, b = t + 1 - lo;
    std::fill(row_scores, row_scores + a, 0.0f);
    if (o.sinks == nullptr)
      ops::softmax_rows(row_scores + a, 1, b - a, nullptr);
    else
      softmax_with_sink(row_scores + a, b - a, o.sinks[h]);
    std::fill(row_scores + b, row_scores + len, 0.0f);
  }
  // out_h (count, head_dim) = scores @ values (len, head_dim), value block after value block
  ops::matmul(out + h * head_dim, scores, s.v1, count, head_dim, s.n1, /*b_transposed=*/false,
              /*accumulate=*/false, /*lda=*/len, /*ldb=*/head_dim, /*ldc=*/ldo);
  if (s.n2)
    ops::matmul(out + h * head_dim, scores + s.n1, s.v2, count, head_dim, s.n2, /*b_transposed=*/false,
                /*accumulate=*/true, /*lda=*/len, /*ldb=*/head_dim, /*ldc=*/ldo);
}

}  // namespace kvgen
