// UploadGate with real threads: readers at once, a bounded wait, refusal beyond it with the
// message naming the flags, and a waiter that stops when its call is no longer wanted.
#include "server/api/upload_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using Clock = std::chrono::system_clock;

// Polls `done` for up to 10 s (the waits here are on other threads).
template <typename F>
bool Eventually(F done) {
  for (int i = 0; i < 1000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

TEST(UploadGateTest, ReadsAFewAtOnceLetsABoundedNumberWaitAndRefusesTheRest) {
  UploadGate gate(2, 1);
  const CallContext ctx;
  absl::StatusOr<UploadGate::Turn> a = gate.Enter(ctx), b = gate.Enter(ctx);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(gate.counts().reading, 2);
  // The third waits for a turn ...
  std::atomic<bool> entered{false};
  std::thread waiter([&] {
    absl::StatusOr<UploadGate::Turn> c = gate.Enter(ctx);
    EXPECT_TRUE(c.ok()) << c.status();
    entered = true;
  });
  ASSERT_TRUE(Eventually([&] { return gate.counts().waiting == 1; }));
  EXPECT_FALSE(entered);
  // ... the fourth finds the queue full and is refused at once.
  absl::StatusOr<UploadGate::Turn> d = gate.Enter(ctx);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(d.status().message(),
            "glTF uploads: this replica reads 2 at once and 1 are waiting, its limits (--max_gltf_reads, "
            "--gltf_read_queue); retry later");
  // A turn ends: the waiter gets it (and gives it back when done).
  { UploadGate::Turn end = std::move(*a); }
  waiter.join();
  EXPECT_TRUE(entered);
  EXPECT_EQ(gate.counts().reading, 1);
  EXPECT_EQ(gate.counts().waiting, 0);
  { UploadGate::Turn end = std::move(*b); }
  EXPECT_EQ(gate.counts().reading, 0);
}

TEST(UploadGateTest, AWaiterStopsAtItsDeadlineOrWhenCancelledOrDraining) {
  UploadGate gate(1, 4);
  absl::StatusOr<UploadGate::Turn> held = gate.Enter(CallContext());
  ASSERT_TRUE(held.ok());
  const auto t0 = Clock::now();
  absl::StatusOr<UploadGate::Turn> late =
      gate.Enter(CallContext("", t0 + std::chrono::milliseconds(200), nullptr, nullptr));
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(200));
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel = true;
  });
  absl::StatusOr<UploadGate::Turn> cancelled =
      gate.Enter(CallContext("", Clock::time_point::max(), [&] { return cancel.load(); }, nullptr));
  canceller.join();
  ASSERT_FALSE(cancelled.ok());
  EXPECT_EQ(cancelled.status().code(), absl::StatusCode::kCancelled);
  std::atomic<bool> draining{false};
  std::thread drainer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    draining = true;
  });
  absl::StatusOr<UploadGate::Turn> drained = gate.Enter(CallContext("", Clock::time_point::max(), nullptr, &draining));
  drainer.join();
  ASSERT_FALSE(drained.ok());
  EXPECT_EQ(drained.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(gate.counts().waiting, 0);
  EXPECT_EQ(gate.counts().reading, 1);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
