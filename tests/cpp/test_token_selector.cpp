// TokenSelector end to end on hand-made logits, without Python: greedy picks, keyed sampling
// draws, beam search (parents, length penalty, early stopping, n-best) and the stopping
// rules (EOS, max_new_tokens / max_length, min_new_tokens, stop sequences, stop strings),
// and speculative verification (verify(): greedy runs, the rejection rule's keyed coins).
// Every expectation is worked out from the definitions: argmax with ties to the smaller
// id, log-softmax, the inverse-CDF draw of a keyed uniform, Hugging Face's beam search
// bookkeeping (score = sum of log-probs / generated ** length_penalty).
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "check.h"
#include "kvgen/errors.h"
#include "kvgen/token_selector.h"
#include "kvgen/sampling/rng.h"

using namespace kvgen;

namespace {

constexpr int64_t kVocab = 4;
constexpr float kInf = std::numeric_limits<float>::infinity();

// Logits whose softmax is `probs` (log p; the log-softmax of log p is log p when sum p = 1).
std::vector<float> log_of(const std::vector<double>& probs) {
  std::vector<float> row;
  for (double p : probs) row.push_back(static_cast<float>(std::log(p)));
  return row;
}

// Rows of logits, concatenated into the (rows, vocab) block step() reads.
std::vector<float> rows_of(const std::vector<std::vector<float>>& rows) {
  std::vector<float> out;
  for (const auto& r : rows) out.insert(out.end(), r.begin(), r.end());
  return out;
}

void step(TokenSelector& g, const std::vector<std::vector<float>>& rows) {
  const std::vector<float> logits = rows_of(rows);
  g.step(logits.data(), g.rows(), kVocab);
}

std::vector<int64_t> row_tokens(const TokenSelector& g, int64_t r) {
  const Sequences& s = g.sequences();
  return std::vector<int64_t>(s.tokens(r), s.tokens(r) + s.length(r));
}

std::vector<int64_t> next_tokens(const TokenSelector& g) {
  return std::vector<int64_t>(g.next_tokens(), g.next_tokens() + g.rows());
}

// log softmax(row)[t] in double.
double log_softmax(const std::vector<float>& row, int64_t t) {
  double sum = 0.0;
  for (float x : row) sum += std::exp(static_cast<double>(x));
  return row[t] - std::log(sum);
}

GenerationConfig greedy_config(int64_t max_new_tokens) {
  GenerationConfig c;
  c.max_new_tokens = max_new_tokens;
  return c;
}

// ---- greedy ----------------------------------------------------------------------------

void greedy_takes_the_argmax_and_reports_its_logprob() {
  GenerationConfig config = greedy_config(3);
  config.top_logprobs = 2;
  TokenSelector g(config);
  g.set_keep_raw_logprobs(true);
  g.append_tokens({{0}, {1, 2}});
  CHECK_EQ(g.rows(), int64_t{2});
  CHECK(!g.done());

  // Row 0: token 1 holds 3 / 6 of the mass. Row 1: tokens 0 and 1 tie, the smaller id wins.
  const std::vector<float> r0{0, static_cast<float>(std::log(3.0)), 0, 0}, r1{2, 2, 1, 0};
  step(g, {r0, r1});
  CHECK_EQ(next_tokens(g), (std::vector<int64_t>{1, 0}));
  StepOutput out = g.last_step();
  CHECK_EQ(out.tokens, (std::vector<int64_t>{1, 0}));
  CHECK(!out.beam_indices.has_value());
  CHECK(!out.done);
  CHECK_NEAR(out.logprobs[0], -std::log(2.0), 1e-6);
  CHECK_NEAR(out.logprobs[1], log_softmax(r1, 0), 1e-6);
  // top-2 of row 0: token 1, then the smallest of the three equal ones (0); row 1: 0, 1
  CHECK_EQ(out.top_n, int64_t{2});
  CHECK_EQ(out.top_ids, (std::vector<int64_t>{1, 0, 0, 1}));
  CHECK_NEAR(out.top_logprobs[1], std::log(1.0 / 6.0), 1e-6);
  CHECK_NEAR(out.top_logprobs[3], log_softmax(r1, 1), 1e-6);
  // no processor changes greedy logits here: the raw alternatives are the processed ones
  CHECK_EQ(out.raw_top_ids, out.top_ids);
  CHECK_NEAR(out.raw_top_logprobs[0], out.top_logprobs[0], 1e-6);

  step(g, {{5, 0, 0, 0}, {0, 0, 0, 1}});
  CHECK_EQ(next_tokens(g), (std::vector<int64_t>{0, 3}));
  CHECK(!g.done());
  step(g, {{0, 0, 1, 0}, {0, 1, 0, 0}});
  CHECK(g.done());
  CHECK(g.last_step().done);
  CHECK_EQ(row_tokens(g, 0), (std::vector<int64_t>{0, 1, 0, 2}));
  CHECK_EQ(row_tokens(g, 1), (std::vector<int64_t>{1, 2, 0, 3, 1}));
  CHECK(g.finish_reason(0) == FinishReason::Length);
  CHECK(g.finish_reason(1) == FinishReason::Length);
  CHECK_THROWS(step(g, {r0, r1}), ValueError);  // finished: nothing more to step

  // one hypothesis per prompt, scored by the sum of its log-probs
  const auto results = g.results();
  CHECK_EQ(results.size(), size_t{2});
  const Hypothesis& h = results[0][0];
  CHECK_EQ(h.tokens, (std::vector<int64_t>{0, 1, 0, 2}));
  CHECK_EQ(h.prompt_length, int64_t{1});
  const double sum = -std::log(2.0) + log_softmax({5, 0, 0, 0}, 0) + log_softmax({0, 0, 1, 0}, 2);
  CHECK_NEAR(h.score, sum, 1e-5);
  CHECK(h.reason == FinishReason::Length);
  CHECK_EQ(h.top_ids.size(), size_t{6});  // (generated, top_n)
}

void a_step_that_throws_changes_nothing() {
  TokenSelector g(greedy_config(3));
  g.append_tokens({{0}});
  step(g, {{0, 1, 0, 0}});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS(step(g, {{0, nan, 0, 0}}), ValueError);  // NaN logits (remove_invalid_values off)
  CHECK_THROWS(g.step(std::vector<float>(8).data(), 2, kVocab), ValueError);  // wrong row count
  CHECK_EQ(g.steps(), int64_t{1});
  CHECK_EQ(row_tokens(g, 0), (std::vector<int64_t>{0, 1}));
  step(g, {{0, 0, 1, 0}});
  CHECK_EQ(row_tokens(g, 0), (std::vector<int64_t>{0, 1, 2}));
}

void a_constraint_mask_limits_the_tokens() {
  // A constraint (any of json_schema, regex, grammar, choices) makes the mask required:
  // one uint32 word per row here (vocab 4), bit t set when token t is allowed.
  GenerationConfig config = greedy_config(3);
  config.regex = "[ab]+";
  TokenSelector g(config);
  g.append_tokens({{0}, {0}});
  const std::vector<float> logits = rows_of({{0, 0, 0, 5}, {0, 0, 0, 5}});
  CHECK_THROWS(g.step(logits.data(), 2, kVocab), ValueError);  // no mask
  const std::vector<uint32_t> empty{0b0100, 0b0000};
  CHECK_THROWS(g.step(logits.data(), 2, kVocab, empty.data()), ValueError);  // row 1 allows nothing
  CHECK_EQ(g.steps(), int64_t{0});
  // row 0 allows token 2 only; row 1 tokens 1 and 3, of which 3 is the argmax
  const std::vector<uint32_t> allowed{0b0100, 0b1010};
  g.step(logits.data(), 2, kVocab, allowed.data());
  CHECK_EQ(next_tokens(g), (std::vector<int64_t>{2, 3}));
  CHECK_NEAR(g.last_step().logprobs[0], 0.0, 1e-6);  // the only allowed token has all the mass
  CHECK_NEAR(g.last_step().logprobs[1], 5.0 - std::log(std::exp(5.0) + 1.0), 1e-6);

  TokenSelector free(greedy_config(3));  // and without a constraint a mask is refused
  free.append_tokens({{0}, {0}});
  CHECK_THROWS(free.step(logits.data(), 2, kVocab, allowed.data()), ValueError);
}

// ---- stopping rules --------------------------------------------------------------------

void eos_finishes_a_row_and_pads_it() {
  GenerationConfig config = greedy_config(4);
  config.eos_token_id = {3};
  TokenSelector g(config);
  g.append_tokens({{0}, {0}});
  CHECK_EQ(g.pad_token(), int64_t{3});  // pad_token_id unset: Hugging Face's eos_token_id[0]
  step(g, {{0, 0, 0, 1}, {0, 1, 0, 0}});
  CHECK(g.finish_reason(0) == FinishReason::Eos);
  CHECK(!g.row_running(0));
  CHECK(g.row_running(1));
  step(g, {{0, 0, 0, 0}, {0, 0, 1, 0}});
  CHECK(!g.stepped(0));
  CHECK(g.stepped(1));
  const StepOutput out = g.last_step();
  CHECK_EQ(out.tokens, (std::vector<int64_t>{3, 2}));  // the finished row gets the pad token
  CHECK_EQ(out.logprobs[0], -kInf);                     // and no log-prob
  CHECK_EQ(row_tokens(g, 0), (std::vector<int64_t>{0, 3}));
  CHECK_EQ(row_tokens(g, 1), (std::vector<int64_t>{0, 1, 2}));
  CHECK(!g.done());
  step(g, {{0, 0, 0, 0}, {0, 0, 0, 1}});
  CHECK(g.finish_reason(1) == FinishReason::Eos);
  CHECK(g.done());

  GenerationConfig padded = config;
  padded.pad_token_id = 0;
  TokenSelector p(padded);
  p.append_tokens({{0}, {0}});
  step(p, {{0, 0, 0, 1}, {0, 1, 0, 0}});
  CHECK_EQ(next_tokens(p), (std::vector<int64_t>{3, 1}));  // the step's tokens, EOS included
  step(p, {{0, 0, 0, 0}, {0, 0, 1, 0}});
  CHECK_EQ(next_tokens(p), (std::vector<int64_t>{0, 2}));  // then the pad token
}

void max_new_tokens_and_max_length_bound_the_generation() {
  GenerationConfig config;
  config.max_length = 5;  // prompt of 3: two new tokens
  TokenSelector g(config);
  g.append_tokens({{0, 1, 2}});
  CHECK_EQ(g.max_new_tokens(3), int64_t{2});
  step(g, {{1, 0, 0, 0}});
  CHECK(g.finish_reason(0) == FinishReason::None);
  step(g, {{1, 0, 0, 0}});
  CHECK(g.finish_reason(0) == FinishReason::Length);
  CHECK(g.done());
  CHECK_EQ(g.sequences().generated(0), int64_t{2});

  TokenSelector full(config);  // a prompt that already has max_length tokens has nothing to generate
  CHECK_THROWS(full.append_tokens({{0, 1, 2, 3, 0}}), ValueError);
}

void min_new_tokens_holds_eos_back() {
  // EOS is the argmax every step, but min_new_tokens = 2 sets it to -inf while fewer than
  // two tokens are generated: tokens 1, 1, then EOS.
  GenerationConfig config = greedy_config(10);
  config.eos_token_id = {3};
  config.min_new_tokens = 2;
  TokenSelector g(config);
  g.append_tokens({{0}});
  const std::vector<float> row{0, 1, 0, 5};
  step(g, {row});
  // the log-prob is the processed one: EOS's mass is gone
  CHECK_NEAR(g.last_step().logprobs[0], 1.0 - std::log(std::exp(1.0) + 2.0), 1e-6);
  step(g, {row});
  CHECK(!g.done());
  step(g, {row});
  CHECK_EQ(row_tokens(g, 0), (std::vector<int64_t>{0, 1, 1, 3}));
  CHECK(g.finish_reason(0) == FinishReason::Eos);
}

void stop_sequences_match_generated_tokens_only() {
  // Stop sequence [1, 2]. The prompt ends with 1, so the first token 2 completes it only
  // across the prompt: that does not count. Generated 1, 2 then stops.
  GenerationConfig config = greedy_config(10);
  config.stop_sequences = {{1, 2}};
  TokenSelector g(config);
  g.append_tokens({{1}});
  step(g, {{0, 0, 1, 0}});
  CHECK(g.finish_reason(0) == FinishReason::None);
  step(g, {{0, 1, 0, 0}});
  CHECK(g.finish_reason(0) == FinishReason::None);
  step(g, {{0, 0, 1, 0}});
  CHECK(g.finish_reason(0) == FinishReason::Stop);
  CHECK_EQ(row_tokens(g, 0), (std::vector<int64_t>{1, 2, 1, 2}));
  CHECK(g.done());
}

void stop_strings_match_the_token_texts() {
  GenerationConfig config = greedy_config(10);
  config.stop_strings = {"bc"};
  const std::vector<std::string> texts{"x", "b", "c", "cd"};

  TokenSelector missing(config);  // stop strings need the texts
  CHECK_THROWS(missing.append_tokens({{0}}), ValueError);

  // "x" "b" "c": the string ends in the last token
  TokenSelector g(config);
  g.set_token_texts(texts);
  g.append_tokens({{0}, {0}, {1, 2}});
  step(g, {{0, 1, 0, 0}, {0, 1, 0, 0}, {1, 0, 0, 0}});
  for (int64_t r = 0; r < 3; ++r) CHECK(g.finish_reason(r) == FinishReason::None);
  // row 0 "xb" + "c" completes it; row 1 "xb" + "cd" completes it with the token running
  // past its end; row 2 "bcx" + "x" holds it only before the new token: no stop
  step(g, {{0, 0, 1, 0}, {0, 0, 0, 1}, {1, 0, 0, 0}});
  CHECK(g.finish_reason(0) == FinishReason::Stop);
  CHECK(g.finish_reason(1) == FinishReason::Stop);
  CHECK(g.finish_reason(2) == FinishReason::None);

  // a prompt ending in "b" and the first token "c": the string spans prompt and generation
  TokenSelector across(config);
  across.set_token_texts(texts);
  across.append_tokens({{1}});
  step(across, {{0, 0, 1, 0}});
  CHECK(across.finish_reason(0) == FinishReason::Stop);

  TokenSelector short_texts(config);  // a text for every token id the logits have
  short_texts.set_token_texts({"x", "b"});
  short_texts.append_tokens({{0}});
  CHECK_THROWS(step(short_texts, {{0, 0, 1, 0}}), ValueError);
}

void stop_row_finishes_a_row() {
  TokenSelector g(greedy_config(10));
  g.append_tokens({{0}, {0}});
  step(g, {{0, 1, 0, 0}, {0, 1, 0, 0}});
  g.stop_row(0);
  CHECK(g.finish_reason(0) == FinishReason::Stop);
  CHECK(!g.row_running(0));
  CHECK(g.row_running(1));
  CHECK_THROWS(g.stop_row(2), ValueError);
}

// ---- sampling --------------------------------------------------------------------------

GenerationConfig sampling_config(uint64_t seed) {
  GenerationConfig c;
  c.do_sample = true;
  c.top_k = 0;
  c.seed = seed;
  c.max_new_tokens = 8;
  return c;
}

// The same logits every step and row: uniform over the vocabulary, then, from step 4 on,
// only token 2 (the others -inf).
std::vector<float> sampling_row(int64_t step_index) {
  if (step_index < 4) return {0, 0, 0, 0};
  return {-kInf, -kInf, 0, -kInf};
}

// Runs a sampling generator over the prompts with these sequence ids; returns each row's
// generated tokens.
std::vector<std::vector<int64_t>> sample_rows(uint64_t seed, const std::vector<std::vector<int64_t>>& prompts,
                                              const std::vector<int64_t>& sequence_ids) {
  TokenSelector g(sampling_config(seed));
  g.append_tokens(prompts, sequence_ids);
  for (int64_t s = 0; !g.done(); ++s) step(g, std::vector<std::vector<float>>(g.rows(), sampling_row(s)));
  std::vector<std::vector<int64_t>> out;
  for (int64_t r = 0; r < g.rows(); ++r) {
    const std::vector<int64_t> all = row_tokens(g, r);
    out.emplace_back(all.begin() + g.sequences().prompt_length(r), all.end());
  }
  return out;
}

void sampling_draws_the_keyed_uniform_through_the_cdf() {
  // Uniform weights: the draw with uniform u is token floor(4 u), u keyed by (seed,
  // sequence id, step). A row with one finite token always draws it.
  const uint64_t seed = 1234;
  const auto rows = sample_rows(seed, {{0}}, {5});
  CHECK_EQ(rows[0].size(), size_t{8});
  for (int64_t s = 0; s < 8; ++s) {
    const double u = Philox4x32::uniform(seed, 5, static_cast<uint64_t>(s));
    const int64_t expected = s < 4 ? static_cast<int64_t>(std::floor(4.0 * u)) : 2;
    CHECK_EQ(rows[0][s], expected);
  }
}

void sampling_with_a_seed_repeats_and_does_not_depend_on_the_batch() {
  const auto alone = sample_rows(7, {{0}}, {5});
  CHECK_EQ(sample_rows(7, {{0}}, {5}), alone);  // same seed, same tokens
  // prompt of id 5 second in a batch of two: the same draws
  const auto batched = sample_rows(7, {{1, 2}, {0}}, {9, 5});
  CHECK_EQ(batched[1], alone[0]);
  // default ids are the prompt indices: row 1 of the batch draws as id 1 alone
  CHECK_EQ(sample_rows(7, {{0}, {0}}, {})[1], sample_rows(7, {{0}}, {1})[0]);
  // num_return_sequences = 2: row k of prompt i draws with key i * 2 + k
  GenerationConfig two = sampling_config(7);
  two.num_return_sequences = 2;
  TokenSelector g(two);
  g.append_tokens({{0}}, {3});
  step(g, {sampling_row(0), sampling_row(0)});
  for (int64_t k = 0; k < 2; ++k)
    CHECK_EQ(next_tokens(g)[k], static_cast<int64_t>(std::floor(4.0 * Philox4x32::uniform(7, 3 * 2 + k, 0))));
}

// ---- beam search -----------------------------------------------------------------------

// Two beams over one prompt [0]; EOS = 3.
GenerationConfig beam_config(double length_penalty, EarlyStopping early_stopping) {
  GenerationConfig c;
  c.num_beams = 2;
  c.num_return_sequences = 2;
  c.eos_token_id = {3};
  c.max_new_tokens = 10;
  c.length_penalty = length_penalty;
  c.early_stopping = early_stopping;
  return c;
}

// The three steps worked out below (rows: the two running beams; probabilities over
// tokens 0, 1, 2, EOS). Running scores are log-probs; joint probabilities shown.
//  1. only beam 0 is live: EOS .5, 0 .25, 1 .125, 2 .125. EOS is among the best two, so
//     A = [0, 3] finishes (log .5 over 1 token); 0 and 1 go on, both from row 0.
//  2. beam [0, 0] (.25) x {.4, .2, .1, .3}; beam [0, 1] (.125) x {.9, .01, .01, .08}:
//     joint best row 1's 0 (.1125), then row 0's 0 (.1), row 0's EOS (.075). No EOS in
//     the best two: nothing finishes, the rows swap (parents [1, 0]).
//  3. beam [0, 1, 0] (.1125) x {.3, .1, .1, .5}; beam [0, 0, 0] (.1) x {.2, .1, .1, .6}:
//     best row 1's EOS (.06), row 0's EOS (.05625): both finish, C = [0, 0, 0, 3] and
//     D = [0, 1, 0, 3] over 3 tokens; row 0's 0 (.03375) and row 1's 0 (.02) go on.
const std::vector<std::vector<std::vector<double>>> kBeamSteps = {
    {{.25, .125, .125, .5}, {.25, .125, .125, .5}},
    {{.4, .2, .1, .3}, {.9, .01, .01, .08}},
    {{.3, .1, .1, .5}, {.2, .1, .1, .6}},
};

void beam_step(TokenSelector& g, const std::vector<std::vector<double>>& probs) {
  step(g, {log_of(probs[0]), log_of(probs[1])});
}

void beam_search_follows_parents_and_keeps_the_best_hypotheses() {
  GenerationConfig config = beam_config(1.0, EarlyStopping::False);
  config.top_logprobs = 2;
  TokenSelector g(config);
  g.append_tokens({{0}});
  CHECK(g.is_beam_search());
  CHECK(g.beam_indices() == nullptr);  // before the first step
  beam_step(g, kBeamSteps[0]);
  StepOutput out = g.last_step();
  CHECK(out.beam_indices.has_value());
  CHECK_EQ(*out.beam_indices, (std::vector<int64_t>{0, 0}));
  // tokens 1 and 2 tie at .125: torch.topk's order (transformers' beam search) keeps 2
  CHECK_EQ(out.tokens, (std::vector<int64_t>{0, 2}));
  CHECK_NEAR(out.logprobs[0], std::log(.25), 1e-6);
  CHECK_NEAR(out.logprobs[1], std::log(.125), 1e-6);

  beam_step(g, kBeamSteps[1]);
  out = g.last_step();
  CHECK_EQ(*out.beam_indices, (std::vector<int64_t>{1, 0}));
  CHECK_EQ(out.tokens, (std::vector<int64_t>{0, 0}));
  CHECK_EQ(row_tokens(g, 0), (std::vector<int64_t>{0, 2, 0}));
  CHECK_EQ(row_tokens(g, 1), (std::vector<int64_t>{0, 0, 0}));
  CHECK(!g.done());
  // each new row's alternatives are its parent row's: row 0 continues old row 1
  // ({.9, .01, .01, .08}: tokens 0, EOS), row 1 old row 0 ({.4, .2, .1, .3}: 0, EOS)
  CHECK_EQ(out.top_ids, (std::vector<int64_t>{0, 3, 0, 3}));
  CHECK_NEAR(out.top_logprobs[0], std::log(.9), 1e-5);
  CHECK_NEAR(out.top_logprobs[1], std::log(.08), 1e-5);
  CHECK_NEAR(out.top_logprobs[3], std::log(.3), 1e-5);

  // Step 3 with length_penalty 1: A = log .5 = -0.693, C = log .06 / 3 = -0.938,
  // D = log .05625 / 3 = -0.959: the best two are A and C. The best running beam,
  // log .03375 / 3 = -1.13, cannot beat C: done.
  beam_step(g, kBeamSteps[2]);
  CHECK_EQ(*g.last_step().beam_indices, (std::vector<int64_t>{0, 1}));
  CHECK(g.done());
  const auto results = g.results();
  CHECK_EQ(results.size(), size_t{1});
  CHECK_EQ(results[0].size(), size_t{2});
  CHECK_EQ(results[0][0].tokens, (std::vector<int64_t>{0, 3}));
  CHECK_NEAR(results[0][0].score, std::log(.5), 1e-5);
  CHECK(results[0][0].reason == FinishReason::Eos);
  CHECK_EQ(results[0][1].tokens, (std::vector<int64_t>{0, 0, 0, 3}));
  CHECK_NEAR(results[0][1].score, std::log(.06) / 3, 1e-5);
  CHECK_EQ(results[0][1].logprobs.size(), size_t{3});
  CHECK_NEAR(results[0][1].logprobs[1], std::log(.4), 1e-5);
  CHECK_NEAR(results[0][1].logprobs[2], std::log(.6), 1e-5);
}

void length_penalty_reorders_the_hypotheses() {
  // length_penalty 2: scores divide by generated ** 2. A = log .5 = -0.693,
  // C = log .06 / 9 = -0.313, D = log .05625 / 9 = -0.320: longer ones win, A drops out.
  TokenSelector g(beam_config(2.0, EarlyStopping::False));
  g.append_tokens({{0}});
  for (const auto& probs : kBeamSteps) beam_step(g, probs);
  CHECK(g.done());  // the best running beam, log .03375 / 9 = -0.376, cannot beat D
  const auto results = g.results();
  CHECK_EQ(results[0][0].tokens, (std::vector<int64_t>{0, 0, 0, 3}));
  CHECK_NEAR(results[0][0].score, std::log(.06) / 9, 1e-5);
  CHECK_EQ(results[0][1].tokens, (std::vector<int64_t>{0, 2, 0, 3}));  // the tie at step 1 kept token 2
  CHECK_NEAR(results[0][1].score, std::log(.05625) / 9, 1e-5);

  // n-best: num_return_sequences = 1 returns the best alone
  GenerationConfig one = beam_config(2.0, EarlyStopping::False);
  one.num_return_sequences = 1;
  TokenSelector h(one);
  h.append_tokens({{0}});
  for (const auto& probs : kBeamSteps) beam_step(h, probs);
  CHECK_EQ(h.results()[0].size(), size_t{1});
  CHECK_EQ(h.results()[0][0].tokens, (std::vector<int64_t>{0, 0, 0, 3}));
}

void early_stopping_rules() {
  // "never" with length_penalty > 0 bounds a running beam by the longest it may grow
  // (max_new_tokens = 10): log .03375 / 10 ** 2 = -0.034 beats D, so it goes on.
  TokenSelector never(beam_config(2.0, EarlyStopping::Never));
  never.append_tokens({{0}});
  for (const auto& probs : kBeamSteps) beam_step(never, probs);
  CHECK(!never.done());

  // Both slots full while a beam can still improve:
  //  1. beam 0: 0 .45, EOS .4, 1 .1, 2 .05: A = [0, 3] finishes (log .4 = -0.916);
  //     0 (.45) and 1 (.1) go on.
  //  2. [0, 0] x {.45, .03, .02, .5}; [0, 1] x {.97, .01, .01, .01}: best row 0's EOS
  //     (.225), row 0's 0 (.2025): E = [0, 0, 3] finishes (log .225 / 2 = -0.746); both
  //     slots are full. The best running beam, log .2025 / 2 = -0.798, still beats A.
  const std::vector<std::vector<std::vector<double>>> steps = {
      {{.45, .1, .05, .4}, {.45, .1, .05, .4}},
      {{.45, .03, .02, .5}, {.97, .01, .01, .01}},
  };
  TokenSelector heuristic(beam_config(1.0, EarlyStopping::False));
  TokenSelector eager(beam_config(1.0, EarlyStopping::True));
  for (TokenSelector* g : {&heuristic, &eager}) {
    g->append_tokens({{0}});
    for (const auto& probs : steps) beam_step(*g, probs);
  }
  CHECK(!heuristic.done());  // False: goes on while a beam can improve
  CHECK(eager.done());       // True: stops once num_beams hypotheses are finished
  const auto results = eager.results();
  CHECK_EQ(results[0][0].tokens, (std::vector<int64_t>{0, 0, 3}));
  CHECK_NEAR(results[0][0].score, std::log(.225) / 2, 1e-5);
  CHECK_EQ(results[0][1].tokens, (std::vector<int64_t>{0, 3}));
  CHECK_NEAR(results[0][1].score, std::log(.4), 1e-5);
}


// ---- speculative verification ------------------------------------------------------------

// verify() over (rows, positions, vocab) logits given as rows of positions.
StepOutput verify(TokenSelector& g, const std::vector<std::vector<std::vector<float>>>& rows,
                  const std::vector<std::vector<int64_t>>& drafts, const std::vector<int64_t>& lengths,
                  const std::vector<float>* q = nullptr) {
  const int64_t positions = static_cast<int64_t>(rows[0].size()), k = positions - 1;
  std::vector<float> logits;
  for (const auto& row : rows)
    for (const auto& pos : row) logits.insert(logits.end(), pos.begin(), pos.end());
  std::vector<int64_t> flat;
  for (const auto& d : drafts) {
    flat.insert(flat.end(), d.begin(), d.end());
    flat.resize(flat.size() + (k - static_cast<int64_t>(d.size())), -1);
  }
  g.verify(logits.data(), g.rows(), positions, kVocab, flat.data(), lengths.data(), q ? q->data() : nullptr);
  return g.last_step();
}

void greedy_verify_accepts_drafts_while_they_equal_the_argmax() {
  TokenSelector g(greedy_config(10));
  g.append_tokens({{0}, {1}});
  // row 0: argmaxes 1, 2, 0, 3 at the four positions; drafts 1, 2, 3: two accepted, then 0
  // row 1: no draft: the argmax of its first position (2), as step() would pick
  const std::vector<float> a1{0, 2, 0, 0}, a2{0, 0, 2, 0}, a0{2, 0, 0, 0}, a3{0, 0, 0, 2};
  StepOutput out = verify(g, {{a1, a2, a0, a3}, {a2, a3, a3, a3}}, {{1, 2, 3}, {}}, {3, 0});
  CHECK_EQ(out.positions, int64_t{4});
  CHECK_EQ(out.accepted, (std::vector<int64_t>{2, 0}));
  CHECK_EQ(out.rollback, (std::vector<int64_t>{1, 0}));
  CHECK_EQ(out.num_emitted, (std::vector<int64_t>{3, 1}));
  CHECK_EQ(out.emitted, (std::vector<int64_t>{1, 2, 0, -1, 2, -1, -1, -1}));
  CHECK_EQ(out.tokens, (std::vector<int64_t>{0, 2}));
  CHECK_NEAR(out.emitted_logprobs[1], log_softmax(a2, 2), 1e-6);
  CHECK_NEAR(out.logprobs[0], log_softmax(a0, 0), 1e-6);
  CHECK_EQ(row_tokens(g, 0), (std::vector<int64_t>{0, 1, 2, 0}));
  CHECK_EQ(row_tokens(g, 1), (std::vector<int64_t>{1, 2}));
  CHECK_EQ(g.drafted_tokens(0), int64_t{3});
  CHECK_EQ(g.accepted_tokens(0), int64_t{2});
  // every draft accepted: the bonus token from the last position
  out = verify(g, {{a3, a1, a2}, {a0, a0, a0}}, {{3, 1}, {0, 1}}, {2, 2});
  CHECK_EQ(out.emitted, (std::vector<int64_t>{3, 1, 2, 0, 0, -1}));
  CHECK_EQ(out.accepted, (std::vector<int64_t>{2, 1}));
  CHECK_EQ(out.rollback, (std::vector<int64_t>{0, 1}));
  // a step afterwards carries on from the emitted tokens
  step(g, {a1, a1});
  CHECK_EQ(row_tokens(g, 0), (std::vector<int64_t>{0, 1, 2, 0, 3, 1, 2, 1}));
  CHECK(g.last_step().accepted.empty());  // a step reports no verification
}

void verify_stops_a_row_inside_its_accepted_run() {
  GenerationConfig c = greedy_config(10);
  c.eos_token_id = {3};
  TokenSelector g(c);
  g.append_tokens({{0}});
  const std::vector<float> a1{0, 2, 0, 0}, a3{0, 0, 0, 2};
  // the second draft is EOS and accepted: the row keeps [1, 3], the third draft is not read
  StepOutput out = verify(g, {{a1, a3, a1, a1}}, {{1, 3, 1}}, {3});
  CHECK_EQ(out.emitted, (std::vector<int64_t>{1, 3, -1, -1}));
  CHECK_EQ(out.accepted, (std::vector<int64_t>{2}));
  CHECK_EQ(out.rollback, (std::vector<int64_t>{1}));
  CHECK(g.done() && out.done);
  CHECK(g.finish_reason(0) == FinishReason::Eos);
  // max_new_tokens: a run longer than the room left is cut at the limit
  TokenSelector h(greedy_config(2));
  h.append_tokens({{0}});
  out = verify(h, {{a1, a1, a1, a1}}, {{1, 1, 1}}, {3});
  CHECK_EQ(out.num_emitted, (std::vector<int64_t>{2}));
  CHECK(h.finish_reason(0) == FinishReason::Length);
}

void a_verify_that_throws_changes_nothing() {
  TokenSelector g(greedy_config(5));
  g.append_tokens({{0}});
  const std::vector<float> a1{0, 2, 0, 0};
  CHECK_THROWS(verify(g, {{a1, a1}}, {{4}}, {1}), ValueError);     // draft outside the vocabulary
  CHECK_THROWS(verify(g, {{a1, a1}}, {{1}}, {2}), ValueError);     // draft length above k
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS(verify(g, {{a1, {0, nan, 0, 0}}}, {{1}}, {1}), ValueError);  // NaN at position 1
  CHECK_EQ(g.steps(), int64_t{0});
  CHECK_EQ(row_tokens(g, 0), (std::vector<int64_t>{0}));
  CHECK_EQ(g.drafted_tokens(0), int64_t{0});
  TokenSelector beams(beam_config(1.0, EarlyStopping::False));
  beams.append_tokens({{0}});
  CHECK_THROWS(verify(beams, {{a1, a1}, {a1, a1}}, {{1}, {1}}, {1, 1}), ValueError);  // beams: out of scope
}

void sampling_verify_uses_the_rejection_rule_with_keyed_coins() {
  // Uniform p over 4 tokens and a one-hot draft x = 1: accepted when the accept lane's
  // uniform is below p(x) = 1/4; else the residual (p without x: tokens 0, 2, 3 alike)
  // is drawn with the residual lane's uniform. After an accepted draft the bonus token is
  // drawn from p with the plain draw of the row's next token index (lane 0).
  const uint64_t seed = 99;
  const std::vector<float> flat{0, 0, 0, 0};
  int accepted = 0, rejected = 0;
  for (int64_t id = 0; id < 40; ++id) {
    GenerationConfig c = sampling_config(seed);
    TokenSelector g(c);
    g.append_tokens({{0}}, {id});
    const StepOutput out = verify(g, {{flat, flat}}, {{1}}, {1});
    const double coin = Philox4x32::uniform(seed, static_cast<uint64_t>(id), 0, 2);
    if (coin < 0.25) {
      ++accepted;
      const int64_t bonus = static_cast<int64_t>(std::floor(4.0 * Philox4x32::uniform(seed, id, 1)));
      CHECK_EQ(out.emitted, (std::vector<int64_t>{1, bonus}));
    } else {
      ++rejected;
      const int64_t pick = static_cast<int64_t>(std::floor(3.0 * Philox4x32::uniform(seed, id, 0, 3)));
      CHECK_EQ(out.emitted, (std::vector<int64_t>{pick < 1 ? 0 : pick + 1, -1}));
    }
  }
  CHECK(accepted > 0 && rejected > 0);
  // with a draft distribution q: x = 1 with q(1) = 1/2 and p(1) = 1/4 is accepted when
  // coin * 1/2 < 1/4; the residual max(p - q, 0) is 1/4 at 0, 2, 3 and 0 at 1 (as above)
  const std::vector<float> q{0.5f / 3, 0.5f, 0.5f / 3, 0.5f / 3};
  for (int64_t id = 0; id < 20; ++id) {
    TokenSelector g(sampling_config(seed));
    g.append_tokens({{0}}, {id});
    const StepOutput out = verify(g, {{flat, flat}}, {{1}}, {1}, &q);
    const double coin = Philox4x32::uniform(seed, static_cast<uint64_t>(id), 0, 2);
    CHECK_EQ(out.accepted[0], int64_t{coin * 0.5 < 0.25 ? 1 : 0});
  }
}

void rows_draw_at_their_own_token_index_after_uneven_verifies() {
  // Row 0 accepts two drafts (p(x) = 1), row 1 none: the next step() draws row 0 at its
  // token index 3 and row 1 at 1, as they would after step() by step() generation.
  const uint64_t seed = 5;
  TokenSelector g(sampling_config(seed));
  g.append_tokens({{0}, {0}});
  const std::vector<float> only1{-kInf, 0, -kInf, -kInf}, flat{0, 0, 0, 0};
  verify(g, {{only1, only1, only1}, {only1, only1, only1}}, {{1, 1}, {}}, {2, 0});
  CHECK_EQ(g.sequences().generated(0), int64_t{3});
  CHECK_EQ(g.sequences().generated(1), int64_t{1});
  step(g, {flat, flat});
  CHECK_EQ(next_tokens(g)[0], static_cast<int64_t>(std::floor(4.0 * Philox4x32::uniform(seed, 0, 3))));
  CHECK_EQ(next_tokens(g)[1], static_cast<int64_t>(std::floor(4.0 * Philox4x32::uniform(seed, 1, 1))));
}
}  // namespace

int main() {
  return kvgen::test::run_all({
      TEST_CASE(greedy_takes_the_argmax_and_reports_its_logprob),
      TEST_CASE(a_step_that_throws_changes_nothing),
      TEST_CASE(a_constraint_mask_limits_the_tokens),
      TEST_CASE(eos_finishes_a_row_and_pads_it),
      TEST_CASE(max_new_tokens_and_max_length_bound_the_generation),
      TEST_CASE(min_new_tokens_holds_eos_back),
      TEST_CASE(stop_sequences_match_generated_tokens_only),
      TEST_CASE(stop_strings_match_the_token_texts),
      TEST_CASE(stop_row_finishes_a_row),
      TEST_CASE(sampling_draws_the_keyed_uniform_through_the_cdf),
      TEST_CASE(sampling_with_a_seed_repeats_and_does_not_depend_on_the_batch),
      TEST_CASE(beam_search_follows_parents_and_keeps_the_best_hypotheses),
      TEST_CASE(length_penalty_reorders_the_hypotheses),
      TEST_CASE(early_stopping_rules),
      TEST_CASE(greedy_verify_accepts_drafts_while_they_equal_the_argmax),
      TEST_CASE(verify_stops_a_row_inside_its_accepted_run),
      TEST_CASE(a_verify_that_throws_changes_nothing),
      TEST_CASE(sampling_verify_uses_the_rejection_rule_with_keyed_coins),
      TEST_CASE(rows_draw_at_their_own_token_index_after_uneven_verifies),
  });
}
