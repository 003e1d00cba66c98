// KVCache::reorder and copy_row on a small cache whose every valid entry names where it
// was written (row, layer, head, position, dim), so that after a reorder each entry
// says which row it came from.
#include <cstdint>
#include <string>
#include <vector>

#include "check.h"
#include "kvgen/model/kv_cache.h"

using kvgen::KVCache;

namespace {

constexpr int64_t kLayers = 2, kRows = 3, kContext = 4, kHeads = 2, kHeadDim = 2;

// The key written at (row, layer, head, position, dim); the value there is its negation.
float marker(int64_t row, int64_t layer, int64_t head, int64_t pos, int64_t dim) {
  return static_cast<float>(1000 * row + 100 * layer + 10 * head + 2 * pos + dim) + 0.5f;
}

// A cache whose row r holds lengths[r] positions of markers (keys) and negated markers
// (values).
KVCache marked_cache(const std::vector<int64_t>& lengths) {
  KVCache cache(kLayers, kRows, kContext, kHeads, kHeadDim);
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t l = 0; l < kLayers; ++l)
      for (int64_t h = 0; h < kHeads; ++h)
        for (int64_t p = 0; p < lengths[r]; ++p)
          for (int64_t d = 0; d < kHeadDim; ++d) {
            cache.keys(l, r, h)[p * kHeadDim + d] = marker(r, l, h, p, d);
            cache.values(l, r, h)[p * kHeadDim + d] = -marker(r, l, h, p, d);
          }
    cache.set_length(r, lengths[r]);
  }
  return cache;
}

// "" when row r holds exactly the valid entries row `source` had (source_length of
// them); else the first difference, so that the CHECK at the caller's line shows it.
std::string row_difference(KVCache& cache, int64_t r, int64_t source, int64_t source_length) {
  if (cache.length(r) != source_length)
    return "length " + std::to_string(cache.length(r)) + ", expected " + std::to_string(source_length);
  for (int64_t l = 0; l < kLayers; ++l)
    for (int64_t h = 0; h < kHeads; ++h)
      for (int64_t p = 0; p < source_length; ++p)
        for (int64_t d = 0; d < kHeadDim; ++d) {
          const float expected = marker(source, l, h, p, d);
          const float key = cache.keys(l, r, h)[p * kHeadDim + d];
          const float value = cache.values(l, r, h)[p * kHeadDim + d];
          if (key != expected || value != -expected)
            return "at layer " + std::to_string(l) + ", head " + std::to_string(h) + ", position " +
                   std::to_string(p) + ", dim " + std::to_string(d) + ": key " + std::to_string(key) + " and value " +
                   std::to_string(value) + ", expected " + std::to_string(expected) + " and its negation";
        }
  return "";
}

#define CHECK_ROW_HOLDS(cache, r, source, source_length) \
  CHECK_EQ(row_difference(cache, r, source, source_length), std::string())

void identity_reorder_changes_nothing() {
  const std::vector<int64_t> lengths{1, 2, 3};
  KVCache cache = marked_cache(lengths);
  const int64_t parents[kRows] = {0, 1, 2};
  cache.reorder(parents);
  for (int64_t r = 0; r < kRows; ++r) CHECK_ROW_HOLDS(cache, r, r, lengths[r]);
}

void reorder_through_a_permutation_cycle() {
  // The cycle 0 -> 1 -> 2 -> 0: row 1 takes row 0, row 2 takes row 1, row 0 takes row 2.
  // Every row is read by another, so one goes through scratch. Lengths move with rows.
  const std::vector<int64_t> lengths{1, 2, 3};
  KVCache cache = marked_cache(lengths);
  const int64_t parents[kRows] = {2, 0, 1};
  cache.reorder(parents);
  CHECK_ROW_HOLDS(cache, 0, 2, 3);
  CHECK_ROW_HOLDS(cache, 1, 0, 1);
  CHECK_ROW_HOLDS(cache, 2, 1, 2);
}

void reorder_a_swap_and_a_fixed_row() {
  // Rows 0 and 2 swap (a cycle of two); row 1 stays.
  const std::vector<int64_t> lengths{4, 2, 3};
  KVCache cache = marked_cache(lengths);
  const int64_t parents[kRows] = {2, 1, 0};
  cache.reorder(parents);
  CHECK_ROW_HOLDS(cache, 0, 2, 3);
  CHECK_ROW_HOLDS(cache, 1, 1, 2);
  CHECK_ROW_HOLDS(cache, 2, 0, 4);
}

void reorder_a_chain_and_a_fan_out() {
  // Row 2 takes row 1 and row 1 takes row 0: row 2 must be written before row 1 is
  // overwritten. Then every row takes row 0 (one beam survives).
  const std::vector<int64_t> lengths{3, 2, 1};
  KVCache cache = marked_cache(lengths);
  const int64_t chain[kRows] = {0, 0, 1};
  cache.reorder(chain);
  CHECK_ROW_HOLDS(cache, 0, 0, 3);
  CHECK_ROW_HOLDS(cache, 1, 0, 3);
  CHECK_ROW_HOLDS(cache, 2, 1, 2);

  KVCache fan = marked_cache(lengths);
  const int64_t all_from_one[kRows] = {1, 1, 1};
  fan.reorder(all_from_one);
  for (int64_t r = 0; r < kRows; ++r) CHECK_ROW_HOLDS(fan, r, 1, 2);
}

void reorder_twice_reuses_the_scratch() {
  // Two cycles in a row: the second reads what the first wrote.
  const std::vector<int64_t> lengths{1, 2, 3};
  KVCache cache = marked_cache(lengths);
  const int64_t parents[kRows] = {2, 0, 1};
  cache.reorder(parents);
  cache.reorder(parents);  // row r now holds row parents[parents[r]]: 1, 2, 0
  CHECK_ROW_HOLDS(cache, 0, 1, 2);
  CHECK_ROW_HOLDS(cache, 1, 2, 3);
  CHECK_ROW_HOLDS(cache, 2, 0, 1);
}

void copy_row_copies_entries_and_length() {
  const std::vector<int64_t> lengths{3, 1, 2};
  KVCache cache = marked_cache(lengths);
  cache.copy_row(0, 2);
  CHECK_ROW_HOLDS(cache, 2, 0, 3);
  CHECK_ROW_HOLDS(cache, 0, 0, 3);
  CHECK_ROW_HOLDS(cache, 1, 1, 1);
}

void bytes_counts_keys_and_values() {
  const KVCache cache(kLayers, kRows, kContext, kHeads, kHeadDim);
  CHECK_EQ(cache.bytes(), int64_t{2 * kLayers * kRows * kContext * kHeads * kHeadDim * 4});
}

// A sliding-window layer keeps window + kRingSlack slots, position p at slot p % capacity;
// a row's whole ring moves with it (every slot is valid once the row is longer than it).
void ring_layers_keep_their_window_and_move_whole() {
  const std::vector<int64_t> windows{0, 2};
  constexpr int64_t context = 40, rows = 2;
  KVCache cache(2, rows, context, 1, 1, windows);
  const int64_t ring = 2 + KVCache::kRingSlack;
  CHECK_EQ(cache.capacity(0), context);
  CHECK_EQ(cache.capacity(1), ring);
  CHECK_EQ(cache.bytes(), int64_t{2 * 4 * rows * (context + ring)});
  CHECK_EQ(KVCache::bytes_for(2, rows, context, 1, 1, windows), cache.bytes());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t l = 0; l < 2; ++l)
      for (int64_t p = 0; p < context; ++p) {  // later positions overwrite earlier ones in the ring
        cache.keys(l, r, 0)[p % cache.capacity(l)] = static_cast<float>(1000 * r + 100 * l + p);
        cache.values(l, r, 0)[p % cache.capacity(l)] = -static_cast<float>(1000 * r + 100 * l + p);
      }
    cache.set_length(r, context);
  }
  // slot s of a layer holds the last position p < context with p % capacity == s
  const auto holds = [&](int64_t r, int64_t source) {
    for (int64_t l = 0; l < 2; ++l)
      for (int64_t s = 0; s < cache.capacity(l); ++s) {
        const int64_t p = s + (context - 1 - s) / cache.capacity(l) * cache.capacity(l);
        const float expected = static_cast<float>(1000 * source + 100 * l + p);
        if (cache.keys(l, r, 0)[s] != expected || cache.values(l, r, 0)[s] != -expected) return false;
      }
    return cache.length(r) == context;
  };
  CHECK(holds(0, 0) && holds(1, 1));
  const int64_t swap[rows] = {1, 0};
  cache.reorder(swap);  // a cycle: through the scratch row
  CHECK(holds(0, 1) && holds(1, 0));
  cache.copy_row(0, 1);
  CHECK(holds(1, 1));
}

}  // namespace

int main() {
  return kvgen::test::run_all({
      TEST_CASE(identity_reorder_changes_nothing),
      TEST_CASE(reorder_through_a_permutation_cycle),
      TEST_CASE(reorder_a_swap_and_a_fixed_row),
      TEST_CASE(reorder_a_chain_and_a_fan_out),
      TEST_CASE(reorder_twice_reuses_the_scratch),
      TEST_CASE(copy_row_copies_entries_and_length),
      TEST_CASE(bytes_counts_keys_and_values),
      TEST_CASE(ring_layers_keep_their_window_and_move_whole),
  });
}
