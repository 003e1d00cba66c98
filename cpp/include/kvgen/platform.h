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

// Runs `child` in the child process after fork() (pthread_atfork); no-op without fork().
void at_fork_child(void (*child)());

}  // namespace kvgen::platform
