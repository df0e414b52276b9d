// A process's resident memory, threads, open descriptors and start time, read from /proc
// (Linux): for the tests and benchmarks that watch a server they started (bench/load, bench/soak,
// bench/upload_burst, the overload test), and for the store, which names the writer of a
// temporary file or of a queued bake's record by host, pid and start time.
#ifndef SKINNING_CORE_UTIL_PROCESS_STATS_H_
#define SKINNING_CORE_UTIL_PROCESS_STATS_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

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
// When it started, in clock ticks since boot (field 22 of /proc/<pid>/stat): with the pid, a
// name no later process has. -1 when it cannot be read.
int64_t ProcessStartTicks(pid_t pid);

// This machine's name as the store records it: characters other than [A-Za-z0-9.-] become '_';
// "host" when it has none.
std::string HostName();
// This process as the store names a writer: "<pid>-<start ticks>" (a pid alone could be a later
// process's: a restarted container is pid 1 again).
std::string ThisProcessWriter();
// Whether the process of this machine that `writer` names ("<pid>-<start ticks>", as
// ThisProcessWriter) has ended: no process with that pid started at that time (without /proc: no
// process with that pid). False for a name of another form.
bool WriterEnded(const std::string& writer);

}  // namespace skinning

#endif  // SKINNING_CORE_UTIL_PROCESS_STATS_H_
