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

// One tile = 16 rows x one 32-weight block, stored as
//   scales  16 x fp16 (32 B)                 d of each row
//   mins    16 x fp16 (32 B, *_1 types)      m of each row
//   masks    8 x uint64 (64 B, Q5 types)     5th bits: bit 4r+j of mask c = bit of weight 4c+j of row r
//   quants  256 B (4/5-bit) or 512 B (8-bit) 32-bit lane r of each 64-byte chunk = 4 weights of row r
// 4/5-bit chunk c (0..3), byte 4r+j: low nibble = weight 4c+j, high nibble = weight 4c+16+j
// (the file's own nibble order). 8-bit chunk c (0..7), byte 4r+j: weight 4c+j as q + 128.
// The stored quant u is unsigned; w = d * u + min, where min is m (*_1 types) or
// kOffset * d (Q4_0: -8, Q5_0: -16, Q8_0: -128). Tiles are exactly 16 file blocks in size.
template <int Bits, bool HasMin, int Offset>
struct TileLayout {
  static constexpr int kBits = Bits;
  static constexpr bool kHasMin = HasMin;
  static constexpr int kOffset = Offset;  // min = kOffset * d when !kHasMin
  static constexpr int64_t kScalesAt = 0;
  static constexpr int64_t kMinsAt = 2 * kGroupRows;
  static constexpr int64_t kMasksAt = kMinsAt + (HasMin ? 2 * kGroupRows : 0);
  static constexpr int64_t kQuantsAt = kMasksAt + (Bits == 5 ? 8 * 8 : 0);
  static constexpr int64_t kTileBytes = kQuantsAt + (Bits == 8 ? 512 : 256);
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
  }
}

// A packed [rows, cols] weight matrix: groups x blocks tiles, group-major (the tiles of
// one 16-row group are one contiguous stream).
struct PackedView {
  const uint8_t* data;
  QuantType type;
  int64_t rows;    // N
  int64_t cols;    // K, a multiple of 32
  int64_t blocks;  // K / 32
  int64_t groups;  // ceil(N / 16)
};

// Activations quantized per 32-block (llama.cpp's Q8_1): x ~ d * q, s = d * sum(q).
struct Int8View {
  const int8_t* q;  // (rows, cols)
  const float* d;   // (rows, blocks)
  const float* s;   // (rows, blocks)
  int64_t rows;     // M
  int64_t cols;     // K
};

// out[m * ldo + n] = sum_k x[m, k] * W[n, k] for the rows n of groups [g0, g1).
using MatmulInt8Fn = void (*)(const PackedView& w, const Int8View& x, float* out, int64_t ldo, int64_t g0,
                              int64_t g1);
using MatmulFloatFn = void (*)(const PackedView& w, const float* x, int64_t rows, int64_t ldx, float* out,
                               int64_t ldo, int64_t g0, int64_t g1);

struct KernelTable {
  MatmulInt8Fn matmul_int8;    // int8 activations (the fast path)
  MatmulFloatFn matmul_float;  // float activations, weights dequantized block by block
};

// One table per translation unit; call only what the CPU supports (dispatch.h decides).
KernelTable portable_kernels();
KernelTable avx2_kernels();
KernelTable avx512_kernels();

}  // namespace kvgen::quant
