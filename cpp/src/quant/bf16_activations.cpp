// bf16 activations: the buffer, the CPU check and the rounding (kernels_bf16.cpp).
#include "kvgen/quant/bf16_activations.h"

#include <string>

#include "kvgen/errors.h"

namespace kvgen::quant {

bool has_bf16_kernels(CpuPath path) { return kernels_for(path).bf16.matmul != nullptr; }

std::string bf16_unavailable_reason(CpuPath path) {
  if (has_bf16_kernels(path)) return "";
  if (!runs_avx512(path))
    return std::string("bf16 activations need the avx512 CPU path (this process runs ") + cpu_path_name(path) + ")";
  return "bf16 activations need a CPU with AVX512_BF16 (vdpbf16ps), which this one lacks";
}

Bf16Activations::Bf16Activations(int64_t max_rows, int64_t cols, CpuPath path)
    : max_rows_(max_rows), cols_(cols), convert_(kernels_for(path).bf16.convert) {
  if (convert_ == nullptr) throw ValueError(bf16_unavailable_reason(path));
  if (max_rows < 0) throw ValueError("activation rows = " + std::to_string(max_rows) + " must be >= 0");
  if (cols <= 0 || cols % kBlockSize != 0)
    throw ValueError("activation width " + std::to_string(cols) + " is not a positive multiple of 32");
  x_.resize(max_rows * cols);
}

void Bf16Activations::convert(const float* x, int64_t rows, int64_t ldx) {
  if (rows < 0 || rows > max_rows_)
    throw ValueError("activation rows = " + std::to_string(rows) + " outside [0, " + std::to_string(max_rows_) + "]");
  if (ldx < cols_) throw ValueError("activation row stride " + std::to_string(ldx) + " < its width " + std::to_string(cols_));
  convert_(x, rows, ldx, cols_, x_.data(), cols_);
  rows_ = rows;
}

}  // namespace kvgen::quant
