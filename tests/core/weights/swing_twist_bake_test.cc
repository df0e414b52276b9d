#include "core/weights/swing_twist_bake.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "tests/support/fixtures.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

TEST(BakeSwingTwist, CylinderDeformerRowsSumToOneSwingTwistOnTheElbowOnly) {
  Rig rig = testing::MakeCylinderRig();
  SwingTwistBakeOptions options;
  options.domain.voxel.resolution = 24;
  std::mutex mu;
  std::set<std::string> stages;
  double last_fraction = 0.0;
  bool monotone = true;
  std::string violation;
  std::atomic<bool> cancel{false};
  Progress progress(
      [&](const std::string& stage, double f) {
        std::lock_guard<std::mutex> lock(mu);
        stages.insert(stage);
        // The bake's own stages advance monotonically (inner solvers report finer stages).
        if (stage != "voxelize" && stage != "deformer weights" && stage != "swing/twist weights" &&
            stage != "done")
          return;
        if (f < last_fraction - 1e-12 && monotone) {
          monotone = false;
          violation = stage + " " + std::to_string(f) + " after " + std::to_string(last_fraction);
        }
        last_fraction = f;
      },
      &cancel);
  absl::StatusOr<SwingTwistBakeResult> r = BakeSwingTwist(rig.mesh, rig.skeleton, options, progress);
  ASSERT_TRUE(r.ok()) << r.status();
  const int nv = static_cast<int>(rig.mesh.V.rows());
  ASSERT_EQ(r->deformer.rows(), nv);
  ASSERT_EQ(r->deformer.cols(), 2);
  ASSERT_EQ(r->swing.rows(), nv);
  ASSERT_EQ(r->twist.cols(), 2);
  EXPECT_EQ(r->node_swing.rows(), r->domain.num_nodes());
  for (int i = 0; i < nv; ++i) EXPECT_NEAR(r->deformer.row(i).sum(), 1.0, 1e-12);
  EXPECT_GE(r->deformer.minCoeff(), 0.0);
  EXPECT_LE(r->deformer.maxCoeff(), 1.0);
  // Joint 0 (root) has no deformer: zero columns, default reports.
  ASSERT_FALSE(r->frames[0].deformer);
  ASSERT_TRUE(r->frames[1].deformer);
  EXPECT_EQ(r->swing.col(0).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_EQ(r->twist.col(0).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_EQ(r->swing_reports[0].iterations, 0);
  EXPECT_GT(r->twist_reports[1].iterations, 0);
  // The elbow's weights: ~0 at the root end, ~1 at the tip, within small overshoot.
  for (const Eigen::MatrixXd* W : {&r->swing, &r->twist}) {
    EXPECT_GE(W->col(1).minCoeff(), -0.05);
    EXPECT_LE(W->col(1).maxCoeff(), 1.05);
    for (int i = 0; i < nv; ++i) {
      const double x = rig.mesh.V(i, 0);
      if (x > 0.1 && x < 0.6) {
        EXPECT_LT((*W)(i, 1), 0.1) << "vertex " << i;
      }
      if (x > 1.4 && x < 1.9) {
        EXPECT_GT((*W)(i, 1), 0.9) << "vertex " << i;
      }
    }
  }
  // Deformer weights (point BBW at the joints): the root's near x = 0, the elbow's near x = 1.
  EXPECT_GT(r->deformer(0, 0), 0.9);                      // ring 0 at the root
  EXPECT_GT(r->deformer(20 * 24, 1), 0.7);                // ring 20 at the elbow
  EXPECT_GT(r->deformer(40 * 24, 1), r->deformer(40 * 24, 0));  // the tip nearer the elbow
  EXPECT_EQ(r->report.method, "swing_twist");
  EXPECT_NE(r->report.detail.find("weights in"), std::string::npos) << r->report.detail;
  std::printf("%s\n%s\n", r->report.domain.c_str(), r->report.detail.c_str());
  EXPECT_TRUE(stages.count("voxelize"));
  EXPECT_TRUE(stages.count("deformer weights"));
  EXPECT_TRUE(stages.count("swing/twist weights"));
  EXPECT_TRUE(monotone) << violation;
  EXPECT_NEAR(last_fraction, 1.0, 1e-12);
}

TEST(BakeSwingTwist, CancelledDuringSwingTwistWeightsReturnsCancelled) {
  Rig rig = testing::MakeCylinderRig();
  SwingTwistBakeOptions options;
  options.domain.voxel.resolution = 20;
  std::atomic<bool> cancel{false};
  Progress progress(
      [&](const std::string& stage, double) {
        if (stage == "emw") cancel = true;
      },
      &cancel);
  EXPECT_EQ(BakeSwingTwist(rig.mesh, rig.skeleton, options, progress).status().code(),
            absl::StatusCode::kCancelled);
}

TEST(BakeSwingTwist, RejectsInvalidMesh) {
  Rig rig = testing::MakeCylinderRig();
  rig.mesh.F(3, 1) = 100000;
  EXPECT_EQ(BakeSwingTwist(rig.mesh, rig.skeleton, SwingTwistBakeOptions()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(BuildElasticModel, SameDomainAsTheBakeAndRestPoseIsRest) {
  Rig rig = testing::MakeCylinderRig();
  VoxelGridOptions voxel;
  voxel.resolution = 20;
  absl::StatusOr<std::shared_ptr<const ElasticModel>> model =
      BuildElasticModel(rig.mesh, rig.skeleton, DomainOptions{voxel, std::nullopt});
  ASSERT_TRUE(model.ok()) << model.status();
  SwingTwistBakeOptions options;
  options.domain.voxel = voxel;
  absl::StatusOr<SwingTwistBakeResult> bake = BakeSwingTwist(rig.mesh, rig.skeleton, options);
  ASSERT_TRUE(bake.ok()) << bake.status();
  EXPECT_EQ((*model)->domain().num_nodes(), bake->domain.num_nodes());
  EXPECT_EQ((*model)->handle_nodes().size(), 2u);
  std::vector<Eigen::Affine3d> T(2, Eigen::Affine3d::Identity());
  absl::StatusOr<RowMatrixX3d> X = (*model)->Solve(T, nullptr, ElasticOptions());
  ASSERT_TRUE(X.ok());
  EXPECT_LT(((*model)->ToMesh(*X) - rig.mesh.V).cwiseAbs().maxCoeff(), 1e-9);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
