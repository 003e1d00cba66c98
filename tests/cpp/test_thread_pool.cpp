// The compute pool: every item of a section runs exactly once, on a thread index within
// the pool; an item's exception reaches the caller after the section; sections from
// several callers take turns; a pool that has gone idle (its workers asleep) wakes up.
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "check.h"
#include "kvgen/errors.h"
#include "kvgen/model/thread_pool.h"

using kvgen::ThreadPool;

namespace {

void every_item_runs_once() {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
      std::atomic<bool> bad_thread{false};
      pool.for_each(n, [&](int64_t i, int t) {
        seen[static_cast<size_t>(i)].fetch_add(1);
        if (t < 0 || t >= threads) bad_thread = true;
      });
      for (int64_t i = 0; i < n; ++i) CHECK_EQ(seen[static_cast<size_t>(i)].load(), 1);
      CHECK(!bad_thread.load());
    }
  }
}

void an_exception_reaches_the_caller_and_the_pool_goes_on() {
  ThreadPool pool(3);
  CHECK_THROWS(pool.for_each(100, [](int64_t i, int) {
    if (i == 37) throw kvgen::ValueError("item 37");
  }),
               kvgen::ValueError);
  std::atomic<int64_t> sum{0};
  pool.for_each(100, [&](int64_t i, int) { sum += i; });
  CHECK_EQ(sum.load(), int64_t{4950});
}

void callers_on_several_threads_take_turns() {
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int s = 0; s < 200; ++s) pool.for_each(10, [&](int64_t i, int) { sum += i; });
    });
  for (std::thread& t : callers) t.join();
  CHECK_EQ(sum.load(), int64_t{4 * 200 * 45});
}

void an_idle_pool_wakes_up() {
  ThreadPool pool(2);
  std::atomic<int> count{0};
  for (int s = 0; s < 3; ++s) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the workers go to sleep
    pool.for_each(64, [&](int64_t, int) { ++count; });
  }
  CHECK_EQ(count.load(), 3 * 64);
}

// Workers that wake after the caller has handed out every item must leave that section
// alone (it lives on the caller's stack and is gone soon after): many short sections, each
// with its own counters, some after a pause long enough for the workers to fall asleep.
void late_workers_leave_a_finished_section_alone() {
  ThreadPool pool(4);
  for (int s = 0; s < 3000; ++s) {
    if (s % 500 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const int64_t n = 2 + s % 3;
    std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
    pool.for_each(n, [&](int64_t i, int) { seen[static_cast<size_t>(i)].fetch_add(1); });
    for (int64_t i = 0; i < n; ++i) CHECK_EQ(seen[static_cast<size_t>(i)].load(), 1);
  }
}

void sizes_outside_the_limits_are_refused() {
  CHECK_THROWS(ThreadPool(0), kvgen::ValueError);
  CHECK_THROWS(kvgen::set_compute_threads(2000), kvgen::ValueError);
  kvgen::set_compute_threads(3);
  CHECK_EQ(kvgen::compute_threads(), 3);
  kvgen::set_compute_threads(1);
  CHECK_EQ(kvgen::compute_pool()->size(), 1);
}

}  // namespace

int main() {
  return kvgen::test::run_all({
      TEST_CASE(every_item_runs_once),
      TEST_CASE(an_exception_reaches_the_caller_and_the_pool_goes_on),
      TEST_CASE(callers_on_several_threads_take_turns),
      TEST_CASE(an_idle_pool_wakes_up),
      TEST_CASE(late_workers_leave_a_finished_section_alone),
      TEST_CASE(sizes_outside_the_limits_are_refused),
  });
}
