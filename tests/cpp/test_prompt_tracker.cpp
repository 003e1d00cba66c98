// PromptTracker on hand-made histories: which calls continue the calling thread's
// sequence (keeping its prompt length) and which start a new one.
#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

#include "check.h"
#include "kvgen/sampling/prompt_tracker.h"

using namespace kvgen;

namespace {

int64_t prompt_of(PromptTracker& t, const std::vector<int64_t>& ids, int64_t rows) {
  return t.prompt_length(ids.data(), rows, static_cast<int64_t>(ids.size()) / rows);
}

void a_sequence_keeps_its_prompt_while_it_grows() {
  PromptTracker t;
  CHECK(!t.current().has_value());
  CHECK_EQ(prompt_of(t, {1, 2, 3}, 1), int64_t{3});     // first call: all of it is prompt
  CHECK_EQ(prompt_of(t, {1, 2, 3, 4}, 1), int64_t{3});  // one token longer: continues
  CHECK_EQ(prompt_of(t, {1, 2, 3, 4, 5}, 1), int64_t{3});
  CHECK_EQ(t.current().value_or(-1), int64_t{3});
  CHECK_EQ(prompt_of(t, {1, 2, 3, 4, 5, 6, 7}, 1), int64_t{7});  // two tokens longer: a new one
  CHECK_EQ(prompt_of(t, {9, 9, 9, 9, 9, 9, 9, 9}, 1), int64_t{8});  // other tokens: a new one
}

void reordered_rows_continue_and_other_shapes_restart() {
  PromptTracker t;
  CHECK_EQ(prompt_of(t, {1, 2, 3, 4}, 2), int64_t{2});  // rows [1, 2] and [3, 4]
  // beam search swapped the rows, then appended: each row's history is a row of the last call
  CHECK_EQ(prompt_of(t, {3, 4, 7, 1, 2, 8}, 2), int64_t{2});
  CHECK_EQ(prompt_of(t, {3, 4, 7, 5, 1, 2, 8, 5}, 2), int64_t{2});
  // assisted decoding calls again from a shorter length (no shorter than the prompt)
  CHECK_EQ(prompt_of(t, {3, 4, 7, 1, 2, 8}, 2), int64_t{2});
  CHECK_EQ(prompt_of(t, {3, 4, 7, 5, 6}, 1), int64_t{5});  // another row count: a new one
}

void reset_and_threads_have_their_own_sequences() {
  PromptTracker t;
  CHECK_EQ(prompt_of(t, {1, 2}, 1), int64_t{2});
  t.reset();
  CHECK(!t.current().has_value());
  CHECK_EQ(prompt_of(t, {1, 2, 3}, 1), int64_t{3});  // would continue, but was reset
  int64_t other = -1;
  std::thread([&] { other = prompt_of(t, {1, 2, 3, 4}, 1); }).join();
  CHECK_EQ(other, int64_t{4});  // a thread's first call starts its own sequence
  CHECK_EQ(prompt_of(t, {1, 2, 3, 4}, 1), int64_t{3});
}

}  // namespace

int main() {
  return kvgen::test::run_all({
      TEST_CASE(a_sequence_keeps_its_prompt_while_it_grows),
      TEST_CASE(reordered_rows_continue_and_other_shapes_restart),
      TEST_CASE(reset_and_threads_have_their_own_sequences),
  });
}
