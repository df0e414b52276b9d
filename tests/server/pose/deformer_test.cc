// One deformer per Deformer value, what each needs, and posing through them.
#include "server/pose/deformer.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/skinning/dqs.h"
#include "server/convert/convert.h"
#include "server/pose/posing.h"
#include "tests/support/fixtures.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::MakeInterleavedJointSetsTube;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::MakeTwoBoneTube;
using ::testing::HasSubstr;

std::vector<v1::Deformer> EveryDeformerValue() {
  std::vector<v1::Deformer> all;
  const google::protobuf::EnumDescriptor* d = v1::Deformer_descriptor();
  for (int i = 0; i < d->value_count(); ++i) all.push_back(static_cast<v1::Deformer>(d->value(i)->number()));
  return all;
}

TEST(DeformerRegistry, HasOneDeformerPerDeformerValue) {
  const DeformerRegistry& registry = DeformerRegistry::Default();
  std::set<int> kinds;
  for (v1::Deformer kind : EveryDeformerValue()) {
    auto deformer = registry.Find(kind);
    ASSERT_TRUE(deformer.ok()) << DeformerName(kind) << ": " << deformer.status();
    EXPECT_EQ((*deformer)->kind(), kind);
    kinds.insert(kind);
  }
  EXPECT_EQ(registry.all().size(), kinds.size()) << "no deformer twice, none outside the enum";
  auto unknown = registry.Find(static_cast<v1::Deformer>(42));
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.status().message(), HasSubstr("deformer = 42 is not a Deformer"));
}

TEST(DeformerRegistry, LabelsAreTheMetricsLabelsOfBefore) {
  EXPECT_EQ(DeformerLabel(v1::DEFORMER_UNSPECIFIED), "lbs");
  EXPECT_EQ(DeformerLabel(v1::DEFORMER_DQS), "dqs");
  EXPECT_EQ(DeformerLabel(v1::DEFORMER_STBS_LBS), "stbs_lbs");
  EXPECT_EQ(DeformerLabel(v1::DEFORMER_ELASTIC), "elastic");
  EXPECT_EQ(DeformerLabel(v1::DEFORMER_PSD_SUPPORT_DQS), "psd_support_dqs");
}

TEST(DeformerRegistry, DeformersOfABakeNameTheBakeToRun) {
  PoseTarget target;
  target.rig = PrepareRig("rig-0123456789abcdef0123456789abcdef", MakeTwoBoneTube(), v1::Rig());
  int with_bakes = 0;
  for (const auto& deformer : DeformerRegistry::Default().all()) {
    if (deformer->bake_method() == nullptr) continue;
    ++with_bakes;
    absl::Status s = deformer->CheckTarget(target, /*geometry=*/true);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << DeformerName(deformer->kind());
    EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("StartBake with options.", deformer->bake_method())));
    EXPECT_EQ(DeformerRegistry::Default().ForBakeMethod(deformer->bake_method())->bake_method(),
              std::string(deformer->bake_method()));
  }
  EXPECT_EQ(with_bakes, 4);  // STBS over LBS and DQS, swing/twist, elastic
}

class PoserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto blobs = OpenFilesystemBlobStore(MakeTempDir("rigs"));
    ASSERT_TRUE(blobs.ok());
    rigs_ = std::make_unique<RigStore>(*std::move(blobs), 1 << 30);
    poser_ = std::make_unique<Poser>(rigs_.get(), nullptr, nullptr, nullptr);
    auto with = rigs_->Register(RigToProto(MakeTwoBoneTube()));
    ASSERT_TRUE(with.ok());
    with_weights_ = "rigs/" + with->rig_id;
    v1::Rig bare = RigToProto(MakeTwoBoneTube());
    bare.clear_weights();
    auto without = rigs_->Register(bare);
    ASSERT_TRUE(without.ok());
    without_weights_ = "rigs/" + without->rig_id;
  }

  std::unique_ptr<RigStore> rigs_;
  std::unique_ptr<Poser> poser_;
  std::string with_weights_, without_weights_;
};

TEST_F(PoserTest, TheBindPoseGivesTheInputBackForEveryDeformerWithoutABake) {
  auto target = poser_->Open("", with_weights_, "");
  ASSERT_TRUE(target.ok()) << target.status();
  v1::PoseOutputs outputs;
  outputs.set_vertices(true);
  outputs.set_normals(true);
  for (v1::Deformer kind : {v1::DEFORMER_UNSPECIFIED, v1::DEFORMER_DQS, v1::DEFORMER_PSD_LBS, v1::DEFORMER_PSD_DQS}) {
    auto deformer = poser_->Use(kind, "", &*target);
    ASSERT_TRUE(deformer.ok()) << deformer.status();
    v1::PosedFrame frame;
    ASSERT_TRUE(poser_->Frame(*target, **deformer, v1::Pose(), outputs, &frame).ok()) << DeformerName(kind);
    const LoadedRig& rig = *target->rig;
    ASSERT_EQ(frame.vertices_size(), static_cast<int>(rig.positions.size()));
    ASSERT_EQ(frame.normals_size(), static_cast<int>(rig.normals.size()));
    for (int i = 0; i < frame.vertices_size(); ++i) ASSERT_EQ(frame.vertices(i), rig.positions[i]);
    for (int i = 0; i < frame.normals_size(); ++i) ASSERT_EQ(frame.normals(i), rig.normals[i]);
  }
}

TEST_F(PoserTest, MissingWeightsAndStretchOutsideStbsAreRefused) {
  auto bare = poser_->Open("", without_weights_, "");
  ASSERT_TRUE(bare.ok());
  const Deformer* lbs = *poser_->Use(v1::DEFORMER_UNSPECIFIED, "", &*bare);
  v1::PosedFrame frame;
  absl::Status s = poser_->Frame(*bare, *lbs, v1::Pose(), v1::PoseOutputs(), &frame);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("has no skinning weights"));
  v1::PoseOutputs transforms;
  transforms.set_transforms(true);
  ASSERT_TRUE(poser_->Frame(*bare, *lbs, v1::Pose(), transforms, &frame).ok()) << "transforms need no weights";
  EXPECT_EQ(frame.transforms_size(), 24);

  auto target = poser_->Open("", with_weights_, "");
  v1::Pose stretched;
  stretched.add_bone_stretch(1.5f);
  stretched.add_bone_stretch(1.f);
  s = poser_->Frame(*target, *lbs, stretched, v1::PoseOutputs(), &frame, "frames[2]");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("frames[2].bone_stretch / bone_twist are only used by DEFORMER_STBS_LBS"));
  // STBS without an endpoint bake: plain transforms without stretch, a precondition with it.
  const Deformer* stbs = *poser_->Use(v1::DEFORMER_STBS_DQS, "", &*target);
  EXPECT_TRUE(poser_->Frame(*target, *stbs, v1::Pose(), transforms, &frame).ok());
  s = poser_->Frame(*target, *stbs, stretched, transforms, &frame);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("needs an endpoint bake"));
}

// Values each in float range that overflow where they combine: the answer is INVALID_ARGUMENT
// naming the joint or vertex, never a frame of infinities and NaNs with OK.
TEST_F(PoserTest, PosesThatOverflowFloatAreRefusedNotAnsweredWithNaN) {
  auto target = poser_->Open("", with_weights_, "");
  ASSERT_TRUE(target.ok());
  v1::PoseOutputs vertices;
  vertices.set_vertices(true);
  v1::PoseOutputs transforms;
  transforms.set_transforms(true);
  auto pose_with = [](std::function<void(v1::Transform*)> root, std::function<void(v1::Transform*)> child) {
    v1::Pose p;
    root(p.add_joints());
    child(p.add_joints());
    return p;
  };
  auto scale = [](float s) {
    return [s](v1::Transform* t) {
      for (int a = 0; a < 3; ++a) t->add_scale(s);
    };
  };
  auto none = [](v1::Transform*) {};
  for (v1::Deformer kind : {v1::DEFORMER_UNSPECIFIED, v1::DEFORMER_DQS}) {
    SCOPED_TRACE(DeformerName(kind));
    const Deformer* deformer = *poser_->Use(kind, "", &*target);
    v1::PosedFrame frame;
    // Scales of 1e20 down the chain: joint 1's transform is 1e40.
    const v1::Pose chained = pose_with(scale(1e20f), scale(1e20f));
    for (const v1::PoseOutputs& outputs : {vertices, transforms}) {
      absl::Status s = poser_->Frame(*target, *deformer, chained, outputs, &frame, "frames[3]");
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(s.message(), HasSubstr("frames[3]: the skinning transform of joint 1 ("));
      EXPECT_THAT(s.message(), HasSubstr("overflow float"));
    }
    // A finite transform (a scale of 3e38) whose vertices overflow.
    absl::Status s = poser_->Frame(*target, *deformer, pose_with(scale(3e38f), none), vertices, &frame);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("the posed position of vertex "));
    EXPECT_TRUE(poser_->Frame(*target, *deformer, pose_with(scale(3e38f), none), transforms, &frame).ok());
    // Large but representable: answered.
    EXPECT_TRUE(poser_->Frame(*target, *deformer, pose_with(scale(1e10f), scale(1e10f)), vertices, &frame).ok());
    for (float v : frame.vertices()) ASSERT_TRUE(std::isfinite(v));
  }
}

// DQS skins through the weights' vertex order, prepared by the rig's first DQS frame that skins
// vertices: LBS, and DQS asked for transforms only, leave it unprepared (the rig cache's bytes
// unchanged); the first DQS frame with vertices prepares it (counted then, once), and that frame
// is DQS in the file's order.
TEST_F(PoserTest, DqsPreparesTheWeightsVertexOrderOnItsFirstFrameWithVertices) {
  const Rig rig = MakeInterleavedJointSetsTube();
  auto registered = rigs_->Register(RigToProto(rig));
  ASSERT_TRUE(registered.ok()) << registered.status();
  auto target = poser_->Open("", "rigs/" + registered->rig_id, "");
  ASSERT_TRUE(target.ok()) << target.status();
  const SparseWeights& W = target->rig->weights;
  const DqsLaneOrder expected = PrepareDqsLaneOrder(W);
  ASSERT_FALSE(expected.empty()) << "the fixture's order pays";
  const size_t loaded = rigs_->cache_stats().bytes;
  v1::Pose pose;  // each joint turned about x, y or z, at its rest place
  for (int j = 0; j < 8; ++j) {
    v1::Transform* t = pose.add_joints();
    const Eigen::Vector3d& at = rig.skeleton.joints[j].rest.translation;
    for (int c = 0; c < 3; ++c) t->add_translation(static_cast<float>(at[c]));
    const Eigen::Quaterniond q(Eigen::AngleAxisd(0.2 * (j + 1), Eigen::Vector3d::Unit(j % 3)));
    for (double c : {q.x(), q.y(), q.z(), q.w()}) t->add_rotation(static_cast<float>(c));
  }
  v1::PoseOutputs transforms_only;
  transforms_only.set_transforms(true);
  v1::PoseOutputs outputs = transforms_only;
  outputs.set_vertices(true);
  v1::PosedFrame frame;
  const Deformer* lbs = *poser_->Use(v1::DEFORMER_UNSPECIFIED, "", &*target);
  ASSERT_TRUE(poser_->Frame(*target, *lbs, pose, outputs, &frame).ok());
  EXPECT_EQ(rigs_->cache_stats().bytes, loaded);
  const Deformer* dqs = *poser_->Use(v1::DEFORMER_DQS, "", &*target);
  EXPECT_EQ(rigs_->cache_stats().bytes, loaded);
  ASSERT_TRUE(poser_->Frame(*target, *dqs, pose, transforms_only, &frame).ok());
  EXPECT_EQ(rigs_->cache_stats().bytes, loaded) << "transforms only: no vertices skinned";

  frame.Clear();
  ASSERT_TRUE(poser_->Frame(*target, *dqs, pose, outputs, &frame).ok());
  EXPECT_EQ(rigs_->cache_stats().bytes, loaded + expected.bytes());
  size_t prepared_now = 1;
  const DqsLaneOrder& lanes = target->rig->dqs_lanes.Get(W, &prepared_now);
  EXPECT_EQ(prepared_now, 0u) << "the frame prepared it";
  EXPECT_EQ(lanes.order, expected.order);
  const int n = W.rows();
  ASSERT_EQ(frame.transforms_size(), 8 * 12);
  ASSERT_EQ(frame.vertices_size(), 3 * n);
  std::vector<Eigen::Affine3d> T(8, Eigen::Affine3d::Identity());
  for (int j = 0; j < 8; ++j)
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c) T[j].matrix()(r, c) = frame.transforms(12 * j + 4 * r + c);
  std::vector<float> file_order(3 * n);
  DqsFloat(target->rig->positions.data(), n, W.joints.data(), W.weights.data(), W.k(), PrepareDqsFloat(T),
           file_order.data());
  for (int i = 0; i < 3 * n; ++i) ASSERT_NEAR(frame.vertices(i), file_order[i], 1e-5) << "coordinate " << i;
  double moved = 0;  // the pose moves the mesh (the check is not of the bind pose)
  for (int i = 0; i < 3 * n; ++i)
    moved = std::max(moved, std::abs(static_cast<double>(file_order[i]) - target->rig->positions[i]));
  EXPECT_GT(moved, 0.1);

  // Later DQS frames reuse it; the bytes are counted once.
  ASSERT_TRUE(poser_->Frame(*target, *dqs, pose, outputs, &frame).ok());
  EXPECT_EQ(rigs_->cache_stats().bytes, loaded + expected.bytes());
}

TEST_F(PoserTest, OpenChecksTheNamesAndTheBakesRig) {
  EXPECT_EQ(poser_->Open("", "rig-1", "").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(poser_->Open("", "rigs/rig-00000000000000000000000000000000", "").status().code(),
            absl::StatusCode::kNotFound);
  auto other = poser_->Open("", with_weights_, without_weights_ + "/bakes/bake-00000000000000000000000000000000");
  EXPECT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(other.status().message(), HasSubstr("belongs to rig '" + without_weights_ + "'"));
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
