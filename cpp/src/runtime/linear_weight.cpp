// Products of one weight matrix over a range of 16-row output groups.
#include "kvgen/runtime/linear_weight.h"

#include <algorithm>
#include <cstring>

#include "kvgen/errors.h"
#include "kvgen/ops/layer_ops.h"
#include "kvgen/quant/matmul.h"

namespace kvgen {

LinearWeight LinearWeight::dense(const float* w, int64_t out, int64_t in) {
  LinearWeight lw;
  lw.out_ = out;
  lw.in_ = in;
  lw.dense_ = w;
  return lw;
}

LinearWeight LinearWeight::packed(std::shared_ptr<const quant::PackedMatrix> w) {
  LinearWeight lw;
  lw.out_ = w->rows();
  lw.in_ = w->cols();
  lw.packed_ = std::move(w);
  return lw;
}

int64_t LinearWeight::bytes() const { return packed_ ? packed_->bytes() : out_ * in_ * 4; }

void LinearWeight::multiply(float* y, int64_t ldy, const float* x, int64_t ldx, const quant::QuantizedActivations* xq,
                            int64_t rows, int64_t u0, int64_t u1, Activations activations) const {
  if (u0 >= u1 || rows == 0) return;
  if (packed_) {
    const quant::CpuPath path = quant::active_cpu_path();
    if (reads_int8(activations))
      quant::matmul_int8(*packed_, *xq, y, ldy, {u0, u1}, path);
    else
      quant::matmul_float(*packed_, x, rows, ldx, y, ldy, {u0, u1}, path);
    return;
  }
  const int64_t n0 = 16 * u0, n1 = std::min(out_, 16 * u1);
  // rows n0..n1 of W (out, in): one contiguous stretch of memory
  ops::matmul(y + n0, x, dense_ + n0 * in_, rows, n1 - n0, in_, /*b_transposed=*/true, /*accumulate=*/false,
              /*lda=*/ldx, /*ldb=*/in_, /*ldc=*/ldy);
}

bool LinearWeight::multiply_int8x2(float* y, int64_t ldy, const quant::QuantizedActivations& xq, int64_t u0,
                                   int64_t u1) const {
  if (!reads_int8(Activations::Int8TwoLevel)) return false;
  if (u0 >= u1 || xq.view().rows == 0) return true;
  return quant::matmul_int8x2(*packed_, xq, y, ldy, {u0, u1}, quant::active_cpu_path());
}

void LinearWeight::multiply_bf16(float* y, int64_t ldy, const quant::Bf16Activations& xb, int64_t u0,
                                 int64_t u1) const {
  if (!reads_bf16(Activations::Bf16)) throw ValueError("bf16 activations meet only quantized weights");
  if (u0 >= u1 || xb.view().rows == 0) return;
  quant::matmul_bf16(*packed_, xb, y, ldy, {u0, u1}, quant::active_cpu_path());
}

void LinearWeight::row(int64_t n, float* out) const {
  if (n < 0 || n >= out_) throw ValueError("row " + std::to_string(n) + " is outside [0, " + std::to_string(out_) + ")");
  if (packed_) return packed_->dequantize_row(n, out);
  std::memcpy(out, dense_ + n * in_, sizeof(float) * in_);
}

}  // namespace kvgen
