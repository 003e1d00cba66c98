// kvgen::platform: the few operating-system calls of the core, one #if per platform.
#include "kvgen/platform.h"

#include <algorithm>
#include <cstdlib>
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

void* allocate_large(int64_t bytes) {
  const int64_t huge = int64_t{2} << 20;
#if defined(__linux__)
  if (bytes >= huge) {
    const size_t rounded = static_cast<size_t>((bytes + huge - 1) / huge * huge);
    void* p = std::aligned_alloc(static_cast<size_t>(huge), rounded);
    if (p) madvise(p, rounded, MADV_HUGEPAGE);  // advice: failure is harmless
    return p;
  }
#endif
  return std::malloc(static_cast<size_t>(std::max<int64_t>(bytes, 1)));
}

void free_large(void* p) { std::free(p); }

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
