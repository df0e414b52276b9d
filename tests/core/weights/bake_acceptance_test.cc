// Baked weights on the real characters of ../shared/data: the hand (tet mesh + skeleton), the
// arm (given libigl weights) and the glTF characters (artist weights).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/geometry/volume_domain.h"
#include "core/io/dmat.h"
#include "core/io/gltf.h"
#include "core/io/medit.h"
#include "core/io/obj.h"
#include "core/io/tgf.h"
#include "core/rig/bones.h"
#include "core/rig/pose.h"
#include "core/skinning/lbs.h"
#include "core/skinning/weights.h"
#include "core/weights/bake.h"
#include "core/weights/bbw.h"
#include "core/weights/handles.h"
#include "tests/support/data.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::DataPath;

struct Hand {
  TetMesh tets;
  Mesh surface;
  Skeleton skeleton;
};

absl::StatusOr<Hand> LoadHand() {
  Hand h;
  auto tets = ReadMedit(DataPath("libigl/hand/hand.mesh"));
  if (!tets.ok()) return tets.status();
  h.tets = *std::move(tets);
  // The boundary triangles use only the first vertices: the surface.
  const int nv = h.tets.F.maxCoeff() + 1;
  h.surface.V = h.tets.V.topRows(nv);
  h.surface.F = h.tets.F;
  auto graph = ReadTgf(DataPath("libigl/hand/hand.tgf"));
  if (!graph.ok()) return graph.status();
  auto skeleton = SkeletonFromBones(*graph);
  if (!skeleton.ok()) return skeleton.status();
  h.skeleton = *std::move(skeleton);
  return h;
}

// Bounds, partition of unity and the handle values of node weights W (#N by #handles): 1/k for
// each of the k handles that list a node, 0 for the others.
void ExpectBbwProperties(const Eigen::MatrixXd& W, const std::vector<std::vector<int>>& pinned, const char* what) {
  EXPECT_GE(W.minCoeff(), -1e-8) << what;
  EXPECT_LE(W.maxCoeff(), 1 + 1e-8) << what;
  EXPECT_LE((W.rowwise().sum().array() - 1).abs().maxCoeff(), 1e-8) << what;
  Eigen::MatrixXd listed = Eigen::MatrixXd::Zero(W.rows(), W.cols());
  for (size_t h = 0; h < pinned.size(); ++h)
    for (int node : pinned[h]) listed(node, static_cast<Eigen::Index>(h)) = 1;
  for (Eigen::Index node = 0; node < W.rows(); ++node) {
    const double k = listed.row(node).sum();
    if (k == 0) continue;
    for (Eigen::Index c = 0; c < W.cols(); ++c)
      ASSERT_NEAR(W(node, c), listed(node, c) / k, 1e-8) << what << ": handle " << c << " node " << node;
  }
}

// The hand's joints where two or more of its bones meet (from the .tgf, independently of the
// handles): the nodes libigl's boundary conditions split.
int SharedJointsOfTheHand() {
  auto graph = ReadTgf(DataPath("libigl/hand/hand.tgf"));
  if (!graph.ok()) return -1;
  std::vector<int> degree(graph->C.rows(), 0);
  for (Eigen::Index e = 0; e < graph->E.rows(); ++e) ++degree[graph->E(e, 0)], ++degree[graph->E(e, 1)];
  return static_cast<int>(std::count_if(degree.begin(), degree.end(), [](int d) { return d >= 2; }));
}

TEST(BakeAcceptance, HandBbwOnTheTetMeshAndOnVoxelsAreBoundedPinnedAndClose) {
  SKINNING_REQUIRE_DATA(DataPath("libigl/hand/hand.mesh"));
  auto hand = LoadHand();
  ASSERT_TRUE(hand.ok()) << hand.status();
  auto handles = JointHandles(hand->skeleton);
  ASSERT_TRUE(handles.ok());

  auto tet = BuildTetDomain(hand->tets.V, hand->tets.T, hand->surface.V);
  ASSERT_TRUE(tet.ok()) << tet.status();
  auto tet_pinned = RasterizeHandles(*tet, *handles);
  ASSERT_TRUE(tet_pinned.ok()) << tet_pinned.status();
  // libigl's split boundary conditions: on the tet mesh each joint where bones meet is one node
  // (reach 1e-6 of the diagonal), listed by every bone that meets there.
  auto tet_shared = SplitSharedJoints(*tet, *handles, &*tet_pinned);
  ASSERT_TRUE(tet_shared.ok()) << tet_shared.status();
  EXPECT_EQ(*tet_shared, SharedJointsOfTheHand());
  BbwReport tet_report;
  auto tet_w = BoundedBiharmonicWeights(*tet, *tet_pinned, {}, &tet_report);
  ASSERT_TRUE(tet_w.ok()) << tet_w.status();
  ExpectBbwProperties(*tet_w, *tet_pinned, "tet nodes");
  const Eigen::MatrixXd tet_v = tet->to_mesh * *tet_w;

  auto voxel = BuildVoxelDomain(hand->surface, {});
  ASSERT_TRUE(voxel.ok()) << voxel.status();
  auto voxel_pinned = RasterizeHandles(*voxel, *handles);
  ASSERT_TRUE(voxel_pinned.ok()) << voxel_pinned.status();
  auto voxel_shared = SplitSharedJoints(*voxel, *handles, &*voxel_pinned);
  ASSERT_TRUE(voxel_shared.ok()) << voxel_shared.status();
  EXPECT_GE(*voxel_shared, SharedJointsOfTheHand()) << "at least the nodes around each shared joint";
  BbwReport voxel_report;
  auto voxel_w = BoundedBiharmonicWeights(*voxel, *voxel_pinned, {}, &voxel_report);
  ASSERT_TRUE(voxel_w.ok()) << voxel_w.status();
  ExpectBbwProperties(*voxel_w, *voxel_pinned, "voxel nodes");
  const Eigen::MatrixXd voxel_v = voxel->to_mesh * *voxel_w;
  // The same checks at the mesh vertices.
  EXPECT_GE(voxel_v.minCoeff(), -1e-8);
  EXPECT_LE(voxel_v.maxCoeff(), 1 + 1e-8);
  EXPECT_LE((voxel_v.rowwise().sum().array() - 1).abs().maxCoeff(), 1e-8);

  const double mean_diff = (voxel_v - tet_v).cwiseAbs().mean();
  const double max_diff = (voxel_v - tet_v).cwiseAbs().maxCoeff();
  const double mean_l1 = (voxel_v - tet_v).cwiseAbs().rowwise().sum().mean();
  std::printf("hand BBW: tet %d nodes (%d shared at joints) %.2f s, voxel %d nodes (%d shared) %.2f s; voxel "
              "vs tet at the %d vertices: mean |diff| %.4f, max %.4f, mean L1 per vertex %.4f\n",
              tet->num_nodes(), *tet_shared, tet_report.seconds, voxel->num_nodes(), *voxel_shared,
              voxel_report.seconds, static_cast<int>(tet_v.rows()), mean_diff, max_diff, mean_l1);
  RecordProperty("voxel_vs_tet_mean_l1_per_vertex", std::to_string(mean_l1));
  RecordProperty("voxel_vs_tet_mean_abs_diff", std::to_string(mean_diff));
  // Two discretizations of one problem: close on average (each weight is in [0, 1]).
  EXPECT_LT(mean_diff, 0.03);
  // The dominant joint agrees at most vertices.
  int agree = 0;
  for (int i = 0; i < tet_v.rows(); ++i) {
    Eigen::Index a, b;
    tet_v.row(i).maxCoeff(&a);
    voxel_v.row(i).maxCoeff(&b);
    agree += a == b;
  }
  EXPECT_GT(agree, 0.9 * tet_v.rows());
}

TEST(BakeAcceptance, ArmBbwIsCloseToTheGivenLibiglWeights) {
  SKINNING_REQUIRE_DATA(DataPath("libigl/arm/arm.obj"));
  auto mesh = ReadObj(DataPath("libigl/arm/arm.obj"));
  auto graph = ReadTgf(DataPath("libigl/arm/arm.tgf"));
  auto given = ReadDmat(DataPath("libigl/arm/arm-weights.dmat"));
  ASSERT_TRUE(mesh.ok() && graph.ok() && given.ok());
  auto skeleton = SkeletonFromBones(*graph);
  ASSERT_TRUE(skeleton.ok());
  BakeOptions options;
  options.method = BakeMethod::kBbw;
  auto baked = Bake(*mesh, *skeleton, options);
  ASSERT_TRUE(baked.ok()) << baked.status();
  const Eigen::MatrixXd diff = (baked->weights - *given).cwiseAbs();
  std::printf("arm BBW (%s, %.2f s) vs arm-weights.dmat: mean |diff| %.4f, max %.4f\n",
              baked->report.domain.c_str(), baked->report.total_seconds, diff.mean(), diff.maxCoeff());
  RecordProperty("arm_bbw_mean_abs_diff", std::to_string(diff.mean()));
  RecordProperty("arm_bbw_max_abs_diff", std::to_string(diff.maxCoeff()));
  EXPECT_LT(diff.mean(), 0.05);
}

// BBW on a voxel grid starts its active sets from the grid of half the resolution
// (BbwOptions::coarsest_resolution) instead of ADMM: the same QP minimizers to the KKT tolerance,
// for the bone weights, the swing/twist deformer weights and the endpoint weights alike. Measured
// against the ADMM start (coarsest_resolution = 0) on a real character at the default resolution.
TEST(BakeAcceptance, BbwFromTheCoarseGridGivesTheWeightsOfTheAdmmStart) {
  const std::string path = DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(path);
  auto character = ReadGltf(path);
  ASSERT_TRUE(character.ok()) << character.status();
  for (BakeMethod method : {BakeMethod::kBbw, BakeMethod::kSwingTwist, BakeMethod::kEndpoint}) {
    BakeOptions options;
    options.method = method;
    options.source_weights = ToDense(character->weights, character->skeleton.size());
    options.emw.max_iterations = 1;  // the swing and twist weights are not what is compared
    BakeOptions admm = options;
    admm.bbw.coarsest_resolution = 0;
    auto coarse = Bake(character->mesh, character->skeleton, options);
    auto reference = Bake(character->mesh, character->skeleton, admm);
    ASSERT_TRUE(coarse.ok() && reference.ok()) << BakeMethodName(method) << ": " << coarse.status() << " / "
                                                << reference.status();
    EXPECT_THAT(coarse->report.detail, ::testing::HasSubstr("start from resolution 32")) << BakeMethodName(method);
    EXPECT_THAT(reference->report.detail, ::testing::Not(::testing::HasSubstr("start from"))) << BakeMethodName(method);
    const Eigen::MatrixXd& a = method == BakeMethod::kEndpoint ? coarse->endpoint : coarse->weights;
    const Eigen::MatrixXd& b = method == BakeMethod::kEndpoint ? reference->endpoint : reference->weights;
    ASSERT_EQ(a.rows(), b.rows());
    ASSERT_EQ(a.cols(), b.cols());
    const double diff = (a - b).cwiseAbs().maxCoeff();
    std::printf("%-12s coarse start %.2f s, ADMM start %.2f s, largest weight difference %.2e\n",
                BakeMethodName(method), coarse->report.total_seconds, reference->report.total_seconds, diff);
    EXPECT_LT(diff, 1e-5) << BakeMethodName(method);
  }
}

// LBS with baked weights over each character's animation against LBS with the artist weights:
// RMS vertex distance as % of the bounding-box diagonal.
class CharacterBakeTest : public ::testing::TestWithParam<const char*> {};

TEST_P(CharacterBakeTest, LbsWithBakedWeightsFollowsTheArtistWeights) {
  const std::string path = DataPath(GetParam());
  SKINNING_REQUIRE_DATA(path);
  auto character = ReadGltf(path);
  ASSERT_TRUE(character.ok()) << character.status();
  ASSERT_FALSE(character->animations.empty());
  const auto& anim = character->animations[0];
  const std::vector<int> order = *TopologicalOrder(character->skeleton);
  const double diag = BoundingBoxDiagonal(character->mesh.V);
  for (BakeMethod method : {BakeMethod::kBoneHeat, BakeMethod::kGeodesicVoxel, BakeMethod::kBbw}) {
    BakeOptions options;
    options.method = method;
    auto baked = Bake(character->mesh, character->skeleton, options);
    ASSERT_TRUE(baked.ok()) << BakeMethodName(method) << ": " << baked.status();
    double sum_sq = 0;
    long count = 0;
    for (int f = 0; f <= 10; ++f) {
      const double t = anim.start + (anim.end - anim.start) * f / 10;
      auto T = SkinningTransforms(character->skeleton, order, Pose{SampleAnimation(character->skeleton, anim, t)});
      ASSERT_TRUE(T.ok());
      RowMatrixX3d artist, ours;
      Lbs(character->mesh.V, character->weights, *T, &artist);
      Lbs(character->mesh.V, baked->sparse, *T, &ours);
      sum_sq += (artist - ours).rowwise().squaredNorm().sum();
      count += artist.rows();
    }
    const double rms_percent = 100 * std::sqrt(sum_sq / count) / diag;
    std::printf("%-40s %-15s RMS %.3f%% of the diagonal (bake %.2f s, %s)\n", GetParam(), BakeMethodName(method),
                rms_percent, baked->report.total_seconds, baked->report.domain.c_str());
    RecordProperty(std::string(BakeMethodName(method)) + "_rms_percent", std::to_string(rms_percent));
    // The aim is 1%; this bound catches a broken method, the figure is in the log.
    EXPECT_LT(rms_percent, 5.0) << BakeMethodName(method);
  }
}

INSTANTIATE_TEST_SUITE_P(SharedData, CharacterBakeTest,
                         ::testing::Values("gltf/SimpleSkin/SimpleSkin.gltf", "gltf/RiggedSimple/RiggedSimple.glb",
                                           "gltf/RiggedFigure/RiggedFigure.glb", "gltf/CesiumMan/CesiumMan.glb"),
                         [](const auto& info) { return testing::DataFileTestName(info.param); });

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
