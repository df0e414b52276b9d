// A shared store that stops answering (a hung Redis, a network partition: SIGSTOP here, so the
// socket stays open and nothing comes back) holds every call that asks it for the store's 5 s
// timeout. Such calls must wait on the pool, not on the threads that move the front door's
// sockets: with --http_threads=1 a single waiting call there held the only socket thread, and
// every other connection waited behind it, /healthz included.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include <gtest/gtest.h>

#include "client/client.h"
#include "server/convert/convert.h"
#include "skinning/v1/pose_service.grpc.pb.h"
#include "tests/support/fixtures.h"
#include "tests/support/health_check.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_process.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::ConnectUnary;
using ::skinning::testing::HealthCheck;
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

ClientOptions Options(const ServerProcess& server) {
  ClientOptions options;
  options.target = server.address();
  options.deadline = std::chrono::seconds(60);
  return options;
}

// Registers `rig`, bakes its BBW weights (grid 24) and sets *pose to a bent Pose of that bake.
void BakedPose(Client& client, const Rig& rig, v1::PoseRequest* pose) {
  auto created = client.CreateRig(RigToProto(rig));
  ASSERT_TRUE(created.ok()) << created.status();
  v1::BakeOptions bake_options;
  bake_options.mutable_bbw();
  bake_options.mutable_domain()->set_voxel_resolution(24);
  auto started = client.StartBake(created->rig().name(), bake_options);
  ASSERT_TRUE(started.ok()) << started.status();
  auto baked = client.WatchBake(started->bake().name(), [](const v1::Bake&) { return true; });
  ASSERT_TRUE(baked.ok()) << baked.status();
  ASSERT_EQ(baked->metadata().state(), v1::BAKE_STATE_SUCCEEDED) << baked->error().message();
  pose->set_rig(created->rig().name());
  pose->set_bake(started->bake().name());
  *pose->mutable_pose() = BentPose(rig, 30);
  pose->mutable_outputs()->set_vertices(true);
}

// Redis; a server on it whose front door has one socket thread (so a call held there holds
// them all) and its port; a client of the server; the rig the test poses.
class StoreStallOnOneSocketThread : public ::testing::Test {
 protected:
  RedisProcess redis;
  ServerProcess server{MakeTempDir("store"),
                       {"--redis=" + redis.address(), "--http_address=127.0.0.1:0", "--web_dir=", "--http_threads=1"}};
  const int http = server.http_port();
  Client client{Options(server)};
  const Rig rig = MakeTwoBoneTube();
};

// Seconds /healthz takes to answer on the front door's one socket thread (or 30 when it does not).
double HealthzSeconds(int port) {
  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<skinning::testing::HttpResponse> res = HttpGet("127.0.0.1", port, "/healthz", 30);
  if (!res.ok() || res->status != 200) return 30;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST_F(StoreStallOnOneSocketThread, CallsWaitingForAStalledStoreHoldNoSocketThreadOfTheFrontDoor) {
  ASSERT_GT(http, 0);
  v1::PoseRequest pose;
  ASSERT_NO_FATAL_FAILURE(BakedPose(client, rig, &pose));
  const std::string rig_name = pose.rig();
  // A Pose of the bake, over the front door: quick, so its kind would run on the socket thread.
  // With the shared queue every such call reads the bake's job record from Redis.
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

// The same on the gRPC door: gRPC 1.51 runs every callback on two threads that also move the
// sockets' bytes, so quick Pose calls waiting there for a stalled store held every gRPC call of
// the server, a health check on the main port too.
TEST(StoreStall, PosesWaitingForAStalledStoreHoldNoThreadOfTheGrpcDoor) {
  RedisProcess redis;
  ServerProcess server(MakeTempDir("store"), {"--redis=" + redis.address()});
  Client client(Options(server));
  const Rig rig = MakeTwoBoneTube();
  v1::PoseRequest pose;
  ASSERT_NO_FATAL_FAILURE(BakedPose(client, rig, &pose));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(client.Pose(pose).ok());  // quick: its kind would run inline
  auto channel = grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials());
  std::string health;
  ASSERT_TRUE(HealthCheck(channel, &health).ok());

  ASSERT_EQ(kill(redis.pid(), SIGSTOP), 0);
  // More Poses of the bake than gRPC has callback threads, each waiting for Redis.
  std::atomic<int> done{0};
  std::vector<std::thread> stalled;
  for (int i = 0; i < 4; ++i) {
    stalled.emplace_back([&] {
      ClientOptions o = Options(server);
      o.max_attempts = 1;
      (void)Client(o).Pose(pose);
      ++done;
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(done.load(), 0) << "the Poses did not wait for the stopped Redis: the test shows nothing";
  const auto t0 = std::chrono::steady_clock::now();
  const grpc::Status checked = HealthCheck(channel, &health);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(checked.ok()) << checked.error_message();
  EXPECT_LT(seconds, 2.0) << "a health check waited behind Poses that wait for the store";

  ASSERT_EQ(kill(redis.pid(), SIGCONT), 0);
  for (std::thread& t : stalled) t.join();
  EXPECT_TRUE(client.Pose(pose).ok());
  EXPECT_EQ(server.Stop(SIGTERM), 0);
}

// A session frame that switches to a PSD deformer asks the store for the rig's examples. The
// doors used to decide before reading the frame (from the session's deformer of before), so
// such a frame ran on the socket thread (front door) or gRPC's callback thread and held it for
// the stalled store's 5 s timeout. Now they read what the frame asks for first.
TEST_F(StoreStallOnOneSocketThread, ASessionFrameThatSwitchesToPsdHoldsNoThreadOfEitherDoor) {
  ASSERT_GT(http, 0);
  auto created = client.CreateRig(RigToProto(rig));
  ASSERT_TRUE(created.ok()) << created.status();
  const std::string rig_name = created->rig().name();
  auto frame = [&](int i, v1::Deformer deformer) {
    v1::PoseSessionRequest req;
    if (i == 0) req.set_rig(rig_name);
    req.set_sequence(i);
    req.set_deformer(deformer);
    *req.mutable_pose() = BentPose(rig, i);
    return req;
  };
  // A front-door session and, on the gRPC door, more sessions than gRPC has callback threads;
  // their LBS frames are quick (so the next frame's kind would run inline).
  auto ws = WebSocketClient::Open(http, kPoseSession);
  ASSERT_TRUE(ws.ok()) << ws.status();
  auto channel = grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials());
  auto stub = v1::PoseService::NewStub(channel);
  constexpr int kGrpcSessions = 4;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReaderWriter<v1::PoseSessionRequest, v1::PoseSessionResponse>>> streams;
  for (int g = 0; g < kGrpcSessions; ++g) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    streams.push_back(stub->PoseSession(contexts.back().get()));
  }
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE((*ws)->Send(frame(i, v1::DEFORMER_UNSPECIFIED).SerializeAsString(), false).ok());
    ASSERT_TRUE((*ws)->Receive().ok());
    for (auto& stream : streams) {
      v1::PoseSessionResponse answer;
      ASSERT_TRUE(stream->Write(frame(i, v1::DEFORMER_UNSPECIFIED)));
      ASSERT_TRUE(stream->Read(&answer));
    }
  }
  std::string health;
  ASSERT_TRUE(HealthCheck(channel, &health).ok());
  ASSERT_LT(HealthzSeconds(http), 1.0);

  // Within the second before the sessions' recheck: only the switch to PSD asks the store.
  ASSERT_EQ(kill(redis.pid(), SIGSTOP), 0);
  ASSERT_TRUE((*ws)->Send(frame(5, v1::DEFORMER_PSD_LBS).SerializeAsString(), false).ok());
  for (auto& stream : streams) ASSERT_TRUE(stream->Write(frame(5, v1::DEFORMER_PSD_LBS)));
  std::atomic<bool> ws_done{false};
  std::atomic<int> grpc_done{0};
  std::thread ws_frame([&] {
    (void)(*ws)->Receive();
    ws_done = true;
  });
  std::vector<std::thread> grpc_frames;
  for (auto& stream : streams) {
    grpc_frames.emplace_back([&grpc_done, s = stream.get()] {
      v1::PoseSessionResponse answer;
      (void)s->Read(&answer);
      ++grpc_done;
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(ws_done.load()) << "the front door's frame did not wait for the stopped Redis: the test shows nothing";
  EXPECT_EQ(grpc_done.load(), 0) << "the gRPC frames did not wait for the stopped Redis: the test shows nothing";
  // Both doors' health at once, while the frames wait.
  grpc::Status checked;
  double grpc_seconds = 0.0;
  std::thread grpc_health([&] {
    const auto t0 = std::chrono::steady_clock::now();
    checked = HealthCheck(channel, &health);
    grpc_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
  const double healthz = HealthzSeconds(http);
  grpc_health.join();
  EXPECT_LT(healthz, 2.0) << "/healthz waited behind a session frame switching to PSD";
  EXPECT_TRUE(checked.ok()) << checked.error_message();
  EXPECT_LT(grpc_seconds, 2.0) << "a gRPC health check waited behind session frames switching to PSD";

  ASSERT_EQ(kill(redis.pid(), SIGCONT), 0);
  ws_frame.join();
  for (std::thread& t : grpc_frames) t.join();
  for (auto& context : contexts) context->TryCancel();
  EXPECT_EQ(server.Stop(SIGTERM), 0);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
