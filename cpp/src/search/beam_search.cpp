// BeamSearch: one step of Hugging Face's vectorised beam search, input by input.
#include "kvgen/search/beam_search.h"

#include <algorithm>
#include <cmath>

#include "kvgen/ops/vector_math.h"
#include "kvgen/limits.h"
#include "kvgen/sampling/rng.h"
#include "kvgen/sampling/selection.h"

namespace kvgen {
namespace {

// len ** length_penalty as torch sees it: a Python float, used as a float32 divisor.
float length_divisor(int64_t len, float length_penalty) {
  return static_cast<float>(std::pow(static_cast<double>(len), static_cast<double>(length_penalty)));
}

// Appends row `row` of a step's top-n alternatives to a hypothesis that ends with that step's token.
void append_tops(Hypothesis& h, const StepTops& tops, int64_t row) {
  if (tops.n == 0) return;
  const int64_t from = row * tops.n, to = from + tops.n;
  h.top_ids.insert(h.top_ids.end(), tops.ids + from, tops.ids + to);
  h.top_logprobs.insert(h.top_logprobs.end(), tops.logprobs + from, tops.logprobs + to);
  if (tops.raw_ids) {
    h.raw_top_ids.insert(h.raw_top_ids.end(), tops.raw_ids + from, tops.raw_ids + to);
    h.raw_top_logprobs.insert(h.raw_top_logprobs.end(), tops.raw_logprobs + from, tops.raw_logprobs + to);
  }
}

}  // namespace

Hypothesis make_hypothesis(const Sequences& seqs, int64_t r, FinishReason reason, double score) {
  Hypothesis h;
  const int64_t len = seqs.length(r), g = seqs.generated(r);
  h.tokens.assign(seqs.tokens(r), seqs.tokens(r) + len);
  h.prompt_length = seqs.prompt_length(r);
  h.logprobs.assign(seqs.logprobs(r), seqs.logprobs(r) + g);
  if (const float* raw = seqs.raw_logprobs(r)) h.raw_logprobs.assign(raw, raw + g);
  const int64_t tn = g * seqs.top_n();
  if (const int64_t* ids = seqs.top_ids(r)) h.top_ids.assign(ids, ids + tn);
  if (const float* lp = seqs.top_logprobs(r)) h.top_logprobs.assign(lp, lp + tn);
  if (const int64_t* ids = seqs.raw_top_ids(r)) h.raw_top_ids.assign(ids, ids + tn);
  if (const float* lp = seqs.raw_top_logprobs(r)) h.raw_top_logprobs.assign(lp, lp + tn);
  h.score = score;
  h.reason = reason;
  return h;
}

BeamSearch::BeamSearch(const GenerationConfig& config, int64_t batch)
    : batch_(batch),
      beams_(config.num_beams),
      keep_(limits::checked_mul(std::max<int64_t>(2, 1 + static_cast<int64_t>(config.eos_token_id.size())),
                                config.num_beams, "beam candidates (max(2, 1 + #eos_token_id) x num_beams)")),
      length_penalty_(static_cast<float>(config.length_penalty)),
      early_(config.early_stopping),
      sample_(!config.is_greedy()),
      running_score_(batch * beams_, kNotRunning),
      finished_(batch, std::vector<Slot>(beams_)),
      improvable_(batch, 1) {
  for (int64_t b = 0; b < batch; ++b) running_score_[b * beams_] = 0.0f;  // only beam 0 is live at first
}

float BeamSearch::raw_logprob(const BeamStepInput& in, int64_t r, int64_t t) {
  return in.raw_logits ? ops::log_softmax_entry(in.raw_logits + r * in.vocab, in.vocab, t, in.raw_lse[r]) : 0.0f;
}

void BeamSearch::select_top(const BeamStepInput& in, int64_t b) {
  // HF: torch.topk(accumulated log-probs, K) over the input's beams * vocab, beam-major;
  // the sums are float32, as torch's, and ties fall in torch's order.
  const int64_t vocab = in.vocab, n = beams_ * vocab;
  const int64_t k = std::min(keep_, n);
  const float* rows = in.logprobs + b * beams_ * vocab;  // (beams, vocab), plus each beam's running score
  picks_.resize(std::max(k, beams_));
  selection::torch_top_k_shifted(rows, beams_, vocab, running_score_.data() + b * beams_, k, picks_.data(),
                                 topk_scratch_);
  cands_.clear();
  for (int64_t i = 0; i < k; ++i) {
    const int64_t r = b * beams_ + picks_[i] / vocab, t = picks_[i] % vocab;
    const float lp = in.logprobs[r * vocab + t];
    cands_.push_back({lp + running_score_[r], r, t, lp, raw_logprob(in, r, t), FinishReason::None});
  }
}

void BeamSearch::select_sampled(const BeamStepInput& in, int64_t b, const BeamDrawKeys& keys) {
  const int64_t vocab = in.vocab;
  // K draws without replacement from softmax(accumulated log-probs) over beams * vocab
  // (HF: torch.multinomial(..., num_samples=K)), keyed by (seed, input key, step, draw).
  const int64_t n = beams_ * vocab;
  draw_weights_.resize(n);
  float* w = draw_weights_.data();
  const float* rows = in.logprobs + b * beams_ * vocab;
  float m = ops::kNegInf;
  for (int64_t j = 0; j < beams_; ++j)
    m = std::max(m, ops::max_of(rows + j * vocab, vocab) + running_score_[b * beams_ + j]);
  double total = 0.0;
  for (int64_t j = 0; j < beams_; ++j)
    total += ops::exp_into(w + j * vocab, rows + j * vocab, vocab, m - running_score_[b * beams_ + j]);
  cands_.clear();
  for (int64_t k = 0; k < keep_ && total > 0.0; ++k) {
    const double u = Philox4x32::uniform(keys.seed, keys.input_keys[b], static_cast<uint64_t>(keys.step),
                                         static_cast<uint32_t>(k + 1));
    const int64_t idx = ops::find_cumulative(w, n, u * total);
    if (idx < 0) break;
    total -= w[idx];
    w[idx] = 0.0f;
    const int64_t r = b * beams_ + idx / vocab, t = idx % vocab;
    const float lp = in.logprobs[r * vocab + t];
    cands_.push_back({lp + running_score_[r], r, t, lp, raw_logprob(in, r, t), FinishReason::None});
  }
}

void BeamSearch::finish(int64_t b, const Sequences& seqs, const StepTops& tops) {
  // HF _update_finished_beams: the finished slots and every candidate, the candidate's score
  // length-penalised and pushed down by -1e9 for each reason it cannot finish (float32 adds,
  // as torch's), and torch.topk(num_beams) of them all is the new list. A running entry
  // can only take a slot that nothing better took; with a very negative length_penalty
  // (finished scores far below -1e9) such entries are what HF returns.
  std::vector<Slot>& slots = finished_[b];
  const bool full = std::all_of(slots.begin(), slots.end(), [](const Slot& s) { return s.finished; });
  const int64_t count = static_cast<int64_t>(cands_.size());
  merged_.resize(beams_ + count);  // (beams + candidates) slot scores, then the candidates'
  for (int64_t i = 0; i < beams_; ++i) merged_[i] = slots[i].score;
  for (int64_t k = 0; k < count; ++k) {
    const Candidate& c = cands_[k];
    float score = c.score / length_divisor(seqs.generated(c.parent) + 1, length_penalty_);
    if (full && early_ == EarlyStopping::True) score += kNotRunning;
    if (!improvable_[b]) score += kNotRunning;
    if (!(c.hit != FinishReason::None && k < beams_)) score += kNotRunning;  // only the first num_beams finish
    merged_[beams_ + k] = score;
  }
  picks_.resize(std::max(beams_, count));
  selection::torch_top_k(merged_.data(), beams_ + count, beams_, picks_.data(), topk_scratch_);
  next_slots_.resize(beams_);
  for (int64_t i = 0; i < beams_; ++i) {
    const int64_t p = picks_[i];
    Slot& slot = next_slots_[i];
    if (p < beams_) {
      slot = std::move(slots[p]);
      continue;
    }
    const int64_t k = p - beams_;
    const Candidate& c = cands_[k];
    const bool finished = c.hit != FinishReason::None && k < beams_;
    slot.score = merged_[p];
    slot.finished = finished;
    // a running entry ends where the search ends: "length", as when max_new_tokens cut it
    slot.hyp = make_hypothesis(seqs, c.parent, finished ? c.hit : FinishReason::Length, slot.score);
    slot.hyp.tokens.push_back(c.token);
    slot.hyp.logprobs.push_back(c.logprob);
    if (seqs.raw_logprobs(c.parent)) slot.hyp.raw_logprobs.push_back(c.raw_logprob);
    append_tops(slot.hyp, tops, c.parent);
  }
  slots.swap(next_slots_);
}

void BeamSearch::step(const BeamStepInput& in, const BeamDrawKeys& keys, Sequences& seqs, const StopRules& stops,
                      const BeamStepOutputs& out) {
  int64_t* parents = out.parents;
  int64_t* tokens = out.tokens;
  const int64_t rows = batch_ * beams_;
  std::vector<float>& next_score = next_score_;
  next_score.resize(rows);
  next_lp_.resize(rows);
  next_raw_.resize(rows);
  bool every_candidate_hits = true;
  for (int64_t b = 0; b < batch_; ++b) {
    if (sample_)
      select_sampled(in, b, keys);
    else
      select_top(in, b);
    for (Candidate& c : cands_) {
      c.hit = stops.check(seqs.tokens(c.parent), seqs.length(c.parent), seqs.prompt_length(c.parent), c.token);
      every_candidate_hits = every_candidate_hits && c.hit != FinishReason::None;
    }
    finish(b, seqs, in.tops);
    // HF _get_running_beams_for_next_iteration: torch.topk(num_beams) of the candidates'
    // scores, those that stopped pushed down by -1e9 (so they only go on when too few others
    // remain); ties in torch's order.
    std::vector<float>& adjusted = adjusted_;
    adjusted.resize(cands_.size());
    for (size_t k = 0; k < cands_.size(); ++k)
      adjusted[k] = cands_[k].hit != FinishReason::None ? cands_[k].score + kNotRunning : cands_[k].score;
    const int64_t going = std::min<int64_t>(beams_, static_cast<int64_t>(cands_.size()));
    std::vector<int64_t>& order = order_;
    order.resize(std::max<int64_t>(going, 1));
    if (going > 0)
      selection::torch_top_k(adjusted.data(), static_cast<int64_t>(cands_.size()), going, order.data(),
                             topk_scratch_);
    order.resize(going);
    for (int64_t i = 0; i < beams_; ++i) {
      const int64_t r = b * beams_ + i;
      if (i < static_cast<int64_t>(order.size())) {
        const Candidate& c = cands_[order[i]];
        parents[r] = c.parent;
        tokens[r] = c.token;
        next_score[r] = adjusted[order[i]];
        next_lp_[r] = c.logprob;
        next_raw_[r] = c.raw_logprob;
      } else {  // fewer candidates than beams (tiny vocabulary): a dead beam
        parents[r] = b * beams_;
        tokens[r] = cands_.empty() ? 0 : cands_[0].token;
        next_score[r] = 2 * kNotRunning;
        next_lp_[r] = next_raw_[r] = 0.0f;
      }
    }
  }
  seqs.reorder(parents);
  for (int64_t r = 0; r < rows; ++r) seqs.append(r, tokens[r], next_lp_[r], next_raw_[r], in.tops, parents[r]);
  std::swap(running_score_, next_score_);

  // HF _check_early_stop_heuristic and _beam_search_has_unfinished_sequences.
  bool any_improvable = false, all_full = true;
  for (int64_t b = 0; b < batch_; ++b) {
    const std::vector<Slot>& slots = finished_[b];
    const int64_t generated = seqs.generated(b * beams_);
    const int64_t best_len = (early_ == EarlyStopping::Never && length_penalty_ > 0.0f)
                                 ? stops.max_new_tokens(seqs.prompt_length(b * beams_))
                                 : generated;
    const float best_possible = running_score_[b * beams_] / length_divisor(best_len, length_penalty_);
    float worst = slots.front().score;
    for (const Slot& s : slots) worst = std::min(worst, s.score);
    bool can_improve = false;
    for (const Slot& s : slots) can_improve = can_improve || best_possible > (s.finished ? worst : kNotRunning);
    improvable_[b] = improvable_[b] && can_improve;
    any_improvable = any_improvable || improvable_[b];
    for (const Slot& s : slots) all_full = all_full && s.finished;
  }
  done_ = !any_improvable || (all_full && early_ == EarlyStopping::True) || every_candidate_hits;
}

std::vector<std::vector<Hypothesis>> BeamSearch::results(int64_t num_return_sequences) const {
  std::vector<std::vector<Hypothesis>> out(batch_);
  for (int64_t b = 0; b < batch_; ++b)
    for (int64_t i = 0; i < std::min(num_return_sequences, beams_); ++i) out[b].push_back(finished_[b][i].hyp);
  return out;
}

}  // namespace kvgen
