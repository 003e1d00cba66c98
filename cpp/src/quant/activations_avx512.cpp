// AVX-512 quantization of activation blocks: activations.cpp's quantize_block and
// quantize_residual on two 16-float registers per 32-value block, with the same operations in the same order
// (division, products, |v| + 0.5 truncated), so the quants, scales and sums are bit for
// bit the portable ones. Compiled with -mavx512f/bw and -ffp-contract=off (CMakeLists.txt):
// the residual x - d q must round its product and its difference apart, as the portable
// code (built without FMA) does.
#include "activations_avx512.h"

#include "kvgen/quant/kernel_abi.h"

#if KVGEN_X86_KERNELS
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace kvgen::quant {
namespace {

#include "two_level_rows.inc"  // put_two_level_row

// The 32 values x0, x1 quantized with the scale d (finite, >= 0): q, s and the two half sums;
// `values` (2 x 16 int32) keeps the signed quants for the residual.
[[gnu::always_inline]] inline void quantize_with_scale(__m512 x0, __m512 x1, float d, int8_t* q, float* s_out,
                                                       int32_t* half_sums, __m512i* values) {
  const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
  const __m512 inv = _mm512_set1_ps(inverse), half = _mm512_set1_ps(0.5f);
  const __m512i top = _mm512_set1_epi32(127);
  int32_t sums[2];
  for (int h = 0; h < 2; ++h) {
    const __m512 v = _mm512_mul_ps(h ? x1 : x0, inv);
    __m512i magnitude = _mm512_cvttps_epi32(_mm512_add_ps(_mm512_abs_ps(v), half));
    magnitude = _mm512_min_epi32(magnitude, top);
    const __mmask16 negative = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
    const __m512i value = _mm512_mask_sub_epi32(magnitude, negative, _mm512_setzero_si512(), magnitude);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16 * h), _mm512_cvtepi32_epi8(value));
    sums[h] = _mm512_reduce_add_epi32(value);
    values[h] = value;
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
  // x - x is 0 for a finite x and NaN otherwise
  const __mmask16 bad = _mm512_cmp_ps_mask(_mm512_sub_ps(x0, x0), _mm512_sub_ps(x0, x0), _CMP_UNORD_Q) |
                        _mm512_cmp_ps_mask(_mm512_sub_ps(x1, x1), _mm512_sub_ps(x1, x1), _CMP_UNORD_Q);
  if (bad) {
    non_finite_block(q, d_out, s_out, half_sums, values);
    return *d_out;
  }
  const __m512 a0 = _mm512_abs_ps(x0), a1 = _mm512_abs_ps(x1);
  const float amax = _mm512_reduce_max_ps(_mm512_max_ps(a0, a1));  // max is exact in any order
  *d_out = amax / 127.0f;
  quantize_with_scale(x0, x1, *d_out, q, s_out, half_sums, values);
  return *d_out;
}

}  // namespace

bool has_avx512_quantizer() { return true; }

void quantize_blocks_avx512(const float* x, int64_t rows, int64_t ldx, int64_t cols, int levels, int64_t first,
                            int64_t last, int8_t* q, float* d, float* s, int32_t* half_sums, TwoLevelPassBlock* passes) {
  const int64_t blocks = cols / kBlockSize;
  for (int64_t i = first; i < last; ++i) {
    const int64_t m = i / blocks, b = i % blocks;
    const float* xb = x + m * ldx + b * kBlockSize;
    __m512i values[2];
    const float db = quantize_block(xb, q + i * kBlockSize, d + i, s + i, half_sums + 2 * i, values);
    if (levels < 2) continue;
    // the residual x - d q with the fixed scale d / 256 (a NaN block's second level is NaN too)
    const int64_t second = rows * blocks + i;
    __m512i unused[2];
    if (db != db) {
      non_finite_block(q + second * kBlockSize, d + second, s + second, half_sums + 2 * second, unused);
    } else {
      const __m512 scale = _mm512_set1_ps(db);
      const __m512 r0 = _mm512_sub_ps(_mm512_loadu_ps(xb), _mm512_mul_ps(scale, _mm512_cvtepi32_ps(values[0])));
      const __m512 r1 = _mm512_sub_ps(_mm512_loadu_ps(xb + 16), _mm512_mul_ps(scale, _mm512_cvtepi32_ps(values[1])));
      d[second] = db * (1.0f / (1 << kSecondLevelShift));
      quantize_with_scale(r0, r1, d[second], q + second * kBlockSize, s + second, half_sums + 2 * second, unused);
    }
    if (passes == nullptr) continue;
    put_two_level_row(passes[m / kTwoLevelPassRows * blocks + b], static_cast<int>(m % kTwoLevelPassRows), q, d, s,
                      half_sums, i, second);
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
