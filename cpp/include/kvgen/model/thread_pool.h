// The process's compute threads: a persistent pool that runs one parallel section at a
// time (fork-join), sized by kvgen.set_num_threads. Workers spin briefly between
// sections (a decode step runs about a hundred of them, microseconds apart), then sleep
// on a futex, so a pool on a busy machine, or one left idle, gives its cores away
// instead of burning them (a pure spin barrier collapses when another process holds a
// core).
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <type_traits>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace kvgen {

class ThreadPool {
 public:
  // `threads` >= 1 participants: the calling thread plus threads - 1 workers.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return threads_; }

  // Runs task(t) for every t in [0, size()), t = 0 on the calling thread, and returns
  // when all have finished. One section at a time: concurrent callers take turns. The
  // first exception a task throws is rethrown here after all have finished. A task must
  // not call run() itself. Allocates nothing (the task is passed by reference).
  template <class Task>
  void run(Task&& task) {
    using T = std::remove_reference_t<Task>;
    run_erased(const_cast<void*>(static_cast<const void*>(&task)),
               [](void* f, int t) { (*static_cast<T*>(f))(t); });
  }

 private:
  using Call = void (*)(void* task, int t);
  void run_erased(void* task, Call call);
  void worker(int t);
  void finish_one();

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex section_;                   // one section at a time
  void* task_ = nullptr;  // the current section's task and how to call it
  Call call_ = nullptr;
  std::atomic<uint32_t> generation_{0};  // bumped to start a section (workers wait on it)
  std::atomic<int32_t> pending_{0};      // workers still running the current section
  std::atomic<bool> stopping_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

// The pool every model's products use (created on first use with the default size). A
// forward pass holds it for its duration, so resizing never pulls a pool from under a
// running section: the old one ends when its last holder lets go.
std::shared_ptr<ThreadPool> compute_pool();

// Resizes the compute pool (and keeps OpenBLAS at one thread: the pool splits the float
// products too, so the two never oversubscribe the cores). ValueError unless 1 <= n <= 1024.
void set_compute_threads(int n);
int compute_threads();

// The default size: the CPUs this process may run on (sched_getaffinity), at least 1.
int default_compute_threads();

// Splits [0, n) into `parts` near-equal contiguous ranges; part p is [first, last).
struct Range {
  int64_t first, last;
};
inline Range split_range(int64_t n, int parts, int p) {
  return {n * p / parts, n * (p + 1) / parts};
}

}  // namespace kvgen
