// The /proc readers against what this test does to its own process: a thread started is one
// more thread, a file opened is one more descriptor, 64 MiB touched is at least 64 MiB more
// resident memory (and peak); a process that does not exist reads as -1.
#include "core/util/process_stats.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

namespace skinning {
namespace {

TEST(ProcessStats, ThreadsFollowAThreadStartedAndJoined) {
  const pid_t self = getpid();
  const int before = ThreadCount(self);
  ASSERT_GE(before, 1);
  std::atomic<bool> release{false};
  std::atomic<bool> running{false};
  std::thread t([&] {
    running = true;
    while (!release) std::this_thread::yield();
  });
  while (!running) std::this_thread::yield();
  EXPECT_EQ(ThreadCount(self), before + 1);
  release = true;
  t.join();
  EXPECT_EQ(ThreadCount(self), before);
}

TEST(ProcessStats, DescriptorsFollowAFileOpenedAndClosed) {
  const pid_t self = getpid();
  const int before = OpenDescriptorCount(self);
  ASSERT_GE(before, 3);  // stdin, stdout, stderr at least, and for this process the directory read
  const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(OpenDescriptorCount(self), before + 1);
  close(fd);
  EXPECT_EQ(OpenDescriptorCount(self), before);
}

TEST(ProcessStats, ResidentAndPeakMemoryGrowByMemoryTouched) {
  const pid_t self = getpid();
  const int64_t rss = ResidentBytes(self);
  const int64_t peak = PeakResidentBytes(self);
  ASSERT_GT(rss, 0);
  ASSERT_GE(peak, rss);
  constexpr size_t kBytes = 64u << 20;
  std::unique_ptr<char[]> block(new char[kBytes]);
  std::memset(block.get(), 1, kBytes);  // touched, so resident
  EXPECT_GE(ResidentBytes(self), rss + static_cast<int64_t>(kBytes) * 9 / 10);
  EXPECT_GE(PeakResidentBytes(self), rss + static_cast<int64_t>(kBytes) * 9 / 10);
  EXPECT_EQ(block[kBytes - 1], 1);
}

TEST(ProcessStats, AProcessThatIsGoneReadsAsMinusOne) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);  // reaped: its /proc entry is gone
  EXPECT_EQ(ResidentBytes(child), -1);
  EXPECT_EQ(PeakResidentBytes(child), -1);
  EXPECT_EQ(ThreadCount(child), -1);
  EXPECT_EQ(OpenDescriptorCount(child), -1);
  EXPECT_EQ(ThreadCount(0), -1);
  EXPECT_EQ(OpenDescriptorCount(-1), -1);
}

}  // namespace
}  // namespace skinning
