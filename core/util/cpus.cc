#include "core/util/cpus.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace skinning {
namespace {

std::optional<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// cgroup v2 cpu.max: "<quota> <period>" in µs, or "max <period>" for no limit.
std::optional<double> QuotaFromCpuMax(const std::string& dir) {
  const std::optional<std::string> text = ReadSmallFile(dir + "/cpu.max");
  if (!text) return std::nullopt;
  const std::vector<std::string> fields = absl::StrSplit(*text, absl::ByAnyChar(" \t\n"), absl::SkipEmpty());
  double quota = 0, period = 0;
  if (fields.size() != 2 || fields[0] == "max" || !absl::SimpleAtod(fields[0], &quota) ||
      !absl::SimpleAtod(fields[1], &period) || quota <= 0 || period <= 0)
    return std::nullopt;
  return quota / period;
}

// cgroup v1: cpu.cfs_quota_us (-1 for no limit) over cpu.cfs_period_us.
std::optional<double> QuotaFromCfs(const std::string& dir) {
  const std::optional<std::string> quota_text = ReadSmallFile(dir + "/cpu.cfs_quota_us");
  const std::optional<std::string> period_text = ReadSmallFile(dir + "/cpu.cfs_period_us");
  double quota = 0, period = 0;
  if (!quota_text || !period_text || !absl::SimpleAtod(absl::StripAsciiWhitespace(*quota_text), &quota) ||
      !absl::SimpleAtod(absl::StripAsciiWhitespace(*period_text), &period) || quota <= 0 || period <= 0)
    return std::nullopt;
  return quota / period;
}

// "/a/b/c" → "/a/b/c", "/a/b", "/a", "" (the root of the mount).
std::vector<std::string> SelfAndAncestors(std::string path) {
  while (!path.empty() && path.back() == '/') path.pop_back();
  std::vector<std::string> out;
  for (;;) {
    out.push_back(path);
    if (path.empty()) return out;
    path.resize(path.rfind('/'));
  }
}

int AffinityCpus() {
  constexpr int kMaxCpus = 4096;
  cpu_set_t* set = CPU_ALLOC(kMaxCpus);
  if (set == nullptr) return 0;
  const size_t size = CPU_ALLOC_SIZE(kMaxCpus);
  CPU_ZERO_S(size, set);
  const int count = sched_getaffinity(0, size, set) == 0 ? CPU_COUNT_S(size, set) : 0;
  CPU_FREE(set);
  return count;
}

}  // namespace

CpuLimits ReadCpuLimits(const std::string& cgroup_root, const std::string& proc_self_cgroup_file) {
  CpuLimits limits;
  limits.online = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int affinity = AffinityCpus();
  limits.affinity = affinity > 0 ? affinity : limits.online;

  // Each line of /proc/self/cgroup is "hierarchy:controllers:path"; v2's is "0::path".
  const std::string self = ReadSmallFile(proc_self_cgroup_file).value_or("");
  auto consider = [&limits](const std::string& dir, std::optional<double> quota) {
    if (quota && (!limits.quota || *quota < *limits.quota)) {
      limits.quota = quota;
      limits.quota_file = dir;
    }
  };
  for (absl::string_view line : absl::StrSplit(self, '\n', absl::SkipEmpty())) {
    const std::vector<std::string> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (parts.size() != 3) continue;
    const std::vector<std::string> controllers = absl::StrSplit(parts[1], ',', absl::SkipEmpty());
    const std::vector<std::string> dirs = SelfAndAncestors(parts[2]);
    if (parts[0] == "0" && parts[1].empty()) {
      for (const std::string& base : {cgroup_root, cgroup_root + "/unified"})
        for (const std::string& d : dirs) consider(base + d + "/cpu.max", QuotaFromCpuMax(base + d));
    } else if (std::find(controllers.begin(), controllers.end(), "cpu") != controllers.end()) {
      for (const std::string& mount : {std::string("cpu"), std::string("cpu,cpuacct"), std::string("cpuacct,cpu")})
        for (const std::string& d : dirs) {
          const std::string dir = cgroup_root + "/" + mount + d;
          consider(dir + "/cpu.cfs_quota_us", QuotaFromCfs(dir));
        }
    }
  }
  limits.cpus = limits.affinity;
  if (limits.quota) limits.cpus = std::min(limits.cpus, static_cast<int>(std::ceil(*limits.quota - 1e-9)));
  limits.cpus = std::max(1, limits.cpus);
  return limits;
}

const CpuLimits& ProcessCpuLimits() {
  static const CpuLimits limits = ReadCpuLimits();
  return limits;
}

int AvailableCpus() { return ProcessCpuLimits().cpus; }

std::string DescribeCpuLimits(const CpuLimits& limits) {
  return absl::StrFormat("%d (affinity %d of %d online; cgroup quota %s)", limits.cpus, limits.affinity,
                         limits.online,
                         limits.quota ? absl::StrFormat("%.4g CPUs from %s", *limits.quota, limits.quota_file)
                                      : std::string("none"));
}

}  // namespace skinning
