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
// The amx path multiplies with AMX-BF16 tiles instead (matmul_bf16_tiles, below): the same
// decoded pairs are its B tiles, and each output sums its row's pairs in one float32 chain,
// 32 weights a tile instruction, in column order. Its results are not the vector kernel's bit
// for bit (one chain, not two), but they too never depend on the rows that share a pass.
//
// Compiled with -mavx512f/bw/vl/bf16, -mamx-tile/-mamx-bf16 and -ffp-contract=off
// (CMakeLists.txt); runs only after dispatch.cpp has found AVX512_BF16 (and, for the tiles,
// AMX-BF16 with Linux's tile data permission).
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
#include "amx_tiles.inc"           // TileConfig, TileSession, KVGEN_TILE_LOAD / _STORE

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

// --- AMX-BF16: two groups' decoded pairs against two 16-row tiles of activations at a time.
// amx_tiles.inc's registers here: A_i a tile of activation rows, B_j a group's 16 pairs (32
// weights of 16 output rows), C_ij their product.

// Every tile 16 rows of 64 bytes: 32 bf16 activations of a row, 16 pairs of a group's 16 output
// rows (the layout decode_group writes: pair p is B row p), 16 float32 outputs.
TileConfig bf16_tile_config() {
  TileConfig c;
  for (int t = kA0; t <= kC11; ++t) c.tile(t, 16, 64);
  return c;
}

// Rows of activations a tile holds.
constexpr int64_t kTileRows = 16;

// One tile's rows of activations: where row 0 starts and the row stride in bytes.
struct RowTile {
  const uint16_t* x;
  int64_t stride;
};

// The products of RowTiles row tiles and Groups groups (pairs[i]: group i's decoded pairs) over
// all K, each tile's float32 chain starting at zero, stored into c[t][i] (16 x 16 floats). The
// tile loads name one row of their memory (memory_written: the caller's barrier covers the rest).
template <int RowTiles, int Groups>
void tile_products(const RowTile* rows, const __m512i* const* pairs, int64_t cols, float (*c)[2][16][16]) {
  _tile_zero(kC00);
  if constexpr (Groups == 2) _tile_zero(kC01);
  if constexpr (RowTiles == 2) _tile_zero(kC10);
  if constexpr (RowTiles == 2 && Groups == 2) _tile_zero(kC11);
  constexpr int64_t kBytes = 16 * 64;
  for (int64_t k = 0; k < cols; k += 32) {
    KVGEN_TILE_LOAD(kB0, pairs[0] + k / 2, 64, kBytes);
    KVGEN_TILE_LOAD(kA0, rows[0].x + k, rows[0].stride, 64);
    _tile_dpbf16ps(kC00, kA0, kB0);
    if constexpr (Groups == 2) {
      KVGEN_TILE_LOAD(kB1, pairs[1] + k / 2, 64, kBytes);
      _tile_dpbf16ps(kC01, kA0, kB1);
    }
    if constexpr (RowTiles == 2) {
      KVGEN_TILE_LOAD(kA1, rows[1].x + k, rows[1].stride, 64);
      _tile_dpbf16ps(kC10, kA1, kB0);
      if constexpr (Groups == 2) _tile_dpbf16ps(kC11, kA1, kB1);
    }
  }
  KVGEN_TILE_STORE(kC00, c[0][0], 64, kBytes);
  if constexpr (Groups == 2) KVGEN_TILE_STORE(kC01, c[0][1], 64, kBytes);
  if constexpr (RowTiles == 2) KVGEN_TILE_STORE(kC10, c[1][0], 64, kBytes);
  if constexpr (RowTiles == 2 && Groups == 2) KVGEN_TILE_STORE(kC11, c[1][1], 64, kBytes);
}

// x's rows on the tiles: the first M - M % 16 in place, the last M % 16 copied into a
// zero-padded tile (a tile reads 16 rows: no read past the activations). Nothing is allocated
// once the calling thread's buffers have grown (a bf16 decode step calls it for every product).
void matmul_bf16_tiles(const PackedView& w, const Bf16View& x, float* out, int64_t ldo, int64_t g0, int64_t g1) {
  thread_local std::vector<PairVector> storage;  // two groups' decoded weights, kept between calls
  thread_local std::vector<uint16_t> padded;     // the last, partial tile of rows
  const int64_t count = w.cols / 2;
  if (static_cast<int64_t>(storage.size()) < 2 * count) storage.resize(2 * count);
  const __m512i* pairs[2] = {reinterpret_cast<const __m512i*>(storage.data()),
                             reinterpret_cast<const __m512i*>(storage.data() + count)};
  const int64_t tiles = (x.rows + kTileRows - 1) / kTileRows;
  const int64_t left = x.rows % kTileRows;
  if (left != 0) {
    if (static_cast<int64_t>(padded.size()) < kTileRows * w.cols) padded.resize(kTileRows * w.cols);
    for (int64_t r = 0; r < left; ++r)
      std::memcpy(padded.data() + r * w.cols, x.x + (x.rows - left + r) * x.ldx, 2 * w.cols);
    std::fill(padded.begin() + left * w.cols, padded.begin() + kTileRows * w.cols, uint16_t{0});
  }
  const auto row_tile = [&](int64_t t) -> RowTile {
    return left != 0 && t == tiles - 1 ? RowTile{padded.data(), 2 * w.cols}
                                       : RowTile{x.x + t * kTileRows * x.ldx, 2 * x.ldx};
  };
  static const TileConfig config = bf16_tile_config();
  with_layout(w.type, [&]<class L>() {
    if constexpr (L::kFamily != Family::Dense) {  // matmul.cpp refuses F16 / BF16 weights
      TileSession session(config);
      alignas(64) float c[2][2][16][16];
      for (int64_t g = g0; g < g1; g += 2) {
        const int groups = g + 1 < g1 ? 2 : 1;
        decode_group<L>(w, g, reinterpret_cast<__m512i*>(storage.data()));
        if (groups == 2) decode_group<L>(w, g + 1, reinterpret_cast<__m512i*>(storage.data() + count));
        memory_written();  // the pairs and the padded rows, before the strided tile loads
        for (int64_t t = 0; t < tiles; t += 2) {
          const int row_tiles_here = t + 1 < tiles ? 2 : 1;
          const RowTile rows[2] = {row_tile(t), row_tile(row_tiles_here == 2 ? t + 1 : t)};
          if (row_tiles_here == 2 && groups == 2)
            tile_products<2, 2>(rows, pairs, w.cols, c);
          else if (row_tiles_here == 2)
            tile_products<2, 1>(rows, pairs, w.cols, c);
          else if (groups == 2)
            tile_products<1, 2>(rows, pairs, w.cols, c);
          else
            tile_products<1, 1>(rows, pairs, w.cols, c);
          for (int rt = 0; rt < row_tiles_here; ++rt)
            for (int gi = 0; gi < groups; ++gi) {
              const int64_t rows_here = std::min(kGroupRows, w.rows - (g + gi) * kGroupRows);
              const __mmask16 valid = static_cast<__mmask16>((1u << rows_here) - 1u);
              const int64_t m0 = (t + rt) * kTileRows;
              for (int64_t m = m0; m < std::min(m0 + kTileRows, x.rows); ++m)
                _mm512_mask_storeu_ps(out + m * ldo + (g + gi) * kGroupRows, valid,
                                      _mm512_load_ps(c[rt][gi][m - m0]));
            }
        }
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

Bf16Kernels amx_bf16_kernels() { return {matmul_bf16_tiles, to_bf16}; }

}  // namespace kvgen::quant

#endif  // KVGEN_X86_KERNELS
