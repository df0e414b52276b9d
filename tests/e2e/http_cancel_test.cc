// A client that closes its connection cancels its call on the HTTP front door, as gRPC cancels a
// call whose client went away. Watches of a queued bake write nothing until it starts, so
// abandoned ones (a browser tab closed) held their threads until the bake ahead finished; when
// watches ran on the front door's worker pool, the next watch or file waited that long (71 s in a
// probe).
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "client/client.h"
#include "server/convert/convert.h"
#include "tests/support/fixtures.h"
#include "tests/support/http_client.h"
#include "tests/support/raw_connection.h"
#include "tests/support/redis_process.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::ConnectEnvelope;
using ::skinning::testing::ConnectLoopback;
using ::skinning::testing::HttpCall;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::RedisProcess;
using ::skinning::testing::ServerProcess;

v1::BakeOptions Bbw(int resolution) {
  v1::BakeOptions o;
  o.mutable_bbw();
  o.mutable_domain()->set_voxel_resolution(resolution);
  return o;
}

// Opens a WatchBake of `bake` on a raw connection, reads until the first message has begun to
// arrive (the worker is serving it), and returns the socket.
int OpenWatch(int port, const std::string& bake) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return -1;
  const std::string body = ConnectEnvelope(0, "{\"name\":\"" + bake + "\"}");
  const std::string request = "POST /skinning.v1.BakeService/WatchBake HTTP/1.1\r\nHost: x\r\n"
                              "Content-Type: application/connect+json\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body;
  if (send(fd, request.data(), request.size(), 0) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return -1;
  }
  std::string got;
  char buf[4096];
  while (got.find("QUEUED") == std::string::npos) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      close(fd);
      return -1;
    }
    got.append(buf, static_cast<size_t>(n));
  }
  return fd;
}

// The front door on two threads (--http_threads=2), a rig, a bake running on the one bake worker
// and one queued behind it; both are cancelled at the end.
class HttpCancelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(
        MakeTempDir("store"), std::vector<std::string>{"--http_address=127.0.0.1:0", "--web_dir=", "--http_threads=2"});
    port_ = server_->http_port();
    ASSERT_GT(port_, 0) << server_->Output();
    ClientOptions o;
    o.target = server_->address();
    client_ = std::make_unique<Client>(o);
    auto rig = client_->CreateRig(RigToProto(::skinning::testing::MakeTubeForBaking()));
    ASSERT_TRUE(rig.ok()) << rig.status();
    rig_ = rig->rig().name();
    auto running = client_->StartBake(rig_, Bbw(96));  // the one worker's bake
    ASSERT_TRUE(running.ok()) << running.status();
    running_ = running->bake().name();
    auto queued = client_->StartBake(rig_, Bbw(48));
    ASSERT_TRUE(queued.ok()) << queued.status();
    ASSERT_EQ(queued->bake().metadata().state(), v1::BAKE_STATE_QUEUED);
    queued_ = queued->bake().name();
  }
  void TearDown() override {
    for (const std::string& bake : {running_, queued_}) {
      if (!bake.empty()) {
        EXPECT_TRUE(client_->CancelBake(bake).ok()) << bake;
      }
    }
  }

  // A watch of a bake that does not exist: NOT_FOUND at once, once a thread serves it.
  absl::StatusOr<::skinning::testing::HttpResponse> WatchMissingBake(double timeout_s) {
    const std::string missing = rig_ + "/bakes/bake-00000000000000000000000000000000";
    return HttpCall(port_, "POST", "/skinning.v1.BakeService/WatchBake",
                    ConnectEnvelope(0, "{\"name\":\"" + missing + "\"}"),
                    {{"Content-Type", "application/connect+json"}}, timeout_s);
  }

  std::unique_ptr<ServerProcess> server_;
  int port_ = 0;
  std::unique_ptr<Client> client_;
  std::string rig_, running_, queued_;
};

TEST_F(HttpCancelTest, ClosedWatchesFreeTheirWorkersWhileTheirBakeIsStillQueued) {

  // As many watches as the front door has workers (--http_threads=2), each served, then closed.
  for (int i = 0; i < 2; ++i) {
    const int fd = OpenWatch(port_, queued_);
    ASSERT_GE(fd, 0) << "watch " << i;
    close(fd);
  }
  // A further watch needs a worker: it is answered (a bake that does not exist: NOT_FOUND at once)
  // while the bake the closed watches waited for has not even started.
  auto answered = WatchMissingBake(120);
  ASSERT_TRUE(answered.ok()) << answered.status();
  EXPECT_EQ(answered->status, 200);
  EXPECT_NE(answered->body.find("not_found"), std::string::npos) << answered->body;
  auto still = client_->GetBake(queued_);
  ASSERT_TRUE(still.ok()) << still.status();
  EXPECT_EQ(still->metadata().state(), v1::BAKE_STATE_QUEUED)
      << "the closed watches held the workers until their bake started";
}

// Watches that stay open (browser tabs watching a bake) must not hold the front door's workers
// either: with --http_threads=2, three open watches held both workers, and a fourth watch (or a
// file of the viewer) got no answer until one closed. Each watch now runs on a thread of its own.
TEST_F(HttpCancelTest, OpenWatchesBeyondTheWorkerCountDoNotHoldBackOtherCalls) {
  std::vector<int> open;
  for (int i = 0; i < 4; ++i) {  // twice the workers, each served its first message
    const int fd = OpenWatch(port_, queued_);
    ASSERT_GE(fd, 0) << "watch " << i << " was not served while " << i << " were open";
    open.push_back(fd);
  }
  auto answered = WatchMissingBake(10);
  ASSERT_TRUE(answered.ok()) << answered.status();
  EXPECT_NE(answered->body.find("not_found"), std::string::npos) << answered->body;
  for (int fd : open) close(fd);
}

// A watch open when the server shuts down ends with its end-of-stream message, UNAVAILABLE
// ("watch again elsewhere"), and the chunked body's last chunk: a Connect client tells a draining
// replica from a network failure by it. It used to be cut off (curl: "transfer closed with
// outstanding read data remaining", chromium: ERR_INCOMPLETE_CHUNKED_ENCODING) whenever the
// watch wrote its end after the listener had closed: with no other socket waiting, the front
// door's event loop had no work left and its threads returned, so the end was never written. A
// watch of the Redis queue polls every 100 ms, so its end comes late (the local queue's ends as
// the shutdown begins); an api replica leaves the bake queued; the gRPC client is gone (an open
// gRPC connection held the shutdown up to 100 ms), as for a browser's watch.
TEST(HttpShutdownTest, AWatchOpenAtShutdownEndsWithUnavailable) {
  RedisProcess redis;
  ServerProcess server(MakeTempDir("store"), {"--http_address=127.0.0.1:0", "--web_dir=", "--role=api",
                                              "--redis=" + redis.address()});
  const int port = server.http_port();
  ASSERT_GT(port, 0) << server.Output();
  std::string bake;
  {
    ClientOptions o;
    o.target = server.address();
    Client client(o);
    auto rig = client.CreateRig(RigToProto(::skinning::testing::MakeTubeForBaking()));
    ASSERT_TRUE(rig.ok()) << rig.status();
    auto queued = client.StartBake(rig->rig().name(), Bbw(48));
    ASSERT_TRUE(queued.ok()) << queued.status();
    bake = queued->bake().name();
  }
  const int fd = OpenWatch(port, bake);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(server.Stop(SIGTERM), 0) << server.Output();
  std::string rest;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) rest.append(buf, static_cast<size_t>(n));
  close(fd);
  EXPECT_NE(rest.find("{\"error\":{\"code\":\"unavailable\",\"message\":\"server is shutting down; watch again elsewhere\"}}"),
            std::string::npos)
      << rest;
  EXPECT_TRUE(absl::EndsWith(rest, "\r\n0\r\n\r\n")) << "no last chunk: " << rest;
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
