// The HTTP front door of the real server binary: Connect (JSON and binary) and WebSocket calls
// answer exactly what the gRPC calls answer, and bad input gets clear errors while the server
// keeps serving both doors.
#include <signal.h>

#include <chrono>
#include <fstream>
#include <thread>
#include <memory>

#include <gmock/gmock.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include "absl/strings/str_split.h"
#include "client/client.h"
#include "server/convert/convert.h"
#include "skinning/v1/bake_service.pb.h"
#include "skinning/v1/fast_service.pb.h"
#include "skinning/v1/pose_service.pb.h"
#include "skinning/v1/rig_service.pb.h"
#include "tests/support/data.h"
#include "tests/support/fast_constraints.h"
#include "tests/support/fixtures.h"
#include "tests/support/http_client.h"
#include "tests/support/long_fast_frame.h"
#include "tests/support/proto_bytes.h"
#include "tests/support/raw_connection.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_files.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::ConnectStream;
using ::skinning::testing::ConnectUnary;
using ::skinning::testing::DataPath;
using ::skinning::testing::DeterministicBytes;
using ::skinning::testing::FileBytes;
using ::skinning::testing::FoldNegativeZeros;
using ::skinning::testing::HttpCall;
using ::skinning::testing::LongFastFrame;
using ::skinning::testing::LongFastModel;
using ::skinning::testing::BakeLongFastModel;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::HasWholeResponse;
using ::skinning::testing::RawConnection;
using ::skinning::testing::RawExchange;
using ::skinning::testing::ServerProcess;
using ::skinning::testing::WebSocketClient;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kRigService[] = "/skinning.v1.RigService/";
constexpr char kPoseService[] = "/skinning.v1.PoseService/";
constexpr char kBakeService[] = "/skinning.v1.BakeService/";
constexpr char kFastService[] = "/skinning.v1.FastService/";

// A gRPC answer as a JSON answer of the same call reads back through protobuf's parser: every -0
// the server wrote comes back as +0 (FoldNegativeZeros).
template <typename M>
M AsRead(M m, bool json) {
  if (json) FoldNegativeZeros(&m);
  return m;
}

class HttpTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess(MakeTempDir("store"), {"--http_address=127.0.0.1:0",
                                                       "--http_cors_origins=https://allowed.example",
                                                       "--http_request_timeout_ms=1000", "--web_dir="});
    ClientOptions o;
    o.target = server_->address();
    o.deadline = std::chrono::seconds(120);
    client_ = new Client(o);
    port_ = server_->http_port();
  }
  static void TearDownTestSuite() {
    delete client_;
    EXPECT_EQ(server_->Stop(SIGTERM), 0);
    delete server_;
  }
  void SetUp() override { ASSERT_GT(port_, 0) << server_->Output(); }

  // RiggedSimple registered through gRPC from its .glb bytes.
  v1::CreateRigResponse RegisterSample() {
    const std::string path = DataPath("gltf/RiggedSimple/RiggedSimple.glb");
    if (!std::filesystem::exists(path)) {
      ADD_FAILURE() << "missing " << path;
      return {};
    }
    auto r = client_->CreateRigFromGltf(FileBytes(path));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : v1::CreateRigResponse();
  }

  static ServerProcess* server_;
  static Client* client_;
  static int port_;
};
ServerProcess* HttpTest::server_ = nullptr;
Client* HttpTest::client_ = nullptr;
int HttpTest::port_ = 0;

TEST_F(HttpTest, RegisterPoseAndClipAnswerTheGrpcFloatsBitForBit) {
  SKINNING_REQUIRE_DATA(DataPath("gltf/RiggedSimple/RiggedSimple.glb"));
  const v1::CreateRigResponse grpc = RegisterSample();
  ASSERT_GT(grpc.animations_size(), 0);
  v1::CreateRigRequest create;
  create.set_gltf(FileBytes(DataPath("gltf/RiggedSimple/RiggedSimple.glb")));
  for (bool json : {true, false}) {
    SCOPED_TRACE(json ? "JSON" : "binary");
    v1::CreateRigResponse http;
    ASSERT_TRUE(ConnectUnary(port_, std::string(kRigService) + "CreateRig", create, &http, json).ok());
    EXPECT_EQ(http.rig().name(), grpc.rig().name());
    EXPECT_FALSE(http.created());
    ASSERT_EQ(http.animations_size(), grpc.animations_size());
    for (int a = 0; a < http.animations_size(); ++a)
      EXPECT_EQ(DeterministicBytes(http.animations(a)), DeterministicBytes(AsRead(grpc.animations(a), json)));
  }

  const v1::AnimationClip& clip = grpc.animations(0);
  v1::PoseRequest pose;
  pose.set_rig(grpc.rig().name());
  pose.set_deformer(v1::DEFORMER_DQS);
  *pose.mutable_pose() = clip.poses(clip.poses_size() / 2);
  pose.mutable_outputs()->set_vertices(true);
  pose.mutable_outputs()->set_normals(true);
  pose.mutable_outputs()->set_transforms(true);
  auto want = client_->Pose(pose);
  ASSERT_TRUE(want.ok()) << want.status();
  v1::PoseClipRequest clip_req;
  clip_req.set_rig(grpc.rig().name());
  for (const v1::Pose& p : clip.poses()) *clip_req.add_poses() = p;
  clip_req.mutable_outputs()->set_vertices(true);
  auto want_clip = client_->PoseClip(clip_req);
  ASSERT_TRUE(want_clip.ok()) << want_clip.status();
  for (bool json : {true, false}) {
    SCOPED_TRACE(json ? "JSON" : "binary");
    v1::PoseResponse got;
    ASSERT_TRUE(ConnectUnary(port_, std::string(kPoseService) + "Pose", pose, &got, json).ok());
    EXPECT_GT(got.frame().vertices_size(), 0);
    EXPECT_EQ(DeterministicBytes(got.frame()), DeterministicBytes(AsRead(*want, json)));
    v1::PoseClipResponse got_clip;
    ASSERT_TRUE(ConnectUnary(port_, std::string(kPoseService) + "PoseClip", clip_req, &got_clip, json).ok());
    EXPECT_EQ(got_clip.frames_size(), clip.poses_size());
    EXPECT_EQ(DeterministicBytes(got_clip), DeterministicBytes(AsRead(*want_clip, json)));
  }
}

TEST_F(HttpTest, BakeWatchWeightsAndFastSolveAnswerTheGrpcFloatsBitForBit) {
  auto rig = client_->CreateRig(RigToProto(::skinning::testing::MakeTubeForBaking()));
  ASSERT_TRUE(rig.ok()) << rig.status();
  // Start over JSON; watch over the Connect stream (JSON, then binary once it is done).
  v1::StartBakeRequest start;
  start.set_parent(rig->rig().name());
  start.mutable_options()->mutable_bbw();
  v1::StartBakeResponse started;
  ASSERT_TRUE(ConnectUnary(port_, std::string(kBakeService) + "StartBake", start, &started, true).ok());
  v1::WatchBakeRequest watch;
  watch.set_name(started.bake().name());
  std::vector<double> progress;
  v1::Bake last;
  absl::Status end = ConnectStream(
      port_, std::string(kBakeService) + "WatchBake", watch, v1::Bake::default_instance(),
      [&](const google::protobuf::Message& m) {
        last.CopyFrom(m);
        progress.push_back(last.metadata().progress_fraction());
      },
      true);
  ASSERT_TRUE(end.ok()) << end;
  ASSERT_FALSE(progress.empty());
  for (size_t i = 1; i < progress.size(); ++i) EXPECT_GE(progress[i], progress[i - 1]);
  EXPECT_EQ(last.metadata().state(), v1::BAKE_STATE_SUCCEEDED) << last.error().message();
  EXPECT_EQ(progress.back(), 1.0);
  int binary_messages = 0;
  ASSERT_TRUE(ConnectStream(
                  port_, std::string(kBakeService) + "WatchBake", watch, v1::Bake::default_instance(),
                  [&](const google::protobuf::Message& m) {
                    ++binary_messages;
                    EXPECT_EQ(static_cast<const v1::Bake&>(m).metadata().state(), v1::BAKE_STATE_SUCCEEDED);
                  },
                  false)
                  .ok());
  EXPECT_EQ(binary_messages, 1);

  auto weights = client_->GetWeights(started.bake().name(), v1::WEIGHTS_FORMAT_DENSE);
  ASSERT_TRUE(weights.ok()) << weights.status();
  v1::GetWeightsRequest get;
  get.set_bake(started.bake().name());
  get.set_format(v1::WEIGHTS_FORMAT_DENSE);
  for (bool json : {true, false}) {
    v1::GetWeightsResponse got;
    ASSERT_TRUE(ConnectUnary(port_, std::string(kBakeService) + "GetWeights", get, &got, json).ok());
    EXPECT_EQ(DeterministicBytes(got), DeterministicBytes(AsRead(*weights, json))) << (json ? "JSON" : "binary");
  }

  // FAST: a model baked through gRPC, solved through both doors.
  v1::BakeOptions fast;
  fast.mutable_fast_model()->set_weights_bake(started.bake().name());
  auto fast_started = client_->StartBake(rig->rig().name(), fast);
  ASSERT_TRUE(fast_started.ok()) << fast_started.status();
  auto fast_done = client_->WatchBake(fast_started->bake().name(), [](const v1::Bake&) { return true; });
  ASSERT_TRUE(fast_done.ok()) << fast_done.status();
  ASSERT_EQ(fast_done->metadata().state(), v1::BAKE_STATE_SUCCEEDED) << fast_done->error().message();
  v1::SolveRequest solve;
  solve.set_bake(fast_started->bake().name());
  *solve.add_constraints() = testing::FixedJoint(0);
  auto* tip = solve.add_constraints();
  tip->set_joint(1);
  tip->set_kind(v1::HandleConstraint::KIND_POSITION);
  for (float v : {1.9f, 0.f, 0.f}) tip->add_point(v);
  for (float v : {1.6f, 0.6f, 0.f}) tip->add_target(v);
  solve.mutable_outputs()->set_vertices(true);
  auto want = client_->Solve(solve);
  ASSERT_TRUE(want.ok()) << want.status();
  for (bool json : {true, false}) {
    v1::SolveResponse got;
    ASSERT_TRUE(ConnectUnary(port_, std::string(kFastService) + "Solve", solve, &got, json).ok());
    EXPECT_EQ(DeterministicBytes(got.solution()), DeterministicBytes(AsRead(*want, json))) << (json ? "JSON" : "binary");
  }
}

TEST_F(HttpTest, WebSocketPoseSessionAnswersThousandFramesInOrder) {
  SKINNING_REQUIRE_DATA(DataPath("gltf/RiggedSimple/RiggedSimple.glb"));
  const v1::CreateRigResponse rig = RegisterSample();
  const v1::AnimationClip& clip = rig.animations(0);
  auto ws = WebSocketClient::Open(port_, std::string(kPoseService) + "PoseSession");
  ASSERT_TRUE(ws.ok()) << ws.status();
  constexpr int kFrames = 1000, kWindow = 8;
  auto frame = [&](int i) {
    v1::PoseSessionRequest req;
    if (i == 0) req.set_rig(rig.rig().name());
    req.set_sequence(i);
    *req.mutable_pose() = clip.poses(i % clip.poses_size());
    if (i == 0) req.mutable_outputs()->set_vertices(true);
    return req;
  };
  int received = 0;
  for (int sent = 0; sent < kFrames;) {
    for (int w = 0; w < kWindow && sent < kFrames; ++w, ++sent) ASSERT_TRUE((*ws)->Send(frame(sent).SerializeAsString(), false).ok());
    while (received < sent) {
      bool text = true;
      auto payload = (*ws)->Receive(&text);
      ASSERT_TRUE(payload.ok()) << payload.status();
      EXPECT_FALSE(text);
      v1::PoseSessionResponse resp;
      ASSERT_TRUE(resp.ParseFromString(*payload));
      ASSERT_EQ(resp.sequence(), received) << "answers out of order";
      if (received % 97 == 0) {
        v1::PoseRequest same;
        same.set_rig(rig.rig().name());
        *same.mutable_pose() = clip.poses(received % clip.poses_size());
        same.mutable_outputs()->set_vertices(true);
        auto want = client_->Pose(same);
        ASSERT_TRUE(want.ok()) << want.status();
        EXPECT_EQ(DeterministicBytes(resp.frame()), DeterministicBytes(*want)) << "frame " << received;
      }
      ++received;
    }
  }
  EXPECT_EQ(received, kFrames);
  (*ws)->Close();

  // JSON text frames get JSON answers.
  auto text_ws = WebSocketClient::Open(port_, std::string(kPoseService) + "PoseSession");
  ASSERT_TRUE(text_ws.ok()) << text_ws.status();
  for (int i = 0; i < 3; ++i) {
    std::string json;
    ASSERT_TRUE(google::protobuf::util::MessageToJsonString(frame(i), &json).ok());
    ASSERT_TRUE((*text_ws)->Send(json, true).ok());
    bool text = false;
    auto payload = (*text_ws)->Receive(&text);
    ASSERT_TRUE(payload.ok()) << payload.status();
    EXPECT_TRUE(text);
    v1::PoseSessionResponse resp;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(*payload, &resp).ok()) << *payload;
    EXPECT_EQ(resp.sequence(), i);
    EXPECT_GT(resp.frame().vertices_size(), 0);
  }
}

TEST_F(HttpTest, BadInputGetsClearErrorsAndBothDoorsKeepServing) {
  const std::string pose = std::string(kPoseService) + "Pose";
  // Malformed JSON: the message names the field.
  auto typed = HttpCall(port_, "POST", pose, R"({"rig": 5})", {{"Content-Type", "application/json"}});
  ASSERT_TRUE(typed.ok()) << typed.status();
  EXPECT_EQ(typed->status, 400);
  EXPECT_THAT(typed->body, HasSubstr("invalid_argument"));
  EXPECT_THAT(typed->body, HasSubstr("rig"));
  auto unknown_field = HttpCall(port_, "POST", pose, R"({"rigg": "rigs/x"})", {{"Content-Type", "application/json"}});
  ASSERT_TRUE(unknown_field.ok());
  EXPECT_EQ(unknown_field->status, 400);
  EXPECT_THAT(unknown_field->body, HasSubstr("rigg"));
  auto broken = HttpCall(port_, "POST", pose, R"({"rig":)", {{"Content-Type", "application/json"}});
  ASSERT_TRUE(broken.ok());
  EXPECT_EQ(broken->status, 400);
  // Unknown method, wrong verb, wrong content type.
  auto unknown = HttpCall(port_, "POST", "/skinning.v1.PoseService/Posed", "{}", {{"Content-Type", "application/json"}});
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->status, 404);
  EXPECT_THAT(unknown->body, HasSubstr("unimplemented"));
  auto get = HttpCall(port_, "GET", pose);
  ASSERT_TRUE(get.ok());
  EXPECT_EQ(get->status, 405);
  auto text = HttpCall(port_, "POST", pose, "{}", {{"Content-Type", "text/plain"}});
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->status, 415);
  EXPECT_THAT(text->headers["accept-post"], HasSubstr("application/json"));
  // A body over the limit is refused from its Content-Length, before it is sent.
  bool closed = false;
  const std::string big = RawExchange(
      port_, "POST " + pose + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 999999999\r\n\r\n",
      5, &closed);
  EXPECT_THAT(big, HasSubstr("413"));
  EXPECT_THAT(big, HasSubstr("over the limit"));
  // Headers never finished: cut off after the request timeout (1 s here).
  const auto t0 = std::chrono::steady_clock::now();
  const std::string slow = RawExchange(port_, "POST " + pose + " HTTP/1.1\r\nHost: x\r\n", 10, &closed);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(closed) << "the server kept a client that never finished its headers";
  EXPECT_LT(waited, 5.0);
  // CORS: an allowed origin gets its preflight and its headers; another gets 403 and none.
  auto preflight = HttpCall(port_, "OPTIONS", pose, "",
                            {{"Origin", "https://allowed.example"}, {"Access-Control-Request-Method", "POST"},
                             {"Access-Control-Request-Headers", "content-type,connect-protocol-version"}});
  ASSERT_TRUE(preflight.ok());
  EXPECT_EQ(preflight->status, 204);
  EXPECT_EQ(preflight->headers["access-control-allow-origin"], "https://allowed.example");
  EXPECT_THAT(preflight->headers["access-control-allow-methods"], HasSubstr("POST"));
  EXPECT_THAT(preflight->headers["access-control-allow-headers"], HasSubstr("Connect-Protocol-Version"));
  // The headers gRPC-Web clients send are allowed too (Google's grpc-web and connect-web's
  // gRPC-Web transport send X-Grpc-Web, X-User-Agent and, with a deadline, Grpc-Timeout).
  for (const char* header : {"X-Grpc-Web", "X-User-Agent", "Grpc-Timeout", "Grpc-Encoding", "Grpc-Accept-Encoding"})
    EXPECT_THAT(preflight->headers["access-control-allow-headers"], HasSubstr(header));
  auto allowed = HttpCall(port_, "POST", std::string(kRigService) + "ListRigs", "{}",
                          {{"Content-Type", "application/json"}, {"Origin", "https://allowed.example"}});
  ASSERT_TRUE(allowed.ok());
  EXPECT_EQ(allowed->status, 200);
  EXPECT_EQ(allowed->headers["access-control-allow-origin"], "https://allowed.example");
  for (const char* method : {"OPTIONS", "POST"}) {
    auto evil = HttpCall(port_, method, std::string(kRigService) + "ListRigs", "{}",
                         {{"Content-Type", "application/json"}, {"Origin", "https://evil.example"}});
    ASSERT_TRUE(evil.ok());
    EXPECT_EQ(evil->status, 403) << method;
    EXPECT_EQ(evil->headers.count("access-control-allow-origin"), 0u) << method;
  }
  // Garbage WebSocket frames close the session with 1008 and say why; a session naming an
  // unknown rig closes with 4000 + NOT_FOUND.
  auto ws = WebSocketClient::Open(port_, std::string(kPoseService) + "PoseSession");
  ASSERT_TRUE(ws.ok()) << ws.status();
  ASSERT_TRUE((*ws)->Send(std::string("\xff\xff\xff\x01garbage", 11), false).ok());
  EXPECT_FALSE((*ws)->Receive().ok());
  EXPECT_EQ((*ws)->close_code(), 1008);
  EXPECT_THAT((*ws)->close_reason(), HasSubstr("frame 1"));
  auto missing = WebSocketClient::Open(port_, std::string(kPoseService) + "PoseSession");
  ASSERT_TRUE(missing.ok());
  v1::PoseSessionRequest first;
  first.set_rig("rigs/rig-00000000000000000000000000000000");
  ASSERT_TRUE((*missing)->Send(first.SerializeAsString(), false).ok());
  EXPECT_FALSE((*missing)->Receive().ok());
  EXPECT_EQ((*missing)->close_code(), 4000 + static_cast<int>(absl::StatusCode::kNotFound));
  // A message sent in parts is answered once whole; one begun and never finished closes the
  // session with 1008 after the request timeout (1 s here), as an unfinished body is cut off. It
  // was held for as long as the client answered pings (4 such of 50 MiB held 200 MB).
  {
    auto tube = client_->CreateRig(RigToProto(::skinning::testing::MakeTwoBoneTube()));
    ASSERT_TRUE(tube.ok()) << tube.status();
    auto parts = WebSocketClient::Open(port_, std::string(kPoseService) + "PoseSession");
    ASSERT_TRUE(parts.ok()) << parts.status();
    v1::PoseSessionRequest request;
    request.set_rig(tube->rig().name());
    const std::string bytes = request.SerializeAsString();
    ASSERT_TRUE((*parts)->SendPart(bytes.substr(0, 5), false, false).ok());
    ASSERT_TRUE((*parts)->SendPart(bytes.substr(5), false, true).ok());
    auto whole = (*parts)->Receive();
    EXPECT_TRUE(whole.ok()) << whole.status();
    ASSERT_TRUE((*parts)->SendPart(bytes.substr(0, 5), false, false).ok());
    const auto t0 = std::chrono::steady_clock::now();
    auto unfinished = (*parts)->Receive();  // answers the server's pings meanwhile
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_TRUE(absl::IsNotFound(unfinished.status())) << unfinished.status();
    EXPECT_EQ((*parts)->close_code(), 1008);
    EXPECT_THAT((*parts)->close_reason(), HasSubstr("--http_request_timeout_ms"));
    EXPECT_LT(waited, 5.0);
  }
  auto not_ws = HttpCall(port_, "GET", std::string(kPoseService) + "PoseSession");
  ASSERT_TRUE(not_ws.ok());
  EXPECT_EQ(not_ws->status, 404);

  // Both doors still serve.
  auto health = HttpCall(port_, "GET", "/healthz");
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(health->status, 200);
  EXPECT_TRUE(client_->ListRigs().ok());
}

TEST(HttpAuthTest, BearerTokensAndTenantsAsForGrpc) {
  const std::string dir = MakeTempDir("auth");
  const std::string tokens = dir + "/tokens";
  {
    std::ofstream f(tokens);
    f << "secret-a tenant-a\nsecret-b tenant-b\n";
  }
  ServerProcess server(dir + "/store", {"--http_address=127.0.0.1:0", "--auth_tokens=" + tokens});
  const int port = server.http_port();
  ASSERT_GT(port, 0);
  const std::string list = std::string(kRigService) + "ListRigs";
  auto none = HttpCall(port, "POST", list, "{}", {{"Content-Type", "application/json"}});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->status, 401);
  EXPECT_THAT(none->body, HasSubstr("unauthenticated"));
  auto wrong = HttpCall(port, "POST", list, "{}", {{"Content-Type", "application/json"}, {"Authorization", "Bearer nope"}});
  ASSERT_TRUE(wrong.ok());
  EXPECT_EQ(wrong->status, 401);
  // Tenant a's rig is not tenant b's.
  v1::CreateRigRequest create;
  *create.mutable_rig() = RigToProto(::skinning::testing::MakeTwoBoneTube());
  v1::CreateRigResponse created;
  ASSERT_TRUE(ConnectUnary(port, std::string(kRigService) + "CreateRig", create, &created, false,
                           {{"Authorization", "Bearer secret-a"}})
                  .ok());
  v1::GetRigRequest get;
  get.set_name(created.rig().name());
  v1::Rig rig;
  EXPECT_TRUE(ConnectUnary(port, std::string(kRigService) + "GetRig", get, &rig, true, {{"Authorization", "Bearer secret-a"}}).ok());
  absl::Status other =
      ConnectUnary(port, std::string(kRigService) + "GetRig", get, &rig, true, {{"Authorization", "Bearer secret-b"}});
  EXPECT_TRUE(absl::IsPermissionDenied(other) || absl::IsNotFound(other)) << other;
  // WebSocket sessions: the token as a header or as ?access_token= (browsers cannot set headers).
  EXPECT_FALSE(WebSocketClient::Open(port, std::string(kPoseService) + "PoseSession").ok());
  auto ws = WebSocketClient::Open(port, std::string(kPoseService) + "PoseSession?access_token=secret-a");
  ASSERT_TRUE(ws.ok()) << ws.status();
  v1::PoseSessionRequest first;
  first.set_rig(created.rig().name());
  first.mutable_outputs()->set_vertices(true);
  ASSERT_TRUE((*ws)->Send(first.SerializeAsString(), false).ok());
  auto answer = (*ws)->Receive();
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(server.Stop(SIGTERM), 0);
}

// A browser sends ?access_token= through encodeURIComponent: a base64 token's + / = arrive as
// %2B %2F %3D and must be decoded; a plus sent as is stays a plus (tokens have no spaces).
TEST(HttpAuthTest, QueryTokensArePercentDecoded) {
  const std::string dir = MakeTempDir("auth");
  {
    std::ofstream f(dir + "/tokens");
    f << "tok+en/with=b64 tenant-a\n";
  }
  ServerProcess server(dir + "/store", {"--http_address=127.0.0.1:0", "--auth_tokens=" + dir + "/tokens"});
  const int port = server.http_port();
  ASSERT_GT(port, 0);
  const std::string session = std::string(kPoseService) + "PoseSession?access_token=";
  for (const char* token : {"tok%2Ben%2Fwith%3Db64", "tok%2ben%2fwith%3db64", "tok+en/with=b64"}) {
    auto ws = WebSocketClient::Open(port, session + token);
    EXPECT_TRUE(ws.ok()) << token << ": " << ws.status();
  }
  // Refused upgrades, read raw (Beast's client does not keep the refusal's status).
  auto upgrade = [&](const std::string& token) {
    RawConnection c(port);
    c.Send("GET " + session + token +
           " HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n");
    return c.Read(5, HasWholeResponse);
  };
  EXPECT_THAT(upgrade("tok%2Ben%2Fwith%3Db64"), StartsWith("HTTP/1.1 101"));
  EXPECT_THAT(upgrade("tok%20en%2Fwith%3Db64"), StartsWith("HTTP/1.1 401"));  // a space is not a plus
  const std::string malformed = upgrade("tok%2");
  EXPECT_THAT(malformed, StartsWith("HTTP/1.1 400"));
  EXPECT_THAT(malformed, HasSubstr("not a percent-escape"));
  EXPECT_EQ(server.Stop(SIGTERM), 0);
}

// RFC 6455 4.2.1: a key that is not the base64 of 16 bytes gets 400 and no session (Beast alone
// upgrades any key of up to 24 characters).
TEST(HttpWebSocketTest, AnUpgradeWithAMalformedKeyIsRefused) {
  ServerProcess server(MakeTempDir("store"), {"--http_address=127.0.0.1:0"});
  const int port = server.http_port();
  ASSERT_GT(port, 0);
  auto upgrade = [&](const std::string& key) {
    RawConnection c(port);
    c.Send(absl::StrCat("GET ", kPoseService,
                        "PoseSession HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                        "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ",
                        key, "\r\n\r\n"));
    return c.Read(5, HasWholeResponse);
  };
  EXPECT_THAT(upgrade("dGhlIHNhbXBsZSBub25jZQ=="), StartsWith("HTTP/1.1 101"));
  for (const char* key : {"x", "dGhlIHNhbXBsZQ==", "dGhlIHNhbXBsZSBub25jZQ"}) {
    const std::string refused = upgrade(key);
    EXPECT_THAT(refused, StartsWith("HTTP/1.1 400")) << key;
    EXPECT_THAT(refused, HasSubstr(absl::StrCat("Sec-WebSocket-Key '", key, "' is not the base64 of 16 bytes")));
  }
  EXPECT_EQ(server.Stop(SIGTERM), 0);
}

// A session's long frame runs on the front door's pool, not on the socket thread that read it:
// with one socket thread (--http_threads=1), a unary call and another session's frames are
// answered while a FAST frame of a new constraint set with 256 extra weights (about a second on
// CesiumMan) computes. The old front door ran every frame on the socket threads: both waited
// until the long frame was answered.
TEST(HttpThreadsTest, ALongSessionFrameHoldsNoSocketThread) {
  const std::string cesium = DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(cesium);
  ServerProcess server(MakeTempDir("store"), {"--http_address=127.0.0.1:0", "--http_threads=1"});
  const int port = server.http_port();
  ASSERT_GT(port, 0) << server.Output();
  const LongFastModel model = BakeLongFastModel(server);
  ASSERT_FALSE(model.bake.empty());

  auto solve = WebSocketClient::Open(port, std::string(kFastService) + "SolveSession");
  auto pose = WebSocketClient::Open(port, std::string(kPoseService) + "PoseSession");
  ASSERT_TRUE(solve.ok() && pose.ok());
  v1::PoseSessionRequest pose_frame;  // the rig's own weights, rest pose, transforms only
  pose_frame.set_rig(model.rig);
  pose_frame.mutable_outputs()->set_transforms(true);
  ASSERT_TRUE((*pose)->Send(pose_frame.SerializeAsString(), false).ok());
  ASSERT_TRUE((*pose)->Receive().ok()) << "the pose session's first frame";

  const v1::SolveSessionRequest frame = LongFastFrame(model.bake);
  using Clock = std::chrono::steady_clock;
  const Clock::time_point t0 = Clock::now();
  ASSERT_TRUE((*solve)->Send(frame.SerializeAsString(), false).ok());
  Clock::time_point solved;
  absl::Status solve_status;
  std::thread reader([&] {
    solve_status = (*solve)->Receive().status();
    solved = Clock::now();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  v1::GetRigRequest get;
  get.set_name(model.rig);
  v1::Rig got;
  const absl::Status unary = ConnectUnary(port, std::string(kRigService) + "GetRig", get, &got, true);
  const Clock::time_point unary_done = Clock::now();
  ASSERT_TRUE((*pose)->Send(pose_frame.SerializeAsString(), false).ok());
  const absl::Status posed = (*pose)->Receive().status();
  const Clock::time_point pose_done = Clock::now();
  reader.join();
  ASSERT_TRUE(solve_status.ok()) << solve_status;
  ASSERT_TRUE(unary.ok()) << unary;
  ASSERT_TRUE(posed.ok()) << posed;
  auto ms = [&](Clock::time_point t) { return std::chrono::duration<double, std::milli>(t - t0).count(); };
  std::printf("long frame answered at %.0f ms; GetRig at %.0f ms, a pose frame at %.0f ms\n", ms(solved),
              ms(unary_done), ms(pose_done));
  EXPECT_LT(ms(unary_done), ms(solved)) << "GetRig is answered while the long frame computes";
  EXPECT_LT(ms(pose_done), ms(solved)) << "the other session's frame is answered while the long frame computes";
}

// The viewer's files are read on threads of their own: with --http_threads=1 the pool has two
// threads, and two sessions' long FAST frames (a new constraint set each) hold both. A file asked
// for meanwhile is answered at once. When files were read on the pool, it waited for one of the
// frames to end.
TEST(HttpThreadsTest, SlowFramesOnEveryPoolThreadDoNotHoldBackTheViewersFiles) {
  const std::string cesium = DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(cesium);
  const std::string web = MakeTempDir("web");
  std::ofstream(web + "/index.html") << "<p>viewer</p>\n";
  ServerProcess server(MakeTempDir("store"), {"--http_address=127.0.0.1:0", "--http_threads=1", "--web_dir=" + web});
  const int port = server.http_port();
  ASSERT_GT(port, 0) << server.Output();
  const LongFastModel model = BakeLongFastModel(server);
  ASSERT_FALSE(model.bake.empty());

  using Clock = std::chrono::steady_clock;
  const Clock::time_point t0 = Clock::now();
  std::vector<std::unique_ptr<WebSocketClient>> sessions;
  for (int joint : {0, 1}) {
    auto ws = WebSocketClient::Open(port, std::string(kFastService) + "SolveSession");
    ASSERT_TRUE(ws.ok()) << ws.status();
    ASSERT_TRUE((*ws)->Send(LongFastFrame(model.bake, joint).SerializeAsString(), false).ok());
    sessions.push_back(*std::move(ws));
  }
  std::vector<Clock::time_point> solved(sessions.size());
  std::vector<absl::Status> solve_status(sessions.size());
  std::vector<std::thread> readers;
  for (size_t i = 0; i < sessions.size(); ++i) {
    readers.emplace_back([&, i] {
      solve_status[i] = sessions[i]->Receive().status();
      solved[i] = Clock::now();
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  auto file = HttpCall(port, "GET", "/index.html");
  const Clock::time_point file_done = Clock::now();
  for (std::thread& t : readers) t.join();
  for (const absl::Status& s : solve_status) ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->status, 200);
  EXPECT_EQ(file->body, "<p>viewer</p>\n");
  auto ms = [&](Clock::time_point t) { return std::chrono::duration<double, std::milli>(t - t0).count(); };
  std::printf("long frames answered at %.0f and %.0f ms; the file at %.0f ms\n", ms(solved[0]), ms(solved[1]),
              ms(file_done));
  EXPECT_LT(ms(file_done), std::min(ms(solved[0]), ms(solved[1])))
      << "the file is answered while both long frames hold the pool";
  EXPECT_EQ(server.Stop(SIGTERM), 0);
}

// Calls through the front door count in the same grpc_server_* series as gRPC calls: a JSON
// Pose by its code, a WebSocket session as a bidi stream handled when it closes.
TEST(HttpMetricsTest, FrontDoorCallsCountInTheGrpcSeries) {
  ServerProcess server(MakeTempDir("store"), {"--http_address=127.0.0.1:0", "--metrics_address=127.0.0.1:0"});
  const int port = server.http_port();
  ASSERT_GT(port, 0);
  auto missing = HttpCall(port, "POST", std::string(kPoseService) + "Pose",
                          R"({"rig": "rigs/rig-00000000000000000000000000000000"})", {{"Content-Type", "application/json"}});
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404);
  v1::CreateRigRequest create;
  *create.mutable_rig() = RigToProto(::skinning::testing::MakeTwoBoneTube());
  v1::CreateRigResponse created;
  ASSERT_TRUE(ConnectUnary(port, std::string(kRigService) + "CreateRig", create, &created, false).ok());
  {
    auto ws = WebSocketClient::Open(port, std::string(kPoseService) + "PoseSession");
    ASSERT_TRUE(ws.ok()) << ws.status();
    v1::PoseSessionRequest first;
    first.set_rig(created.rig().name());
    ASSERT_TRUE((*ws)->Send(first.SerializeAsString(), false).ok());
    ASSERT_TRUE((*ws)->Receive().ok());
    (*ws)->Close();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto scrape = HttpCall(server.metrics_port(), "GET", "/metrics");
  ASSERT_TRUE(scrape.ok());
  auto count = [&](const std::vector<std::string>& parts) {
    for (const std::string& line : std::vector<std::string>(absl::StrSplit(scrape->body, '\n'))) {
      bool all = true;
      for (const std::string& p : parts) all = all && line.find(p) != std::string::npos;
      if (all && line[0] != '#') return std::stod(line.substr(line.rfind(' ') + 1));
    }
    return -1.0;
  };
  EXPECT_EQ(count({"grpc_server_handled_total", "grpc_method=\"Pose\"", "grpc_code=\"NOT_FOUND\""}), 1);
  EXPECT_EQ(count({"grpc_server_handled_total", "grpc_method=\"CreateRig\"", "grpc_code=\"OK\""}), 1);
  EXPECT_EQ(count({"grpc_server_started_total", "grpc_method=\"PoseSession\""}), 1);
  EXPECT_EQ(count({"grpc_server_handled_total", "grpc_method=\"PoseSession\"", "grpc_type=\"bidi_stream\"",
                   "grpc_code=\"OK\""}),
            1);
  EXPECT_EQ(server.Stop(SIGTERM), 0);
}

// Protobuf writes a line to stderr for every request with a string field that is not UTF-8, so a
// hostile client could fill the server's log at its request rate; the server lets 10 such lines
// through per 10 s and says it drops the rest (server/protobuf_log.h). Both doors share it: the
// binary Connect door is used here.
TEST(HttpLogTest, RequestsThatAreNotUtf8FillTheLogWithAtMostTenLinesPerTenSeconds) {
  const std::string err = MakeTempDir("stderr") + "/server.err";
  ServerProcess server(MakeTempDir("store"), {"--http_address=127.0.0.1:0"},
                       {"/bin/sh", "-c", "exec \"$@\" 2>>\"$0\"", err});
  const int port = server.http_port();
  ASSERT_GT(port, 0);
  // GetRigRequest.name (field 1, a string) = the bytes ff fe.
  const std::string not_utf8("\x0a\x02\xff\xfe", 4);
  const auto start = std::chrono::steady_clock::now();
  constexpr int kRequests = 300;
  for (int i = 0; i < kRequests; ++i) {
    auto r = HttpCall(port, "POST", std::string(kRigService) + "GetRig", not_utf8,
                      {{"Content-Type", "application/proto"}});
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->status, 400) << r->body;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(server.Stop(SIGTERM), 0);
  std::ifstream in(err);
  int protobuf_lines = 0, dropped_notes = 0;
  for (std::string line; std::getline(in, line);) {
    protobuf_lines += line.find("[libprotobuf ERROR") != std::string::npos && line.find("UTF-8") != std::string::npos;
    dropped_notes += line.find("protobuf log lines in 10s") != std::string::npos;
  }
  const int windows = 1 + static_cast<int>(seconds / 10);
  EXPECT_GE(protobuf_lines, 10) << "the first lines of a window still reach the log";
  EXPECT_LE(protobuf_lines, 10 * windows) << kRequests << " bad requests in " << seconds << " s";
  EXPECT_GE(dropped_notes, 1) << "the log says that it drops lines";
  EXPECT_LE(dropped_notes, windows);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
