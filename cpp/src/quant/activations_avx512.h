// AVX-512 quantization of activation blocks (activations_avx512.cpp), bit for bit the
// portable arithmetic of activations.cpp; called only where the CPU has AVX-512.
#pragma once

#include <cstdint>

#include "kvgen/quant/kernel_abi.h"

namespace kvgen::quant {

// Whether this build has the AVX-512 quantizer (x86-64 with GCC or Clang).
bool has_avx512_quantizer();

// Blocks [first, last) of x's rows [0, rows) (block i is block i % (cols / 32) of row
// i / (cols / 32); row stride ldx, `cols` a multiple of 32) into q (rows, cols), d, s
// (rows, cols / 32) and half_sums (rows, cols / 16), as activations.cpp's quantize_block
// does it block by block. With `levels` = 2, also the residual x - d q of each block into
// the same block of rows [rows, 2 rows) of the same buffers, and where `passes` is not null
// both levels of every row into its pass there too (kernel_abi.h's TwoLevelPassBlock).
void quantize_blocks_avx512(const float* x, int64_t rows, int64_t ldx, int64_t cols, int levels, int64_t first,
                            int64_t last, int8_t* q, float* d, float* s, int32_t* half_sums, TwoLevelPassBlock* passes);

}  // namespace kvgen::quant
