// Sequences: the token history of every row (prompt + generated) with the per-token
// log-probabilities of what was generated, in buffers sized once for the longest row.
// Beam search reorders rows by parent index (a copy of each surviving row's valid part).
#pragma once

#include <cstdint>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "kvgen/sampling/sampler.h"

namespace kvgen {

class Sequences {
 public:
  // One row per prompt; capacity = longest prompt + max_new tokens.
  void reset(const std::vector<std::vector<int64_t>>& row_prompts, int64_t max_new, bool keep_raw);

  int64_t rows() const { return static_cast<int64_t>(length_.size()); }
  int64_t length(int64_t r) const { return length_[r]; }
  int64_t prompt_length(int64_t r) const { return prompt_[r]; }
  int64_t generated(int64_t r) const { return length_[r] - prompt_[r]; }
  const int64_t* tokens(int64_t r) const { return tokens_.data() + r * capacity_; }
  const float* logprobs(int64_t r) const { return logprobs_.data() + r * max_new_; }
  const float* raw_logprobs(int64_t r) const { return keep_raw_ ? raw_.data() + r * max_new_ : nullptr; }

  // Appends a token with its processed (and raw) log-probability.
  void append(int64_t r, int64_t token, float logprob, float raw_logprob);

  // Row r becomes a copy of row parents[r] (before the call), for every r.
  void reorder(const int64_t* parents);

  // The history view processors read.
  TokenHistory history() const {
    return {tokens_.data(), capacity_, 0, length_.data(), 0, prompt_.data()};
  }

 private:
  int64_t capacity_ = 0, max_new_ = 0;
  bool keep_raw_ = false;
  xt::xtensor<int64_t, 2> tokens_, tokens_spare_;   // (rows, capacity)
  xt::xtensor<float, 2> logprobs_, logprobs_spare_;  // (rows, max_new)
  xt::xtensor<float, 2> raw_, raw_spare_;            // (rows, max_new) when keep_raw
  std::vector<int64_t> length_, prompt_, length_spare_;
};

}  // namespace kvgen
