// The process's compute threads: a persistent pool that runs one parallel section at a
// time (fork-join), sized by kvgen.set_num_threads. A section is a list of items, split
// into one contiguous span per thread: each thread takes its own span's items in order
// (consecutive items read consecutive memory, which the hardware prefetcher streams; a
// thread taking every other item runs at about half speed), then takes runs of at most 8
// items from the spans of threads that are late (from the front of a span whose owner has
// not started, from the back of one whose owner is at work), so a thread the OS has
// descheduled holds up at most the run it took. Workers spin briefly between sections (a decode step runs about a
// hundred of them, microseconds apart), then sleep on a futex. The caller never waits for
// a worker to arrive: a worker joins a section only while it still has items to hand out,
// so a worker that wakes late (a futex wake-up, a core another process holds) costs the
// section nothing, and the caller waits only for the workers that joined, each finishing
// the item it took: on an oversubscribed machine the pool degrades towards one thread's
// speed instead of collapsing (a pool that waits for every thread at every section does).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
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
  // start a section itself. Allocates nothing. n < 2^32. `label` and `tag` (a string literal and a
  // number, e.g. the input width) name the section in the profile (pool_profile below).
  template <class Item>
  void for_each(int64_t n, Item&& item, const char* label = "section", int64_t tag = 0) {
    Section section;
    section.items = n;
    section.label = label;
    section.tag = tag;
    section.context = const_cast<void*>(static_cast<const void*>(&item));
    section.call = [](void* f, int64_t i, int t) { (*static_cast<std::remove_reference_t<Item>*>(f))(i, t); };
    run(section);
  }

 private:
  struct Section {
    int64_t items = 0;
    void* context = nullptr;
    void (*call)(void* context, int64_t item, int t) = nullptr;
    const char* label = nullptr;
    int64_t tag = 0;
    std::chrono::steady_clock::time_point started;  // set when profiling
  };
  // What a worker did in the current section, written by the worker before it reports
  // finished, read (and cleared) by the caller after: only when profiling.
  struct alignas(64) WorkerRecord {
    int64_t items = 0;
    int64_t join_ns = 0;  // from the section's start to the worker's join
    int64_t busy_ns = 0;  // the worker's time taking items
  };
  // One participant's share of a section's items, [front, back) packed in one word (see
  // take_items), on a cache line of its own.
  struct alignas(64) Span {
    std::atomic<uint64_t> range{0};
    std::atomic<bool> started{false};  // its owner has begun taking from it
  };
  void run(Section& section);
  void hand_out(int64_t items);
  void record(const Section& section, int64_t caller_items, int32_t joined, int64_t wait_ns);
  int64_t take_items(Section& section, int t);
  void worker(int t);
  bool join(uint32_t generation);

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex section_mutex_;             // one section at a time
  Section* section_ = nullptr;           // the current section (set before generation_ moves)
  std::atomic<uint32_t> generation_{0};  // bumped to start a section (workers wait on it)
  // Workers that went to sleep on generation_ since run() last woke them (run() clears it
  // and wakes them only when it is not 0).
  std::atomic<int32_t> sleepers_{0};
  // Who may join the current section: (its generation << 32) | workers joined, kClosed set
  // once the caller has handed out every item (a worker that comes later leaves it alone).
  std::atomic<uint64_t> joins_{0};
  std::atomic<int32_t> finished_{0};     // joined workers done with the current section
  std::atomic<bool> stopping_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
  std::vector<Span> spans_;              // (threads): the current section's items, per participant
  std::vector<WorkerRecord> records_;    // (threads): per participant, when profiling
};

// ---- profile of the pool's sections (off unless turned on; for measuring, not for users) ----
//
// When on, every section records one event: its kind (label, tag, items), its start and end
// on the caller, the caller's wait for joined workers after its own last item, how many
// workers joined, the first join's delay and how many items each side took; a forward pass
// (ForwardScope) records its start and end, so the gaps between sections (the serial part)
// can be read off. Events, not sums: on a loaded machine the median of many short events
// is still what an unloaded one gives, where sums are not. Off, a section pays one relaxed
// load of a flag.
struct SectionEvent {
  const char* label;
  int64_t tag, items;
  int64_t start_ns, end_ns;     // steady clock
  int64_t wait_ns;              // caller's wait for joined workers after its own items
  int64_t first_join_ns;        // from the start to the first worker's join (-1: none joined)
  int64_t caller_items, worker_items;
  int32_t threads, joined;
};
struct ForwardEvent {
  int64_t start_ns, end_ns;
};
struct PoolProfile {
  std::vector<SectionEvent> sections;
  std::vector<ForwardEvent> forwards;
};
// Turns profiling on or off and returns what was recorded since the last call (then cleared).
PoolProfile pool_profile(bool on);

// Records one forward pass's wall time in the profile (when it is on).
class ForwardScope {
 public:
  ForwardScope();
  ~ForwardScope();
  ForwardScope(const ForwardScope&) = delete;
  ForwardScope& operator=(const ForwardScope&) = delete;

 private:
  bool on_;
  std::chrono::steady_clock::time_point start_;
};

// The pool every model's products use (created on first use with the default size). A
// forward pass holds it for its duration, so resizing never pulls a pool from under a
// running section: the old one ends when its last holder lets go.
std::shared_ptr<ThreadPool> compute_pool();

// Resizes the compute pool (and keeps OpenBLAS at one thread: the pool splits the float
// products too, so the two never oversubscribe the cores). ValueError unless 1 <= n <= 1024.
void set_compute_threads(int n);
int compute_threads();

// The default size: the CPUs this process may run on (platform::available_cpus: the affinity mask on Linux), at least 1.
int default_compute_threads();

}  // namespace kvgen
