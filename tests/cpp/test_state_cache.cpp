// StateCache (kvgen/runtime/state_cache.h): sizes from the layer shapes, the row
// operations (reorder, copy_row, reset, snapshot / restore) on hand-filled rows, and the
// size checks that keep a hostile file from allocating absurdly.
#include <cstdint>
#include <string>
#include <vector>

#include "check.h"
#include "kvgen/errors.h"
#include "kvgen/runtime/kv_cache.h"
#include "kvgen/runtime/slot_cache.h"
#include "kvgen/runtime/state_cache.h"

namespace {

using kvgen::RecurrentLayerShape;
using kvgen::StateCache;
using kvgen::ValueError;

// A Gated DeltaNet layer (conv over 6 channels, kernel 4; 2 heads of 3 x 2) and an LFM2
// short-convolution layer (5 channels, kernel 3, no recurrent matrix).
std::vector<RecurrentLayerShape> two_layers() { return {{6, 4, 2, 3, 2}, {5, 3, 0, 0, 0}}; }

// Fills every float of row `row` with tag * 1000 + its index in the row.
void fill_row(StateCache& c, int64_t row, float tag) {
  for (int64_t l = 0; l < c.layers(); ++l) {
    float* conv = c.conv(l, row);
    for (int64_t i = 0; i < c.conv_floats(l); ++i) conv[i] = tag * 1000 + i;
    float* rec = c.recurrent(l, row);
    for (int64_t i = 0; i < c.recurrent_floats(l); ++i) rec[i] = tag * 1000 + 500 + i;
  }
}

// The tag (>= 1) row `row` was filled with, 0 when it is all zero (the initial state), or
// -1 when its floats are neither.
float tag_of(StateCache& c, int64_t row) {
  bool zero = true;
  for (int64_t l = 0; l < c.layers(); ++l) {
    for (int64_t i = 0; i < c.conv_floats(l); ++i) zero = zero && c.conv(l, row)[i] == 0.0f;
    for (int64_t i = 0; i < c.recurrent_floats(l); ++i) zero = zero && c.recurrent(l, row)[i] == 0.0f;
  }
  if (zero) return 0;
  const float tag = (c.conv(0, row)[0]) / 1000;
  for (int64_t l = 0; l < c.layers(); ++l) {
    for (int64_t i = 0; i < c.conv_floats(l); ++i)
      if (c.conv(l, row)[i] != tag * 1000 + i) return -1;
    for (int64_t i = 0; i < c.recurrent_floats(l); ++i)
      if (c.recurrent(l, row)[i] != tag * 1000 + 500 + i) return -1;
  }
  return tag;
}

std::vector<float> tags(StateCache& c) {
  std::vector<float> out;
  for (int64_t r = 0; r < c.rows(); ++r) out.push_back(tag_of(c, r));
  return out;
}

void sizes_follow_the_layer_shapes() {
  StateCache c(two_layers(), 3, 2);
  CHECK_EQ(c.conv_floats(0), int64_t{6 * 3});
  CHECK_EQ(c.recurrent_floats(0), int64_t{2 * 3 * 2});
  CHECK_EQ(c.conv_floats(1), int64_t{5 * 2});
  CHECK_EQ(c.recurrent_floats(1), int64_t{0});
  CHECK_EQ(c.row_floats(), int64_t{18 + 12 + 10});
  CHECK_EQ(c.bytes(), int64_t{(3 + 2) * 40 * 4});
  CHECK_EQ(StateCache::bytes_for(two_layers(), 3, 2), c.bytes());
  // layers do not overlap: writing one leaves the others' floats alone
  fill_row(c, 0, 1);
  fill_row(c, 1, 2);
  CHECK_EQ(tags(c), (std::vector<float>{1, 2, 0}));
}

void state_starts_at_zero_and_reset_zeroes_a_row() {
  StateCache c(two_layers(), 2);
  CHECK_EQ(tag_of(c, 0), 0.0f);
  fill_row(c, 0, 4);
  fill_row(c, 1, 5);
  c.reset(0);
  CHECK_EQ(tags(c), (std::vector<float>{0, 5}));
}

void reorder_permutes_and_fans_out() {
  StateCache c(two_layers(), 4);
  for (int64_t r = 0; r < 4; ++r) fill_row(c, r, static_cast<float>(r + 1));
  const int64_t swap[4] = {1, 0, 3, 2};
  c.reorder(swap);
  CHECK_EQ(tags(c), (std::vector<float>{2, 1, 4, 3}));
  const int64_t fan_out[4] = {2, 2, 2, 0};  // row 2 (tag 4) to three rows, row 0 (tag 2) to row 3
  c.reorder(fan_out);
  CHECK_EQ(tags(c), (std::vector<float>{4, 4, 4, 2}));
  // the rows are copies, not aliases: writing one leaves the others
  fill_row(c, 1, 9);
  CHECK_EQ(tags(c), (std::vector<float>{4, 9, 4, 2}));
  const int64_t identity[4] = {0, 1, 2, 3};
  c.reorder(identity);
  CHECK_EQ(tags(c), (std::vector<float>{4, 9, 4, 2}));
  const int64_t bad[4] = {0, 1, 4, 3};
  CHECK_THROWS(c.reorder(bad), ValueError);
  CHECK_EQ(tags(c), (std::vector<float>{4, 9, 4, 2}));  // a refused reorder changes nothing
}

void copy_row_copies_and_keeps_rows_apart() {
  StateCache c(two_layers(), 3);
  for (int64_t r = 0; r < 3; ++r) fill_row(c, r, static_cast<float>(r + 1));
  c.copy_row(0, 2);
  CHECK_EQ(tags(c), (std::vector<float>{1, 2, 1}));
  fill_row(c, 2, 7);
  CHECK_EQ(tags(c), (std::vector<float>{1, 2, 7}));
  CHECK_THROWS(c.copy_row(0, 3), ValueError);
  CHECK_THROWS(c.copy_row(-1, 0), ValueError);
}

void snapshot_and_restore() {
  StateCache c(two_layers(), 2, 2);
  const int64_t row_bytes = c.row_floats() * int64_t{sizeof(float)};
  CHECK_EQ(c.held_bytes(), 2 * row_bytes);  // a snapshot slot takes memory at its first write
  fill_row(c, 0, 3);
  c.snapshot(0, 1);
  CHECK_EQ(c.held_bytes(), 3 * row_bytes);
  CHECK_EQ(c.bytes(), 4 * row_bytes);
  fill_row(c, 0, 6);  // the row moves on (a draft token that will be rejected)
  CHECK_EQ(tag_of(c, 0), 6.0f);
  c.restore(1, 0);
  CHECK_EQ(tag_of(c, 0), 3.0f);
  c.restore(1, 1);  // a prefix-cache snapshot starts another row
  CHECK_EQ(tags(c), (std::vector<float>{3, 3}));
  // a reorder moves rows, not snapshots
  fill_row(c, 1, 8);
  const int64_t swap[2] = {1, 0};
  c.reorder(swap);
  CHECK_EQ(tags(c), (std::vector<float>{8, 3}));
  c.restore(1, 0);
  CHECK_EQ(tags(c), (std::vector<float>{3, 3}));
  c.snapshot(1, 1);  // a slot written again keeps its memory
  CHECK_EQ(c.held_bytes(), 3 * row_bytes);
  CHECK_THROWS(c.restore(0, 0), ValueError);  // never taken
  CHECK_THROWS(c.snapshot(0, 2), ValueError);
  CHECK_THROWS(c.restore(-1, 0), ValueError);
  StateCache none(two_layers(), 1);
  CHECK_THROWS(none.snapshot(0, 0), ValueError);
}

// Per-token checkpoints: each layer copies its own part into a slot during a forward pass;
// with every layer written the slot restores the whole row as a snapshot would.
void snapshot_layer_copies_one_layer() {
  StateCache c(two_layers(), 2, 2);
  fill_row(c, 0, 3);
  c.snapshot_layer(0, 0, 1);  // layer 0 now, layer 1 after the row moves on
  fill_row(c, 0, 4);
  c.snapshot_layer(1, 0, 1);
  c.restore(1, 1);
  CHECK_EQ(tag_of(c, 1), -1.0f);  // layer 0 from tag 3, layer 1 from tag 4
  CHECK_EQ(c.conv(0, 1)[0], 3000.0f);
  CHECK_EQ(c.recurrent(0, 1)[0], 3500.0f);
  CHECK_EQ(c.conv(1, 1)[0], 4000.0f);
  c.snapshot_layer(0, 0, 1);
  c.restore(1, 1);
  CHECK_EQ(tag_of(c, 1), 4.0f);
  CHECK_THROWS(c.snapshot_layer(2, 0, 0), ValueError);
  CHECK_THROWS(c.snapshot_layer(0, 0, 2), ValueError);
  CHECK_THROWS(c.snapshot_layer(0, 2, 0), ValueError);
}

// A hybrid model's KV cache: layers 0 and 2 recurrent, 1 attends. Its state moves with
// the rows: reorder, copy_row and a reset (length 0) reach it, a truncate that would step
// it back is refused, and the recurrent layers hold no keys or values.
void kv_cache_moves_the_state_with_its_rows() {
  const std::vector<RecurrentLayerShape> layers = {{6, 4, 2, 3, 2}, {}, {5, 3, 0, 0, 0}};
  kvgen::KVCache cache(3, 3, 16, 2, 4, {}, kvgen::KVType::Float32, layers);
  StateCache* state = cache.state();
  CHECK(state != nullptr);
  CHECK_EQ(state->rows(), int64_t{3});
  CHECK_EQ(cache.capacity(0), int64_t{0});
  CHECK_EQ(cache.capacity(1), int64_t{16});
  CHECK_EQ(cache.capacity(2), int64_t{0});
  const int64_t kv_bytes = kvgen::KVCache::bytes_for(1, 3, 16, 2, 4);  // the one attending layer's
  CHECK_EQ(cache.bytes(), kv_bytes + state->bytes());
  CHECK_EQ(kvgen::KVCache::bytes_for(3, 3, 16, 2, 4, {}, kvgen::KVType::Float32, layers), cache.bytes());
  for (int64_t r = 0; r < 3; ++r) {
    fill_row(*state, r, static_cast<float>(r + 1));
    cache.set_length(r, 5 + r);
  }
  const int64_t parents[3] = {2, 2, 0};
  cache.reorder(parents);
  CHECK_EQ(tags(*state), (std::vector<float>{3, 3, 1}));
  CHECK_EQ(cache.length(1), int64_t{7});
  cache.copy_row(2, 0);
  CHECK_EQ(tags(*state), (std::vector<float>{1, 3, 1}));
  CHECK_THROWS(cache.truncate(1, 3), ValueError);  // a state of 7 positions cannot step back to 3
  CHECK_EQ(tags(*state), (std::vector<float>{1, 3, 1}));
  cache.truncate(1, 7);  // to its own length: nothing to undo
  CHECK_EQ(tags(*state), (std::vector<float>{1, 3, 1}));
  cache.truncate(1, 0);  // a new sequence: the initial state
  CHECK_EQ(tags(*state), (std::vector<float>{1, 0, 1}));
  cache.set_length(2, 0);
  CHECK_EQ(tags(*state), (std::vector<float>{1, 0, 0}));
  // no recurrent layer: no state; shapes that do not match the layers are refused
  CHECK(kvgen::KVCache(2, 1, 8, 1, 2).state() == nullptr);
  CHECK_THROWS(kvgen::KVCache(2, 1, 8, 1, 2, {}, kvgen::KVType::Float32, layers), ValueError);
}

// A hybrid model's cache with snapshots: snapshot keeps a row's state, resume rolls the
// row's positions back and restores a snapshot in one operation (the prefix cache and
// speculative rollback), and a bad row, slot or length changes nothing. The slot cache
// passes them through with its slot checks.
void kv_cache_resumes_from_a_snapshot() {
  const std::vector<RecurrentLayerShape> layers = {{6, 4, 2, 3, 2}, {}, {5, 3, 0, 0, 0}};
  kvgen::KVCache cache(3, 2, 16, 2, 4, {}, kvgen::KVType::Float32, layers, 3);
  StateCache* state = cache.state();
  CHECK_EQ(state->snapshots(), int64_t{3});
  CHECK_EQ(kvgen::KVCache::bytes_for(3, 2, 16, 2, 4, {}, kvgen::KVType::Float32, layers, 3), cache.bytes());
  CHECK_EQ(cache.bytes() - kvgen::KVCache::bytes_for(3, 2, 16, 2, 4, {}, kvgen::KVType::Float32, layers),
           3 * state->row_floats() * int64_t{sizeof(float)});
  fill_row(*state, 0, 1);
  cache.set_length(0, 8);
  cache.snapshot(0, 2);  // the state of row 0's first 8 positions
  fill_row(*state, 0, 4);
  cache.set_length(0, 11);
  CHECK_THROWS(cache.resume(0, 12, 2), ValueError);  // beyond the row's length
  CHECK_THROWS(cache.resume(0, 8, 1), ValueError);   // never taken
  CHECK_THROWS(cache.resume(0, 8, 3), ValueError);   // no such slot
  CHECK_THROWS(cache.resume(2, 8, 2), ValueError);   // no such row
  CHECK_THROWS(cache.snapshot(0, -1), ValueError);
  CHECK_THROWS(cache.snapshot(5, 0), ValueError);
  CHECK_EQ(tags(*state), (std::vector<float>{4, 0}));  // the refusals changed nothing
  CHECK_EQ(cache.length(0), int64_t{11});
  cache.resume(0, 8, 2);
  CHECK_EQ(cache.length(0), int64_t{8});
  CHECK_EQ(tags(*state), (std::vector<float>{1, 0}));
  // another row resumes from the same snapshot (a cached prefix starts another sequence)
  cache.set_length(1, 9);
  cache.resume(1, 8, 2);
  CHECK_EQ(tags(*state), (std::vector<float>{1, 1}));
  CHECK_EQ(cache.length(1), int64_t{8});
  // a model without a recurrent state has nothing to snapshot
  kvgen::KVCache plain(2, 1, 8, 1, 2);
  plain.set_length(0, 4);
  CHECK_THROWS(plain.snapshot(0, 0), ValueError);
  CHECK_THROWS(plain.resume(0, 2, 0), ValueError);
  CHECK_EQ(plain.length(0), int64_t{4});

  kvgen::SlotCache slots(3, 2, 16, 2, 4, 10, {}, 0, kvgen::KVType::Float32, layers, 2);
  CHECK_EQ(slots.snapshots(), int64_t{2});
  fill_row(*slots.cache().state(), 1, 7);
  slots.cache().set_length(1, 5);
  slots.snapshot(1, 0);
  fill_row(*slots.cache().state(), 1, 8);
  slots.cache().set_length(1, 6);
  CHECK_THROWS(slots.snapshot(2, 0), ValueError);
  CHECK_THROWS(slots.resume(-1, 5, 0), ValueError);
  slots.resume(1, 5, 0);
  CHECK_EQ(slots.length(1), int64_t{5});
  CHECK_EQ(tags(*slots.cache().state()), (std::vector<float>{0, 7}));
  CHECK_EQ(kvgen::SlotCache(3, 1, 8, 2, 4, 10).snapshots(), int64_t{0});
}

// The error's text, or "" when `make` does not throw ValueError.
template <class F>
std::string value_error(F make) {
  try {
    make();
  } catch (const ValueError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

void hostile_sizes_are_refused_before_allocating() {
  auto with = [](RecurrentLayerShape s) { return std::vector<RecurrentLayerShape>{s}; };
  CHECK(contains(value_error([&] { StateCache c(with({-1, 4, 0, 0, 0}), 1); }), "conv_channels = -1"));
  CHECK(contains(value_error([&] { StateCache c(with({8, 0, 0, 0, 0}), 1); }), "conv_kernel = 0"));
  CHECK(contains(value_error([&] { StateCache c(with({8, 4, 5000, 1, 1}), 1); }), "heads = 5000"));
  CHECK(contains(value_error([&] { StateCache c(with({8, 4, 1, int64_t{1} << 40, 1}), 1); }), "key_dim"));
  CHECK(contains(value_error([&] { StateCache c(with({8, 4, 1, 1, 1}), -2); }), "rows = -2"));
  CHECK(contains(value_error([&] { StateCache c(with({8, 4, 1, 1, 1}), 1, int64_t{1} << 20); }), "snapshots"));
  // each size within its limit, the total far above: 4096 heads of 2^20 x 2^20
  const std::string total = value_error([&] { StateCache c(with({8, 4, 4096, 1 << 20, 1 << 20}), 1); });
  CHECK(contains(total, "overflows") || contains(total, "above kvgen's limit"));
  // 64 layers of 64 heads of 1024 x 1024 floats: 16 GiB a row, 256 GiB for 16 rows > kMaxBytes
  std::vector<RecurrentLayerShape> big(64, {8, 4, 64, 1024, 1024});
  CHECK(contains(value_error([&] { StateCache::bytes_for(big, 16); }), "above kvgen's limit"));
  CHECK_EQ(StateCache::bytes_for(big, 1), int64_t{64} * (8 * 3 + 64 * 1024 * 1024) * 4);
  // empty layers (a layer that keeps nothing) and zero rows are fine
  StateCache empty(with({0, 0, 0, 0, 0}), 0);
  CHECK_EQ(empty.bytes(), int64_t{0});
}

}  // namespace

int main() {
  return kvgen::test::run_all({
      TEST_CASE(sizes_follow_the_layer_shapes),
      TEST_CASE(state_starts_at_zero_and_reset_zeroes_a_row),
      TEST_CASE(reorder_permutes_and_fans_out),
      TEST_CASE(copy_row_copies_and_keeps_rows_apart),
      TEST_CASE(snapshot_and_restore),
      TEST_CASE(snapshot_layer_copies_one_layer),
      TEST_CASE(kv_cache_moves_the_state_with_its_rows),
      TEST_CASE(kv_cache_resumes_from_a_snapshot),
      TEST_CASE(hostile_sizes_are_refused_before_allocating),
  });
}
