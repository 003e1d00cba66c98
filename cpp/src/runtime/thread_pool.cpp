// Fork-join pool: a generation counter starts a section, workers join it through one
// atomic word that the caller closes when it runs out of items, and a counter of the
// joined workers that finished ends it; waits spin for a bounded time, then use atomic
// wait (a futex on Linux). Items are handed out from one span per participant (front:
// its owner, back: thieves), each span one atomic word on a cache line of its own.
#include "kvgen/runtime/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <new>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KVGEN_PAUSE() _mm_pause()
#else
#define KVGEN_PAUSE() ((void)0)
#endif

#include "kvgen/errors.h"
#include "kvgen/ops/layer_ops.h"
#include "kvgen/platform.h"
#include "kvgen/runtime/denormals.h"

namespace kvgen {
namespace {

// How long a waiting thread spins before it sleeps: long enough to bridge the gaps
// between the sections of one decode step (a few microseconds of serial work) and the
// last item of a section, short enough that an idle or descheduled pool gives its core
// back quickly.
constexpr auto kSpin = std::chrono::microseconds(50);

// Spins until `done()` or kSpin has passed; true if done.
template <class Done>
bool spin_until(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 1;; ++i) {
    if (done()) return true;
    KVGEN_PAUSE();
    if ((i & 63) == 0 && std::chrono::steady_clock::now() > deadline) return done();
  }
}

std::mutex pool_mutex;
std::shared_ptr<ThreadPool> pool;

// ---- the profile ----
std::atomic<bool> profiling{false};
std::mutex profile_mutex;
PoolProfile profile;

int64_t steady_ns(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

int64_t ns_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
}

// In a child of fork() only the forking thread exists: the pool's workers are gone, and
// a section would wait for them forever. The child leaves the parent's pool alone (never
// destroyed: joining threads that do not exist would hang) and makes a new one on first
// use; the mutex is made anew too, as another parent thread may have held it.
void forget_pool_in_child() {
  new (&pool_mutex) std::mutex;
  new std::shared_ptr<ThreadPool>(std::move(pool));  // leaked on purpose
}

void forget_pool_in_children() {
  static const bool registered = (platform::at_fork_child(forget_pool_in_child), true);
  (void)registered;
}

}  // namespace

ThreadPool::ThreadPool(int threads) : threads_(threads) {
  if (threads < 1 || threads > 1024)
    throw ValueError("number of threads = " + std::to_string(threads) + " must be in [1, 1024]");
  records_.resize(static_cast<size_t>(threads));
  spans_ = std::vector<Span>(static_cast<size_t>(threads));
  for (int t = 1; t < threads; ++t) workers_.emplace_back([this, t] { worker(t); });
}

ThreadPool::~ThreadPool() {
  stopping_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();
  for (std::thread& w : workers_) w.join();
}

namespace {

// A span's items [front, back) in one word: front in the low 32 bits, back in the high.
uint64_t span_word(uint64_t front, uint64_t back) { return (back << 32) | front; }

// The next item from the front of `span` (its owner's side); false once it is empty.
bool take_front(std::atomic<uint64_t>& span, int64_t& item) {
  uint64_t r = span.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t front = r & 0xffffffffu, back = r >> 32;
    if (front >= back) return false;
    if (span.compare_exchange_weak(r, r + 1, std::memory_order_relaxed)) {
      item = static_cast<int64_t>(front);
      return true;
    }
  }
}

// A thief's run [lo, hi) of `span`, at most kMaxSteal items (a thief descheduled in the
// middle of its run holds up no more than that): while the owner has not started, the next
// items from the front (a late thread's span is walked in order, as its owner would); once
// it has, half of what is left from the back. False once the span is empty. The thief
// walks its run in order.
constexpr uint64_t kMaxSteal = 8;

bool steal(std::atomic<uint64_t>& span, bool owner_started, int64_t& lo, int64_t& hi) {
  uint64_t r = span.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t front = r & 0xffffffffu, back = r >> 32;
    if (front >= back) return false;
    const uint64_t left = back - front;
    const uint64_t run = std::min(kMaxSteal, owner_started ? (left + 1) / 2 : left);
    const uint64_t next = owner_started ? span_word(front, back - run) : span_word(front + run, back);
    if (span.compare_exchange_weak(r, next, std::memory_order_relaxed)) {
      lo = static_cast<int64_t>(owner_started ? back - run : front);
      hi = lo + static_cast<int64_t>(run);
      return true;
    }
  }
}

}  // namespace

void ThreadPool::hand_out(int64_t n) {
  const int64_t parts = threads_;
  for (int64_t p = 0; p < parts; ++p) {
    Span& span = spans_[static_cast<size_t>(p)];
    span.started.store(false, std::memory_order_relaxed);
    span.range.store(span_word(static_cast<uint64_t>(n * p / parts), static_cast<uint64_t>(n * (p + 1) / parts)),
                     std::memory_order_relaxed);
  }
}

int64_t ThreadPool::take_items(Section& s, int t) {
  int64_t taken = 0;
  try {
    if (threads_ == 1 || s.items <= 1) {  // the caller alone, in order
      for (int64_t i = 0; i < s.items; ++i, ++taken) s.call(s.context, i, t);
      return taken;
    }
    // Its own span first, from the front: consecutive items read consecutive weights, which
    // the hardware prefetcher streams (threads that take every other item each run at about
    // half speed, measured); then runs from the back of the others' spans.
    int64_t item = 0, hi = 0;
    Span& own = spans_[static_cast<size_t>(t)];
    own.started.store(true, std::memory_order_relaxed);
    while (take_front(own.range, item)) {
      s.call(s.context, item, t);
      ++taken;
    }
    for (int k = 1; k < threads_; ++k) {
      Span& other = spans_[static_cast<size_t>((t + k) % threads_)];
      while (steal(other.range, other.started.load(std::memory_order_relaxed), item, hi))
        for (; item < hi; ++item, ++taken) s.call(s.context, item, t);
    }
  } catch (...) {
    for (Span& span : spans_) span.range.store(0, std::memory_order_relaxed);  // hand out nothing more
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (!error_) error_ = std::current_exception();
  }
  return taken;
}

// Set in joins_ when the current section takes no more workers.
constexpr uint64_t kClosed = uint64_t{1} << 31;

bool ThreadPool::join(uint32_t generation) {
  uint64_t j = joins_.load(std::memory_order_acquire);
  while ((j >> 32) == generation && (j & kClosed) == 0)
    if (joins_.compare_exchange_weak(j, j + 1, std::memory_order_acq_rel, std::memory_order_acquire)) return true;
  return false;  // that section is closed (maybe gone): wait for the next one
}

void ThreadPool::worker(int t) {
  const FlushDenormals flushed;  // for the worker's lifetime (denormals.h)
  uint32_t seen = 0;
  for (;;) {
    if (!spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; })) {
      // counted before it sleeps (the fences pair with run's: either run sees the count, or
      // the wait sees the new generation and does not sleep)
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      generation_.wait(seen, std::memory_order_acquire);
    }
    const uint32_t now = generation_.load(std::memory_order_acquire);
    if (now == seen) continue;  // spurious wake-up
    seen = now;
    if (stopping_.load()) return;
    if (!join(now)) continue;
    Section& s = *section_;
    if (s.started != std::chrono::steady_clock::time_point{}) {  // profiling this section
      WorkerRecord& r = records_[static_cast<size_t>(t)];
      const auto joined = std::chrono::steady_clock::now();
      r.join_ns = std::max<int64_t>(1, ns_between(s.started, joined));
      r.items = take_items(s, t);
      r.busy_ns = ns_between(joined, std::chrono::steady_clock::now());
    } else {
      take_items(s, t);
    }
    finished_.fetch_add(1, std::memory_order_acq_rel);
    finished_.notify_one();
  }
}

void ThreadPool::run(Section& s) {
  if (s.items < 0 || s.items > int64_t{0xffffffff})
    throw ValueError("a parallel section of " + std::to_string(s.items) + " items (at most 2^32 - 1)");
  std::lock_guard<std::mutex> lock(section_mutex_);
  const FlushDenormals flushed;  // the caller's own mode back at the end (denormals.h)
  error_ = nullptr;
  const bool profiled = profiling.load(std::memory_order_relaxed);
  if (profiled) s.started = std::chrono::steady_clock::now();
  int64_t caller_items = 0, wait_ns = 0;
  int32_t joined = 0;
  if (threads_ == 1 || s.items <= 1) {
    caller_items = take_items(s, 0);
  } else {
    section_ = &s;
    hand_out(s.items);
    finished_.store(0, std::memory_order_relaxed);
    const uint32_t generation = generation_.load(std::memory_order_relaxed) + 1;  // only run() moves it
    joins_.store(uint64_t{generation} << 32, std::memory_order_release);
    generation_.store(generation, std::memory_order_seq_cst);
    // Wake the workers only if one went to sleep since the last wake-up: a futex wake is a
    // system call on this thread's path (under load, where workers sleep and wake late,
    // libstdc++'s own check made one per section, most of them waking nobody)
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_relaxed) > 0 && sleepers_.exchange(0, std::memory_order_seq_cst) > 0)
      generation_.notify_all();
    caller_items = take_items(s, 0);
    // Every item is handed out: close the section to workers that have not joined yet (they
    // are asleep or their core is taken: waiting for them would cost the section their
    // wake-up), and wait for those that did to finish the items they took.
    joined = static_cast<int32_t>(joins_.fetch_or(kClosed, std::memory_order_acq_rel) & (kClosed - 1));
    const auto waiting = profiled ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    const auto all_done = [&] { return finished_.load(std::memory_order_acquire) == joined; };
    while (!spin_until(all_done)) {
      const int32_t done = finished_.load(std::memory_order_acquire);
      if (done != joined) finished_.wait(done, std::memory_order_acquire);
    }
    if (profiled) wait_ns = ns_between(waiting, std::chrono::steady_clock::now());
    section_ = nullptr;
  }
  if (profiled) record(s, caller_items, joined, wait_ns);
  if (error_) std::rethrow_exception(error_);
}

void ThreadPool::record(const Section& s, int64_t caller_items, int32_t joined, int64_t wait_ns) {
  const auto end = std::chrono::steady_clock::now();
  SectionEvent e{.label = s.label, .tag = s.tag, .items = s.items, .start_ns = steady_ns(s.started),
                 .end_ns = steady_ns(end), .wait_ns = wait_ns, .first_join_ns = -1,
                 .caller_items = caller_items, .worker_items = 0, .threads = threads_, .joined = joined};
  for (WorkerRecord& r : records_) {
    if (r.join_ns == 0 && r.items == 0) continue;
    e.worker_items += r.items;
    if (e.first_join_ns < 0 || r.join_ns < e.first_join_ns) e.first_join_ns = r.join_ns;
    r = WorkerRecord{};
  }
  std::lock_guard<std::mutex> lock(profile_mutex);
  if (profiling.load(std::memory_order_relaxed)) profile.sections.push_back(e);
}

PoolProfile pool_profile(bool on) {
  std::lock_guard<std::mutex> lock(profile_mutex);
  PoolProfile out = std::move(profile);
  profile = PoolProfile{};
  if (on) {
    profile.sections.reserve(1 << 20);
    profile.forwards.reserve(1 << 16);
  }
  profiling.store(on, std::memory_order_relaxed);
  return out;
}

ForwardScope::ForwardScope() : on_(profiling.load(std::memory_order_relaxed)) {
  if (on_) start_ = std::chrono::steady_clock::now();
}

ForwardScope::~ForwardScope() {
  if (!on_) return;
  const ForwardEvent e{steady_ns(start_), steady_ns(std::chrono::steady_clock::now())};
  std::lock_guard<std::mutex> lock(profile_mutex);
  if (profiling.load(std::memory_order_relaxed)) profile.forwards.push_back(e);
}

int default_compute_threads() {
  return platform::available_cpus();
}

std::shared_ptr<ThreadPool> compute_pool() {
  std::lock_guard<std::mutex> lock(pool_mutex);
  if (!pool) {
    forget_pool_in_children();
    ops::set_blas_threads(1);
    pool = std::make_shared<ThreadPool>(default_compute_threads());
  }
  return pool;
}

void set_compute_threads(int n) {
  if (n < 1 || n > 1024) throw ValueError("number of threads = " + std::to_string(n) + " must be in [1, 1024]");
  std::lock_guard<std::mutex> lock(pool_mutex);
  ops::set_blas_threads(1);
  forget_pool_in_children();
  if (pool && pool->size() == n) return;
  pool = std::make_shared<ThreadPool>(n);  // the old pool's workers end with its last holder
}

int compute_threads() { return compute_pool()->size(); }

}  // namespace kvgen
