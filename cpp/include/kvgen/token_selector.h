// TokenSelector: owns the generation loop's state for a batch of prompts. Each step takes
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

// What persists per row from one step to the next. Rows are batch x rows_per_input,
// input-major (row b * rows_per_input + k is the k-th row of prompt b).
struct RowState {
  Sequences seqs;                    // (rows, prompt + generated) tokens, their log-probs and top-n
  std::vector<FinishReason> reason;  // (rows) why the row stopped; None while it runs and for beam rows
  std::vector<uint8_t> active;       // (rows) 1 while the row runs (greedy / sampling)
  std::vector<uint8_t> stepped;      // (rows) 1 when the row got a token at the last step
  std::vector<int64_t> next_tokens;  // (rows) tokens to feed next (pad for finished rows)
  std::vector<int64_t> parents;      // (rows) beam search: the row each row continues
  std::vector<float> mirostat_mu;    // (rows) mirostat's mu
  std::vector<int64_t> row_keys;     // (rows) draw key of each row (sampling)
  std::vector<uint64_t> input_keys;  // (batch) draw key of each input (beam sampling)
  // Speculative verification (verify()): of the last call, per row
  std::vector<int64_t> emitted;      // (rows) tokens the last verify appended
  std::vector<int64_t> accepted;     // (rows) draft tokens the last verify accepted
  std::vector<int64_t> rollback;     // (rows) draft positions the caller's KV cache drops
  // and over the whole generation, per row (the acceptance rate is accepted / drafted)
  std::vector<int64_t> drafted_total;   // (rows) draft tokens offered to verify() while the row ran
  std::vector<int64_t> accepted_total;  // (rows) of which accepted
};

// Buffers a step computes into before it commits to the RowState (so that a step that
// throws changes nothing), sized once by append_tokens / the first step and reused by
// every step: the per-token loop allocates nothing.
struct StepScratch {
  std::vector<int64_t> drawn;          // (rows) the token each row picked
  std::vector<float> logprobs;         // (rows) its processed log-probability
  std::vector<RowNorm> norms;          // (rows) softmax normalizer of each processed row
  std::vector<FinishReason> hits;      // (rows) the stopping rule each picked token hits
  std::vector<float> raw_lse;          // (rows) log-sum-exp of each raw logits row
  std::vector<float> next_mu;          // (rows) beam search: mirostat's mu of each new row
  xt::xtensor<float, 2> processed;     // (rows, vocab) processed logits (log-probs under beam search);
                                       // also the last step's, read through processed_logits()
  std::vector<int64_t> top_ids;        // (rows, top_logprobs) of the processed rows
  std::vector<float> top_logprobs;     // (rows, top_logprobs)
  std::vector<int64_t> raw_top_ids;    // (rows, top_logprobs) of the raw rows, when kept
  std::vector<float> raw_top_logprobs; // (rows, top_logprobs) when kept
  std::vector<int64_t> row_steps;      // (rows) draw step of each row: its generated tokens so far
  // verify(), with positions = k + 1 (grown when a call brings a larger k):
  std::vector<int64_t> spec_tokens;         // (rows, positions) the tokens each row emits
  std::vector<float> spec_logprobs;         // (rows, positions) their processed log-probabilities
  std::vector<float> spec_raw;              // (rows, positions) their raw log-probabilities, when kept
  std::vector<int64_t> spec_count;          // (rows) tokens each row emits
  std::vector<int64_t> spec_accepted;       // (rows) draft tokens each row accepts
  std::vector<float> spec_mu;               // (rows) mirostat's mu after the row's tokens
  std::vector<int64_t> spec_top_ids;        // (rows * positions, top_logprobs)
  std::vector<float> spec_top_logprobs;     // (rows * positions, top_logprobs)
  std::vector<int64_t> spec_raw_top_ids;    // (rows * positions, top_logprobs) when kept
  std::vector<float> spec_raw_top_logprobs; // (rows * positions, top_logprobs) when kept
  std::vector<float> residual;              // (vocab) weights of max(p - q, 0) after a rejection
};

// The outcome of the last step, copied out of the generator (what a caller reads after
// step()). Rows that did not step have log-prob -inf and top ids -1.
struct StepOutput {
  std::vector<int64_t> tokens;                      // (rows) tokens to feed next
  std::optional<std::vector<int64_t>> beam_indices; // (rows) under beam search: each row's parent
  bool done = false;                                // every row has finished
  std::vector<float> logprobs;                      // (rows) processed log-prob of each row's token
  int64_t top_n = 0;                                // GenerationConfig.top_logprobs
  std::vector<int64_t> top_ids;                     // (rows, top_n), empty when top_n = 0
  std::vector<float> top_logprobs;                  // (rows, top_n)
  std::vector<int64_t> raw_top_ids;                 // (rows, top_n) when the raw log-probs are kept, else empty
  std::vector<float> raw_top_logprobs;              // (rows, top_n) likewise
  // After verify() (positions = k + 1 of that call; 0 after step(), and these are empty):
  int64_t positions = 0;
  std::vector<int64_t> accepted;          // (rows) draft tokens accepted
  std::vector<int64_t> rollback;          // (rows) draft positions to drop from the caller's KV cache
  std::vector<int64_t> num_emitted;       // (rows) tokens appended: accepted drafts + the correction / bonus
                                          // token, fewer when the row stopped; 0 for rows already finished
  std::vector<int64_t> emitted;           // (rows, positions) those tokens, -1 past num_emitted[r]
  std::vector<float> emitted_logprobs;    // (rows, positions) their processed log-probs, -inf past num_emitted[r]
};

class TokenSelector {
 public:
  explicit TokenSelector(GenerationConfig config);

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

  // Speculative verification: checks k draft tokens per row against the caller's logits
  // and appends what the row keeps, in one call (greedy / sampling; beam search is out of
  // scope and refused). Either completes or, when it throws, leaves the generator as it was.
  //   logits       (rows, positions, vocab), positions = k + 1, read in place: position j of
  //                row r holds the logits after the row's history and its first j drafts
  //                (j = 0: the next position, as step() gets; j = k: after every draft);
  //                positions past a row's draft length + 1 are never read
  //   drafts       (rows, k) draft tokens; entries at and past draft_lengths[r] are ignored
  //   draft_lengths (rows) each row's draft count, 0 .. k
  //   draft_probs  (rows, k, vocab) or nullptr: the draft model's probabilities q of each
  //                draft position (processed as the draft sampled from them); nullptr for a
  //                one-hot q (prompt-lookup / n-gram drafts)
  //   allowed      (rows, positions, ceil(vocab / 32)) or nullptr: the allowed-token bitmask
  //                of each position (computed along the draft prefix), as step()'s
  // At each position the whole processor chain runs with the history as it is there (the
  // earlier drafts appended), draws keyed by (seed, row key, the row's token index).
  // Greedy: drafts are accepted while they equal the processed argmax; the argmax at the
  // first mismatch (or after the last draft: the bonus token) is appended too. Sampling:
  // draft x is accepted with probability min(1, p(x) / q(x)); at the first rejection a token
  // is drawn from normalize(max(p - q, 0)) (one-hot q: p without x); after every draft one
  // bonus token is drawn from p. The output is distributed as step() by step() sampling.
  // Stopping rules apply token by token: a row that stops keeps the tokens up to its stop.
  // last_step() then gives accepted, rollback (= draft_lengths[r] - accepted: the cache
  // keeps history + accepted drafts, and next_tokens() is the token to feed next) and the
  // emitted tokens. Rows already finished emit nothing (accepted 0).
  void verify(const float* logits, int64_t rows, int64_t positions, int64_t vocab, const int64_t* drafts,
              const int64_t* draft_lengths, const float* draft_probs = nullptr, const uint32_t* allowed = nullptr);

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

  const Sequences& sequences() const { return state_.seqs; }
  // Whether row r still needs logits (every beam row does while the search runs).
  bool row_running(int64_t r) const { return beam_ ? !beam_->done() : state_.active[r] != 0; }
  // Why row r stopped (greedy / sampling); None while it runs and for beam rows.
  FinishReason finish_reason(int64_t r) const { return state_.reason[r]; }
  // Tokens to feed next, one per row (pad_token_id for finished rows).
  const int64_t* next_tokens() const { return state_.next_tokens.data(); }
  // Under beam search, after a step: the row each row continues; else nullptr.
  const int64_t* beam_indices() const { return beam_ && steps_ > 0 ? state_.parents.data() : nullptr; }
  // Processed logits of the last step (rows, vocab); log-probs under beam search. One
  // buffer, allocated at the first step and kept until the generator is destroyed, so a
  // pointer taken here never dangles; each step overwrites it (a step that throws may
  // leave it partly written: it is the one state a failed step does not restore).
  float* processed_logits() { return scratch_.processed.data(); }
  int64_t pad_token() const { return pad_; }
  // New tokens a prompt of this length may generate.
  int64_t max_new_tokens(int64_t prompt_len) const { return stops_.max_new_tokens(prompt_len); }

  // Whether row r got a token at the last step (rows that finished before it did not).
  bool stepped(int64_t r) const { return steps_ > 0 && state_.stepped[r] != 0; }
  // Mirostat's mu of each row (rows): 2 * mirostat_tau at the start, then after each step
  // mu -= mirostat_eta * (surprise of the row's token in bits - mirostat_tau); under beam
  // search a row continues its parent's mu.
  const float* mirostat_mu() const { return state_.mirostat_mu.data(); }

  // The outcome of the last step (tokens, beam parents, log-probs, top-n; after verify()
  // also accepted, rollback and the emitted tokens), copied out.
  StepOutput last_step() const;

  // Per row over the whole generation: draft tokens given to verify() while the row ran,
  // and how many of them it accepted (the acceptance rate is accepted / drafted).
  int64_t drafted_tokens(int64_t r) const { return state_.drafted_total[r]; }
  int64_t accepted_tokens(int64_t r) const { return state_.accepted_total[r]; }

  // Per input, num_return_sequences hypotheses (best first under beam search).
  std::vector<std::vector<Hypothesis>> results() const;

 private:
  void check_prompts(const std::vector<std::vector<int64_t>>& prompts, const std::vector<int64_t>& sequence_ids) const;
  void set_draw_keys(int64_t batch, int64_t per_input, const std::vector<int64_t>& sequence_ids);
  bool accept_logits_shape(int64_t rows, int64_t vocab);
  void check_allowed(const uint32_t* allowed) const;
  void step_sampling(const float* logits, const uint32_t* allowed);
  void step_beams(const float* logits, const uint32_t* allowed);
  // verify(): shapes and draft checks, each row's outcome into the scratch, the commit.
  void check_verify_inputs(int64_t positions, const int64_t* drafts, const int64_t* draft_lengths,
                           const float* draft_probs, const uint32_t* allowed) const;
  void verify_row(int64_t r, const float* logits, int64_t positions, const int64_t* drafts, int64_t draft_length,
                  const float* draft_probs, const uint32_t* allowed);
  void commit_verified(int64_t positions, const int64_t* draft_lengths);
  // Top-n alternatives of one processed row (with its softmax normalizer; beam search:
  // log-probs as they are) and of its raw logits (raw_lse: their log-sum-exp), written at
  // ids / lp and, when the raw log-probs are kept, raw_ids / raw_lp.
  void row_tops(const float* processed, RowNorm norm, bool processed_are_logprobs, const float* raw, float raw_lse,
                int64_t* ids, float* lp, int64_t* raw_ids, float* raw_lp) const;
  void raw_log_sum_exp(const float* logits);
  // Mirostat's update of a row's mu after a token with this log-probability (nats).
  float next_mirostat_mu(float mu, float token_logprob) const;
  // The top-n alternatives of each row (of the rows in `only`, when not null) from the
  // processed rows (already log-probs under beam search) and the raw logits.
  StepTops compute_tops(const float* logits, bool processed_are_logprobs, const uint8_t* only);

  Sampler sampler_;
  StopRules stops_;
  std::optional<BeamSearch> beam_;
  uint64_t seed_;
  int64_t pad_;
  bool keep_raw_ = false;
  int64_t batch_ = 0, per_input_ = 1, steps_ = 0, vocab_ = 0;
  int64_t verified_positions_ = 0;  // positions of the last call when it was verify(); 0 after step()
  RowState state_;
  StepScratch scratch_;
};

}  // namespace kvgen
