// Argument checks, then the kernels of the chosen CPU path.
#include "kvgen/quant/matmul.h"

#include <algorithm>
#include <string>

#include "kvgen/errors.h"

namespace kvgen::quant {

namespace {

void check_output(const PackedMatrix& w, int64_t ldo, GroupRange groups) {
  if (groups.first < 0 || groups.first > groups.last || groups.last > w.groups())
    throw ValueError("row groups [" + std::to_string(groups.first) + ", " + std::to_string(groups.last) +
                     ") are not within [0, " + std::to_string(w.groups()) + "]");
  if (ldo < w.rows())
    throw ValueError("output row stride " + std::to_string(ldo) + " < the matrix's rows " + std::to_string(w.rows()));
}

}  // namespace

void check_int8_kernel(QuantType type) {
  if (!has_int8_kernel(type))
    throw ValueError(std::string(quant_type_name(type)) + " weights have no int8-activation kernel; use matmul_float");
}

void matmul_int8(const PackedMatrix& w, const QuantizedActivations& x, float* out, int64_t ldo, GroupRange groups,
                 CpuPath path) {
  check_int8_kernel(w.type());
  if (x.cols() != w.cols())
    throw ValueError("activations have " + std::to_string(x.cols()) + " columns, the matrix " + std::to_string(w.cols()));
  check_output(w, ldo, groups);
  kernels_for(path).matmul_int8(w.view(), x.view(), out, ldo, groups.first, groups.last);
}

bool has_int8x2_kernels(CpuPath path) { return kernels_for(path).matmul_int8x2 != nullptr; }

bool matmul_int8x2(const PackedMatrix& w, const QuantizedActivations& x, float* out, int64_t ldo, GroupRange groups,
                   CpuPath path) {
  check_int8_kernel(w.type());
  if (x.cols() != w.cols())
    throw ValueError("activations have " + std::to_string(x.cols()) + " columns, the matrix " + std::to_string(w.cols()));
  check_output(w, ldo, groups);
  const MatmulInt8x2Fn kernel = kernels_for(path).matmul_int8x2;
  return kernel != nullptr && kernel(w.view(), x.view(), out, ldo, groups.first, groups.last);
}

void matmul_bf16(const PackedMatrix& w, const Bf16Activations& x, float* out, int64_t ldo, GroupRange groups,
                 CpuPath path) {
  check_int8_kernel(w.type());  // the same types: F16 / BF16 weights meet float activations
  if (x.cols() != w.cols())
    throw ValueError("activations have " + std::to_string(x.cols()) + " columns, the matrix " + std::to_string(w.cols()));
  check_output(w, ldo, groups);
  const MatmulBf16Fn kernel = kernels_for(path).bf16.matmul;
  if (kernel == nullptr) throw ValueError(bf16_unavailable_reason(path));
  kernel(w.view(), x.view(), out, ldo, groups.first, groups.last);
}

void matmul_float(const PackedMatrix& w, const float* x, int64_t rows, int64_t ldx, float* out, int64_t ldo,
                  GroupRange groups, CpuPath path) {
  if (rows < 0) throw ValueError("activation rows = " + std::to_string(rows) + " must be >= 0");
  if (ldx < w.cols())
    throw ValueError("activation row stride " + std::to_string(ldx) + " < the matrix's cols " + std::to_string(w.cols()));
  check_output(w, ldo, groups);
  kernels_for(path).matmul_float(w.view(), x, rows, ldx, out, ldo, groups.first, groups.last);
}

}  // namespace kvgen::quant
