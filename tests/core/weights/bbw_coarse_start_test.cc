#include "core/weights/bbw_coarse_start.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <string>
#include <vector>

#include "core/rig/bones.h"
#include "core/weights/handles.h"
#include "tests/support/fixtures.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::MakeTwoBoneTube;
using ::testing::HasSubstr;

struct Tube {
  Rig rig;
  std::vector<JointHandle> handles;
  VoxelGridOptions voxel;
  VolumeDomain fine;
  HandleNodesOn bone_nodes;
};

Tube TubeAt(int resolution) {
  Tube s;
  s.rig = MakeTwoBoneTube();
  s.handles = *JointHandles(s.rig.skeleton);
  s.voxel.resolution = resolution;
  s.fine = *BuildVoxelDomain(s.rig.mesh, s.voxel);
  s.bone_nodes = [handles = s.handles](const VolumeDomain& d) { return RasterizeHandles(d, handles); };
  return s;
}

// The start on a 32-cell tube from 16 and, below it, 8 cells: the coarse per-handle minimizers
// at the fine nodes, snapped to the bounds within 1e-3, so that it holds the first active sets;
// BBW from it reaches the weights of the ADMM start.
TEST(BbwCoarseStart, StartsFromEachCoarserGridDownToTheCoarsestResolution) {
  const Tube s = TubeAt(32);
  BbwOptions options;
  options.coarsest_resolution = 8;
  std::string detail;
  absl::StatusOr<std::optional<Eigen::MatrixXd>> start =
      BbwCoarseStart(s.rig.mesh, s.voxel, s.fine, s.bone_nodes, options, {}, &detail);
  ASSERT_TRUE(start.ok()) << start.status();
  ASSERT_TRUE(start->has_value());
  const Eigen::MatrixXd& x = **start;
  ASSERT_EQ(x.rows(), s.fine.num_nodes());
  ASSERT_EQ(x.cols(), static_cast<Eigen::Index>(s.handles.size()));
  EXPECT_THAT(detail, HasSubstr("start from resolution 8"));
  EXPECT_THAT(detail, HasSubstr("start from resolution 16"));
  EXPECT_LT(detail.find("resolution 8"), detail.find("resolution 16")) << detail;  // coarsest first
  int at_bounds = 0;
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const double v = x.data()[i];
    if (std::isnan(v)) continue;
    EXPECT_FALSE(v > 0 && v < 1e-3) << v;
    EXPECT_FALSE(v < 1 && v > 1 - 1e-3) << v;
    at_bounds += v == 0 || v == 1;
  }
  EXPECT_GT(at_bounds, 0);

  absl::StatusOr<std::vector<std::vector<int>>> pinned = s.bone_nodes(s.fine);
  ASSERT_TRUE(pinned.ok());
  BbwOptions admm = options;
  admm.coarsest_resolution = 0;
  absl::StatusOr<Eigen::MatrixXd> from_start = BoundedBiharmonicWeights(s.fine, *pinned, options, nullptr, {}, &x);
  absl::StatusOr<Eigen::MatrixXd> from_admm = BoundedBiharmonicWeights(s.fine, *pinned, admm);
  ASSERT_TRUE(from_start.ok() && from_admm.ok());
  EXPECT_LT((*from_start - *from_admm).cwiseAbs().maxCoeff(), 1e-5);
}

// No start where there is no coarser grid to use: 0 turns it off, a fine grid below twice the
// coarsest resolution has none, and a tet domain has no grid. A coarse grid whose handles cannot
// be placed (here: the rasterization fails) leaves the fine solve to ADMM instead of failing it.
TEST(BbwCoarseStart, NoStartWithoutAUsableCoarserGrid) {
  const Tube s = TubeAt(32);
  std::string detail;
  BbwOptions off;
  off.coarsest_resolution = 0;
  BbwOptions too_fine;
  too_fine.coarsest_resolution = 17;
  for (const BbwOptions& o : {off, too_fine}) {
    absl::StatusOr<std::optional<Eigen::MatrixXd>> start =
        BbwCoarseStart(s.rig.mesh, s.voxel, s.fine, s.bone_nodes, o, {}, &detail);
    ASSERT_TRUE(start.ok()) << start.status();
    EXPECT_FALSE(start->has_value()) << o.coarsest_resolution;
  }
  BbwOptions options;
  options.coarsest_resolution = 16;
  int calls = 0;
  const HandleNodesOn failing = [&calls](const VolumeDomain&) -> absl::StatusOr<std::vector<std::vector<int>>> {
    ++calls;
    return absl::FailedPreconditionError("a bone lies outside the mesh");
  };
  absl::StatusOr<std::optional<Eigen::MatrixXd>> start =
      BbwCoarseStart(s.rig.mesh, s.voxel, s.fine, failing, options, {}, &detail);
  ASSERT_TRUE(start.ok()) << start.status();
  EXPECT_FALSE(start->has_value());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(detail, "");

  VolumeDomain tets = s.fine;
  tets.kind = VolumeDomain::Kind::kTetMesh;
  start = BbwCoarseStart(s.rig.mesh, s.voxel, tets, s.bone_nodes, options, {}, &detail);
  ASSERT_TRUE(start.ok());
  EXPECT_FALSE(start->has_value());
}

TEST(BbwCoarseStart, CancelledIsCancelled) {
  const Tube s = TubeAt(32);
  BbwOptions options;
  options.coarsest_resolution = 16;
  std::atomic<bool> cancel{true};
  std::string detail;
  absl::StatusOr<std::optional<Eigen::MatrixXd>> start =
      BbwCoarseStart(s.rig.mesh, s.voxel, s.fine, s.bone_nodes, options, Progress(nullptr, &cancel), &detail);
  EXPECT_EQ(start.status().code(), absl::StatusCode::kCancelled);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
