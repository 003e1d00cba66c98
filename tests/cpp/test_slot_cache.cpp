// SlotCache's checks and row operations on a small cache (no model): range checks,
// duplicate slots, reorder within a range, row copies of cache and logits.
#include <cstdint>
#include <vector>

#include "check.h"
#include "kvgen/errors.h"
#include "kvgen/runtime/slot_cache.h"

using kvgen::RowTokens;
using kvgen::SlotCache;
using kvgen::ValueError;

namespace {

constexpr int64_t kLayers = 1, kSlots = 4, kContext = 3, kHeads = 1, kHeadDim = 2, kVocab = 5;

SlotCache small_cache() { return SlotCache(kLayers, kSlots, kContext, kHeads, kHeadDim, kVocab); }

// Row `slot` holds `length` positions whose keys are slot + 0.5 and its logits row slot.
void mark(SlotCache& c, int64_t slot, int64_t length) {
  for (int64_t p = 0; p < length * kHeadDim; ++p) c.cache().keys(0, slot, 0)[p] = static_cast<float>(slot) + 0.5f;
  for (int64_t v = 0; v < kVocab; ++v) c.logits()[slot * kVocab + v] = static_cast<float>(slot);
  c.cache().set_length(slot, length);
}

void sizes_are_checked() {
  CHECK_THROWS(SlotCache(kLayers, 0, kContext, kHeads, kHeadDim, kVocab), ValueError);
  CHECK_THROWS(SlotCache(kLayers, kSlots, 0, kHeads, kHeadDim, kVocab), ValueError);
  CHECK_THROWS(SlotCache(kLayers, int64_t{1} << 17, kContext, kHeads, kHeadDim, kVocab), ValueError);  // kMaxRows
  CHECK_THROWS(SlotCache(int64_t{1} << 40, kSlots, int64_t{1} << 40, kHeads, kHeadDim, kVocab), ValueError);
  SlotCache c = small_cache();
  CHECK_EQ(c.slots(), kSlots);
  CHECK_EQ(c.context(), kContext);
  CHECK_EQ(c.vocab(), kVocab);
  CHECK_EQ(c.bytes(), kLayers * kSlots * 2 * kContext * kHeads * kHeadDim * 4);
}

void chunks_name_each_slot_once_in_range() {
  SlotCache c = small_cache();
  const int64_t tokens[2] = {1, 2};
  c.check_chunks({{0, tokens, 2}, {3, tokens, 1}});  // fine
  CHECK_THROWS(c.check_chunks({{0, tokens, 1}, {0, tokens, 1}}), ValueError);
  CHECK_THROWS(c.check_chunks({{4, tokens, 1}}), ValueError);
  CHECK_THROWS(c.check_chunks({{-1, tokens, 1}}), ValueError);
  CHECK_THROWS(c.check_chunks({{1, tokens, 0}}), ValueError);
  // a refused list leaves no mark behind: the same slots pass afterwards
  CHECK_THROWS(c.check_chunks({{1, tokens, 1}, {2, tokens, 1}, {1, tokens, 1}}), ValueError);
  c.check_chunks({{1, tokens, 1}, {2, tokens, 1}});
}

void reset_and_length_check_the_slot() {
  SlotCache c = small_cache();
  mark(c, 2, 3);
  CHECK_EQ(c.length(2), 3);
  c.reset(2);
  CHECK_EQ(c.length(2), 0);
  CHECK_THROWS(c.reset(kSlots), ValueError);
  CHECK_THROWS(c.length(-1), ValueError);
}

void copy_row_copies_positions_and_logits() {
  SlotCache c = small_cache();
  mark(c, 1, 2);
  mark(c, 3, 1);
  c.copy_row(1, 3);
  CHECK_EQ(c.length(3), 2);
  CHECK_EQ(c.cache().keys(0, 3, 0)[3], 1.5f);
  CHECK_EQ(c.logits()[3 * kVocab + 4], 1.0f);
  CHECK_THROWS(c.copy_row(0, kSlots), ValueError);
  CHECK_THROWS(c.copy_row(-1, 0), ValueError);
}

void reorder_stays_within_its_range() {
  SlotCache c = small_cache();
  for (int64_t s = 0; s < kSlots; ++s) mark(c, s, s % 3 + 1);
  c.reorder(1, {1, 1, 0});  // slots 1..3 take 2, 2, 1; slot 0 is untouched
  CHECK_EQ(c.cache().keys(0, 0, 0)[0], 0.5f);
  CHECK_EQ(c.cache().keys(0, 1, 0)[0], 2.5f);
  CHECK_EQ(c.cache().keys(0, 2, 0)[0], 2.5f);
  CHECK_EQ(c.cache().keys(0, 3, 0)[0], 1.5f);
  CHECK_EQ(c.length(1), 3);
  CHECK_EQ(c.length(3), 2);
  CHECK_THROWS(c.reorder(2, {0, 1, 2}), ValueError);   // past the last slot
  CHECK_THROWS(c.reorder(-1, {0}), ValueError);
  CHECK_THROWS(c.reorder(0, {}), ValueError);
  CHECK_THROWS(c.reorder(0, {0, 2}), ValueError);      // a parent outside the range
}

void truncate_rolls_back_within_what_rings_keep() {
  SlotCache c = small_cache();
  mark(c, 1, 3);
  c.truncate(1, 1);  // positions 1 and 2 forgotten, nothing copied
  CHECK_EQ(c.length(1), 1);
  CHECK_EQ(c.cache().keys(0, 1, 0)[0], 1.5f);
  CHECK_THROWS(c.truncate(1, 2), ValueError);  // beyond the slot's length
  CHECK_THROWS(c.truncate(1, -1), ValueError);
  CHECK_THROWS(c.truncate(kSlots, 0), ValueError);
  // a sliding-window layer (window 4) in a long context keeps kRingSlack + 1 positions beyond
  // its window: rolling back more would leave its window with overwritten keys
  const int64_t context = 100, window = 4;
  SlotCache ring(2, 1, context, kHeads, kHeadDim, kVocab, {0, window});
  CHECK_EQ(ring.cache().max_rollback(), kvgen::KVCache::kRingSlack + 1);
  ring.cache().set_length(0, 80);
  ring.truncate(0, 80 - (kvgen::KVCache::kRingSlack + 1));
  ring.cache().set_length(0, 80);
  CHECK_THROWS(ring.truncate(0, 80 - (kvgen::KVCache::kRingSlack + 2)), ValueError);
  CHECK_EQ(ring.length(0), 80);
}

void verify_buffer_is_checked() {
  CHECK_THROWS(SlotCache(kLayers, kSlots, kContext, kHeads, kHeadDim, kVocab, {}, kContext + 1), ValueError);
  CHECK_THROWS(SlotCache(kLayers, kSlots, kContext, kHeads, kHeadDim, kVocab, {}, -1), ValueError);
  SlotCache c(kLayers, kSlots, kContext, kHeads, kHeadDim, kVocab, {}, 2);
  CHECK_EQ(c.verify_positions(), 2);
  CHECK_EQ(c.verify_width(), 0);
}

}  // namespace

int main() {
  return kvgen::test::run_all({
      TEST_CASE(sizes_are_checked),
      TEST_CASE(chunks_name_each_slot_once_in_range),
      TEST_CASE(reset_and_length_check_the_slot),
      TEST_CASE(copy_row_copies_positions_and_logits),
      TEST_CASE(reorder_stays_within_its_range),
      TEST_CASE(truncate_rolls_back_within_what_rings_keep),
      TEST_CASE(verify_buffer_is_checked),
  });
}
