// AMX-INT8 kernels (Intel Xeon 4th generation and later): the two-level products of several
// activation rows, their integer dots on the tile unit. One TDPBSUD multiplies a 16 x 32 int8
// tile of activations by an 8 x 64-byte tile of unsigned weight quants: 16 x 16 dots of 32
// multiply-adds, where AVX-512 VNNI spends 16 vpdpbusd on one row's 16 dots of one level.
//
// The operands need no copy into a tile format of their own:
//   A: a TwoLevelPassBlock's rows (kernel_abi.h: 8 rows' first level, then their residuals,
//      32 bytes each), as the quantizer wrote them: one A tile is both levels of a pass;
//   B: a tile's (or K-quant sub-tile's) 8 unpacked quant vectors (unpack_tile: byte 4r+j of
//      u[v] = weight 4v+j of output row r), which is the tile unit's B layout: row v holds
//      weights 4v..4v+3 of each of the 16 output rows; for the lookup types (IQ4_NL, IQ4_XS,
//      MXFP4) a unit's values + 128 as the VNNI kernels look them up (lookup_unit), same layout.
// So C row i < 8 holds dot1 of pass row i against the 16 output rows, row 8 + i its dot2.
//
// The dots are exact int32 sums, the same integers the VNNI kernels add, and each row's fold
// (the floats: 2^8 dot1 + dot2 converted once, times d2, the weights' scale, the min term) is
// kernels_avx512.cpp's in the same order, so every row's output is the one-row kernel's bit for
// bit, and a row's result does not depend on the rows that share its pass. (The lookup types'
// VNNI kernel folds each level on its own, with the activations' scale and sums per level, so
// their fold reads those from the plain layout: fold_lookup_row.)
//
// A group's quants are unpacked once per call into the calling thread's buffer, with each
// block's fold vectors, and then serve every pass of rows; a product of up to 16 rows unpacks
// each tile as its products reach it instead (StreamedGroup). Compiled with -mavx512f/bw/vl/vnni
// and -mamx-tile/-mamx-int8 (CMakeLists.txt); dispatch.cpp runs it only after the CPU showed
// AMX-INT8 and Linux granted the tile data permission (arch_prctl(ARCH_REQ_XCOMP_PERM)).
#include "kvgen/quant/kernel_abi.h"
#if KVGEN_X86_KERNELS
#include <immintrin.h>

#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kvgen/quant/fp16.h"

namespace kvgen::quant {

namespace {

#include "unit_scales.inc"         // (unit_scales_avx512.inc's)
#include "unit_scales_avx512.inc"  // negated
#include "vectors_avx512.inc"      // unpack_tile, load_halves, scaled_bytes, two_level_sum, store_group
#include "amx_tiles.inc"           // TileConfig, TileSession, KVGEN_TILE_LOAD / _STORE

// amx_tiles.inc's registers here: A_p a pass of activation rows, B_h a block's weights (Q6_K: its
// half h), C_ph their product.

// Every tile here: A 16 x 32 bytes (a pass block's rows), B 8 x 64 bytes (32 weights of 16
// output rows), C 16 x 16 int32.
TileConfig int8_tile_config() {
  TileConfig c;
  for (int t : {kA0, kA1}) c.tile(t, 2 * kTwoLevelPassRows, kBlockSize);
  for (int t : {kB0, kB1}) c.tile(t, kBlockSize / 4, 64);
  for (int t : {kC00, kC10, kC01, kC11}) c.tile(t, kGroupRows, 64);
  return c;
}

// One block's weights as B tiles, and the vectors its fold multiplies by.
//   one scale (32-weight block types, Q4_K / Q5_K): b[0] = the 8 quant vectors; fold[0] = the
//     scale of 2^8 dot1 + dot2's product (d, or d sc_j), fold[1] = the min term per unit of
//     s1 + s2 (mins, kOffset d, or -dmin m_j);
//   the lookup types (IQ4_NL, IQ4_XS, MXFP4): b[0] = the unit's values + 128 (lookup_unit);
//     fold[0] = the unit's scale;
//   Q6_K: b[0] = the first half's 4 vectors then 4 zero rows, b[1] = 4 zero rows then the
//     second half's (so that one A tile of 32 weights meets each half alone); fold[0], fold[1]
//     = the halves' scales d sc_2j, d sc_2j+1.
struct alignas(64) BlockWeights {
  __m512i b[2][8];
  __m512 fold[2];
};

template <class L>
constexpr bool kTwoHalves = split_scales<L>();  // Q6_K (unit_scales.inc; the index types have no tile kernel)

// Blocks a tile of the 32-weight block types (1) and the K-quants (their sub-blocks).
template <class L>
constexpr int kBlocksPerTile = [] {
  if constexpr (L::kFamily == Family::Block)
    return 1;
  else
    return L::kSubBlocks;
}();

// The blocks of one tile of a 32-weight block type or a K-quant into `to`.
template <class L>
[[gnu::always_inline]] inline void prepare_tile(const uint8_t* tile, BlockWeights* to) {
  if constexpr (L::kFamily == Family::Block) {
    unpack_tile<L>(tile, to->b[0]);
    to->fold[0] = load_halves(tile + L::kScalesAt);
    to->fold[1] = load_mins<L>(tile, to->fold[0]);
  } else {
    using S = typename L::Sub;
    const __m512i zero = _mm512_setzero_si512();
    const __m512 d = load_halves(tile + L::kDAt);
    for (int j = 0; j < L::kSubBlocks; ++j) {
      BlockWeights& bw = to[j];
      const uint8_t* sub = tile + L::kSubTilesAt + j * S::kTileBytes;
      if constexpr (kTwoHalves<L>) {
        __m512i u[8];
        unpack_tile<S>(sub, u);
        for (int v = 0; v < 4; ++v) {
          bw.b[0][v] = u[v], bw.b[0][4 + v] = zero;
          bw.b[1][v] = zero, bw.b[1][4 + v] = u[4 + v];
        }
        bw.fold[0] = scaled_bytes<true>(tile + L::kScalesAt + kGroupRows * (2 * j), d);
        bw.fold[1] = scaled_bytes<true>(tile + L::kScalesAt + kGroupRows * (2 * j + 1), d);
      } else {
        unpack_tile<S>(sub, bw.b[0]);
        bw.fold[0] = scaled_bytes<false>(tile + L::kScalesAt + kGroupRows * j, d);
        // fma(-min, s, acc) rounds c - min s once, as the VNNI kernels' fnmadd(min, s, acc)
        bw.fold[1] = negated(scaled_bytes<false>(tile + L::kMinsAt + kGroupRows * j, load_halves(tile + L::kDminAt)));
      }
    }
  }
}

// prepare_group for the 32-weight block types and the K-quants.
template <class L>
void prepare_blocks(const PackedView& w, int64_t g, BlockWeights* to) {
  const uint8_t* tile = w.data + g * w.blocks * L::kTileBytes;
  for (int64_t tb = 0; tb < w.blocks; ++tb, tile += L::kTileBytes) prepare_tile<L>(tile, to + tb * kBlocksPerTile<L>);
}

// Group g's blocks into `to`, one per 32 weights of a row (a K-quant's sub-blocks, an IQ4_XS
// tile's units).
template <class L>
void prepare_group(const PackedView& w, int64_t g, BlockWeights* to) {
  if constexpr (L::kFamily == Family::Lookup) {
    for_each_unit<L>(w, g, [&](const uint8_t* tile, int j, int64_t unit, const __m512* scale, const __m512*) {
      BlockWeights& bw = to[unit];
      lookup_unit(unit_base<L>(tile, j), offset_values<L>(tile), bw.b[0]);
      bw.fold[0] = scale[0];
    });
  } else {
    prepare_blocks<L>(w, g, to);
  }
}

// Row r's fold of one block from its pass's products c (c[h]: half h's, 16 int32 rows).
//   one scale: acc + scale (d2 (2^8 dot1 + dot2)) + offset (s1 + s2), as add_two_level_block;
//   Q6_K: acc + d2 (scale_b half_b + scale_a half_a), half = 2^8 dot1 + dot2 - 32 (2^8 hs1 + hs2),
//   as q6k_two_level.
template <class L>
[[gnu::always_inline]] inline __m512 fold_row(const int32_t (*const c[2])[16], const TwoLevelPassBlock& xb, int r,
                                              const BlockWeights& bw, __m512 acc) {
  const auto level_sum = [&](int h) {
    return two_level_int(_mm512_load_si512(c[h][r]), _mm512_load_si512(c[h][kTwoLevelPassRows + r]));
  };
  if constexpr (kTwoHalves<L>) {
    const __m512 half_a =
        _mm512_cvtepi32_ps(_mm512_sub_epi32(level_sum(0), _mm512_slli_epi32(_mm512_set1_epi32(xb.half_sums[r][0]), 5)));
    const __m512 half_b =
        _mm512_cvtepi32_ps(_mm512_sub_epi32(level_sum(1), _mm512_slli_epi32(_mm512_set1_epi32(xb.half_sums[r][1]), 5)));
    return _mm512_fmadd_ps(_mm512_set1_ps(xb.d2[r]),
                           _mm512_fmadd_ps(bw.fold[1], half_b, _mm512_mul_ps(bw.fold[0], half_a)), acc);
  } else {
    const __m512 sum = _mm512_mul_ps(_mm512_set1_ps(xb.d2[r]), _mm512_cvtepi32_ps(level_sum(0)));
    acc = _mm512_fmadd_ps(bw.fold[0], sum, acc);
    return _mm512_fmadd_ps(bw.fold[1], _mm512_set1_ps(xb.s[r]), acc);
  }
}

// Where a lookup type's fold finds a pass row's scale and sums per level: the activations (the
// plain layout) and the product row of the first pass's row 0 (the pass blocks hold the levels'
// combined sums, which a two-level fold of the 32-weight and K-quant types takes instead).
struct LevelRows {
  const Int8View& x;
  int64_t M;      // rows of one level (x.rows / 2)
  int64_t first;  // pass 0's row 0; pass p's is first + p kTwoLevelPassRows
};

// Row r of pass p's fold of unit b from its products c, as lookup_rows folds it, per level:
// acc + (scale d_x) (dot - 128 (hs_0 + hs_1)), the dot being the unit's values + 128 times q.
template <class L>
[[gnu::always_inline]] inline __m512 fold_lookup_row(const int32_t (*c)[16], const LevelRows& rows, int p, int r,
                                                     int64_t b, const BlockWeights& bw, __m512 acc) {
  const int64_t xblocks = rows.x.cols / kBlockSize, m = rows.first + p * kTwoLevelPassRows + r;
#pragma GCC unroll 2
  for (int level = 0; level < 2; ++level) {
    const int64_t at = ((level == 0 ? 0 : rows.M) + m) * xblocks + b;
    const int32_t* hs = rows.x.half_sums + 2 * at;
    const __m512i dot = _mm512_sub_epi32(_mm512_load_si512(c[level * kTwoLevelPassRows + r]),
                                         _mm512_set1_epi32(128 * (hs[0] + hs[1])));
    acc = _mm512_fmadd_ps(_mm512_mul_ps(bw.fold[0], _mm512_set1_ps(rows.x.d[at])), _mm512_cvtepi32_ps(dot), acc);
  }
  return acc;
}

// The products of `Parts` passes (R rows each: R < kTwoLevelPassRows only for the last pass)
// against one block's B tiles, into the C tiles (pass p, half h: C_ph).
template <class L, int Parts>
[[gnu::always_inline]] inline void block_products(const TwoLevelPassBlock* const* parts, int64_t b,
                                                  const BlockWeights& bw) {
  KVGEN_TILE_LOAD(kB0, bw.b[0], 64, sizeof bw.b[0]);
  if constexpr (kTwoHalves<L>) KVGEN_TILE_LOAD(kB1, bw.b[1], 64, sizeof bw.b[1]);
  KVGEN_TILE_LOAD(kA0, parts[0][b].rows, kBlockSize, sizeof parts[0][b].rows);
  if constexpr (Parts == 2) KVGEN_TILE_LOAD(kA1, parts[1][b].rows, kBlockSize, sizeof parts[1][b].rows);
  _tile_zero(kC00);
  _tile_dpbsud(kC00, kA0, kB0);
  if constexpr (Parts == 2) {
    _tile_zero(kC10);
    _tile_dpbsud(kC10, kA1, kB0);
  }
  if constexpr (kTwoHalves<L>) {
    _tile_zero(kC01);
    _tile_dpbsud(kC01, kA0, kB1);
    if constexpr (Parts == 2) {
      _tile_zero(kC11);
      _tile_dpbsud(kC11, kA1, kB1);
    }
  }
}

// The C tiles into c (pass p, half h at c + (2p + h) * 256).
template <class L, int Parts>
[[gnu::always_inline]] inline void store_products(int32_t* c) {
  constexpr int64_t kBytes = 1024;  // 16 x 16 int32
  KVGEN_TILE_STORE(kC00, c, 64, kBytes);
  if constexpr (kTwoHalves<L>) KVGEN_TILE_STORE(kC01, c + 256, 64, kBytes);
  if constexpr (Parts == 2) {
    KVGEN_TILE_STORE(kC10, c + 512, 64, kBytes);
    if constexpr (kTwoHalves<L>) KVGEN_TILE_STORE(kC11, c + 768, 64, kBytes);
  }
}

// Rows [m0, m0 + Parts R) (Parts passes of R rows, parts[p] their TwoLevelPassBlocks) against
// group g, whose blocks `weights` holds. One-scale layouts run a software pipeline: step i
// issues block i's tile products, folds block i - 2 (stored at the end of step i - 2), then
// stores block i's products (three product buffers): Q4_0 / Q4_K products of 128 rows 1.05-1.1x
// faster than products, store and folds block by block. Q6_K, whose four product tiles a block
// take longer to store, measured 0.9-0.95x that way and folds each block right after its store.
// The folds are the bound: about 53% of a 128-row Q4_K product (2816 x 1024, one thread), the tile
// stores 17%. Alternating two sets of B and C tiles between blocks ran 0.87-0.89x, and keeping the
// accumulators off the stack (GCC spills them here) 0.97-1.01x
// (docs/benchmarks/2026-12-07-few-row-goals-and-tile-trials.md).
template <class L>
constexpr int kFoldLag = kTwoHalves<L> ? 0 : 2;

// Where rows_over_group finds block i's weights: take(i) as its products reach it, then at(i)
// for its fold (at most kFoldLag blocks later).
//   PreparedGroup: the whole group unpacked before (prepare_group), for a product of several
//     calls of rows_over_group a group, which all read it;
//   StreamedGroup: each tile unpacked as the products reach it (with the VNNI kernels' prefetch,
//     stream_ahead), into a ring of a few tiles that stays in L1, for products of up to
//     kMaxStreamedRows rows. Unpacked whole first, a group of K = 4096 takes 147 KB, written
//     and read back through L2 for one or two passes: 16-row products ran 1.05-1.25x faster
//     streamed (SmolLM2's 576 x 1536 Q4_1 down projection 1.25x, Q4_K 8192 x 4096 1.06x; one
//     thread, 24 matrices or one larger than the cache).
struct PreparedGroup {
  const BlockWeights* weights;
  [[gnu::always_inline]] const BlockWeights& take(int64_t i) const { return weights[i]; }
  [[gnu::always_inline]] const BlockWeights& at(int64_t i) const { return weights[i]; }
};

template <class L>
class StreamedGroup {
 public:
  StreamedGroup(const PackedView& w, int64_t g) : tiles_(w.data + g * w.blocks * L::kTileBytes) {}

  [[gnu::always_inline]] const BlockWeights& take(int64_t i) {
    if (i % kPer == 0) {
      const uint8_t* tile = tiles_ + i / kPer * L::kTileBytes;
      stream_ahead<L>(tile);
      prepare_tile<L>(tile, slot(i));
    }
    return at(i);
  }
  [[gnu::always_inline]] const BlockWeights& at(int64_t i) const { return slot(i)[i % kPer]; }

 private:
  static constexpr int kPer = kBlocksPerTile<L>;
  static constexpr int kTiles = (kFoldLag<L> + kPer - 1) / kPer + 1;  // the tiles a fold may still read
  BlockWeights* slot(int64_t i) { return ring_ + i / kPer % kTiles * kPer; }
  const BlockWeights* slot(int64_t i) const { return ring_ + i / kPer % kTiles * kPer; }

  const uint8_t* tiles_;
  BlockWeights ring_[kTiles * kPer];
};

template <class L, int R, int Parts, class Group>
void rows_over_group(Group& weights, int64_t blocks, const TwoLevelPassBlock* const* parts,
                     int64_t rows_here, float* out, int64_t ldo, const LevelRows& levels) {
  constexpr int MT = R * Parts;
  constexpr int kLag = kFoldLag<L>;
  alignas(64) int32_t c[kLag + 1][4][16][16];  // step % (lag + 1); pass p, half h at 2p + h
  __m512 acc[MT];
#pragma GCC unroll 16
  for (int m = 0; m < MT; ++m) acc[m] = _mm512_setzero_ps();
  const auto fold = [&](int64_t b) {
    const BlockWeights& bw = weights.at(b);
    const int32_t(*const products)[16][16] = c[b % (kLag + 1)];
#pragma GCC unroll 2
    for (int p = 0; p < Parts; ++p) {
      const int32_t(*const halves[2])[16] = {products[2 * p], products[2 * p + 1]};
      const TwoLevelPassBlock& xb = parts[p][b];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        if constexpr (L::kFamily == Family::Lookup)
          acc[p * R + r] = fold_lookup_row<L>(products[2 * p], levels, p, r, b, bw, acc[p * R + r]);
        else
          acc[p * R + r] = fold_row<L>(halves, xb, r, bw, acc[p * R + r]);
      }
    }
  };
  for (int64_t i = 0; i < blocks + kLag; ++i) {
    if (i < blocks) block_products<L, Parts>(parts, i, weights.take(i));
    if constexpr (kLag > 0) {
      if (i >= kLag) fold(i - kLag);
      if (i < blocks) store_products<L, Parts>(&c[i % (kLag + 1)][0][0][0]);
    } else {
      store_products<L, Parts>(&c[0][0][0][0]);
      fold(i);
    }
  }
  store_group<MT>(acc, rows_here, out, ldo);
}

// Calls f.template operator()<R>() for R = rows (1..kTwoLevelPassRows).
template <int R = kTwoLevelPassRows, class F>
void with_pass_rows(int64_t rows, F&& f) {
  if constexpr (R > 1) {
    if (rows < R) return with_pass_rows<R - 1>(rows, f);
  }
  f.template operator()<R>();
}

// The calling thread's unpacked group (it only grows).
BlockWeights* group_buffer(int64_t blocks) {
  thread_local std::vector<BlockWeights> buffer;
  if (static_cast<int64_t>(buffer.size()) < blocks) buffer.resize(blocks);
  return buffer.data();
}

// Whether this file has a tile kernel for layout L: the two-level types, one or two scales a
// block, and the lookup types, one scale a unit. The index types (I4S16, I4S16M: a scale per
// 16 weights and, I4S16M, a min) had one as Q6_K's, a product tile per half: level with VNNI at
// 16 to 128 rows (0.93-1.01x, bench_quant_kernels.py, 2816 x 1024), their per-half fold being
// most of the work either way.
template <class L>
constexpr bool kHasTileKernel =
    L::kFamily == Family::Block || L::kFamily == Family::Super || L::kFamily == Family::Lookup;

// Whether a layout's tiles can be unpacked one at a time (StreamedGroup): the 32-weight block
// types and the K-quants (the lookup types unpack a group unit by unit, for_each_unit).
template <class L>
constexpr bool kStreamable = L::kFamily == Family::Block || L::kFamily == Family::Super;

// The most rows whose products unpack tile by tile: one pair of passes.
constexpr int64_t kMaxStreamedRows = 2 * kTwoLevelPassRows;

// The passes of x's M rows against groups [g0, g1): two passes at a time, then the last. Up to
// kMaxStreamedRows rows (one or two calls of rows_over_group a group), each call unpacks the
// tiles as it reaches them (StreamedGroup); more rows share a group unpacked once.
template <class L>
void tile_matmul(const PackedView& w, const Int8View& x, int64_t M, float* out, int64_t ldo, int64_t g0,
                 int64_t g1) {
  const int64_t blocks = x.cols / kBlockSize;
  const int64_t passes = (M + kTwoLevelPassRows - 1) / kTwoLevelPassRows;
  const bool streamed = kStreamable<L> && M <= kMaxStreamedRows;
  BlockWeights* weights = streamed ? nullptr : group_buffer(blocks);
  static const TileConfig config = int8_tile_config();
  TileSession tiles(config);
  for (int64_t g = g0; g < g1; ++g) {
    if (!streamed) prepare_group<L>(w, g, weights);
    const int64_t rows_here = rows_in_group(w, g);
    float* group_out = out + g * kGroupRows;
    // rows_over_group of the Parts passes from pass p
    const auto over = [&]<int R, int Parts>(const TwoLevelPassBlock* const* parts, int64_t p) {
      const LevelRows levels{x, M, p * kTwoLevelPassRows};
      float* pass_out = group_out + p * kTwoLevelPassRows * ldo;
      if constexpr (kStreamable<L>) {
        if (streamed) {
          StreamedGroup<L> group(w, g);
          return rows_over_group<L, R, Parts>(group, blocks, parts, rows_here, pass_out, ldo, levels);
        }
      }
      PreparedGroup group{weights};
      rows_over_group<L, R, Parts>(group, blocks, parts, rows_here, pass_out, ldo, levels);
    };
    int64_t p = 0;
    for (; p + 2 <= passes && (p + 2) * kTwoLevelPassRows <= M; p += 2) {
      const TwoLevelPassBlock* parts[2] = {x.passes + p * blocks, x.passes + (p + 1) * blocks};
      over.template operator()<kTwoLevelPassRows, 2>(parts, p);
    }
    for (; p < passes; ++p) {
      const TwoLevelPassBlock* part = x.passes + p * blocks;
      with_pass_rows(M - p * kTwoLevelPassRows, [&]<int R>() { over.template operator()<R, 1>(&part, p); });
    }
  }
}

// Products of fewer rows than this take the VNNI kernels (bench_quant_kernels.py, 2816 x 1024, one
// thread of a Xeon with AMX: the tiles 0.4-0.65x VNNI's speed at 2 rows, level at 8, 1.18-1.23x at
// 16, 1.37-1.39x at 32 and 1.5x at 128 on the 4-bit types). Q8_0, whose VNNI kernel needs no
// unpacking, was 0.96x at 16 rows and 1.13x at 32; Q6_K, whose halves take twice the tile products
// and a longer fold, 1.04x at 16 and 32, 1.16x at 128. The lookup types (IQ4_NL, IQ4_XS, MXFP4):
// level at 8, 1.16x at 16, 1.26-1.30x at 32 and 1.27-1.34x at 128. Each row's output is the same
// either way. Below 16 rows the tiles also lose inside a model: at 8 rows, where a product alone
// measured 1.12-1.2x VNNI on matrices in cache, SmolLM2's batch-8 decode ran 0.74-0.83x, and on
// matrices streamed from memory (16384 x 1536) a product alone ran 0.76x. With each tile
// unpacked as the products reach it (StreamedGroup), 8-row Q4_K products ran 1.04-1.11x VNNI
// (2816 x 1024 to 8192 x 4096) but SmolLM2's 8-row Q4_1 products 0.93-0.94x and its batch-8
// decode still slower, so 8 rows stay on VNNI.
template <class L>
constexpr int64_t kMinTileRows = [] {
  if constexpr (L::kFamily == Family::Lookup)
    return int64_t{16};
  else
    return kTwoHalves<L> || L::kBits == 8 ? int64_t{32} : int64_t{16};
}();

// Whether M rows take the tiles: from kMinTileRows, and Q6_K and Q8_0 also at 16 rows, one pair of
// passes unpacked tile by tile (StreamedGroup), where they ran 1.03-1.06x (Q6_K, 8192 x 4096 and
// 1024 x 2816) and 1.23-1.27x (Q8_0, SmolLM2's 49152 x 576 output and 1536 x 576) VNNI's speed on
// matrices streamed from memory; their 17-31 rows, the whole group unpacked first, stay on VNNI.
template <class L>
bool takes_tiles(int64_t M) {
  return M >= kMinTileRows<L> || (kStreamable<L> && M == kMaxStreamedRows);
}

// set_amx_tiles' switch (on unless a benchmark turns it off), and amx_tile_products' count.
std::atomic<bool> tiles_on{true};
std::atomic<uint64_t> tile_products{0};

bool matmul_int8x2(const PackedView& w, const Int8View& x, float* out, int64_t ldo, int64_t g0, int64_t g1) {
  const int64_t M = x.rows / 2;
  bool tiled = false;
  if (x.passes != nullptr && tiles_on.load(std::memory_order_relaxed))
    with_layout(w.type, [&]<class L>() {
      if constexpr (kHasTileKernel<L>) {
        if (takes_tiles<L>(M)) {
          tile_matmul<L>(w, x, M, out, ldo, g0, g1);
          tile_products.fetch_add(1, std::memory_order_relaxed);
          tiled = true;
        }
      }
    });
  if (tiled) return true;
  static const KernelTable vector = avx512_kernels();
  return vector.matmul_int8x2(w, x, out, ldo, g0, g1);
}

}  // namespace

void set_amx_tiles(bool on) { tiles_on.store(on, std::memory_order_relaxed); }

uint64_t amx_tile_products() { return tile_products.load(std::memory_order_relaxed); }

KernelTable amx_kernels() {
  KernelTable t = avx512_kernels();
  t.matmul_int8x2 = matmul_int8x2;
  return t;
}

}  // namespace kvgen::quant
#endif  // KVGEN_X86_KERNELS
