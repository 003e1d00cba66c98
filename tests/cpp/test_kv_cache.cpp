// KVCache::reorder and copy_row on a small cache whose every valid entry names where it
// was written (row, layer, head, position, dim), so that after a reorder each entry
// says which row it came from.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "check.h"
#include "kvgen/runtime/half.h"
#include "kvgen/runtime/kv_cache.h"

using kvgen::KVCache;
using kvgen::KVType;

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


// ---- rows that share positions (beams): only the positions where rows differ move ----

// A cache of 3 rows, 8 positions, whose entries name the write they came from: writes
// (row, position, tag) put key tag * 1000 + layer * 100 + head * 10 + dim at every layer
// and head, the value its negation, and grow the row by set_length as the decoder does.
struct TaggedCache {
  KVCache cache{kLayers, 3, 8, kHeads, kHeadDim};
  void write(int64_t row, int64_t pos, float tag) {
    for (int64_t l = 0; l < kLayers; ++l)
      for (int64_t h = 0; h < kHeads; ++h)
        for (int64_t d = 0; d < kHeadDim; ++d) {
          cache.keys(l, row, h)[pos * kHeadDim + d] = tag * 1000 + static_cast<float>(l * 100 + h * 10 + d);
          cache.values(l, row, h)[pos * kHeadDim + d] = -cache.keys(l, row, h)[pos * kHeadDim + d];
        }
    cache.set_length(row, pos + 1);
  }
  // "" when row holds the tags (one per position, length included); else the first difference.
  std::string holds(int64_t row, const std::vector<float>& tags) {
    if (cache.length(row) != static_cast<int64_t>(tags.size()))
      return "length " + std::to_string(cache.length(row)) + ", expected " + std::to_string(tags.size());
    for (int64_t l = 0; l < kLayers; ++l)
      for (int64_t h = 0; h < kHeads; ++h)
        for (size_t p = 0; p < tags.size(); ++p)
          for (int64_t d = 0; d < kHeadDim; ++d) {
            const float key = cache.keys(l, row, h)[p * kHeadDim + d];
            const float expected = tags[p] * 1000 + static_cast<float>(l * 100 + h * 10 + d);
            if (key != expected || cache.values(l, row, h)[p * kHeadDim + d] != -expected)
              return "position " + std::to_string(p) + ": key " + std::to_string(key) + ", expected " +
                     std::to_string(expected);
          }
    return "";
  }
};

void reorder_moves_only_the_positions_rows_do_not_share() {
  // A prompt of 3 positions in row 0, copied to rows 1 and 2 (as the engine starts beams),
  // then each row decodes positions 3 and 4 with its own tokens.
  TaggedCache t;
  for (int64_t p = 0; p < 3; ++p) t.write(0, p, static_cast<float>(p + 1));
  t.cache.copy_row(0, 1);
  t.cache.copy_row(0, 2);
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t p = 3; p < 5; ++p) t.write(r, p, static_cast<float>(10 * (r + 1) + p));
  CHECK_EQ(t.holds(1, {1, 2, 3, 23, 24}), std::string());
  // Mark every row's first position: a reorder that copied the prompt from a parent
  // would overwrite the mark; one that copies only what differs keeps it.
  const auto mark = [&](int64_t row, int64_t pos, float key) {
    for (int64_t l = 0; l < kLayers; ++l)
      for (int64_t h = 0; h < kHeads; ++h) t.cache.keys(l, row, h)[pos * kHeadDim] = key;
  };
  const auto unmark = [&](int64_t row, int64_t pos, float tag) {
    for (int64_t l = 0; l < kLayers; ++l)
      for (int64_t h = 0; h < kHeads; ++h)
        t.cache.keys(l, row, h)[pos * kHeadDim] = tag * 1000 + static_cast<float>(l * 100 + h * 10);
  };
  for (int64_t r = 0; r < 3; ++r) mark(r, 0, -7.0f);
  const int64_t parents[3] = {0, 0, 1};  // row 0 goes on twice, row 1 once, row 2 ends
  t.cache.reorder(parents);
  for (int64_t r = 0; r < 3; ++r) {
    CHECK_EQ(t.cache.keys(1, r, 1)[0], -7.0f);
    unmark(r, 0, 1.0f);
  }
  CHECK_EQ(t.holds(0, {1, 2, 3, 13, 14}), std::string());
  CHECK_EQ(t.holds(1, {1, 2, 3, 13, 14}), std::string());
  CHECK_EQ(t.holds(2, {1, 2, 3, 23, 24}), std::string());

  // A permutation moves no keys: each row takes its parent's block as it is.
  for (int64_t r = 0; r < 3; ++r) t.write(r, 5, static_cast<float>(100 + r));
  const float* before[3] = {t.cache.keys(1, 0, 1), t.cache.keys(1, 1, 1), t.cache.keys(1, 2, 1)};
  const int64_t swap[3] = {0, 2, 1};
  t.cache.reorder(swap);
  CHECK(t.cache.keys(1, 0, 1) == before[0] && t.cache.keys(1, 1, 1) == before[2] &&
        t.cache.keys(1, 2, 1) == before[1]);
  CHECK_EQ(t.holds(0, {1, 2, 3, 13, 14, 100}), std::string());
  CHECK_EQ(t.holds(1, {1, 2, 3, 23, 24, 102}), std::string());
  CHECK_EQ(t.holds(2, {1, 2, 3, 13, 14, 101}), std::string());

  // The copied positions carry their write ids: rows 0 and 2 share positions 0-4, so row 0
  // taking row 2 (row 2 going on too) copies position 5 alone (its marked 3 and 4 stay).
  for (int64_t p : {3, 4}) mark(0, p, -7.0f);
  const int64_t twice[3] = {2, 1, 2};
  t.cache.reorder(twice);
  CHECK_EQ(t.cache.keys(0, 0, 0)[3 * kHeadDim], -7.0f);
  CHECK_EQ(t.cache.keys(1, 0, 1)[4 * kHeadDim], -7.0f);
  unmark(0, 3, 13.0f);
  unmark(0, 4, 14.0f);
  CHECK_EQ(t.holds(0, {1, 2, 3, 13, 14, 101}), std::string());
  CHECK_EQ(t.holds(2, {1, 2, 3, 13, 14, 101}), std::string());

  // A row rolled back and written again holds new writes: row 2 rolls back to 4 and writes
  // 4 and 5 again (same tags, new writes). Row 0 taking it keeps its position 3 (marked)
  // and must take 4 and 5 (marked too).
  t.cache.truncate(2, 4);
  t.write(2, 4, 14.0f);
  t.write(2, 5, 101.0f);
  for (int64_t p : {3, 4}) mark(0, p, -7.0f);
  t.cache.reorder(twice);
  CHECK_EQ(t.cache.keys(0, 0, 0)[3 * kHeadDim], -7.0f);
  unmark(0, 3, 13.0f);
  CHECK_EQ(t.holds(0, {1, 2, 3, 13, 14, 101}), std::string());
  CHECK_EQ(t.holds(1, {1, 2, 3, 23, 24, 102}), std::string());
  CHECK_EQ(t.holds(2, {1, 2, 3, 13, 14, 101}), std::string());
}

// ---- half precision caches: written and read as floats (store / load) ----

// A half cache of rows x positions, layers x kv heads, head_dim 3, whose every key is a
// number a half holds exactly and names (row, layer, head, position, dim); values negate it.
float small_marker(int64_t row, int64_t layer, int64_t head, int64_t pos, int64_t dim) {
  return static_cast<float>((((row * 2 + layer) * 2 + head) * 8 + pos) * 3 + dim) + 0.5f;  // < 2^10: exact
}

KVCache small_marked_half_cache(const std::vector<int64_t>& lengths, const std::vector<int64_t>& windows = {}) {
  KVCache cache(2, static_cast<int64_t>(lengths.size()), 8, 2, 3, windows, KVType::Float16);
  for (int64_t r = 0; r < cache.rows(); ++r) {
    for (int64_t l = 0; l < 2; ++l)
      for (int64_t p = 0; p < lengths[r]; ++p) {
        float k[6], v[6];  // (kv_heads, head_dim)
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t d = 0; d < 3; ++d) k[h * 3 + d] = small_marker(r, l, h, p, d), v[h * 3 + d] = -k[h * 3 + d];
        cache.store(l, r, p % cache.capacity(l), k, v);
      }
    cache.set_length(r, lengths[r]);
  }
  return cache;
}

std::string half_row_difference(KVCache& cache, int64_t r, int64_t source, int64_t source_length) {
  if (cache.length(r) != source_length)
    return "length " + std::to_string(cache.length(r)) + ", expected " + std::to_string(source_length);
  float k[3], v[3];
  for (int64_t l = 0; l < 2; ++l)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t p = 0; p < source_length; ++p) {
        cache.load(k, v, l, r, h, p, 1);
        for (int64_t d = 0; d < 3; ++d)
          if (k[d] != small_marker(source, l, h, p, d) || v[d] != -small_marker(source, l, h, p, d))
            return "at layer " + std::to_string(l) + ", head " + std::to_string(h) + ", position " +
                   std::to_string(p) + ", dim " + std::to_string(d) + ": key " + std::to_string(k[d]);
      }
  return "";
}

void half_cache_stores_reorders_and_copies_rows() {
  KVCache cache = small_marked_half_cache({5, 8, 1});
  CHECK(cache.half());
  CHECK_EQ(cache.bytes(), int64_t{2 * 2 * 3 * 8 * 2 * 3 * 2});  // keys and values, 2 bytes each
  CHECK_EQ(KVCache::bytes_for(2, 3, 8, 2, 3, {}, KVType::Float16), cache.bytes());
  for (int64_t r = 0; r < 3; ++r) CHECK_EQ(half_row_difference(cache, r, r, std::vector<int64_t>{5, 8, 1}[r]), std::string());
  const int64_t cycle[3] = {2, 0, 1};  // through the scratch row
  cache.reorder(cycle);
  CHECK_EQ(half_row_difference(cache, 0, 2, 1), std::string());
  CHECK_EQ(half_row_difference(cache, 1, 0, 5), std::string());
  CHECK_EQ(half_row_difference(cache, 2, 1, 8), std::string());
  cache.copy_row(2, 0);
  CHECK_EQ(half_row_difference(cache, 0, 1, 8), std::string());
  cache.truncate(0, 3);
  CHECK_EQ(half_row_difference(cache, 0, 1, 3), std::string());
}

void half_rounding_is_ieee_nearest_even() {
  // binary16 bit patterns from IEEE 754 (not from this code): 1, the largest finite, the
  // smallest subnormal, 0.1 (0x2E66), 1/3 (0x3555), a tie between 1 and 1 + 2^-10 rounded
  // to even (1), overflow to infinity, and -2.
  const float values[] = {1.0f, 65504.0f, 0x1p-24f, 0.1f, 1.0f / 3.0f, 1.0f + 0x1p-11f, 65520.0f, -2.0f};
  const uint16_t bits[] = {0x3C00, 0x7BFF, 0x0001, 0x2E66, 0x3555, 0x3C00, 0x7C00, 0xC000};
  uint16_t converted[8];
  kvgen::half::from_floats(converted, values, 8);
  for (int i = 0; i < 8; ++i) {
    CHECK_EQ(kvgen::half::from_float(values[i]), bits[i]);
    CHECK_EQ(converted[i], bits[i]);
  }
  float back[8];
  kvgen::half::to_floats(back, bits, 8);
  CHECK_EQ(back[3], 0.0999755859375f);
  CHECK_EQ(back[2], 0x1p-24f);
}

// Int8 cache: 2 layers, 3 rows, 8 positions, 2 heads, head_dim 5; the element (row, layer,
// head, position, dim) of a key is int8_source(...), of a value its negation times 0.5: each
// (position, head) row has its own magnitude (so its own scale) and a largest element.
constexpr int64_t kInt8Dim = 5;
float int8_source(int64_t row, int64_t layer, int64_t head, int64_t pos, int64_t dim) {
  const float magnitude = 0.01f * static_cast<float>(1 + row + 3 * layer + 7 * head + 11 * pos);  // the row's scale * 127
  const float shape[kInt8Dim] = {1.0f, -0.3f, 0.77f, -1.0f / 3.0f, 0.001f};
  return magnitude * shape[dim];
}

KVCache int8_cache(const std::vector<int64_t>& lengths) {
  KVCache cache(2, 3, 8, 2, kInt8Dim, {}, KVType::Int8);
  float k[2 * kInt8Dim], v[2 * kInt8Dim];
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t l = 0; l < 2; ++l)
      for (int64_t p = 0; p < lengths[r]; ++p) {
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t d = 0; d < kInt8Dim; ++d) {
            k[h * kInt8Dim + d] = int8_source(r, l, h, p, d);
            v[h * kInt8Dim + d] = -0.5f * int8_source(r, l, h, p, d);
          }
        cache.store(l, r, p, k, v);
      }
    cache.set_length(r, lengths[r]);
  }
  return cache;
}

// "" when every valid position of row r loads within half a step (scale / 2, scale =
// max|x| / 127) of what row `source` was given, for source_length positions.
std::string int8_row_difference(KVCache& cache, int64_t r, int64_t source, int64_t source_length) {
  if (cache.length(r) != source_length)
    return "length " + std::to_string(cache.length(r)) + ", expected " + std::to_string(source_length);
  float k[kInt8Dim], v[kInt8Dim];
  for (int64_t l = 0; l < 2; ++l)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t p = 0; p < source_length; ++p) {
        cache.load(k, v, l, r, h, p, 1);
        const float key_step = std::fabs(int8_source(source, l, h, p, 0)) / 127.0f;
        for (int64_t d = 0; d < kInt8Dim; ++d) {
          const float key = int8_source(source, l, h, p, d), value = -0.5f * key;
          if (std::fabs(k[d] - key) > 0.5001f * key_step || std::fabs(v[d] - value) > 0.5001f * 0.5f * key_step)
            return "at layer " + std::to_string(l) + ", head " + std::to_string(h) + ", position " +
                   std::to_string(p) + ", dim " + std::to_string(d) + ": key " + std::to_string(k[d]) +
                   ", expected " + std::to_string(key);
        }
        // the largest element is exact (scale = max|x| / 127), the rows' scales their own
        if (k[0] != int8_source(source, l, h, p, 0) || v[0] != -0.5f * int8_source(source, l, h, p, 0))
          return "the largest element of layer " + std::to_string(l) + ", head " + std::to_string(h) +
                 ", position " + std::to_string(p) + " is not exact: " + std::to_string(k[0]);
      }
  return "";
}

void int8_cache_stores_reorders_and_copies_rows_with_their_scales() {
  KVCache cache = int8_cache({5, 8, 1});
  CHECK(cache.int8());
  CHECK_EQ(cache.bytes(), int64_t{2 * 2 * 3 * 8 * 2 * (kInt8Dim + 4)});  // int8 elements and a float scale per row
  CHECK_EQ(KVCache::bytes_for(2, 3, 8, 2, kInt8Dim, {}, KVType::Int8), cache.bytes());
  for (int64_t r = 0; r < 3; ++r) CHECK_EQ(int8_row_difference(cache, r, r, std::vector<int64_t>{5, 8, 1}[r]), std::string());
  // a zero row stores and loads as zeros
  const float zeros[2 * kInt8Dim] = {};
  cache.store(0, 2, 1, zeros, zeros);
  float k[kInt8Dim], v[kInt8Dim];
  cache.load(k, v, 0, 2, 1, 1, 1);
  for (int64_t d = 0; d < kInt8Dim; ++d) CHECK(k[d] == 0.0f && v[d] == 0.0f);
  const int64_t cycle[3] = {2, 0, 1};
  cache.reorder(cycle);
  CHECK_EQ(int8_row_difference(cache, 0, 2, 1), std::string());
  CHECK_EQ(int8_row_difference(cache, 1, 0, 5), std::string());
  CHECK_EQ(int8_row_difference(cache, 2, 1, 8), std::string());
  const int64_t fan_out[3] = {2, 2, 1};  // row 2's block goes to two rows: one of them is a copy
  cache.reorder(fan_out);
  CHECK_EQ(int8_row_difference(cache, 0, 1, 8), std::string());
  CHECK_EQ(int8_row_difference(cache, 1, 1, 8), std::string());
  CHECK_EQ(int8_row_difference(cache, 2, 0, 5), std::string());
  cache.copy_row(2, 0);
  CHECK_EQ(int8_row_difference(cache, 0, 0, 5), std::string());
  cache.truncate(0, 3);
  CHECK_EQ(int8_row_difference(cache, 0, 0, 3), std::string());
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
      TEST_CASE(reorder_moves_only_the_positions_rows_do_not_share),
      TEST_CASE(half_cache_stores_reorders_and_copies_rows),
      TEST_CASE(half_rounding_is_ieee_nearest_even),
      TEST_CASE(int8_cache_stores_reorders_and_copies_rows_with_their_scales),
  });
}
