// AVX-512 VNNI kernels: one 512-bit register holds one float (or int32) per row of a
// 16-row tile, so a tile's 16 outputs need no horizontal sums. Int8 mode: vpdpbusd of the
// unsigned weight quants with broadcast int8 activations (4 per 32-bit lane), then
//   acc += (d_w * d_x) * dot + min_w * s_x      per activation row and block.
// Compiled with -mavx512f/bw/vl/vnni (CMakeLists.txt); everything here is file-local and
// runs only after dispatch.cpp has checked the CPU.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kvgen/quant/kernel_abi.h"

namespace kvgen::quant {

namespace {

constexpr int64_t kMaxTile = 8;  // activation rows per pass over the weights (registers)

__m512 load_halves(const uint8_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }

template <class L>
__m512 load_mins(const uint8_t* tile, __m512 d) {
  if constexpr (L::kHasMin)
    return load_halves(tile + L::kMinsAt);
  else
    return _mm512_mul_ps(d, _mm512_set1_ps(static_cast<float>(L::kOffset)));
}

__m512i load_chunk(const uint8_t* p) { return _mm512_loadu_si512(p); }

int32_t load_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

__mmask64 load_mask(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return _cvtu64_mask64(v);
}

// The two 64-byte quant vectors of 4/5-bit chunk c: weights 4c..4c+3 and 4c+16..4c+19
// of each row, as unsigned bytes.
template <class L>
void nibble_chunks(const uint8_t* tile, int c, __m512i& low, __m512i& high) {
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  const __m512i raw = load_chunk(tile + L::kQuantsAt + 64 * c);
  low = _mm512_and_si512(raw, nibble);
  high = _mm512_and_si512(_mm512_srli_epi16(raw, 4), nibble);
  if constexpr (L::kBits == 5) {
    const __m512i fifth = _mm512_set1_epi8(0x10);
    low = _mm512_mask_add_epi8(low, load_mask(tile + L::kMasksAt + 8 * c), low, fifth);
    high = _mm512_mask_add_epi8(high, load_mask(tile + L::kMasksAt + 8 * (c + 4)), high, fifth);
  }
}

// dot[m] (lane r) = sum_k u[r][k] * xq[m][k] over one tile.
template <class L, int MT>
void tile_dots(const uint8_t* tile, const int8_t* const* xq, __m512i* dot) {
  for (int m = 0; m < MT; ++m) dot[m] = _mm512_setzero_si512();
  if constexpr (L::kBits == 8) {
    for (int c = 0; c < 8; ++c) {
      const __m512i u = load_chunk(tile + L::kQuantsAt + 64 * c);
      for (int m = 0; m < MT; ++m) dot[m] = _mm512_dpbusd_epi32(dot[m], u, _mm512_set1_epi32(load_i32(xq[m] + 4 * c)));
    }
  } else {
    for (int c = 0; c < 4; ++c) {
      __m512i low, high;
      nibble_chunks<L>(tile, c, low, high);
      for (int m = 0; m < MT; ++m) {
        dot[m] = _mm512_dpbusd_epi32(dot[m], low, _mm512_set1_epi32(load_i32(xq[m] + 4 * c)));
        dot[m] = _mm512_dpbusd_epi32(dot[m], high, _mm512_set1_epi32(load_i32(xq[m] + 16 + 4 * c)));
      }
    }
  }
}

// Writes the valid rows of one group for MT activation rows.
template <int MT>
void store_group(const __m512* acc, int64_t rows_here, float* out, int64_t ldo) {
  const __mmask16 valid = static_cast<__mmask16>((1u << rows_here) - 1u);
  for (int m = 0; m < MT; ++m) _mm512_mask_storeu_ps(out + m * ldo, valid, acc[m]);
}

int64_t rows_in_group(const PackedView& w, int64_t g) {
  const int64_t left = w.rows - g * kGroupRows;
  return left < kGroupRows ? left : kGroupRows;
}

// Activation rows [m0, m0 + MT) x groups [g0, g1).
template <class L, int MT>
void int8_tile_rows(const PackedView& w, const Int8View& x, int64_t m0, float* out, int64_t ldo, int64_t g0,
                    int64_t g1) {
  const int64_t blocks = w.blocks;
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* tile = w.data + g * blocks * L::kTileBytes;
    __m512 acc[MT];
    for (int m = 0; m < MT; ++m) acc[m] = _mm512_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b, tile += L::kTileBytes) {
      const int8_t* xq[MT];
      for (int m = 0; m < MT; ++m) xq[m] = x.q + (m0 + m) * x.cols + b * kBlockSize;
      __m512i dot[MT];
      tile_dots<L, MT>(tile, xq, dot);
      const __m512 d = load_halves(tile + L::kScalesAt);
      const __m512 mins = load_mins<L>(tile, d);
      for (int m = 0; m < MT; ++m) {
        const int64_t xb = (m0 + m) * blocks + b;
        acc[m] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(x.d[xb])), _mm512_cvtepi32_ps(dot[m]), acc[m]);
        acc[m] = _mm512_fmadd_ps(mins, _mm512_set1_ps(x.s[xb]), acc[m]);
      }
    }
    store_group<MT>(acc, rows_in_group(w, g), out + m0 * ldo + g * kGroupRows, ldo);
  }
}

// acc[m] += W[:, k] * x[m][k] for the 4 weights k = k0..k0+3 held in each lane of u.
template <int MT>
void fma_lanes(__m512i u, __m512 d, __m512 mins, const float* const* xb, int k0, __m512* acc) {
  const __m512i byte = _mm512_set1_epi32(0xFF);
  for (int j = 0; j < 4; ++j, u = _mm512_srli_epi32(u, 8)) {
    const __m512 wk = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(_mm512_and_si512(u, byte)), mins);
    for (int m = 0; m < MT; ++m) acc[m] = _mm512_fmadd_ps(wk, _mm512_set1_ps(xb[m][k0 + j]), acc[m]);
  }
}

template <class L, int MT>
void float_tile_rows(const PackedView& w, const float* x, int64_t ldx, int64_t m0, float* out, int64_t ldo,
                     int64_t g0, int64_t g1) {
  const int64_t blocks = w.blocks;
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* tile = w.data + g * blocks * L::kTileBytes;
    __m512 acc[MT];
    for (int m = 0; m < MT; ++m) acc[m] = _mm512_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b, tile += L::kTileBytes) {
      const float* xb[MT];
      for (int m = 0; m < MT; ++m) xb[m] = x + (m0 + m) * ldx + b * kBlockSize;
      const __m512 d = load_halves(tile + L::kScalesAt);
      const __m512 mins = load_mins<L>(tile, d);
      if constexpr (L::kBits == 8) {
        for (int c = 0; c < 8; ++c) fma_lanes<MT>(load_chunk(tile + L::kQuantsAt + 64 * c), d, mins, xb, 4 * c, acc);
      } else {
        for (int c = 0; c < 4; ++c) {
          __m512i low, high;
          nibble_chunks<L>(tile, c, low, high);
          fma_lanes<MT>(low, d, mins, xb, 4 * c, acc);
          fma_lanes<MT>(high, d, mins, xb, 16 + 4 * c, acc);
        }
      }
    }
    store_group<MT>(acc, rows_in_group(w, g), out + m0 * ldo + g * kGroupRows, ldo);
  }
}

#include "tile_driver.inc"  // with_tile, matmul_int8, matmul_float

}  // namespace

KernelTable avx512_kernels() { return {matmul_int8, matmul_float}; }

}  // namespace kvgen::quant
