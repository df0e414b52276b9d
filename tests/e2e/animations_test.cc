// Animations stored with a rig (RigService.GetAnimations) against the real server: a glTF file's
// clips are stored when it is registered, those sent with a rig too, checked first; another
// replica on the same store serves them; they go with the rig, and are each tenant's own.
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "client/client.h"
#include "skinning/v1/rig_service.grpc.pb.h"
#include "tests/support/data.h"
#include "tests/support/clips.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::ClipNames;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::ServerProcess;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string SamplePath() { return std::string(SKINNING_SOURCE_DIR) + "/samples/CesiumMan/CesiumMan.glb"; }

std::unique_ptr<Client> ClientOf(const ServerProcess& server, const std::string& token = "") {
  ClientOptions o;
  o.target = server.address();
  o.token = token;
  return std::make_unique<Client>(o);
}

// A clip of the rig `full` (RIG_VIEW_FULL) named `name`: `frames` frames at its rest, joint 1
// turned by 0.1 rad more about z at each.
v1::AnimationClip Wave(const v1::Rig& full, const std::string& name, int frames) {
  v1::AnimationClip clip;
  clip.set_name(name);
  clip.set_frames_per_second(24);
  clip.set_start(0.5f);
  for (int f = 0; f < frames; ++f) {
    v1::Pose* pose = clip.add_poses();
    for (const v1::Joint& joint : full.skeleton().joints()) *pose->add_joints() = joint.rest();
    v1::Transform* t = pose->mutable_joints(1);
    t->clear_rotation();
    for (float v : {0.f, 0.f, std::sin(0.05f * f), std::cos(0.05f * f)}) t->add_rotation(v);
  }
  return clip;
}

TEST(StoredAnimations, AFilesClipsAndARigsAreStoredWithItAndServedByAnotherReplica) {
  const std::string store = MakeTempDir("store");
  ServerProcess server(store);
  auto client = ClientOf(server);
  auto created = client->CreateRigFromGltf(testing::FileBytes(SamplePath()));
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_EQ(created->animations_size(), 1);
  const std::string rig = created->rig().name();
  auto listed = client->GetAnimations(rig);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals((*listed)[0], created->animations(0)))
      << "the stored clip is not the one CreateRig answered";
  const std::string file_clip = created->animations(0).name();

  // The same rig sent as a rig with a clip of its own: stored before the file's.
  auto full = client->GetRig(rig, v1::RIG_VIEW_FULL);
  ASSERT_TRUE(full.ok()) << full.status();
  v1::Rig proto = *full;
  proto.clear_name();
  auto again = client->CreateRig(proto, {Wave(*full, "wave", 12)});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->created());
  EXPECT_THAT(ClipNames(client->GetAnimations(rig)), ElementsAre("wave", file_clip));

  // Another replica on the same store serves them.
  {
    ServerProcess replica(store);
    auto other = ClientOf(replica)->GetAnimations(rig);
    EXPECT_THAT(ClipNames(other), ElementsAre("wave", file_clip));
    if (other.ok() && other->size() == 2) {
      EXPECT_EQ((*other)[0].poses_size(), 12);
      EXPECT_FLOAT_EQ((*other)[0].poses(11).joints(1).rotation(2), std::sin(0.55f));
    }
  }

  // The file again: its clip first again.
  ASSERT_TRUE(client->CreateRigFromGltf(testing::FileBytes(SamplePath())).ok());
  EXPECT_THAT(ClipNames(client->GetAnimations(rig)), ElementsAre(file_clip, "wave"));

  // Refused clips store nothing, not even a new rig.
  v1::Rig moved = proto;
  moved.mutable_mesh()->set_positions(0, moved.mesh().positions(0) + 0.01f);
  v1::AnimationClip bad = Wave(*full, "bad", 3);
  bad.mutable_poses(2)->mutable_joints()->RemoveLast();
  auto refused = client->CreateRig(moved, {bad});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("animations[0].poses[2]"));
  v1::AnimationClip no_rate = Wave(*full, "still", 1);
  no_rate.set_frames_per_second(0);
  refused = client->CreateRig(moved, {no_rate});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("animations[0].frames_per_second"));
  auto rigs = client->ListRigs();
  ASSERT_TRUE(rigs.ok());
  EXPECT_EQ(rigs->size(), 1u) << "a refused rig was stored";
  // A file comes with its own clips: others beside it are refused (before the file is read).
  {
    auto stub = v1::RigService::NewStub(grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    v1::CreateRigRequest req;
    req.set_gltf(testing::FileBytes(SamplePath()));
    *req.add_animations() = Wave(*full, "extra", 2);
    v1::CreateRigResponse resp;
    const grpc::Status st = stub->CreateRig(&ctx, req, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(st.error_message(), HasSubstr("animations go with rig"));
  }

  // Deleted with the rig: registered again without clips, it has none.
  ASSERT_TRUE(client->DeleteRig(rig).ok());
  EXPECT_EQ(client->GetAnimations(rig).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(client->CreateRig(proto).ok());
  EXPECT_TRUE(ClipNames(client->GetAnimations(rig)).empty());
}

TEST(StoredAnimations, EachTenantHasItsOwn) {
  const std::string dir = MakeTempDir("tokens");
  std::ofstream(dir + "/tokens.txt") << "token-alpha alpha\ntoken-beta beta\ntoken-gamma gamma\n";
  ServerProcess server(MakeTempDir("store"), {"--auth_tokens=" + dir + "/tokens.txt"});
  auto alpha = ClientOf(server, "token-alpha"), beta = ClientOf(server, "token-beta");
  auto created = alpha->CreateRigFromGltf(testing::FileBytes(SamplePath()));
  ASSERT_TRUE(created.ok()) << created.status();
  const std::string rig = created->rig().name();
  EXPECT_EQ(ClientOf(server, "token-gamma")->GetAnimations(rig).status().code(),
            absl::StatusCode::kPermissionDenied);
  // Beta registers the same rig with a clip of its own: it sees that one only, alpha its file's.
  auto full = alpha->GetRig(rig, v1::RIG_VIEW_FULL);
  ASSERT_TRUE(full.ok());
  v1::Rig proto = *full;
  proto.clear_name();
  ASSERT_TRUE(beta->CreateRig(proto, {Wave(*full, "beta-wave", 4)}).ok());
  EXPECT_THAT(ClipNames(beta->GetAnimations(rig)), ElementsAre("beta-wave"));
  EXPECT_THAT(ClipNames(alpha->GetAnimations(rig)), ElementsAre(created->animations(0).name()));
  // Beta's delete takes beta's clips only.
  ASSERT_TRUE(beta->DeleteRig(rig).ok());
  EXPECT_THAT(ClipNames(alpha->GetAnimations(rig)), ElementsAre(created->animations(0).name()));
  ASSERT_TRUE(beta->CreateRig(proto).ok());
  EXPECT_TRUE(ClipNames(beta->GetAnimations(rig)).empty());
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
