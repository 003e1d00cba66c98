// Logits processors. Each apply() follows the __call__ of the Hugging Face class named
// in processors.h; comments note where float details differ.
#include "kvgen/sampling/processors.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "kvgen/ops/vector_math.h"
#include "kvgen/sampling/selection.h"

namespace kvgen {
namespace {

using ops::kNegInf;

// Calls fn(value&) on the value of token `id` if it is still a candidate.
template <class F>
void edit_token(Candidates& c, int64_t id, F fn) {
  if (c.dense()) {
    fn(c.row()[id]);
    return;
  }
  const int32_t* ids = c.ids();
  float* vals = c.values();
  for (int64_t j = 0; j < c.size(); ++j)
    if (ids[j] == id) {
      fn(vals[j]);
      return;
    }
}

void mask_tokens(Candidates& c, const std::vector<int64_t>& tokens) {
  for (int64_t id : tokens) edit_token(c, id, [](float& v) { v = kNegInf; });
}

// Counts the history's tokens into ws.counts (non-zero entries listed in ws.touched).
void count_history(const RowContext& ctx, Workspace& ws) {
  uint32_t* counts = ws.counts.data();
  ws.touched.clear();
  for (int64_t i = 0; i < ctx.history_len; ++i) {
    const int64_t t = ctx.history[i];
    if (counts[t]++ == 0) ws.touched.push_back(static_cast<int32_t>(t));
  }
}

void clear_counts(Workspace& ws) {
  for (int32_t t : ws.touched) ws.counts[t] = 0;
  ws.touched.clear();
}

// Softmax statistics of the candidates: max, the weights into ws.weights (exp(v - max),
// or 1 at the +inf entries when the max is +inf: see ops::softmax_weights_into),
// their sum.
struct SoftmaxStats {
  float max;
  double sum;
};
SoftmaxStats softmax_weights(const float* vals, int64_t n, Workspace& ws) {
  const float m = ops::max_of(vals, n);
  const double s = ops::softmax_weights_into(ws.weights.data(), vals, n, m);
  return {m, s};
}

// Entropy -sum p log p of the distribution described by SoftmaxStats (terms with p = 0
// skipped, like torch.nansum in HF).
double entropy(const float* vals, const float* weights, int64_t n, SoftmaxStats st) {
  const double log_sum = std::log(st.sum);
  if (st.max == ops::kPosInf) return log_sum;  // `sum` +inf tokens, equally likely
  double acc = 0.0;
  for (int64_t i = 0; i < n; ++i)
    if (weights[i] > 0.0f) acc += static_cast<double>(weights[i]) * ((vals[i] - st.max) - log_sum);
  return -acc / st.sum;
}

std::string fmt_float(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

// ---- SequenceBiasProcessor -----------------------------------------------------------

SequenceBiasProcessor::SequenceBiasProcessor(SequenceBias biases, std::string label)
    : biases_(std::move(biases)), label_(std::move(label)) {}

void SequenceBiasProcessor::apply(Candidates& c, const RowContext& ctx, Workspace&) const {
  for (const auto& [seq, bias] : biases_) {
    const int64_t prefix = static_cast<int64_t>(seq.size()) - 1;
    if (prefix > ctx.history_len) continue;
    if (prefix > 0 && !std::equal(seq.begin(), seq.end() - 1, ctx.history + ctx.history_len - prefix)) continue;
    const float b = static_cast<float>(bias);  // HF adds a float32 bias tensor
    // A ban (NoBadWords' -inf) wins over a +inf logit, where +inf + -inf would be NaN.
    edit_token(c, seq.back(), [b](float& v) { v = b == kNegInf ? kNegInf : v + b; });
  }
}

std::string SequenceBiasProcessor::describe() const {
  return label_ + "(" + std::to_string(biases_.size()) + " sequences)";
}

// ---- penalties -----------------------------------------------------------------------

void RepetitionPenalty::apply(Candidates& c, const RowContext& ctx, Workspace& ws) const {
  count_history(ctx, ws);
  const float p = penalty_;
  for (int32_t t : ws.touched) edit_token(c, t, [p](float& v) { v = v < 0.0f ? v * p : v / p; });
  clear_counts(ws);
}

std::string RepetitionPenalty::describe() const { return "RepetitionPenalty(" + fmt_float(penalty_) + ")"; }

void PresenceFrequencyPenalty::apply(Candidates& c, const RowContext& ctx, Workspace& ws) const {
  count_history(ctx, ws);
  for (int32_t t : ws.touched) {
    const float delta = presence_ + frequency_ * static_cast<float>(ws.counts[t]);
    edit_token(c, t, [delta](float& v) { v -= delta; });
  }
  clear_counts(ws);
}

std::string PresenceFrequencyPenalty::describe() const {
  return "PresenceFrequencyPenalty(presence=" + fmt_float(presence_) + ", frequency=" + fmt_float(frequency_) + ")";
}

// ---- n-gram ban ------------------------------------------------------------------------

void NoRepeatNGram::apply(Candidates& c, const RowContext& ctx, Workspace&) const {
  const int64_t len = ctx.history_len, n = n_;
  if (len < n) return;
  const int64_t* h = ctx.history;
  const int64_t* prefix = h + len - (n - 1);
  // Every window h[i..i+n) whose first n-1 tokens equal the current suffix bans its
  // last token.
  for (int64_t i = 0; i + n <= len; ++i)
    if (std::equal(h + i, h + i + n - 1, prefix)) edit_token(c, h[i + n - 1], [](float& v) { v = kNegInf; });
}

std::string NoRepeatNGram::describe() const { return "NoRepeatNGram(" + std::to_string(n_) + ")"; }

// ---- length rules --------------------------------------------------------------------

void MinLength::apply(Candidates& c, const RowContext& ctx, Workspace&) const {
  const int64_t len = new_only_ ? ctx.history_len - ctx.prompt_len : ctx.history_len;
  if (len < min_length_) mask_tokens(c, eos_);
}

std::string MinLength::describe() const {
  return std::string(new_only_ ? "MinNewTokens(" : "MinLength(") + std::to_string(min_length_) + ")";
}

void ForcedTokens::apply(Candidates& c, const RowContext& ctx, Workspace&) const {
  int64_t at;
  if (when_ == When::HistoryLengthOne) {
    at = 1;
  } else {
    at = total_length_limit(max_length_, max_new_tokens_, ctx.prompt_len) - 1;
  }
  if (ctx.history_len != at) return;
  c.make_dense();
  float* row = c.row();
  std::fill(row, row + c.vocab(), kNegInf);
  for (int64_t id : tokens_) row[id] = 0.0f;
}

std::string ForcedTokens::describe() const {
  return when_ == When::HistoryLengthOne ? "ForcedBOS(" + std::to_string(tokens_.front()) + ")"
                                         : "ForcedEOS(" + std::to_string(tokens_.size()) + " tokens)";
}

void InfNanRemove::apply(Candidates& c, const RowContext&, Workspace&) const {
  constexpr float kMax = std::numeric_limits<float>::max();
  float* v = c.values();
  const int64_t n = c.size();
  for (int64_t i = 0; i < n; ++i) {
    const float x = v[i];
    v[i] = x != x ? 0.0f : (x == -kNegInf ? kMax : (x == kNegInf ? -kMax : x));
  }
}

void SuppressTokens::apply(Candidates& c, const RowContext& ctx, Workspace&) const {
  if (at_begin_) {
    const int64_t begin = (ctx.prompt_len > 1 || !forced_bos_) ? ctx.prompt_len : ctx.prompt_len + 1;
    if (ctx.history_len != begin) return;
  }
  mask_tokens(c, tokens_);
}

std::string SuppressTokens::describe() const {
  return std::string(at_begin_ ? "SuppressTokensAtBegin(" : "SuppressTokens(") + std::to_string(tokens_.size()) +
         " tokens)";
}

namespace {
bool is_allowed(const uint32_t* words, int64_t id) { return (words[id >> 5] >> (id & 31)) & 1u; }
}  // namespace

void AllowedTokens::apply(Candidates& c, const RowContext& ctx, Workspace&) const {
  const uint32_t* words = ctx.allowed;
  if (!words) return;
  float* v = c.values();
  const int64_t n = c.size();
  if (!c.dense()) {
    for (int64_t j = 0; j < n; ++j)
      if (!is_allowed(words, c.id_at(j))) v[j] = kNegInf;
    return;
  }
  mask_disallowed_tokens(v, n, words);
}

void mask_disallowed_tokens(float* row, int64_t vocab, const uint32_t* words) {
  // a word at a time: grammars usually allow few tokens, so most words are 0
  for (int64_t base = 0; base < vocab; base += 32) {
    const uint32_t w = words[base >> 5];
    const int64_t end = std::min<int64_t>(base + 32, vocab);
    if (w == 0xFFFFFFFFu) continue;
    if (w == 0) {
      std::fill(row + base, row + end, kNegInf);
      continue;
    }
    for (int64_t t = base; t < end; ++t)
      if (!((w >> (t - base)) & 1u)) row[t] = kNegInf;
  }
}

bool allows_any_token(const uint32_t* words, int64_t vocab) {
  const int64_t full = vocab >> 5;
  for (int64_t i = 0; i < full; ++i)
    if (words[i]) return true;
  for (int64_t t = full << 5; t < vocab; ++t)
    if (is_allowed(words, t)) return true;
  return false;
}

// ---- warpers -------------------------------------------------------------------------

void Temperature::apply(Candidates& c, const RowContext&, Workspace&) const {
  float* v = c.values();
  const int64_t n = c.size();
  const float t = t_;
  for (int64_t i = 0; i < n; ++i) v[i] = v[i] / t;  // division, as HF: bit-identical
}

std::string Temperature::describe() const { return "Temperature(" + fmt_float(t_) + ")"; }

void TopK::apply(Candidates& c, const RowContext&, Workspace& ws) const {
  if (k_ >= c.size()) return;
  if (c.dense()) {
    const int64_t count = selection::top_k(c.row(), c.vocab(), k_, ws.chosen.data(), ws);
    c.keep(ws.chosen.data(), count, true);
    return;
  }
  c.sort_descending();
  const float* v = c.values();
  int64_t count = k_;
  while (count < c.size() && v[count] == v[k_ - 1]) ++count;  // ties with the k-th are kept
  c.truncate(count);
}

std::string TopK::describe() const { return "TopK(" + std::to_string(k_) + ")"; }

void TopP::apply(Candidates& c, const RowContext&, Workspace& ws) const {
  if (c.dense()) {
    // Fast path: the nucleus of a real model's distribution is usually a few tokens, so
    // try the best 64 (a partial selection) before the histogram over every token.
    const float* row = c.row();
    const int64_t n = c.vocab();
    const SoftmaxStats st = softmax_weights(row, n, ws);
    const double target = p_ * st.sum;
    const float* w = ws.weights.data();
    int32_t* chosen = ws.chosen.data();
    const int64_t head = selection::top_k(row, n, std::min<int64_t>(64, n), chosen, ws);
    double before = 0.0;
    int64_t kept = 0;
    auto wants_more = [&] { return before < target || kept < min_keep_; };
    while (kept < head && wants_more()) before += w[chosen[kept++]];
    if (!wants_more() || kept == n) {
      c.keep(chosen, kept, true);
      return;
    }
    // Slow path: histogram of keys (max - logit >= 0, smaller = more likely; 0 at the
    // max itself, which keeps +inf - +inf out of the keys).
    float* keys = ws.keys.data();
    const float m = st.max;
    for (int64_t i = 0; i < n; ++i) keys[i] = row[i] == m ? 0.0f : m - row[i];
    const int64_t count = selection::smallest_prefix_by_mass(keys, w, n, target, min_keep_, chosen, ws);
    c.keep(chosen, count, false);
    return;
  }
  c.sort_descending();
  const int64_t n = c.size();
  const SoftmaxStats st = softmax_weights(c.values(), n, ws);
  const double target = p_ * st.sum;
  const float* w = ws.weights.data();
  double before = 0.0;
  int64_t kept = 0;
  while (kept < n && (before < target || kept < min_keep_)) before += w[kept++];
  c.truncate(kept);
}

std::string TopP::describe() const { return "TopP(" + fmt_float(p_) + ")"; }

void MinP::apply(Candidates& c, const RowContext&, Workspace& ws) const {
  if (min_p_ <= 0.0) return;
  const float* v = c.values();
  const int64_t n = c.size();
  // p_i < min_p * p_max  <=>  v_i - max < log(min_p)
  float threshold = ops::max_of(v, n) + static_cast<float>(std::log(min_p_));
  if (min_keep_ > 1) threshold = std::min(threshold, selection::kth_largest(v, n, std::min(min_keep_, n), ws));
  const int64_t count = selection::collect_at_least(v, n, threshold, ws.chosen.data());
  if (count < n) c.keep(ws.chosen.data(), count, !c.dense() && c.sorted());
}

std::string MinP::describe() const { return "MinP(" + fmt_float(min_p_) + ")"; }

void Typical::apply(Candidates& c, const RowContext&, Workspace& ws) const {
  const float* v = c.values();
  const int64_t n = c.size();
  const SoftmaxStats st = softmax_weights(v, n, ws);
  const float* w = ws.weights.data();
  const double ent = entropy(v, w, n, st);
  const float log_sum = static_cast<float>(std::log(st.sum));
  const float fent = static_cast<float>(ent);
  // key: |surprisal - entropy|, smaller = more typical
  float* keys = ws.keys.data();
  for (int64_t i = 0; i < n; ++i) keys[i] = std::fabs(-ops::log_softmax_at(v[i], st.max, log_sum) - fent);
  const int64_t count = selection::smallest_prefix_by_mass(keys, w, n, mass_ * st.sum,
                                                           min_keep_, ws.chosen.data(), ws);
  c.keep(ws.chosen.data(), count, false);
}

std::string Typical::describe() const { return "Typical(" + fmt_float(mass_) + ")"; }

void ProbabilityCutoff::apply(Candidates& c, const RowContext&, Workspace& ws) const {
  const float* v = c.values();
  const int64_t n = c.size();
  const SoftmaxStats st = softmax_weights(v, n, ws);
  const float* w = ws.weights.data();
  double cutoff = epsilon_;
  if (entropy_scaled_) cutoff = std::min(epsilon_, std::sqrt(epsilon_) * std::exp(-entropy(v, w, n, st)));
  const float weight_threshold = static_cast<float>(cutoff * st.sum);
  const float keep_value = selection::kth_largest(v, n, std::min(min_keep_, n), ws);
  int32_t* chosen = ws.chosen.data();
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i)
    if (w[i] >= weight_threshold || v[i] >= keep_value) chosen[count++] = static_cast<int32_t>(i);
  if (count < n) c.keep(chosen, count, !c.dense() && c.sorted());
}

std::string ProbabilityCutoff::describe() const {
  return std::string(entropy_scaled_ ? "EtaCutoff(" : "EpsilonCutoff(") + fmt_float(epsilon_) + ")";
}

void LogSoftmax::apply(Candidates& c, const RowContext&, Workspace&) const {
  float* v = c.values();
  const int64_t n = c.size();
  ops::log_softmax_into(v, v, n, ops::log_sum_exp(v, n));
}

}  // namespace kvgen
