// Logits processors: small classes with one job each, mirroring Hugging Face's
// LogitsProcessor / LogitsWarper classes of the same names (transformers
// generation/logits_process.py), plus OpenAI's presence/frequency penalties.
// Each is stateless: what depends on the past is read from RowContext.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kvgen/generation_config.h"
#include "kvgen/sampling/candidates.h"

namespace kvgen {

class LogitsProcessor {
 public:
  virtual ~LogitsProcessor() = default;
  // Edits the candidates of one row (values in place, or keeps a subset).
  virtual void apply(Candidates& c, const RowContext& ctx, Workspace& ws) const = 0;
  // A short description, e.g. "TopK(k=40)".
  virtual std::string describe() const = 0;
};

using ProcessorPtr = std::unique_ptr<LogitsProcessor>;

// ---- processors: edit values, keep every token ------------------------------------

// Adds a bias to the last token of each sequence whose prefix ends the history (HF
// SequenceBiasLogitsProcessor). With bias -inf it bans sequences (NoBadWords), with
// single tokens it is OpenAI's logit_bias.
class SequenceBiasProcessor : public LogitsProcessor {
 public:
  SequenceBiasProcessor(SequenceBias biases, std::string label);
  void apply(Candidates& c, const RowContext& ctx, Workspace& ws) const override;
  std::string describe() const override;

 private:
  SequenceBias biases_;
  std::string label_;
};

// CTRL repetition penalty: logit / p if > 0 else logit * p, once per distinct token of
// the history (HF RepetitionPenaltyLogitsProcessor).
class RepetitionPenalty : public LogitsProcessor {
 public:
  explicit RepetitionPenalty(double penalty) : penalty_(static_cast<float>(penalty)) {}
  void apply(Candidates& c, const RowContext& ctx, Workspace& ws) const override;
  std::string describe() const override;

 private:
  float penalty_;
};

// OpenAI penalties: logit -= presence * [count > 0] + frequency * count, counts over
// the history.
class PresenceFrequencyPenalty : public LogitsProcessor {
 public:
  PresenceFrequencyPenalty(double presence, double frequency)
      : presence_(static_cast<float>(presence)), frequency_(static_cast<float>(frequency)) {}
  void apply(Candidates& c, const RowContext& ctx, Workspace& ws) const override;
  std::string describe() const override;

 private:
  float presence_, frequency_;
};

// Bans every token that would complete an n-gram already in the history (HF
// NoRepeatNGramLogitsProcessor).
class NoRepeatNGram : public LogitsProcessor {
 public:
  explicit NoRepeatNGram(int64_t n) : n_(n) {}
  void apply(Candidates& c, const RowContext& ctx, Workspace& ws) const override;
  std::string describe() const override;

 private:
  int64_t n_;
};

// Masks the EOS tokens while the history is shorter than a length: the whole history
// (HF MinLengthLogitsProcessor) or only its generated part (MinNewTokensLength...).
class MinLength : public LogitsProcessor {
 public:
  MinLength(int64_t min_length, std::vector<int64_t> eos, bool count_new_tokens_only)
      : min_length_(min_length), eos_(std::move(eos)), new_only_(count_new_tokens_only) {}
  void apply(Candidates& c, const RowContext& ctx, Workspace& ws) const override;
  std::string describe() const override;

 private:
  int64_t min_length_;
  std::vector<int64_t> eos_;
  bool new_only_;
};

// Forces the given tokens (every other token -inf, these 0) when the history has a
// given length: ForcedBOS at length 1, ForcedEOS one before the config's total length
// (HF ForcedBOSTokenLogitsProcessor, ForcedEOSTokenLogitsProcessor).
class ForcedTokens : public LogitsProcessor {
 public:
  enum class When { HistoryLengthOne, OneBeforeMaxLength };
  ForcedTokens(std::vector<int64_t> tokens, When when, std::optional<int64_t> max_length,
               std::optional<int64_t> max_new_tokens)
      : tokens_(std::move(tokens)), when_(when), max_length_(max_length), max_new_tokens_(max_new_tokens) {}
  void apply(Candidates& c, const RowContext& ctx, Workspace& ws) const override;
  std::string describe() const override;

 private:
  std::vector<int64_t> tokens_;
  When when_;
  std::optional<int64_t> max_length_;
  std::optional<int64_t> max_new_tokens_;
};

// NaN -> 0, +inf -> float max, -inf -> float lowest (HF InfNanRemoveLogitsProcessor).
class InfNanRemove : public LogitsProcessor {
 public:
  void apply(Candidates& c, const RowContext& ctx, Workspace& ws) const override;
  std::string describe() const override { return "InfNanRemove()"; }
};

// Masks tokens at every step (HF SuppressTokensLogitsProcessor) or only at the first
// generated position (SuppressTokensAtBeginLogitsProcessor).
class SuppressTokens : public LogitsProcessor {
 public:
  SuppressTokens(std::vector<int64_t> tokens, bool only_at_begin, bool forced_bos)
      : tokens_(std::move(tokens)), at_begin_(only_at_begin), forced_bos_(forced_bos) {}
  void apply(Candidates& c, const RowContext& ctx, Workspace& ws) const override;
  std::string describe() const override;

 private:
  std::vector<int64_t> tokens_;
  bool at_begin_, forced_bos_;
};

// Constrained decoding: tokens whose bit is clear in the row's allowed-token bitmask
// (RowContext::allowed, computed by llguidance from a JSON schema, regex or grammar)
// become -inf. Runs after the other logits processors and before the warpers, so top-k
// and top-p choose among allowed tokens only. A row without a bitmask is left as it is.
class AllowedTokens : public LogitsProcessor {
 public:
  void apply(Candidates& c, const RowContext& ctx, Workspace& ws) const override;
  std::string describe() const override { return "AllowedTokens"; }
};

// Sets row[t] = -inf for every token t < vocab whose bit is clear in `words`.
void mask_disallowed_tokens(float* row, int64_t vocab, const uint32_t* words);

// True when `words` (ceil(vocab / 32) uint32) allows at least one token id < vocab.
bool allows_any_token(const uint32_t* words, int64_t vocab);

// ---- warpers: only when sampling ---------------------------------------------------

// logits / temperature (HF TemperatureLogitsWarper).
class Temperature : public LogitsProcessor {
 public:
  explicit Temperature(float t) : t_(t) {}
  void apply(Candidates& c, const RowContext& ctx, Workspace& ws) const override;
  std::string describe() const override;

 private:
  float t_;
};

// Keeps the tokens >= the k-th largest logit (HF TopKLogitsWarper).
class TopK : public LogitsProcessor {
 public:
  TopK(int64_t k, int64_t min_keep) : k_(k > min_keep ? k : min_keep) {}
  void apply(Candidates& c, const RowContext& ctx, Workspace& ws) const override;
  std::string describe() const override;

 private:
  int64_t k_;
};

// Keeps the smallest set of most likely tokens with probability mass >= p (HF
// TopPLogitsWarper).
class TopP : public LogitsProcessor {
 public:
  TopP(double p, int64_t min_keep) : p_(p), min_keep_(min_keep) {}
  void apply(Candidates& c, const RowContext& ctx, Workspace& ws) const override;
  std::string describe() const override;

 private:
  double p_;
  int64_t min_keep_;
};

// Keeps tokens with p >= min_p * p_max (HF MinPLogitsWarper).
class MinP : public LogitsProcessor {
 public:
  MinP(double min_p, int64_t min_keep) : min_p_(min_p), min_keep_(min_keep) {}
  void apply(Candidates& c, const RowContext& ctx, Workspace& ws) const override;
  std::string describe() const override;

 private:
  double min_p_;
  int64_t min_keep_;
};

// Locally typical sampling: keeps the tokens whose surprisal is closest to the entropy,
// up to mass p (HF TypicalLogitsWarper).
class Typical : public LogitsProcessor {
 public:
  Typical(double mass, int64_t min_keep) : mass_(mass), min_keep_(min_keep) {}
  void apply(Candidates& c, const RowContext& ctx, Workspace& ws) const override;
  std::string describe() const override;

 private:
  double mass_;
  int64_t min_keep_;
};

// Drops tokens with probability < epsilon (HF EpsilonLogitsWarper) or, when
// entropy_scaled, < min(eta, sqrt(eta) * exp(-entropy)) (HF EtaLogitsWarper).
class ProbabilityCutoff : public LogitsProcessor {
 public:
  ProbabilityCutoff(double epsilon, bool entropy_scaled, int64_t min_keep)
      : epsilon_(epsilon), entropy_scaled_(entropy_scaled), min_keep_(min_keep) {}
  void apply(Candidates& c, const RowContext& ctx, Workspace& ws) const override;
  std::string describe() const override;

 private:
  double epsilon_;
  bool entropy_scaled_;  // true: the eta cutoff, which lowers epsilon as the entropy grows
  int64_t min_keep_;
};

// log-softmax over the candidates (HF LogitNormalization).
class LogSoftmax : public LogitsProcessor {
 public:
  void apply(Candidates& c, const RowContext& ctx, Workspace& ws) const override;
  std::string describe() const override { return "LogSoftmax()"; }
};

}  // namespace kvgen
