// Generator: owns the generation loop's state for a batch of prompts. Each step takes
// the next-token logits of every row (from any model), processes them, picks tokens
// (greedy, sampling or beam search), applies the stopping rules, and says which tokens
// to feed next and, under beam search, which row each new row continues (so the caller
// reorders its own KV cache). The built-in models drive the same loop.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "kvgen/generation_config.h"
#include "kvgen/sampling/sampler.h"
#include "kvgen/search/beam_search.h"
#include "kvgen/search/sequences.h"
#include "kvgen/search/stopping.h"

namespace kvgen {

class Generator {
 public:
  explicit Generator(GenerationConfig config);

  const GenerationConfig& config() const { return sampler_.config(); }

  // Texts of every token id (bytes), for stop_strings and DRY's sequence breakers. Before
  // append_tokens.
  void set_token_texts(std::vector<std::string> texts);
  // Whether the config needs the token texts and none were given: stop_strings, or DRY's
  // sequence breakers (append_tokens refuses to start without them).
  bool needs_token_texts() const { return stops_.needs_token_texts() || sampler_.needs_token_texts(); }
  // Also record the log-probabilities of the raw logits. Before append_tokens.
  void set_keep_raw_logprobs(bool keep) { keep_raw_ = keep; }

  // The prompts, one per input (lengths may differ). Each becomes num_beams rows under
  // beam search, num_return_sequences rows otherwise. Once per generator.
  // sequence_ids (one per prompt, or empty for 0, 1, 2, ...) key the random draws: row k
  // of a prompt with id i draws with key i * rows_per_input + k (beam sampling: key i),
  // so a prompt with the same seed and id draws the same tokens in any batch.
  void append_tokens(const std::vector<std::vector<int64_t>>& prompts,
                     const std::vector<int64_t>& sequence_ids = {});

  // One step: logits (rows, vocab) of the next token of every row, read in place.
  // Either completes or, when it throws, leaves the generator as it was.
  // allowed (rows, ceil(vocab / 32)) uint32, read in place: each row's allowed-token
  // bitmask (llguidance's layout), required when the config has a constraint (json_schema,
  // regex, grammar, choices) and refused otherwise. A running row that allows no token is
  // a ValueError.
  void step(const float* logits, int64_t rows, int64_t vocab, const uint32_t* allowed = nullptr);

  // Finishes row r with FinishReason::Stop: its constraint is complete (the grammar takes
  // no more tokens). Greedy / sampling only (under beam search the mask then allows only
  // EOS); a finished row is left as it is.
  void stop_row(int64_t r);

  bool started() const { return batch_ > 0; }
  bool done() const;
  int64_t batch_size() const { return batch_; }
  int64_t rows_per_input() const { return per_input_; }
  int64_t rows() const { return batch_ * per_input_; }
  int64_t steps() const { return steps_; }
  int64_t vocab() const { return vocab_; }
  bool is_beam_search() const { return beam_.has_value(); }

  const Sequences& sequences() const { return seqs_; }
  // Whether row r still needs logits (every beam row does while the search runs).
  bool row_running(int64_t r) const { return beam_ ? !beam_->done() : active_[r] != 0; }
  // Why row r stopped (greedy / sampling); None while it runs and for beam rows.
  FinishReason finish_reason(int64_t r) const { return reason_[r]; }
  // Tokens to feed next, one per row (pad_token_id for finished rows).
  const int64_t* next_tokens() const { return next_tokens_.data(); }
  // Under beam search, after a step: the row each row continues; else nullptr.
  const int64_t* beam_indices() const { return beam_ && steps_ > 0 ? parents_.data() : nullptr; }
  // Processed logits of the last step (rows, vocab); log-probs under beam search. One
  // buffer, allocated at the first step and kept until the generator is destroyed, so a
  // pointer taken here never dangles; each step overwrites it (a step that throws may
  // leave it partly written: it is the one state a failed step does not restore).
  float* processed_logits() { return processed_.data(); }
  int64_t pad_token() const { return pad_; }
  // New tokens a prompt of this length may generate.
  int64_t max_new_tokens(int64_t prompt_len) const { return stops_.max_new_tokens(prompt_len); }

  // Whether row r got a token at the last step (rows that finished before it did not).
  bool stepped(int64_t r) const { return steps_ > 0 && stepped_[r] != 0; }
  // Mirostat's mu of each row (rows): 2 * mirostat_tau at the start, then after each step
  // mu -= mirostat_eta * (surprise of the row's token in bits - mirostat_tau); under beam
  // search a row continues its parent's mu.
  const float* mirostat_mu() const { return mirostat_mu_.data(); }

  // Per input, num_return_sequences hypotheses (best first under beam search).
  std::vector<std::vector<Hypothesis>> results() const;

 private:
  void check_prompts(const std::vector<std::vector<int64_t>>& prompts, const std::vector<int64_t>& sequence_ids) const;
  void set_draw_keys(int64_t batch, int64_t per_input, const std::vector<int64_t>& sequence_ids);
  void check_allowed(const uint32_t* allowed) const;
  void step_sampling(const float* logits, const uint32_t* allowed);
  void step_beams(const float* logits, const uint32_t* allowed);
  void raw_log_sum_exp(const float* logits);
  // Mirostat's update of a row's mu after a token with this log-probability (nats).
  float next_mirostat_mu(float mu, float token_logprob) const;
  // The top-n alternatives of each row (of the rows in `only`, when not null) from the
  // processed rows (already log-probs under beam search) and the raw logits.
  StepTops compute_tops(const float* logits, bool processed_are_logprobs, const uint8_t* only);

  Sampler sampler_;
  StopRules stops_;
  std::optional<BeamSearch> beam_;
  Sequences seqs_;
  uint64_t seed_;
  int64_t pad_;
  bool keep_raw_ = false;
  int64_t batch_ = 0, per_input_ = 1, steps_ = 0, vocab_ = 0;
  std::vector<FinishReason> reason_;   // (rows)
  std::vector<uint8_t> active_;        // (rows) 1 while the row runs (greedy / sampling)
  std::vector<int64_t> next_tokens_;   // (rows)
  std::vector<int64_t> parents_;       // (rows) beam search
  std::vector<int64_t> row_keys_;      // (rows) draw key of each row (sampling)
  std::vector<uint64_t> input_keys_;   // (batch) draw key of each input (beam sampling)
  // A step computes into these, then commits (so a failing step changes nothing):
  std::vector<int64_t> drawn_;         // (rows) tokens picked this step
  std::vector<float> logprobs_;        // (rows) of this step's tokens
  std::vector<RowNorm> norms_;         // (rows) softmax normalizers of this step's processed rows
  std::vector<FinishReason> hits_;     // (rows) stopping rule each picked token hits
  std::vector<float> raw_lse_;         // (rows) log-sum-exp of the raw logits
  xt::xtensor<float, 2> processed_;    // (rows, vocab) the processed logits
  std::vector<uint8_t> stepped_;       // (rows) 1 when the row got a token at the last step
  std::vector<float> mirostat_mu_;     // (rows) mirostat's mu
  std::vector<int64_t> top_ids_, raw_top_ids_;  // (rows, top_logprobs) of this step
  std::vector<float> top_lp_, raw_top_lp_;      // (rows, top_logprobs) of this step
};

}  // namespace kvgen
