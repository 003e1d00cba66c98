// llama.cpp's samplers (DRY, top-n-sigma, XTC, mirostat's truncation). Each apply() follows
// the definition of the llama.cpp sampler named in llama_samplers.h; float details (float
// probabilities, llama.cpp's exponent cap) are kept where they decide which tokens stay.
#include "kvgen/sampling/llama_samplers.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "kvgen/ops/vector_math.h"
#include "kvgen/sampling/rng.h"
#include "kvgen/sampling/selection.h"

namespace kvgen {
namespace {

using ops::kNegInf;

// llama.cpp's caps: breakers longer than 40 bytes are cut, tails longer than 20 tokens too.
constexpr size_t kMaxBreakerBytes = 40;
constexpr int64_t kMaxTailTokens = 20;

std::string fmt(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// Keeps the k most likely candidates (fewer if there are fewer), sorted, ties by position.
void keep_top(Candidates& c, int64_t k, Workspace& ws) {
  if (k >= c.size()) return;
  if (c.dense()) {
    const int64_t count = selection::top_k(c.row(), c.vocab(), k, ws.chosen.data(), ws);
    c.keep(ws.chosen.data(), std::min(count, k), true);
    return;
  }
  c.sort_descending();
  c.truncate(k);
}

}  // namespace

// ---- DRY ----------------------------------------------------------------------------------

DryBreakers::DryBreakers(const std::vector<std::string>& breakers, std::vector<std::string> token_texts)
    : single_(token_texts.size(), 0), rests_(token_texts.size()), texts_(std::move(token_texts)) {
  for (std::string breaker : breakers) {
    if (breaker.empty()) continue;
    if (breaker.size() > kMaxBreakerBytes) breaker.resize(kMaxBreakerBytes);
    for (size_t id = 0; id < texts_.size(); ++id) {
      const std::string& text = texts_[id];
      if (text.find(breaker) != std::string::npos) {
        single_[id] = 1;
        continue;
      }
      // every start of a suffix of the text that is a proper prefix of the breaker
      for (size_t pos = text.find(breaker[0]); pos != std::string::npos; pos = text.find(breaker[0], pos + 1)) {
        const size_t overlap = text.size() - pos;  // < breaker.size(): the text does not contain it
        if (text.compare(pos, overlap, breaker, 0, overlap) != 0) continue;
        std::string rest = breaker.substr(overlap);
        auto& rests = rests_[id];
        if (std::find(rests.begin(), rests.end(), rest) == rests.end()) rests.push_back(std::move(rest));
      }
    }
  }
}

int64_t DryBreakers::tail_length(const int64_t* end, int64_t i) const {
  const int64_t head = end[-1 - i];
  if (head < 0 || head >= static_cast<int64_t>(single_.size())) return -1;
  if (single_[head]) return 0;
  int64_t longest = -1;
  for (const std::string& rest : rests_[head]) {
    size_t matched = 0;
    int64_t k = 0;
    bool spelled = true;
    // the tokens after the head spell `rest` (the last one may run past its end); like
    // llama.cpp's tail, at most kMaxTailTokens of them are compared
    while (spelled && matched < rest.size() && k < kMaxTailTokens) {
      if (k >= i) {  // the history ends first
        spelled = false;
        break;
      }
      const int64_t t = end[-1 - (i - 1 - k)];
      ++k;
      const bool known = t >= 0 && t < static_cast<int64_t>(texts_.size());
      const size_t n = known ? std::min(texts_[t].size(), rest.size() - matched) : 0;
      spelled = known && rest.compare(matched, n, texts_[t], 0, n) == 0;
      matched += n;
    }
    if (spelled && k > longest) longest = k;
  }
  return longest;
}

DryPenalty::DryPenalty(double multiplier, double base, int64_t allowed_length, int64_t last_n, DryBreakers breakers)
    : multiplier_(static_cast<float>(multiplier)),
      base_(static_cast<float>(base)),
      allowed_(allowed_length),
      last_n_(last_n),
      max_exponent_(0),
      breakers_(std::move(breakers)) {
  // llama.cpp: the exponent is capped so that base ** exponent stays below float max
  // (log(FLT_MAX) = 88.7228391), truncated to an int.
  if (base_ > 1.000001f) max_exponent_ = static_cast<int>(88.7228391f / std::log(base_));
}

int64_t DryPenalty::repeat_limit(const int64_t* end, int64_t window) const {
  if (breakers_.empty()) return window;
  for (int64_t i = 0; i < window; ++i) {
    const int64_t tail = breakers_.tail_length(end, i);
    if (tail >= 0) return i - tail;  // the tokens after the most recent breaker
  }
  return window;
}

void DryPenalty::apply(Candidates& c, const RowContext& ctx, Workspace& ws) const {
  const int64_t len = ctx.history_len;
  const int64_t window = last_n_ < 0 ? len : std::min(len, last_n_);
  if (window <= allowed_) return;
  const int64_t* end = ctx.history + len;
  const auto back = [end](int64_t j) { return end[-1 - j]; };  // j-th token from the end
  const int64_t limit = repeat_limit(end, window);
  if (limit < allowed_) return;

  // z[k]: how many tokens before (and including) the k-th from the end equal the suffix of
  // the history, read backwards: the Z-function of the reversed window.
  auto& z = ws.repeats;
  if (static_cast<int64_t>(z.size()) < window) z.resize(window);
  z[0] = window;
  for (int64_t k = 1, left = 0, right = 0; k < window; ++k) {
    int64_t n = k < right ? std::min(right - k, z[k - left]) : 0;
    while (k + n < window && back(n) == back(k + n)) ++n;
    if (k + n > right) left = k, right = k + n;
    z[k] = n;
  }
  // The token after each repeat would extend it: remember its longest repeat (+1, so 0 is
  // "none" in ws.counts).
  uint32_t* longest = ws.counts.data();
  ws.touched.clear();
  for (int64_t k = 1; k < window; ++k) {
    const int64_t repeat = std::min(z[k], limit);
    if (repeat < allowed_) continue;
    const int64_t t = back(k - 1);
    if (longest[t] == 0) ws.touched.push_back(static_cast<int32_t>(t));
    longest[t] = std::max<uint32_t>(longest[t], static_cast<uint32_t>(repeat + 1));
  }
  for (int32_t t : ws.touched) {
    if (!breakers_.is_single(t)) {
      int64_t exponent = static_cast<int64_t>(longest[t]) - 1 - allowed_;
      if (max_exponent_ > 0 && exponent > max_exponent_) exponent = max_exponent_;
      const float penalty = multiplier_ * static_cast<float>(std::pow(static_cast<double>(base_), exponent));
      if (c.dense()) {
        c.row()[t] -= penalty;
      } else {
        for (int64_t j = 0; j < c.size(); ++j)
          if (c.ids()[j] == t) c.values()[j] -= penalty;
      }
    }
    longest[t] = 0;
  }
  ws.touched.clear();
}

std::string DryPenalty::describe() const {
  return "Dry(multiplier=" + fmt(multiplier_) + ", base=" + fmt(base_) + ", allowed_length=" +
         std::to_string(allowed_) + ", penalty_last_n=" + std::to_string(last_n_) + ")";
}

// ---- top-n-sigma --------------------------------------------------------------------------

void TopNSigma::apply(Candidates& c, const RowContext&, Workspace& ws) const {
  const int64_t n = c.size();
  if (n <= 1) return;
  const float* v = c.values();
  float max = kNegInf;
  double sum = 0.0;
  int64_t finite = 0;
  for (int64_t j = 0; j < n; ++j)
    if (v[j] != kNegInf) {
      max = std::max(max, v[j]);
      sum += v[j];
      ++finite;
    }
  if (finite == 0 || max == ops::kPosInf) return;
  const double mean = sum / static_cast<double>(finite);
  double squares = 0.0;
  for (int64_t j = 0; j < n; ++j)
    if (v[j] != kNegInf) squares += (v[j] - mean) * (v[j] - mean);
  const float sigma = static_cast<float>(std::sqrt(squares / static_cast<double>(finite)));
  const float threshold = max - n_ * sigma;
  const int64_t count = selection::collect_at_least(v, n, threshold, ws.chosen.data());
  if (count >= min_keep_)
    c.keep(ws.chosen.data(), count, c.sorted());
  else
    keep_top(c, min_keep_, ws);
}

std::string TopNSigma::describe() const { return "TopNSigma(" + fmt(n_) + ")"; }

// ---- XTC ----------------------------------------------------------------------------------

void Xtc::apply(Candidates& c, const RowContext& ctx, Workspace& ws) const {
  const int64_t n = c.size();
  if (n < 2 || threshold_ > 0.5f) return;
  if (!(Philox4x32::uniform(ctx.seed, ctx.sequence, ctx.step, kLane) < probability_)) return;
  const float* v = c.values();
  float* w = ws.weights.data();
  const float m = ops::max_of(v, n);
  const double sum = ops::softmax_weights_into(w, v, n, m);
  if (!(sum > 0.0)) return;
  // the top choices: p >= threshold (float, as llama.cpp's probabilities); the least likely
  // of them stays (among equal ones, the last in descending order: the largest position)
  int64_t above = 0, least = -1;
  for (int64_t j = 0; j < n; ++j)
    if (static_cast<float>(w[j] / sum) >= threshold_) {
      ++above;
      if (least < 0 || w[j] <= w[least]) least = j;
    }
  if (above < 2 || n - above + 1 < min_keep_) return;
  int32_t* kept = ws.chosen.data();
  int64_t count = 0;
  for (int64_t j = 0; j < n; ++j)
    if (j == least || static_cast<float>(w[j] / sum) < threshold_) kept[count++] = static_cast<int32_t>(j);
  c.keep(kept, count, c.sorted());
}

std::string Xtc::describe() const {
  return "Xtc(probability=" + fmt(probability_) + ", threshold=" + fmt(threshold_) + ")";
}

// ---- mirostat -----------------------------------------------------------------------------

void MirostatTruncation::apply(Candidates& c, const RowContext& ctx, Workspace& ws) const {
  if (version_ == 1)
    apply_v1(c, ctx.mirostat_mu, ws);
  else
    apply_v2(c, ctx.mirostat_mu, ws);
}

void MirostatTruncation::apply_v1(Candidates& c, float mu, Workspace& ws) const {
  const int64_t n = c.size();
  const float* v = c.values();
  const float m = ops::max_of(v, n);
  if (!(m > kNegInf) || m == ops::kPosInf) return;
  const float sum = static_cast<float>(ops::softmax_sum(v, n, m));
  // the top m probabilities in descending order
  const int64_t top = std::min(kM, n);
  const int32_t* pos;
  if (c.dense()) {
    selection::top_k(v, n, top, ws.chosen.data(), ws);
    pos = ws.chosen.data();
  } else {
    c.sort_descending();
    v = c.values();
    for (int64_t j = 0; j < top; ++j) ws.chosen[j] = static_cast<int32_t>(j);
    pos = ws.chosen.data();
  }
  const auto p = [&](int64_t j) { return std::exp(v[pos[j]] - m) / sum; };
  // least-squares estimate of the Zipf exponent: log(p_i / p_i+1) ~ s * log((i + 2) / (i + 1))
  float sum_tb = 0.0f, sum_tt = 0.0f;
  for (int64_t i = 0; i + 1 < top; ++i) {
    const float t = std::log(static_cast<float>(i + 2) / static_cast<float>(i + 1));
    const float b = std::log(p(i) / p(i + 1));
    sum_tb += t * b;
    sum_tt += t * t;
  }
  const float s_hat = sum_tb / sum_tt;
  const float epsilon = s_hat - 1.0f;
  const float k = std::pow(epsilon * std::pow(2.0f, mu) / (1.0f - std::pow(static_cast<float>(c.vocab()), -epsilon)),
                           1.0f / s_hat);
  // llama.cpp: top-k with max(int(k), 1); k >= n keeps everything, NaN keeps one
  const int64_t keep = k >= static_cast<float>(n) ? n : (k >= 1.0f ? static_cast<int64_t>(k) : 1);
  keep_top(c, std::max(keep, min_keep_), ws);
}

void MirostatTruncation::apply_v2(Candidates& c, float mu, Workspace& ws) const {
  const int64_t n = c.size();
  const float* v = c.values();
  float* w = ws.weights.data();
  const float m = ops::max_of(v, n);
  const double sum = ops::softmax_weights_into(w, v, n, m);
  if (!(sum > 0.0)) return;
  // keep the tokens whose surprise -log2 p is at most mu: p >= 2^-mu, compared on the
  // weights (no log per token)
  int32_t* kept = ws.chosen.data();
  const float floor = static_cast<float>(sum * std::exp2(-static_cast<double>(mu)));
  const int64_t count = selection::collect_at_least(w, n, floor, kept);
  if (count >= std::max<int64_t>(min_keep_, 1)) {
    c.keep(kept, count, c.sorted());
    return;
  }
  keep_top(c, std::max<int64_t>(min_keep_, 1), ws);
}

std::string MirostatTruncation::describe() const { return "Mirostat(version=" + std::to_string(version_) + ")"; }

}  // namespace kvgen
