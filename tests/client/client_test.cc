// The client library against the real server binary.
#include "client/client.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <future>
#include <thread>

#include <gtest/gtest.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "server/convert/convert.h"
#include "tests/support/fast_constraints.h"
#include "tests/support/fixtures.h"
#include "tests/support/health_check.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::MakeTempDir;
using ::skinning::testing::HealthCheck;
using ::skinning::testing::PickFreePort;
using ::skinning::testing::ServerProcess;


TEST(Client, RetriesUnavailableUntilTheServerComesUp) {
  const int port = PickFreePort();
  ClientOptions o;
  o.target = "127.0.0.1:" + std::to_string(port);
  // The deadline is under gRPC's 5 s backup-poll period: a client that sleeps between attempts
  // without polling its channel learns that the server came up only from that poller (its next
  // connection attempt, begun before the server listened, is reported refused at 5 s and the one
  // after succeeds unseen until 10 s), so it fails here; one that polls sees the server at once.
  o.deadline = std::chrono::milliseconds(4500);
  o.max_attempts = 50;
  o.initial_backoff = std::chrono::milliseconds(50);
  o.max_backoff = std::chrono::milliseconds(300);
  Client client(o);
  auto call = std::async(std::launch::async, [&] { return client.CreateRig(RigToProto(testing::MakeTwoBoneTube())); });
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  ASSERT_EQ(call.wait_for(std::chrono::seconds(0)), std::future_status::timeout) << "nothing listens yet";
  ServerProcess server(MakeTempDir("store"), {"--address=127.0.0.1:" + std::to_string(port)});
  auto result = call.get();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->created());
}

// A replica restarting under open sessions (a rolling update, a crash): the next Step of a pose
// session and of a FAST session opens the stream again once a server answers on the address and
// gets the answer a new session would. They used to end with the stream's UNAVAILABLE, and the
// caller had to open a session again itself.
TEST(Client, SessionStepsOutliveAServerRestart) {
  const int port = PickFreePort();
  const std::string store = MakeTempDir("store");
  const std::vector<std::string> flags = {"--address=127.0.0.1:" + std::to_string(port)};
  auto server = std::make_unique<ServerProcess>(store, flags);
  ClientOptions o;
  o.target = "127.0.0.1:" + std::to_string(port);
  o.deadline = std::chrono::seconds(20);
  o.max_backoff = std::chrono::milliseconds(200);
  Client client(o);
  auto rig = client.CreateRig(RigToProto(testing::MakeTwoBoneTube()));
  ASSERT_TRUE(rig.ok()) << rig.status();
  v1::BakeOptions fast;
  fast.mutable_fast_model();
  auto started = client.StartBake(rig->rig().name(), fast);
  ASSERT_TRUE(started.ok()) << started.status();
  auto baked = client.WatchBake(started->bake().name(), [](const v1::Bake&) { return true; });
  ASSERT_TRUE(baked.ok()) << baked.status();
  ASSERT_EQ(baked->metadata().state(), v1::BAKE_STATE_SUCCEEDED);

  v1::PoseOutputs outputs;
  outputs.set_vertices(true);
  auto poser = client.StartPoseSession(rig->rig().name(), v1::DEFORMER_DQS, outputs);
  ASSERT_TRUE(poser.ok()) << poser.status();
  v1::Pose pose;  // the second bone turned 0.6 rad about z
  pose.add_joints();
  v1::Transform* bent = pose.add_joints();
  for (float x : {0.f, 0.f, static_cast<float>(std::sin(0.3)), static_cast<float>(std::cos(0.3))})
    bent->add_rotation(x);
  auto posed = (*poser)->Step(pose);
  ASSERT_TRUE(posed.ok()) << posed.status();
  auto solver = client.StartSolveSession(started->bake().name());
  ASSERT_TRUE(solver.ok()) << solver.status();
  v1::SolveSessionRequest frame;
  *frame.add_constraints() = testing::FixedJoint(0);
  v1::HandleConstraint* drag = frame.add_constraints();
  drag->set_joint(1);
  drag->set_kind(v1::HandleConstraint::KIND_POSITION);
  for (float x : {0.f, 1.f, 0.f}) drag->add_point(x);
  for (float x : {0.3f, 0.9f, 0.f}) drag->add_target(x);
  ASSERT_TRUE((*solver)->Step(frame).ok());

  ASSERT_EQ(server->Stop(SIGTERM), 0) << server->Output();
  server.reset();
  // The next server comes up half a second after the steps begin: they wait for it.
  auto restart = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    return std::make_unique<ServerProcess>(store, flags);
  });
  auto posed_again = (*poser)->Step(pose);
  auto solved_again = (*solver)->Step(frame);
  server = restart.get();
  ASSERT_TRUE(posed_again.ok()) << posed_again.status();
  EXPECT_EQ(posed_again->SerializeAsString(), posed->SerializeAsString()) << "the same pose of the same rig";
  ASSERT_TRUE(solved_again.ok()) << solved_again.status();
  // The FAST session starts again cold, as a new one does.
  auto fresh = client.StartSolveSession(started->bake().name());
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  auto cold = (*fresh)->Step(frame);
  ASSERT_TRUE(cold.ok()) << cold.status();
  EXPECT_EQ(solved_again->SerializeAsString(), cold->SerializeAsString());
  EXPECT_EQ(server->Stop(SIGTERM), 0) << server->Output();
}

TEST(Client, GivesUpAtTheDeadlineWhenNoServerAnswers) {
  ClientOptions o;
  o.target = "127.0.0.1:" + std::to_string(PickFreePort());
  o.deadline = std::chrono::milliseconds(600);
  o.max_attempts = 100;
  Client client(o);
  const auto t0 = std::chrono::steady_clock::now();
  auto result = client.ListRigs();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(absl::IsUnavailable(result.status()) || absl::IsDeadlineExceeded(result.status())) << result.status();
  EXPECT_LT(seconds, 5.0);
}

TEST(Client, DoesNotRetryInvalidArgument) {
  ServerProcess server(MakeTempDir("store"));
  ClientOptions o;
  o.target = server.address();
  Client client(o);
  v1::Rig rig = RigToProto(testing::MakeTwoBoneTube());
  rig.mutable_mesh()->set_triangles(0, 99999);
  const auto t0 = std::chrono::steady_clock::now();
  auto result = client.CreateRig(rig);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
}

// grpc.health.v1.Health/Check answers SERVING (status = 1) for the server, checked with a
// generic call and the message encoded by hand (the health protos are not installed as C++).
TEST(Server, HealthServiceReportsServing) {
  ServerProcess server(MakeTempDir("store"));
  std::string bytes;
  grpc::Status status =
      HealthCheck(grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()), &bytes);
  ASSERT_TRUE(status.ok()) << status.error_message();
  // HealthCheckResponse { ServingStatus status = 1; }: tag 0x08, value 1 (SERVING).
  EXPECT_EQ(bytes, std::string("\x08\x01", 2));
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
