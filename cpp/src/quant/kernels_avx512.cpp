// AVX-512 VNNI kernels: one 512-bit register holds one float (or int32) per row of a
// 16-row tile, so a tile's 16 outputs need no horizontal sums. Int8 mode: vpdpbusd of the
// unsigned weight quants with broadcast int8 activations (4 per 32-bit lane), then
//   acc += (d_w * d_x) * dot + min_w * s_x      per activation row and block.
// Compiled with -mavx512f/bw/vl/vnni (CMakeLists.txt); everything here is file-local and
// runs only after dispatch.cpp has checked the CPU. The per-chunk helpers are always
// inlined: GCC would otherwise call them out of line, passing vectors through memory.
#include "kvgen/quant/kernel_abi.h"
#if KVGEN_X86_KERNELS
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kvgen/quant/fp16.h"
#include "kvgen/quant/kernel_abi.h"

namespace kvgen::quant {

namespace {

#include "unit_scales.inc"         // units_per_tile, unit_base, split_mins
#include "unit_scales_avx512.inc"  // simd_unit_scales
#include "two_level_rows.inc"      // put_two_level_row, combined_half_sum
#include "vectors_avx512.inc"      // unpack_tile, stream_ahead, two_level_sum, store_group, ...

// Activation rows per pass over the weights: a tile's 8 unpacked quant vectors and one
// accumulator per row stay in the 32 registers (8 beams or batch rows in two levels).
constexpr int64_t kMaxTile = 16;
// Per layout: K-quant super-blocks take 16 rows in one pass (measured faster than two
// passes of 8, most where the weights come from memory); the 32-weight block types keep
// two passes of 8 (16 rows in one were measured 2-16% slower on SmolLM2's Q4_1 and Q8_0).
template <class L>
constexpr int kTileRows = L::kFamily == Family::Super ? 16 : 8;
// Up to this many rows, a tile is read chunk by chunk, each chunk used for every row (the
// rows' int32 dots and accumulators fill the registers); more rows unpack the whole tile
// into registers once and finish one row at a time.
constexpr int kChunkedRows = 8;

// Lane r = sum over the vectors v in [v0, v1) of u[r][4v..4v+3] * xq[4v..4v+3], on top of
// `start`: two interleaved chains, so that one row's dot does not wait on the VNNI latency.
template <int V0, int V1>
[[gnu::always_inline]] inline __m512i row_dot(const __m512i* u, const int8_t* xq, __m512i start) {
  __m512i a = start, b = _mm512_setzero_si512();
  for (int v = V0; v < V1; v += 2) {
    a = _mm512_dpbusd_epi32(a, u[v], _mm512_set1_epi32(load_i32(xq + 4 * v)));
    if (v + 1 < V1) b = _mm512_dpbusd_epi32(b, u[v + 1], _mm512_set1_epi32(load_i32(xq + 4 * (v + 1))));
  }
  return _mm512_add_epi32(a, b);
}

// dot[m] (lane r) = sum_k u[r][k] * xq[m][k] over one tile, chunk by chunk (for up to 8
// rows: the rows' dots and accumulators fit the registers).
template <class L, int MT>
[[gnu::always_inline]] inline void tile_dots(const uint8_t* tile, const int8_t* const* xq, __m512i* dot) {
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

// fold(m, dot) for each activation row m of [m0, m0 + MT), dot (lane r) being the row's
// block b against the tile's rows: chunk by chunk for up to kChunkedRows rows, else with the
// tile unpacked once for all of them.
template <class L, int MT, class Fold>
[[gnu::always_inline]] inline void fold_row_dots(const uint8_t* tile, const Int8View& x, int64_t m0, int64_t b,
                                                 Fold&& fold) {
  if constexpr (MT <= kChunkedRows) {
    const int8_t* xq[MT];
    for (int m = 0; m < MT; ++m) xq[m] = x.q + (m0 + m) * x.cols + b * kBlockSize;
    __m512i dot[MT];
    tile_dots<L, MT>(tile, xq, dot);
    for (int m = 0; m < MT; ++m) fold(m, dot[m]);
  } else {
    __m512i u[8];
    unpack_tile<L>(tile, u);
    for (int m = 0; m < MT; ++m)
      fold(m, row_dot<0, 8>(u, x.q + (m0 + m) * x.cols + b * kBlockSize, _mm512_setzero_si512()));
  }
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
      stream_ahead<L>(tile);
      const __m512 d = load_halves(tile + L::kScalesAt);
      const __m512 mins = load_mins<L>(tile, d);
      const auto fold = [&](int m, __m512i dot) {
        const int64_t xb = (m0 + m) * blocks + b;
        acc[m] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(x.d[xb])), _mm512_cvtepi32_ps(dot), acc[m]);
        acc[m] = _mm512_fmadd_ps(mins, _mm512_set1_ps(x.s[xb]), acc[m]);
      };
      fold_row_dots<L, MT>(tile, x, m0, b, fold);
    }
    store_group<MT>(acc, rows_in_group(w, g), out + m0 * ldo + g * kGroupRows, ldo);
  }
}

// Two-level rows [m0, m0 + MT) (level one at row m of x, the residual at row M + m) x
// groups [g0, g1): acc += d_w (d1 dot1 + d2 dot2) + min_w (s1 + s2), one fold per row.
template <class L, int MT>
void int8x2_tile_rows(const PackedView& w, const Int8View& x, int64_t M, int64_t m0, float* out, int64_t ldo,
                      int64_t g0, int64_t g1) {
  const int64_t blocks = w.blocks;
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* tile = w.data + g * blocks * L::kTileBytes;
    __m512 acc[MT];
    for (int m = 0; m < MT; ++m) acc[m] = _mm512_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b, tile += L::kTileBytes) {
      stream_ahead<L>(tile);
      const __m512 d = load_halves(tile + L::kScalesAt);
      const __m512 mins = load_mins<L>(tile, d);
      __m512i u[8];
      unpack_tile<L>(tile, u);
      for (int m = 0; m < MT; ++m) {
        const int64_t first = (m0 + m) * blocks + b, second = (M + m0 + m) * blocks + b;
        const __m512i dot1 = row_dot<0, 8>(u, x.q + first * kBlockSize, _mm512_setzero_si512());
        const __m512i dot2 = row_dot<0, 8>(u, x.q + second * kBlockSize, _mm512_setzero_si512());
        acc[m] = _mm512_fmadd_ps(d, two_level_sum(dot1, dot2, x.d[second]), acc[m]);
        acc[m] = _mm512_fmadd_ps(mins, _mm512_set1_ps(x.s[first] + x.s[second]), acc[m]);
      }
    }
    store_group<MT>(acc, rows_in_group(w, g), out + m0 * ldo + g * kGroupRows, ldo);
  }
}

// Both levels' dots of MT rows against one tile (or K-quant sub-tile), chunk by chunk:
// dot1[m], dot2[m] (lane r) = sum_k u[r][k] * xb[m][k], ... xb[kTwoLevelPassRows + m][k], xb
// a TwoLevelPassBlock's rows (MT <= kTwoLevelPassRows of them used). Each chunk of quants
// meets every row while in a register, and the 2 MT dot chains are independent, so VNNI
// issues back to back (row_dot over an unpacked tile leaves one row's 4 short chains in
// flight, and waits on their latency). The loops are unrolled and xb is one block of one
// array: the dots stay in registers and every broadcast reads a fixed offset (one pointer per
// row would not fit the registers).
template <class L, int MT>
[[gnu::always_inline]] inline void two_level_dots(const uint8_t* tile, const int8_t (*xb)[kBlockSize],
                                                  __m512i* dot1, __m512i* dot2) {
#pragma GCC unroll 16
  for (int m = 0; m < MT; ++m) dot1[m] = dot2[m] = _mm512_setzero_si512();
  if constexpr (L::kBits == 8) {
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
      const __m512i u = load_chunk(tile + L::kQuantsAt + 64 * c);
#pragma GCC unroll 16
      for (int m = 0; m < MT; ++m) {
        dot1[m] = _mm512_dpbusd_epi32(dot1[m], u, _mm512_set1_epi32(load_i32(xb[m] + 4 * c)));
        dot2[m] = _mm512_dpbusd_epi32(dot2[m], u, _mm512_set1_epi32(load_i32(xb[kTwoLevelPassRows + m] + 4 * c)));
      }
    }
  } else {
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      __m512i low, high;
      nibble_chunks<L>(tile, c, low, high);
#pragma GCC unroll 16
      for (int m = 0; m < MT; ++m) {
        dot1[m] = _mm512_dpbusd_epi32(dot1[m], low, _mm512_set1_epi32(load_i32(xb[m] + 4 * c)));
        dot2[m] = _mm512_dpbusd_epi32(dot2[m], low, _mm512_set1_epi32(load_i32(xb[kTwoLevelPassRows + m] + 4 * c)));
      }
#pragma GCC unroll 16
      for (int m = 0; m < MT; ++m) {
        dot1[m] = _mm512_dpbusd_epi32(dot1[m], high, _mm512_set1_epi32(load_i32(xb[m] + 16 + 4 * c)));
        dot2[m] =
            _mm512_dpbusd_epi32(dot2[m], high, _mm512_set1_epi32(load_i32(xb[kTwoLevelPassRows + m] + 16 + 4 * c)));
      }
    }
  }
}

// Every block of rows [m0, m0 + MT) of both levels (level one at row m of x, the residual at
// row M + m) in kernel_abi.h's TwoLevelPassBlock layout: the folds read each row's scales and
// sum at fixed offsets from one pointer (a broadcast operand of the multiply, no scalar add
// and broadcast: those took a vector pipe beside the VNNI products on Zen 5). The pass the
// quantizer wrote (x.passes) is read where it is: gathered by every work item of a product,
// the passes took 8% of a Qwen3.5-2B-shaped prefill and 6.5% of SmolLM2's 4-beam decode.
// Other quantizers' rows are gathered once per call for all the call's groups, not per tile
// (the tile's broadcasts waited on the copy's stores, and every group copied again: 4-16 rows
// in cache 1.25-1.45x faster), into the calling thread's buffer (it only grows).
template <int MT>
const TwoLevelPassBlock* gather_two_level_rows(const Int8View& x, int64_t M, int64_t m0) {
  static_assert(MT <= kTwoLevelPassRows);
  const int64_t blocks = x.cols / kBlockSize;
  if (x.passes) return x.passes + m0 / kTwoLevelPassRows * blocks;  // m0: a multiple of the pass rows
  thread_local std::vector<TwoLevelPassBlock> gathered;
  if (static_cast<int64_t>(gathered.size()) < blocks) gathered.resize(blocks);
  TwoLevelPassBlock* all = gathered.data();
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t first = m0 * blocks + b, second = (M + m0) * blocks + b;
#pragma GCC unroll 16
    for (int m = 0; m < MT; ++m)
      put_two_level_row(all[b], m, x.q, x.d, x.s, x.half_sums, first + m * blocks, second + m * blocks);
  }
  return all;
}

// Both levels' dots of MT rows against one tile (or K-quant sub-tile) q, folded as the one-row
// kernels fold them: acc[m] += scale (d1 dot1 + d2 dot2), then += offset (s1 + s2), offset being
// the block's min term of each output row.
template <class Q, int MT>
[[gnu::always_inline]] inline void add_two_level_block(const uint8_t* q, const TwoLevelPassBlock& xb, __m512 scale,
                                                       __m512 offset, __m512* acc) {
  __m512i dot1[MT], dot2[MT];
  two_level_dots<Q, MT>(q, xb.rows, dot1, dot2);
#pragma GCC unroll 16
  for (int m = 0; m < MT; ++m) {
    acc[m] = _mm512_fmadd_ps(scale, two_level_sum(dot1[m], dot2[m], xb.d2[m]), acc[m]);
    acc[m] = _mm512_fmadd_ps(offset, _mm512_set1_ps(xb.s[m]), acc[m]);
  }
}

// int8x2_tile_rows for 2 to kTwoLevelTileRows rows, with two_level_dots: the dots are exact
// int32 sums and the fold is int8x2_tile_rows', so each row's output is bit for bit the
// one-row kernel's.
template <class L, int MT>
void int8x2_tile_rows_chunked(const PackedView& w, const Int8View& x, int64_t M, int64_t m0, float* out,
                              int64_t ldo, int64_t g0, int64_t g1) {
  static_assert(MT > 1);
  const int64_t blocks = w.blocks;
  const TwoLevelPassBlock* all = gather_two_level_rows<MT>(x, M, m0);
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* tile = w.data + g * blocks * L::kTileBytes;
    __m512 acc[MT];
#pragma GCC unroll 16
    for (int m = 0; m < MT; ++m) acc[m] = _mm512_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b, tile += L::kTileBytes) {
      stream_ahead<L>(tile);
      const __m512 d = load_halves(tile + L::kScalesAt);
      add_two_level_block<L, MT>(tile, all[b], d, load_mins<L>(tile, d), acc);
    }
    store_group<MT>(acc, rows_in_group(w, g), out + m0 * ldo + g * kGroupRows, ldo);
  }
}

// acc[m] += W[:, k] * x[m][k] for the 4 weights k = k0..k0+3 held in each lane of u.
template <int MT>
[[gnu::always_inline]] inline void fma_lanes(__m512i u, __m512 d, __m512 mins, const float* const* xb, int k0,
                                             __m512* acc) {
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
      stream_ahead<L>(tile);
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

// --- K-quants: per 256-weight tile, 8 sub-blocks of 32 weights, each one of the
// activations' 32-blocks; a sub-block's quants are in the nibble + high-bit plane formats
// of the 32-weight tiles.

// Q6_K: dot_a[m], dot_b[m] (lane r) = sum_k (u[r][k] - 32) * xq[m][k] over the sub-tile's
// first and second 16 weights (each has its own scale). The -32 offset starts each sum
// as -32 * (sum of xq over the half), from the activations' half sums.
template <class S, int MT>
[[gnu::always_inline]] inline void split_dots(const uint8_t* sub, const int8_t* const* xq,
                                              const int32_t* const* half_sums, __m512i* dot_a, __m512i* dot_b) {
  for (int m = 0; m < MT; ++m) {
    dot_a[m] = _mm512_set1_epi32(-32 * half_sums[m][0]);
    dot_b[m] = _mm512_set1_epi32(-32 * half_sums[m][1]);
  }
  for (int c = 0; c < 4; ++c) {
    __m512i low, high;
    nibble_chunks<S>(sub, c, low, high);
    for (int m = 0; m < MT; ++m) {
      dot_a[m] = _mm512_dpbusd_epi32(dot_a[m], low, _mm512_set1_epi32(load_i32(xq[m] + 4 * c)));
      dot_b[m] = _mm512_dpbusd_epi32(dot_b[m], high, _mm512_set1_epi32(load_i32(xq[m] + 16 + 4 * c)));
    }
  }
}

// Sub-block j of a K-quant tile (d = its rows' super-block scales) against the
// activations' block b of rows [m0, m0 + MT):
//   Q4_K/Q5_K: acc += (d sc_j d_x) dot - (dmin m_j) s_x
//   Q6_K:      acc += d_x ((d sc_2j) dot_a + (d sc_2j+1) dot_b)
template <class L, int MT>
[[gnu::always_inline]] inline void add_sub_block(const uint8_t* tile, int j, __m512 d, __m512 dmin,
                                                 const Int8View& x, int64_t m0, int64_t b, __m512* acc) {
  using S = typename L::Sub;
  const int64_t xblocks = x.cols / kBlockSize;
  const uint8_t* sub = tile + L::kSubTilesAt + j * S::kTileBytes;
  if constexpr (L::kHasMin) {
    const __m512 scale = scaled_bytes<false>(tile + L::kScalesAt + kGroupRows * j, d);
    const __m512 min = scaled_bytes<false>(tile + L::kMinsAt + kGroupRows * j, dmin);
    const auto fold = [&](int m, __m512i dot) {
      const int64_t xb = (m0 + m) * xblocks + b;
      acc[m] = _mm512_fmadd_ps(_mm512_mul_ps(scale, _mm512_set1_ps(x.d[xb])), _mm512_cvtepi32_ps(dot), acc[m]);
      acc[m] = _mm512_fnmadd_ps(min, _mm512_set1_ps(x.s[xb]), acc[m]);
    };
    fold_row_dots<S, MT>(sub, x, m0, b, fold);
  } else if constexpr (MT <= kChunkedRows) {
    const __m512 scale_a = scaled_bytes<true>(tile + L::kScalesAt + kGroupRows * (2 * j), d);
    const __m512 scale_b = scaled_bytes<true>(tile + L::kScalesAt + kGroupRows * (2 * j + 1), d);
    const int8_t* xq[MT];
    const int32_t* half_sums[MT];
    for (int m = 0; m < MT; ++m) {
      xq[m] = x.q + (m0 + m) * x.cols + b * kBlockSize;
      half_sums[m] = x.half_sums + 2 * ((m0 + m) * xblocks + b);
    }
    __m512i dot_a[MT], dot_b[MT];
    split_dots<S, MT>(sub, xq, half_sums, dot_a, dot_b);
    for (int m = 0; m < MT; ++m) {
      const __m512 sum = _mm512_fmadd_ps(scale_b, _mm512_cvtepi32_ps(dot_b[m]),
                                         _mm512_mul_ps(scale_a, _mm512_cvtepi32_ps(dot_a[m])));
      acc[m] = _mm512_fmadd_ps(_mm512_set1_ps(x.d[(m0 + m) * xblocks + b]), sum, acc[m]);
    }
  } else {
    __m512i u[8];
    unpack_tile<S>(sub, u);
    // Q6_K: dot_a, dot_b = sum (u - 32) xq over the sub-block's first and second 16 weights
    // (each has its own scale); the -32 offset starts each as -32 * (the half's sum of xq).
    const __m512 scale_a = scaled_bytes<true>(tile + L::kScalesAt + kGroupRows * (2 * j), d);
    const __m512 scale_b = scaled_bytes<true>(tile + L::kScalesAt + kGroupRows * (2 * j + 1), d);
    for (int m = 0; m < MT; ++m) {
      const int64_t xb = (m0 + m) * xblocks + b;
      const int8_t* xq = x.q + (m0 + m) * x.cols + b * kBlockSize;
      const int32_t* half_sums = x.half_sums + 2 * xb;
      const __m512i dot_a = row_dot<0, 4>(u, xq, _mm512_set1_epi32(-32 * half_sums[0]));
      const __m512i dot_b = row_dot<4, 8>(u, xq, _mm512_set1_epi32(-32 * half_sums[1]));
      const __m512 sum = _mm512_fmadd_ps(scale_b, _mm512_cvtepi32_ps(dot_b),
                                         _mm512_mul_ps(scale_a, _mm512_cvtepi32_ps(dot_a)));
      acc[m] = _mm512_fmadd_ps(_mm512_set1_ps(x.d[xb]), sum, acc[m]);
    }
  }
}

// Activation rows [m0, m0 + MT) x groups [g0, g1) of a K-quant matrix.
template <class L, int MT>
void int8_super_rows(const PackedView& w, const Int8View& x, int64_t m0, float* out, int64_t ldo, int64_t g0,
                     int64_t g1) {
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* tile = w.data + g * w.blocks * L::kTileBytes;
    __m512 acc[MT];
    for (int m = 0; m < MT; ++m) acc[m] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < w.blocks; ++sb, tile += L::kTileBytes) {
      const __m512 d = load_halves(tile + L::kDAt);
      const __m512 dmin = L::kHasMin ? load_halves(tile + L::kDminAt) : d;
      for (int j = 0; j < L::kSubBlocks; ++j) {
        stream_ahead<L, L::kSubBlocks>(tile, j);
        add_sub_block<L, MT>(tile, j, d, dmin, x, m0, sb * L::kSubBlocks + j, acc);
      }
    }
    store_group<MT>(acc, rows_in_group(w, g), out + m0 * ldo + g * kGroupRows, ldo);
  }
}

// Q6_K, two levels: one activation row's sub-block (its quants q1, q2 of the two levels)
// against the unpacked sub-tile u. Each half's levels' dots are added as integers, less 32
// times the half's quant sums combined the same way (hsum[h] = 2^8 hs1 + hs2: the stored
// quant is w + 32); the halves' scales are applied, and d2 to both:
// acc + d2 (scale_a half_a + scale_b half_b).
[[gnu::always_inline]] inline __m512 q6k_two_level(const __m512i* u, const int8_t* q1, const int8_t* q2,
                                                   const int32_t* hsum, float d2, __m512 scale_a, __m512 scale_b,
                                                   __m512 acc) {
  const __m512i zero = _mm512_setzero_si512();
  const __m512i offset_a = _mm512_slli_epi32(_mm512_set1_epi32(hsum[0]), 5);
  const __m512i offset_b = _mm512_slli_epi32(_mm512_set1_epi32(hsum[1]), 5);
  const __m512 half_a = _mm512_cvtepi32_ps(
      _mm512_sub_epi32(two_level_int(row_dot<0, 4>(u, q1, zero), row_dot<0, 4>(u, q2, zero)), offset_a));
  const __m512 half_b = _mm512_cvtepi32_ps(
      _mm512_sub_epi32(two_level_int(row_dot<4, 8>(u, q1, zero), row_dot<4, 8>(u, q2, zero)), offset_b));
  return _mm512_fmadd_ps(_mm512_set1_ps(d2), _mm512_fmadd_ps(scale_b, half_b, _mm512_mul_ps(scale_a, half_a)), acc);
}

// Two-level rows [m0, m0 + Parts R) of a K-quant matrix, from Parts passes of R rows each
// (parts[p]: the TwoLevelPassBlocks of rows m0 + p R ..., a pass the quantizer wrote or
// gather_two_level_rows'; R < kTwoLevelPassRows only for a last pass), each sub-tile unpacked
// once for all the rows: Q6_K's passes (its two scales per sub-block need four dot chains a
// row, and a chunked 8-row pass spilled them: 18% slower), and the odd row of Q4_K / Q5_K
// after their chunked passes. The rows' quants, scales and combined half sums sit at fixed
// offsets of one block (no index arithmetic per row, Q6_K's offsets broadcast from memory).
// Each row's output is int8x2_super_row1's bit for bit (the same integers, the same fold).
template <class L, int R, int Parts>
void int8x2_super_rows_unpacked(const PackedView& w, const TwoLevelPassBlock* const* parts, int64_t m0, float* out,
                                int64_t ldo, int64_t g0, int64_t g1) {
  using S = typename L::Sub;
  constexpr int MT = R * Parts;
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* tile = w.data + g * w.blocks * L::kTileBytes;
    __m512 acc[MT];
    for (int m = 0; m < MT; ++m) acc[m] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < w.blocks; ++sb, tile += L::kTileBytes) {
      const __m512 d = load_halves(tile + L::kDAt);
      const __m512 dmin = L::kHasMin ? load_halves(tile + L::kDminAt) : d;
      for (int j = 0; j < L::kSubBlocks; ++j) {
        stream_ahead<L, L::kSubBlocks>(tile, j);
        const int64_t b = sb * L::kSubBlocks + j;
        __m512i u[8];
        unpack_tile<S>(tile + L::kSubTilesAt + j * S::kTileBytes, u);
        if constexpr (L::kHasMin) {
          const __m512 scale = scaled_bytes<false>(tile + L::kScalesAt + kGroupRows * j, d);
          const __m512 min = scaled_bytes<false>(tile + L::kMinsAt + kGroupRows * j, dmin);
          for (int p = 0; p < Parts; ++p) {
            const TwoLevelPassBlock& xb = parts[p][b];
            for (int r = 0; r < R; ++r) {
              const __m512i dot1 = row_dot<0, 8>(u, xb.rows[r], _mm512_setzero_si512());
              const __m512i dot2 = row_dot<0, 8>(u, xb.rows[kTwoLevelPassRows + r], _mm512_setzero_si512());
              __m512& a = acc[p * R + r];
              a = _mm512_fmadd_ps(scale, two_level_sum(dot1, dot2, xb.d2[r]), a);
              a = _mm512_fnmadd_ps(min, _mm512_set1_ps(xb.s[r]), a);
            }
          }
        } else {
          const __m512 scale_a = scaled_bytes<true>(tile + L::kScalesAt + kGroupRows * (2 * j), d);
          const __m512 scale_b = scaled_bytes<true>(tile + L::kScalesAt + kGroupRows * (2 * j + 1), d);
          for (int p = 0; p < Parts; ++p) {
            const TwoLevelPassBlock& xb = parts[p][b];
            for (int r = 0; r < R; ++r)
              acc[p * R + r] = q6k_two_level(u, xb.rows[r], xb.rows[kTwoLevelPassRows + r], xb.half_sums[r],
                                             xb.d2[r], scale_a, scale_b, acc[p * R + r]);
          }
        }
      }
    }
    store_group<MT>(acc, rows_in_group(w, g), out + m0 * ldo + g * kGroupRows, ldo);
  }
}

// Two-level rows of Q4_K / Q5_K for 2 to kTwoLevelTileRows rows, chunk by chunk
// (two_level_dots, as int8x2_tile_rows_chunked): each sub-tile's quants meet every row while in
// a register and the rows' 2 MT dot chains are independent. The dots are exact int32 sums and
// each row's fold is int8x2_super_row1's, so every row's output is bit for bit the one-row
// kernel's. Q6_K keeps int8x2_super_rows_unpacked: its two scales per sub-block need four dot
// chains a row, and a chunked 8-row pass spilled them (measured 18% slower; equal at 2 and 4 rows).
template <class L, int MT>
void int8x2_super_rows_chunked(const PackedView& w, const Int8View& x, int64_t M, int64_t m0, float* out,
                               int64_t ldo, int64_t g0, int64_t g1) {
  static_assert(MT > 1 && L::kHasMin);
  using S = typename L::Sub;
  const TwoLevelPassBlock* all = gather_two_level_rows<MT>(x, M, m0);
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* tile = w.data + g * w.blocks * L::kTileBytes;
    __m512 acc[MT];
#pragma GCC unroll 16
    for (int m = 0; m < MT; ++m) acc[m] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < w.blocks; ++sb, tile += L::kTileBytes) {
      const __m512 d = load_halves(tile + L::kDAt);
      const __m512 dmin = load_halves(tile + L::kDminAt);
      for (int j = 0; j < L::kSubBlocks; ++j) {
        stream_ahead<L, L::kSubBlocks>(tile, j);
        const int64_t b = sb * L::kSubBlocks + j;
        const __m512 scale = scaled_bytes<false>(tile + L::kScalesAt + kGroupRows * j, d);
        const __m512 min = scaled_bytes<false>(tile + L::kMinsAt + kGroupRows * j, dmin);
        // fma(-min, s, acc) rounds c - min s once, as int8x2_super_row1's fnmadd(min, s, acc)
        add_two_level_block<S, MT>(tile + L::kSubTilesAt + j * S::kTileBytes, all[b], scale, negated(min), acc);
      }
    }
    store_group<MT>(acc, rows_in_group(w, g), out + m0 * ldo + g * kGroupRows, ldo);
  }
}

// --- One activation row in two levels (batch-1 decode): its own kernels, streams over the
// weights (stream_ahead as every kernel).

// int8x2_tile_rows for M = 1.
template <class L>
void int8x2_tile_row1(const PackedView& w, const Int8View& x, float* out, int64_t g0, int64_t g1) {
  const int64_t blocks = w.blocks;
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* tile = w.data + g * blocks * L::kTileBytes;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b, tile += L::kTileBytes) {
      stream_ahead<L>(tile);
      const __m512 d = load_halves(tile + L::kScalesAt);
      const __m512 mins = load_mins<L>(tile, d);
      __m512i u[8];
      unpack_tile<L>(tile, u);
      const int64_t first = b, second = blocks + b;
      const __m512i dot1 = row_dot<0, 8>(u, x.q + first * kBlockSize, _mm512_setzero_si512());
      const __m512i dot2 = row_dot<0, 8>(u, x.q + second * kBlockSize, _mm512_setzero_si512());
      acc = _mm512_fmadd_ps(d, two_level_sum(dot1, dot2, x.d[second]), acc);
      acc = _mm512_fmadd_ps(mins, _mm512_set1_ps(x.s[first] + x.s[second]), acc);
    }
    store_group<1>(&acc, rows_in_group(w, g), out + g * kGroupRows, 0);
  }
}

// Two-level K-quant products for M = 1 (batch-1 decode).
template <class L>
void int8x2_super_row1(const PackedView& w, const Int8View& x, float* out, int64_t g0, int64_t g1) {
  using S = typename L::Sub;
  const int64_t xblocks = x.cols / kBlockSize;
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* tile = w.data + g * w.blocks * L::kTileBytes;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < w.blocks; ++sb, tile += L::kTileBytes) {
      const __m512 d = load_halves(tile + L::kDAt);
      const __m512 dmin = L::kHasMin ? load_halves(tile + L::kDminAt) : d;
      for (int j = 0; j < L::kSubBlocks; ++j) {
        stream_ahead<L, L::kSubBlocks>(tile, j);
        const int64_t first = sb * L::kSubBlocks + j, second = xblocks + first;
        __m512i u[8];
        unpack_tile<S>(tile + L::kSubTilesAt + j * S::kTileBytes, u);
        const int8_t* q1 = x.q + first * kBlockSize;
        const int8_t* q2 = x.q + second * kBlockSize;
        if constexpr (L::kHasMin) {
          const __m512 scale = scaled_bytes<false>(tile + L::kScalesAt + kGroupRows * j, d);
          const __m512 min = scaled_bytes<false>(tile + L::kMinsAt + kGroupRows * j, dmin);
          const __m512i dot1 = row_dot<0, 8>(u, q1, _mm512_setzero_si512());
          const __m512i dot2 = row_dot<0, 8>(u, q2, _mm512_setzero_si512());
          acc = _mm512_fmadd_ps(scale, two_level_sum(dot1, dot2, x.d[second]), acc);
          acc = _mm512_fnmadd_ps(min, _mm512_set1_ps(x.s[first] + x.s[second]), acc);
        } else {
          const __m512 scale_a = scaled_bytes<true>(tile + L::kScalesAt + kGroupRows * (2 * j), d);
          const __m512 scale_b = scaled_bytes<true>(tile + L::kScalesAt + kGroupRows * (2 * j + 1), d);
          const int32_t hsum[2] = {combined_half_sum(x.half_sums, first, second, 0),
                                   combined_half_sum(x.half_sums, first, second, 1)};
          acc = q6k_two_level(u, q1, q2, hsum, x.d[second], scale_a, scale_b, acc);
        }
      }
    }
    store_group<1>(&acc, rows_in_group(w, g), out + g * kGroupRows, 0);
  }
}

// Float activations on a K-quant matrix. Each weight is fma(scale, u, -min) rounded once,
// which is gguf's value: scale * u and min are exact (Q6_K: min = 32 scale).
template <class L, int MT>
void float_super_rows(const PackedView& w, const float* x, int64_t ldx, int64_t m0, float* out, int64_t ldo,
                      int64_t g0, int64_t g1) {
  using S = typename L::Sub;
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* tile = w.data + g * w.blocks * L::kTileBytes;
    __m512 acc[MT];
    for (int m = 0; m < MT; ++m) acc[m] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < w.blocks; ++sb, tile += L::kTileBytes) {
      const __m512 d = load_halves(tile + L::kDAt);
      for (int j = 0; j < L::kSubBlocks; ++j) {
        stream_ahead<L, L::kSubBlocks>(tile, j);
        __m512 scale_a, scale_b, mins_a, mins_b;  // for the low (first 16) and high weights
        if constexpr (L::kHasMin) {
          const __m512 neg_dmin = _mm512_sub_ps(_mm512_setzero_ps(), load_halves(tile + L::kDminAt));
          scale_a = scale_b = scaled_bytes<false>(tile + L::kScalesAt + kGroupRows * j, d);
          mins_a = mins_b = scaled_bytes<false>(tile + L::kMinsAt + kGroupRows * j, neg_dmin);
        } else {
          scale_a = scaled_bytes<true>(tile + L::kScalesAt + kGroupRows * (2 * j), d);
          scale_b = scaled_bytes<true>(tile + L::kScalesAt + kGroupRows * (2 * j + 1), d);
          mins_a = _mm512_mul_ps(scale_a, _mm512_set1_ps(-32.0f));
          mins_b = _mm512_mul_ps(scale_b, _mm512_set1_ps(-32.0f));
        }
        const uint8_t* sub = tile + L::kSubTilesAt + j * S::kTileBytes;
        const float* xb[MT];
        for (int m = 0; m < MT; ++m) xb[m] = x + (m0 + m) * ldx + (sb * L::kSubBlocks + j) * kBlockSize;
        for (int c = 0; c < 4; ++c) {
          __m512i low, high;
          nibble_chunks<S>(sub, c, low, high);
          fma_lanes<MT>(low, scale_a, mins_a, xb, 4 * c, acc);
          fma_lanes<MT>(high, scale_b, mins_b, xb, 16 + 4 * c, acc);
        }
      }
    }
    store_group<MT>(acc, rows_in_group(w, g), out + m0 * ldo + g * kGroupRows, ldo);
  }
}

// --- F16 / BF16: a tile is one column of 16 rows.

template <class L>
[[gnu::always_inline]] inline __m512 load_dense(const uint8_t* p) {
  const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  if constexpr (L::kBrainFloat)
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
  else
    return _mm512_cvtph_ps(bits);
}

template <class L, int MT>
void float_dense_rows(const PackedView& w, const float* x, int64_t ldx, int64_t m0, float* out, int64_t ldo,
                      int64_t g0, int64_t g1) {
  // Independent FMA chains over consecutive columns: with few activation rows one chain
  // would wait on the FMA latency at every column.
  constexpr int chains = MT <= 2 ? 4 : (MT <= 4 ? 2 : 1);
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* tile = w.data + g * w.blocks * L::kTileBytes;
    __m512 acc[chains][MT];
    for (int c = 0; c < chains; ++c)
      for (int m = 0; m < MT; ++m) acc[c][m] = _mm512_setzero_ps();
    for (int64_t k0 = 0; k0 < w.blocks; k0 += chains)
      for (int c = 0; c < chains && k0 + c < w.blocks; ++c) {
        const __m512 wk = load_dense<L>(tile + (k0 + c) * L::kTileBytes);
        for (int m = 0; m < MT; ++m)
          acc[c][m] = _mm512_fmadd_ps(wk, _mm512_set1_ps(x[(m0 + m) * ldx + k0 + c]), acc[c][m]);
      }
    for (int c = 1; c < chains; ++c)
      for (int m = 0; m < MT; ++m) acc[0][m] = _mm512_add_ps(acc[0][m], acc[c][m]);
    store_group<MT>(acc[0], rows_in_group(w, g), out + m0 * ldo + g * kGroupRows, ldo);
  }
}

// --- The lookup-table types (IQ4_NL, IQ4_XS, MXFP4) and kvgen's index types (I4S16, I4S16M):
// each unit of 16 rows x 32 weights holds 4-bit indices into 16 int8 values. vpshufb looks
// them up (the 16 values fit one 128-bit lane) as value + 128, an unsigned byte for
// vpdpbusd; the offset leaves 128 times the activations' integer sum in each dot, which the
// quantizer's per-16 sums (half_sums) take out exactly in int32. So each half's dot is the
// exact sum of value * q, and the fold is the portable kernel's: per half
//   acc += scale_h (d_x dot_h)  (+ min_h (d_x hsum_h) for I4S16M),
// the scales from unit_scales (simd_unit_scales). Two levels add both levels' terms. The
// lookup types have one scale a unit: their two halves' dots are one exact int32 sum, folded
// once (the same value up to float rounding; every row count takes the same steps). Its
// pass asks for its bytes ahead (stream_ahead; decode from memory +25-55% for it).

// The exact per-half dots of one activation block (32 int8 at xq, its per-16 sums at hs)
// against a unit: sum over the half of value * q, as float.
[[gnu::always_inline]] inline void half_dots(const __m512i* u, const int8_t* xq, const int32_t* hs, __m512* dot) {
  for (int h = 0; h < 2; ++h) {
    __m512i a = _mm512_setzero_si512(), b = _mm512_setzero_si512();
    for (int v = 4 * h; v < 4 * h + 4; v += 2) {
      a = _mm512_dpbusd_epi32(a, u[v], _mm512_set1_epi32(load_i32(xq + 4 * v)));
      b = _mm512_dpbusd_epi32(b, u[v + 1], _mm512_set1_epi32(load_i32(xq + 4 * (v + 1))));
    }
    const __m512i offset = _mm512_set1_epi32(128 * hs[h]);  // |128 hs| <= 128 * 16 * 127
    dot[h] = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_add_epi32(a, b), offset));
  }
}

// The exact dot of one activation block against a unit whose two halves share one scale and
// no min (the lookup types: IQ4_NL, IQ4_XS, MXFP4): both halves in one int32 sum, so a level
// costs one conversion and one fold. |sum| <= 32 * 255 * 127 (+ 128 * 32 * 127): exact in float.
[[gnu::always_inline]] inline __m512 unit_dot(const __m512i* u, const int8_t* xq, const int32_t* hs) {
  __m512i a = _mm512_setzero_si512(), b = _mm512_setzero_si512();
  for (int v = 0; v < 8; v += 2) {
    a = _mm512_dpbusd_epi32(a, u[v], _mm512_set1_epi32(load_i32(xq + 4 * v)));
    b = _mm512_dpbusd_epi32(b, u[v + 1], _mm512_set1_epi32(load_i32(xq + 4 * (v + 1))));
  }
  const __m512i offset = _mm512_set1_epi32(128 * (hs[0] + hs[1]));
  return _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_add_epi32(a, b), offset));
}

// Rows [m0, m0 + MT) x groups [g0, g1); with Levels = 2 row m's second level is row M + m of x.
template <class L, int MT, int Levels>
void lookup_rows(const PackedView& w, const Int8View& x, int64_t M, int64_t m0, float* out, int64_t ldo, int64_t g0,
                 int64_t g1) {
  const int64_t xblocks = x.cols / kBlockSize;
  for (int64_t g = g0; g < g1; ++g) {
    __m512 acc[MT];
    for (int m = 0; m < MT; ++m) acc[m] = _mm512_setzero_ps();
    for_each_unit<L>(w, g, [&](const uint8_t* tile, int j, int64_t xb, const __m512* scale, const __m512* min) {
      stream_ahead<L, units_per_tile<L>()>(tile, j);
      __m512i u[8];
      lookup_unit(unit_base<L>(tile, j), offset_values<L>(tile), u);
      for (int m = 0; m < MT; ++m)
        for (int level = 0; level < Levels; ++level) {
          const int64_t row = (level == 0 ? 0 : M) + m0 + m, at = row * xblocks + xb;
          const int32_t* hs = x.half_sums + 2 * at;
          const __m512 dx = _mm512_set1_ps(x.d[at]);
          if constexpr (L::kFamily == Family::Lookup) {  // one scale a unit: both halves in one dot
            acc[m] = _mm512_fmadd_ps(_mm512_mul_ps(scale[0], dx), unit_dot(u, x.q + at * kBlockSize, hs), acc[m]);
            continue;
          }
          __m512 dot[2];
          half_dots(u, x.q + at * kBlockSize, hs, dot);
          acc[m] = _mm512_fmadd_ps(_mm512_mul_ps(scale[0], dx), dot[0], acc[m]);
          acc[m] = _mm512_fmadd_ps(_mm512_mul_ps(scale[1], dx), dot[1], acc[m]);
          if constexpr (split_mins<L>()) {  // I4S16M: a min per 16, times its sum of q
            acc[m] = _mm512_fmadd_ps(_mm512_mul_ps(min[0], dx), _mm512_set1_ps(static_cast<float>(hs[0])), acc[m]);
            acc[m] = _mm512_fmadd_ps(_mm512_mul_ps(min[1], dx), _mm512_set1_ps(static_cast<float>(hs[1])), acc[m]);
          }
        }
    });
    store_group<MT>(acc, rows_in_group(w, g), out + m0 * ldo + g * kGroupRows, ldo);
  }
}

// Activation rows per pass of lookup_rows: the unit's 8 vectors and a row's accumulator.
constexpr int kLookupTileRows = 8;

// The lookup and index families' int8 products (tile_driver.inc's matmul_int8 sends them
// here), defined after it: they take its with_tile.
void whole_matmul_int8(const PackedView& w, const Int8View& x, float* out, int64_t ldo, int64_t g0, int64_t g1);

// Their float (exact-mode) products run AVX2's kernels (an AVX-512 CPU has AVX2, FMA and
// F16C: dispatch.cpp requires them).
void whole_matmul_float(const PackedView& w, const float* x, int64_t rows, int64_t ldx, float* out, int64_t ldo,
                        int64_t g0, int64_t g1) {
  avx2_kernels().matmul_float(w, x, rows, ldx, out, ldo, g0, g1);
}

#include "tile_driver.inc"  // with_tile, matmul_int8, matmul_float

template <int Levels>
void lookup_matmul(const PackedView& w, const Int8View& x, int64_t M, float* out, int64_t ldo, int64_t g0,
                   int64_t g1) {
  with_layout(w.type, [&]<class L>() {
    if constexpr (L::kFamily == Family::Lookup || L::kFamily == Family::Index)
      for (int64_t m0 = 0; m0 < M; m0 += kLookupTileRows)
        with_tile<kLookupTileRows>(M - m0, [&]<int MT>() { lookup_rows<L, MT, Levels>(w, x, M, m0, out, ldo, g0, g1); });
  });
}

void whole_matmul_int8(const PackedView& w, const Int8View& x, float* out, int64_t ldo, int64_t g0, int64_t g1) {
  lookup_matmul<1>(w, x, x.rows, out, ldo, g0, g1);
}

// Batch rows per pass of the two-level kernels (kernel_abi.h's kTwoLevelPassRows): the tile's
// 8 unpacked vectors and a row's two levels' dot chains stay in registers beside the accumulators.
constexpr int kTwoLevelTileRows = kTwoLevelPassRows;

// Q6_K matrices take passes of this many rows (two of the quantizer's passes) where there
// are that many: a sub-tile's unpacked quants and decoded scales serve twice the rows (the same
// arithmetic per row, so the same outputs bit for bit). Q4_K / Q5_K take chunked passes of 8
// at every row count (a 128-row pass 1.13-1.25x faster than 16-row unpacked passes).
constexpr int kManySuperRows = 16;

bool matmul_int8x2(const PackedView& w, const Int8View& x, float* out, int64_t ldo, int64_t g0, int64_t g1) {
  const int64_t M = x.rows / 2;
  bool done = false;
  with_layout(w.type, [&]<class L>() {
    if constexpr (L::kFamily == Family::Lookup || L::kFamily == Family::Index) {
      lookup_matmul<2>(w, x, M, out, ldo, g0, g1);
      done = true;
    } else if constexpr (L::kFamily != Family::Dense) {
      if (M == 1) {  // batch-1 decode: its own stream kernels
        if constexpr (L::kFamily == Family::Block)
          int8x2_tile_row1<L>(w, x, out, g0, g1);
        else
          int8x2_super_row1<L>(w, x, out, g0, g1);
        done = true;
        return;
      }
      int64_t m0 = 0;
      if constexpr (L::kFamily == Family::Super && !L::kHasMin) {
        static_assert(kManySuperRows == 2 * kTwoLevelPassRows);
        if (x.passes)  // the quantizer's passes, two at a time
          for (const int64_t blocks = x.cols / kBlockSize; m0 + kManySuperRows <= M; m0 += kManySuperRows) {
            const TwoLevelPassBlock* parts[2] = {x.passes + m0 / kTwoLevelPassRows * blocks,
                                                 x.passes + (m0 / kTwoLevelPassRows + 1) * blocks};
            int8x2_super_rows_unpacked<L, kTwoLevelPassRows, 2>(w, parts, m0, out, ldo, g0, g1);
          }
      }
      for (; m0 < M; m0 += kTwoLevelTileRows)
        with_tile<kTwoLevelTileRows>(M - m0, [&]<int MT>() {
          if constexpr (L::kFamily == Family::Block && MT > 1) {
            int8x2_tile_rows_chunked<L, MT>(w, x, M, m0, out, ldo, g0, g1);
          } else if constexpr (L::kFamily == Family::Block) {
            int8x2_tile_rows<L, MT>(w, x, M, m0, out, ldo, g0, g1);
          } else if constexpr (L::kHasMin && MT > 1) {
            int8x2_super_rows_chunked<L, MT>(w, x, M, m0, out, ldo, g0, g1);
          } else {
            const TwoLevelPassBlock* rows = gather_two_level_rows<MT>(x, M, m0);
            int8x2_super_rows_unpacked<L, MT, 1>(w, &rows, m0, out, ldo, g0, g1);
          }
        });
      done = true;
    }
  });
  return done;
}

}  // namespace

KernelTable avx512_kernels() { return {matmul_int8, matmul_float, matmul_int8x2}; }

}  // namespace kvgen::quant
#endif  // KVGEN_X86_KERNELS
