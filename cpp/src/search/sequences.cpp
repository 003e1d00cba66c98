// Sequences: per-row histories and log-probabilities.
#include "kvgen/search/sequences.h"

#include <algorithm>
#include <cstring>

namespace kvgen {

void Sequences::reset(const std::vector<std::vector<int64_t>>& row_prompts, int64_t max_new, bool keep_raw) {
  const size_t rows = row_prompts.size();
  size_t longest = 0;
  for (const auto& p : row_prompts) longest = std::max(longest, p.size());
  capacity_ = static_cast<int64_t>(longest) + max_new;
  max_new_ = max_new;
  keep_raw_ = keep_raw;
  tokens_ = xt::zeros<int64_t>({rows, static_cast<size_t>(capacity_)});
  tokens_spare_ = tokens_;
  logprobs_ = xt::zeros<float>({rows, static_cast<size_t>(max_new)});
  logprobs_spare_ = logprobs_;
  if (keep_raw) {
    raw_ = logprobs_;
    raw_spare_ = logprobs_;
  }
  length_.assign(rows, 0);
  prompt_.assign(rows, 0);
  length_spare_.assign(rows, 0);
  for (size_t r = 0; r < rows; ++r) {
    std::copy(row_prompts[r].begin(), row_prompts[r].end(), tokens_.data() + r * capacity_);
    length_[r] = prompt_[r] = static_cast<int64_t>(row_prompts[r].size());
  }
}

void Sequences::append(int64_t r, int64_t token, float logprob, float raw_logprob) {
  const int64_t g = generated(r);
  tokens_.data()[r * capacity_ + length_[r]] = token;
  logprobs_.data()[r * max_new_ + g] = logprob;
  if (keep_raw_) raw_.data()[r * max_new_ + g] = raw_logprob;
  ++length_[r];
}

void Sequences::reorder(const int64_t* parents) {
  const int64_t n = rows();
  for (int64_t r = 0; r < n; ++r) {
    const int64_t p = parents[r];
    std::memcpy(tokens_spare_.data() + r * capacity_, tokens_.data() + p * capacity_, sizeof(int64_t) * length_[p]);
    const int64_t g = generated(p);
    std::memcpy(logprobs_spare_.data() + r * max_new_, logprobs_.data() + p * max_new_, sizeof(float) * g);
    if (keep_raw_) std::memcpy(raw_spare_.data() + r * max_new_, raw_.data() + p * max_new_, sizeof(float) * g);
    length_spare_[r] = length_[p];
  }
  std::swap(tokens_, tokens_spare_);
  std::swap(logprobs_, logprobs_spare_);
  if (keep_raw_) std::swap(raw_, raw_spare_);
  std::swap(length_, length_spare_);
  // Beam rows of one input share the prompt length, so prompt_ needs no reorder.
}

}  // namespace kvgen
