// The compute pool: every item of a section runs exactly once, on a thread index within
// the pool; each thread walks its own span of items in order and steals short runs; an item's exception reaches the caller after the section; sections from
// several callers take turns; a pool that has gone idle (its workers asleep) wakes up.
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "check.h"
#include "kvgen/errors.h"
#include "kvgen/runtime/thread_pool.h"
#include "kvgen/platform.h"

#if defined(__linux__)
#include <sched.h>
#endif

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

// A worker asleep after an idle spell is woken for the next section and joins it: the
// caller's only item waits until the other item has run, which only a worker can take (the
// caller is busy in its own), after idle spells around the workers' spin time, over and
// over; a lost wake-up fails with a timeout instead of hanging.
void sleeping_workers_are_woken_for_the_next_section() {
  ThreadPool pool(2);
  std::atomic<bool> timed_out{false};
  for (int s = 0; s < 300 && !timed_out.load(); ++s) {
    std::this_thread::sleep_for(std::chrono::microseconds(s % 5 == 0 ? 2000 : 10 * (s % 7) * (s % 7)));
    std::atomic<bool> other_ran{false};
    pool.for_each(2, [&](int64_t i, int) {
      if (i == 1) {
        other_ran = true;
        return;
      }
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (!other_ran.load())
        if (std::chrono::steady_clock::now() > deadline) {
          timed_out = true;
          return;
        } else {
          std::this_thread::yield();
        }
    });
  }
  CHECK(!timed_out.load());
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

// A thread's items: maximal runs of consecutive, ascending items, of which only the first
// (its own span, from its start) may be longer than a thief's run of at most 8 (runs taken
// from the back of a span whose owner is at work).
void check_runs(const std::vector<int64_t>& taken, int64_t own_start) {
  for (size_t i = 0; i < taken.size();) {
    size_t j = i + 1;
    while (j < taken.size() && taken[j] == taken[j - 1] + 1) ++j;
    if (i == 0 && taken[0] == own_start) {
      i = j;
      continue;
    }
    CHECK(j - i <= 8);
    i = j;
  }
}

// Spins (yielding) until done() or 30 s have passed, which sets timed_out: a lost hand-off
// fails the test instead of hanging it.
template <class Done>
void wait_until(Done done, std::atomic<bool>& timed_out) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done() && !timed_out.load())
    if (std::chrono::steady_clock::now() > deadline) timed_out = true;
    else std::this_thread::yield();
}

// Holds a worker's item until the caller (thread 0) has begun its first, so that no worker
// can steal from the caller's span before the caller reaches it, however the threads are
// scheduled (under a sanitizer on two loaded cores the caller can start last).
void wait_for_the_caller(const std::atomic<bool>& caller_started, std::atomic<bool>& timed_out) {
  wait_until([&] { return caller_started.load(); }, timed_out);
}

// A thread walks its own contiguous span in order (consecutive weights for the prefetcher),
// and a thief takes runs of at most 8 items from the back of a busy thread's span, each run
// in order. The caller's first item blocks until every other item is done, so the worker
// must do its own half and steal all the rest of the caller's span.
void each_thread_walks_its_span_in_order_and_thieves_take_short_runs() {
  ThreadPool pool(2);
  const int64_t n = 1000;
  std::vector<std::vector<int64_t>> taken(2);
  std::atomic<int64_t> done{0};
  std::atomic<bool> timed_out{false}, caller_started{false};
  pool.for_each(n, [&](int64_t i, int t) {
    if (t == 0) caller_started = true;
    else wait_for_the_caller(caller_started, timed_out);
    taken[static_cast<size_t>(t)].push_back(i);
    if (i == 0) wait_until([&] { return done.load() >= n - 1; }, timed_out);
    done.fetch_add(1);
  });
  CHECK(!timed_out.load());
  CHECK_EQ(static_cast<int64_t>(taken[0].size()), int64_t{1});
  CHECK_EQ(static_cast<int64_t>(taken[1].size()), n - 1);
  CHECK_EQ(taken[1].front(), n / 2);  // its own span first
  check_runs(taken[1], n / 2);
  // and the caller starts on its own span, from the front
  for (int threads : {2, 3, 8}) {
    ThreadPool p(threads);
    std::vector<std::vector<int64_t>> by_thread(static_cast<size_t>(threads));
    std::atomic<bool> started{false};
    p.for_each(n, [&](int64_t i, int t) {
      if (t == 0) started = true;
      else wait_for_the_caller(started, timed_out);
      by_thread[static_cast<size_t>(t)].push_back(i);
    });
    CHECK(!timed_out.load());
    CHECK(!by_thread[0].empty() && by_thread[0].front() == 0);
    int64_t total = 0;
    for (const auto& items : by_thread) total += static_cast<int64_t>(items.size());
    CHECK_EQ(total, n);
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

// The default size is the platform layer's CPU count: on Linux the affinity mask (what
// taskset or a cgroup allows), elsewhere the processor count; never below 1.
void the_default_size_is_the_cpus_this_process_may_use() {
  const int cpus = kvgen::platform::available_cpus();
  CHECK(cpus >= 1);
  CHECK_EQ(kvgen::default_compute_threads(), cpus);
#if defined(__linux__)
  cpu_set_t set;
  CHECK_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  CHECK_EQ(cpus, CPU_COUNT(&set));
#else
  CHECK_EQ(cpus, static_cast<int>(std::thread::hardware_concurrency()));
#endif
}

// Subnormal floats are flushed inside a section, on every thread that takes items, and the
// caller's own mode is back after it (an item's exception included): a subnormal times one is
// zero inside, itself outside.
float times_one(float x) {
  volatile float one = 1.0f;  // kept from being folded at compile time
  return x * one;
}

void sections_flush_subnormals_and_give_the_caller_its_mode_back() {
#if defined(__x86_64__) || defined(__i386__)
  const float tiny = 1e-39f;  // below FLT_MIN: subnormal
  CHECK(times_one(tiny) != 0.0f);
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    std::atomic<int> kept{0};
    pool.for_each(64, [&](int64_t, int) {
      if (times_one(tiny) != 0.0f) kept.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(50));  // room for the workers to join
    });
    CHECK_EQ(kept.load(), 0);
    CHECK(times_one(tiny) != 0.0f);
    CHECK_THROWS(pool.for_each(4, [&](int64_t, int) { throw std::runtime_error("item"); }), std::runtime_error);
    CHECK(times_one(tiny) != 0.0f);
  }
#endif
}

}  // namespace

int main() {
  return kvgen::test::run_all({
      TEST_CASE(every_item_runs_once),
      TEST_CASE(an_exception_reaches_the_caller_and_the_pool_goes_on),
      TEST_CASE(callers_on_several_threads_take_turns),
      TEST_CASE(an_idle_pool_wakes_up),
      TEST_CASE(sleeping_workers_are_woken_for_the_next_section),
      TEST_CASE(late_workers_leave_a_finished_section_alone),
      TEST_CASE(each_thread_walks_its_span_in_order_and_thieves_take_short_runs),
      TEST_CASE(sizes_outside_the_limits_are_refused),
      TEST_CASE(the_default_size_is_the_cpus_this_process_may_use),
      TEST_CASE(sections_flush_subnormals_and_give_the_caller_its_mode_back),
  });
}
