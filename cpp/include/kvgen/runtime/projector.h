// Runs a model's matrix products on the compute pool: every product of one input (q, k, v
// of one normed state; gate and up) in one parallel section, split into runs of 16-row
// output groups that the threads take in turn, with the input quantized once for all.
//
// Int8 activations come in two levels (QuantizedActivations::quantize_two_level): each
// row x ~ d1 q1 + d2 q2, the second level quantizing the first's rounding error, and a
// product reads both as 2 rows of one int8 kernel call (each weight tile is loaded once
// for both). The AVX-512 kernels add the levels per block (quant::matmul_int8x2: one fold
// per row, nothing written twice); the other paths write both levels' outputs and add
// them. One level (llama.cpp's Q8_1) moves SmolLM2's argmax at ~4% of the positions of a
// text against transformers; two levels at 1 of 1,100 (a near-tie), measured, for the
// same decode speed (decode is bound by the weight bytes, not by the int8 arithmetic).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "kvgen/runtime/linear_weight.h"
#include "kvgen/runtime/thread_pool.h"
#include "kvgen/quant/activations.h"
#include "kvgen/quant/bf16_activations.h"

namespace kvgen {

// y (rows, w.out()) = x @ W^T + bias, row stride ldy.
struct Product {
  const LinearWeight* w;
  const float* bias;  // (w.out()) or null
  float* y;
  int64_t ldy;
};

class Projector {
 public:
  // What quantized weights multiply (linear_weight.h); Int8TwoLevel unless set.
  Activations activations() const { return activations_; }
  void set_activations(Activations activations) { activations_ = activations; }

  // Holds `pool` for the forward pass about to run (see compute_pool()).
  void use(std::shared_ptr<ThreadPool> pool) { pool_ = std::move(pool); }
  int threads() const { return pool_ ? pool_->size() : 1; }
  ThreadPool& pool() { return *pool_; }

  // Every product of x (rows, K; row stride ldx), all of whose weights have in() == K.
  // Allocates only when a batch has more rows than any before it.
  void project(const float* x, int64_t rows, int64_t ldx, std::span<const Product> products);
  void project(const float* x, int64_t rows, int64_t ldx, std::initializer_list<Product> products) {
    project(x, rows, ldx, std::span<const Product>(products.begin(), products.size()));
  }
  // Products of as many inputs, all in one parallel section: product i reads row i of x
  // (products.size() rows of K, row stride ldx) and writes one row. For a token's
  // mixture-of-experts down projections, each of its own expert's input. Allocates only
  // when more products, or a new K, come than before.
  void project_each(const float* x, int64_t ldx, std::span<const Product> products);

 private:
  // x (rows, K) quantized into xq, on the pool's threads where the input is large enough.
  void quantize(quant::QuantizedActivations& xq, const float* x, int64_t rows, int64_t ldx, bool two_level);

  Activations activations_ = Activations::Int8TwoLevel;
  std::shared_ptr<ThreadPool> pool_;
  std::map<int64_t, quant::QuantizedActivations> int8_inputs_;  // by K: (rows, K) quantized input
  std::vector<float> halves_;  // without two-level kernels: each product's (2 rows, out) outputs, one after another
  std::map<int64_t, std::vector<quant::QuantizedActivations>> each_inputs_;  // by K: project_each's rows, one each
  std::map<int64_t, quant::Bf16Activations> bf16_inputs_;  // by K: (rows, K) bf16 input
  std::map<int64_t, std::vector<quant::Bf16Activations>> each_bf16_inputs_;  // by K: project_each's, one each
};

}  // namespace kvgen
