// kvgen::platform: the few operating-system calls of the core, one #if per platform.
#include "kvgen/platform.h"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <thread>

#if defined(_WIN32)
#define NOMINMAX
#include <windows.h>
#else
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#endif
#if defined(__linux__)
#include <sched.h>
#endif

namespace kvgen::platform {

int available_cpus() {
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
#endif
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

ZeroedMemory::ZeroedMemory(int64_t bytes) : size_(bytes) {
#if defined(__linux__)
  const int64_t huge = int64_t{2} << 20;
  if (bytes >= huge) {  // map 2 MiB more, then unmap the unaligned head and the tail
    const int64_t rounded = (bytes + huge - 1) / huge * huge;
    void* p = mmap(nullptr, static_cast<size_t>(rounded + huge), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (p != MAP_FAILED) {
      const uintptr_t begin = reinterpret_cast<uintptr_t>(p);
      const uintptr_t aligned = (begin + huge - 1) / huge * huge;
      if (aligned > begin) munmap(p, aligned - begin);
      const uintptr_t end = begin + static_cast<uintptr_t>(rounded + huge);
      if (end > aligned + rounded) munmap(reinterpret_cast<void*>(aligned + rounded), end - aligned - rounded);
      // whole huge pages only: the tail stays in small pages, so no page holds memory past `bytes`
      madvise(reinterpret_cast<void*>(aligned), static_cast<size_t>(bytes / huge * huge), MADV_HUGEPAGE);  // advice
      data_ = reinterpret_cast<uint8_t*>(aligned);
      mapped_ = rounded;
      return;
    }
  }
#endif
  data_ = static_cast<uint8_t*>(std::calloc(static_cast<size_t>(std::max<int64_t>(bytes, 1)), 1));
  if (!data_) throw std::bad_alloc();
}

ZeroedMemory::~ZeroedMemory() {
#if defined(__linux__)
  if (mapped_) {
    munmap(data_, static_cast<size_t>(mapped_));
    return;
  }
#endif
  std::free(data_);
}

ZeroedMemory& ZeroedMemory::operator=(ZeroedMemory&& other) noexcept {
  if (this != &other) {
    this->~ZeroedMemory();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

void release_mapped_pages(const void* data, int64_t bytes) {
#if defined(_WIN32)
  (void)data;  // a mapped view's pages are trimmed by the system's working-set manager
  (void)bytes;
#else
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + static_cast<uintptr_t>(bytes)) / page * page;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);  // advice: failure is harmless
#endif
}

void at_fork_child(void (*child)()) {
#if defined(_WIN32)
  (void)child;  // no fork()
#else
  pthread_atfork(nullptr, nullptr, child);
#endif
}

}  // namespace kvgen::platform
