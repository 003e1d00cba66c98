// AVX2 + FMA kernels over the same 16-row tiles, in two 8-row halves (one 256-bit
// register = one value per row of a half). Int8 mode multiplies with maddubs + madd:
// 4/5/6-bit quants (<= 63) times int8 activations cannot saturate maddubs' int16 pairs;
// 8-bit quants are turned back to signed (u - 128) and multiplied with llama.cpp's
// sign trick (|w| x sign(x, w)), so their minimum term is already inside the dot.
// Compiled with -mavx2 -mfma -mf16c (CMakeLists.txt); file-local, run only after
// dispatch.cpp has checked the CPU. The per-chunk helpers are always inlined: GCC would
// otherwise call them out of line, passing vectors through memory (3x slower for Q5/Q6).
#include "kvgen/quant/kernel_abi.h"
#if KVGEN_X86_KERNELS
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kvgen/quant/kernel_abi.h"

namespace kvgen::quant {

namespace {

constexpr int64_t kMaxTile = 4;  // activation rows per pass over the weights (registers)
template <class L>
constexpr int kTileRows = kMaxTile;  // every layout alike
constexpr int64_t kHalfRows = 8;

__m256 load_halves(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

template <class L>
__m256 load_mins(const uint8_t* tile, int h, __m256 d) {
  if constexpr (L::kHasMin)
    return load_halves(tile + L::kMinsAt + 16 * h);
  else
    return _mm256_mul_ps(d, _mm256_set1_ps(static_cast<float>(L::kOffset)));
}

__m256i load_chunk(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

int32_t load_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// How far ahead of its use a weight stream is asked for (bytes): 2048 and 4096 measured alike
// (bench_quant_kernels.py, 8k x 4k, Zen 3), 1024 less well.
constexpr int64_t kPrefetchAhead = 2048;
// Asks for the cache lines of [p, p + n) before they are read (a prefetch never faults, so p
// may run past the matrix). Alone, the hardware prefetcher stays too close to a stream that a
// decode step consumes this fast: an 8192 x 4096 product at M = 1 read Q4_0 at 1.5x and Q4_K
// at 1.25x the bytes per second with it.
[[gnu::always_inline]] inline void prefetch_lines(const uint8_t* p, int64_t n) {
  for (int64_t i = 0; i < n; i += 64) _mm_prefetch(reinterpret_cast<const char*>(p + i), _MM_HINT_T0);
}

// Half h (rows 8h..8h+7) of quant vector v's high bits, moved to bits 4.. of each byte
// (other bits are garbage: mask them), from the high-bit planes (kernel_abi.h).
template <class L>
[[gnu::always_inline]] inline __m256i high_bits(const uint8_t* tile, int h, int v) {
  constexpr int per_byte = 8 / L::kExtraBits;
  const __m256i plane = load_chunk(tile + L::kHighBitsAt + 64 * (v / per_byte) + 32 * h);
  const int at = L::kExtraBits * (v % per_byte);  // the vector's bits in each byte; bits of
  // the neighbouring byte that a 16-bit shift brings in land above bit 4 + E - 1
  return at <= 4 ? _mm256_sll_epi16(plane, _mm_cvtsi32_si128(4 - at))
                 : _mm256_srl_epi16(plane, _mm_cvtsi32_si128(at - 4));
}

// Half h of 4/5/6-bit chunk c: weights 4c..4c+3 (low) and 4c+16..4c+19 (high) of 8 rows
// (a tile's or a K-quant sub-tile's quants).
template <class L>
[[gnu::always_inline]] inline void nibble_chunks(const uint8_t* tile, int h, int c, __m256i& low, __m256i& high) {
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  const __m256i raw = load_chunk(tile + L::kQuantsAt + 64 * c + 32 * h);
  low = _mm256_and_si256(raw, nibble);
  high = _mm256_and_si256(_mm256_srli_epi16(raw, 4), nibble);
  if constexpr (L::kExtraBits > 0) {
    const __m256i keep = _mm256_set1_epi8(static_cast<char>(((1 << L::kExtraBits) - 1) << 4));
    low = _mm256_or_si256(low, _mm256_and_si256(high_bits<L>(tile, h, c), keep));
    high = _mm256_or_si256(high, _mm256_and_si256(high_bits<L>(tile, h, c + 4), keep));
  }
}

// dot[m] (lane r) = sum_k w[r][k] * xq[m][k] over half h of a tile, where w is the
// unsigned quant (4/5-bit) or the signed one (8-bit).
template <class L, int MT>
[[gnu::always_inline]] inline void tile_dots(const uint8_t* tile, int h, const int8_t* const* xq, __m256i* dot) {
  const __m256i ones = _mm256_set1_epi16(1);
  for (int m = 0; m < MT; ++m) dot[m] = _mm256_setzero_si256();
  if constexpr (L::kBits == 8) {
    for (int c = 0; c < 8; ++c) {
      const __m256i w = _mm256_xor_si256(load_chunk(tile + L::kQuantsAt + 64 * c + 32 * h), _mm256_set1_epi8(-128));
      const __m256i w_abs = _mm256_sign_epi8(w, w);  // |-128| reads as 128 unsigned
      for (int m = 0; m < MT; ++m) {
        const __m256i xs = _mm256_sign_epi8(_mm256_set1_epi32(load_i32(xq[m] + 4 * c)), w);
        dot[m] = _mm256_add_epi32(dot[m], _mm256_madd_epi16(_mm256_maddubs_epi16(w_abs, xs), ones));
      }
    }
  } else {
    for (int c = 0; c < 4; ++c) {
      __m256i low, high;
      nibble_chunks<L>(tile, h, c, low, high);
      for (int m = 0; m < MT; ++m) {
        // each int16 pair sum is at most 2 * 31 * 127, so two add without overflow
        const __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(low, _mm256_set1_epi32(load_i32(xq[m] + 4 * c))),
                                               _mm256_maddubs_epi16(high, _mm256_set1_epi32(load_i32(xq[m] + 16 + 4 * c))));
        dot[m] = _mm256_add_epi32(dot[m], _mm256_madd_epi16(pairs, ones));
      }
    }
  }
}

// Writes the valid rows of one half-group for MT activation rows.
template <int MT>
void store_half(const __m256* acc, int64_t rows_here, float* out, int64_t ldo) {
  for (int m = 0; m < MT; ++m) {
    if (rows_here == kHalfRows) {
      _mm256_storeu_ps(out + m * ldo, acc[m]);
    } else {
      alignas(32) float lanes[kHalfRows];
      _mm256_store_ps(lanes, acc[m]);
      for (int64_t r = 0; r < rows_here; ++r) out[m * ldo + r] = lanes[r];
    }
  }
}

// Rows of group g's half h that exist (0 for a padded half).
int64_t rows_in_half(const PackedView& w, int64_t g, int h) {
  const int64_t left = w.rows - g * kGroupRows - h * kHalfRows;
  return left < 0 ? 0 : (left < kHalfRows ? left : kHalfRows);
}

// The loop every tiled family shares: groups [g0, g1), each group's tiles in order, and
// tile_half(tile, b, h, acc) for tile b and half h, with acc[MT] that half's sums (lane r =
// row r of the half, one register per activation row); then stored for activation rows
// [m0, m0 + MT). For one or two activation rows (decode) both halves are done in one pass:
// each 64-byte line of the stream is used whole while it is in cache. For more, a pass per
// half keeps the registers for the activation rows, and the second pass finds the stream in
// cache. Either way the stream is asked for ahead of use (prefetch_lines).
template <class L, int MT, class F>
[[gnu::always_inline]] inline void over_tiles(const PackedView& w, int64_t m0, float* out, int64_t ldo, int64_t g0,
                                              int64_t g1, F&& tile_half) {
  constexpr int kPassHalves = MT <= 2 ? 2 : 1;
  const int64_t group_bytes = w.blocks * L::kTileBytes;
  for (int64_t g = g0; g < g1; ++g)
    for (int h0 = 0; h0 < 2; h0 += kPassHalves) {
      int64_t rows_here[kPassHalves];
      int64_t rows_in_pass = 0;
      for (int p = 0; p < kPassHalves; ++p) rows_in_pass += rows_here[p] = rows_in_half(w, g, h0 + p);
      if (rows_in_pass == 0) continue;
      // the first pass over a group reads ahead in it; a second one reads ahead in the next group
      const int64_t ahead = kPrefetchAhead + (h0 == 0 ? 0 : group_bytes);
      const uint8_t* tile = w.data + g * group_bytes;
      __m256 acc[kPassHalves][MT];
      for (int p = 0; p < kPassHalves; ++p)
        for (int m = 0; m < MT; ++m) acc[p][m] = _mm256_setzero_ps();
      for (int64_t b = 0; b < w.blocks; ++b, tile += L::kTileBytes) {
        // a tile's lines asked for in one part per half, not in one burst (Q6_K's 53 lines in
        // a burst cost it 10-20% more time)
        constexpr int64_t kPart = (L::kTileBytes + 64 * kPassHalves - 1) / (64 * kPassHalves) * 64;
        for (int p = 0; p < kPassHalves; ++p) {
          prefetch_lines(tile + ahead + p * kPart, kPart);
          tile_half(tile, b, h0 + p, acc[p]);
        }
      }
      for (int p = 0; p < kPassHalves; ++p)
        if (rows_here[p] > 0)
          store_half<MT>(acc[p], rows_here[p], out + m0 * ldo + g * kGroupRows + (h0 + p) * kHalfRows, ldo);
    }
}

// Activation rows [m0, m0 + MT) x groups [g0, g1) of a 32-weight-block matrix.
template <class L, int MT>
void int8_tile_rows(const PackedView& w, const Int8View& x, int64_t m0, float* out, int64_t ldo, int64_t g0,
                    int64_t g1) {
  const int64_t blocks = w.blocks;
  over_tiles<L, MT>(w, m0, out, ldo, g0, g1, [&](const uint8_t* tile, int64_t b, int h, __m256* acc)
                                                 __attribute__((always_inline)) {
    const int8_t* xq[MT];
    for (int m = 0; m < MT; ++m) xq[m] = x.q + (m0 + m) * x.cols + b * kBlockSize;
    __m256i dot[MT];
    tile_dots<L, MT>(tile, h, xq, dot);
    const __m256 d = load_halves(tile + L::kScalesAt + 16 * h);
    for (int m = 0; m < MT; ++m) {
      const int64_t xb = (m0 + m) * blocks + b;
      acc[m] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(x.d[xb])), _mm256_cvtepi32_ps(dot[m]), acc[m]);
      if constexpr (L::kBits != 8) acc[m] = _mm256_fmadd_ps(load_mins<L>(tile, h, d), _mm256_set1_ps(x.s[xb]), acc[m]);
    }
  });
}

// acc[m] += W[:, k] * x[m][k] for the 4 weights k = k0..k0+3 held in each lane of u.
template <int MT>
[[gnu::always_inline]] inline void fma_lanes(__m256i u, __m256 d, __m256 mins, const float* const* xb, int k0,
                                             __m256* acc) {
  const __m256i byte = _mm256_set1_epi32(0xFF);
  for (int j = 0; j < 4; ++j, u = _mm256_srli_epi32(u, 8)) {
    const __m256 wk = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(_mm256_and_si256(u, byte)), mins);
    for (int m = 0; m < MT; ++m) acc[m] = _mm256_fmadd_ps(wk, _mm256_set1_ps(xb[m][k0 + j]), acc[m]);
  }
}

template <class L, int MT>
void float_tile_rows(const PackedView& w, const float* x, int64_t ldx, int64_t m0, float* out, int64_t ldo,
                     int64_t g0, int64_t g1) {
  over_tiles<L, MT>(w, m0, out, ldo, g0, g1, [&](const uint8_t* tile, int64_t b, int h, __m256* acc)
                                                 __attribute__((always_inline)) {
    const float* xb[MT];
    for (int m = 0; m < MT; ++m) xb[m] = x + (m0 + m) * ldx + b * kBlockSize;
    const __m256 d = load_halves(tile + L::kScalesAt + 16 * h);
    const __m256 mins = load_mins<L>(tile, h, d);
    if constexpr (L::kBits == 8) {
      for (int c = 0; c < 8; ++c) fma_lanes<MT>(load_chunk(tile + L::kQuantsAt + 64 * c + 32 * h), d, mins, xb, 4 * c, acc);
    } else {
      for (int c = 0; c < 4; ++c) {
        __m256i low, high;
        nibble_chunks<L>(tile, h, c, low, high);
        fma_lanes<MT>(low, d, mins, xb, 4 * c, acc);
        fma_lanes<MT>(high, d, mins, xb, 16 + 4 * c, acc);
      }
    }
  });
}

// --- K-quants: per 256-weight tile, 8 sub-blocks of 32 weights, each one of the
// activations' 32-blocks; a sub-block's quants are in the nibble + high-bit plane formats
// of the 32-weight tiles.

// The bytes at p of half h's 8 rows (scales or mins of one sub-block) times d, as floats:
// exact, since d is an fp16 and the bytes have at most 8 bits.
template <bool Signed>
[[gnu::always_inline]] inline __m256 scaled_bytes(const uint8_t* p, int h, __m256 d) {
  const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + kHalfRows * h));
  const __m256i ints = Signed ? _mm256_cvtepi8_epi32(bytes) : _mm256_cvtepu8_epi32(bytes);
  return _mm256_mul_ps(d, _mm256_cvtepi32_ps(ints));
}

// Q6_K: dot_a[m], dot_b[m] (lane r) = sum_k (u[r][k] - 32) * xq[m][k] over the sub-tile's
// first and second 16 weights, for half h's rows. The -32 offset starts each sum as -32 *
// (sum of xq over the half). maddubs cannot saturate: 2 * 63 * 127 < 2^15.
template <class S, int MT>
[[gnu::always_inline]] inline void split_dots(const uint8_t* sub, int h, const int8_t* const* xq,
                                              const int32_t* const* half_sums, __m256i* dot_a, __m256i* dot_b) {
  const __m256i ones = _mm256_set1_epi16(1);
  for (int m = 0; m < MT; ++m) {
    dot_a[m] = _mm256_set1_epi32(-32 * half_sums[m][0]);
    dot_b[m] = _mm256_set1_epi32(-32 * half_sums[m][1]);
  }
  for (int c = 0; c < 4; ++c) {
    __m256i low, high;
    nibble_chunks<S>(sub, h, c, low, high);
    for (int m = 0; m < MT; ++m) {
      const __m256i xa = _mm256_set1_epi32(load_i32(xq[m] + 4 * c));
      const __m256i xb = _mm256_set1_epi32(load_i32(xq[m] + 16 + 4 * c));
      dot_a[m] = _mm256_add_epi32(dot_a[m], _mm256_madd_epi16(_mm256_maddubs_epi16(low, xa), ones));
      dot_b[m] = _mm256_add_epi32(dot_b[m], _mm256_madd_epi16(_mm256_maddubs_epi16(high, xb), ones));
    }
  }
}

// Sub-block j of a K-quant tile (half h; d = its rows' super-block scales) against the
// activations' block b of rows [m0, m0 + MT):
//   Q4_K/Q5_K: acc += (d sc_j d_x) dot - (dmin m_j) s_x
//   Q6_K:      acc += d_x ((d sc_2j) dot_a + (d sc_2j+1) dot_b)
template <class L, int MT>
[[gnu::always_inline]] inline void add_sub_block(const uint8_t* tile, int h, int j, __m256 d, const Int8View& x,
                                                 int64_t m0, int64_t b, __m256* acc) {
  using S = typename L::Sub;
  const int64_t xblocks = x.cols / kBlockSize;
  const uint8_t* sub = tile + L::kSubTilesAt + j * S::kTileBytes;
  const int8_t* xq[MT];
  for (int m = 0; m < MT; ++m) xq[m] = x.q + (m0 + m) * x.cols + b * kBlockSize;
  if constexpr (L::kHasMin) {
    const __m256 scale = scaled_bytes<false>(tile + L::kScalesAt + kGroupRows * j, h, d);
    const __m256 dmin = load_halves(tile + L::kDminAt + 16 * h);
    const __m256 min = scaled_bytes<false>(tile + L::kMinsAt + kGroupRows * j, h, dmin);
    __m256i dot[MT];
    tile_dots<S, MT>(sub, h, xq, dot);
    for (int m = 0; m < MT; ++m) {
      const int64_t xb = (m0 + m) * xblocks + b;
      acc[m] = _mm256_fmadd_ps(_mm256_mul_ps(scale, _mm256_set1_ps(x.d[xb])), _mm256_cvtepi32_ps(dot[m]), acc[m]);
      acc[m] = _mm256_fnmadd_ps(min, _mm256_set1_ps(x.s[xb]), acc[m]);
    }
  } else {
    const __m256 scale_a = scaled_bytes<true>(tile + L::kScalesAt + kGroupRows * (2 * j), h, d);
    const __m256 scale_b = scaled_bytes<true>(tile + L::kScalesAt + kGroupRows * (2 * j + 1), h, d);
    const int32_t* half_sums[MT];
    for (int m = 0; m < MT; ++m) half_sums[m] = x.half_sums + 2 * ((m0 + m) * xblocks + b);
    __m256i dot_a[MT], dot_b[MT];
    split_dots<S, MT>(sub, h, xq, half_sums, dot_a, dot_b);
    for (int m = 0; m < MT; ++m) {
      const __m256 sum = _mm256_fmadd_ps(scale_b, _mm256_cvtepi32_ps(dot_b[m]),
                                         _mm256_mul_ps(scale_a, _mm256_cvtepi32_ps(dot_a[m])));
      acc[m] = _mm256_fmadd_ps(_mm256_set1_ps(x.d[(m0 + m) * xblocks + b]), sum, acc[m]);
    }
  }
}

// Activation rows [m0, m0 + MT) x groups [g0, g1) of a K-quant matrix, by 8-row halves.
template <class L, int MT>
void int8_super_rows(const PackedView& w, const Int8View& x, int64_t m0, float* out, int64_t ldo, int64_t g0,
                     int64_t g1) {
  over_tiles<L, MT>(w, m0, out, ldo, g0, g1, [&](const uint8_t* tile, int64_t sb, int h, __m256* acc)
                                                 __attribute__((always_inline)) {
    const __m256 d = load_halves(tile + L::kDAt + 16 * h);
    for (int j = 0; j < L::kSubBlocks; ++j) add_sub_block<L, MT>(tile, h, j, d, x, m0, sb * L::kSubBlocks + j, acc);
  });
}

// Float activations on a K-quant matrix. Each weight is fma(scale, u, -min) rounded once,
// which is gguf's value: scale * u and min are exact (Q6_K: min = 32 scale).
template <class L, int MT>
void float_super_rows(const PackedView& w, const float* x, int64_t ldx, int64_t m0, float* out, int64_t ldo,
                      int64_t g0, int64_t g1) {
  using S = typename L::Sub;
  over_tiles<L, MT>(w, m0, out, ldo, g0, g1, [&](const uint8_t* tile, int64_t sb, int h, __m256* acc)
                                                 __attribute__((always_inline)) {
    const __m256 d = load_halves(tile + L::kDAt + 16 * h);
    for (int j = 0; j < L::kSubBlocks; ++j) {
      __m256 scale_a, scale_b, mins_a, mins_b;  // for the low (first 16) and high weights
      if constexpr (L::kHasMin) {
        const __m256 neg_dmin = _mm256_sub_ps(_mm256_setzero_ps(), load_halves(tile + L::kDminAt + 16 * h));
        scale_a = scale_b = scaled_bytes<false>(tile + L::kScalesAt + kGroupRows * j, h, d);
        mins_a = mins_b = scaled_bytes<false>(tile + L::kMinsAt + kGroupRows * j, h, neg_dmin);
      } else {
        scale_a = scaled_bytes<true>(tile + L::kScalesAt + kGroupRows * (2 * j), h, d);
        scale_b = scaled_bytes<true>(tile + L::kScalesAt + kGroupRows * (2 * j + 1), h, d);
        mins_a = _mm256_mul_ps(scale_a, _mm256_set1_ps(-32.0f));
        mins_b = _mm256_mul_ps(scale_b, _mm256_set1_ps(-32.0f));
      }
      const uint8_t* sub = tile + L::kSubTilesAt + j * S::kTileBytes;
      const float* xb[MT];
      for (int m = 0; m < MT; ++m) xb[m] = x + (m0 + m) * ldx + (sb * L::kSubBlocks + j) * kBlockSize;
      for (int c = 0; c < 4; ++c) {
        __m256i low, high;
        nibble_chunks<S>(sub, h, c, low, high);
        fma_lanes<MT>(low, scale_a, mins_a, xb, 4 * c, acc);
        fma_lanes<MT>(high, scale_b, mins_b, xb, 16 + 4 * c, acc);
      }
    }
  });
}

// --- F16 / BF16: a tile is one column of 16 rows; both halves in one pass, so each
// column's 32 bytes are read once.

template <class L>
[[gnu::always_inline]] inline __m256 load_dense(const uint8_t* p) {
  const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (L::kBrainFloat)
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
  else
    return _mm256_cvtph_ps(bits);
}

template <class L, int MT>
void float_dense_rows(const PackedView& w, const float* x, int64_t ldx, int64_t m0, float* out, int64_t ldo,
                      int64_t g0, int64_t g1) {
  // Independent FMA chains over consecutive columns: with few activation rows one chain
  // would wait on the FMA latency at every column (16 registers: at most 8 accumulators).
  constexpr int chains = MT == 1 ? 4 : (MT == 2 ? 2 : 1);
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* tile = w.data + g * w.blocks * L::kTileBytes;
    __m256 acc[chains][2][MT];  // [chain][half][m]
    for (int c = 0; c < chains; ++c)
      for (int m = 0; m < MT; ++m) acc[c][0][m] = acc[c][1][m] = _mm256_setzero_ps();
    for (int64_t k0 = 0; k0 < w.blocks; k0 += chains)
      for (int c = 0; c < chains && k0 + c < w.blocks; ++c) {
        const uint8_t* column = tile + (k0 + c) * L::kTileBytes;
        const __m256 w0 = load_dense<L>(column), w1 = load_dense<L>(column + 16);
        for (int m = 0; m < MT; ++m) {
          const __m256 xk = _mm256_set1_ps(x[(m0 + m) * ldx + k0 + c]);
          acc[c][0][m] = _mm256_fmadd_ps(w0, xk, acc[c][0][m]);
          acc[c][1][m] = _mm256_fmadd_ps(w1, xk, acc[c][1][m]);
        }
      }
    for (int c = 1; c < chains; ++c)
      for (int h = 0; h < 2; ++h)
        for (int m = 0; m < MT; ++m) acc[0][h][m] = _mm256_add_ps(acc[0][h][m], acc[c][h][m]);
    for (int h = 0; h < 2; ++h)
      store_half<MT>(acc[0][h], rows_in_half(w, g, h), out + m0 * ldo + g * kGroupRows + h * kHalfRows, ldo);
  }
}

// --- lookup-table types (IQ4_NL, IQ4_XS, MXFP4): each 4-bit index selects one of 16 int8
// values, 32 at a time with vpshufb; a tile is kUnits units of 32 weights (kernel_abi.h).

// The 16 values in both 128-bit lanes (vpshufb looks up within each lane).
template <class L>
[[gnu::always_inline]] inline __m256i value_table() {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(L::kValues)));
}

// Half h's 8 row scales of unit j (d; IQ4_XS: d (ls_j - 32)), as floats: exact.
template <class L>
[[gnu::always_inline]] inline __m256 lookup_scales(const uint8_t* tile, int h, int j) {
  __m256 d;
  if constexpr (L::kScale == ScaleKind::Half) {
    d = load_halves(tile + L::kScalesAt + 16 * h);
  } else {  // 2^(e - 128): (e - 1) << 23 for e >= 2, the subnormals 0x200000 << e for e = 0, 1
    const __m256i e =
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(tile + L::kScalesAt + kHalfRows * h)));
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i subnormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    d = _mm256_castsi256_ps(_mm256_blendv_epi8(normal, subnormal, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e)));
  }
  if constexpr (L::kSuper) d = scaled_bytes<true>(tile + L::kSubScalesAt + kGroupRows * j, h, d);
  return d;
}

// Half h of unit chunk c as values: weights 4c..4c+3 (low) and 4c+16..4c+19 (high) of 8 rows.
template <class L>
[[gnu::always_inline]] inline void value_chunks(const uint8_t* unit, int h, int c, __m256i table, __m256i& low,
                                                __m256i& high) {
  nibble_chunks<typename L::Sub>(unit, h, c, low, high);
  low = _mm256_shuffle_epi8(table, low);
  high = _mm256_shuffle_epi8(table, high);
}

// dot[0][m], dot[1][m] (lane r) = sum_k value[r][k] * xq[m][k] over the first and the second
// 16 weights (the low nibbles, the high ones) of half h of one unit, the values looked up in
// `table`; signed x signed as |w| x (x with w's sign): each maddubs pair is at most
// 2 * 128 * 127 < 2^15.
template <class L, int MT>
[[gnu::always_inline]] inline void split_value_dots(const uint8_t* unit, int h, __m256i table,
                                                    const int8_t* const* xq, __m256i (*dot)[MT]) {
  const __m256i ones = _mm256_set1_epi16(1);
  for (int hh = 0; hh < 2; ++hh)
    for (int m = 0; m < MT; ++m) dot[hh][m] = _mm256_setzero_si256();
  for (int c = 0; c < 4; ++c) {
    __m256i low, high;
    value_chunks<L>(unit, h, c, table, low, high);
    const __m256i low_abs = _mm256_sign_epi8(low, low), high_abs = _mm256_sign_epi8(high, high);
    for (int m = 0; m < MT; ++m) {
      const __m256i xl = _mm256_sign_epi8(_mm256_set1_epi32(load_i32(xq[m] + 4 * c)), low);
      const __m256i xh = _mm256_sign_epi8(_mm256_set1_epi32(load_i32(xq[m] + 16 + 4 * c)), high);
      dot[0][m] = _mm256_add_epi32(dot[0][m], _mm256_madd_epi16(_mm256_maddubs_epi16(low_abs, xl), ones));
      dot[1][m] = _mm256_add_epi32(dot[1][m], _mm256_madd_epi16(_mm256_maddubs_epi16(high_abs, xh), ones));
    }
  }
}

// dot[m] (lane r) = sum_k value[r][k] * xq[m][k] over half h of one unit (both 16s: integer
// sums, so the same as one running sum).
template <class L, int MT>
[[gnu::always_inline]] inline void lookup_dots(const uint8_t* unit, int h, const int8_t* const* xq, __m256i* dot) {
  __m256i halves[2][MT];
  split_value_dots<L, MT>(unit, h, value_table<L>(), xq, halves);
  for (int m = 0; m < MT; ++m) dot[m] = _mm256_add_epi32(halves[0][m], halves[1][m]);
}

// over_tiles for the lookup-table and index families: unit(tile, h, j, xb, acc) for unit j of
// every tile and half (xb: the activations' 32-block).
template <class L, int MT, class F>
[[gnu::always_inline]] inline void over_units(const PackedView& w, int64_t m0, float* out, int64_t ldo, int64_t g0,
                                              int64_t g1, F&& unit) {
  over_tiles<L, MT>(w, m0, out, ldo, g0, g1, [&](const uint8_t* tile, int64_t b, int h, __m256* acc)
                                                 __attribute__((always_inline)) {
    for (int j = 0; j < L::kUnits; ++j) unit(tile, h, j, b * L::kUnits + j, acc);
  });
}

// Activation rows [m0, m0 + MT) x groups [g0, g1): acc += (scale d_x) dot per unit.
template <class L, int MT>
void int8_lookup_rows(const PackedView& w, const Int8View& x, int64_t m0, float* out, int64_t ldo, int64_t g0,
                      int64_t g1) {
  const int64_t xblocks = x.cols / kBlockSize;
  over_units<L, MT>(w, m0, out, ldo, g0, g1, [&](const uint8_t* tile, int h, int j, int64_t xb, __m256* acc)
                                                 __attribute__((always_inline)) {
    const int8_t* xq[MT];
    for (int m = 0; m < MT; ++m) xq[m] = x.q + (m0 + m) * x.cols + xb * kBlockSize;
    __m256i dot[MT];
    lookup_dots<L, MT>(tile + L::kUnitsAt + j * L::Sub::kTileBytes, h, xq, dot);
    const __m256 scale = lookup_scales<L>(tile, h, j);
    for (int m = 0; m < MT; ++m)
      acc[m] = _mm256_fmadd_ps(_mm256_mul_ps(scale, _mm256_set1_ps(x.d[(m0 + m) * xblocks + xb])),
                               _mm256_cvtepi32_ps(dot[m]), acc[m]);
  });
}

// acc[m] += W[:, k] * x[m][k] for the 4 weights k = k0..k0+3 whose signed values are the
// bytes of each lane of v; each weight scale * value is exact (kernel_abi.h). With AddMin,
// W = scale * value + min (one rounding, after the exact product).
template <int MT, bool AddMin = false>
[[gnu::always_inline]] inline void fma_signed_lanes(__m256i v, __m256 scale, const float* const* xb, int k0,
                                                    __m256* acc, __m256 min = _mm256_setzero_ps()) {
  for (int j = 0; j < 4; ++j) {
    const __m256i value = _mm256_srai_epi32(_mm256_slli_epi32(v, 24 - 8 * j), 24);  // byte j, sign-extended
    __m256 wk = _mm256_mul_ps(scale, _mm256_cvtepi32_ps(value));
    if constexpr (AddMin) wk = _mm256_add_ps(wk, min);
    for (int m = 0; m < MT; ++m) acc[m] = _mm256_fmadd_ps(wk, _mm256_set1_ps(xb[m][k0 + j]), acc[m]);
  }
}

template <class L, int MT>
void float_lookup_rows(const PackedView& w, const float* x, int64_t ldx, int64_t m0, float* out, int64_t ldo,
                       int64_t g0, int64_t g1) {
  const __m256i table = value_table<L>();
  over_units<L, MT>(w, m0, out, ldo, g0, g1, [&](const uint8_t* tile, int h, int j, int64_t xb_index, __m256* acc)
                                                 __attribute__((always_inline)) {
    const float* xb[MT];
    for (int m = 0; m < MT; ++m) xb[m] = x + (m0 + m) * ldx + xb_index * kBlockSize;
    const __m256 scale = lookup_scales<L>(tile, h, j);
    const uint8_t* unit = tile + L::kUnitsAt + j * L::Sub::kTileBytes;
    for (int c = 0; c < 4; ++c) {
      __m256i low, high;
      value_chunks<L>(unit, h, c, table, low, high);
      fma_signed_lanes<MT>(low, scale, xb, 4 * c, acc);
      fma_signed_lanes<MT>(high, scale, xb, 16 + 4 * c, acc);
    }
  });
}

// --- kvgen's index types (I4S16, I4S16M): 4-bit indices into the tile's 16 int8 values in
// the lookup types' nibble format, a scale (and min) per 16 weights and row as a float32
// unit per row times an int8 (kernel_abi.h). Unit chunk c's low nibbles are weights 4c..
// (the unit's first 16), its high nibbles weights 16 + 4c.. (its second 16).

// The tile's 16 values in both 128-bit lanes.
template <class L>
[[gnu::always_inline]] inline __m256i index_table(const uint8_t* tile) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(tile + L::kValuesAt)));
}

// Half h's 8 scales of sub-block s (16 weights): unit * sub_s, exact (kernel_abi.h); from the
// min unit and min subs with Min.
template <class L, bool Min = false>
[[gnu::always_inline]] inline __m256 index_scales(const uint8_t* tile, int s, int h) {
  const __m256 unit =
      _mm256_loadu_ps(reinterpret_cast<const float*>(tile + (Min ? L::kMinUnitAt : L::kScaleUnitAt)) + kHalfRows * h);
  return scaled_bytes<true>(tile + (Min ? L::kMinSubsAt : L::kSubsAt) + kGroupRows * s, h, unit);
}

// Activation rows [m0, m0 + MT) x groups [g0, g1): per 16 weights, acc += (scale d_x) dot
// (+ (min d_x) sum of the activations' int8 over those 16, I4S16M).
template <class L, int MT>
void int8_index_rows(const PackedView& w, const Int8View& x, int64_t m0, float* out, int64_t ldo, int64_t g0,
                     int64_t g1) {
  const int64_t xblocks = x.cols / kBlockSize;
  over_units<L, MT>(w, m0, out, ldo, g0, g1, [&](const uint8_t* tile, int h, int j, int64_t xb, __m256* acc)
                                                 __attribute__((always_inline)) {
    const int8_t* xq[MT];
    for (int m = 0; m < MT; ++m) xq[m] = x.q + (m0 + m) * x.cols + xb * kBlockSize;
    __m256i dot[2][MT];  // per 16-weight half of the unit: the low nibbles, the high ones
    split_value_dots<L, MT>(tile + L::kUnitsAt + j * L::Sub::kTileBytes, h, index_table<L>(tile), xq, dot);
    for (int hh = 0; hh < 2; ++hh) {
      const __m256 scale = index_scales<L>(tile, 2 * j + hh, h);
      for (int m = 0; m < MT; ++m) {
        const __m256 dx = _mm256_set1_ps(x.d[(m0 + m) * xblocks + xb]);
        acc[m] = _mm256_fmadd_ps(_mm256_mul_ps(scale, dx), _mm256_cvtepi32_ps(dot[hh][m]), acc[m]);
        if constexpr (L::kHasMin) {
          const __m256 min = index_scales<L, true>(tile, 2 * j + hh, h);
          const auto sum = static_cast<float>(x.half_sums[2 * ((m0 + m) * xblocks + xb) + hh]);
          acc[m] = _mm256_fmadd_ps(_mm256_mul_ps(min, dx), _mm256_set1_ps(sum), acc[m]);
        }
      }
    }
  });
}

template <class L, int MT>
void float_index_rows(const PackedView& w, const float* x, int64_t ldx, int64_t m0, float* out, int64_t ldo,
                      int64_t g0, int64_t g1) {
  over_units<L, MT>(w, m0, out, ldo, g0, g1, [&](const uint8_t* tile, int h, int j, int64_t xb_index, __m256* acc)
                                                 __attribute__((always_inline)) {
    const float* xb[MT];
    for (int m = 0; m < MT; ++m) xb[m] = x + (m0 + m) * ldx + xb_index * kBlockSize;
    const __m256i table = index_table<L>(tile);
    const uint8_t* unit = tile + L::kUnitsAt + j * L::Sub::kTileBytes;
    const __m256 scale_low = index_scales<L>(tile, 2 * j, h), scale_high = index_scales<L>(tile, 2 * j + 1, h);
    __m256 min_low = _mm256_setzero_ps(), min_high = _mm256_setzero_ps();
    if constexpr (L::kHasMin) {
      min_low = index_scales<L, true>(tile, 2 * j, h);
      min_high = index_scales<L, true>(tile, 2 * j + 1, h);
    }
    for (int c = 0; c < 4; ++c) {
      __m256i low, high;
      value_chunks<L>(unit, h, c, table, low, high);
      fma_signed_lanes<MT, L::kHasMin>(low, scale_low, xb, 4 * c, acc, min_low);
      fma_signed_lanes<MT, L::kHasMin>(high, scale_high, xb, 16 + 4 * c, acc, min_high);
    }
  });
}

void whole_matmul_int8(const PackedView& w, const Int8View& x, float* out, int64_t ldo, int64_t g0, int64_t g1);
void whole_matmul_float(const PackedView& w, const float* x, int64_t rows, int64_t ldx, float* out, int64_t ldo,
                        int64_t g0, int64_t g1);

#include "tile_driver.inc"  // with_tile, matmul_int8, matmul_float

// The lookup-table and index families, activation rows in tiles of kMaxTile.
void whole_matmul_int8(const PackedView& w, const Int8View& x, float* out, int64_t ldo, int64_t g0, int64_t g1) {
  with_layout(w.type, [&]<class L>() {
    if constexpr (L::kFamily == Family::Lookup)
      for (int64_t m0 = 0; m0 < x.rows; m0 += kMaxTile)
        with_tile(x.rows - m0, [&]<int MT>() { int8_lookup_rows<L, MT>(w, x, m0, out, ldo, g0, g1); });
    else if constexpr (L::kFamily == Family::Index)
      for (int64_t m0 = 0; m0 < x.rows; m0 += kMaxTile)
        with_tile(x.rows - m0, [&]<int MT>() { int8_index_rows<L, MT>(w, x, m0, out, ldo, g0, g1); });
  });
}

void whole_matmul_float(const PackedView& w, const float* x, int64_t rows, int64_t ldx, float* out, int64_t ldo,
                        int64_t g0, int64_t g1) {
  with_layout(w.type, [&]<class L>() {
    if constexpr (L::kFamily == Family::Lookup)
      for (int64_t m0 = 0; m0 < rows; m0 += kMaxTile)
        with_tile(rows - m0, [&]<int MT>() { float_lookup_rows<L, MT>(w, x, ldx, m0, out, ldo, g0, g1); });
    else if constexpr (L::kFamily == Family::Index)
      for (int64_t m0 = 0; m0 < rows; m0 += kMaxTile)
        with_tile(rows - m0, [&]<int MT>() { float_index_rows<L, MT>(w, x, ldx, m0, out, ldo, g0, g1); });
  });
}

}  // namespace

KernelTable avx2_kernels() { return {matmul_int8, matmul_float, nullptr}; }

}  // namespace kvgen::quant
#endif  // KVGEN_X86_KERNELS
