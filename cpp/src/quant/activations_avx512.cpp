// AVX-512 quantization of activation blocks: activations.cpp's quantize_block and
// quantize_residual on two 16-float registers per 32-value block, 16 blocks at a time where they
// are finite (their maxima, scales and sums a register each), with the same operations on the
// same values (division, products, |v| + 0.5 truncated), so the quants, scales and sums are bit
// for bit the portable ones. Compiled with -mavx512f/bw and -ffp-contract=off (CMakeLists.txt):
// the residual x - d q must round its product and its difference apart, as the portable
// code (built without FMA) does.
#include "activations_avx512.h"

#include "kvgen/quant/activations.h"
#include "kvgen/quant/kernel_abi.h"

#if KVGEN_X86_KERNELS
// GCC 12 reports the unmasked AVX-512 intrinsics' undefined pass-through operand as "may be used
// uninitialized" where they are inlined into across16's tree (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace kvgen::quant {
namespace {

#include "two_level_rows.inc"  // put_two_level_row

// 16 values x times inv, rounded half away from zero (|v| + 0.5 truncated) and clamped to
// [-127, 127]: stored as bytes at q and returned as int32.
[[gnu::always_inline]] inline __m512i quantize_half(__m512 x, __m512 inv, int8_t* q) {
  const __m512 v = _mm512_mul_ps(x, inv);
  __m512i magnitude = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_abs_ps(v), _mm512_set1_ps(0.5f)));
  magnitude = _mm512_min_epi32(magnitude, _mm512_set1_epi32(127));
  const __mmask16 negative = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
  const __m512i value = _mm512_mask_sub_epi32(magnitude, negative, _mm512_setzero_si512(), magnitude);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtepi32_epi8(value));
  return value;
}

// The residual x - scale q of 16 values (product and difference rounded apart: -ffp-contract=off).
[[gnu::always_inline]] inline __m512 residual_half(__m512 x, __m512 scale, __m512i q) {
  return _mm512_sub_ps(x, _mm512_mul_ps(scale, _mm512_cvtepi32_ps(q)));
}

// The lanes of 32 values that hold NaN or inf (x - x is 0 for a finite x and NaN otherwise).
[[gnu::always_inline]] inline __mmask16 non_finite_lanes(__m512 x0, __m512 x1) {
  return _mm512_cmp_ps_mask(_mm512_sub_ps(x0, x0), _mm512_sub_ps(x0, x0), _CMP_UNORD_Q) |
         _mm512_cmp_ps_mask(_mm512_sub_ps(x1, x1), _mm512_sub_ps(x1, x1), _CMP_UNORD_Q);
}

// The 32 values x0, x1 quantized with the scale d (finite, >= 0): q, s and the two half sums;
// `values` (2 x 16 int32) keeps the signed quants for the residual.
[[gnu::always_inline]] inline void quantize_with_scale(__m512 x0, __m512 x1, float d, int8_t* q, float* s_out,
                                                       int32_t* half_sums, __m512i* values) {
  const __m512 inv = _mm512_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
  int32_t sums[2];
  for (int h = 0; h < 2; ++h) {
    values[h] = quantize_half(h ? x1 : x0, inv, q + 16 * h);
    sums[h] = _mm512_reduce_add_epi32(values[h]);
  }
  *s_out = d * static_cast<float>(sums[0] + sums[1]);
  half_sums[0] = sums[0];
  half_sums[1] = sums[1];
}

// A block that holds NaN or inf (or the residual of one): a NaN scale makes every product of
// its row NaN, as float math would.
[[gnu::always_inline]] inline void non_finite_block(int8_t* q, float* d_out, float* s_out, int32_t* half_sums,
                                                    __m512i* values) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm_setzero_si128());
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16), _mm_setzero_si128());
  *d_out = *s_out = std::numeric_limits<float>::quiet_NaN();
  half_sums[0] = half_sums[1] = 0;
  values[0] = values[1] = _mm512_setzero_si512();
}

// One block of 32 values at x: d = max|x| / 127, q, s and the two half sums; returns d.
[[gnu::always_inline]] inline float quantize_block(const float* x, int8_t* q, float* d_out, float* s_out,
                                                   int32_t* half_sums, __m512i* values) {
  const __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
  if (non_finite_lanes(x0, x1)) {
    non_finite_block(q, d_out, s_out, half_sums, values);
    return *d_out;
  }
  const __m512 a0 = _mm512_abs_ps(x0), a1 = _mm512_abs_ps(x1);
  const float amax = _mm512_reduce_max_ps(_mm512_max_ps(a0, a1));  // max is exact in any order
  *d_out = amax / 127.0f;
  quantize_with_scale(x0, x1, *d_out, q, s_out, half_sums, values);
  return *d_out;
}

// 16 blocks at a time ("a gang"): their maxima, scales, inverses and quant sums each in one
// register, lane j for block j, so that the reductions and divisions of 16 blocks cost about what
// one block's cost one at a time. The per-block arithmetic is the same operations on the same
// values: a max or an integer sum is exact in any order, and a vector division or product rounds as
// the scalar one does, so the gang's quants, scales and sums are quantize_block's bit for bit.
constexpr int kGang = static_cast<int>(kQuantizedTogether);

// lane j = op over the 16 lanes of a[j] (a transpose-and-combine tree, as attention.cpp's
// sum_lanes16): op must be exact in any order (max, integer addition).
template <class Op>
[[gnu::always_inline]] inline __m512 across16(const __m512* a, Op op) {
  __m512 b[8], c[4];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) b[i] = op(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    const __m512d x = _mm512_castps_pd(b[2 * i]), y = _mm512_castps_pd(b[2 * i + 1]);
    c[i] = op(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)), _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
  }
  // c[i]: blocks 4i..4i+3 in every 128-bit lane, each lane a partial
  const __m512 d0 = op(_mm512_shuffle_f32x4(c[0], c[1], 0x44), _mm512_shuffle_f32x4(c[0], c[1], 0xEE));
  const __m512 d1 = op(_mm512_shuffle_f32x4(c[2], c[3], 0x44), _mm512_shuffle_f32x4(c[2], c[3], 0xEE));
  return op(_mm512_shuffle_f32x4(d0, d1, 0x88), _mm512_shuffle_f32x4(d0, d1, 0xDD));
}

[[gnu::always_inline]] inline __m512 max_ps(__m512 a, __m512 b) { return _mm512_max_ps(a, b); }
[[gnu::always_inline]] inline __m512 add_epi32_as_ps(__m512 a, __m512 b) {
  return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b)));
}

// One level of the gang's blocks: source(j, h) gives half h of block j's 32 values, d (lane j) its
// scale. Writes q (16 blocks of 32), d_out, s_out (16 each), half_sums (16 x 2) and the signed
// quants into values, as quantize_with_scale does block by block.
template <class Source>
[[gnu::always_inline]] inline void quantize_gang_level(Source&& source, __m512 d, int8_t* q, float* d_out,
                                                       float* s_out, int32_t* half_sums, __m512i (*values)[2]) {
  alignas(64) float inverse[kGang];
  const __mmask16 nonzero = _mm512_cmp_ps_mask(d, _mm512_setzero_ps(), _CMP_NEQ_OQ);
  _mm512_store_ps(inverse, _mm512_maskz_div_ps(nonzero, _mm512_set1_ps(1.0f), d));
  for (int j = 0; j < kGang; ++j) {
    const __m512 inv = _mm512_set1_ps(inverse[j]);
    for (int h = 0; h < 2; ++h) values[j][h] = quantize_half(source(j, h), inv, q + j * kBlockSize + 16 * h);
  }
  __m512 halves[2][kGang];
#pragma GCC unroll 16
  for (int j = 0; j < kGang; ++j)
    for (int h = 0; h < 2; ++h) halves[h][j] = _mm512_castsi512_ps(values[j][h]);
  const __m512i sum0 = _mm512_castps_si512(across16(halves[0], add_epi32_as_ps));
  const __m512i sum1 = _mm512_castps_si512(across16(halves[1], add_epi32_as_ps));
  _mm512_storeu_ps(d_out, d);
  _mm512_storeu_ps(s_out, _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_add_epi32(sum0, sum1))));
  // half_sums: (sum0[j], sum1[j]) pairs, block after block
  _mm512_storeu_si512(half_sums, _mm512_permutex2var_epi32(sum0, _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0), sum1));
  _mm512_storeu_si512(half_sums + kGang, _mm512_permutex2var_epi32(sum0, _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8), sum1));
}

// Blocks [i, i + 16) (xs: where each block's 32 values start) as a gang, both levels when
// levels = 2; false, with nothing written, where a block holds NaN or inf (the caller quantizes
// those blocks one by one).
[[gnu::always_inline]] inline bool quantize_gang(const float* const* xs, int64_t i, int64_t second, int levels,
                                                 int8_t* q, float* d, float* s, int32_t* half_sums) {
  __m512 magnitudes[kGang];
  __mmask16 bad = 0;
#pragma GCC unroll 16
  for (int j = 0; j < kGang; ++j) {
    const __m512 x0 = _mm512_loadu_ps(xs[j]), x1 = _mm512_loadu_ps(xs[j] + 16);
    bad |= non_finite_lanes(x0, x1);
    magnitudes[j] = _mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1));
  }
  if (bad) return false;
  const __m512 d1 = _mm512_div_ps(across16(magnitudes, max_ps), _mm512_set1_ps(127.0f));
  __m512i values[kGang][2];
  quantize_gang_level([&](int j, int h) { return _mm512_loadu_ps(xs[j] + 16 * h); }, d1, q + i * kBlockSize, d + i,
                      s + i, half_sums + 2 * i, values);
  if (levels < 2) return true;
  // the residual x - d q with the fixed scale d / 256
  alignas(64) float scales[kGang];
  _mm512_store_ps(scales, d1);
  __m512i unused[kGang][2];
  quantize_gang_level(
      [&](int j, int h) { return residual_half(_mm512_loadu_ps(xs[j] + 16 * h), _mm512_set1_ps(scales[j]), values[j][h]); },
      _mm512_mul_ps(d1, _mm512_set1_ps(1.0f / (1 << kSecondLevelShift))), q + second * kBlockSize, d + second,
      s + second, half_sums + 2 * second, unused);
  return true;
}

// One block i (at xb) and, with levels = 2, its residual at block `second`.
[[gnu::always_inline]] inline void quantize_one(const float* xb, int64_t i, int64_t second, int levels, int8_t* q,
                                                float* d, float* s, int32_t* half_sums) {
  __m512i values[2];
  const float db = quantize_block(xb, q + i * kBlockSize, d + i, s + i, half_sums + 2 * i, values);
  if (levels < 2) return;
  // the residual x - d q with the fixed scale d / 256 (a NaN block's second level is NaN too)
  __m512i unused[2];
  if (db != db) {
    non_finite_block(q + second * kBlockSize, d + second, s + second, half_sums + 2 * second, unused);
    return;
  }
  const __m512 scale = _mm512_set1_ps(db);
  const __m512 r0 = residual_half(_mm512_loadu_ps(xb), scale, values[0]);
  const __m512 r1 = residual_half(_mm512_loadu_ps(xb + 16), scale, values[1]);
  d[second] = db * (1.0f / (1 << kSecondLevelShift));
  quantize_with_scale(r0, r1, d[second], q + second * kBlockSize, s + second, half_sums + 2 * second, unused);
}

}  // namespace

bool has_avx512_quantizer() { return true; }

void quantize_blocks_avx512(const float* x, int64_t rows, int64_t ldx, int64_t cols, int levels, int64_t first,
                            int64_t last, int8_t* q, float* d, float* s, int32_t* half_sums, TwoLevelPassBlock* passes) {
  const int64_t blocks = cols / kBlockSize, second_offset = rows * blocks;
  const auto start = [&](int64_t i) { return x + i / blocks * ldx + i % blocks * kBlockSize; };
  for (int64_t i = first; i < last;) {
    const int64_t n = std::min<int64_t>(kGang, last - i);
    bool done = false;
    if (n == kGang) {
      const float* xs[kGang];
      for (int j = 0; j < kGang; ++j) xs[j] = start(i + j);
      done = quantize_gang(xs, i, second_offset + i, levels, q, d, s, half_sums);
    }
    if (!done)
      for (int64_t j = i; j < i + n; ++j) quantize_one(start(j), j, second_offset + j, levels, q, d, s, half_sums);
    if (passes != nullptr && levels == 2)
      for (int64_t j = i; j < i + n; ++j) {
        const int64_t m = j / blocks, b = j % blocks;
        put_two_level_row(passes[m / kTwoLevelPassRows * blocks + b], static_cast<int>(m % kTwoLevelPassRows), q, d, s,
                          half_sums, j, second_offset + j);
      }
    i += n;
  }
}

}  // namespace kvgen::quant

#else

namespace kvgen::quant {
bool has_avx512_quantizer() { return false; }
void quantize_blocks_avx512(const float*, int64_t, int64_t, int64_t, int, int64_t, int64_t, int8_t*, float*, float*,
                            int32_t*, TwoLevelPassBlock*) {}
}  // namespace kvgen::quant

#endif
