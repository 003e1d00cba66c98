// TokenSelector: prompts -> rows, the per-step loop for sampling and beam search, results.
#include "kvgen/token_selector.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "kvgen/errors.h"
#include "kvgen/ops/vector_math.h"
#include "kvgen/limits.h"
#include "kvgen/sampling/rng.h"
#include "kvgen/sampling/top_logprobs.h"

namespace kvgen {
namespace {

// A draft probability that is no probability (NaN, negative, infinite): ValueError naming it.
// Checked where verify() reads it (q(x) of every draft, the whole row after a rejection), so
// a large vocabulary costs no extra pass per draft.
void check_draft_prob(float value, int64_t r, int64_t j, int64_t t) {
  if (value >= 0.0f && value < ops::kPosInf) return;
  throw ValueError("draft_probs[" + std::to_string(r) + ", " + std::to_string(j) + ", " + std::to_string(t) +
                   "] = " + std::to_string(value) + ": the draft probabilities must be finite and >= 0");
}

int64_t pad_of(const GenerationConfig& c) {
  if (c.pad_token_id) return *c.pad_token_id;
  return c.eos_token_id.empty() ? 0 : c.eos_token_id.front();  // HF: pad = eos[0]
}

// Philox lanes of verify()'s own draws (lane 0 is the sampler's token draw, 1 XTC's coin):
// the coin that accepts a draft, and the draw from the residual after a rejection.
constexpr uint32_t kAcceptLane = 2;
constexpr uint32_t kResidualLane = 3;

}  // namespace

float TokenSelector::next_mirostat_mu(float mu, float token_logprob) const {
  // llama.cpp: mu -= eta * (observed surprise - tau), the surprise -log2 p in bits
  const float surprise = -token_logprob / static_cast<float>(M_LN2);
  return mu - static_cast<float>(config().mirostat_eta) * (surprise - static_cast<float>(config().mirostat_tau));
}

TokenSelector::TokenSelector(GenerationConfig config)
    : sampler_(config), stops_(config), seed_(config.resolved_seed()), pad_(pad_of(config)) {}

void TokenSelector::set_token_texts(std::vector<std::string> texts) {
  if (started()) throw ValueError("set the token texts before append_tokens()");
  sampler_.set_token_texts(texts);
  stops_.set_token_texts(std::move(texts));
}

void TokenSelector::check_prompts(const std::vector<std::vector<int64_t>>& prompts,
                              const std::vector<int64_t>& sequence_ids) const {
  const GenerationConfig& cfg = config();
  if (prompts.empty()) throw ValueError("append_tokens() needs at least one prompt");
  if (!sequence_ids.empty() && sequence_ids.size() != prompts.size())
    throw ValueError("sequence_ids has " + std::to_string(sequence_ids.size()) + " entries, expected one per prompt (" +
                     std::to_string(prompts.size()) + ")");
  // rows = prompts x per_input, checked without forming a product that could overflow
  const int64_t batch = static_cast<int64_t>(prompts.size());
  const int64_t per_input = cfg.num_beams > 1 ? cfg.num_beams : cfg.num_return_sequences;
  if (per_input > limits::kMaxRows / batch) {
    std::ostringstream msg;
    msg << batch << " prompts x GenerationConfig." << (cfg.num_beams > 1 ? "num_beams" : "num_return_sequences")
        << " = " << per_input << " rows is above kvgen's limit of " << limits::kMaxRows << " rows (kMaxRows)";
    throw ValueError(msg.str());
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto& p = prompts[i];
    if (p.empty()) throw ValueError("prompt " + std::to_string(i) + " is empty: a prompt needs at least one token");
    for (int64_t t : p)
      if (t < 0) throw ValueError("prompt " + std::to_string(i) + " contains a negative token id " + std::to_string(t));
    const int64_t len = static_cast<int64_t>(p.size());
    const int64_t n = stops_.max_new_tokens(len);
    if (n < 1) {
      std::ostringstream msg;
      msg << "prompt " << i << " has " << len << " tokens, which reaches GenerationConfig.max_length = "
          << cfg.max_length.value_or(0) << ": nothing to generate (raise max_length or set max_new_tokens)";
      throw ValueError(msg.str());
    }
    if (n > limits::kMaxSequenceLength - len) {
      std::ostringstream msg;
      msg << "prompt " << i << " has " << len << " tokens and "
          << (cfg.max_new_tokens ? "GenerationConfig.max_new_tokens = " + std::to_string(*cfg.max_new_tokens)
                                 : "GenerationConfig.max_length = " + std::to_string(cfg.max_length.value_or(0)))
          << " lets it grow by " << n << ": above kvgen's limit of " << limits::kMaxSequenceLength
          << " tokens per row (kMaxSequenceLength)";
      throw ValueError(msg.str());
    }
  }
}

void TokenSelector::set_draw_keys(int64_t batch, int64_t per_input, const std::vector<int64_t>& sequence_ids) {
  // Row k of input b draws with key id_b * per_input + k (unsigned, wrapping): distinct
  // within a prompt, equal to the row index for the default ids 0, 1, 2, ...
  state_.input_keys.resize(batch);
  state_.row_keys.resize(batch * per_input);
  for (int64_t b = 0; b < batch; ++b) {
    const uint64_t key = static_cast<uint64_t>(sequence_ids.empty() ? b : sequence_ids[b]);
    state_.input_keys[b] = key;
    for (int64_t k = 0; k < per_input; ++k)
      state_.row_keys[b * per_input + k] =
          static_cast<int64_t>(key * static_cast<uint64_t>(per_input) + static_cast<uint64_t>(k));
  }
}

void TokenSelector::append_tokens(const std::vector<std::vector<int64_t>>& prompts,
                              const std::vector<int64_t>& sequence_ids) {
  const GenerationConfig& cfg = config();
  if (started()) throw ValueError("append_tokens() was already called: a TokenSelector runs one batch of prompts");
  if (stops_.needs_token_texts())  // needs_token_texts(): the same two rules
    throw ValueError("GenerationConfig.stop_strings needs the text of every token: pass token_strings= (or a tokenizer)");
  if (sampler_.needs_token_texts())
    throw ValueError("GenerationConfig.dry_sequence_breakers needs the text of every token: pass token_strings= (or "
                     "a tokenizer), or set dry_sequence_breakers=None");
  check_prompts(prompts, sequence_ids);
  int64_t max_new = 0;
  for (const auto& p : prompts) max_new = std::max(max_new, stops_.max_new_tokens(static_cast<int64_t>(p.size())));
  const int64_t batch = static_cast<int64_t>(prompts.size());
  const int64_t per_input = cfg.num_beams > 1 ? cfg.num_beams : cfg.num_return_sequences;
  std::vector<std::vector<int64_t>> rows;
  rows.reserve(batch * per_input);
  for (const auto& p : prompts)
    for (int64_t k = 0; k < per_input; ++k) rows.push_back(p);
  const size_t n = rows.size();
  const size_t tops = n * cfg.top_logprobs, raw_tops = keep_raw_ ? tops : 0;
  RowState& st = state_;
  st.seqs.reset(rows, max_new, keep_raw_, cfg.num_beams > 1, cfg.top_logprobs);
  st.reason.assign(n, FinishReason::None);
  st.active.assign(n, 1);
  st.stepped.assign(n, 0);
  st.next_tokens.assign(n, pad_);
  st.parents.assign(n, 0);
  st.mirostat_mu.assign(n, static_cast<float>(2.0 * cfg.mirostat_tau));
  st.emitted.assign(n, 0);
  st.accepted.assign(n, 0);
  st.rollback.assign(n, 0);
  st.drafted_total.assign(n, 0);
  st.accepted_total.assign(n, 0);
  StepScratch& sc = scratch_;
  sc.drawn.assign(n, pad_);
  sc.logprobs.assign(n, 0.0f);
  sc.norms.assign(n, RowNorm{});
  sc.hits.assign(n, FinishReason::None);
  sc.raw_lse.assign(n, 0.0f);
  sc.next_mu.assign(cfg.num_beams > 1 && cfg.uses_mirostat() ? n : 0, 0.0f);
  sc.top_ids.assign(tops, -1);
  sc.top_logprobs.assign(tops, 0.0f);
  sc.raw_top_ids.assign(raw_tops, -1);
  sc.raw_top_logprobs.assign(raw_tops, 0.0f);
  sc.row_steps.assign(n, 0);
  sc.spec_count.assign(n, 0);
  sc.spec_accepted.assign(n, 0);
  sc.spec_mu.assign(n, 0.0f);
  set_draw_keys(batch, per_input, sequence_ids);
  if (cfg.num_beams > 1) beam_.emplace(cfg, batch);
  per_input_ = per_input;
  batch_ = batch;  // last: started() is true only once the set-up is complete
}

bool TokenSelector::done() const {
  if (!started()) return false;
  if (beam_) return beam_->done();
  return std::none_of(state_.active.begin(), state_.active.end(), [](uint8_t a) { return a != 0; });
}

void TokenSelector::check_allowed(const uint32_t* allowed) const {
  if (!config().has_constraint()) {
    if (allowed) throw ValueError("an allowed-token mask was given, but the GenerationConfig has no constraint");
    return;
  }
  if (!allowed)
    throw ValueError("the GenerationConfig has a constraint (json_schema, regex, grammar or choices): each step "
                     "needs the allowed-token mask, which kvgen computes from a tokenizer (pass tokenizer= to the "
                     "TokenSelector)");
  const int64_t words = (vocab_ + 31) / 32;
  for (int64_t r = 0; r < rows(); ++r)
    if (row_running(r) && !allows_any_token(allowed + r * words, vocab_))
      throw ValueError("constrained decoding: the constraint allows no token for row " + std::to_string(r) +
                       " (its mask is empty); the grammar cannot go on from the tokens generated so far");
}

void TokenSelector::stop_row(int64_t r) {
  if (beam_) throw ValueError("stop_row() is for greedy / sampling rows; beam search finishes through EOS");
  if (r < 0 || r >= rows()) throw ValueError("stop_row: row " + std::to_string(r) + " is out of range");
  if (!state_.active[r]) return;
  state_.active[r] = 0;
  state_.reason[r] = FinishReason::Stop;
  state_.next_tokens[r] = pad_;
}

// Checks a step's or verify's logits shape against the rows and the vocabulary of the first
// call, and allocates the processed-logits buffer at the first call (last_logits views it for
// the generator's lifetime). True at the first call.
bool TokenSelector::accept_logits_shape(int64_t rows, int64_t vocab) {
  if (rows != this->rows()) {
    std::ostringstream msg;
    msg << "logits has " << rows << " rows, expected " << this->rows() << " (" << batch_ << " prompts x "
        << per_input_ << (beam_ ? " beams)" : " sequences each)");
    throw ValueError(msg.str());
  }
  if (vocab_ != 0 && vocab != vocab_)
    throw ValueError("logits has a vocabulary of " + std::to_string(vocab) + ", the first step had " +
                     std::to_string(vocab_));
  stops_.check_token_texts(vocab);
  if (vocab_ != 0) return false;
  scratch_.processed = xt::xtensor<float, 2>::from_shape({static_cast<size_t>(rows), static_cast<size_t>(vocab)});
  vocab_ = vocab;
  return true;
}

void TokenSelector::step(const float* logits, int64_t rows, int64_t vocab, const uint32_t* allowed) {
  if (!started()) throw ValueError("call append_tokens(prompts) before step()");
  if (done()) throw ValueError("the generation is finished (is_done() is True): nothing more to step");
  const bool first = accept_logits_shape(rows, vocab);
  try {
    check_allowed(allowed);
    state_.seqs.reserve_next();
    if (beam_)
      step_beams(logits, allowed);
    else
      step_sampling(logits, allowed);
  } catch (...) {
    if (first) vocab_ = 0;  // a failed first step fixes no vocabulary
    throw;
  }
  ++steps_;
  verified_positions_ = 0;
}

void TokenSelector::raw_log_sum_exp(const float* logits) {
  // +inf for a row holding +inf, -inf for an all -inf row (never NaN): ops::log_sum_exp
  for (int64_t r = 0; r < rows(); ++r) scratch_.raw_lse[r] = ops::log_sum_exp(logits + r * vocab_, vocab_);
}

void TokenSelector::row_tops(const float* processed, RowNorm norm, bool processed_are_logprobs, const float* raw,
                         float raw_lse, int64_t* ids, float* lp, int64_t* raw_ids, float* raw_lp) const {
  const int64_t n = config().top_logprobs;
  top_ids(processed, vocab_, n, ids);
  // the token's own log-prob's normalizer (Sampler::pick's; beam search: the values as they are)
  const float m = processed_are_logprobs ? 0.0f : norm.max;
  const double log_sum = processed_are_logprobs ? 0.0 : norm.log_sum;
  for (int64_t j = 0; j < n; ++j)
    lp[j] = ids[j] < 0 ? ops::kNegInf : static_cast<float>(ops::log_softmax_at(processed[ids[j]], m, log_sum));
  if (!keep_raw_) return;
  top_ids(raw, vocab_, n, raw_ids);
  for (int64_t j = 0; j < n; ++j)
    raw_lp[j] = raw_ids[j] < 0 ? ops::kNegInf : ops::log_softmax_entry(raw, vocab_, raw_ids[j], raw_lse);
}

StepTops TokenSelector::compute_tops(const float* logits, bool processed_are_logprobs, const uint8_t* only) {
  const int64_t n = config().top_logprobs;
  if (n == 0) return {};
  StepScratch& sc = scratch_;
  for (int64_t r = 0; r < rows(); ++r) {
    if (only && !only[r]) continue;
    row_tops(sc.processed.data() + r * vocab_, processed_are_logprobs ? RowNorm{} : sc.norms[r],
             processed_are_logprobs, logits + r * vocab_, keep_raw_ ? sc.raw_lse[r] : 0.0f,
             sc.top_ids.data() + r * n, sc.top_logprobs.data() + r * n,
             keep_raw_ ? sc.raw_top_ids.data() + r * n : nullptr, keep_raw_ ? sc.raw_top_logprobs.data() + r * n : nullptr);
  }
  return {n, sc.top_ids.data(), sc.top_logprobs.data(), keep_raw_ ? sc.raw_top_ids.data() : nullptr,
          keep_raw_ ? sc.raw_top_logprobs.data() : nullptr};
}

void TokenSelector::step_sampling(const float* logits, const uint32_t* allowed) {
  // Every row's outcome first (the sampler and the stop rules may throw), then the commit.
  RowState& st = state_;
  StepScratch& sc = scratch_;
  TokenHistory history = st.seqs.history();
  history.allowed = allowed;
  history.allowed_stride = (vocab_ + 31) / 32;
  // each row draws at its own token index (= steps_ unless verify() advanced rows unevenly)
  for (int64_t r = 0; r < rows(); ++r) sc.row_steps[r] = st.seqs.generated(r);
  sampler_.sample(RowLogits{.data = logits, .rows = rows(), .vocab = vocab_, .active = st.active.data()}, history,
                  DrawKeys{.seed = seed_, .sequence_ids = st.row_keys.data(), .step = steps_,
                           .mirostat_mu = st.mirostat_mu.data(), .steps = sc.row_steps.data()},
                  SampleOutputs{.tokens = sc.drawn.data(), .logprobs = sc.logprobs.data(),
                                .processed = sc.processed.data(),
                                .norms = config().top_logprobs ? sc.norms.data() : nullptr});
  if (keep_raw_) raw_log_sum_exp(logits);
  for (int64_t r = 0; r < rows(); ++r)
    if (st.active[r])
      sc.hits[r] = stops_.check(st.seqs.tokens(r), st.seqs.length(r), st.seqs.prompt_length(r), sc.drawn[r]);
  const StepTops tops = compute_tops(logits, false, st.active.data());
  const bool mirostat = config().uses_mirostat();
  for (int64_t r = 0; r < rows(); ++r) {
    st.stepped[r] = st.active[r];
    if (!st.active[r]) {
      st.next_tokens[r] = pad_;
      continue;
    }
    const int64_t t = sc.drawn[r];
    st.next_tokens[r] = t;
    const float raw = keep_raw_ ? ops::log_softmax_entry(logits + r * vocab_, vocab_, t, sc.raw_lse[r]) : 0.0f;
    st.seqs.append(r, t, sc.logprobs[r], raw, tops, r);
    if (mirostat) st.mirostat_mu[r] = next_mirostat_mu(st.mirostat_mu[r], sc.logprobs[r]);
    if (sc.hits[r] != FinishReason::None) {
      st.reason[r] = sc.hits[r];
      st.active[r] = 0;
    }
  }
}

void TokenSelector::step_beams(const float* logits, const uint32_t* allowed) {
  // HF: log_softmax of the raw logits, then the processors (and warpers when sampling).
  // kvgen's rule where HF gives NaN: +inf entries share the mass (-log count each).
  // Constrained: the disallowed tokens are masked before the log-softmax, so that a beam's
  // score is its log-probability among the allowed tokens (a beam forced through a token
  // the grammar requires loses nothing).
  RowState& st = state_;
  StepScratch& sc = scratch_;
  raw_log_sum_exp(logits);
  float* lp = sc.processed.data();
  TokenHistory history = st.seqs.history();
  history.allowed = allowed;
  history.allowed_stride = (vocab_ + 31) / 32;
  for (int64_t r = 0; r < rows(); ++r) {
    float* row = lp + r * vocab_;
    if (!allowed) {
      ops::log_softmax_into(row, logits + r * vocab_, vocab_, sc.raw_lse[r]);
      continue;
    }
    std::copy(logits + r * vocab_, logits + (r + 1) * vocab_, row);
    mask_disallowed_tokens(row, vocab_, history.row(r).allowed);
    ops::log_softmax_into(row, row, vocab_, ops::log_sum_exp(row, vocab_));
  }
  const DrawKeys keys{.seed = seed_, .sequence_ids = st.row_keys.data(), .step = steps_,
                      .mirostat_mu = st.mirostat_mu.data()};
  sampler_.process(lp, rows(), vocab_, history, &keys);
  const StepTops tops = compute_tops(logits, true, nullptr);
  beam_->step(BeamStepInput{.logprobs = lp, .vocab = vocab_, .raw_logits = keep_raw_ ? logits : nullptr,
                            .raw_lse = sc.raw_lse.data(), .tops = tops},
              BeamDrawKeys{.seed = seed_, .input_keys = st.input_keys.data(), .step = steps_}, st.seqs, stops_,
              BeamStepOutputs{.parents = st.parents.data(), .tokens = st.next_tokens.data()});
  std::fill(st.stepped.begin(), st.stepped.end(), 1);
  if (config().uses_mirostat()) {
    // each row continues its parent's mu, updated by the surprise of its token under the
    // parent's truncated distribution (renormalized, as mirostat's draw sees it)
    for (int64_t r = 0; r < rows(); ++r) {
      const float* parent = lp + st.parents[r] * vocab_;
      sc.next_mu[r] = next_mirostat_mu(st.mirostat_mu[st.parents[r]],
                                       parent[st.next_tokens[r]] - ops::log_sum_exp(parent, vocab_));
    }
    std::copy(sc.next_mu.begin(), sc.next_mu.end(), st.mirostat_mu.begin());
  }
}

void TokenSelector::check_verify_inputs(int64_t positions, const int64_t* drafts, const int64_t* draft_lengths,
                                    const float* draft_probs, const uint32_t* allowed) const {
  const int64_t k = positions - 1;
  if (!draft_lengths) throw ValueError("verify() needs draft_lengths (one per row)");
  if (k > 0 && !drafts) throw ValueError("verify() needs the drafts (rows, k) when k = positions - 1 > 0");
  for (int64_t r = 0; r < rows(); ++r) {
    const int64_t n = draft_lengths[r];
    if (n < 0 || n > k)
      throw ValueError("draft_lengths[" + std::to_string(r) + "] = " + std::to_string(n) + " is outside 0 .. k = " +
                       std::to_string(k) + " (k + 1 = the logits' positions)");
    for (int64_t j = 0; j < n; ++j) {
      const int64_t t = drafts[r * k + j];
      if (t < 0 || t >= vocab_)
        throw ValueError("drafts[" + std::to_string(r) + ", " + std::to_string(j) + "] = " + std::to_string(t) +
                         " is outside the vocabulary [0, " + std::to_string(vocab_) + ")");
    }
  }
  if (!config().has_constraint()) {
    if (allowed) throw ValueError("an allowed-token mask was given, but the GenerationConfig has no constraint");
  } else if (!allowed) {
    throw ValueError("the GenerationConfig has a constraint (json_schema, regex, grammar or choices): verify() needs "
                     "the allowed-token mask of every position (rows, k + 1, ceil(vocab / 32))");
  }
}

void TokenSelector::verify(const float* logits, int64_t rows, int64_t positions, int64_t vocab, const int64_t* drafts,
                       const int64_t* draft_lengths, const float* draft_probs, const uint32_t* allowed) {
  if (!started()) throw ValueError("call append_tokens(prompts) before verify()");
  if (beam_)
    throw ValueError("verify() does not support beam search (num_beams > 1): speculative decoding keeps one "
                     "continuation per row; use step()");
  if (done()) throw ValueError("the generation is finished (is_done() is True): nothing more to verify");
  if (positions < 1 || positions > limits::kMaxSequenceLength)
    throw ValueError("logits has " + std::to_string(positions) + " positions per row; verify() needs k + 1 >= 1");
  const bool first = accept_logits_shape(rows, vocab);
  try {
    if (vocab < 1) throw ValueError("logits must have at least one column (the vocabulary), got 0");
    check_verify_inputs(positions, drafts, draft_lengths, draft_probs, allowed);
    StepScratch& sc = scratch_;
    const size_t slots = static_cast<size_t>(limits::checked_mul(rows, positions, "verify() rows x positions"));
    const size_t n_top = static_cast<size_t>(config().top_logprobs);
    if (sc.spec_tokens.size() < slots) {  // grows only when a call brings a larger k
      sc.spec_tokens.resize(slots);
      sc.spec_logprobs.resize(slots);
      if (keep_raw_) sc.spec_raw.resize(slots);
      sc.spec_top_ids.resize(slots * n_top);
      sc.spec_top_logprobs.resize(slots * n_top);
      if (keep_raw_) {
        sc.spec_raw_top_ids.resize(slots * n_top);
        sc.spec_raw_top_logprobs.resize(slots * n_top);
      }
    }
    if (!config().is_greedy() && static_cast<int64_t>(sc.residual.size()) < vocab_) sc.residual.resize(vocab_);
    state_.seqs.reserve_next(positions);
    for (int64_t r = 0; r < rows; ++r) {
      sc.hits[r] = FinishReason::None;
      sc.spec_count[r] = sc.spec_accepted[r] = 0;
      if (state_.active[r]) verify_row(r, logits, positions, drafts, draft_lengths[r], draft_probs, allowed);
    }
  } catch (...) {
    if (first) vocab_ = 0;  // a failed first step fixes no vocabulary
    throw;
  }
  commit_verified(positions, draft_lengths);  // cannot throw: room was reserved
  ++steps_;
  verified_positions_ = positions;
}

void TokenSelector::verify_row(int64_t r, const float* logits, int64_t positions, const int64_t* drafts,
                           int64_t draft_length, const float* draft_probs, const uint32_t* allowed) {
  RowState& st = state_;
  StepScratch& sc = scratch_;
  const int64_t k = positions - 1, vocab = vocab_, words = (vocab + 31) / 32;
  const bool greedy = config().is_greedy(), mirostat = config().uses_mirostat();
  const int64_t len0 = st.seqs.length(r), g0 = st.seqs.generated(r), prompt = st.seqs.prompt_length(r);
  // drafts past the row's length limit can never be kept (the limit stops the row first)
  const int64_t n_drafts = std::min(draft_length, stops_.max_new_tokens(prompt) - g0);
  const int64_t* draft = drafts ? drafts + r * k : nullptr;
  if (n_drafts > 0) st.seqs.stage(r, draft, n_drafts);  // the history of position j reads drafts 0 .. j-1
  const uint64_t key = static_cast<uint64_t>(st.row_keys[r]);
  const int64_t n_top = config().top_logprobs;
  float mu = st.mirostat_mu[r];
  float* processed = sc.processed.data() + r * vocab;  // (vocab) ends as the last emitted position's
  int64_t accepted = 0, count = 0;
  for (int64_t j = 0; j <= n_drafts; ++j) {
    const int64_t slot = r * positions + j;
    const float* row = logits + slot * vocab;
    const uint32_t* mask = allowed ? allowed + slot * words : nullptr;
    if (mask && !allows_any_token(mask, vocab))
      throw ValueError("constrained decoding: the constraint allows no token for row " + std::to_string(r) +
                       " at position " + std::to_string(j) + " (its mask is empty)");
    const int64_t step = g0 + j;  // the row's token index keys its draws, as step() does
    TokenHistory history{.ids = st.seqs.tokens(r), .stride = 0, .length = len0 + j, .prompt_length = prompt,
                         .allowed = mask};
    int64_t drawn = 0;
    float drawn_lp = 0.0f;
    RowNorm norm;
    const int64_t key_id = st.row_keys[r];
    sampler_.sample(RowLogits{.data = row, .rows = 1, .vocab = vocab}, history,
                    DrawKeys{.seed = seed_, .sequence_ids = &key_id, .step = step, .mirostat_mu = &mu},
                    SampleOutputs{.tokens = &drawn, .logprobs = &drawn_lp, .processed = processed, .norms = &norm});
    int64_t token = drawn;
    float token_lp = drawn_lp;
    bool accept = false;
    if (j < n_drafts) {
      const int64_t x = draft[j];
      const double lpx = ops::log_softmax_at(processed[x], norm.max, norm.log_sum);
      const float* q = draft_probs ? draft_probs + (r * k + j) * vocab : nullptr;
      if (greedy) {
        accept = drawn == x;
      } else {
        // accept with probability min(1, p(x) / q(x)): u * q(x) < p(x) for u uniform in [0, 1)
        if (q) check_draft_prob(q[x], r, j, x);
        const double px = std::exp(lpx), qx = q ? static_cast<double>(q[x]) : 1.0;
        accept = Philox4x32::uniform(seed_, key, static_cast<uint64_t>(step), kAcceptLane) * qx < px;
      }
      if (accept) {
        token = x;
        token_lp = static_cast<float>(lpx);
        ++accepted;
      } else if (!greedy) {
        // the residual normalize(max(p - q, 0)); one-hot q: p without x
        float* w = sc.residual.data();
        const double sum = ops::softmax_weights_into(w, processed, vocab, norm.max);
        double total = 0.0;
        if (q) {
          for (int64_t t = 0; t < vocab; ++t) {
            check_draft_prob(q[t], r, j, t);
            w[t] = std::max(static_cast<float>(w[t] / sum - q[t]), 0.0f);
            total += w[t];
          }
        } else {
          w[x] = 0.0f;
          for (int64_t t = 0; t < vocab; ++t) total += w[t];
        }
        if (!(total > 0.0))  // p <= q everywhere (rounding): p itself
          total = ops::softmax_weights_into(w, processed, vocab, norm.max);
        const double u = Philox4x32::uniform(seed_, key, static_cast<uint64_t>(step), kResidualLane);
        token = ops::find_cumulative(w, vocab, u * total);
        token_lp = static_cast<float>(ops::log_softmax_at(processed[token], norm.max, norm.log_sum));
      }
    }
    sc.spec_tokens[slot] = token;
    sc.spec_logprobs[slot] = token_lp;
    const float raw_lse = keep_raw_ ? ops::log_sum_exp(row, vocab) : 0.0f;
    if (keep_raw_) sc.spec_raw[slot] = ops::log_softmax_entry(row, vocab, token, raw_lse);
    if (n_top)
      row_tops(processed, norm, false, row, raw_lse, sc.spec_top_ids.data() + slot * n_top,
               sc.spec_top_logprobs.data() + slot * n_top,
               keep_raw_ ? sc.spec_raw_top_ids.data() + slot * n_top : nullptr,
               keep_raw_ ? sc.spec_raw_top_logprobs.data() + slot * n_top : nullptr);
    if (mirostat) mu = next_mirostat_mu(mu, token_lp);
    count = j + 1;
    // the history before this token: prompt, earlier tokens and the accepted drafts (staged)
    sc.hits[r] = stops_.check(st.seqs.tokens(r), len0 + j, prompt, token);
    if (sc.hits[r] != FinishReason::None || !accept) break;
  }
  sc.spec_count[r] = count;
  sc.spec_accepted[r] = accepted;
  sc.spec_mu[r] = mu;
}

void TokenSelector::commit_verified(int64_t positions, const int64_t* draft_lengths) {
  RowState& st = state_;
  StepScratch& sc = scratch_;
  const int64_t n_top = config().top_logprobs;
  const StepTops tops{n_top, sc.spec_top_ids.data(), sc.spec_top_logprobs.data(),
                      keep_raw_ ? sc.spec_raw_top_ids.data() : nullptr,
                      keep_raw_ ? sc.spec_raw_top_logprobs.data() : nullptr};
  const bool mirostat = config().uses_mirostat();
  for (int64_t r = 0; r < rows(); ++r) {
    st.stepped[r] = st.active[r];
    st.emitted[r] = sc.spec_count[r];
    st.accepted[r] = sc.spec_accepted[r];
    st.rollback[r] = draft_lengths[r] - sc.spec_accepted[r];
    if (!st.active[r]) {
      st.next_tokens[r] = pad_;
      continue;
    }
    st.drafted_total[r] += draft_lengths[r];
    st.accepted_total[r] += sc.spec_accepted[r];
    for (int64_t i = 0; i < sc.spec_count[r]; ++i) {
      const int64_t slot = r * positions + i;
      st.seqs.append(r, sc.spec_tokens[slot], sc.spec_logprobs[slot], keep_raw_ ? sc.spec_raw[slot] : 0.0f, tops,
                     slot);
    }
    st.next_tokens[r] = sc.spec_tokens[r * positions + sc.spec_count[r] - 1];
    if (mirostat) st.mirostat_mu[r] = sc.spec_mu[r];
    if (sc.hits[r] != FinishReason::None) {
      st.reason[r] = sc.hits[r];
      st.active[r] = 0;
    }
  }
}

StepOutput TokenSelector::last_step() const {
  const Sequences& s = state_.seqs;
  const int64_t n = s.top_n(), rows = this->rows();
  const bool raw = n > 0 && rows > 0 && s.raw_top_ids(0) != nullptr;
  StepOutput o;
  o.tokens.assign(state_.next_tokens.begin(), state_.next_tokens.end());
  if (const int64_t* p = beam_indices()) o.beam_indices.emplace(p, p + rows);
  o.done = done();
  o.top_n = n;
  o.logprobs.assign(rows, ops::kNegInf);
  o.top_ids.assign(rows * n, -1);
  o.top_logprobs.assign(rows * n, ops::kNegInf);
  if (raw) {
    o.raw_top_ids = o.top_ids;
    o.raw_top_logprobs = o.top_logprobs;
  }
  for (int64_t r = 0; r < rows; ++r) {
    if (!stepped(r)) continue;
    const int64_t last = s.generated(r) - 1;  // the token the last step appended
    o.logprobs[r] = s.logprobs(r)[last];
    if (n == 0) continue;
    const int64_t from = last * n, to = from + n;
    std::copy(s.top_ids(r) + from, s.top_ids(r) + to, o.top_ids.begin() + r * n);
    std::copy(s.top_logprobs(r) + from, s.top_logprobs(r) + to, o.top_logprobs.begin() + r * n);
    if (!raw) continue;
    std::copy(s.raw_top_ids(r) + from, s.raw_top_ids(r) + to, o.raw_top_ids.begin() + r * n);
    std::copy(s.raw_top_logprobs(r) + from, s.raw_top_logprobs(r) + to, o.raw_top_logprobs.begin() + r * n);
  }
  const int64_t P = verified_positions_;
  if (P == 0) return o;
  o.positions = P;
  o.accepted = state_.accepted;
  o.rollback = state_.rollback;
  o.num_emitted = state_.emitted;
  o.emitted.assign(rows * P, -1);
  o.emitted_logprobs.assign(rows * P, ops::kNegInf);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t e = state_.emitted[r], from = s.generated(r) - e;
    std::copy(s.tokens(r) + s.length(r) - e, s.tokens(r) + s.length(r), o.emitted.begin() + r * P);
    std::copy(s.logprobs(r) + from, s.logprobs(r) + from + e, o.emitted_logprobs.begin() + r * P);
  }
  return o;
}

std::vector<std::vector<Hypothesis>> TokenSelector::results() const {
  const int64_t want = config().num_return_sequences;
  if (beam_) return beam_->results(want);
  std::vector<std::vector<Hypothesis>> out(batch_);
  for (int64_t b = 0; b < batch_; ++b)
    for (int64_t k = 0; k < per_input_; ++k) {
      const int64_t r = b * per_input_ + k;
      const float* lp = state_.seqs.logprobs(r);
      const double sum = std::accumulate(lp, lp + state_.seqs.generated(r), 0.0);
      out[b].push_back(make_hypothesis(state_.seqs, r, state_.reason[r], sum));
    }
  return out;
}

}  // namespace kvgen
