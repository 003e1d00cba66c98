// The operating-system calls the core needs, behind one small interface: Linux, macOS and
// Windows each get the portable call where one exists (cpp/src/platform.cpp), so that
// nothing else in the core includes a platform header.
#pragma once

#include <cstdint>

namespace kvgen::platform {

// CPUs this process may run on: the affinity mask on Linux (taskset, cgroups' cpusets),
// the processor count elsewhere; at least 1.
int available_cpus();

// Drops the whole pages inside [data, data + bytes) of a read-only file mapping from this
// process (the file's pages stay in the page cache; a later read faults them back in).
// Advice only: where the system has no such call, or the call fails, nothing happens.
void release_mapped_pages(const void* data, int64_t bytes);

// Memory for a large, long-lived buffer (repacked weights): from `bytes` = 2 MiB up, on
// Linux, 2 MiB-aligned and advised to be backed by transparent huge pages, so that a pass
// over the weights walks few pages (fewer TLB misses, fewer page faults when it is first
// written); else plain malloc. Null when no memory is to be had. Release with free_large.
void* allocate_large(int64_t bytes);
void free_large(void* p);

// Runs `child` in the child process after fork() (pthread_atfork); no-op without fork().
void at_fork_child(void (*child)());

}  // namespace kvgen::platform
