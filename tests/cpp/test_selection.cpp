// selection.h on hand-made rows: top-k (both the small path that sorts and the blocked
// threshold path), the k-th largest value, threshold collection, and the smallest
// prefix by mass (the sorting path below 2048 items and the histogram path above).
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "check.h"
#include "kvgen/sampling/selection.h"

using kvgen::Workspace;
namespace selection = kvgen::selection;

namespace {

Workspace workspace_for(int64_t n) {
  Workspace ws;
  ws.reserve(n);
  return ws;
}

// selection::top_k's result as a vector.
std::vector<int32_t> top_k(const std::vector<float>& vals, int64_t k) {
  Workspace ws = workspace_for(static_cast<int64_t>(vals.size()));
  std::vector<int32_t> out(vals.size());
  const int64_t count = selection::top_k(vals.data(), static_cast<int64_t>(vals.size()), k, out.data(), ws);
  out.resize(count);
  return out;
}

void top_k_of_a_short_row_is_in_descending_order() {
  // [3, 1, 2, 5]: k >= n sorts everything; k = 2 keeps 5 and 3.
  const std::vector<float> row{3, 1, 2, 5};
  CHECK_EQ(top_k(row, 4), (std::vector<int32_t>{3, 0, 2, 1}));
  CHECK_EQ(top_k(row, 9), (std::vector<int32_t>{3, 0, 2, 1}));
  CHECK_EQ(top_k(row, 2), (std::vector<int32_t>{3, 0}));
  CHECK_EQ(top_k(row, 1), (std::vector<int32_t>{3}));
}

void top_k_keeps_ties_with_the_kth_value() {
  // [1, 4, 4, 2]: the 2nd largest is 4, held twice; k = 3 keeps the 2 as well.
  const std::vector<float> row{1, 4, 4, 2};
  CHECK_EQ(top_k(row, 1), (std::vector<int32_t>{1, 2}));
  CHECK_EQ(top_k(row, 2), (std::vector<int32_t>{1, 2}));
  CHECK_EQ(top_k(row, 3), (std::vector<int32_t>{1, 2, 3}));
}

void top_k_over_many_blocks() {
  // 300 values (5 blocks of 64) counting down from -1, with three planted above them:
  // 10 at 250, 9 at 7 and at 70 (a tie for 2nd), so k = 2 keeps three.
  std::vector<float> row(300);
  for (size_t i = 0; i < row.size(); ++i) row[i] = -1.0f - static_cast<float>(i);
  row[250] = 10.0f;
  row[7] = 9.0f;
  row[70] = 9.0f;
  CHECK_EQ(top_k(row, 1), (std::vector<int32_t>{250}));
  CHECK_EQ(top_k(row, 2), (std::vector<int32_t>{250, 7, 70}));
  CHECK_EQ(top_k(row, 3), (std::vector<int32_t>{250, 7, 70}));
  // next come -1 (position 0), -2 (1), -3 (2)
  CHECK_EQ(top_k(row, 5), (std::vector<int32_t>{250, 7, 70, 0, 1}));
  CHECK_EQ(top_k(row, 6), (std::vector<int32_t>{250, 7, 70, 0, 1, 2}));
}

void kth_largest_value() {
  std::vector<float> row(130);
  for (size_t i = 0; i < row.size(); ++i) row[i] = static_cast<float>((i * 37) % 130);  // a permutation of 0..129
  Workspace ws = workspace_for(130);
  CHECK_EQ(selection::kth_largest(row.data(), 130, 1, ws), 129.0f);
  CHECK_EQ(selection::kth_largest(row.data(), 130, 10, ws), 120.0f);
  CHECK_EQ(selection::kth_largest(row.data(), 130, 130, ws), 0.0f);
  const std::vector<float> with_tie{3, 1, 2, 3};
  CHECK_EQ(selection::kth_largest(with_tie.data(), 4, 2, ws), 3.0f);
  CHECK_EQ(selection::kth_largest(with_tie.data(), 4, 3, ws), 2.0f);
}

void collect_at_least_a_threshold() {
  // 130 values (two full blocks and a tail of 2), zero except 1s at 3, 64, 100 and 129.
  std::vector<float> row(130, 0.0f);
  for (int i : {3, 64, 100, 129}) row[i] = 1.0f;
  std::vector<int32_t> out(130);
  const int64_t count = selection::collect_at_least(row.data(), 130, 0.5f, out.data());
  out.resize(count);
  CHECK_EQ(out, (std::vector<int32_t>{3, 64, 100, 129}));
  // a threshold equal to the values keeps them
  CHECK_EQ(selection::collect_at_least(row.data(), 130, 0.0f, out.data()), int64_t{130});
}

void sort_positions_by_descending_value() {
  const std::vector<float> vals{0.5f, 2.0f, 0.5f, 3.0f};
  std::vector<int32_t> positions{0, 1, 2, 3};
  selection::sort_descending(vals.data(), positions.data(), 4);
  CHECK_EQ(positions, (std::vector<int32_t>{3, 1, 0, 2}));  // the tie at 0.5 by position
}

// smallest_prefix_by_mass's kept positions, sorted (its order is unspecified).
std::vector<int32_t> prefix_by_mass(const std::vector<float>& keys, const std::vector<float>& weights, double target,
                                    int64_t min_keep) {
  const int64_t n = static_cast<int64_t>(keys.size());
  Workspace ws = workspace_for(n);
  const int64_t count =
      selection::smallest_prefix_by_mass(keys.data(), weights.data(), n, target, min_keep, ws.chosen.data(), ws);
  std::vector<int32_t> kept(ws.chosen.data(), ws.chosen.data() + count);
  std::sort(kept.begin(), kept.end());
  return kept;
}

void smallest_prefix_by_mass_of_a_short_row() {
  // In key order: item 1 (weight 0.4), 0 (0.2), 3 (0.3), 2 (0.1). Target 0.65: the
  // masses before each are 0, 0.4, 0.6, 0.9, so items 1, 0 and 3 are kept.
  const std::vector<float> keys{0.5f, 0.0f, 2.0f, 1.0f};
  const std::vector<float> weights{0.2f, 0.4f, 0.1f, 0.3f};
  CHECK_EQ(prefix_by_mass(keys, weights, 0.65, 1), (std::vector<int32_t>{0, 1, 3}));
  CHECK_EQ(prefix_by_mass(keys, weights, 0.3, 1), (std::vector<int32_t>{1}));
  // min_keep reaches past the target
  CHECK_EQ(prefix_by_mass(keys, weights, 0.3, 3), (std::vector<int32_t>{0, 1, 3}));
  CHECK_EQ(prefix_by_mass(keys, weights, 0.0, 1), (std::vector<int32_t>{1}));
}

void smallest_prefix_by_mass_of_a_long_row() {
  // 3000 items of weight 1 (the histogram path), keys rising from the end to the start
  // in steps of 1/100 (so up to 30, several per 1/64 bucket). Target 10.5 keeps the 11
  // items with the smallest keys: positions 2989..2999.
  const int64_t n = 3000;
  std::vector<float> keys(n), weights(n, 1.0f);
  for (int64_t i = 0; i < n; ++i) keys[i] = static_cast<float>(n - 1 - i) / 100.0f;
  std::vector<int32_t> expected;
  for (int32_t i = 2989; i < 3000; ++i) expected.push_back(i);
  CHECK_EQ(prefix_by_mass(keys, weights, 10.5, 1), expected);
  // min_keep = 40 wins over the target: positions 2960..2999.
  expected.clear();
  for (int32_t i = 2960; i < 3000; ++i) expected.push_back(i);
  CHECK_EQ(prefix_by_mass(keys, weights, 10.5, 40), expected);
  // Keys beyond the last bucket (>= 64) and +inf: target 2998.5 keeps all but the last
  // in key order, which is the +inf at position 0.
  keys[0] = INFINITY;
  keys[1] = 100.0f;
  expected.clear();
  for (int32_t i = 1; i < 3000; ++i) expected.push_back(i);
  CHECK_EQ(prefix_by_mass(keys, weights, 2998.5, 1), expected);
}


// torch.topk's algorithm on the CPU, as torch runs it (TopKImpl.h): libstdc++'s
// partial_sort over every (value, position) pair when k * 64 <= n, else nth_element at
// k - 1 and a sort of the first k - 1; NaN above every number.
std::vector<int64_t> torch_topk_reference(const std::vector<float>& vals, int64_t k) {
  using Item = std::pair<float, int64_t>;
  std::vector<Item> q;
  for (size_t i = 0; i < vals.size(); ++i) q.push_back({vals[i], static_cast<int64_t>(i)});
  const auto first = [](const Item& x, const Item& y) {
    return (std::isnan(x.first) && !std::isnan(y.first)) || x.first > y.first;
  };
  if (k * 64 <= static_cast<int64_t>(q.size())) {
    std::partial_sort(q.begin(), q.begin() + k, q.end(), first);
  } else {
    std::nth_element(q.begin(), q.begin() + (k - 1), q.end(), first);
    std::sort(q.begin(), q.begin() + (k - 1), first);
  }
  std::vector<int64_t> out;
  for (int64_t i = 0; i < k; ++i) out.push_back(q[i].second);
  return out;
}

std::vector<int64_t> torch_top_k(const std::vector<float>& vals, int64_t k, selection::TopKScratch& scratch) {
  std::vector<int64_t> out(k);
  selection::torch_top_k(vals.data(), static_cast<int64_t>(vals.size()), k, out.data(), scratch);
  return out;
}

void torch_top_k_follows_torchs_algorithm() {
  // Rows of distinct values (the path that reads block maxima), rows whose largest values
  // tie (ties land where torch's algorithms put them), NaN and -inf, in sizes with and
  // without a tail past whole blocks of 64, and a scratch that shrinks and grows again.
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  selection::TopKScratch scratch;
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t n : {12, 100, 640, 1000, 4096 + 37, 49152 * 4}) {
    for (int64_t k : {1, 2, 8, 12}) {
      if (k > n) continue;
      for (int variant = 0; variant < 6; ++variant) {
        std::vector<float> row(n);
        for (float& v : row) v = normal(rng);
        std::uniform_int_distribution<int64_t> at(0, n - 1);
        if (variant == 1)  // a tie at the k-th / (k + 1)-th value
          row[at(rng)] = *std::max_element(row.begin(), row.end());
        if (variant == 2)  // values in steps of 1/4: ties everywhere
          for (float& v : row) v = std::round(v * 4.0f) / 4.0f;
        if (variant == 3) row[at(rng)] = std::nanf("");
        if (variant == 4)  // mostly -inf: fewer finite values than k + 1
          for (int64_t i = 0; i < n; ++i) row[i] = i % 97 == 5 && i < 97 * 4 ? normal(rng) : -inf;
        if (variant == 5)  // beam search's first step: one live beam, the rest pushed down by -1e9
          for (int64_t i = n / 4; i < n; ++i) row[i] = row[i] + -1.0e9f;
        CHECK_EQ(torch_top_k(row, k, scratch), torch_topk_reference(row, k));
        // the same values as rows of beams plus each beam's score (beam search's sums)
        for (int64_t count : {1, 2, 4}) {
          if (n % count) continue;
          const int64_t width = n / count;
          std::vector<float> shifts(count), sums(n);
          for (int64_t j = 0; j < count; ++j) shifts[j] = j == 0 ? 0.0f : -static_cast<float>(j) * 0.75f;
          if (variant == 5) shifts[count - 1] = -1.0e9f;  // a dead beam
          for (int64_t i = 0; i < n; ++i) sums[i] = row[i] + shifts[i / width];
          std::vector<int64_t> out(k);
          selection::torch_top_k_shifted(row.data(), count, width, shifts.data(), k, out.data(), scratch);
          CHECK_EQ(out, torch_topk_reference(sums, k));
        }
      }
    }
  }
}
}  // namespace

int main() {
  return kvgen::test::run_all({
      TEST_CASE(top_k_of_a_short_row_is_in_descending_order),
      TEST_CASE(top_k_keeps_ties_with_the_kth_value),
      TEST_CASE(top_k_over_many_blocks),
      TEST_CASE(torch_top_k_follows_torchs_algorithm),
      TEST_CASE(kth_largest_value),
      TEST_CASE(collect_at_least_a_threshold),
      TEST_CASE(sort_positions_by_descending_value),
      TEST_CASE(smallest_prefix_by_mass_of_a_short_row),
      TEST_CASE(smallest_prefix_by_mass_of_a_long_row),
  });
}
