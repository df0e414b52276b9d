// A shared store that stops answering (a hung Redis, a network partition: SIGSTOP here, so the
// socket stays open and nothing comes back) holds every call that asks it for the store's 5 s
// timeout. Such calls must wait on the pool, not on the threads that move the front door's
// sockets: with --http_threads=1 a single waiting call there held the only socket thread, and
// every other connection waited behind it, /healthz included.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "client/client.h"
#include "server/convert/convert.h"
#include "tests/support/fixtures.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_process.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::ConnectUnary;
using ::skinning::testing::HttpGet;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::MakeTwoBoneTube;
using ::skinning::testing::RedisProcess;
using ::skinning::testing::ServerProcess;
using ::skinning::testing::WebSocketClient;

constexpr char kPose[] = "/skinning.v1.PoseService/Pose";
constexpr char kPoseSession[] = "/skinning.v1.PoseService/PoseSession";

v1::Pose BentPose(const Rig& rig, double degrees) {
  Pose pose = RestPose(rig.skeleton);
  pose.local[1].rotation = Eigen::AngleAxisd(degrees * M_PI / 180, Eigen::Vector3d::UnitZ());
  return PoseToProto(pose);
}

// Seconds /healthz takes to answer on the front door's one socket thread (or 30 when it does not).
double HealthzSeconds(int port) {
  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<skinning::testing::HttpResponse> res = HttpGet("127.0.0.1", port, "/healthz", 30);
  if (!res.ok() || res->status != 200) return 30;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(StoreStall, CallsWaitingForAStalledStoreHoldNoSocketThreadOfTheFrontDoor) {
  RedisProcess redis;
  ServerProcess server(MakeTempDir("store"), {"--redis=" + redis.address(), "--http_address=127.0.0.1:0",
                                              "--web_dir=", "--http_threads=1"});
  const int http = server.http_port();
  ASSERT_GT(http, 0);
  ClientOptions options;
  options.target = server.address();
  options.deadline = std::chrono::seconds(60);
  Client client(options);
  const Rig rig = MakeTwoBoneTube();
  auto created = client.CreateRig(RigToProto(rig));
  ASSERT_TRUE(created.ok()) << created.status();
  const std::string rig_name = created->rig().name();
  v1::BakeOptions bake_options;
  bake_options.mutable_bbw();
  bake_options.mutable_domain()->set_voxel_resolution(24);
  auto started = client.StartBake(rig_name, bake_options);
  ASSERT_TRUE(started.ok()) << started.status();
  auto baked = client.WatchBake(started->bake().name(), [](const v1::Bake&) { return true; });
  ASSERT_TRUE(baked.ok()) << baked.status();
  ASSERT_EQ(baked->metadata().state(), v1::BAKE_STATE_SUCCEEDED) << baked->error().message();

  // A Pose of the bake, over the front door: quick, so its kind would run on the socket thread.
  // With the shared queue every such call reads the bake's job record from Redis.
  v1::PoseRequest pose;
  pose.set_rig(rig_name);
  pose.set_bake(started->bake().name());
  *pose.mutable_pose() = BentPose(rig, 30);
  pose.mutable_outputs()->set_vertices(true);
  for (int i = 0; i < 5; ++i) {
    v1::PoseResponse posed;
    const absl::Status s = ConnectUnary(http, kPose, pose, &posed, false);
    ASSERT_TRUE(s.ok()) << s;
  }
  // A session of the rig, its frames quick too; once a second a frame asks the store whether the
  // rig is still there.
  auto ws = WebSocketClient::Open(http, kPoseSession);
  ASSERT_TRUE(ws.ok()) << ws.status();
  auto session_frame = [&](int i) {
    v1::PoseSessionRequest req;
    if (i == 0) req.set_rig(rig_name);
    req.set_sequence(i);
    *req.mutable_pose() = BentPose(rig, i);
    return req.SerializeAsString();
  };
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE((*ws)->Send(session_frame(i), false).ok());
    ASSERT_TRUE((*ws)->Receive().ok());
  }
  const auto last_frame = std::chrono::steady_clock::now();
  ASSERT_LT(HealthzSeconds(http), 1.0);

  ASSERT_EQ(kill(redis.pid(), SIGSTOP), 0);
  // The Pose now waits for Redis (up to its 5 s timeout).
  std::atomic<bool> pose_done{false};
  std::thread stalled_pose([&] {
    v1::PoseResponse posed;
    (void)ConnectUnary(http, kPose, pose, &posed, false);
    pose_done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(pose_done.load()) << "the Pose did not wait for the stopped Redis: the test shows nothing";
  const double healthz_during_pose = HealthzSeconds(http);
  EXPECT_LT(healthz_during_pose, 2.0) << "/healthz waited behind a Pose that waits for the store";

  // The session's next frame, with its recheck due, waits for Redis too.
  std::this_thread::sleep_until(last_frame + std::chrono::milliseconds(1200));
  ASSERT_TRUE((*ws)->Send(session_frame(5), false).ok());
  std::atomic<bool> frame_done{false};
  std::thread stalled_frame([&] {
    (void)(*ws)->Receive();
    frame_done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(frame_done.load()) << "the frame did not wait for the stopped Redis: the test shows nothing";
  const double healthz_during_frame = HealthzSeconds(http);
  EXPECT_LT(healthz_during_frame, 2.0) << "/healthz waited behind a session frame that waits for the store";

  ASSERT_EQ(kill(redis.pid(), SIGCONT), 0);
  stalled_pose.join();
  stalled_frame.join();
  // Served again once Redis answers.
  v1::PoseResponse posed;
  const absl::Status again = ConnectUnary(http, kPose, pose, &posed, false);
  EXPECT_TRUE(again.ok()) << again;
  EXPECT_EQ(server.Stop(SIGTERM), 0);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
