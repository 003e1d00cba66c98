// Sampler: input checks, the per-row loop, argmax and the keyed multinomial draw.
#include "kvgen/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "kvgen/errors.h"
#include "kvgen/ops/vector_math.h"
#include "kvgen/sampling/rng.h"

namespace kvgen {
Sampler::Sampler(GenerationConfig config) : config_(std::move(config)), chain_(make_chain((config_.validate(), config_))) {}

void Sampler::set_token_texts(const std::vector<std::string>& texts) {
  chain_ = make_chain(config_, &texts);
  has_texts_ = true;
}

bool Sampler::needs_token_texts() const {
  return config_.dry_enabled() && !config_.dry_sequence_breakers.empty() && !has_texts_;
}

RowContext Sampler::row_context(const TokenHistory& history, const DrawKeys& keys, int64_t r) const {
  RowContext ctx = history.row(r);
  ctx.seed = keys.seed;
  ctx.sequence = keys.sequence_ids ? static_cast<uint64_t>(keys.sequence_ids[r]) : static_cast<uint64_t>(r);
  ctx.step = static_cast<uint64_t>(keys.steps ? keys.steps[r] : keys.step);
  ctx.mirostat_mu = keys.mirostat_mu ? keys.mirostat_mu[r] : static_cast<float>(2.0 * config_.mirostat_tau);
  return ctx;
}

void Sampler::check_inputs(const float* logits, int64_t rows, int64_t vocab, const TokenHistory& history) {
  if (needs_token_texts())
    throw ValueError("GenerationConfig.dry_sequence_breakers needs the text of every token: pass token_strings= (or "
                     "a tokenizer), or set dry_sequence_breakers=None");
  if (vocab < 1) throw ValueError("logits must have at least one column (the vocabulary), got 0");
  if (vocab > INT32_MAX) throw ValueError("vocabulary larger than 2^31 tokens is not supported");
  if (vocab != checked_vocab_) {
    config_.validate_vocab(vocab);
    checked_vocab_ = vocab;
  }
  ws_.reserve(vocab);
  for (int64_t r = 0; r < rows; ++r) {
    const RowContext ctx = history.row(r);
    for (int64_t i = 0; i < ctx.history_len; ++i) {
      const int64_t t = ctx.history[i];
      if (t < 0 || t >= vocab) {
        std::ostringstream msg;
        msg << "input_ids[" << r << ", " << i << "] = " << t << " is outside the vocabulary [0, " << vocab << ")";
        throw ValueError(msg.str());
      }
    }
    if (!config_.remove_invalid_values && ops::has_nan(logits + r * vocab, vocab)) {
      std::ostringstream msg;
      msg << "logits row " << r << " contains NaN (set remove_invalid_values=True to replace NaN by 0)";
      throw ValueError(msg.str());
    }
  }
}

void Sampler::process(float* logits, int64_t rows, int64_t vocab, const TokenHistory& history,
                      const DrawKeys* keys) {
  check_inputs(logits, rows, vocab, history);
  const DrawKeys fallback{config_.seed.value_or(0)};
  for (int64_t r = 0; r < rows; ++r) {
    Candidates c(logits + r * vocab, vocab, ws_);
    chain_.apply(c, row_context(history, keys ? *keys : fallback, r), ws_);
    c.materialize();
  }
}

void Sampler::sample(const RowLogits& logits, const TokenHistory& history, const DrawKeys& keys,
                     const SampleOutputs& out) {
  const int64_t vocab = logits.vocab;
  check_inputs(logits.data, logits.rows, vocab, history);
  if (!out.processed && static_cast<int64_t>(row_.size()) < vocab)
    row_ = xt::xtensor<float, 1>::from_shape({static_cast<size_t>(vocab)});
  for (int64_t r = 0; r < logits.rows; ++r) {
    if (logits.active && !logits.active[r]) continue;
    float* dst = out.processed ? out.processed + r * vocab : row_.data();
    std::memcpy(dst, logits.row(r), sizeof(float) * vocab);
    Candidates c(dst, vocab, ws_);
    const RowContext ctx = row_context(history, keys, r);
    chain_.apply(c, ctx, ws_);
    const double u = config_.is_greedy() ? 0.0 : Philox4x32::uniform(keys.seed, ctx.sequence, ctx.step);
    float* logprob = out.logprobs ? out.logprobs + r : nullptr;
    out.tokens[r] = pick(c, u, logprob, logprob && out.norms ? out.norms + r : nullptr, r);
    if (out.processed) c.materialize();
  }
}

// The weights are softmax_weights_into's: when the row max is +inf (a +inf input logit,
// or finite values that processing overflowed), the +inf tokens are the only candidates
// and equally likely: greedy takes the smallest id among them (torch.argmax's tie
// rule), sampling draws one uniformly with the same keyed uniform, and the
// log-probability is -log(their count). A finite max costs nothing extra: the branch is
// on the max this function computes anyway.
int64_t Sampler::pick(Candidates& c, double uniform, float* logprob, RowNorm* norm, int64_t row) {
  const float* v = c.values();
  const int64_t n = c.size();
  const float m = ops::max_of(v, n);
  if (!(m > ops::kNegInf)) {
    std::ostringstream msg;
    msg << "logits row " << row << ": every token has probability 0 after processing (all -inf)";
    throw ValueError(msg.str());
  }
  int64_t pos;
  double sum = 0.0;
  if (config_.is_greedy()) {
    // argmax; among equal logits the smallest token id, as torch.argmax
    pos = ops::find_first(v, n, m);
    if (!c.dense())
      for (int64_t j = pos + 1; j < n; ++j)
        if (v[j] == m && c.id_at(j) < c.id_at(pos)) pos = j;
    if (logprob) sum = ops::softmax_sum(v, n, m);  // only when asked: a pass over the row
  } else {
    float* w = ws_.weights.data();
    sum = ops::softmax_weights_into(w, v, n, m);
    pos = ops::find_cumulative(w, n, uniform * sum);
  }
  if (pos < 0 || pos >= n) {  // unreachable: the max's own weight is positive
    std::ostringstream msg;
    msg << "internal error: logits row " << row << " picked no candidate (max " << m << ", weight sum " << sum << ")";
    throw ValueError(msg.str());
  }
  if (logprob) *logprob = static_cast<float>(ops::log_softmax_at(v[pos], m, std::log(sum)));
  if (norm) *norm = {m, std::log(sum)};
  return c.id_at(pos);
}

}  // namespace kvgen
