// The operating-system calls the core needs, behind one small interface: Linux, macOS and
// Windows each get the portable call where one exists (cpp/src/platform.cpp), so that
// nothing else in the core includes a platform header.
#pragma once

#include <cstdint>
#include <utility>

namespace kvgen::platform {

// CPUs this process may run on: the affinity mask on Linux (taskset, cgroups' cpusets),
// the processor count elsewhere; at least 1.
int available_cpus();

// Drops the whole pages inside [data, data + bytes) of a read-only file mapping from this
// process (the file's pages stay in the page cache; a later read faults them back in).
// Advice only: where the system has no such call, or the call fails, nothing happens.
void release_mapped_pages(const void* data, int64_t bytes);

// Zero-filled memory for a long-lived buffer (repacked weights), freed on destruction. From
// 2 MiB up, on Linux, fresh anonymous pages (zero without a pass over them), 2 MiB-aligned,
// its whole 2 MiB pages advised to be backed by transparent huge pages (the tail stays in
// small pages), so that a pass over the weights walks few pages (fewer TLB misses, fewer
// page faults when it is first written); else calloc. std::bad_alloc when no memory is to
// be had.
class ZeroedMemory {
 public:
  ZeroedMemory() = default;
  explicit ZeroedMemory(int64_t bytes);
  ~ZeroedMemory();
  ZeroedMemory(ZeroedMemory&& other) noexcept { *this = std::move(other); }
  ZeroedMemory& operator=(ZeroedMemory&& other) noexcept;
  ZeroedMemory(const ZeroedMemory&) = delete;
  ZeroedMemory& operator=(const ZeroedMemory&) = delete;

  uint8_t* data() const { return data_; }
  int64_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  int64_t size_ = 0;
  int64_t mapped_ = 0;  // bytes mapped at data_ (0: from calloc)
};

// Runs `child` in the child process after fork() (pthread_atfork); no-op without fork().
void at_fork_child(void (*child)());

}  // namespace kvgen::platform
