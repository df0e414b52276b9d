#include "core/rig/pose.h"

#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/rig/skeleton.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::testing::HasSubstr;

Skeleton Chain3() {
  Skeleton s;
  s.joints.resize(3);
  for (int j = 0; j < 3; ++j) {
    s.joints[j].name = "j" + std::to_string(j);
    s.joints[j].parent = j - 1;
    s.joints[j].rest.translation = Eigen::Vector3d(j == 0 ? 0 : 1, 0, 0);
    s.joints[j].inverse_bind.translation() = Eigen::Vector3d(-j, 0, 0);
  }
  return s;
}

TEST(Skeleton, ValidChainPassesValidation) { EXPECT_TRUE(ValidateSkeleton(Chain3()).ok()); }

TEST(Skeleton, RejectsSelfParent) {
  Skeleton s = Chain3();
  s.joints[2].parent = 2;
  absl::Status st = ValidateSkeleton(s);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), HasSubstr("skeleton.joints[2]: parent 2 is itself"));
}

TEST(Skeleton, RejectsParentCycle) {
  Skeleton s = Chain3();
  s.joints[0].parent = 2;  // 0 → 2 → 1 → 0
  absl::Status st = ValidateSkeleton(s);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), HasSubstr("cycle"));
}

TEST(Skeleton, RejectsOutOfRangeParentAndSingularInverseBind) {
  Skeleton s = Chain3();
  s.joints[1].parent = 9;
  EXPECT_THAT(std::string(ValidateSkeleton(s).message()), HasSubstr("parent 9 is out of range (3 joints)"));
  s = Chain3();
  s.joints[1].inverse_bind.linear().setZero();
  EXPECT_THAT(std::string(ValidateSkeleton(s).message()), HasSubstr("joints[1].inverse_bind is singular"));
  // Singular relative to its own scale: a flattened axis is refused, a uniformly tiny scale (a
  // quantized file's dequantization, determinant 1e-15) is not.
  s = Chain3();
  s.joints[1].inverse_bind.linear() = Eigen::Vector3d(1, 1, 1e-14).asDiagonal();
  EXPECT_THAT(std::string(ValidateSkeleton(s).message()), HasSubstr("joints[1].inverse_bind is singular"));
  s = Chain3();
  s.joints[1].inverse_bind.linear() *= 1e-5;
  EXPECT_TRUE(ValidateSkeleton(s).ok()) << ValidateSkeleton(s);
}

// Rest transforms each in range that overflow float down the chain: every posed vertex of the
// rig would be infinite, so the rig is refused when registered.
TEST(Skeleton, RejectsRestTransformsThatOverflowFloatDownTheChain) {
  Skeleton s = Chain3();
  s.joints[1].rest.translation = Eigen::Vector3d(3e38, 0, 0);
  ASSERT_TRUE(ValidateSkeleton(s).ok()) << ValidateSkeleton(s);  // 3e38 alone is a float
  s.joints[2].rest.translation = Eigen::Vector3d(3e38, 0, 0);
  EXPECT_THAT(std::string(ValidateSkeleton(s).message()),
              HasSubstr("skeleton.joints[2] (" + s.joints[2].name + "): its rest transform in world space is beyond "
                        "float range"));
  s = Chain3();
  s.joints[0].rest.scale = Eigen::Vector3d::Constant(1e20);
  s.joints[1].rest.scale = Eigen::Vector3d::Constant(1e20);
  EXPECT_THAT(std::string(ValidateSkeleton(s).message()), HasSubstr("joints[1]"));
  s.joints[0].rest.scale = Eigen::Vector3d::Constant(1e-15);
  EXPECT_THAT(std::string(ValidateSkeleton(s).message()),
              HasSubstr("joints[0].rest.scale[0] = 1e-15 is zero or below 1e-12 in magnitude"));
}

TEST(Skeleton, TopologicalOrderPutsParentsFirstForAnyStorageOrder) {
  Skeleton s;
  s.joints.resize(4);
  s.joints[0].parent = 2;
  s.joints[1].parent = -1;
  s.joints[2].parent = 3;
  s.joints[3].parent = 1;
  auto order = TopologicalOrder(s);
  ASSERT_TRUE(order.ok());
  std::vector<int> position(4);
  for (int i = 0; i < 4; ++i) position[(*order)[i]] = i;
  for (int j = 0; j < 4; ++j) {
    if (s.joints[j].parent >= 0) {
      EXPECT_LT(position[s.joints[j].parent], position[j]);
    }
  }
}

TEST(ForwardKinematics, ComposesParentTransformsInOrder) {
  Skeleton s = Chain3();
  auto order = *TopologicalOrder(s);
  Pose pose = RestPose(s);
  pose.local[1].rotation = Eigen::AngleAxisd(M_PI / 2, Eigen::Vector3d::UnitZ());
  const auto world = ForwardKinematics(s, order, pose.local);
  // Joint 2 sits 1 along the x axis of joint 1, which is rotated 90° about z: at (1, 1, 0).
  EXPECT_TRUE(world[2].translation().isApprox(Eigen::Vector3d(1, 1, 0), 1e-12));
  EXPECT_TRUE(world[1].translation().isApprox(Eigen::Vector3d(1, 0, 0), 1e-12));
}

TEST(SkinningTransforms, RestPoseOfAConsistentSkeletonIsIdentity) {
  Skeleton s = Chain3();
  auto T = SkinningTransforms(s, *TopologicalOrder(s), RestPose(s));
  ASSERT_TRUE(T.ok());
  for (const auto& t : *T) EXPECT_TRUE(t.matrix().isIdentity(1e-12));
}

TEST(SkinningTransforms, EmptyPoseIsExactlyIdentity) {
  Skeleton s = Chain3();
  auto T = SkinningTransforms(s, *TopologicalOrder(s), Pose{});
  ASSERT_TRUE(T.ok());
  for (const auto& t : *T) EXPECT_EQ(t.matrix(), Eigen::Matrix4d::Identity());
}

TEST(SkinningTransforms, BindPoseLocalsGiveIdentityForInconsistentRest) {
  Skeleton s = Chain3();
  s.joints[1].rest.rotation = Eigen::AngleAxisd(0.7, Eigen::Vector3d(1, 2, 3).normalized());
  s.joints[2].rest.scale = Eigen::Vector3d(2, 2, 2);
  Pose bind{BindPoseLocals(s)};
  auto T = SkinningTransforms(s, *TopologicalOrder(s), bind);
  ASSERT_TRUE(T.ok());
  for (const auto& t : *T) EXPECT_TRUE(t.matrix().isIdentity(1e-12)) << t.matrix();
}

TEST(SkinningTransforms, RejectsWrongJointCountAndNonUnitRotation) {
  Skeleton s = Chain3();
  Pose pose = RestPose(s);
  pose.local.pop_back();
  auto T = SkinningTransforms(s, *TopologicalOrder(s), pose);
  EXPECT_THAT(std::string(T.status().message()), HasSubstr("pose has 2 joints, the skeleton has 3"));
  pose = RestPose(s);
  pose.local[1].rotation.coeffs() << 0, 0, 0, 2;
  T = SkinningTransforms(s, *TopologicalOrder(s), pose);
  EXPECT_THAT(std::string(T.status().message()), HasSubstr("pose.joints[1].rotation has norm 2"));
}

TEST(Transform, DecomposeAffineInvertsToAffineWithScale) {
  Transform t;
  t.translation = {1, -2, 3};
  t.rotation = Eigen::AngleAxisd(1.1, Eigen::Vector3d(0.3, -0.5, 0.8).normalized());
  t.scale = {0.5, 2, 3};
  const Transform back = DecomposeAffine(t.ToAffine());
  EXPECT_TRUE(back.ToAffine().matrix().isApprox(t.ToAffine().matrix(), 1e-12));
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
