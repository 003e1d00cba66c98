// AVX512_BF16 kernels: products of quantized weights with bfloat16 activations
// (Projector's activations "bf16"). Each 16-row group's weights are decoded once per pass
// into bf16 pairs (a 512-bit register = 16 rows x 2 consecutive weights, as vdpbf16ps
// reads them), then every activation row of the product streams over them: one vdpbf16ps
// per row per 32 weights, float32 accumulation. The unpacking that int8 mode repeats per
// row (the scale multiply-add of each block, twice in two levels) happens once per group,
// so many rows (a prompt chunk) cost 16 instructions a row per 16 x 32 weights.
//
// A weight is the file's value (unit_scales.inc: scale * value + min in float32, no fused
// multiply-add, as the portable kernels) rounded to bf16; an activation is the float32
// rounded to bf16 (nearest, ties to even). Each output accumulates its row's pairs in
// two float32 chains, even and odd pairs, added at the end: the same operations in the
// same order whatever the number of rows or the groups a call covers, so a row's result
// never depends on the rows that share its pass.
//
// Compiled with -mavx512f/bw/vl/bf16 and -ffp-contract=off (CMakeLists.txt); runs only
// after dispatch.cpp has found AVX512_BF16.
#include "kvgen/quant/kernel_abi.h"
#if KVGEN_X86_KERNELS
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kvgen/quant/fp16.h"

namespace kvgen::quant {

namespace {

#include "unit_scales.inc"         // UnitQuants, unit_base, units_per_tile
#include "unit_scales_avx512.inc"  // simd_unit_scales

// Activation rows per pass over a decoded group: two accumulators a row (24 of the 32
// registers) and the two pair vectors of a step.
constexpr int kMaxTile = 12;

// Lane r of the result = (bf16(a[r]), bf16(b[r])): columns k and k + 1 as vdpbf16ps pairs.
[[gnu::always_inline]] inline __m512i pair_columns(__m512 a, __m512 b) {
  const __m512i halves = (__m512i)_mm512_cvtne2ps_pbh(b, a);  // a's 16 bf16, then b's
  const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7,
                                              22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(interleave, halves);
}

// The stored quants of weight 4v + j of each row (UnitQuants layout Q, from the unit's base).
template <class Q>
[[gnu::always_inline]] inline __m512i stored_quants(const uint8_t* base, int v, int j) {
  const __m512i mask = _mm512_set1_epi32(Q::kBits == 8 ? 0xFF : 0xF);
  if constexpr (Q::kBits == 8) {  // chunk v (0..7), byte j of each lane
    const __m512i chunk = _mm512_loadu_si512(base + Q::kQuantsAt + 64 * v);
    return _mm512_and_si512(_mm512_srli_epi32(chunk, 8 * j), mask);
  } else {
    const __m512i chunk = _mm512_loadu_si512(base + Q::kQuantsAt + 64 * (v % 4));
    __m512i q = _mm512_and_si512(_mm512_srl_epi32(chunk, _mm_cvtsi32_si128(8 * j + (v < 4 ? 0 : 4))), mask);
    if constexpr (Q::kExtraBits > 0) {
      constexpr int per_byte = 8 / Q::kExtraBits;
      const __m512i plane = _mm512_loadu_si512(base + Q::kHighBitsAt + 64 * (v / per_byte));
      const __m512i high = _mm512_and_si512(
          _mm512_srl_epi32(plane, _mm_cvtsi32_si128(8 * j + Q::kExtraBits * (v % per_byte))),
          _mm512_set1_epi32((1 << Q::kExtraBits) - 1));
      q = _mm512_or_si512(q, _mm512_slli_epi32(high, 4));
    }
    return q;
  }
}

// The 16 values a lookup or index tile's quants select, as int32 (unused by other types).
template <class L>
__m512i value_table(const uint8_t* tile) {
  if constexpr (L::kFamily == Family::Lookup) {
    alignas(64) int32_t values[16];
    for (int i = 0; i < 16; ++i) values[i] = L::kValues[i];
    return _mm512_load_si512(values);
  } else if constexpr (L::kFamily == Family::Index) {
    return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(tile + L::kValuesAt)));
  } else {
    (void)tile;
    return _mm512_setzero_si512();
  }
}

template <class L>
[[gnu::always_inline]] inline __m512i values_of(__m512i u, __m512i table) {
  if constexpr (L::kFamily == Family::Super)
    return L::kHasMin ? u : _mm512_sub_epi32(u, _mm512_set1_epi32(32));  // Q6_K: u - 32
  else if constexpr (L::kFamily == Family::Lookup || L::kFamily == Family::Index)
    return _mm512_permutexvar_epi32(u, table);
  else
    return u;
}

// Group g's weights as bf16 pairs: pairs[p] = columns 2p and 2p + 1 (p < cols / 2).
template <class L>
void decode_group(const PackedView& w, int64_t g, __m512i* pairs) {
  using Q = typename UnitQuants<L>::type;
  for_each_unit<L>(w, g, [&](const uint8_t* tile, int j, int64_t unit, const __m512* scale, const __m512* min) {
    const __m512i table = value_table<L>(tile);
    const uint8_t* base = unit_base<L>(tile, j);
    __m512i* out = pairs + unit * (kBlockSize / 2);
#pragma GCC unroll 16
    for (int k = 0; k < kBlockSize; k += 2) {  // weights k, k + 1 (half k / 16)
      const int h = k / 16;
      const __m512i qa = values_of<L>(stored_quants<Q>(base, k / 4, k % 4), table);
      const __m512i qb = values_of<L>(stored_quants<Q>(base, k / 4, k % 4 + 1), table);
      const __m512 a = _mm512_add_ps(_mm512_mul_ps(scale[h], _mm512_cvtepi32_ps(qa)), min[h]);
      const __m512 c = _mm512_add_ps(_mm512_mul_ps(scale[h], _mm512_cvtepi32_ps(qb)), min[h]);
      _mm512_store_si512(out + k / 2, pair_columns(a, c));
    }
  });
}

// A decoded pair vector's storage (std::vector keeps its alignment).
struct alignas(64) PairVector {
  uint8_t bytes[64];
};

uint32_t load_pair(const uint16_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// MT activation rows (x, row stride ldx) over one decoded group of `count` pairs (even).
template <int MT>
void rows_over_group(const __m512i* pairs, int64_t count, const uint16_t* x, int64_t ldx, float* out, int64_t ldo,
                     int64_t rows_here) {
  __m512 even[MT], odd[MT];
  for (int m = 0; m < MT; ++m) even[m] = odd[m] = _mm512_setzero_ps();
  for (int64_t p = 0; p < count; p += 2) {
    const __m512bh w0 = (__m512bh)_mm512_load_si512(pairs + p), w1 = (__m512bh)_mm512_load_si512(pairs + p + 1);
    for (int m = 0; m < MT; ++m) {
      even[m] = _mm512_dpbf16_ps(even[m], w0, (__m512bh)_mm512_set1_epi32(load_pair(x + m * ldx + 2 * p)));
      odd[m] = _mm512_dpbf16_ps(odd[m], w1, (__m512bh)_mm512_set1_epi32(load_pair(x + m * ldx + 2 * p + 2)));
    }
  }
  const __mmask16 valid = static_cast<__mmask16>((1u << rows_here) - 1u);
  for (int m = 0; m < MT; ++m) _mm512_mask_storeu_ps(out + m * ldo, valid, _mm512_add_ps(even[m], odd[m]));
}

#include "with_tile.inc"

void matmul_bf16(const PackedView& w, const Bf16View& x, float* out, int64_t ldo, int64_t g0, int64_t g1) {
  thread_local std::vector<PairVector> storage;  // one group's decoded weights, kept between calls
  const int64_t count = w.cols / 2;
  if (static_cast<int64_t>(storage.size()) < count) storage.resize(count);
  __m512i* pairs = reinterpret_cast<__m512i*>(storage.data());
  with_layout(w.type, [&]<class L>() {
    if constexpr (L::kFamily != Family::Dense) {  // matmul.cpp refuses F16 / BF16 weights
      for (int64_t g = g0; g < g1; ++g) {
        decode_group<L>(w, g, pairs);
        const int64_t rows_here = std::min(kGroupRows, w.rows - g * kGroupRows);
        for (int64_t m0 = 0; m0 < x.rows; m0 += kMaxTile)
          with_tile(x.rows - m0, [&]<int MT>() {
            rows_over_group<MT>(pairs, count, x.x + m0 * x.ldx, x.ldx, out + m0 * ldo + g * kGroupRows, ldo,
                                rows_here);
          });
      }
    }
  });
}

// x (rows, cols; cols a multiple of 32) rounded to bf16, nearest even, into out (row stride ldo).
void to_bf16(const float* x, int64_t rows, int64_t ldx, int64_t cols, uint16_t* out, int64_t ldo) {
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t k = 0; k < cols; k += 32) {
      const __m512bh both = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + m * ldx + k + 16), _mm512_loadu_ps(x + m * ldx + k));
      _mm512_storeu_si512(out + m * ldo + k, (__m512i)both);
    }
}

}  // namespace

Bf16Kernels bf16_kernels() { return {matmul_bf16, to_bf16}; }

}  // namespace kvgen::quant

#endif  // KVGEN_X86_KERNELS
