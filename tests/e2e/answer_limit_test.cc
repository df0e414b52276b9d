// The answer limit (--max_message_mb) on the real server binary. A PoseClip of a short request can
// ask for an answer of gigabytes (10,000 frames of a 5k-vertex character took a 1.1 GB JSON answer
// and 2.5 GB of memory over HTTP, which did not check answers at all, and gRPC built the whole
// answer only to refuse sending it): the clip stops as soon as its frames outgrow the limit, and
// the front door refuses an encoded answer past it (JSON is about three times the binary).
#include <gtest/gtest.h>

#include <string>

#include <cmath>
#include <fstream>
#include <sstream>

#include "client/client.h"
#include "core/io/gltf.h"
#include "server/convert/convert.h"
#include "server/convert/gltf_import.h"
#include "skinning/v1/pose_service.pb.h"
#include "tests/support/base64.h"
#include "tests/support/fixtures.h"
#include "tests/support/http_client.h"
#include "tests/support/multi_skin_gltf.h"
#include "tests/support/proto_bytes.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::DeterministicBytes;
using ::skinning::testing::HttpCall;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::ServerProcess;

TEST(AnswerLimitTest, ClipsStopAtTheMessageLimitOnBothTransports) {
  ServerProcess server(MakeTempDir("store"), {"--http_address=127.0.0.1:0", "--web_dir=", "--max_message_mb=1"});
  ASSERT_GT(server.http_port(), 0) << server.Output();
  ClientOptions o;
  o.target = server.address();
  Client client(o);
  auto rig = client.CreateRig(RigToProto(::skinning::testing::MakeTwoBoneTube()));
  ASSERT_TRUE(rig.ok()) << rig.status();

  v1::PoseClipRequest clip;
  clip.set_rig(rig->rig().name());
  clip.mutable_outputs()->set_vertices(true);
  clip.add_poses();
  auto one = client.PoseClip(clip);
  ASSERT_TRUE(one.ok()) << one.status();
  const size_t frame_bytes = one->ByteSizeLong();
  ASSERT_GT(frame_bytes, 200u);
  const int fits = static_cast<int>((900u << 10) / frame_bytes);  // 900 KiB of binary frames

  // Twice the limit's worth of frames: refused once the answer passes 1 MiB, not after all of them.
  clip.clear_poses();
  for (int f = 0; f < 2 * (1 << 20) / static_cast<int>(frame_bytes); ++f) clip.add_poses();
  auto big = client.PoseClip(clip);
  ASSERT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted) << big.status();
  const std::string message(big.status().message());
  EXPECT_NE(message.find("--max_message_mb"), std::string::npos) << message;
  const size_t at = message.find("at frame ");
  ASSERT_NE(at, std::string::npos) << message;
  const int stopped = std::atoi(message.c_str() + at + 9);
  EXPECT_GT(stopped, fits) << message;
  EXPECT_LE(stopped, (1 << 20) / static_cast<int>(frame_bytes) + 1) << message;

  // 900 KiB of frames: gRPC and binary HTTP answer (the same bytes); as JSON it is about three
  // times that, so the front door refuses it with 429, naming the limit and the binary form.
  clip.clear_poses();
  for (int f = 0; f < fits; ++f) clip.add_poses();
  auto grpc = client.PoseClip(clip);
  ASSERT_TRUE(grpc.ok()) << grpc.status();
  auto binary = HttpCall(server.http_port(), "POST", "/skinning.v1.PoseService/PoseClip", clip.SerializeAsString(),
                         {{"Content-Type", "application/proto"}});
  ASSERT_TRUE(binary.ok()) << binary.status();
  ASSERT_EQ(binary->status, 200) << binary->body.substr(0, 300);
  v1::PoseClipResponse got;
  ASSERT_TRUE(got.ParseFromString(binary->body));
  EXPECT_EQ(DeterministicBytes(got), DeterministicBytes(*grpc));
  auto json = HttpCall(server.http_port(), "POST", "/skinning.v1.PoseService/PoseClip",
                       "{\"rig\":\"" + rig->rig().name() + "\",\"outputs\":{\"vertices\":true},\"poses\":[" +
                           [&] {
                             std::string poses;
                             for (int f = 0; f < fits; ++f) poses += f ? ",{}" : "{}";
                             return poses;
                           }() +
                           "]}",
                       {{"Content-Type", "application/json"}});
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(json->status, 429) << json->body.substr(0, 300);
  EXPECT_NE(json->body.find("resource_exhausted"), std::string::npos) << json->body;
  EXPECT_NE(json->body.find("--max_message_mb"), std::string::npos) << json->body;
  EXPECT_NE(json->body.find("application/proto"), std::string::npos) << json->body;
  // The server goes on serving.
  clip.clear_poses();
  clip.add_poses();
  EXPECT_TRUE(client.PoseClip(clip).ok());
}

// A file's long animations come back sampled at a lower rate that fits the answer, on both
// transports, rather than as an answer too large to send after gigabytes of sampling (a 12 kB
// file of 5 long animations on 100 joints took the server to 1.9 GB; this one, 300 s on 10
// joints, was 9,001 frames, an answer of megabytes refused as larger than 1 MiB).
TEST(AnswerLimitTest, LongAnimationsOfAnUploadAreSampledToFitTheAnswer) {
  ServerProcess server(MakeTempDir("store"), {"--http_address=127.0.0.1:0", "--web_dir=", "--max_message_mb=1"});
  ASSERT_GT(server.http_port(), 0) << server.Output();
  ClientOptions o;
  o.target = server.address();
  Client client(o);
  testing::MultiSkinGltf spec;
  spec.key_time_scale = 200;  // keys at 0, 100 and 300 s
  const std::string path = testing::WriteMultiSkinGltf(spec, MakeTempDir("long") + "/long.gltf");
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  auto created = client.CreateRigFromGltf(bytes.str());
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_EQ(created->animations_size(), 1);
  const v1::AnimationClip& clip = created->animations(0);
  const double fps = clip.frames_per_second();
  EXPECT_LT(fps, 30.0);
  EXPECT_GT(fps, 0.5);  // a quarter MiB holds about 500 frames of 10 joints
  EXPECT_EQ(clip.poses_size(), static_cast<int>(std::floor(300 * fps + 1e-4)) + 1);
  EXPECT_LE(created->ByteSizeLong(), (size_t{1} << 18) + 4096);
  // The frames are the animation at their times (the reader's own sampling, to float rounding).
  absl::StatusOr<GltfCharacter> character = ReadGltf(path);
  ASSERT_TRUE(character.ok()) << character.status();
  const GltfImport local = ImportGltf(*character);
  for (int f : {1, clip.poses_size() / 2, clip.poses_size() - 1}) {
    const v1::Pose want =
        PoseToProto(Pose{SampleAnimation(local.rig.skeleton, local.animations[0], clip.start() + f / fps)});
    ASSERT_EQ(clip.poses(f).joints_size(), want.joints_size());
    for (int j = 0; j < want.joints_size(); ++j)
      for (int c = 0; c < want.joints(j).rotation_size(); ++c)
        EXPECT_NEAR(clip.poses(f).joints(j).rotation(c), want.joints(j).rotation(c), 1e-4) << "frame " << f;
  }
  // The Connect JSON answer (about three times the binary) fits too.
  auto json = HttpCall(server.http_port(), "POST", "/skinning.v1.RigService/CreateRig",
                       "{\"gltf\":\"" + testing::Base64(bytes.str()) + "\"}", {{"Content-Type", "application/json"}});
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(json->status, 200) << json->body.substr(0, 300);
  EXPECT_LE(json->body.size(), size_t{1} << 20);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
