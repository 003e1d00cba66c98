// One parallel section per input: quantize once, then each thread takes its share of the
// 16-row groups of every product (contiguous, so a thread streams its part of each matrix).
#include "kvgen/model/projector.h"

#include <algorithm>

#include "kvgen/errors.h"

namespace kvgen {
namespace {

// 16-row groups per item of work: 64 output rows, small enough that threads share even
// the k/v products (12 groups on SmolLM2) and large enough to amortize the hand-out.
constexpr int64_t kChunkUnits = 4;

}  // namespace

void Projector::project(const float* x, int64_t rows, int64_t ldx, std::initializer_list<Product> products) {
  if (rows == 0 || products.size() == 0) return;
  const int64_t K = products.begin()->w->in();
  const quant::QuantizedActivations* xq = nullptr;
  for (const Product& p : products) {
    if (p.w->in() != K) throw ValueError("products of one input must share its width");
    if (p.w->reads_int8(exact_) && !xq) {
      auto it = int8_inputs_.find(K);
      if (it == int8_inputs_.end() || it->second.max_rows() < rows)
        it = int8_inputs_.insert_or_assign(K, quant::QuantizedActivations(rows, K)).first;
      it->second.quantize(x, rows, ldx);
      xq = &it->second;
    }
  }
  // Items of work: runs of kChunkUnits 16-row groups of one product, product after product.
  int64_t items = 0;
  for (const Product& p : products) items += (p.w->units() + kChunkUnits - 1) / kChunkUnits;
  const bool exact = exact_;
  const auto run_item = [&](int64_t item, int) {
    for (const Product& p : products) {
      const int64_t chunks = (p.w->units() + kChunkUnits - 1) / kChunkUnits;
      if (item >= chunks) {
        item -= chunks;
        continue;
      }
      const int64_t u0 = item * kChunkUnits, u1 = std::min(p.w->units(), u0 + kChunkUnits);
      p.w->multiply(p.y, p.ldy, x, ldx, xq, rows, u0, u1, exact);
      if (p.bias) {
        const int64_t n0 = 16 * u0, n1 = std::min(p.w->out(), 16 * u1);
        for (int64_t m = 0; m < rows; ++m)
          for (int64_t n = n0; n < n1; ++n) p.y[m * p.ldy + n] += p.bias[n];
      }
      return;
    }
  };
  if (pool_)
    pool_->for_each(items, run_item);
  else
    for (int64_t i = 0; i < items; ++i) run_item(i, 0);
}

}  // namespace kvgen
