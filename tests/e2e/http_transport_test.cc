// The front door's HTTP/1.1 transport in the real server binary, from raw sockets: framings that
// could smuggle a request are refused and the connection closed, broken chunked bodies get an
// answer, headers trickled after a keep-alive request are cut at the request timeout,
// Expect: 100-continue is answered, refusals are Connect error JSON and reach an allowed browser
// origin, connections past --http_max_connections get 503, and a server out of file descriptors
// waits for one instead of spinning.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/support/data.h"
#include "tests/support/http_client.h"
#include "tests/support/raw_connection.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::FileBytes;
using ::skinning::testing::HasWholeResponse;
using ::skinning::testing::HttpCall;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::RawConnection;
using ::skinning::testing::RawExchange;
using ::skinning::testing::ServerProcess;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr char kListRigs[] = "/skinning.v1.RigService/ListRigs";
constexpr char kAllowed[] = "https://allowed.example";

// How many responses `got` holds (status lines).
int Responses(const std::string& got) {
  int n = 0;
  for (size_t at = got.find("HTTP/1.1 "); at != std::string::npos; at = got.find("HTTP/1.1 ", at + 1)) ++n;
  return n;
}

std::string Lower(const std::string& s) { return absl::AsciiStrToLower(s); }

class HttpTransportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess(MakeTempDir("store"), {"--http_address=127.0.0.1:0",
                                                       std::string("--http_cors_origins=") + kAllowed,
                                                       "--http_request_timeout_ms=1000", "--web_dir="});
    port_ = server_->http_port();
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->Stop(SIGTERM), 0);
    delete server_;
  }
  void SetUp() override { ASSERT_GT(port_, 0) << server_->Output(); }

  static ServerProcess* server_;
  static int port_;
};
ServerProcess* HttpTransportTest::server_ = nullptr;
int HttpTransportTest::port_ = 0;

// RFC 9112 sections 6.1 and 6.3: a body whose framing is not exactly chunked (or a
// Content-Length) must not be read as the next request. Each request carries a GET in its body:
// served, it would be a smuggled second answer.
TEST_F(HttpTransportTest, TransferEncodingOtherThanChunkedIsRefusedAndTheBodyIsNeverARequest) {
  const std::string smuggled = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  struct Case {
    std::string transfer_encoding;  // the header lines
    int status;
  };
  const std::vector<Case> cases = {
      {"Transfer-Encoding: gzip\r\n", 501},
      {"Transfer-Encoding: identity\r\n", 501},
      {"Transfer-Encoding: gzip, chunked\r\n", 501},
      {"Transfer-Encoding: chunked, chunked\r\n", 400},
      {"Transfer-Encoding: chunked, identity\r\n", 400},
      {"Transfer-Encoding: chunked,\r\n", 200},  // an empty list element is allowed (RFC 9110 5.6.1)
      {"Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", 400},
      {"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", 400},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.transfer_encoding);
    bool closed = false;
    // (Connection: close only where the framing is good: elsewhere it would hide a smuggled request.)
    const std::string rest = c.status == 200 ? "Connection: close\r\n\r\n0\r\n\r\n" : "\r\n" + smuggled;
    const std::string got =
        RawExchange(port_, "POST /healthz HTTP/1.1\r\nHost: x\r\n" + c.transfer_encoding + rest, 3, &closed);
    if (c.status == 200) {
      // Plain chunked (with OWS and an empty element) still frames the body: POST /healthz is a 404.
      EXPECT_THAT(got, StartsWith("HTTP/1.1 404"));
      continue;
    }
    EXPECT_THAT(got, StartsWith(absl::StrCat("HTTP/1.1 ", c.status)));
    EXPECT_THAT(Lower(got), ContainsRegex("transfer.encoding"));  // the message names the header
    EXPECT_EQ(Responses(got), 1) << "the body was served as a request:\n" << got;
    EXPECT_TRUE(closed) << "the connection stays open after a refused framing";
  }
  // Upper case and spaces around the one coding are still chunked.
  bool closed = false;
  const std::string ok = RawExchange(port_,
                                     absl::StrCat("POST ", kListRigs,
                                                  " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                                  "Transfer-Encoding:  CHUNKED \r\nConnection: close\r\n\r\n"
                                                  "2\r\n{}\r\n0\r\n\r\n"),
                                     3, &closed);
  EXPECT_THAT(ok, StartsWith("HTTP/1.1 200"));
}

// Every transport refusal is a Connect error object that a JSON parser takes, with the message
// as sent: a quoted header value keeps its quotes and backslashes (escaped), other bytes are '?'.
TEST_F(HttpTransportTest, RefusalsAreConnectErrorJsonWithTheValueEscaped) {
  struct Case {
    std::string request;
    int status;
    std::string code;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {"POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: g\"z\\ip\r\n\r\n", 501, "unimplemented",
       "Transfer-Encoding 'g\"z\\ip' is not supported"},
      {"POST /healthz HTTP/1.1\r\nHost: x\r\nExpect: \"\\\x80\r\nContent-Length: 2\r\n\r\n{}", 417,
       "invalid_argument", "Expect '\"\\?' is not supported"},
      {absl::StrCat("POST /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ", std::string(20 << 10, 'a'), "\r\n\r\n"), 431,
       "resource_exhausted", "request headers over the limit"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.status);
    bool closed = false;
    const std::string got = RawExchange(port_, c.request, 3, &closed);
    ASSERT_THAT(got, StartsWith(absl::StrCat("HTTP/1.1 ", c.status)));
    EXPECT_THAT(Lower(got), HasSubstr("content-type: application/json"));
    const size_t body = got.find("\r\n\r\n");
    ASSERT_NE(body, std::string::npos);
    const nlohmann::json error = nlohmann::json::parse(got.substr(body + 4), nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(error.is_object()) << "not JSON: " << got.substr(body + 4);
    EXPECT_EQ(error.value("code", ""), c.code);
    EXPECT_THAT(error.value("message", ""), HasSubstr(c.message_part));
    EXPECT_TRUE(closed);
  }
}

TEST_F(HttpTransportTest, BadChunkedBodiesGetA400NamingTheProblem) {
  const std::string head = absl::StrCat("POST ", kListRigs,
                                        " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                        "Transfer-Encoding: chunked\r\nOrigin: ",
                                        kAllowed, "\r\n\r\n");
  for (const std::string body : {"zz\r\n{}\r\n0\r\n\r\n", "ffffffffffffffffff\r\n{}\r\n0\r\n\r\n",
                                 "2\r\n{}XY0\r\n\r\n"}) {
    SCOPED_TRACE(body);
    bool closed = false;
    const std::string got = RawExchange(port_, head + body, 3, &closed);
    EXPECT_THAT(got, StartsWith("HTTP/1.1 400"));
    EXPECT_THAT(got, HasSubstr("malformed chunked body"));
    EXPECT_THAT(got, HasSubstr("invalid_argument"));
    // The page that sent it sees the answer (fix 7 covers every transport refusal).
    EXPECT_THAT(Lower(got), HasSubstr(absl::StrCat("access-control-allow-origin: ", kAllowed)));
    EXPECT_TRUE(closed);
  }
}

// --http_request_timeout_ms (1 s here) bounds a request's headers from their first byte, also
// after a keep-alive request; the idle timeout (60 s) only bounds the wait for that byte.
TEST_F(HttpTransportTest, HeadersTrickledAfterAKeepAliveRequestAreCutAtTheRequestTimeout) {
  const std::string health = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  RawConnection c(port_);
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.Send(health));
  EXPECT_THAT(c.Read(3, HasWholeResponse), StartsWith("HTTP/1.1 200"));
  // Idle for longer than the request timeout: still open, and the next request is served.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_TRUE(c.Send(health));
  EXPECT_THAT(c.Read(3, HasWholeResponse), StartsWith("HTTP/1.1 200"));
  // One byte every 0.25 s: never a whole header, so only the deadline ends it.
  const std::string slow = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
  const auto t0 = std::chrono::steady_clock::now();
  for (char byte : slow) {
    const bool sent = c.Send(std::string(1, byte));
    c.Read(0.25);
    if (!sent || c.closed()) break;
  }
  const double held = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(c.closed()) << "trickled headers held the connection for " << held << " s";
  EXPECT_LT(held, 3.0);
  EXPECT_GT(held, 0.9);
}

TEST_F(HttpTransportTest, Expect100ContinueIsAnsweredBeforeTheBodyAndNotForARefusedOne) {
  const std::string head = absl::StrCat("POST ", kListRigs,
                                        " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n");
  RawConnection c(port_);
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.Send(head + "Content-Length: 2\r\nExpect: 100-continue\r\n\r\n"));
  const auto t0 = std::chrono::steady_clock::now();
  const std::string interim = c.Read(2, HasWholeResponse);
  EXPECT_EQ(interim, "HTTP/1.1 100 Continue\r\n\r\n");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.5);
  ASSERT_TRUE(c.Send("{}"));
  EXPECT_THAT(c.Read(3, HasWholeResponse), StartsWith("HTTP/1.1 200"));
  // Keep-alive goes on, and a request without a body gets no 100.
  ASSERT_TRUE(c.Send("GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n"));
  EXPECT_THAT(c.Read(3, HasWholeResponse), StartsWith("HTTP/1.1 200"));

  // Refused from its Content-Length: 413 at once, no 100, closed.
  bool closed = false;
  const std::string big =
      RawExchange(port_, head + "Content-Length: 999999999\r\nExpect: 100-continue\r\n\r\n", 3, &closed);
  EXPECT_THAT(big, StartsWith("HTTP/1.1 413"));
  EXPECT_THAT(big, Not(HasSubstr("100 Continue")));
  EXPECT_TRUE(closed);
  // An expectation the server cannot meet: 417, closed.
  const std::string other = RawExchange(port_, head + "Content-Length: 2\r\nExpect: 200-ok\r\n\r\n{}", 3, &closed);
  EXPECT_THAT(other, StartsWith("HTTP/1.1 417"));
  EXPECT_THAT(other, HasSubstr("200-ok"));
  EXPECT_TRUE(closed);
}

TEST_F(HttpTransportTest, TransportRefusalsCarryCorsHeadersForAnAllowedOriginOnly) {
  const std::string head = absl::StrCat("POST ", kListRigs, " HTTP/1.1\r\nHost: x\r\n");
  const std::vector<std::pair<std::string, int>> refusals = {
      {"Content-Length: 999999999\r\n\r\n", 413},
      {"Transfer-Encoding: gzip\r\n\r\n", 501},
      {"Transfer-Encoding: chunked, chunked\r\n\r\n", 400},
      {"Content-Length: 2\r\nExpect: 200-ok\r\n\r\n", 417},
  };
  for (const auto& [rest, status] : refusals) {
    for (const std::string origin : {kAllowed, "https://evil.example"}) {
      SCOPED_TRACE(rest + origin);
      bool closed = false;
      const std::string got = RawExchange(port_, head + "Origin: " + origin + "\r\n" + rest, 3, &closed);
      EXPECT_THAT(got, StartsWith(absl::StrCat("HTTP/1.1 ", status)));
      const bool allowed = origin == kAllowed;
      EXPECT_EQ(absl::StrContains(Lower(got), "access-control-allow-origin: " + origin), allowed) << got;
      EXPECT_EQ(absl::StrContains(Lower(got), "access-control-allow-origin"), allowed) << got;
    }
  }
}

// utime + stime of process `pid`, in seconds.
double CpuSeconds(pid_t pid) {
  const std::string stat = FileBytes("/proc/" + std::to_string(pid) + "/stat");
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));  // after "pid (comm) "
  std::string field;
  long ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i)
    if (i >= 14) ticks += std::stol(field);  // fields 14 and 15
  return static_cast<double>(ticks) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

int OpenFiles(pid_t pid) {
  int n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

// RFC 6455 section 4.1: a client waits for the 101 before it sends frames. Bytes that came with the
// upgrade request were read with it and never reached the session (a frame silently lost); they
// are refused with a 400 that says so. A client that waits is served (a ping gets its pong).
TEST_F(HttpTransportTest, FramesSentBeforeThe101AreRefusedNotLost) {
  const std::string upgrade =
      "GET /skinning.v1.PoseService/PoseSession HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
      "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
  // A masked ping with the payload "hi" (mask 0: the payload as is).
  const std::string ping("\x89\x82\x00\x00\x00\x00hi", 8);
  bool closed = false;
  const std::string refused = RawExchange(port_, upgrade + ping, 5, &closed);
  EXPECT_THAT(refused, StartsWith("HTTP/1.1 400"));
  EXPECT_THAT(refused, HasSubstr("before the handshake's 101"));
  EXPECT_THAT(refused, HasSubstr("RFC 6455"));
  EXPECT_THAT(refused, Not(HasSubstr("101 Switching")));
  EXPECT_TRUE(closed);

  RawConnection waits(port_);
  ASSERT_TRUE(waits.Send(upgrade));
  ASSERT_THAT(waits.Read(5, HasWholeResponse), StartsWith("HTTP/1.1 101"));
  ASSERT_TRUE(waits.Send(ping));
  // The pong: FIN + opcode 0xA, unmasked, the same payload.
  const std::string pong = waits.Read(5, [](const std::string& got) { return got.size() >= 4; });
  EXPECT_EQ(pong, std::string("\x8a\x02hi", 4));
}

// Out of descriptors, a connection stays queued and the acceptor ready: accepting again at once
// spun the front-door threads. The server waits (100 ms doubling to 1 s), logs the episode once,
// and serves again as soon as descriptors are free.
// --http_max_connections: connections past the limit (idle ones and WebSockets count) get a 503
// Connect error with Retry-After and are closed; once one closes, the next is served again. The
// limit is logged once per episode.
TEST(HttpAcceptTest, ConnectionsPastTheLimitGet503AndTheNextIsServedOnceOneCloses) {
  const std::string err = MakeTempDir("stderr") + "/server.err";
  ServerProcess server(MakeTempDir("store"), {"--http_address=127.0.0.1:0", "--http_max_connections=3"},
                       {"/bin/sh", "-c", "exec \"$@\" 2>>\"$0\"", err});
  const int port = server.http_port();
  ASSERT_GT(port, 0) << server.Output();
  const std::string healthz = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  // Three keep-alive connections, each answered once (so the server has counted it), held open:
  // two idle, one a WebSocket session.
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 2; ++i) {
    held.push_back(std::make_unique<RawConnection>(port));
    ASSERT_TRUE(held.back()->Send(healthz));
    ASSERT_THAT(held.back()->Read(5, HasWholeResponse), StartsWith("HTTP/1.1 200"));
  }
  held.push_back(std::make_unique<RawConnection>(port));
  ASSERT_TRUE(held.back()->Send(
      "GET /skinning.v1.PoseService/PoseSession HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
      "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"));
  ASSERT_THAT(held.back()->Read(5, HasWholeResponse), StartsWith("HTTP/1.1 101"));

  for (int i = 0; i < 3; ++i) {
    bool closed = false;
    const std::string refused = RawExchange(port, healthz, 5, &closed);
    EXPECT_THAT(refused, StartsWith("HTTP/1.1 503"));
    EXPECT_THAT(Lower(refused), HasSubstr("retry-after: 1"));
    EXPECT_THAT(refused, HasSubstr(R"({"code":"unavailable","message":"the server has 3 connections open)"));
    EXPECT_TRUE(closed);
  }
  // The held connections were not disturbed.
  ASSERT_TRUE(held[0]->Send(healthz));
  EXPECT_THAT(held[0]->Read(5, HasWholeResponse), StartsWith("HTTP/1.1 200"));

  held[1].reset();  // one closes: the server sees the end of stream and frees its place
  std::string got;
  for (int attempt = 0; attempt < 50 && !absl::StartsWith(got, "HTTP/1.1 200"); ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    bool closed = false;
    got = RawExchange(port, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 5, &closed);
  }
  EXPECT_THAT(got, StartsWith("HTTP/1.1 200"));
  held.clear();
  EXPECT_EQ(server.Stop(SIGTERM), 0);
  const std::string log = FileBytes(err);
  size_t logged = 0;
  for (size_t at = log.find("connections open, its limit"); at != std::string::npos;
       at = log.find("connections open, its limit", at + 1))
    ++logged;
  EXPECT_EQ(logged, 1u) << log;
}

TEST(HttpAcceptTest, OutOfFileDescriptorsTheServerWaitsLogsOnceAndRecovers) {
  constexpr int kLimit = 256;
  const std::string err = MakeTempDir("stderr") + "/server.err";
  ServerProcess server(MakeTempDir("store"), {"--http_address=127.0.0.1:0", "--http_request_timeout_ms=60000"},
                       {"/bin/sh", "-c", absl::StrCat("ulimit -n ", kLimit, "; exec \"$@\" 2>>\"$0\""), err});
  const int port = server.http_port();
  ASSERT_GT(port, 0) << server.Output();
  const int free_fds = kLimit - OpenFiles(server.pid());
  ASSERT_GT(free_fds, 16) << "the server needs more than " << kLimit << " descriptors to start";
  // Every free descriptor taken by a silent connection, then a few more queued behind them.
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < free_fds + 4; ++i) {
    held.push_back(std::make_unique<RawConnection>(port));
    ASSERT_TRUE(held.back()->connected()) << i;
  }
  for (int i = 0; i < 50 && OpenFiles(server.pid()) < kLimit; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(OpenFiles(server.pid()), kLimit);
  const double cpu0 = CpuSeconds(server.pid());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const double cpu = CpuSeconds(server.pid()) - cpu0;
  EXPECT_LT(cpu, 0.3) << "the server spent " << cpu << " s of CPU in 1.5 s waiting for a descriptor";

  held.clear();  // the server sees them close and frees their descriptors
  const auto t0 = std::chrono::steady_clock::now();
  auto health = HttpCall(port, "GET", "/healthz", "", {}, 10);
  ASSERT_TRUE(health.ok()) << health.status() << "\nserver stderr:\n" << FileBytes(err);
  EXPECT_EQ(health->status, 200);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 3.0);
  EXPECT_EQ(server.Stop(SIGTERM), 0) << FileBytes(err);
  std::istringstream in(FileBytes(err));
  int lines = 0;
  for (std::string line; std::getline(in, line);) {
    if (!absl::StrContains(line, "cannot accept connections")) continue;
    ++lines;
    EXPECT_THAT(line, HasSubstr("Too many open files"));
  }
  EXPECT_EQ(lines, 1) << "one line per episode";
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
