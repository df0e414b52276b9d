// gzip on the HTTP front door of the real server binary: compressed requests (a unary body, a
// stream's envelope) carry the same messages as plain ones; answers are compressed only for
// clients that accept gzip and only past --http_compress_min_bytes, and decompress to the plain
// answer; a body that inflates past the message limit is refused and the server goes on serving.
// The test's side compresses and decompresses with the gzip program, not the server's code.
#include <gtest/gtest.h>

#include <google/protobuf/util/json_util.h>

#include <string>

#include "client/client.h"
#include "server/convert/convert.h"
#include "skinning/v1/bake_service.pb.h"
#include "skinning/v1/pose_service.pb.h"
#include "skinning/v1/rig_service.pb.h"
#include "tests/support/data.h"
#include "tests/support/fixtures.h"
#include "tests/support/gzip_program.h"
#include "tests/support/http_client.h"
#include "tests/support/proto_bytes.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::ConnectEnvelope;
using ::skinning::testing::ConnectStreamBody;
using ::skinning::testing::DataPath;
using ::skinning::testing::DeterministicBytes;
using ::skinning::testing::FileBytes;
using ::skinning::testing::GzipProgram;
using ::skinning::testing::HttpCall;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::ServerProcess;

std::string Gzip(const std::string& data, int level) { return GzipProgram(data, "-c -" + std::to_string(level)); }
std::string GunzipWithProgram(const std::string& gz) { return GzipProgram(gz, "-dc"); }

std::string Json(const google::protobuf::Message& m) {
  std::string out;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(m, &out).ok());
  return out;
}

TEST(HttpGzipTest, CompressedRequestsAndAnswersCarryTheSameMessages) {
  SKINNING_REQUIRE_DATA(DataPath("gltf/RiggedSimple/RiggedSimple.glb"));
  ServerProcess server(MakeTempDir("store"), {"--http_address=127.0.0.1:0", "--web_dir=", "--max_message_mb=1",
                                              "--http_compress_min_bytes=1024"});
  const int port = server.http_port();
  ASSERT_GT(port, 0) << server.Output();
  ClientOptions o;
  o.target = server.address();
  Client client(o);
  const std::string glb = FileBytes(DataPath("gltf/RiggedSimple/RiggedSimple.glb"));
  auto want = client.CreateRigFromGltf(glb);
  ASSERT_TRUE(want.ok()) << want.status();

  // CreateRig: a gzip JSON body, answered in gzip to a client that takes it (as browsers say).
  v1::CreateRigRequest create;
  create.set_gltf(glb);
  const std::string create_json = Json(create);
  auto created = HttpCall(port, "POST", "/skinning.v1.RigService/CreateRig", Gzip(create_json, 6),
                          {{"Content-Type", "application/json"},
                           {"Content-Encoding", "gzip"},
                           {"Accept-Encoding", "gzip, deflate, br"}});
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_EQ(created->status, 200) << created->body;
  EXPECT_EQ(created->headers["content-encoding"], "gzip");
  EXPECT_EQ(created->headers["vary"], "Accept-Encoding");
  const std::string created_json = GunzipWithProgram(created->body);
  EXPECT_LT(created->body.size(), created_json.size() / 2) << "JSON shrinks by more than half";
  v1::CreateRigResponse got;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(created_json, &got).ok()) << created_json.substr(0, 200);
  EXPECT_EQ(got.rig().name(), want->rig().name());
  ASSERT_EQ(got.animations_size(), want->animations_size());
  for (int a = 0; a < got.animations_size(); ++a)
    EXPECT_EQ(DeterministicBytes(got.animations(a)), DeterministicBytes(want->animations(a)));

  // Pose: a gzip binary body; without Accept-Encoding the answer is plain, the gRPC floats bit for bit.
  v1::PoseRequest pose;
  pose.set_rig(want->rig().name());
  pose.set_deformer(v1::DEFORMER_DQS);
  *pose.mutable_pose() = want->animations(0).poses(want->animations(0).poses_size() / 2);
  pose.mutable_outputs()->set_vertices(true);
  auto grpc_frame = client.Pose(pose);
  ASSERT_TRUE(grpc_frame.ok()) << grpc_frame.status();
  auto posed = HttpCall(port, "POST", "/skinning.v1.PoseService/Pose", Gzip(pose.SerializeAsString(), 1),
                        {{"Content-Type", "application/proto"}, {"Content-Encoding", "gzip"}});
  ASSERT_TRUE(posed.ok()) << posed.status();
  ASSERT_EQ(posed->status, 200) << posed->body;
  EXPECT_EQ(posed->headers.count("content-encoding"), 0u);
  v1::PoseResponse frame;
  ASSERT_TRUE(frame.ParseFromString(posed->body));
  EXPECT_EQ(DeterministicBytes(frame.frame()), DeterministicBytes(*grpc_frame));
  // With Accept-Encoding: gzip the same answer (160 vertices, > 1 KiB) comes compressed.
  auto posed_gz = HttpCall(port, "POST", "/skinning.v1.PoseService/Pose", pose.SerializeAsString(),
                           {{"Content-Type", "application/proto"}, {"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(posed_gz.ok()) << posed_gz.status();
  ASSERT_EQ(posed_gz->status, 200) << posed_gz->body;
  EXPECT_EQ(posed_gz->headers["content-encoding"], "gzip");
  EXPECT_EQ(GunzipWithProgram(posed_gz->body), posed->body);
  // An answer under 1 KiB (four joints' transforms) stays plain even for a client that takes gzip.
  pose.mutable_outputs()->set_vertices(false);
  pose.mutable_outputs()->set_transforms(true);
  auto small = HttpCall(port, "POST", "/skinning.v1.PoseService/Pose", pose.SerializeAsString(),
                        {{"Content-Type", "application/proto"}, {"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(small.ok()) << small.status();
  ASSERT_EQ(small->status, 200) << small->body;
  EXPECT_LT(small->body.size(), 1024u);
  EXPECT_EQ(small->headers.count("content-encoding"), 0u);
  EXPECT_TRUE(frame.ParseFromString(small->body));
  EXPECT_EQ(frame.frame().transforms_size(), 12 * want->rig().joint_count());

  // A 20-kB body that inflates to 2 MiB (past --max_message_mb=1): RESOURCE_EXHAUSTED (429).
  auto bomb = HttpCall(port, "POST", "/skinning.v1.PoseService/Pose", Gzip(std::string(2 << 20, ' '), 9),
                       {{"Content-Type", "application/json"}, {"Content-Encoding", "gzip"}});
  ASSERT_TRUE(bomb.ok()) << bomb.status();
  EXPECT_EQ(bomb->status, 429) << bomb->body;
  EXPECT_NE(bomb->body.find("resource_exhausted"), std::string::npos) << bomb->body;
  EXPECT_NE(bomb->body.find("message limit"), std::string::npos) << bomb->body;
  // Broken gzip and unknown codings: clear errors.
  auto broken = HttpCall(port, "POST", "/skinning.v1.PoseService/Pose", "\x1f\x8b not really",
                         {{"Content-Type", "application/proto"}, {"Content-Encoding", "gzip"}});
  ASSERT_TRUE(broken.ok()) << broken.status();
  EXPECT_EQ(broken->status, 400) << broken->body;
  EXPECT_NE(broken->body.find("gzip"), std::string::npos) << broken->body;
  auto brotli = HttpCall(port, "POST", "/skinning.v1.PoseService/Pose", pose.SerializeAsString(),
                         {{"Content-Type", "application/proto"}, {"Content-Encoding", "br"}});
  ASSERT_TRUE(brotli.ok()) << brotli.status();
  EXPECT_EQ(brotli->status, 501) << brotli->body;
  EXPECT_EQ(brotli->headers["accept-encoding"], "gzip, identity");

  // WatchBake (a Connect stream): its one request message in a compressed envelope.
  auto tube = client.CreateRig(RigToProto(::skinning::testing::MakeTubeForBaking()));
  ASSERT_TRUE(tube.ok()) << tube.status();
  v1::BakeOptions heat;
  heat.mutable_bone_heat();
  auto started = client.StartBake(tube->rig().name(), heat);
  ASSERT_TRUE(started.ok()) << started.status();
  v1::WatchBakeRequest watch;
  watch.set_name(started->bake().name());
  for (bool declared : {true, false}) {
    SCOPED_TRACE(declared ? "Connect-Content-Encoding: gzip" : "no Connect-Content-Encoding");
    skinning::testing::Headers headers;
    if (declared) headers.emplace_back("Connect-Content-Encoding", "gzip");
    int messages = 0;
    v1::Bake last;
    const absl::Status end = ConnectStreamBody(
        port, "/skinning.v1.BakeService/WatchBake", ConnectEnvelope(0x01, Gzip(Json(watch), 1)),
        v1::Bake::default_instance(),
        [&](const google::protobuf::Message& m) {
          ++messages;
          last.CopyFrom(m);
        },
        /*json=*/true, headers);
    if (declared) {
      ASSERT_TRUE(end.ok()) << end;
      ASSERT_GT(messages, 0);
      EXPECT_EQ(last.metadata().state(), v1::BAKE_STATE_SUCCEEDED) << last.error().message();
    } else {
      EXPECT_EQ(messages, 0);
      EXPECT_EQ(end.code(), absl::StatusCode::kInvalidArgument) << end;
      EXPECT_NE(end.message().find("Connect-Content-Encoding"), std::string::npos) << end;
    }
  }

  // Still serving, plain calls included.
  auto again = client.Pose(pose);
  EXPECT_TRUE(again.ok()) << again.status();
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
