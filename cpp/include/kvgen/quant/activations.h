// Activations quantized per 32-block to int8 (llama.cpp's Q8_1), once per input and shared
// by every product that reads that input (q/k/v, gate/up).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kvgen/quant/dispatch.h"
#include "kvgen/quant/kernel_abi.h"

namespace kvgen::quant {

// Blocks the AVX-512 quantizer quantizes together (activations_avx512.cpp).
inline constexpr int64_t kQuantizedTogether = 16;

class QuantizedActivations {
 public:
  // Buffers for up to max_rows rows of `cols` values (cols a positive multiple of 32),
  // allocated here once; quantize() never allocates. `path`: the CPU path whose code
  // quantizes (AVX-512 has its own, bit for bit the portable arithmetic).
  QuantizedActivations(int64_t max_rows, int64_t cols, CpuPath path = active_cpu_path());

  // Quantizes x (rows, cols), row stride ldx: per block d = max|x| / 127, q = round(x / d)
  // (half away from zero), s = d * sum(q), and the integer sum of q over each 16 values
  // (for Q6_K, whose scales cover 16 weights). A block holding NaN or inf gets d = s = NaN and
  // q = 0, so the products of its row are NaN rather than garbage.
  void quantize(const float* x, int64_t rows, int64_t ldx);

  // Two-level quantization: rows [0, rows) as quantize() gives them, then rows [rows,
  // 2 rows) the residual r = x - d q of each, quantized with the fixed scale d2 = d / 256
  // (kSecondLevelShift: |r| <= d / 2, so |r / d2| <= 128, clamped to 127 as the first level
  // is), rounded as the first level, s2 = d2 sum(q2). A product over all 2 rows rows, the
  // two halves added, reads about 15-bit activations for the price of int8 ones, and a
  // kernel may add the levels' integer dots before one conversion; 2 rows <= max_rows.
  // A block whose d is NaN has a NaN d2 and s2 and q2 = 0.
  void quantize_two_level(const float* x, int64_t rows, int64_t ldx);

  // The same in parts, for several threads: begin_parts checks the shape and sets the rows
  // (rows, or 2 rows when two_level), then quantize_blocks quantizes blocks [first, last) of
  // the rows x blocks-per-row blocks in row order (both levels of each when two_level), into
  // the layout quantize() or quantize_two_level() writes, bit for bit. Disjoint ranges may
  // run at once; together they must cover every block before the view is read.
  void begin_parts(int64_t rows, int64_t ldx, bool two_level);
  int64_t blocks(int64_t rows) const { return rows * (cols_ / kBlockSize); }
  void quantize_blocks(const float* x, int64_t rows, int64_t ldx, bool two_level, int64_t first, int64_t last);
  int64_t max_rows() const { return max_rows_; }
  int64_t cols() const { return cols_; }
  // Whether blocks are quantized with SIMD code (8-20 nanoseconds a block, one level or two, so a
  // row is cheaper done at once than handed out to threads).
  bool vectorized() const { return avx512_; }
  // Blocks the quantizer does together (the AVX-512 one 16 at a time, from the first block of
  // a range): the ranges of quantize_blocks best start at multiples of it.
  int64_t blocks_at_once() const { return avx512_ ? kQuantizedTogether : 1; }
  // The rows quantized last (with their passes where a two-level quantization wrote them).
  Int8View view() const {
    return {q_.data(), d_.data(), s_.data(), half_sums_.data(), rows_, cols_, passes_written_ ? passes_.get() : nullptr};
  }

 private:
  // Rows [0, rows) of x, and with levels = 2 their residuals into rows [rows, 2 rows).
  void quantize_rows(const float* x, int64_t rows, int64_t ldx, int levels);
  // Where the AVX-512 quantizer writes the passes of `rows` two-level rows (null where it
  // writes none: one level, another quantizer, or one row, which its own kernels read in
  // place), and whether view() hands them out.
  TwoLevelPassBlock* passes_for(int64_t rows, int levels);

  int64_t max_rows_, cols_, rows_ = 0;
  bool avx512_;  // quantize with the AVX-512 code
  std::vector<int8_t> q_;  // (max_rows, cols)
  std::vector<float> d_;   // (max_rows, cols / 32)
  std::vector<float> s_;   // (max_rows, cols / 32)
  std::vector<int32_t> half_sums_;  // (max_rows, cols / 16): sum of q per 16 values
  // (ceil(max_rows / 2 / 8) passes, cols / 32), AVX-512 only; left uninitialized (a product
  // of a few rows that allocates its input each time does not clear them)
  std::unique_ptr<TwoLevelPassBlock[]> passes_;
  bool passes_written_ = false;
};

}  // namespace kvgen::quant
