// Fork-join pool: a generation counter starts a section, workers join it through one
// atomic word that the caller closes when it runs out of items, and a counter of the
// joined workers that finished ends it; waits spin for a bounded time, then use atomic
// wait (a futex on Linux).
#include "kvgen/model/thread_pool.h"

#include <pthread.h>
#include <sched.h>

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
#include "kvgen/model/kernels.h"

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

// In a child of fork() only the forking thread exists: the pool's workers are gone, and
// a section would wait for them forever. The child leaves the parent's pool alone (never
// destroyed: joining threads that do not exist would hang) and makes a new one on first
// use; the mutex is made anew too, as another parent thread may have held it.
void forget_pool_in_child() {
  new (&pool_mutex) std::mutex;
  new std::shared_ptr<ThreadPool>(std::move(pool));  // leaked on purpose
}

void forget_pool_in_children() {
  static const int registered = pthread_atfork(nullptr, nullptr, forget_pool_in_child);
  (void)registered;
}

}  // namespace

ThreadPool::ThreadPool(int threads) : threads_(threads) {
  if (threads < 1 || threads > 1024)
    throw ValueError("number of threads = " + std::to_string(threads) + " must be in [1, 1024]");
  for (int t = 1; t < threads; ++t) workers_.emplace_back([this, t] { worker(t); });
}

ThreadPool::~ThreadPool() {
  stopping_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void ThreadPool::take_items(Section& s, int t) {
  try {
    for (int64_t i = s.next.fetch_add(1, std::memory_order_relaxed); i < s.items;
         i = s.next.fetch_add(1, std::memory_order_relaxed))
      s.call(s.context, i, t);
  } catch (...) {
    s.next.store(s.items, std::memory_order_relaxed);  // hand out nothing more
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (!error_) error_ = std::current_exception();
  }
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
  uint32_t seen = 0;
  for (;;) {
    if (!spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; }))
      generation_.wait(seen, std::memory_order_acquire);
    const uint32_t now = generation_.load(std::memory_order_acquire);
    if (now == seen) continue;  // spurious wake-up
    seen = now;
    if (stopping_.load()) return;
    if (!join(now)) continue;
    take_items(*section_, t);
    finished_.fetch_add(1, std::memory_order_acq_rel);
    finished_.notify_one();
  }
}

void ThreadPool::run(Section& s) {
  std::lock_guard<std::mutex> lock(section_mutex_);
  error_ = nullptr;
  if (threads_ == 1 || s.items <= 1) {
    take_items(s, 0);
  } else {
    section_ = &s;
    finished_.store(0, std::memory_order_relaxed);
    const uint32_t generation = generation_.load(std::memory_order_relaxed) + 1;  // only run() moves it
    joins_.store(uint64_t{generation} << 32, std::memory_order_release);
    generation_.store(generation, std::memory_order_release);
    generation_.notify_all();
    take_items(s, 0);
    // Every item is handed out: close the section to workers that have not joined yet (they
    // are asleep or their core is taken: waiting for them would cost the section their
    // wake-up), and wait for those that did to finish the items they took.
    const int32_t joined = static_cast<int32_t>(joins_.fetch_or(kClosed, std::memory_order_acq_rel) & (kClosed - 1));
    const auto all_done = [&] { return finished_.load(std::memory_order_acquire) == joined; };
    while (!spin_until(all_done)) {
      const int32_t done = finished_.load(std::memory_order_acquire);
      if (done != joined) finished_.wait(done, std::memory_order_acquire);
    }
    section_ = nullptr;
  }
  if (error_) std::rethrow_exception(error_);
}

int default_compute_threads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

std::shared_ptr<ThreadPool> compute_pool() {
  std::lock_guard<std::mutex> lock(pool_mutex);
  if (!pool) {
    forget_pool_in_children();
    kernels::set_blas_threads(1);
    pool = std::make_shared<ThreadPool>(default_compute_threads());
  }
  return pool;
}

void set_compute_threads(int n) {
  if (n < 1 || n > 1024) throw ValueError("number of threads = " + std::to_string(n) + " must be in [1, 1024]");
  std::lock_guard<std::mutex> lock(pool_mutex);
  kernels::set_blas_threads(1);
  forget_pool_in_children();
  if (pool && pool->size() == n) return;
  pool = std::make_shared<ThreadPool>(n);  // the old pool's workers end with its last holder
}

int compute_threads() { return compute_pool()->size(); }

}  // namespace kvgen
