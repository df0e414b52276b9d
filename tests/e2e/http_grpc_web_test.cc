// gRPC-Web on the HTTP front door of the real server binary (server/http/grpc_web.h): an
// independent client (connect-web's gRPC-Web transport, tests/web/grpc_web_client.mjs) gets the
// gRPC answers byte for byte in both of its formats, a page of another origin calls in chromium
// (tests/web/grpc_web_cors.mjs), and the parts those do not use (compressed messages,
// grpc-timeout, refusals) are checked on the wire.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/str_split.h"
#include "client/client.h"
#include "skinning/v1/bake_service.pb.h"
#include "skinning/v1/pose_service.pb.h"
#include "skinning/v1/rig_service.pb.h"
#include "tests/support/data.h"
#include "tests/support/gzip_program.h"
#include "tests/support/http_client.h"
#include "tests/support/proto_bytes.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_files.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::ConnectEnvelope;
using ::skinning::testing::DataPath;
using ::skinning::testing::DeterministicBytes;
using ::skinning::testing::FileBytes;
using ::skinning::testing::GzipProgram;
using ::skinning::testing::Headers;
using ::skinning::testing::HttpCall;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::RunCommand;
using ::skinning::testing::ServerProcess;
using ::testing::HasSubstr;

constexpr char kPose[] = "/skinning.v1.PoseService/Pose";
constexpr char kGetRig[] = "/skinning.v1.RigService/GetRig";

// One frame of a gRPC-Web answer: its flags (0 a message, 0x80 the trailers) and payload.
struct Frame {
  uint8_t flags = 0;
  std::string payload;
};

// The frames of an answer body; a body that does not split into whole frames fails the test.
std::vector<Frame> Frames(const std::string& body) {
  std::vector<Frame> out;
  size_t at = 0;
  while (at + 5 <= body.size()) {
    uint32_t n = 0;
    for (int i = 1; i <= 4; ++i) n = (n << 8) | static_cast<uint8_t>(body[at + i]);
    if (at + 5 + n > body.size()) break;
    out.push_back({static_cast<uint8_t>(body[at]), body.substr(at + 5, n)});
    at += 5 + n;
  }
  EXPECT_EQ(at, body.size()) << "the body does not end with a whole frame";
  return out;
}

// The trailers frame's fields ("grpc-status" → "0"), with grpc-message percent-decoded.
std::map<std::string, std::string> Trailers(const std::string& payload) {
  std::map<std::string, std::string> out;
  for (absl::string_view line : absl::StrSplit(payload, "\r\n", absl::SkipEmpty())) {
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) {
      ADD_FAILURE() << "trailer line without a colon: " << line;
      continue;
    }
    std::string value;
    for (size_t i = colon + 1; i < line.size(); ++i) {
      if (line[i] == '%' && i + 2 < line.size()) {
        value.push_back(static_cast<char>(std::stoi(std::string(line.substr(i + 1, 2)), nullptr, 16)));
        i += 2;
      } else {
        value.push_back(line[i]);
      }
    }
    out[std::string(line.substr(0, colon))] = value;
  }
  return out;
}

class GrpcWebTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // A second server serves the viewer's page: its origin is the one the API server allows.
    const std::string src = SKINNING_SOURCE_DIR;
    page_server_ = new ServerProcess(MakeTempDir("page"), {"--http_address=127.0.0.1:0", "--web_dir=" + src + "/web"});
    page_origin_ = "http://127.0.0.1:" + std::to_string(page_server_->http_port());
    server_ = new ServerProcess(MakeTempDir("store"),
                                {"--http_address=127.0.0.1:0", "--web_dir=", "--http_cors_origins=" + page_origin_});
    ClientOptions o;
    o.target = server_->address();
    o.deadline = std::chrono::seconds(120);
    client_ = new Client(o);
  }
  static void TearDownTestSuite() {
    delete client_;
    EXPECT_EQ(server_->Stop(SIGTERM), 0);
    delete server_;
    EXPECT_EQ(page_server_->Stop(SIGTERM), 0);
    delete page_server_;
  }
  void SetUp() override {
    ASSERT_GT(server_->http_port(), 0) << server_->Output();
    ASSERT_GT(page_server_->http_port(), 0) << page_server_->Output();
  }

  // A DQS pose of RiggedSimple (registered through gRPC) in the middle of its animation, with
  // every output, and gRPC's answer to it.
  void PoseOfTheSample(v1::PoseRequest* request, v1::PosedFrame* answer) {
    auto rig = client_->CreateRigFromGltf(FileBytes(DataPath("gltf/RiggedSimple/RiggedSimple.glb")));
    ASSERT_TRUE(rig.ok()) << rig.status();
    ASSERT_GT(rig->animations_size(), 0);
    const v1::AnimationClip& clip = rig->animations(0);
    request->set_rig(rig->rig().name());
    request->set_deformer(v1::DEFORMER_DQS);
    *request->mutable_pose() = clip.poses(clip.poses_size() / 2);
    request->mutable_outputs()->set_vertices(true);
    request->mutable_outputs()->set_normals(true);
    request->mutable_outputs()->set_transforms(true);
    auto want = client_->Pose(*request);
    ASSERT_TRUE(want.ok()) << want.status();
    *answer = *want;
  }

  // A bone-heat bake of `rig` through gRPC, to its end (SUCCEEDED).
  void BoneHeatBake(const std::string& rig, v1::Bake* done) {
    v1::BakeOptions options;
    options.mutable_bone_heat();
    auto started = client_->StartBake(rig, options);
    ASSERT_TRUE(started.ok()) << started.status();
    auto end = client_->WatchBake(started->bake().name(), [](const v1::Bake&) { return true; });
    ASSERT_TRUE(end.ok()) << end.status();
    ASSERT_EQ(end->metadata().state(), v1::BAKE_STATE_SUCCEEDED) << end->error().message();
    *done = *end;
  }

  // A gRPC-Web call: `body` as given, Content-Type `type`, plus `headers`.
  static absl::StatusOr<::skinning::testing::HttpResponse> Call(const std::string& path, const std::string& type,
                                                               const std::string& body, Headers headers = {}) {
    headers.emplace_back("Content-Type", type);
    headers.emplace_back("X-Grpc-Web", "1");
    return HttpCall(server_->http_port(), "POST", path, body, headers);
  }

  static ServerProcess* server_;
  static Client* client_;
  static ServerProcess* page_server_;
  static std::string page_origin_;
};
ServerProcess* GrpcWebTest::server_ = nullptr;
Client* GrpcWebTest::client_ = nullptr;
ServerProcess* GrpcWebTest::page_server_ = nullptr;
std::string GrpcWebTest::page_origin_;

// What tests/web/grpc_web_client.mjs needs; in CI all of it is installed (scripts/install-deps.sh).
std::string MissingTool() {
  const std::string src = SKINNING_SOURCE_DIR;
  for (const char* path : {"web/node_modules/@connectrpc/connect-web", "web/gen/skinning/v1/pose_service_pb.js",
                           "tests/node_modules/playwright-core"})
    if (!std::filesystem::exists(src + "/" + path)) return path;
  if (access("/usr/bin/node", X_OK) != 0) return "/usr/bin/node";
  return "";
}

TEST_F(GrpcWebTest, ConnectWebsGrpcWebTransportGetsTheGrpcAnswersInBothFormats) {
  SKINNING_REQUIRE_DATA(DataPath("gltf/RiggedSimple/RiggedSimple.glb"));
  SKINNING_REQUIRE_TOOL(MissingTool());
  v1::PoseRequest pose;
  v1::PosedFrame want_pose;
  ASSERT_NO_FATAL_FAILURE(PoseOfTheSample(&pose, &want_pose));
  v1::Bake done;
  ASSERT_NO_FATAL_FAILURE(BoneHeatBake(pose.rig(), &done));
  v1::GetRigRequest bad_name;
  bad_name.set_name("rigs/rig-nope%\xC3\xA9");  // the script asks for the same name
  auto bad = client_->GetRig(bad_name.name());
  ASSERT_FALSE(bad.ok());

  const std::string src = SKINNING_SOURCE_DIR;
  const std::string out = MakeTempDir("grpc-web-client");
  const auto run = RunCommand({"/usr/bin/node", src + "/tests/web/grpc_web_client.mjs",
                               "--url=http://127.0.0.1:" + std::to_string(server_->http_port()),
                               "--pose=" + absl::Base64Escape(pose.SerializeAsString()),
                               "--bake=" + done.name(), "--out=" + out});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::ifstream in(out + "/result.json");
  ASSERT_TRUE(in) << "no result.json; node said: " << run.output;
  const nlohmann::json r = nlohmann::json::parse(in);
  ASSERT_FALSE(r.contains("failure")) << r["failure"].get<std::string>();
  for (const char* format : {"binary", "json"}) {
    SCOPED_TRACE(format);
    ASSERT_TRUE(r.contains(format));
    const nlohmann::json& f = r[format];
    // The pose: gRPC's floats, bit for bit.
    std::string bytes;
    ASSERT_TRUE(absl::Base64Unescape(f["pose"].get<std::string>(), &bytes));
    v1::PoseResponse got;
    ASSERT_TRUE(got.ParseFromString(bytes));
    EXPECT_GT(got.frame().vertices_size(), 0);
    EXPECT_EQ(DeterministicBytes(got.frame()), DeterministicBytes(want_pose));
    // The refusal: gRPC's code and message (which holds '%' and a non-ASCII letter; the C++
    // client puts the method's name before the server's message).
    EXPECT_EQ(f["badName"]["code"], static_cast<int>(bad.status().code()));
    EXPECT_EQ(absl::StrCat("GetRig: ", f["badName"]["message"].get<std::string>()), bad.status().message());
    // The watch of a finished bake: one message, gRPC's.
    ASSERT_EQ(f["watch"].size(), 1u);
    ASSERT_TRUE(absl::Base64Unescape(f["watch"][0].get<std::string>(), &bytes));
    v1::Bake bake;
    ASSERT_TRUE(bake.ParseFromString(bytes));
    EXPECT_EQ(DeterministicBytes(bake), DeterministicBytes(done));
  }
}

TEST_F(GrpcWebTest, APageOfAnAllowedOriginCallsFromChromium) {
  SKINNING_REQUIRE_DATA(DataPath("gltf/RiggedSimple/RiggedSimple.glb"));
  SKINNING_REQUIRE_TOOL(MissingTool());
  SKINNING_REQUIRE_TOOL(access("/usr/bin/chromium", X_OK) == 0 ? "" : "/usr/bin/chromium");
  v1::PoseRequest pose;
  v1::PosedFrame want;
  ASSERT_NO_FATAL_FAILURE(PoseOfTheSample(&pose, &want));
  const std::string src = SKINNING_SOURCE_DIR;
  const std::string out = MakeTempDir("grpc-web-cors");
  const auto run = RunCommand({"/usr/bin/node", src + "/tests/web/grpc_web_cors.mjs", "--url=" + page_origin_ + "/",
                               "--api=http://127.0.0.1:" + std::to_string(server_->http_port()),
                               "--pose=" + absl::Base64Escape(ConnectEnvelope(0, pose.SerializeAsString())),
                               "--out=" + out});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::ifstream in(out + "/result.json");
  ASSERT_TRUE(in) << "no result.json; node said: " << run.output;
  const nlohmann::json r = nlohmann::json::parse(in);
  ASSERT_FALSE(r.contains("failure")) << r["failure"].get<std::string>();
  EXPECT_TRUE(r["consoleErrors"].empty()) << r["consoleErrors"].dump();
  EXPECT_EQ(r["pageOrigin"], page_origin_);
  for (const char* type : {"application/grpc-web+proto", "application/grpc-web-text"}) {
    SCOPED_TRACE(type);
    const nlohmann::json& call = r["calls"][type];
    EXPECT_EQ(call["status"], 200);
    EXPECT_EQ(call["contentType"], type);
    std::string body;
    ASSERT_TRUE(absl::Base64Unescape(call["body"].get<std::string>(), &body));
    const std::vector<Frame> frames = Frames(body);
    ASSERT_EQ(frames.size(), 2u);
    v1::PoseResponse got;
    ASSERT_TRUE(got.ParseFromString(frames[0].payload));
    EXPECT_EQ(DeterministicBytes(got.frame()), DeterministicBytes(want));
    EXPECT_EQ(frames[1].payload, "grpc-status:0\r\n");
  }
}

TEST_F(GrpcWebTest, TextBodiesCompressedMessagesTimeoutsAndRefusalsOnTheWire) {
  SKINNING_REQUIRE_DATA(DataPath("gltf/RiggedSimple/RiggedSimple.glb"));
  v1::PoseRequest pose;
  v1::PosedFrame want;
  ASSERT_NO_FATAL_FAILURE(PoseOfTheSample(&pose, &want));
  const std::string message = pose.SerializeAsString();
  const std::string frame = ConnectEnvelope(0, message);
  // An answer of one message (gRPC's) and OK trailers.
  auto expect_pose = [&](const std::string& body) {
    const std::vector<Frame> frames = Frames(body);
    ASSERT_EQ(frames.size(), 2u);
    EXPECT_EQ(frames[0].flags, 0);
    v1::PoseResponse got;
    ASSERT_TRUE(got.ParseFromString(frames[0].payload));
    EXPECT_EQ(DeterministicBytes(got.frame()), DeterministicBytes(want));
    EXPECT_EQ(frames[1].flags, 0x80);
    EXPECT_EQ(frames[1].payload, "grpc-status:0\r\n");
  };
  // An answer of trailers alone, with `code` and a message holding `words`.
  auto expect_refusal = [](const ::skinning::testing::HttpResponse& res, absl::StatusCode code,
                           const std::string& words) {
    EXPECT_EQ(res.status, 200);
    const std::vector<Frame> frames = Frames(res.body);
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].flags, 0x80);
    auto t = Trailers(frames[0].payload);
    EXPECT_EQ(t["grpc-status"], std::to_string(static_cast<int>(code)));
    EXPECT_THAT(t["grpc-message"], HasSubstr(words));
  };

  // Binary, as application/grpc-web and +proto, with a deadline.
  for (const char* type : {"application/grpc-web", "application/grpc-web+proto"}) {
    SCOPED_TRACE(type);
    auto res = Call(kPose, type, frame, {{"grpc-timeout", "30S"}});
    ASSERT_TRUE(res.ok()) << res.status();
    EXPECT_EQ(res->status, 200);
    EXPECT_EQ(res->headers["content-type"], type);
    expect_pose(res->body);
  }
  // -text: the request in base64, in one piece and in two padded pieces; the answer in base64.
  const std::string one = absl::Base64Escape(frame);
  const std::string two = absl::Base64Escape(frame.substr(0, 7)) + absl::Base64Escape(frame.substr(7));
  ASSERT_NE(two.find('='), two.size() - 1) << "the first piece should end in padding";
  for (const std::string& body : {one, two}) {
    auto res = Call(kPose, "application/grpc-web-text", body);
    ASSERT_TRUE(res.ok()) << res.status();
    EXPECT_EQ(res->headers["content-type"], "application/grpc-web-text");
    std::string decoded;
    ASSERT_TRUE(absl::Base64Unescape(res->body, &decoded)) << res->body.substr(0, 80);
    expect_pose(decoded);
  }
  {
    auto res = Call(kPose, "application/grpc-web-text", "not base64!");
    ASSERT_TRUE(res.ok()) << res.status();
    std::string decoded;
    ASSERT_TRUE(absl::Base64Unescape(res->body, &decoded));
    res->body = decoded;
    expect_refusal(*res, absl::StatusCode::kInvalidArgument, "is not base64");
  }
  // A compressed message (flag 0x01), gzipped by the gzip program, with grpc-encoding: gzip.
  const std::string gz = ConnectEnvelope(1, GzipProgram(message, "-c -9"));
  {
    auto res = Call(kPose, "application/grpc-web+proto", gz, {{"grpc-encoding", "gzip"}});
    ASSERT_TRUE(res.ok()) << res.status();
    expect_pose(res->body);
  }
  {
    auto res = Call(kPose, "application/grpc-web+proto", gz);
    ASSERT_TRUE(res.ok()) << res.status();
    expect_refusal(*res, absl::StatusCode::kInvalidArgument, "needs grpc-encoding: gzip");
  }
  {
    auto res = Call(kPose, "application/grpc-web+proto", frame, {{"grpc-encoding", "br"}});
    ASSERT_TRUE(res.ok()) << res.status();
    expect_refusal(*res, absl::StatusCode::kUnimplemented, "grpc-encoding 'br' is not supported");
    EXPECT_EQ(res->headers["grpc-accept-encoding"], "gzip, identity");
  }
  // grpc-timeout: a malformed one is refused by name.
  for (const char* timeout : {"30", "1x", "123456789S", "-1S"}) {
    SCOPED_TRACE(timeout);
    auto res = Call(kPose, "application/grpc-web+proto", frame, {{"grpc-timeout", timeout}});
    ASSERT_TRUE(res.ok()) << res.status();
    expect_refusal(*res, absl::StatusCode::kInvalidArgument, "grpc-timeout");
  }
  // Two messages, a cut frame and a message that is not a PoseRequest.
  for (const auto& [body, words] : std::vector<std::pair<std::string, std::string>>{
           {frame + frame, "one message expected"},
           {frame.substr(0, frame.size() - 1), "one message expected"},
           {ConnectEnvelope(0, "\xFF\xFF"), "not a valid binary skinning.v1.PoseRequest"}}) {
    auto res = Call(kPose, "application/grpc-web+proto", body);
    ASSERT_TRUE(res.ok()) << res.status();
    expect_refusal(*res, absl::StatusCode::kInvalidArgument, words);
  }
  // An error of the call itself: gRPC's code and message, percent-encoded in the trailers.
  v1::GetRigRequest get;
  get.set_name("rigs/rig-nope%\xC3\xA9");
  auto bad = client_->GetRig(get.name());
  ASSERT_FALSE(bad.ok());
  auto res = Call(kGetRig, "application/grpc-web+proto", ConnectEnvelope(0, get.SerializeAsString()));
  ASSERT_TRUE(res.ok()) << res.status();
  const std::vector<Frame> frames = Frames(res->body);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_THAT(frames[0].payload, HasSubstr("%25%C3%A9"));  // '%' and 'é' as gRPC encodes them
  auto t = Trailers(frames[0].payload);
  EXPECT_EQ(t["grpc-status"], std::to_string(static_cast<int>(bad.status().code())));
  // (The C++ client puts the method's name before the server's message.)
  EXPECT_EQ(absl::StrCat("GetRig: ", t["grpc-message"]), bad.status().message());
  // WatchBake in -text: each frame in base64 on its own (a finished bake: its one message, then
  // OK trailers), as gRPC's GetBake answers.
  v1::Bake done;
  ASSERT_NO_FATAL_FAILURE(BoneHeatBake(pose.rig(), &done));
  v1::WatchBakeRequest watch;
  watch.set_name(done.name());
  res = Call("/skinning.v1.BakeService/WatchBake", "application/grpc-web-text",
             absl::Base64Escape(ConnectEnvelope(0, watch.SerializeAsString())));
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->status, 200);
  std::string decoded;
  for (absl::string_view piece : absl::StrSplit(res->body, absl::ByChar('='), absl::SkipEmpty())) {
    // Each frame's base64 is padded on its own: split there and decode piece by piece.
    std::string bytes;
    std::string padded(piece);
    while (padded.size() % 4 != 0) padded.push_back('=');
    ASSERT_TRUE(absl::Base64Unescape(padded, &bytes)) << padded;
    decoded += bytes;
  }
  const std::vector<Frame> watched = Frames(decoded);
  ASSERT_EQ(watched.size(), 2u);
  v1::Bake bake;
  ASSERT_TRUE(bake.ParseFromString(watched[0].payload));
  EXPECT_EQ(DeterministicBytes(bake), DeterministicBytes(done));
  EXPECT_EQ(watched[1].flags, 0x80);
  EXPECT_EQ(watched[1].payload, "grpc-status:0\r\n");

  // An unknown content type names the gRPC-Web ones among those it takes.
  res = Call(kPose, "application/grpc-web+thrift", frame);
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->status, 415);
  EXPECT_THAT(res->headers["accept-post"], HasSubstr("application/grpc-web-text+proto"));
}

// With --http_compress_min_bytes, a unary answer that large goes gzip-compressed (flag 0x01,
// grpc-encoding: gzip) to a client whose grpc-accept-encoding takes gzip, and plain to others.
TEST(GrpcWebCompressionTest, LargeAnswersGoGzippedToClientsThatTakeGzip) {
  SKINNING_REQUIRE_DATA(DataPath("gltf/RiggedSimple/RiggedSimple.glb"));
  ServerProcess server(MakeTempDir("store"), {"--http_address=127.0.0.1:0", "--web_dir=",
                                              "--http_compress_min_bytes=1024"});
  ASSERT_GT(server.http_port(), 0) << server.Output();
  ClientOptions o;
  o.target = server.address();
  Client client(o);
  auto rig = client.CreateRigFromGltf(FileBytes(DataPath("gltf/RiggedSimple/RiggedSimple.glb")));
  ASSERT_TRUE(rig.ok()) << rig.status();
  v1::PoseRequest pose;
  pose.set_rig(rig->rig().name());
  pose.mutable_outputs()->set_vertices(true);
  v1::PoseResponse want;
  auto frame = client.Pose(pose);
  ASSERT_TRUE(frame.ok()) << frame.status();
  *want.mutable_frame() = *frame;
  ASSERT_GT(want.ByteSizeLong(), 1024u);
  for (const char* accept : {"gzip", "identity, gzip;q=0.5", "identity", ""}) {
    SCOPED_TRACE(accept);
    Headers headers = {{"Content-Type", "application/grpc-web+proto"}};
    if (*accept) headers.emplace_back("grpc-accept-encoding", accept);
    auto res = HttpCall(server.http_port(), "POST", kPose, ConnectEnvelope(0, pose.SerializeAsString()), headers);
    ASSERT_TRUE(res.ok()) << res.status();
    const std::vector<Frame> frames = Frames(res->body);
    ASSERT_EQ(frames.size(), 2u);
    const bool gzip = std::string(accept).find("gzip") != std::string::npos;
    EXPECT_EQ(frames[0].flags, gzip ? 0x01 : 0x00);
    EXPECT_EQ(res->headers.count("grpc-encoding"), gzip ? 1u : 0u);
    // Inflated by the gzip program, not by the server's own code.
    const std::string message = gzip ? GzipProgram(frames[0].payload, "-dc") : frames[0].payload;
    v1::PoseResponse got;
    ASSERT_TRUE(got.ParseFromString(message));
    EXPECT_EQ(DeterministicBytes(got), DeterministicBytes(want));
    if (gzip) {
      EXPECT_LT(frames[0].payload.size(), message.size());
    }
  }
  EXPECT_EQ(server.Stop(SIGTERM), 0);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
