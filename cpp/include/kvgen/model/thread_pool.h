// The process's compute threads: a persistent pool that runs one parallel section at a
// time (fork-join), sized by kvgen.set_num_threads. A section is a list of items that
// the threads take one at a time, so a thread the OS has descheduled holds up at most
// the item it took. Workers spin briefly between sections (a decode step runs about a
// hundred of them, microseconds apart), then sleep on a futex. The caller never waits for
// a worker to arrive: a worker joins a section only while it still has items to hand out,
// so a worker that wakes late (a futex wake-up, a core another process holds) costs the
// section nothing, and the caller waits only for the workers that joined, each finishing
// the item it took: on an oversubscribed machine the pool degrades towards one thread's
// speed instead of collapsing (a pool that waits for every thread at every section does).
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
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

  // Runs item(i, t) for every i in [0, n), each once, on the pool's threads (t in
  // [0, size()) names the thread running it, for per-thread scratch; 0 is the caller).
  // Returns when all are done. One section at a time: concurrent callers take turns. The
  // first exception an item throws is rethrown here after the section. An item must not
  // start a section itself. Allocates nothing.
  template <class Item>
  void for_each(int64_t n, Item&& item) {
    Section section;
    section.items = n;
    section.context = const_cast<void*>(static_cast<const void*>(&item));
    section.call = [](void* f, int64_t i, int t) { (*static_cast<std::remove_reference_t<Item>*>(f))(i, t); };
    run(section);
  }

 private:
  struct Section {
    int64_t items = 0;
    void* context = nullptr;
    void (*call)(void* context, int64_t item, int t) = nullptr;
    std::atomic<int64_t> next{0};  // the next item to hand out
  };
  void run(Section& section);
  void take_items(Section& section, int t);
  void worker(int t);
  bool join(uint32_t generation);

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex section_mutex_;             // one section at a time
  Section* section_ = nullptr;           // the current section (set before generation_ moves)
  std::atomic<uint32_t> generation_{0};  // bumped to start a section (workers wait on it)
  // Who may join the current section: (its generation << 32) | workers joined, kClosed set
  // once the caller has handed out every item (a worker that comes later leaves it alone).
  std::atomic<uint64_t> joins_{0};
  std::atomic<int32_t> finished_{0};     // joined workers done with the current section
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

}  // namespace kvgen
