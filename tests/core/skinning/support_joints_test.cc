// Support joints (core/skinning/support_joints.h): which joints get one, the transform's defining
// properties, and the geodesic voxel distance.
#include "core/skinning/support_joints.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "core/rig/pose.h"
#include "tests/support/fixtures.h"
#include "tests/support/psd_fixtures.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using testing::ElbowPose;
using testing::MakePsdArm;

std::vector<Eigen::Affine3d> Transforms(const Skeleton& skeleton, const Pose& pose) {
  auto order = TopologicalOrder(skeleton);
  return *SkinningTransforms(skeleton, *order, pose);
}

TEST(SupportJointsTest, FindsTheBentElbowWithItsParentAndTail) {
  const Rig rig = MakePsdArm(21, 12);
  const auto found =
      FindSupportJoints(rig.skeleton, {ElbowPose(rig.skeleton, 0.4).local, RestPose(rig.skeleton).local});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].joint, 1);
  EXPECT_EQ(found[0].parent, 0);
  EXPECT_TRUE(found[0].joint_position.isApprox(Eigen::Vector3d(1, 0, 0)));
  EXPECT_TRUE(found[0].parent_position.isZero());
  EXPECT_TRUE(found[0].child_position.isApprox(Eigen::Vector3d(1.9, 0, 0)));  // the tail
  EXPECT_DOUBLE_EQ(found[0].parent_length(), 1.0);
}

TEST(SupportJointsTest, NoSupportJointWithoutABentChildJoint) {
  const Rig rig = MakePsdArm(21, 12);
  Pose root_turn = RestPose(rig.skeleton);
  root_turn.local[0].rotation = Eigen::AngleAxisd(0.7, Eigen::Vector3d::UnitZ());
  EXPECT_TRUE(FindSupportJoints(rig.skeleton, {root_turn.local}).empty());
  EXPECT_TRUE(FindSupportJoints(rig.skeleton, {RestPose(rig.skeleton).local}).empty());
}

TEST(SupportJointsTest, TransformIsIdentityAtTheBindPose) {
  const Rig rig = MakePsdArm(21, 12);
  const auto sj = FindSupportJoints(rig.skeleton, {ElbowPose(rig.skeleton, 0.4).local});
  ASSERT_EQ(sj.size(), 1u);
  const auto T = Transforms(rig.skeleton, RestPose(rig.skeleton));
  for (double x : {0.0, 0.3, 1.0})
    EXPECT_TRUE(SupportJointTransform(sj[0], T, x).matrix().isApprox(Eigen::Matrix4d::Identity(), 1e-12))
        << x;
}

TEST(SupportJointsTest, TransformIsRigidAndCarriesSlidePointAndChild) {
  const Rig rig = MakePsdArm(21, 12);
  const auto sj = FindSupportJoints(rig.skeleton, {ElbowPose(rig.skeleton, 0.4).local});
  ASSERT_EQ(sj.size(), 1u);
  // A posed root too, so the parent's transform is not the identity.
  Pose pose = ElbowPose(rig.skeleton, 1.1, 0.3);
  pose.local[0].rotation = Eigen::AngleAxisd(0.5, Eigen::Vector3d(1, 2, 3).normalized());
  pose.local[0].translation = Eigen::Vector3d(0.2, -0.1, 0.4);
  const auto T = Transforms(rig.skeleton, pose);
  for (double x : {0.0, 0.25, 0.6, 1.0}) {
    const Eigen::Affine3d A = SupportJointTransform(sj[0], T, x);
    const Eigen::Matrix3d L = A.linear();
    EXPECT_TRUE((L.transpose() * L).isApprox(Eigen::Matrix3d::Identity(), 1e-12));
    EXPECT_NEAR(L.determinant(), 1.0, 1e-12);
    const Eigen::Vector3d s = sj[0].joint_position + x * (sj[0].parent_position - sj[0].joint_position);
    // The slide point moves with the parent bone; the virtual bone s → c is re-aimed at the
    // posed child end point (direction; its length changes when the joint bends unless x = 0).
    EXPECT_LE((A * s - T[0] * s).norm(), 1e-12) << x;
    const Eigen::Vector3d aimed = A * sj[0].child_position - A * s;
    const Eigen::Vector3d target = T[1] * sj[0].child_position - T[0] * s;
    EXPECT_NEAR(aimed.normalized().dot(target.normalized()), 1.0, 1e-12) << x;
    EXPECT_NEAR(aimed.norm(), (sj[0].child_position - s).norm(), 1e-12) << x;
    if (x == 0.0) {
      EXPECT_LE((aimed - target).norm(), 1e-12);
    }
  }
}

TEST(SupportJointsTest, ZeroSlideOfAPureSwingIsTheBentJointsTransform) {
  const Rig rig = MakePsdArm(21, 12);
  const auto sj = FindSupportJoints(rig.skeleton, {ElbowPose(rig.skeleton, 0.4).local});
  ASSERT_EQ(sj.size(), 1u);
  // Bend about y is perpendicular to the bone (x): the smallest rotation is the bend itself.
  const auto T = Transforms(rig.skeleton, ElbowPose(rig.skeleton, 1.2));
  EXPECT_TRUE(SupportJointTransform(sj[0], T, 0.0).matrix().isApprox(T[1].matrix(), 1e-12));
  // At slide 1 the virtual bone runs from the root to the child end: the rotation angle is the
  // angle the posed child end makes with the rest one, seen from the root.
  const Eigen::Affine3d A1 = SupportJointTransform(sj[0], T, 1.0);
  const Eigen::Vector3d c = sj[0].child_position, c_posed = T[1] * c;
  const double expected = std::acos(c.normalized().dot(c_posed.normalized()));
  EXPECT_NEAR(Eigen::AngleAxisd(A1.linear()).angle(), expected, 1e-12);
}

TEST(SupportJointsTest, GeodesicDistanceMatchesEuclideanInsideAConvexArm) {
  const Rig rig = MakePsdArm(31, 16);
  VoxelGridOptions vo;
  vo.resolution = 32;
  auto domain = BuildVoxelDomain(rig.mesh, vo);
  ASSERT_TRUE(domain.ok()) << domain.status();
  const Eigen::Vector3d elbow(1, 0, 0);
  auto g = GeodesicVertexDistances(*domain, elbow);
  ASSERT_TRUE(g.ok()) << g.status();
  const double h = domain->spacing;
  for (int i = 0; i < rig.mesh.V.rows(); ++i) {
    const double e = (rig.mesh.V.row(i).transpose() - elbow).norm();
    ASSERT_TRUE(std::isfinite((*g)[i]));
    // 26-neighbour paths overestimate straight lines by at most ~8.3% (worst direction), plus
    // the start and the trilinear interpolation within a cell.
    EXPECT_GE((*g)[i], e - 2 * h) << i;
    EXPECT_LE((*g)[i], 1.09 * e + 2 * h) << i;
  }
}

TEST(SupportJointsTest, GeodesicDistanceGoesAroundAGap) {
  // A U: two parallel bars joined at one end. From the tip of one bar the other bar's tip is
  // close in space but far inside the shape.
  Rig box = testing::MakeBoxRig(41, 5, 2.0, 0.1);
  RowMatrixX3d V = box.mesh.V;
  // Fold the bar in the middle (x = 1) by 180° about the z axis through (1, 0.2, 0), leaving a gap.
  for (int i = 0; i < V.rows(); ++i) {
    if (V(i, 0) <= 1.0) continue;
    const double u = V(i, 0) - 1.0;
    V(i, 0) = 1.0 - u;
    V(i, 1) = 0.4 - V(i, 1);
  }
  // The fold leaves the x = 1 faces of both halves touching a connector: add it as a thick end.
  Mesh mesh;
  mesh.V = V;
  mesh.F = box.mesh.F;
  VoxelGridOptions vo;
  vo.resolution = 40;
  auto domain = BuildVoxelDomain(mesh, vo);
  ASSERT_TRUE(domain.ok()) << domain.status();
  // Tip of the lower bar near the origin; the upper bar's tip is ~0.4 away in space.
  auto g = GeodesicVertexDistances(*domain, Eigen::Vector3d(0.05, 0, 0));
  ASSERT_TRUE(g.ok()) << g.status();
  double upper_tip = -1;
  for (int i = 0; i < V.rows(); ++i)
    if (V(i, 0) < 0.02 && V(i, 1) > 0.35) upper_tip = std::max(upper_tip, (*g)[i]);
  ASSERT_GT(upper_tip, 0);
  ASSERT_TRUE(std::isfinite(upper_tip));
  EXPECT_GT(upper_tip, 1.5);  // around the fold: ~2 along the bars
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
