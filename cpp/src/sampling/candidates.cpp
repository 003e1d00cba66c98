// Candidates and their Workspace buffers.
#include "kvgen/sampling/candidates.h"

#include <algorithm>

#include "kvgen/ops/vector_math.h"
#include "kvgen/sampling/selection.h"

namespace kvgen {

void Workspace::reserve(int64_t vocab) {
  if (vocab <= capacity()) return;
  const std::array<size_t, 1> shape{static_cast<size_t>(vocab)};
  ids_a = xt::xtensor<int32_t, 1>::from_shape(shape);
  ids_b = xt::xtensor<int32_t, 1>::from_shape(shape);
  vals_a = xt::xtensor<float, 1>::from_shape(shape);
  vals_b = xt::xtensor<float, 1>::from_shape(shape);
  weights = xt::xtensor<float, 1>::from_shape(shape);
  keys = xt::xtensor<float, 1>::from_shape(shape);
  chosen = xt::xtensor<int32_t, 1>::from_shape(shape);
  positions = xt::xtensor<int32_t, 1>::from_shape(shape);
  buckets = xt::xtensor<int32_t, 1>::from_shape(shape);
  select_values = xt::xtensor<float, 1>::from_shape({static_cast<size_t>(vocab + 2 * (vocab / 64 + 1))});
  counts = xt::zeros<uint32_t>(shape);
  touched.reserve(static_cast<size_t>(std::min<int64_t>(vocab, 1 << 16)));
}

void Candidates::keep(const int32_t* positions, int64_t count, bool sorted) {
  const bool to_b = !dense_ && in_a_;
  int32_t* out_ids = to_b ? ws_->ids_b.data() : ws_->ids_a.data();
  float* out_vals = to_b ? ws_->vals_b.data() : ws_->vals_a.data();
  if (dense_) {
    for (int64_t j = 0; j < count; ++j) {
      out_ids[j] = positions[j];
      out_vals[j] = row_[positions[j]];
    }
  } else {
    for (int64_t j = 0; j < count; ++j) {
      out_ids[j] = ids_[positions[j]];
      out_vals[j] = vals_[positions[j]];
    }
  }
  ids_ = out_ids;
  vals_ = out_vals;
  in_a_ = !to_b;
  dense_ = false;
  size_ = count;
  sorted_ = sorted;
}

void Candidates::sort_descending() {
  if (!dense_ && sorted_) return;
  int32_t* order = ws_->positions.data();
  for (int64_t i = 0; i < size_; ++i) order[i] = static_cast<int32_t>(i);
  selection::sort_descending(values(), order, size_);
  keep(order, size_, true);
}

void Candidates::materialize() {
  if (dense_) return;
  std::fill(row_, row_ + vocab_, ops::kNegInf);
  for (int64_t j = 0; j < size_; ++j) row_[ids_[j]] = vals_[j];
}

void Candidates::make_dense() {
  materialize();
  dense_ = true;
  sorted_ = false;
  size_ = vocab_;
}

}  // namespace kvgen
