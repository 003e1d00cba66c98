// IEEE binary16 (half precision) rows for the KV cache: float -> half (round to nearest
// even, as F16C's cvtps2ph) and half -> float (exact). With F16C / AVX-512 in the build
// (-march=native) the conversions use cvtps2ph / cvtph2ps; otherwise bit manipulation
// that gives the same bits.
#pragma once

#include <bit>
#include <cstdint>

#if defined(__F16C__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "kvgen/quant/fp16.h"

namespace kvgen::half {

// The binary16 nearest to f (ties to even); overflow gives infinity, NaN stays NaN.
inline uint16_t from_float(float f) {
#if defined(__F16C__)
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
#else
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) return static_cast<uint16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0u));
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds to >= 65520: infinity
  if (abs < 0x38800000u) {  // below the smallest normal half: a subnormal (or zero), rounded to even
    const float magnitude = std::bit_cast<float>(abs) * 0x1p24f;  // in units of 2^-24, exact
    const auto r = static_cast<uint32_t>(__builtin_nearbyintf(magnitude));
    return static_cast<uint16_t>(sign | r);
  }
  const uint32_t rounded = abs + 0xFFFu + ((abs >> 13) & 1u);  // round the 13 dropped bits to even
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
#endif
}

inline float to_float(uint16_t h) {
#if defined(__F16C__)
  return _cvtsh_ss(h);
#else
  return quant::fp16_to_float(h);
#endif
}

// dst (n) = src (n) rounded to half.
inline void from_floats(uint16_t* dst, const float* src, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
#elif defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  for (; i < n; ++i) dst[i] = from_float(src[i]);
}

// dst (n) = src (n) as floats.
inline void to_floats(float* dst, const uint16_t* src, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
#elif defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
#endif
  for (; i < n; ++i) dst[i] = to_float(src[i]);
}

}  // namespace kvgen::half
