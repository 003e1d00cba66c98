// Beam search with Hugging Face's semantics (transformers GenerationMixin._beam_search,
// the vectorised version of v4.50+): per input, num_beams running beams; each step
// keeps the best (or, when sampling, drawn) K = max(2, 1 + #eos) * num_beams
// continuations, finishes those of the first num_beams that hit a stopping rule into
// a list of the num_beams best hypotheses (score = sum of log-probs / length **
// length_penalty), continues the best num_beams that did not, and stops by the
// early_stopping rule. Arithmetic is float32, as torch's, so ties and cut-offs agree.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "kvgen/generation_config.h"
#include "kvgen/sampling/selection.h"
#include "kvgen/search/sequences.h"
#include "kvgen/search/stopping.h"

namespace kvgen {

// A finished (or returned) sequence.
struct Hypothesis {
  std::vector<int64_t> tokens;      // prompt + generated
  int64_t prompt_length = 0;
  std::vector<float> logprobs;      // processed log-probability of each generated token
  std::vector<float> raw_logprobs;  // log-softmax of the raw logits at each token (when kept)
  // (generated, top_n) the most likely alternatives at each token (GenerationConfig.top_logprobs):
  // ids and processed log-probs, and the raw ones when kept
  std::vector<int64_t> top_ids, raw_top_ids;
  std::vector<float> top_logprobs, raw_top_logprobs;
  double score = 0.0;               // beam: sum(logprobs) / len ** length_penalty; else sum(logprobs)
  FinishReason reason = FinishReason::None;
};

// Copies row r of `seqs` into a hypothesis (optionally followed by one more token).
Hypothesis make_hypothesis(const Sequences& seqs, int64_t r, FinishReason reason, double score);

// What a beam step reads: the processed log-probs of every row, and, when the raw
// log-probabilities are kept, the raw logits they came from.
struct BeamStepInput {
  const float* logprobs = nullptr;    // (batch * num_beams, vocab) processed log-probs
  int64_t vocab = 0;
  const float* raw_logits = nullptr;  // (batch * num_beams, vocab) or null: raw log-probs not kept
  const float* raw_lse = nullptr;     // (batch * num_beams) log-sum-exp of each raw row, with raw_logits
  StepTops tops;                      // the top-n alternatives of every row (appended with its token)
};

// The keys of beam sampling's draws: input b draws keyed by (seed, input_keys[b], step).
struct BeamDrawKeys {
  uint64_t seed = 0;
  const uint64_t* input_keys = nullptr;  // (batch)
  int64_t step = 0;
};

// Where a beam step writes, for every new row.
struct BeamStepOutputs {
  int64_t* parents = nullptr;  // (batch * num_beams) the row each new row continues
  int64_t* tokens = nullptr;   // (batch * num_beams) the token it appends
};

class BeamSearch {
 public:
  BeamSearch(const GenerationConfig& config, int64_t batch);

  int64_t num_beams() const { return beams_; }
  int64_t beams_to_keep() const { return keep_; }

  // One step: picks each input's candidates (the best K, or K draws when sampling),
  // finishes those that hit a stopping rule, reorders `seqs` (reserve_next() done) to the
  // new running beams and appends their tokens (with the top-n alternatives of their
  // parent rows); writes each new row's parent row and token.
  void step(const BeamStepInput& in, const BeamDrawKeys& keys, Sequences& seqs, const StopRules& stops,
            const BeamStepOutputs& out);

  bool done() const { return done_; }

  // The best num_return_sequences hypotheses of each input, best first.
  std::vector<std::vector<Hypothesis>> results(int64_t num_return_sequences) const;

 private:
  struct Candidate {
    float score;         // accumulated log-prob
    int64_t parent;      // row
    int64_t token;
    float logprob;       // processed log-prob of token
    float raw_logprob;
    FinishReason hit;    // stopping rule it hits
  };
  // Hugging Face's score for a beam that is not running (finished, or a copy of beam 0
  // at the first step) and for an empty finished slot. Finite, unlike -inf, so a masked
  // score plus a log-prob stays ordered and never becomes NaN, as in transformers.
  static constexpr float kNotRunning = -1.0e9f;

  struct Slot {
    float score = kNotRunning;
    bool finished = false;
    Hypothesis hyp;
  };

  void select_top(const BeamStepInput& in, int64_t b);
  void select_sampled(const BeamStepInput& in, int64_t b, const BeamDrawKeys& keys);
  // The raw log-probability of token t in row r (0 when the raw logits are not kept).
  static float raw_logprob(const BeamStepInput& in, int64_t r, int64_t t);
  void finish(int64_t b, const Sequences& seqs, const StepTops& tops);

  int64_t batch_, beams_, keep_;
  float length_penalty_;
  EarlyStopping early_;
  bool sample_;
  std::vector<float> running_score_;              // (batch * beams), best first per input
  std::vector<std::vector<Slot>> finished_;       // (batch, beams)
  std::vector<uint8_t> improvable_;               // (batch) HF is_early_stop_heuristic_unsatisfied
  std::vector<Candidate> cands_;                  // (keep) candidates of the input being stepped
  std::vector<float> draw_weights_;               // (beams * vocab) beam sampling scratch
  std::vector<float> merged_;                     // (beams + keep) finished slots' and candidates' scores
  std::vector<int64_t> picks_;                    // (max(keep, beams)) torch_top_k's output
  selection::TopKScratch topk_scratch_;           // torch_top_k's
  std::vector<Slot> next_slots_;                  // (beams) the finished list being built
  std::vector<float> next_score_, next_lp_, next_raw_;  // (batch * beams) of the new running beams
  std::vector<int64_t> order_;                    // (beams) candidates that go on, by adjusted score
  std::vector<float> adjusted_;                   // (keep)
  bool done_ = false;
};

}  // namespace kvgen
