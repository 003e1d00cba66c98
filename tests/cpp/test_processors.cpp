// Logits processors on hand-made rows and histories: each expectation follows from the
// processor's rule applied by hand (see processors.h for the Hugging Face class each one
// mirrors).
#include <cmath>
#include <limits>
#include <vector>

#include "check.h"
#include "kvgen/sampling/processors.h"

using namespace kvgen;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// The row after `processors` ran in order on it, with `history` (the first prompt_len
// tokens the prompt): kept logits in place, -inf for every token a filter dropped.
std::vector<float> processed(const std::vector<const LogitsProcessor*>& processors, std::vector<float> row,
                             const std::vector<int64_t>& history = {}, int64_t prompt_len = 0) {
  Workspace ws;
  ws.reserve(static_cast<int64_t>(row.size()));
  Candidates c(row.data(), static_cast<int64_t>(row.size()), ws);
  const RowContext ctx{history.data(), static_cast<int64_t>(history.size()), prompt_len};
  for (const LogitsProcessor* p : processors) p->apply(c, ctx, ws);
  c.materialize();
  return row;
}

std::vector<float> processed(const LogitsProcessor& processor, const std::vector<float>& row,
                             const std::vector<int64_t>& history = {}, int64_t prompt_len = 0) {
  return processed(std::vector<const LogitsProcessor*>{&processor}, row, history, prompt_len);
}

// Logits whose softmax is `probs` (log p; the softmax of log p is p when sum p = 1).
std::vector<float> logits_of(const std::vector<double>& probs) {
  std::vector<float> row;
  for (double p : probs) row.push_back(static_cast<float>(std::log(p)));
  return row;
}

// `row` with the tokens not in `kept` set to -inf.
std::vector<float> only(std::vector<float> row, const std::vector<int64_t>& kept) {
  std::vector<float> out(row.size(), -kInf);
  for (int64_t t : kept) out[t] = row[t];
  return out;
}

void repetition_penalty_divides_positive_and_multiplies_negative_logits() {
  // Penalty 2 on the history [0, 1, 1]: token 0's logit 2 halves, token 1's -2 doubles
  // (once, though it occurs twice); the others are untouched.
  const std::vector<float> row{2, -2, 1, 4};
  CHECK_EQ(processed(RepetitionPenalty(2.0), row, {0, 1, 1}), (std::vector<float>{1, -4, 1, 4}));
}

void presence_and_frequency_penalties_count_the_history() {
  // presence 0.5, frequency 0.25, history [0, 1, 1]: token 0 loses 0.5 + 0.25, token 1
  // loses 0.5 + 2 * 0.25.
  const std::vector<float> row{2, 2, 2, 2};
  CHECK_EQ(processed(PresenceFrequencyPenalty(0.5, 0.25), row, {0, 1, 1}), (std::vector<float>{1.25f, 1, 2, 2}));
}

void no_repeat_ngram_bans_the_token_that_repeats_a_bigram() {
  // History [1, 2, 3, 1] ends in 1, and the bigram (1, 2) occurred: token 2 is banned.
  const std::vector<float> row{0, 0, 0, 0};
  CHECK_EQ(processed(NoRepeatNGram(2), row, {1, 2, 3, 1}), (std::vector<float>{0, 0, -kInf, 0}));
  // trigrams: the suffix (3, 1) never started a trigram, so nothing is banned
  CHECK_EQ(processed(NoRepeatNGram(3), row, {1, 2, 3, 1}), row);
}

void min_length_masks_eos_until_the_length() {
  const std::vector<float> row{1, 1, 1};
  const MinLength whole(4, {2}, /*count_new_tokens_only=*/false);
  CHECK_EQ(processed(whole, row, {0, 0, 0}), (std::vector<float>{1, 1, -kInf}));
  CHECK_EQ(processed(whole, row, {0, 0, 0, 0}), row);
  // min_new_tokens 2 with a prompt of 2: one new token is too few, two are enough
  const MinLength new_only(2, {2}, /*count_new_tokens_only=*/true);
  CHECK_EQ(processed(new_only, row, {0, 0, 1}, 2), (std::vector<float>{1, 1, -kInf}));
  CHECK_EQ(processed(new_only, row, {0, 0, 1, 1}, 2), row);
}

void sequence_bias_applies_where_the_prefix_ends_the_history() {
  // (1, 2) -> -inf bans 2 after a 1; (3) -> +1.5 biases 3 always.
  const SequenceBiasProcessor bias({{{1, 2}, -INFINITY}, {{3}, 1.5}}, "SequenceBias");
  const std::vector<float> row{0, 0, 0, 0};
  CHECK_EQ(processed(bias, row, {0, 1}), (std::vector<float>{0, 0, -kInf, 1.5f}));
  CHECK_EQ(processed(bias, row, {1, 0}), (std::vector<float>{0, 0, 0, 1.5f}));
}

void forced_bos_forces_one_token() {
  const ForcedTokens forced({2}, ForcedTokens::When::HistoryLengthOne, std::nullopt, std::nullopt);
  const std::vector<float> row{5, 1, 3};
  CHECK_EQ(processed(forced, row, {7}, 1), (std::vector<float>{-kInf, -kInf, 0}));
  CHECK_EQ(processed(forced, row, {7, 0}, 1), row);
}

void suppress_tokens_masks_them() {
  const std::vector<float> row{1, 2, 3, 4};
  CHECK_EQ(processed(SuppressTokens({1, 3}, false, false), row, {0}, 1), (std::vector<float>{1, -kInf, 3, -kInf}));
  // at begin: only while nothing is generated yet
  const SuppressTokens at_begin({0}, /*only_at_begin=*/true, /*forced_bos=*/false);
  CHECK_EQ(processed(at_begin, row, {3, 3}, 2), (std::vector<float>{-kInf, 2, 3, 4}));
  CHECK_EQ(processed(at_begin, row, {3, 3, 1}, 2), row);
}

void inf_nan_remove_replaces_non_finite_values() {
  const float max = std::numeric_limits<float>::max();
  CHECK_EQ(processed(InfNanRemove(), {NAN, kInf, -kInf, 1}), (std::vector<float>{0, max, -max, 1}));
}

void temperature_divides() {
  CHECK_EQ(processed(Temperature(2.0f), {4, -1, 0}), (std::vector<float>{2, -0.5f, 0}));
}

void top_k_keeps_the_k_largest_and_their_ties() {
  const std::vector<float> row{3, 1, 2, 2.5f, 2};
  CHECK_EQ(processed(TopK(2, 1), row), only(row, {0, 3}));
  CHECK_EQ(processed(TopK(3, 1), row), only(row, {0, 3, 2, 4}));  // 2 is held twice
  CHECK_EQ(processed(TopK(1, 2), row), only(row, {0, 3}));        // min_keep wins over k
}

void top_p_keeps_the_smallest_set_reaching_the_mass() {
  // p = [0.5, 0.3, 0.15, 0.05]: the mass before each is 0, 0.5, 0.8, 0.95.
  const std::vector<float> row = logits_of({0.5, 0.3, 0.15, 0.05});
  CHECK_EQ(processed(TopP(0.7, 1), row), only(row, {0, 1}));
  CHECK_EQ(processed(TopP(0.9, 1), row), only(row, {0, 1, 2}));
  CHECK_EQ(processed(TopP(0.1, 1), row), only(row, {0}));
  CHECK_EQ(processed(TopP(0.1, 3), row), only(row, {0, 1, 2}));
}

void min_p_keeps_tokens_near_the_most_likely() {
  // min_p 0.25 of p_max 0.5 keeps p >= 0.125.
  const std::vector<float> row = logits_of({0.5, 0.3, 0.15, 0.05});
  CHECK_EQ(processed(MinP(0.25, 1), row), only(row, {0, 1, 2}));
  CHECK_EQ(processed(MinP(0.9, 1), row), only(row, {0}));
}

void epsilon_cutoff_drops_unlikely_tokens() {
  const std::vector<float> row = logits_of({0.5, 0.3, 0.15, 0.05});
  CHECK_EQ(processed(ProbabilityCutoff(0.1, false, 1), row), only(row, {0, 1, 2}));
  CHECK_EQ(processed(ProbabilityCutoff(0.4, false, 2), row), only(row, {0, 1}));
}

void typical_of_a_uniform_row_keeps_by_position() {
  // Every surprisal equals the entropy (log 4), so all keys tie and the first tokens by
  // position are kept until a mass of 0.5: two of the four.
  const std::vector<float> row{1, 1, 1, 1};
  CHECK_EQ(processed(Typical(0.5, 1), row), only(row, {0, 1}));
}

void log_softmax_normalizes() {
  // log(1/4), log(3/4) for logits log 1, log 3
  const std::vector<float> out = processed(LogSoftmax(), {0.0f, std::log(3.0f)});
  CHECK_NEAR(out[0], std::log(0.25), 1e-6);
  CHECK_NEAR(out[1], std::log(0.75), 1e-6);
}

void processors_edit_the_kept_candidates_after_a_filter() {
  // TopK(3) makes the candidates sparse; the repetition penalty and the temperature then
  // edit the kept values by id: token 3 (4 -> 2 -> 1) and token 0 (3 -> 1.5).
  const TopK top_k(3, 1);
  const RepetitionPenalty penalty(2.0);
  const Temperature temperature(2.0f);
  const std::vector<float> row{3, 1, 2, 4};
  const std::vector<float> out = processed({&top_k, &penalty, &temperature}, row, {3, 1});
  CHECK_EQ(out, (std::vector<float>{1.5f, -kInf, 1, 1}));
}

// A 40-token row (two 32-bit words) allowing tokens 3, 31, 32 and 39: bit t % 32 of word t / 32.
const std::vector<uint32_t> kAllowed = {(1u << 3) | (1u << 31), (1u << 0) | (1u << 7)};

std::vector<float> masked(const std::vector<const LogitsProcessor*>& processors, std::vector<float> row) {
  Workspace ws;
  ws.reserve(static_cast<int64_t>(row.size()));
  Candidates c(row.data(), static_cast<int64_t>(row.size()), ws);
  RowContext ctx;
  ctx.allowed = kAllowed.data();
  for (const LogitsProcessor* p : processors) p->apply(c, ctx, ws);
  c.materialize();
  return row;
}

void allowed_tokens_mask_every_other_token() {
  std::vector<float> row(40);
  for (int i = 0; i < 40; ++i) row[i] = static_cast<float>(i);
  const AllowedTokens mask;
  const std::vector<float> out = masked({&mask}, row);
  for (int i = 0; i < 40; ++i) {
    const bool allowed = i == 3 || i == 31 || i == 32 || i == 39;
    CHECK_EQ(out[i], allowed ? row[i] : -kInf);
  }
  // after a filter (sparse candidates): top-3 keeps 37, 38, 39; the mask leaves only 39
  const TopK top3(3, 1);
  const std::vector<float> sparse = masked({&top3, &mask}, row);
  for (int i = 0; i < 40; ++i) CHECK_EQ(sparse[i], i == 39 ? 39.0f : -kInf);
  // no mask: nothing changes
  std::vector<float> free = row;
  Workspace ws;
  ws.reserve(40);
  Candidates c(free.data(), 40, ws);
  mask.apply(c, RowContext{}, ws);
  CHECK_EQ(free, row);
}

void allows_any_token_looks_below_the_vocabulary_only() {
  CHECK(allows_any_token(kAllowed.data(), 40));
  const std::vector<uint32_t> only_39 = {0u, 1u << 7};
  CHECK(allows_any_token(only_39.data(), 40));
  CHECK(!allows_any_token(only_39.data(), 39));  // bit 39 lies beyond a 39-token vocabulary
  const std::vector<uint32_t> none = {0u, 0u};
  CHECK(!allows_any_token(none.data(), 64));
}

void describe_names_the_processor() {
  CHECK_EQ(TopK(40, 1).describe(), std::string("TopK(40)"));
  CHECK_EQ(RepetitionPenalty(1.5).describe(), std::string("RepetitionPenalty(1.5)"));
}

}  // namespace

int main() {
  return kvgen::test::run_all({
      TEST_CASE(repetition_penalty_divides_positive_and_multiplies_negative_logits),
      TEST_CASE(presence_and_frequency_penalties_count_the_history),
      TEST_CASE(no_repeat_ngram_bans_the_token_that_repeats_a_bigram),
      TEST_CASE(min_length_masks_eos_until_the_length),
      TEST_CASE(sequence_bias_applies_where_the_prefix_ends_the_history),
      TEST_CASE(forced_bos_forces_one_token),
      TEST_CASE(suppress_tokens_masks_them),
      TEST_CASE(inf_nan_remove_replaces_non_finite_values),
      TEST_CASE(temperature_divides),
      TEST_CASE(top_k_keeps_the_k_largest_and_their_ties),
      TEST_CASE(top_p_keeps_the_smallest_set_reaching_the_mass),
      TEST_CASE(min_p_keeps_tokens_near_the_most_likely),
      TEST_CASE(epsilon_cutoff_drops_unlikely_tokens),
      TEST_CASE(typical_of_a_uniform_row_keeps_by_position),
      TEST_CASE(log_softmax_normalizes),
      TEST_CASE(processors_edit_the_kept_candidates_after_a_filter),
      TEST_CASE(allowed_tokens_mask_every_other_token),
      TEST_CASE(allows_any_token_looks_below_the_vocabulary_only),
      TEST_CASE(describe_names_the_processor),
  });
}
