// BeamSearch bookkeeping over hand-made log-probabilities: which candidates continue
// (parents and tokens), which finish into hypotheses and with what score, how rows of
// Sequences move, and when the search is done. One input, two beams, a vocabulary of
// four with EOS = 3, length_penalty 1 (score = sum of log-probs / generated length).
#include <cstdint>
#include <vector>

#include "check.h"
#include "kvgen/search/beam_search.h"

using namespace kvgen;

namespace {

constexpr int64_t kVocab = 4, kEos = 3;

GenerationConfig beam_config(EarlyStopping early_stopping) {
  GenerationConfig config;
  config.num_beams = 2;
  config.eos_token_id = {kEos};
  config.max_new_tokens = 10;
  config.early_stopping = early_stopping;
  return config;
}

// One search over two rows (the two beams of one input), each starting from the prompt [0].
struct Search {
  explicit Search(EarlyStopping early_stopping = EarlyStopping::False)
      : config(beam_config(early_stopping)), stops(config), beams(config, /*batch=*/1) {
    seqs.reset({{0}, {0}}, *config.max_new_tokens, /*keep_raw=*/false, /*reorders=*/true);
  }

  // One step over `logprobs` (2 rows x 4); returns the new rows' parents and tokens.
  std::pair<std::vector<int64_t>, std::vector<int64_t>> step(const std::vector<float>& logprobs) {
    std::vector<int64_t> parents(2), tokens(2);
    const uint64_t input_key = 0;
    seqs.reserve_next();
    beams.step(BeamStepInput{.logprobs = logprobs.data(), .vocab = kVocab, .raw_logits = nullptr, .raw_lse = nullptr, .tops = {}},
               BeamDrawKeys{.seed = 0, .input_keys = &input_key, .step = step_index++}, seqs, stops,
               BeamStepOutputs{.parents = parents.data(), .tokens = tokens.data()});
    return {parents, tokens};
  }

  std::vector<int64_t> row_tokens(int64_t r) const {
    return std::vector<int64_t>(seqs.tokens(r), seqs.tokens(r) + seqs.length(r));
  }

  GenerationConfig config;
  StopRules stops;
  BeamSearch beams;
  Sequences seqs;
  int64_t step_index = 0;
};

void candidates_kept_per_step() {
  // K = max(2, 1 + #eos) * num_beams
  CHECK_EQ(BeamSearch(beam_config(EarlyStopping::False), 1).beams_to_keep(), int64_t{4});
  GenerationConfig three_eos = beam_config(EarlyStopping::False);
  three_eos.eos_token_id = {1, 2, 3};
  CHECK_EQ(BeamSearch(three_eos, 1).beams_to_keep(), int64_t{8});
}

void beams_continue_finish_and_stop() {
  Search s;
  // Step 1: only beam 0 is live (beam 1 starts at -1e9). Its candidates, best first:
  // EOS (-0.5), 0 (-1), 1 (-2), 2 (-3). EOS is among the best two, so [0, 3] finishes
  // with score -0.5 / 1; tokens 0 and 1 continue, both from row 0.
  auto [parents, tokens] = s.step({-1, -2, -3, -0.5f,  //
                                   -1, -1, -1, -1});
  CHECK_EQ(parents, (std::vector<int64_t>{0, 0}));
  CHECK_EQ(tokens, (std::vector<int64_t>{0, 1}));
  CHECK_EQ(s.row_tokens(0), (std::vector<int64_t>{0, 0}));
  CHECK_EQ(s.row_tokens(1), (std::vector<int64_t>{0, 1}));
  CHECK(!s.beams.done());

  // Step 2: beams at -1 ([0, 0]) and -2 ([0, 1]). Row 1's continuations win: 0 at
  // -2 - 0.1 and EOS at -2 - 0.2, then row 0's at -1 - 3. EOS is among the best two, so
  // [0, 1, 3] finishes with score -2.2 / 2 = -1.1. Row 1's 0 and row 0's 0 go on: the
  // rows swap.
  std::tie(parents, tokens) = s.step({-3, -3, -3, -3,  //
                                      -0.1f, -5, -5, -0.2f});
  CHECK_EQ(parents, (std::vector<int64_t>{1, 0}));
  CHECK_EQ(tokens, (std::vector<int64_t>{0, 0}));
  CHECK_EQ(s.row_tokens(0), (std::vector<int64_t>{0, 1, 0}));
  CHECK_EQ(s.row_tokens(1), (std::vector<int64_t>{0, 0, 0}));
  CHECK_EQ(s.seqs.logprobs(0)[0], -2.0f);  // row 0's history is old row 1's
  CHECK_EQ(s.seqs.logprobs(0)[1], -0.1f);
  // Both hypothesis slots are full, but the best beam (-2.1 over 2 tokens = -1.05)
  // could still beat the worst hypothesis (-1.1).
  CHECK(!s.beams.done());

  // Step 3: every continuation costs 3: the best beam reaches -5.1 over 3 tokens = -1.7,
  // worse than -1.1, so no beam can improve the hypotheses and the search is done.
  std::tie(parents, tokens) = s.step({-3, -3, -3, -3,  //
                                      -3, -3, -3, -3});
  // every candidate of row 0 ties: they are picked in torch.topk's order (libstdc++'s
  // nth_element and sort, as transformers' beam search gets them), not by position
  CHECK_EQ(parents, (std::vector<int64_t>{0, 0}));
  CHECK_EQ(tokens, (std::vector<int64_t>{0, 2}));
  CHECK(s.beams.done());

  const std::vector<std::vector<Hypothesis>> results = s.beams.results(2);
  CHECK_EQ(results.size(), size_t{1});
  CHECK_EQ(results[0].size(), size_t{2});
  const Hypothesis& best = results[0][0];
  CHECK_EQ(best.tokens, (std::vector<int64_t>{0, 3}));
  CHECK_EQ(best.prompt_length, int64_t{1});
  CHECK_EQ(best.logprobs, (std::vector<float>{-0.5f}));
  CHECK_NEAR(best.score, -0.5, 1e-6);
  CHECK(best.reason == FinishReason::Eos);
  const Hypothesis& second = results[0][1];
  CHECK_EQ(second.tokens, (std::vector<int64_t>{0, 1, 3}));
  CHECK_EQ(second.logprobs, (std::vector<float>{-2, -0.2f}));
  CHECK_NEAR(second.score, -1.1, 1e-6);
}

void early_stopping_ends_when_the_hypotheses_are_full() {
  // The first two steps of the search above fill both slots; with early_stopping=True
  // that alone ends the search.
  Search s(EarlyStopping::True);
  s.step({-1, -2, -3, -0.5f, -1, -1, -1, -1});
  CHECK(!s.beams.done());
  s.step({-3, -3, -3, -3, -0.1f, -5, -5, -0.2f});
  CHECK(s.beams.done());
}

void a_finished_candidate_beyond_the_best_num_beams_does_not_finish() {
  // EOS (-0.5) is only third best, after 0 (-0.1) and 1 (-0.2), so it neither finishes
  // nor continues: the slots hold no EOS hypothesis, only (as in transformers) the running
  // candidates 0 and 1 at -1e9 below their scores, which any finished hypothesis outranks.
  Search s;
  s.step({-0.1f, -0.2f, -3, -0.5f, -1, -1, -1, -1});
  const std::vector<std::vector<Hypothesis>> results = s.beams.results(2);
  for (const Hypothesis& h : results[0]) {
    CHECK(h.reason != FinishReason::Eos);
    CHECK(h.tokens.back() != 3);
    CHECK_NEAR(h.score, -1.0e9, 64.0);
  }
  CHECK_EQ(s.row_tokens(0), (std::vector<int64_t>{0, 0}));
  CHECK_EQ(s.row_tokens(1), (std::vector<int64_t>{0, 1}));
}

}  // namespace

int main() {
  return kvgen::test::run_all({
      TEST_CASE(candidates_kept_per_step),
      TEST_CASE(beams_continue_finish_and_stop),
      TEST_CASE(early_stopping_ends_when_the_hypotheses_are_full),
      TEST_CASE(a_finished_candidate_beyond_the_best_num_beams_does_not_finish),
  });
}
