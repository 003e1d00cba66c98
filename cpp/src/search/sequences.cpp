// Sequences: per-row histories and log-probabilities in buffers that grow as tokens come.
#include "kvgen/search/sequences.h"

#include <algorithm>
#include <cstring>

#include "kvgen/limits.h"

namespace kvgen {
namespace {

// Generated tokens a fresh Sequences has room for; doubled as needed.
constexpr int64_t kInitialNewTokens = 32;

// A zeroed (rows, cols) buffer.
template <class T>
xt::xtensor<T, 2> zeroed(int64_t rows, int64_t cols) {
  limits::checked_mul(rows, cols, "TokenSelector history (rows x tokens)");
  return xt::zeros<T>({static_cast<size_t>(rows), static_cast<size_t>(cols)});
}

// A (rows, cols) copy of `from` (rows, from_cols), zero-padded on the right.
template <class T>
xt::xtensor<T, 2> regrown(const xt::xtensor<T, 2>& from, int64_t rows, int64_t from_cols, int64_t cols) {
  auto out = zeroed<T>(rows, cols);
  for (int64_t r = 0; r < rows && from_cols > 0; ++r)
    std::copy(from.data() + r * from_cols, from.data() + (r + 1) * from_cols, out.data() + r * cols);
  return out;
}

}  // namespace

void Sequences::reset(const std::vector<std::vector<int64_t>>& row_prompts, int64_t max_new, bool keep_raw,
                      bool reorders, int64_t top_n) {
  const int64_t rows = static_cast<int64_t>(row_prompts.size());
  longest_prompt_ = 0;
  for (const auto& p : row_prompts) longest_prompt_ = std::max<int64_t>(longest_prompt_, p.size());
  max_new_ = max_new;
  keep_raw_ = keep_raw;
  reorders_ = reorders;
  most_generated_ = 0;
  new_stride_ = std::min(max_new, kInitialNewTokens);
  stride_ = longest_prompt_ + new_stride_;
  tokens_ = zeroed<int64_t>(rows, stride_);
  logprobs_ = zeroed<float>(rows, new_stride_);
  raw_ = keep_raw ? logprobs_ : xt::xtensor<float, 2>();
  top_n_ = top_n;
  const bool raw_tops = top_n > 0 && keep_raw;
  top_ids_ = top_n ? zeroed<int64_t>(rows, new_stride_ * top_n) : xt::xtensor<int64_t, 2>();
  top_lp_ = top_n ? zeroed<float>(rows, new_stride_ * top_n) : xt::xtensor<float, 2>();
  raw_top_ids_ = raw_tops ? top_ids_ : xt::xtensor<int64_t, 2>();
  raw_top_lp_ = raw_tops ? top_lp_ : xt::xtensor<float, 2>();
  length_.assign(rows, 0);
  prompt_.assign(rows, 0);
  length_spare_.assign(rows, 0);
  for (int64_t r = 0; r < rows; ++r) {
    std::copy(row_prompts[r].begin(), row_prompts[r].end(), tokens_.data() + r * stride_);
    length_[r] = prompt_[r] = static_cast<int64_t>(row_prompts[r].size());
  }
  shape_spares();
}

void Sequences::grow(int64_t new_capacity) {
  const int64_t rows = this->rows(), stride = longest_prompt_ + new_capacity;
  tokens_ = regrown(tokens_, rows, stride_, stride);
  logprobs_ = regrown(logprobs_, rows, new_stride_, new_capacity);
  if (keep_raw_) raw_ = regrown(raw_, rows, new_stride_, new_capacity);
  if (top_n_) {
    const int64_t from = new_stride_ * top_n_, to = new_capacity * top_n_;
    top_ids_ = regrown(top_ids_, rows, from, to);
    top_lp_ = regrown(top_lp_, rows, from, to);
    if (keep_raw_) {
      raw_top_ids_ = regrown(raw_top_ids_, rows, from, to);
      raw_top_lp_ = regrown(raw_top_lp_, rows, from, to);
    }
  }
  new_stride_ = new_capacity;
  stride_ = stride;
  shape_spares();
}

void Sequences::shape_spares() {
  // Sized with the main buffers , so
  // that reorder() never allocates in the middle of a beam step.
  if (!reorders_) return;
  tokens_spare_ = zeroed<int64_t>(rows(), stride_);
  logprobs_spare_ = zeroed<float>(rows(), new_stride_);
  if (keep_raw_) raw_spare_ = zeroed<float>(rows(), new_stride_);
  if (top_n_) {
    top_ids_spare_ = zeroed<int64_t>(rows(), new_stride_ * top_n_);
    top_lp_spare_ = zeroed<float>(rows(), new_stride_ * top_n_);
    if (keep_raw_) {
      raw_top_ids_spare_ = zeroed<int64_t>(rows(), new_stride_ * top_n_);
      raw_top_lp_spare_ = zeroed<float>(rows(), new_stride_ * top_n_);
    }
  }
}

void Sequences::reserve_next(int64_t n) {
  if (most_generated_ + n <= new_stride_ || new_stride_ >= max_new_) return;
  // Doubling keeps the copies amortised O(1) per token; max_new_ bounds the capacity.
  grow(std::min(max_new_, std::max({2 * new_stride_, most_generated_ + n, kInitialNewTokens})));
}

void Sequences::stage(int64_t r, const int64_t* tokens, int64_t n) {
  std::copy(tokens, tokens + n, tokens_.data() + r * stride_ + length_[r]);
}

void Sequences::append(int64_t r, int64_t token, float logprob, float raw_logprob, const StepTops& tops,
                       int64_t tops_row) {
  const int64_t g = generated(r);
  tokens_.data()[r * stride_ + length_[r]] = token;
  logprobs_.data()[r * new_stride_ + g] = logprob;
  if (keep_raw_) raw_.data()[r * new_stride_ + g] = raw_logprob;
  if (top_n_ && tops.n == top_n_) {
    const int64_t at = (r * new_stride_ + g) * top_n_, from = tops_row * top_n_;
    std::copy(tops.ids + from, tops.ids + from + top_n_, top_ids_.data() + at);
    std::copy(tops.logprobs + from, tops.logprobs + from + top_n_, top_lp_.data() + at);
    if (keep_raw_ && tops.raw_ids) {
      std::copy(tops.raw_ids + from, tops.raw_ids + from + top_n_, raw_top_ids_.data() + at);
      std::copy(tops.raw_logprobs + from, tops.raw_logprobs + from + top_n_, raw_top_lp_.data() + at);
    }
  }
  ++length_[r];
  most_generated_ = std::max(most_generated_, g + 1);
}

void Sequences::reorder(const int64_t* parents) {
  const int64_t n = rows();
  for (int64_t r = 0; r < n; ++r) {
    const int64_t p = parents[r];
    std::memcpy(tokens_spare_.data() + r * stride_, tokens_.data() + p * stride_, sizeof(int64_t) * length_[p]);
    const int64_t g = generated(p);
    std::memcpy(logprobs_spare_.data() + r * new_stride_, logprobs_.data() + p * new_stride_, sizeof(float) * g);
    if (keep_raw_)
      std::memcpy(raw_spare_.data() + r * new_stride_, raw_.data() + p * new_stride_, sizeof(float) * g);
    if (top_n_) {
      const int64_t row = new_stride_ * top_n_, n = g * top_n_;
      std::memcpy(top_ids_spare_.data() + r * row, top_ids_.data() + p * row, sizeof(int64_t) * n);
      std::memcpy(top_lp_spare_.data() + r * row, top_lp_.data() + p * row, sizeof(float) * n);
      if (keep_raw_) {
        std::memcpy(raw_top_ids_spare_.data() + r * row, raw_top_ids_.data() + p * row, sizeof(int64_t) * n);
        std::memcpy(raw_top_lp_spare_.data() + r * row, raw_top_lp_.data() + p * row, sizeof(float) * n);
      }
    }
    length_spare_[r] = length_[p];
  }
  std::swap(tokens_, tokens_spare_);
  std::swap(logprobs_, logprobs_spare_);
  if (keep_raw_) std::swap(raw_, raw_spare_);
  std::swap(top_ids_, top_ids_spare_);
  std::swap(top_lp_, top_lp_spare_);
  std::swap(raw_top_ids_, raw_top_ids_spare_);
  std::swap(raw_top_lp_, raw_top_lp_spare_);
  std::swap(length_, length_spare_);
  // Beam rows of one input share the prompt length, so prompt_ needs no reorder.
}

}  // namespace kvgen
