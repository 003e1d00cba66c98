// Per-block int8 quantization of activations (llama.cpp's quantize_row_q8_1 arithmetic).
#include "kvgen/quant/activations.h"

#include <cmath>
#include <cstring>
#include <string>

#include "kvgen/errors.h"
#include "kvgen/limits.h"
#include "activations_avx512.h"

namespace kvgen::quant {

namespace {

// One 32-value block quantized with the scale d (finite, >= 0): q = round(x / d) clamped to
// +-127, s = d * sum(q), and the sums of q over its two halves. Written so that the compiler
// vectorizes it with baseline SSE2 (this file gets no -m flags): no libm calls, no float
// reductions (whose order the compiler may not change), rounding by truncation of |v| + 0.5
// (half away from zero, as roundf; exactly the simulation in the tests).
void quantize_with_scale(const float* x, float d, int8_t* q, float* s_out, int32_t* half_sums) {
  const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
  int32_t sums[2] = {0, 0};
  for (int half = 0; half < 2; ++half) {
    int32_t sum = 0;
    for (int k = 16 * half; k < 16 * half + 16; ++k) {
      const float v = x[k] * inverse;
      int magnitude = static_cast<int>(std::fabs(v) + 0.5f);  // |v| <= 127 (128 for a residual) up to rounding
      magnitude = magnitude < 127 ? magnitude : 127;
      const int value = v < 0.0f ? -magnitude : magnitude;
      q[k] = static_cast<int8_t>(value);
      sum += value;
    }
    sums[half] = sum;
  }
  *s_out = d * static_cast<float>(sums[0] + sums[1]);
  half_sums[0] = sums[0];
  half_sums[1] = sums[1];
}

// A block that holds NaN or inf (or the residual of one): d = s = NaN and q = 0, so the
// products of its row are NaN rather than garbage.
void non_finite_block(int8_t* q, float* d_out, float* s_out, int32_t* half_sums) {
  for (int k = 0; k < kBlockSize; ++k) q[k] = 0;
  *d_out = *s_out = std::nanf("");
  half_sums[0] = half_sums[1] = 0;
}

// One 32-value block: d = max|x| / 127 and the rest as quantize_with_scale. max|x| is taken
// on the bit patterns: for floats with the sign bit cleared the integer order is the float
// order, and a pattern at or above infinity's is inf or NaN.
void quantize_block(const float* x, int8_t* q, float* d_out, float* s_out, int32_t* half_sums) {
  constexpr uint32_t kInfinityBits = 0x7F800000u;
  uint32_t bits[kBlockSize];
  std::memcpy(bits, x, sizeof(bits));
  uint32_t amax_bits = 0;
  for (int k = 0; k < kBlockSize; ++k) {
    const uint32_t a = bits[k] & 0x7FFFFFFFu;
    amax_bits = a > amax_bits ? a : amax_bits;
  }
  if (amax_bits >= kInfinityBits) return non_finite_block(q, d_out, s_out, half_sums);
  float amax;
  std::memcpy(&amax, &amax_bits, sizeof(amax));
  *d_out = amax / 127.0f;
  quantize_with_scale(x, *d_out, q, s_out, half_sums);
}

// The second level of a block whose first level has scale d1 and quants q1: the residual
// x - d1 q1 (its product and difference rounded apart) with the fixed scale d1 / 256.
void quantize_residual(const float* x, float d1, const int8_t* q1, int8_t* q, float* d_out, float* s_out,
                       int32_t* half_sums) {
  if (d1 != d1) return non_finite_block(q, d_out, s_out, half_sums);
  float residual[kBlockSize];
  for (int k = 0; k < kBlockSize; ++k) residual[k] = x[k] - d1 * static_cast<float>(q1[k]);
  *d_out = d1 * (1.0f / (1 << kSecondLevelShift));
  quantize_with_scale(residual, *d_out, q, s_out, half_sums);
}

}  // namespace

QuantizedActivations::QuantizedActivations(int64_t max_rows, int64_t cols, CpuPath path)
    : max_rows_(max_rows), cols_(cols), avx512_(runs_avx512(path) && has_avx512_quantizer()) {
  if (max_rows < 1) throw ValueError("activations: max_rows = " + std::to_string(max_rows) + " must be >= 1");
  if (cols < kBlockSize || cols % kBlockSize != 0)
    throw ValueError("activations: cols = " + std::to_string(cols) + " must be a positive multiple of 32");
  limits::check_at_most("activations max_rows", max_rows, limits::kMaxRows);
  limits::check_at_most("activations cols", cols, limits::kMaxWidth);
  q_.resize(static_cast<size_t>(max_rows * cols));
  d_.resize(static_cast<size_t>(max_rows * cols / kBlockSize));
  s_.resize(d_.size());
  half_sums_.resize(2 * d_.size());
  if (avx512_) {
    const int64_t passes = (max_rows / 2 + kTwoLevelPassRows - 1) / kTwoLevelPassRows;
    passes_ = std::make_unique_for_overwrite<TwoLevelPassBlock[]>(static_cast<size_t>(passes * (cols / kBlockSize)));
  }
}

TwoLevelPassBlock* QuantizedActivations::passes_for(int64_t rows, int levels) {
  passes_written_ = avx512_ && levels == 2 && rows >= 2;
  return passes_written_ ? passes_.get() : nullptr;
}

void QuantizedActivations::quantize(const float* x, int64_t rows, int64_t ldx) {
  if (rows < 0 || rows > max_rows_)
    throw ValueError("activations: rows = " + std::to_string(rows) + " must be in [0, " + std::to_string(max_rows_) +
                     "] (max_rows)");
  quantize_rows(x, rows, ldx, 1);
  rows_ = rows;
}

void QuantizedActivations::quantize_two_level(const float* x, int64_t rows, int64_t ldx) {
  if (rows < 0 || 2 * rows > max_rows_)
    throw ValueError("activations: 2 x rows = " + std::to_string(2 * rows) + " must be in [0, " +
                     std::to_string(max_rows_) + "] (max_rows)");
  quantize_rows(x, rows, ldx, 2);
  rows_ = 2 * rows;
}

void QuantizedActivations::quantize_rows(const float* x, int64_t rows, int64_t ldx, int levels) {
  if (ldx < cols_) throw ValueError("activations: row stride " + std::to_string(ldx) + " < cols " + std::to_string(cols_));
  TwoLevelPassBlock* passes = passes_for(rows, levels);
  if (avx512_) {
    quantize_blocks_avx512(x, rows, ldx, cols_, levels, 0, rows * (cols_ / kBlockSize), q_.data(), d_.data(),
                           s_.data(), half_sums_.data(), passes);
    return;
  }
  const int64_t blocks = cols_ / kBlockSize;
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t b = 0; b < blocks; ++b)
      quantize_block(x + m * ldx + b * kBlockSize, q_.data() + m * cols_ + b * kBlockSize, &d_[m * blocks + b],
                     &s_[m * blocks + b],
                     &half_sums_[2 * (m * blocks + b)]);
  if (levels < 2) return;
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t first = m * blocks + b, second = (rows + m) * blocks + b;
      quantize_residual(x + m * ldx + b * kBlockSize, d_[first], q_.data() + m * cols_ + b * kBlockSize,
                        q_.data() + (rows + m) * cols_ + b * kBlockSize, &d_[second], &s_[second],
                        &half_sums_[2 * second]);
    }
}

void QuantizedActivations::begin_parts(int64_t rows, int64_t ldx, bool two_level) {
  const int64_t need = two_level ? 2 * rows : rows;
  if (rows < 0 || need > max_rows_)
    throw ValueError("activations: rows = " + std::to_string(need) + " must be in [0, " + std::to_string(max_rows_) +
                     "] (max_rows)");
  if (ldx < cols_) throw ValueError("activations: row stride " + std::to_string(ldx) + " < cols " + std::to_string(cols_));
  rows_ = need;
  passes_for(rows, two_level ? 2 : 1);
}

void QuantizedActivations::quantize_blocks(const float* x, int64_t rows, int64_t ldx, bool two_level, int64_t first,
                                           int64_t last) {
  if (avx512_) {
    quantize_blocks_avx512(x, rows, ldx, cols_, two_level ? 2 : 1, first, last, q_.data(), d_.data(), s_.data(),
                           half_sums_.data(), passes_written_ ? passes_.get() : nullptr);
    return;
  }
  const int64_t per_row = cols_ / kBlockSize;
  for (int64_t i = first; i < last; ++i) {
    const int64_t m = i / per_row, b = i % per_row;
    const float* xb = x + m * ldx + b * kBlockSize;
    int8_t* qb = q_.data() + m * cols_ + b * kBlockSize;
    const int64_t one = m * per_row + b;
    quantize_block(xb, qb, &d_[one], &s_[one], &half_sums_[2 * one]);
    if (!two_level) continue;
    const int64_t two = (rows + m) * per_row + b;
    quantize_residual(xb, d_[one], qb, q_.data() + (rows + m) * cols_ + b * kBlockSize, &d_[two], &s_[two],
                      &half_sums_[2 * two]);
  }
}

}  // namespace kvgen::quant
