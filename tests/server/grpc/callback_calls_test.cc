// CallbackHost and QuickTimer: what decides whether callback work runs on gRPC's own threads.
#include "server/grpc/callback_calls.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

TEST(QuickTimer, AWaitOrCpuWorkPastItsLimitsIsNotQuick) {
  {
    const QuickTimer timer;
    std::this_thread::sleep_for(std::chrono::milliseconds(60));  // no CPU, 60 ms on the clock
    EXPECT_FALSE(timer.Quick());
  }
  {
    const QuickTimer timer;
    const double start = ThreadCpuSeconds();
    volatile double x = 0;
    while (ThreadCpuSeconds() - start < 0.005) x = x + 1;  // 5 ms of this thread's CPU
    EXPECT_FALSE(timer.Quick());
  }
}

TEST(QuickTimer, ShortWorkAndALongerWaitWithinItsLimitsAreQuick) {
  {
    const QuickTimer timer;
    const double start = ThreadCpuSeconds();
    volatile double x = 0;
    while (ThreadCpuSeconds() - start < 0.0002) x = x + 1;  // 0.2 ms of CPU: under 2 ms either way
    EXPECT_TRUE(timer.Quick());
  }
  {
    // Past 2 ms on the clock the thread's CPU time decides: 10 ms of waiting used almost none.
    const QuickTimer timer;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_TRUE(timer.Quick());
  }
}

TEST(CallbackHost, RemembersWhetherTheLastCallOfAKindWasQuick) {
  CallbackHost host(2, 0);
  EXPECT_FALSE(host.WasQuick(7)) << "a kind not seen yet goes to the pool";
  host.RecordQuick(7, true);
  EXPECT_TRUE(host.WasQuick(7));
  EXPECT_FALSE(host.WasQuick(8));
  host.RecordQuick(7, false);
  EXPECT_FALSE(host.WasQuick(7));
  host.RecordQuick(7, true);
  EXPECT_TRUE(host.WasQuick(7));
}

TEST(CallbackHost, CountsSessionsUpToItsLimit) {
  CallbackHost host(2, 3);
  EXPECT_TRUE(host.TryOpen());
  EXPECT_TRUE(host.TryOpen());
  EXPECT_TRUE(host.TryOpen());
  EXPECT_FALSE(host.TryOpen());
  EXPECT_EQ(host.open(), 3);
  host.Close();
  EXPECT_TRUE(host.TryOpen());
  CallbackHost unlimited(2, 0);
  for (int i = 0; i < 20000; ++i) ASSERT_TRUE(unlimited.TryOpen());
}

TEST(CallbackHost, RunsPostedWorkOnItsThreadsAndWaitsForItWhenDestroyed) {
  std::atomic<int> done{0};
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> elsewhere{true};
  {
    CallbackHost host(3, 0);
    EXPECT_EQ(host.threads(), 3);
    for (int i = 0; i < 50; ++i)
      host.Post([&] {
        if (std::this_thread::get_id() == caller) elsewhere = false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        done.fetch_add(1);
      });
  }
  EXPECT_EQ(done.load(), 50);
  EXPECT_TRUE(elsewhere.load());
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
