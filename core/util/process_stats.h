// A process's resident memory, threads and open descriptors, read from /proc (Linux), for the
// tests and benchmarks that watch a server they started (bench/load, bench/soak, the overload
// and upload tests).
#ifndef SKINNING_CORE_UTIL_PROCESS_STATS_H_
#define SKINNING_CORE_UTIL_PROCESS_STATS_H_

#include <sys/types.h>

#include <cstdint>

namespace skinning {

// The resident memory of process `pid` in bytes (VmRSS in /proc/<pid>/status); -1 when it
// cannot be read (no such process, no /proc).
int64_t ResidentBytes(pid_t pid);
// Its peak resident memory so far in bytes (VmHWM); -1 when it cannot be read.
int64_t PeakResidentBytes(pid_t pid);
// Its threads (Threads in /proc/<pid>/status); -1 when they cannot be read.
int ThreadCount(pid_t pid);
// Its open file descriptors (the entries of /proc/<pid>/fd); -1 when they cannot be read.
int OpenDescriptorCount(pid_t pid);

}  // namespace skinning

#endif  // SKINNING_CORE_UTIL_PROCESS_STATS_H_
