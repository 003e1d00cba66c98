// Sampler: a processor chain plus the scratch it needs, applied to [rows, vocab] logits.
// process() edits logits in place (the LogitsProcessor API); sample() reads logits
// without writing them and picks one token per row: argmax when greedy, otherwise a
// draw keyed by (seed, sequence id, step) so that it does not depend on the batch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "kvgen/generation_config.h"
#include "kvgen/sampling/chain.h"

namespace kvgen {

// The token history of each row: ids (rows, stride) row-major, the first `length`
// (or lengths[r]) of each row valid, of which the first prompt_length (or
// prompt_lengths[r]) are the prompt. Also each row's allowed-token bitmask under
// constrained decoding: allowed (rows, allowed_stride) uint32 words, or nullptr.
struct TokenHistory {
  const int64_t* ids = nullptr;
  int64_t stride = 0;
  int64_t length = 0;
  const int64_t* lengths = nullptr;
  int64_t prompt_length = 0;
  const int64_t* prompt_lengths = nullptr;
  const uint32_t* allowed = nullptr;
  int64_t allowed_stride = 0;

  RowContext row(int64_t r) const {
    const int64_t len = lengths ? lengths[r] : length;
    return {ids ? ids + r * stride : nullptr, len, prompt_lengths ? prompt_lengths[r] : prompt_length,
            allowed ? allowed + r * allowed_stride : nullptr};
  }
};

// Keys of the random draw of each row, and mirostat's state.
struct DrawKeys {
  uint64_t seed = 0;
  const int64_t* sequence_ids = nullptr;  // (rows) stable ids; nullptr: the row index
  int64_t step = 0;
  const float* mirostat_mu = nullptr;     // (rows) mirostat's mu; nullptr: its start, 2 * tau
  const int64_t* steps = nullptr;         // (rows) each row's own step; nullptr: `step` for every row
};

// The softmax normalizer of a processed row: log p(x) = (x - max) - log_sum (as
// ops::log_softmax_at), so callers reuse it instead of another pass over the row.
struct RowNorm {
  float max = 0.0f;
  double log_sum = 0.0;
};

// The logits sample() reads, in place and never written: data (rows, vocab) row-major.
// active (rows, optional): rows with 0 are skipped (their outputs left as they are).
struct RowLogits {
  const float* data = nullptr;
  int64_t rows = 0;
  int64_t vocab = 0;
  const uint8_t* active = nullptr;

  const float* row(int64_t r) const { return data + r * vocab; }
};

// Where sample() writes, one entry per row; every pointer but tokens is optional.
struct SampleOutputs {
  int64_t* tokens = nullptr;   // (rows) the token picked
  float* logprobs = nullptr;   // (rows) its log-probability under the processed distribution
  float* processed = nullptr;  // (rows, vocab) the processed logits
  RowNorm* norms = nullptr;    // (rows) each processed row's softmax normalizer (with logprobs)
};

class Sampler {
 public:
  explicit Sampler(GenerationConfig config);

  const GenerationConfig& config() const { return config_; }
  const Chain& chain() const { return chain_; }

  // The text of every token id: DRY's sequence breakers are matched on them.
  void set_token_texts(const std::vector<std::string>& texts);
  // DRY is on with sequence breakers and set_token_texts was not called.
  bool needs_token_texts() const;

  // Applies the chain to every row of logits (rows, vocab) in place; filtered tokens
  // become -inf. Validates everything before writing anything. keys: XTC's coin and
  // mirostat's mu (default: seed 0 or the config's, row index, step 0, mu = 2 * tau).
  void process(float* logits, int64_t rows, int64_t vocab, const TokenHistory& history, const DrawKeys* keys = nullptr);

  // Picks a token per row of logits (the active ones), which are only read, and writes
  // what `out` asks for.
  void sample(const RowLogits& logits, const TokenHistory& history, const DrawKeys& keys, const SampleOutputs& out);

 private:
  void check_inputs(const float* logits, int64_t rows, int64_t vocab, const TokenHistory& history);
  // What the chain sees of row r: its history, draw key and mirostat state.
  RowContext row_context(const TokenHistory& history, const DrawKeys& keys, int64_t r) const;
  // Picks the token of one processed row; returns it and, if logprob is not null,
  // writes its log-probability (and the row's normalizer into norm, if not null).
  int64_t pick(Candidates& c, double uniform, float* logprob, RowNorm* norm, int64_t row);

  GenerationConfig config_;
  Chain chain_;
  Workspace ws_;
  xt::xtensor<float, 1> row_;   // (vocab) processed row when the caller wants none back
  int64_t checked_vocab_ = -1;  // config token ids were checked against this vocab
  bool has_texts_ = false;      // set_token_texts was called
};

}  // namespace kvgen
