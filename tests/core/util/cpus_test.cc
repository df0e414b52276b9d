// The CPU count that threads follow. The affinity part runs for real: this test narrows its own
// thread to one CPU. The cgroup part reads file trees laid out as the kernel's cgroup file
// systems (v2's cpu.max, v1's cpu.cfs_quota_us / cpu.cfs_period_us): setting a real CPU quota
// needs root and a writable cgroup mount, which CI need not give, so these trees stand in for
// them (the start-up line was checked against a real v1 cgroup with a 1.5-CPU quota by hand:
// "cgroup quota 1.5 CPUs from /sys/fs/cgroup/cpu/<group>/cpu.cfs_quota_us").
#include "core/util/cpus.h"

#include <sched.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "core/util/parallel.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_files.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using skinning::testing::MakeTempDir;
using skinning::testing::WriteText;

// A cgroup tree at `root` and a /proc/self/cgroup naming the process's place in it.
class CgroupTree {
 public:
  CgroupTree() : root_(MakeTempDir("cgroup")) {}
  // Writes `text` to root/relative, making the folders.
  void Write(const std::string& relative, const std::string& text) {
    const std::filesystem::path path = std::filesystem::path(root_) / relative;
    std::filesystem::create_directories(path.parent_path());
    WriteText(path.string(), text);
  }
  CpuLimits Read(const std::string& self_cgroup) {
    WriteText(root_ + "/self_cgroup", self_cgroup);
    return ReadCpuLimits(root_ + "/fs", root_ + "/self_cgroup");
  }

 private:
  std::string root_;
};

TEST(CpuLimits, AffinityNarrowedToOneCpuGivesOneCpu) {
  const CpuLimits before = ReadCpuLimits();
  ASSERT_GE(before.affinity, 1);
  EXPECT_LE(before.affinity, before.online);
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  int first = -1;
  for (int c = 0; c < CPU_SETSIZE && first < 0; ++c)
    if (CPU_ISSET(c, &saved)) first = c;
  ASSERT_GE(first, 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  const CpuLimits narrowed = ReadCpuLimits();
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
  EXPECT_EQ(narrowed.affinity, 1);
  EXPECT_EQ(narrowed.cpus, 1);
  EXPECT_EQ(narrowed.online, before.online);
  EXPECT_EQ(ReadCpuLimits().affinity, before.affinity);
  // What the solvers' thread counts follow (an explicit count is kept as given).
  EXPECT_EQ(ResolveThreads(3), 3);
  EXPECT_EQ(ResolveThreads(0), AvailableCpus());
  EXPECT_LE(AvailableCpus(), before.online);
}

TEST(CpuLimits, CgroupV2QuotaOnAnAncestorBindsAndTheSmallestWins) {
  CgroupTree tree;
  tree.Write("fs/cpu.max", "max 100000\n");
  tree.Write("fs/kubepods/pod1/cpu.max", "150000 100000\n");
  tree.Write("fs/kubepods/pod1/c1/cpu.max", "max 100000\n");
  CpuLimits limits = tree.Read("0::/kubepods/pod1/c1\n");
  ASSERT_TRUE(limits.quota.has_value());
  EXPECT_DOUBLE_EQ(*limits.quota, 1.5);
  EXPECT_NE(limits.quota_file.find("kubepods/pod1/cpu.max"), std::string::npos) << limits.quota_file;
  EXPECT_EQ(limits.cpus, std::min(limits.affinity, 2));  // 1.5 CPUs: 2 threads, rounded up

  tree.Write("fs/kubepods/pod1/c1/cpu.max", "50000 100000\n");  // the container's own, smaller
  limits = tree.Read("0::/kubepods/pod1/c1\n");
  ASSERT_TRUE(limits.quota.has_value());
  EXPECT_DOUBLE_EQ(*limits.quota, 0.5);
  EXPECT_EQ(limits.cpus, 1);  // never 0
  EXPECT_NE(DescribeCpuLimits(limits).find("cgroup quota 0.5 CPUs from"), std::string::npos)
      << DescribeCpuLimits(limits);
}

TEST(CpuLimits, CgroupV2NamespacedRootIsTheContainersOwn) {
  CgroupTree tree;
  tree.Write("fs/cpu.max", "100000 100000\n");
  const CpuLimits limits = tree.Read("0::/\n");
  ASSERT_TRUE(limits.quota.has_value());
  EXPECT_DOUBLE_EQ(*limits.quota, 1.0);
  EXPECT_EQ(limits.cpus, 1);
}

TEST(CpuLimits, CgroupV1CfsQuotaFromABindMountedContainerCgroup) {
  CgroupTree tree;
  // Inside a v1 container the host's path is listed, but the mount is the container's cgroup:
  // only the mount's root files exist.
  tree.Write("fs/cpu,cpuacct/cpu.cfs_quota_us", "100000\n");
  tree.Write("fs/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  CpuLimits limits = tree.Read("12:memory:/kubepods/x\n4:cpu,cpuacct:/kubepods/burstable/pod9/abc\n");
  ASSERT_TRUE(limits.quota.has_value());
  EXPECT_DOUBLE_EQ(*limits.quota, 1.0);
  EXPECT_EQ(limits.cpus, 1);

  tree.Write("fs/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");  // no limit
  limits = tree.Read("4:cpu,cpuacct:/kubepods/burstable/pod9/abc\n");
  EXPECT_FALSE(limits.quota.has_value());
  EXPECT_EQ(limits.cpus, limits.affinity);
}

TEST(CpuLimits, NoCgroupFilesOrUnlimitedMeansTheAffinity) {
  CgroupTree tree;
  tree.Write("fs/cpu.max", "max 100000\n");
  CpuLimits limits = tree.Read("0::/\n");
  EXPECT_FALSE(limits.quota.has_value());
  EXPECT_EQ(limits.cpus, limits.affinity);
  EXPECT_NE(DescribeCpuLimits(limits).find("cgroup quota none"), std::string::npos);
  limits = tree.Read("");  // no /proc/self/cgroup lines at all
  EXPECT_FALSE(limits.quota.has_value());
  tree.Write("fs/x/cpu.max", "garbage\n");
  limits = tree.Read("0::/x\n");
  EXPECT_FALSE(limits.quota.has_value());
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
