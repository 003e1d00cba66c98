// A projection's weight matrix W (out, in): float32 as the file stores it (read by
// OpenBLAS), or quantized blocks repacked once at load (kvgen::quant::PackedMatrix, read
// by the quantized kernels; never expanded to float). Products are split into units of 16
// output rows, so that threads can share one product (kvgen/runtime/projector.h).
#pragma once

#include <cstdint>
#include <memory>

#include "kvgen/quant/activations.h"
#include "kvgen/quant/bf16_activations.h"
#include "kvgen/quant/packed_matrix.h"

namespace kvgen {

// What a quantized matrix multiplies (float32, F16 and BF16 weights always meet float
// activations): Int8TwoLevel, int8 per 32-block in two levels, the second quantizing the
// first one's rounding error (projector.h); Int8, one level (llama.cpp's arithmetic);
// Float, float32 activations (transformers' arithmetic on the dequantized weights); Bf16,
// activations and dequantized weights rounded to bfloat16, float32 sums (AVX512_BF16 only:
// quant/bf16_activations.h).
enum class Activations { Int8TwoLevel, Int8, Float, Bf16 };

class LinearWeight {
 public:
  LinearWeight() = default;
  // A float32 W stored (out, in), as torch.nn.Linear stores it (the loaders transpose
  // GPT-2's Conv1D matrices to this layout, so that a thread's rows are contiguous).
  static LinearWeight dense(const float* w, int64_t out, int64_t in);
  // Shared, so that a tied embedding and LM head hold one copy.
  static LinearWeight packed(std::shared_ptr<const quant::PackedMatrix> w);

  int64_t out() const { return out_; }
  int64_t in() const { return in_; }
  bool quantized() const { return packed_ != nullptr; }
  // Whether a product reads int8 activations: quantized weights of a type with an int8
  // kernel (not F16 / BF16), when `activations` is Int8TwoLevel or Int8.
  bool reads_int8(Activations activations) const {
    return (activations == Activations::Int8TwoLevel || activations == Activations::Int8) && quantized_kernel();
  }
  // Whether a product reads bf16 activations: the same weights, when `activations` is Bf16.
  bool reads_bf16(Activations activations) const { return activations == Activations::Bf16 && quantized_kernel(); }
  // Whether a product reads the float32 activations themselves.
  bool reads_float(Activations activations) const { return !reads_int8(activations) && !reads_bf16(activations); }
  // Units of work: 16-row groups of outputs.
  int64_t units() const { return (out_ + 15) / 16; }
  // Bytes of the weights as held in memory.
  int64_t bytes() const;

  // y[m * ldy + n] = sum_k x[m, k] W[n, k] for m < rows and the outputs n of units
  // [u0, u1). x (rows, in), row stride ldx, as float; xq = the same rows quantized (read
  // when reads_int8(activations)).
  void multiply(float* y, int64_t ldy, const float* x, int64_t ldx, const quant::QuantizedActivations* xq,
                int64_t rows, int64_t u0, int64_t u1, Activations activations) const;

  // The same for rows of x quantized in two levels (xq as quantize_two_level left it, 2 rows
  // rows), the levels added inside the kernel; false, writing nothing, where the CPU path
  // has no such kernel (then multiply xq's 2 rows rows and add the halves).
  bool multiply_int8x2(float* y, int64_t ldy, const quant::QuantizedActivations& xq, int64_t u0, int64_t u1) const;

  // The same for bf16 rows (xb as Bf16Activations::convert left it).
  void multiply_bf16(float* y, int64_t ldy, const quant::Bf16Activations& xb, int64_t u0, int64_t u1) const;

  // out (in) = row n of W as float: an embedding lookup reads only the rows it needs.
  void row(int64_t n, float* out) const;

 private:
  bool quantized_kernel() const { return quantized() && quant::has_int8_kernel(packed_->type()); }

  int64_t out_ = 0, in_ = 0;
  const float* dense_ = nullptr;  // (out, in)
  std::shared_ptr<const quant::PackedMatrix> packed_;
};

}  // namespace kvgen
