// How many CPUs this process may actually use: its affinity mask, bounded by its cgroup's CPU
// quota. std::thread::hardware_concurrency() counts the node's CPUs, so a pod limited to 2 CPUs
// on a 64-core node would solve a bake on up to 64 threads and run 128 callback threads, and the
// kernel would throttle the pod for most of each period (latency spikes on every call).
#ifndef SKINNING_CORE_UTIL_CPUS_H_
#define SKINNING_CORE_UTIL_CPUS_H_

#include <optional>
#include <string>

namespace skinning {

struct CpuLimits {
  int online = 1;                // std::thread::hardware_concurrency() (at least 1)
  int affinity = 1;              // CPUs in the calling thread's affinity mask (sched_getaffinity)
  std::optional<double> quota;   // the cgroup's CPU quota in CPUs (quota / period), if limited
  int cpus = 1;                  // min(affinity, ⌈quota⌉), at least 1: what threads should follow
  std::string quota_file;        // the cgroup file that set `quota` (for the start-up log)
};

// Reads the limits now. The quota is the smallest over the process's cgroup and its ancestors
// (a limit on the pod's cgroup binds its containers), from cgroup v2's cpu.max ("max 100000" or
// "200000 100000") or v1's cpu.cfs_quota_us / cpu.cfs_period_us (-1: none). The cgroup paths
// come from `proc_self_cgroup` (the text of /proc/self/cgroup) under `cgroup_root`; inside a
// container whose cgroup is mounted at the root (cgroup namespaces, or v1 bind mounts) the root
// file is the container's own and is read too.
CpuLimits ReadCpuLimits(const std::string& cgroup_root = "/sys/fs/cgroup",
                        const std::string& proc_self_cgroup_file = "/proc/self/cgroup");

// ReadCpuLimits(), read once per process (the first call) and then kept: what the thread counts
// follow and what the server reports at start.
const CpuLimits& ProcessCpuLimits();

// ProcessCpuLimits().cpus.
int AvailableCpus();

// "2 (affinity 2 of 64 online; cgroup quota 1.5 CPUs from /sys/fs/cgroup/cpu.max)".
std::string DescribeCpuLimits(const CpuLimits& limits);

}  // namespace skinning

#endif  // SKINNING_CORE_UTIL_CPUS_H_
