// Pose space deformation with examples made by physics: the elastic gold standard (the
// corotational solid with the bones' voxels fixed, core/solve/elastic.h) bends the cylinder arm at
// the example angles; at held-out angles the result is compared with the gold standard there.
#include <cmath>
#include <cstdio>
#include <vector>

#include <gtest/gtest.h>

#include "core/skinning/lbs.h"
#include "core/skinning/psd.h"
#include "core/solve/elastic.h"
#include "core/weights/swing_twist_bake.h"
#include "tests/support/psd_fixtures.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

constexpr double kDeg = M_PI / 180;

// Plain PSD beats LBS at every held-out pose. Support joints are measured and printed, not
// asserted: with physics-made examples they do not beat plain PSD over LBS (bench/psd_bench has
// the table; the synthetic-bulge tests in psd_test.cc show where they do).
TEST(PsdGoldStandard, ExamplesAreReproducedAndPlainPsdBeatsLbsAtHeldOutPoses) {
  const Rig rig = testing::MakePsdArm(81, 32);
  const SparseWeights& W = *rig.sparse_weights;
  const std::vector<int> order = *TopologicalOrder(rig.skeleton);
  VoxelGridOptions voxel;
  voxel.resolution = 40;
  auto gold = BuildElasticModel(rig.mesh, rig.skeleton, DomainOptions{voxel, std::nullopt});
  ASSERT_TRUE(gold.ok()) << gold.status();
  auto truth = [&](double bend, double twist) {
    const auto T = *SkinningTransforms(rig.skeleton, order, testing::ElbowPose(rig.skeleton, bend * kDeg, twist * kDeg));
    auto X = (*gold)->Solve(T, nullptr, ElasticOptions());
    EXPECT_TRUE(X.ok()) << X.status();
    return (*gold)->ToMesh(*X);
  };
  std::vector<PsdExample> examples;
  for (double b : {0.0, 45.0, 90.0, 135.0})
    examples.push_back({"bend-" + std::to_string(static_cast<int>(b)), testing::ElbowPose(rig.skeleton, b * kDeg), truth(b, 0)});
  PsdOptions plain, support;
  support.support_joints = true;
  auto psd = PsdModel::Build(rig.mesh, rig.skeleton, W, examples, plain);
  auto sup = PsdModel::Build(rig.mesh, rig.skeleton, W, examples, support);
  ASSERT_TRUE(psd.ok()) << psd.status();
  ASSERT_TRUE(sup.ok()) << sup.status();
  const double diag = BoundingBoxDiagonal(rig.mesh.V);
  // Every example is reproduced (to 1e-6 of the diagonal) by both.
  for (const PsdExample& e : examples) {
    RowMatrixX3d U;
    ASSERT_TRUE((*psd)->Deform(e.pose, &U).ok());
    EXPECT_LT((U - e.V).rowwise().norm().maxCoeff(), 1e-6 * diag) << e.name;
    ASSERT_TRUE((*sup)->Deform(e.pose, &U).ok());
    EXPECT_LT((U - e.V).rowwise().norm().maxCoeff(), 1e-6 * diag) << e.name;
  }
  for (const auto& [bend, twist] : std::vector<std::pair<double, double>>{{30, 0}, {60, 5}, {110, -5}, {120, 10}}) {
    const Pose pose = testing::ElbowPose(rig.skeleton, bend * kDeg, twist * kDeg);
    const RowMatrixX3d t = truth(bend, twist);
    RowMatrixX3d lbs, a, b;
    Lbs(rig.mesh.V, W, *SkinningTransforms(rig.skeleton, order, pose), &lbs);
    ASSERT_TRUE((*psd)->Deform(pose, &a).ok());
    ASSERT_TRUE((*sup)->Deform(pose, &b).ok());
    const double e_lbs = 100 * testing::RmsDistance(lbs, t) / diag;
    const double e_psd = 100 * testing::RmsDistance(a, t) / diag;
    const double e_sup = 100 * testing::RmsDistance(b, t) / diag;
    std::printf("  bend %3.0f twist %+3.0f: RMS %% of diagonal  LBS %.4f  PSD %.4f  PSD+support %.4f\n", bend, twist,
                e_lbs, e_psd, e_sup);
    EXPECT_LT(e_psd, e_lbs) << "bend " << bend;
  }
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
