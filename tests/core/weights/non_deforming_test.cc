// Joints that the character's own weights never use (an exported file's `_rootJoint` or
// `Armature` root) are non-deforming in every bake: no weight, and no need to lie in the mesh.
#include <gtest/gtest.h>

#include "core/skinning/weights.h"
#include "core/weights/bake.h"
#include "tests/support/data.h"
#include "tests/support/fixtures.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::DataPath;

// CesiumMan with an unweighted root joint outside the mesh (tests/support/fixtures.h).
struct RootedCharacter {
  Mesh mesh;
  Skeleton skeleton;
  Eigen::MatrixXd weights;  // column 0 (the new root) all zero
};

bool AddUnweightedRootBelow(RootedCharacter* out) {
  absl::StatusOr<Rig> rig = testing::CesiumManWithUnweightedRoot();
  if (!rig.ok()) return false;
  out->mesh = rig->mesh;
  out->skeleton = rig->skeleton;
  out->weights = *rig->dense_weights;
  return true;
}

TEST(NonDeformingJoints, AnUnweightedRootOutsideTheMeshBakesWithEveryVolumetricMethodAndGetsNoWeight) {
  SKINNING_REQUIRE_DATA(DataPath("gltf/CesiumMan/CesiumMan.glb"));
  RootedCharacter c;
  ASSERT_TRUE(AddUnweightedRootBelow(&c));
  ASSERT_TRUE(ValidateSkeleton(c.skeleton).ok()) << ValidateSkeleton(c.skeleton);
  for (BakeMethod method : {BakeMethod::kGeodesicVoxel, BakeMethod::kBbw, BakeMethod::kSwingTwist,
                            BakeMethod::kEndpoint, BakeMethod::kElasticModel, BakeMethod::kBoneHeat}) {
    SCOPED_TRACE(BakeMethodName(method));
    BakeOptions options;
    options.method = method;
    options.domain.voxel.resolution = 32;
    options.source_weights = c.weights;
    // Today's behaviour for a deforming joint outside the mesh: a clear refusal.
    if (method != BakeMethod::kBoneHeat && method != BakeMethod::kEndpoint) {
      auto refused = Bake(c.mesh, c.skeleton, options, {});
      ASSERT_FALSE(refused.ok()) << "the root lies outside the mesh and was not marked";
      EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
      EXPECT_NE(refused.status().message().find("skeleton.joints[0] lies outside the mesh"), std::string::npos)
          << refused.status();
    }
    options.non_deforming_joints = {0};
    auto baked = Bake(c.mesh, c.skeleton, options, {});
    ASSERT_TRUE(baked.ok()) << baked.status();
    if (method == BakeMethod::kElasticModel) continue;  // a model, no weights
    ASSERT_EQ(baked->weights.cols(), c.skeleton.size());
    EXPECT_EQ(baked->weights.col(0).cwiseAbs().maxCoeff(), 0.0) << "the unweighted root got weight";
    for (Eigen::MatrixXd BakeResult::*extra : {&BakeResult::swing, &BakeResult::twist})
      if (((*baked).*extra).size() > 0) {
        EXPECT_EQ(((*baked).*extra).col(0).cwiseAbs().maxCoeff(), 0.0);
      }
    for (int i = 0; i < baked->sparse.rows(); ++i)
      for (int k = 0; k < baked->sparse.k(); ++k)
        if (baked->sparse.joints(i, k) == 0) {
          EXPECT_EQ(baked->sparse.weights(i, k), 0.f) << "vertex " << i;
        }
  }
}

TEST(NonDeformingJoints, AnIndexOutOfRangeIsInvalidArgument) {
  SKINNING_REQUIRE_DATA(DataPath("gltf/CesiumMan/CesiumMan.glb"));
  RootedCharacter c;
  ASSERT_TRUE(AddUnweightedRootBelow(&c));
  BakeOptions options;
  options.method = BakeMethod::kBoneHeat;
  options.non_deforming_joints = {c.skeleton.size()};
  auto refused = Bake(c.mesh, c.skeleton, options, {});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
  EXPECT_NE(refused.status().message().find("options.non_deforming_joints[0]"), std::string::npos);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
