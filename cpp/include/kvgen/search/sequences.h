// Sequences: the token history of every row (prompt + generated) with the per-token
// log-probabilities of what was generated. The buffers hold every row at one stride and
// grow geometrically as tokens are appended (never beyond the longest prompt + max_new),
// so a large max_new_tokens costs nothing until the tokens exist. Beam search reorders
// rows by parent index (a copy of each surviving row's valid part).
#pragma once

#include <cstdint>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "kvgen/sampling/sampler.h"
#include "kvgen/sampling/top_logprobs.h"

namespace kvgen {

class Sequences {
 public:
  // One row per prompt; a row may reach its prompt + max_new tokens (the caller checks
  // rows and lengths against kvgen's limits). `reorders`: keep the spare buffers that
  // reorder() copies into (beam search), grown with the others.
  // top_n: alternatives kept per generated token (GenerationConfig.top_logprobs).
  void reset(const std::vector<std::vector<int64_t>>& row_prompts, int64_t max_new, bool keep_raw, bool reorders,
             int64_t top_n = 0);

  int64_t rows() const { return static_cast<int64_t>(length_.size()); }
  int64_t length(int64_t r) const { return length_[r]; }
  int64_t prompt_length(int64_t r) const { return prompt_[r]; }
  int64_t generated(int64_t r) const { return length_[r] - prompt_[r]; }
  const int64_t* tokens(int64_t r) const { return tokens_.data() + r * stride_; }
  const float* logprobs(int64_t r) const { return logprobs_.data() + r * new_stride_; }
  const float* raw_logprobs(int64_t r) const { return keep_raw_ ? raw_.data() + r * new_stride_ : nullptr; }
  // Top-n alternatives of row r's generated tokens, (generated, top_n) each; null when top_n = 0
  // (raw_*: also unless the raw log-probs are kept).
  int64_t top_n() const { return top_n_; }
  const int64_t* top_ids(int64_t r) const { return top_n_ ? top_ids_.data() + r * new_stride_ * top_n_ : nullptr; }
  const float* top_logprobs(int64_t r) const { return top_n_ ? top_lp_.data() + r * new_stride_ * top_n_ : nullptr; }
  const int64_t* raw_top_ids(int64_t r) const {
    return top_n_ && keep_raw_ ? raw_top_ids_.data() + r * new_stride_ * top_n_ : nullptr;
  }
  const float* raw_top_logprobs(int64_t r) const {
    return top_n_ && keep_raw_ ? raw_top_lp_.data() + r * new_stride_ * top_n_ : nullptr;
  }

  // Makes room for n more tokens in every row (amortised: the capacity doubles; never
  // beyond max_new), so that the appends of a step never allocate and never fail halfway.
  // Moves the buffers: views from history() before the call are stale after it.
  void reserve_next(int64_t n = 1);

  // Writes n tokens into row r's next free slots without changing its length (a
  // speculative continuation that a history view with a longer length reads); the row's
  // generated + n must stay within the room reserve_next(n) made.
  void stage(int64_t r, const int64_t* tokens, int64_t n);

  // Appends a token with its processed (and raw) log-probability and, when top_n > 0, the
  // alternatives of row `tops_row` of `tops`; needs reserve_next() since the row's last append.
  void append(int64_t r, int64_t token, float logprob, float raw_logprob, const StepTops& tops = {},
              int64_t tops_row = 0);

  // Row r becomes a copy of row parents[r] (before the call), for every r.
  void reorder(const int64_t* parents);

  // The history view processors read (valid until the next reserve_next()).
  TokenHistory history() const {
    return {tokens_.data(), stride_, 0, length_.data(), 0, prompt_.data()};
  }

 private:
  void grow(int64_t new_capacity);
  void shape_spares();

  int64_t longest_prompt_ = 0, max_new_ = 0;
  int64_t new_stride_ = 0;  // generated tokens each row has room for
  int64_t stride_ = 0;      // = longest_prompt_ + new_stride_
  int64_t most_generated_ = 0;
  int64_t top_n_ = 0;
  bool keep_raw_ = false, reorders_ = false;
  xt::xtensor<int64_t, 2> tokens_, tokens_spare_;   // (rows, stride)
  xt::xtensor<float, 2> logprobs_, logprobs_spare_;  // (rows, new_stride)
  xt::xtensor<float, 2> raw_, raw_spare_;            // (rows, new_stride) when keep_raw
  // (rows, new_stride * top_n) when top_n > 0; raw ones also when keep_raw
  xt::xtensor<int64_t, 2> top_ids_, top_ids_spare_, raw_top_ids_, raw_top_ids_spare_;
  xt::xtensor<float, 2> top_lp_, top_lp_spare_, raw_top_lp_, raw_top_lp_spare_;
  std::vector<int64_t> length_, prompt_, length_spare_;
};

}  // namespace kvgen
