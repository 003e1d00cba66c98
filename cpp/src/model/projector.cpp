// One parallel section per input: quantize once, then each thread takes its share of the
// 16-row groups of every product (contiguous, so a thread streams its part of each matrix).
#include "kvgen/model/projector.h"

#include <algorithm>

#include "kvgen/errors.h"

namespace kvgen {

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
  const bool exact = exact_;
  const auto share = [&](int t) {
    const int T = threads();
    for (const Product& p : products) {
      const Range r = split_range(p.w->units(), T, t);
      p.w->multiply(p.y, p.ldy, x, ldx, xq, rows, r.first, r.last, exact);
      if (!p.bias) continue;
      const int64_t n0 = 16 * r.first, n1 = std::min(p.w->out(), 16 * r.last);
      for (int64_t m = 0; m < rows; ++m)
        for (int64_t n = n0; n < n1; ++n) p.y[m * p.ldy + n] += p.bias[n];
    }
  };
  if (pool_)
    pool_->run(share);
  else
    share(0);
}

}  // namespace kvgen
