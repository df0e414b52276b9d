// The client library against the real server binary.
#include "client/client.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <thread>

#include <gtest/gtest.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "server/convert/convert.h"
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
