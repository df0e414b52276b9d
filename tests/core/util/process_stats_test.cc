// The /proc readers against what this test does to its own process: a thread started is one
// more thread, a file opened is one more descriptor, 64 MiB touched is at least 90 % of 64 MiB
// more resident memory (and peak), a child's start time lies between two readings of the
// uptime around its fork; a process that does not exist reads as -1.
#include "core/util/process_stats.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>

#include <gtest/gtest.h>

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

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
  // join() returns when the thread's id is cleared, which the kernel does just before it stops
  // counting the thread: allow it a moment to catch up.
  int after = ThreadCount(self);
  for (int i = 0; i < 100 && after != before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    after = ThreadCount(self);
  }
  EXPECT_EQ(after, before);
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

// Seconds since boot (/proc/uptime), -1 when unreadable.
double Uptime() {
  std::FILE* f = std::fopen("/proc/uptime", "r");
  if (f == nullptr) return -1;
  double seconds = -1;
  if (std::fscanf(f, "%lf", &seconds) != 1) seconds = -1;
  std::fclose(f);
  return seconds;
}

TEST(ProcessStats, AChildStartsBetweenTwoReadingsOfTheUptime) {
  const int64_t self = ProcessStartTicks(getpid());
  ASSERT_GE(self, 0);
  EXPECT_EQ(ProcessStartTicks(getpid()), self) << "a process's start time does not change";
  // The parent started before this process (ticks are coarse: equal is possible).
  EXPECT_LE(ProcessStartTicks(getppid()), self);
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const double uptime_before = Uptime();
  ASSERT_GT(uptime_before, 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // waits until the parent has read its start time
    char c;
    close(pipe_fds[1]);
    const ssize_t got = read(pipe_fds[0], &c, 1);
    _exit(got == 1 ? 0 : 1);
  }
  close(pipe_fds[0]);
  const int64_t child_start = ProcessStartTicks(child);
  const double uptime_after = Uptime();
  EXPECT_GE(child_start, self);
  // Independently: the child started between the two readings of the time since boot.
  const double child_seconds = static_cast<double>(child_start) / static_cast<double>(sysconf(_SC_CLK_TCK));
  EXPECT_GE(child_seconds, uptime_before - 0.05);
  EXPECT_LE(child_seconds, uptime_after + 0.05);
  ASSERT_EQ(write(pipe_fds[1], "x", 1), 1);
  close(pipe_fds[1]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(ProcessStartTicks(child), -1);
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

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
