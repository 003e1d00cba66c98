// llama.cpp's samplers as kvgen processors, with the semantics of llama.cpp's
// src/llama-sampling.cpp (llama_sampler_init_dry / _top_n_sigma / _xtc / _mirostat /
// _mirostat_v2): DRY, top-n-sigma, XTC, and mirostat's truncation. Like every processor
// they hold no per-row state: XTC's coin comes from the row's draw key and mirostat's mu
// from RowContext (the TokenSelector keeps one mu per row and moves it with beam reorders).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvgen/sampling/processors.h"

namespace kvgen {

// DRY's sequence breakers matched on token texts. A token is a breaker by itself when its
// text contains a breaker; it starts one when a suffix of its text is a prefix of a breaker,
// and the texts of the tokens after it spell the rest (llama.cpp matches the rest against
// the tokenization of the remainder; kvgen has the texts, not the tokenizer, and accepts
// any tokens that spell it).
class DryBreakers {
 public:
  DryBreakers() = default;
  DryBreakers(const std::vector<std::string>& breakers, std::vector<std::string> token_texts);

  bool empty() const { return single_.empty(); }
  // Whether token `id` contains a whole breaker (DRY never penalizes such a token).
  bool is_single(int64_t id) const { return id >= 0 && id < static_cast<int64_t>(single_.size()) && single_[id]; }
  // The number of tokens after s[i] that complete the longest breaker starting in s[i], where
  // s[j] is the j-th token from the end (s[i - 1], s[i - 2], ... follow s[i]); -1 when none.
  int64_t tail_length(const int64_t* history_end, int64_t i) const;

 private:
  std::vector<uint8_t> single_;                  // (vocab) text contains a breaker
  std::vector<std::vector<std::string>> rests_;  // (vocab) what must follow a partial breaker
  std::vector<std::string> texts_;               // (vocab) token texts
};

// DRY ("don't repeat yourself", llama.cpp's sampler): a token that would extend a sequence
// already seen in the last `last_n` tokens (from the point where it repeats the current
// suffix) gets logit -= multiplier * base ** (repeat_length - allowed_length), when the
// repeat is at least allowed_length long. A repeat never spans a sequence breaker.
class DryPenalty : public LogitsProcessor {
 public:
  DryPenalty(double multiplier, double base, int64_t allowed_length, int64_t last_n, DryBreakers breakers);
  void apply(Candidates& c, const RowContext& ctx, Workspace& ws) const override;
  std::string describe() const override;

 private:
  // The longest repeat length allowed before the most recent breaker (llama.cpp's rep_limit).
  int64_t repeat_limit(const int64_t* end, int64_t window) const;

  float multiplier_, base_;
  int64_t allowed_, last_n_;
  int max_exponent_;  // caps base ** exponent below float max (0: no cap)
  DryBreakers breakers_;
};

// Top-n-sigma (Tang et al. 2024): keeps the tokens with logit >= max - n * std, the mean
// and the (population) standard deviation taken over the finite candidates (at least
// min_keep, the most likely).
class TopNSigma : public LogitsProcessor {
 public:
  TopNSigma(double n, int64_t min_keep) : n_(static_cast<float>(n)), min_keep_(min_keep) {}
  void apply(Candidates& c, const RowContext& ctx, Workspace& ws) const override;
  std::string describe() const override;

 private:
  float n_;
  int64_t min_keep_;
};

// XTC ("exclude top choices"): with chance `probability` per step, removes every token
// with probability >= threshold except the least likely of them.
class Xtc : public LogitsProcessor {
 public:
  Xtc(double probability, double threshold, int64_t min_keep)
      : probability_(probability), threshold_(static_cast<float>(threshold)), min_keep_(min_keep) {}
  void apply(Candidates& c, const RowContext& ctx, Workspace& ws) const override;
  std::string describe() const override;
  // The Philox lane of XTC's coin (lane 0 is the token draw).
  static constexpr uint32_t kLane = 1;

 private:
  double probability_;
  float threshold_;
  int64_t min_keep_;
};

// Mirostat's truncation with the row's mu (the draw and the update of mu follow):
// v1 estimates the Zipf exponent s from the top m probabilities and keeps the top
// k = (e * 2^mu / (1 - N^-e))^(1/s) tokens (e = s - 1, N the vocabulary); v2 keeps the
// tokens whose surprise -log2 p is <= mu (at least one).
class MirostatTruncation : public LogitsProcessor {
 public:
  MirostatTruncation(int version, int64_t min_keep) : version_(version), min_keep_(min_keep) {}
  void apply(Candidates& c, const RowContext& ctx, Workspace& ws) const override;
  std::string describe() const override;
  // llama-cpp-python's m: the tokens that estimate s in v1.
  static constexpr int64_t kM = 100;

 private:
  void apply_v1(Candidates& c, float mu, Workspace& ws) const;
  void apply_v2(Candidates& c, float mu, Workspace& ws) const;
  int version_;
  int64_t min_keep_;
};

}  // namespace kvgen
