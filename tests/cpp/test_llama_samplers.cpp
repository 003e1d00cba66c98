// llama.cpp's samplers on hand-made rows and histories: each expectation follows from the
// definition in llama.cpp's src/llama-sampling.cpp applied by hand.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "check.h"
#include "kvgen/sampling/llama_samplers.h"

using namespace kvgen;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
const std::vector<std::string> kTexts{"a", "b", "c", ":", "x", "y"};
enum : int64_t { A, B, C, COLON, X, Y };

std::vector<float> processed(const LogitsProcessor& p, std::vector<float> row, const std::vector<int64_t>& history,
                             float mirostat_mu = 0.0f) {
  Workspace ws;
  ws.reserve(static_cast<int64_t>(row.size()));
  Candidates c(row.data(), static_cast<int64_t>(row.size()), ws);
  RowContext ctx{history.data(), static_cast<int64_t>(history.size()), 0};
  ctx.mirostat_mu = mirostat_mu;
  p.apply(c, ctx, ws);
  c.materialize();
  return row;
}

void dry_penalizes_the_token_that_extends_a_repeat() {
  // a b c a b c a b: "a b c a b" (5 tokens) repeats before c: 1 * 2 ** (5 - 2)
  const DryPenalty dry(1.0, 2.0, 2, -1, DryBreakers({":"}, kTexts));
  CHECK_EQ(processed(dry, std::vector<float>(6, 0.0f), {A, B, C, A, B, C, A, B}),
           (std::vector<float>{0, 0, -8, 0, 0, 0}));
}

void dry_breakers_limit_the_repeat() {
  // a b : a b : a b: the repeat stops at the last ':' (2 tokens); ':' itself is exempt
  const DryPenalty single(1.0, 2.0, 2, -1, DryBreakers({":"}, kTexts));
  CHECK_EQ(processed(single, std::vector<float>(6, 0.0f), {A, B, COLON, A, B, COLON, A, B}),
           std::vector<float>(6, 0.0f));
  // "xy" over two tokens: a b x y a b x y a b keeps 2 tokens after it, so x gets 2 ** 0
  const DryPenalty pair(1.0, 2.0, 2, -1, DryBreakers({"xy"}, kTexts));
  CHECK_EQ(processed(pair, std::vector<float>(6, 0.0f), {A, B, X, Y, A, B, X, Y, A, B}),
           (std::vector<float>{0, 0, 0, 0, -1, 0}));
}

void top_n_sigma_keeps_within_n_std_of_the_max() {
  // 0, 1, 2, 3: mean 1.5, std sqrt(1.25) = 1.118; n = 1 keeps >= 1.882
  CHECK_EQ(processed(TopNSigma(1.0, 1), {0, 1, 2, 3}, {}), (std::vector<float>{-kInf, -kInf, 2, 3}));
}

void xtc_keeps_the_least_likely_top_choice() {
  const std::vector<float> row{std::log(0.4f), std::log(0.3f), std::log(0.2f), std::log(0.1f)};
  CHECK_EQ(processed(Xtc(1.0, 0.15, 1), row, {}), (std::vector<float>{-kInf, -kInf, row[2], row[3]}));
}

void mirostat_v2_keeps_surprise_at_most_mu() {
  // mu = 2 bits keeps p >= 0.25
  const std::vector<float> row{std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  CHECK_EQ(processed(MirostatTruncation(2, 1), row, {}, 2.0f), (std::vector<float>{row[0], row[1], -kInf, -kInf}));
}

}  // namespace

int main() {
  return kvgen::test::run_all({
      TEST_CASE(dry_penalizes_the_token_that_extends_a_repeat),
      TEST_CASE(dry_breakers_limit_the_repeat),
      TEST_CASE(top_n_sigma_keeps_within_n_std_of_the_max),
      TEST_CASE(xtc_keeps_the_least_likely_top_choice),
      TEST_CASE(mirostat_v2_keeps_surprise_at_most_mu),
  });
}
