// What the per-CPU kernel files share: the packed tile layout (as compile-time constants),
// plain views of the operands and the table of kernel entry points. The SIMD files are
// compiled with instruction-set flags, so this header holds no out-of-line code: an inline
// function compiled there could be picked by the linker for callers on any CPU.
#pragma once

#include <cstdint>

#include "kvgen/quant/quant_type.h"

namespace kvgen::quant {

// Output rows interleaved per tile: one 512-bit register holds one float per row.
inline constexpr int64_t kGroupRows = 16;

// How a type's tiles are built: kernels and packing branch on it at compile time.
enum class Family { Block, Super, Dense, Lookup, Index };

// One tile = 16 rows x one 32-weight block, stored as
//   scales  16 x fp16 (32 B)                 d of each row
//   mins    16 x fp16 (32 B, *_1 types)      m of each row
//   high    64 B (Q5 types)                  a high-bit plane: the 5th bits (below)
//   quants  256 B (4/5-bit) or 512 B (8-bit) 32-bit lane r of each 64-byte chunk = 4 weights of row r
// 4/5-bit chunk c (0..3), byte 4r+j: low nibble = weight 4c+j, high nibble = weight 4c+16+j
// (the file's own nibble order). 8-bit chunk c (0..7), byte 4r+j: weight 4c+j as q + 128.
// High-bit planes (5- and 6-bit quants, E = bits - 4 planes of 64 B): call the nibbles
// "vector v" (0..7): v < 4 the low nibbles of chunk v, v >= 4 the high nibbles of chunk
// v - 4, so byte 4r+j of vector v is weight 4v+j of row r. Byte 4r+j of plane p holds the
// bits above the nibble of that byte in the 8 / E vectors v = p * 8/E + i, at bits
// E*i..E*i+E-1. One shift and a mask put a vector's high bits in place (bits 4..).
// The stored quant u is unsigned; w = d * u + min, where min is m (*_1 types) or
// kOffset * d (Q4_0: -8, Q5_0: -16, Q8_0: -128). Tiles are exactly 16 file blocks in size.
template <int Bits, bool HasMin, int Offset>
struct TileLayout {
  static constexpr Family kFamily = Family::Block;
  static constexpr int kBits = Bits;
  static constexpr bool kHasMin = HasMin;
  static constexpr int kOffset = Offset;  // min = kOffset * d when !kHasMin
  static constexpr int64_t kScalesAt = 0;
  static constexpr int64_t kMinsAt = 2 * kGroupRows;
  static constexpr int kExtraBits = Bits == 5 ? 1 : 0;  // high-bit planes
  static constexpr int64_t kHighBitsAt = kMinsAt + (HasMin ? 2 * kGroupRows : 0);
  static constexpr int64_t kQuantsAt = kHighBitsAt + 64 * kExtraBits;
  static constexpr int64_t kTileBytes = kQuantsAt + (Bits == 8 ? 512 : 256);
};

// The quants of one 32-weight sub-block of a K-quant tile, in the formats above: Bits - 4
// high-bit planes (none, one: 5th bits, or two: 5th and 6th bits), then 256 B of nibbles.
// The stored quant u is unsigned (0..63).
template <int Bits>
struct SubTileLayout {
  static constexpr int kBits = Bits;
  static constexpr int kExtraBits = Bits - 4;
  static constexpr int64_t kHighBitsAt = 0;
  static constexpr int64_t kQuantsAt = 64 * kExtraBits;
  static constexpr int64_t kTileBytes = kQuantsAt + 256;
};

// One K-quant tile = 16 rows x one 256-weight super-block, its scales decoded at repack:
//   d       16 x fp16 (32 B)                  super-block scale of each row
//   dmin    16 x fp16 (32 B, Q4_K/Q5_K)       super-block min scale of each row
//   scales  kScaleCount x 16 bytes            byte 16j + r = sc_j of row r (uint8; Q6_K: int8)
//   mins    8 x 16 bytes (Q4_K/Q5_K)          byte 16j + r = m_j of row r (uint8)
//   8 sub-tiles (SubTileLayout), sub-block j = weights 32j..32j+31 of the super-block.
// Q4_K/Q5_K: w = (d sc_j) u - (dmin m_j), sc_j and m_j 6-bit, a scale per 32 weights.
// Q6_K: w = (d sc_j) (u - 32), a scale per 16 weights: sub-tile j's low nibbles use
// sc_2j, its high nibbles sc_2j+1. Sizes (file: 16 blocks): Q4_K 2368 B (2304), Q5_K
// 2880 B (2816), Q6_K 3360 B (3360).
template <int Bits>
struct SuperLayout {
  static constexpr Family kFamily = Family::Super;
  static constexpr int kBits = Bits;
  static constexpr bool kHasMin = Bits != 6;
  static constexpr int kSubBlocks = 8;  // 32-weight sub-blocks (the activations' blocks)
  static constexpr int kScaleCount = Bits == 6 ? 16 : 8;
  static constexpr int64_t kDAt = 0;
  static constexpr int64_t kDminAt = 2 * kGroupRows;
  static constexpr int64_t kScalesAt = kHasMin ? 4 * kGroupRows : 2 * kGroupRows;
  static constexpr int64_t kMinsAt = kScalesAt + kGroupRows * kScaleCount;
  static constexpr int64_t kSubTilesAt = kMinsAt + (kHasMin ? kGroupRows * kSubBlocks : 0);
  using Sub = SubTileLayout<Bits>;
  static constexpr int64_t kTileBytes = kSubTilesAt + kSubBlocks * Sub::kTileBytes;
};

// One dense tile = 16 rows x one column: 16 x fp16 or bf16 (32 B), row r at 2r, so one
// load converts to the column's 16 weights. Exactly the file's bytes.
template <bool Brain>
struct DenseLayout {
  static constexpr Family kFamily = Family::Dense;
  static constexpr bool kBrainFloat = Brain;  // bf16: the high half of a float32
  static constexpr int64_t kTileBytes = 2 * kGroupRows;
};

// How a lookup-table tile stores its per-row scales.
enum class ScaleKind {
  Half,  // fp16 d (IQ4_NL, IQ4_XS)
  E8M0,  // one byte e: 2^(e - 128) as gguf's e8m0_to_fp32_half reads it (e < 2: the float32
         // subnormals 2^-128, 2^-127) (MXFP4)
};

// The 16 values a lookup type's 4-bit index selects, as the formats define them.
// IQ4_NL / IQ4_XS: the non-linear grid of llama.cpp's IQ4_NL format (gguf-py's
// gguf.quants.IQ4_NL.kvalues; the tests check every entry against it).
inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
// MXFP4: the OCP Microscaling spec's E2M1 code points (sign, 2-bit exponent, 1-bit
// mantissa: 0, 0.5, 1, 1.5, 2, 3, 4, 6), doubled to integers; the scale is halved to match.
inline constexpr int8_t kE2m1Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// One lookup-table tile = 16 rows x (Super ? 256 : 32) weights, as units of 32 weights
// (the activations' blocks), every unit's quants in the 4-bit nibble format of TileLayout
// (SubTileLayout<4>: 256 B, byte 4r+j of chunk c = weights 4c+j (low nibble) and 4c+16+j
// (high nibble) of row r, the file's own nibble order), each nibble an index into kValues:
//   scales   16 x fp16 (32 B) or 16 x E8M0 (16 B)    d of each row
//   sub      8 x 16 int8 (Super only)                byte 16j + r = ls_j - 32 of row r
//   units    kUnits x 256 B
// w = d * value[u] (Super: (d * (ls_j - 32)) * value[u]); both products are exact in
// float32 (11 + 6 + 7 significant bits at most), so every weight is gguf's value. Sizes:
// IQ4_NL 288 B and MXFP4 272 B (16 file blocks), IQ4_XS 2208 B (file: 2176).
template <ScaleKind Scale, bool Super, const int8_t* Values>
struct LookupLayout {
  static constexpr Family kFamily = Family::Lookup;
  static constexpr ScaleKind kScale = Scale;
  static constexpr bool kSuper = Super;
  static constexpr const int8_t* kValues = Values;
  static constexpr int kUnits = Super ? 8 : 1;
  static constexpr int64_t kScalesAt = 0;
  static constexpr int64_t kSubScalesAt = Scale == ScaleKind::Half ? 2 * kGroupRows : kGroupRows;
  static constexpr int64_t kUnitsAt = kSubScalesAt + (Super ? kGroupRows * kUnits : 0);
  using Sub = SubTileLayout<4>;
  static constexpr int64_t kTileBytes = kUnitsAt + kUnits * Sub::kTileBytes;
};

// One kvgen index tile (I4S16, I4S16M) = 16 rows x one 256-weight block, every row's q a
// 4-bit index into the tile's 16 values (the tensor's table: the loader gives each block the
// same one, and PackedMatrix refuses a matrix whose blocks differ):
//   values     16 int8 (16 B)                        the table
//   unit       16 x float32 (64 B)                   the scale unit of each row
//   sub        16 x 16 int8 (256 B)                  byte 16s + r = sub_s of row r
//   min unit   16 x float32 (64 B, I4S16M)           likewise for the min
//   min sub    16 x 16 int8 (256 B, I4S16M)
//   units      8 x 256 B                              unit j = weights 32j..32j+31, in the
//                                                     4-bit nibble format of SubTileLayout<4>
// w = (unit * sub_s) * value[u] (+ min_unit * min_sub_s) for weight 16s + i: unit * sub_s is
// exact for every type the loader produces (a fp16 scale times a power of two, times at
// most 5 bits), and so is its product with a value (at most 7 bits), so the one rounding
// is gguf's + min. Sizes (file: 16 blocks): I4S16 2384 B (4.66 bits a weight), I4S16M
// 2704 B (5.28).
template <bool HasMin>
struct IndexLayout {
  static constexpr Family kFamily = Family::Index;
  static constexpr bool kHasMin = HasMin;
  static constexpr int kUnits = 8;
  static constexpr int64_t kValuesAt = 0;
  static constexpr int64_t kScaleUnitAt = 16;
  static constexpr int64_t kSubsAt = kScaleUnitAt + 4 * kGroupRows;
  static constexpr int64_t kMinUnitAt = kSubsAt + 16 * kGroupRows;
  static constexpr int64_t kMinSubsAt = kMinUnitAt + 4 * kGroupRows;
  static constexpr int64_t kUnitsAt = HasMin ? kMinSubsAt + 16 * kGroupRows : kMinUnitAt;
  using Sub = SubTileLayout<4>;
  static constexpr int64_t kTileBytes = kUnitsAt + kUnits * Sub::kTileBytes;
};

template <QuantType T>
struct Layout;
template <>
struct Layout<QuantType::Q8_0> : TileLayout<8, false, -128> {};
template <>
struct Layout<QuantType::Q4_0> : TileLayout<4, false, -8> {};
template <>
struct Layout<QuantType::Q4_1> : TileLayout<4, true, 0> {};
template <>
struct Layout<QuantType::Q5_0> : TileLayout<5, false, -16> {};
template <>
struct Layout<QuantType::Q5_1> : TileLayout<5, true, 0> {};
template <>
struct Layout<QuantType::Q4_K> : SuperLayout<4> {};
template <>
struct Layout<QuantType::Q5_K> : SuperLayout<5> {};
template <>
struct Layout<QuantType::Q6_K> : SuperLayout<6> {};
template <>
struct Layout<QuantType::F16> : DenseLayout<false> {};
template <>
struct Layout<QuantType::BF16> : DenseLayout<true> {};
template <>
struct Layout<QuantType::IQ4_NL> : LookupLayout<ScaleKind::Half, false, kIq4Values> {};
template <>
struct Layout<QuantType::IQ4_XS> : LookupLayout<ScaleKind::Half, true, kIq4Values> {};
template <>
struct Layout<QuantType::MXFP4> : LookupLayout<ScaleKind::E8M0, false, kE2m1Values> {};
template <>
struct Layout<QuantType::I4S16> : IndexLayout<false> {};
template <>
struct Layout<QuantType::I4S16M> : IndexLayout<true> {};

// Calls f.template operator()<Layout<type>>(). Only ever instantiated with a lambda local
// to one file, so each instantiation is private to the file (and its instruction set).
template <class F>
void with_layout(QuantType type, F&& f) {
  switch (type) {
    case QuantType::Q8_0: f.template operator()<Layout<QuantType::Q8_0>>(); break;
    case QuantType::Q4_0: f.template operator()<Layout<QuantType::Q4_0>>(); break;
    case QuantType::Q4_1: f.template operator()<Layout<QuantType::Q4_1>>(); break;
    case QuantType::Q5_0: f.template operator()<Layout<QuantType::Q5_0>>(); break;
    case QuantType::Q5_1: f.template operator()<Layout<QuantType::Q5_1>>(); break;
    case QuantType::Q4_K: f.template operator()<Layout<QuantType::Q4_K>>(); break;
    case QuantType::Q5_K: f.template operator()<Layout<QuantType::Q5_K>>(); break;
    case QuantType::Q6_K: f.template operator()<Layout<QuantType::Q6_K>>(); break;
    case QuantType::F16: f.template operator()<Layout<QuantType::F16>>(); break;
    case QuantType::BF16: f.template operator()<Layout<QuantType::BF16>>(); break;
    case QuantType::IQ4_NL: f.template operator()<Layout<QuantType::IQ4_NL>>(); break;
    case QuantType::IQ4_XS: f.template operator()<Layout<QuantType::IQ4_XS>>(); break;
    case QuantType::MXFP4: f.template operator()<Layout<QuantType::MXFP4>>(); break;
    case QuantType::I4S16: f.template operator()<Layout<QuantType::I4S16>>(); break;
    case QuantType::I4S16M: f.template operator()<Layout<QuantType::I4S16M>>(); break;
  }
}

// A packed [rows, cols] weight matrix: groups x blocks tiles, group-major (the tiles of
// one 16-row group are one contiguous stream).
struct PackedView {
  const uint8_t* data;
  QuantType type;
  int64_t rows;    // N
  int64_t cols;    // K, a multiple of block_weights(type)
  int64_t blocks;  // tiles per group: K / block_weights(type)
  int64_t groups;  // ceil(N / 16)
};

// Two-level activations: the second level's scale is the first's / 2^kSecondLevelShift, so
// that a kernel adds the levels' int32 dots as 2^8 dot1 + dot2 before one conversion.
inline constexpr int kSecondLevelShift = 8;

// Batch rows of a two-level product's pass (the AVX-512 kernels' 8-row passes).
inline constexpr int kTwoLevelPassRows = 8;

// One activation block of a pass's rows (up to kTwoLevelPassRows) in both levels, side by
// side, as the AVX-512 two-level kernels read them: the quants (level one of row r at r, its
// residual at kTwoLevelPassRows + r), each row's second scale d2 = d1 / 2^kSecondLevelShift
// (the scale of 2^8 dot1 + dot2), its levels' sum s1 + s2 (added as every kernel adds them),
// and per half of the block its levels' integer sums of q combined as the dots are,
// 2^8 hs1 + hs2 (Q6_K's offset of 32). A pass of fewer rows leaves the others unset. The
// quantizer writes every two-level input of two rows or more in this layout too (block b of
// pass p at p * blocks + b), so that a product's work items do not each gather it.
struct alignas(64) TwoLevelPassBlock {
  int8_t rows[2 * kTwoLevelPassRows][kBlockSize];
  float d2[kTwoLevelPassRows];
  float s[kTwoLevelPassRows];
  int32_t half_sums[kTwoLevelPassRows][2];
};

// Activations quantized per 32-block (llama.cpp's Q8_1): x ~ d * q, s = d * sum(q).
struct Int8View {
  const int8_t* q;  // (rows, cols)
  const float* d;   // (rows, blocks)
  const float* s;   // (rows, blocks)
  const int32_t* half_sums;  // (rows, cols / 16): sum of q over each 16 values (Q6_K's scale groups)
  int64_t rows;     // M
  int64_t cols;     // K
  // Two-level rows only, where the quantizer wrote them (else null): rows [0, M) of both
  // levels in passes of kTwoLevelPassRows, ceil(M / kTwoLevelPassRows) passes of cols / 32
  // blocks (the last holds the M % kTwoLevelPassRows rows left, where there are any).
  const TwoLevelPassBlock* passes = nullptr;
};

// out[m * ldo + n] = sum_k x[m, k] * W[n, k] for the rows n of groups [g0, g1).
using MatmulInt8Fn = void (*)(const PackedView& w, const Int8View& x, float* out, int64_t ldo, int64_t g0,
                              int64_t g1);
using MatmulFloatFn = void (*)(const PackedView& w, const float* x, int64_t rows, int64_t ldx, float* out,
                               int64_t ldo, int64_t g0, int64_t g1);

// Two-level activations (QuantizedActivations::quantize_two_level: x.rows = 2 M, rows [0, M)
// the first level, [M, 2 M) the residual): out[m * ldo + n] for m < M, each row's levels
// added per block before the weights' scale (d1 dot1 + d2 dot2), so that a batch row
// costs one fold, and no (2 M, N) halves are written and added.
// Returns false, writing nothing, for a type this path has no such kernel for.
using MatmulInt8x2Fn = bool (*)(const PackedView& w, const Int8View& x, float* out, int64_t ldo, int64_t g0,
                                int64_t g1);

// Activations rounded to bfloat16: row m's value k at x[m * ldx + k] (the high half of the
// float32, rounded to nearest even).
struct Bf16View {
  const uint16_t* x;
  int64_t rows;  // M
  int64_t cols;  // K
  int64_t ldx;
};

// out[m * ldo + n] = sum_k x[m, k] * bf16(W[n, k]) in float32 for the rows n of groups
// [g0, g1) (kernels_bf16.cpp says how, and that a row's result is independent of the others).
using MatmulBf16Fn = void (*)(const PackedView& w, const Bf16View& x, float* out, int64_t ldo, int64_t g0,
                              int64_t g1);
// out (rows, cols; row stride ldo) = x (rows, cols; row stride ldx) rounded to bf16, nearest
// even; cols a multiple of 32.
using ToBf16Fn = void (*)(const float* x, int64_t rows, int64_t ldx, int64_t cols, uint16_t* out, int64_t ldo);

struct Bf16Kernels {
  MatmulBf16Fn matmul = nullptr;
  ToBf16Fn convert = nullptr;
};

struct KernelTable {
  MatmulInt8Fn matmul_int8;      // int8 activations (the fast path; not for has_int8_kernel() == false)
  MatmulFloatFn matmul_float;    // float activations, weights dequantized block by block
  MatmulInt8x2Fn matmul_int8x2;  // two-level int8 activations in one pass; null where a path has none
  Bf16Kernels bf16 = {};         // bf16 activations: only the AVX-512 path, on a CPU with AVX512_BF16
};

// The AVX2 / AVX-512 tables exist on x86 with GCC or Clang (cpuid through
// __builtin_cpu_supports); elsewhere (aarch64, MSVC) only the portable one does.
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define KVGEN_X86_KERNELS 1
#else
#define KVGEN_X86_KERNELS 0
#endif

// One table per translation unit; call only what the CPU supports (dispatch.h decides).
KernelTable portable_kernels();
KernelTable avx2_kernels();
KernelTable avx512_kernels();
KernelTable amx_kernels();  // avx512_kernels() with the AMX-INT8 two-level products of several rows
// Whether amx_kernels' products use the tiles (true) or VNNI's kernels (false), process-wide and
// at once: the outputs are the same bit for bit, so a benchmark compares both in one process.
void set_amx_tiles(bool on);
// How many calls of amx_kernels' two-level product took the tiles (so that a test knows they ran).
uint64_t amx_tile_products();
Bf16Kernels bf16_kernels();  // AVX512_BF16
Bf16Kernels amx_bf16_kernels();  // AMX-BF16 tiles (and AVX512_BF16's conversion)

}  // namespace kvgen::quant
