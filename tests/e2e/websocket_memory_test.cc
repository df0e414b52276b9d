// Clients that send WebSocket frames and stop reading. Each session held up to 16 answers that its
// client had not taken, and nothing bounded the sum over sessions: 100 such connections held
// 136 MB of CesiumMan answers (337 MB as JSON). Now the answers computed and not sent are bounded
// by --http_websocket_unsent_mb over every session, plus at most one answer each; a client that
// reads again gets every answer, in order.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "client/client.h"
#include "core/util/process_stats.h"
#include "tests/support/grid_glb.h"
#include "tests/support/http_client.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::GridGlb;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::ServerProcess;
using ::skinning::testing::WebSocketClient;

TEST(WebSocketMemory, ClientsThatStopReadingHoldTheBudgetPlusOneAnswerEachAndLoseNothing) {
  constexpr int kBudgetMb = 2;
  // Under AddressSanitizer (scripts/sanitize.sh asan) freed memory waits in a quarantine and stays
  // resident (43 MB here): the server starts without one, so that its memory shows what it holds.
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string saved = asan != nullptr ? asan : "";
  setenv("ASAN_OPTIONS", (saved.empty() ? std::string() : saved + ":").append("quarantine_size_mb=0").c_str(), 1);
  ServerProcess server(MakeTempDir("store"), {"--http_address=127.0.0.1:0", "--web_dir=",
                                              "--http_websocket_unsent_mb=" + std::to_string(kBudgetMb)});
  if (asan != nullptr) {
    setenv("ASAN_OPTIONS", saved.c_str(), 1);
  } else {
    unsetenv("ASAN_OPTIONS");
  }
  const int http = server.http_port();
  ASSERT_GT(http, 0) << server.Output();
  ClientOptions options;
  options.target = server.address();
  options.deadline = std::chrono::seconds(120);
  Client client(options);
  constexpr int kSide = 320;  // 102,400 vertices: each answer carries 1.2 MB of positions
  auto created = client.CreateRigFromGltf(GridGlb(kSide));
  ASSERT_TRUE(created.ok()) << created.status();
  const size_t answer_bytes = size_t{kSide} * kSide * 3 * sizeof(float);
  // Frame i of a session at rest: the first names the rig and asks for the vertices.
  auto frame = [&created](int i) {
    v1::PoseSessionRequest req;
    if (i == 0) {
      req.set_rig(created->rig().name());
      req.mutable_outputs()->set_vertices(true);
    }
    req.set_sequence(i);
    return req.SerializeAsString();
  };

  // Warm the server's rig cache and allocator with the same answers before measuring.
  {
    auto warm = WebSocketClient::Open(http, "/skinning.v1.PoseService/PoseSession");
    ASSERT_TRUE(warm.ok()) << warm.status();
    for (int i = 0; i < 4; ++i) {
      ASSERT_TRUE((*warm)->Send(frame(i), false).ok());
      ASSERT_TRUE((*warm)->Receive().ok());
    }
    (*warm)->Close();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const int64_t before = ResidentBytes(server.pid());
  ASSERT_GT(before, 0);

  // Without the budget each of these sessions computes all 16 answers (19 MB) and keeps what the
  // kernel's socket buffers do not take (a few MB per connection on loopback).
  constexpr int kClients = 4, kFrames = 16;
  std::vector<std::unique_ptr<WebSocketClient>> clients;
  for (int c = 0; c < kClients; ++c) {
    auto ws = WebSocketClient::Open(http, "/skinning.v1.PoseService/PoseSession");
    ASSERT_TRUE(ws.ok()) << ws.status();
    for (int i = 0; i < kFrames; ++i) ASSERT_TRUE((*ws)->Send(frame(i), false).ok());
    clients.push_back(*std::move(ws));
  }
  // Until the server has computed what it will: its memory stops growing for a second.
  int64_t held = 0;
  for (int stable = 0, rounds = 0; stable < 10 && rounds < 300; ++rounds) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const int64_t now = ResidentBytes(server.pid()) - before;
    stable = now > held ? 0 : stable + 1;
    held = std::max(held, now);
  }
  std::printf("server memory grew by %.1f MB while %d clients did not read (budget %d MB)\n", held / double(1 << 20),
              kClients, kBudgetMb);
  const double bound_mb = kBudgetMb + kClients * 2.0 * answer_bytes / (1 << 20);  // one answer each, twice over
  EXPECT_LT(held / double(1 << 20), bound_mb + 8)
      << "the server's resident memory grew by " << held / double(1 << 20) << " MB while " << kClients
      << " clients did not read";

  // Reading again, every client gets all of its answers, in order.
  for (int c = 0; c < kClients; ++c) {
    for (int i = 0; i < kFrames; ++i) {
      auto payload = clients[c]->Receive();
      ASSERT_TRUE(payload.ok()) << "client " << c << " frame " << i << ": " << payload.status();
      v1::PoseSessionResponse resp;
      ASSERT_TRUE(resp.ParseFromString(*payload));
      EXPECT_EQ(resp.sequence(), i) << "client " << c;
      EXPECT_EQ(resp.frame().vertices_size(), kSide * kSide * 3) << "client " << c << " frame " << i;
    }
    clients[c]->Close();
  }
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
