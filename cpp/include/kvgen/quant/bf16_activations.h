// Activations rounded to bfloat16 (Projector's activations "bf16"), once per input and
// shared by every product that reads it, as QuantizedActivations for int8.
#pragma once

#include <cstdint>
#include <vector>

#include "kvgen/quant/dispatch.h"
#include "kvgen/quant/kernel_abi.h"

namespace kvgen::quant {

// Whether `path` has bf16 kernels: the AVX-512 path on a CPU with AVX512_BF16.
bool has_bf16_kernels(CpuPath path);

// Why bf16 activations cannot run on `path` ("" where they can): for error messages and
// `kvgen info`.
std::string bf16_unavailable_reason(CpuPath path);

class Bf16Activations {
 public:
  // Room for up to max_rows rows of `cols` values (a positive multiple of 32), allocated
  // here once. ValueError if `path` has no bf16 kernels (bf16_unavailable_reason).
  Bf16Activations(int64_t max_rows, int64_t cols, CpuPath path = active_cpu_path());

  // Rounds x (rows <= max_rows, cols), row stride ldx, to bf16 (nearest even).
  void convert(const float* x, int64_t rows, int64_t ldx);
  int64_t max_rows() const { return max_rows_; }
  int64_t cols() const { return cols_; }
  // The rows converted last.
  Bf16View view() const { return {x_.data(), rows_, cols_, cols_}; }

 private:
  int64_t max_rows_, cols_, rows_ = 0;
  ToBf16Fn convert_;
  std::vector<uint16_t> x_;  // (max_rows, cols)
};

}  // namespace kvgen::quant
