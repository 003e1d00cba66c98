// Runs a model's matrix products on the compute pool: every product of one input (q, k, v
// of one normed state; gate and up) in one parallel section, each split by 16-row output
// groups across the threads, with the input quantized to int8 once for all of them.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>

#include "kvgen/model/linear_weight.h"
#include "kvgen/model/thread_pool.h"
#include "kvgen/quant/activations.h"

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
  // Exact mode: quantized weights meet float activations (transformers' arithmetic on the
  // dequantized weights, up to summation order) instead of int8 ones.
  bool exact() const { return exact_; }
  void set_exact(bool exact) { exact_ = exact; }

  // Holds `pool` for the forward pass about to run (see compute_pool()).
  void use(std::shared_ptr<ThreadPool> pool) { pool_ = std::move(pool); }
  int threads() const { return pool_ ? pool_->size() : 1; }
  ThreadPool& pool() { return *pool_; }

  // Every product of x (rows, K; row stride ldx), all of whose weights have in() == K.
  // Allocates only when a batch has more rows than any before it.
  void project(const float* x, int64_t rows, int64_t ldx, std::initializer_list<Product> products);

 private:
  bool exact_ = false;
  std::shared_ptr<ThreadPool> pool_;
  std::map<int64_t, quant::QuantizedActivations> int8_inputs_;  // by K: (rows, K) quantized input
};

}  // namespace kvgen
