// out (M, N) = x (M, K) @ W^T for a packed quantized W (N, K), over a range of 16-row
// groups so that threads can split a product; each weight tile is read once for up to
// 16 (AVX-512) or 4 (AVX2) activation rows. No allocation.
#pragma once

#include <cstdint>

#include "kvgen/quant/activations.h"
#include "kvgen/quant/bf16_activations.h"
#include "kvgen/quant/dispatch.h"
#include "kvgen/quant/packed_matrix.h"

namespace kvgen::quant {

// Output rows [16 * first, min(N, 16 * last)) of the product; the others are not written.
struct GroupRange {
  int64_t first;
  int64_t last;
};

// The whole matrix.
inline GroupRange all_groups(const PackedMatrix& w) { return {0, w.groups()}; }

// ValueError "<type> weights have no int8-activation kernel; use matmul_float" for the
// types without one (has_int8_kernel).
void check_int8_kernel(QuantType type);

// Int8 activations (x as quantized last): out[m * ldo + n] = sum_k x[m, k] * W[n, k].
// ValueError if W's type has no int8 kernel (F16, BF16: has_int8_kernel), x.cols() != K,
// ldo < N or the range is not within [0, groups].
void matmul_int8(const PackedMatrix& w, const QuantizedActivations& x, float* out, int64_t ldo, GroupRange groups,
                 CpuPath path);

// Two-level activations (x as quantize_two_level left it: x.rows() = 2 M): out[m * ldo + n]
// for m < M, the levels added inside the kernel (kernel_abi.h, MatmulInt8x2Fn). Returns
// false, writing nothing, where `path` has no such kernel for W's type (then multiply all
// 2 M rows with matmul_int8 and add the halves). The same ValueErrors as matmul_int8.
// Whether `path` has two-level kernels (AVX-512: for every type with an int8 kernel).
bool has_int8x2_kernels(CpuPath path);

bool matmul_int8x2(const PackedMatrix& w, const QuantizedActivations& x, float* out, int64_t ldo, GroupRange groups,
                   CpuPath path);

// bf16 activations x (rows, K): out = x @ bf16(W)^T, float32 sums (kernels_bf16.cpp).
// ValueError as matmul_int8's, or where `path` has no bf16 kernels (has_bf16_kernels).
void matmul_bf16(const PackedMatrix& w, const Bf16Activations& x, float* out, int64_t ldo, GroupRange groups,
                 CpuPath path);

// Float activations x (rows, K), row stride ldx: "exact" mode, float32 products of the
// file's weights (dequantized tile by tile in registers) and x.
void matmul_float(const PackedMatrix& w, const float* x, int64_t rows, int64_t ldx, float* out, int64_t ldo,
                  GroupRange groups, CpuPath path);

}  // namespace kvgen::quant
