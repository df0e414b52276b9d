// BBW's first active sets on a fine voxel grid from the solution on coarser grids of the same mesh.
#ifndef SKINNING_CORE_WEIGHTS_BBW_COARSE_START_H_
#define SKINNING_CORE_WEIGHTS_BBW_COARSE_START_H_

#include <Eigen/Core>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/geometry/mesh.h"
#include "core/geometry/volume_domain.h"
#include "core/util/progress.h"
#include "core/weights/bbw.h"

namespace skinning {

// The handle nodes of a domain: the caller's rasterization of its handles (RasterizeHandles,
// SplitSharedJoints, ...), the same for the coarse grids as for the fine one.
using HandleNodesOn = std::function<absl::StatusOr<std::vector<std::vector<int>>>(const VolumeDomain&)>;

// A start for BoundedBiharmonicWeights on `fine`, the voxel grid that `voxel` builds from `mesh`:
// the per-handle minimizers (not normalized) on the grid of half the resolution, itself started
// the same way while its own half is at least options.coarsest_resolution, interpolated to the
// fine nodes (InterpolateOnGrid; fine nodes off the coarse domain get NaN, so they start free).
// Values within 1e-3 of a bound are put on it: the coarse solution rises from its zero set over a
// coarse cell, which interpolation smears over the fine nodes in between, and the active-set
// solve releases whatever it should not hold. std::nullopt when there is no coarse grid to use:
// options.coarsest_resolution is 0 or above half the resolution, or a coarse grid cannot be
// built or solved (a bone it misses; the fine solve then starts from ADMM as before). CANCELLED
// when cancelled. `detail` gets "start from resolution 32 (3246 nodes, ...); " when one is made.
absl::StatusOr<std::optional<Eigen::MatrixXd>> BbwCoarseStart(const Mesh& mesh, const VoxelGridOptions& voxel,
                                                             const VolumeDomain& fine,
                                                             const HandleNodesOn& handle_nodes_on,
                                                             const BbwOptions& options, const Progress& progress,
                                                             std::string* detail);

// BoundedBiharmonicWeights(fine, pinned, options, report) started from BbwCoarseStart's start where
// there is one (else from ADMM, as BoundedBiharmonicWeights does alone): the three bakes that run
// BBW on a grid, and each coarse grid of BbwCoarseStart itself. `pinned` are fine's handle nodes
// (handle_nodes_on(fine)). The coarse grids report in the first fifth of `progress`; `detail`
// gets BbwCoarseStart's text. Errors as BoundedBiharmonicWeights's, and CANCELLED.
absl::StatusOr<Eigen::MatrixXd> BbwFromCoarseStart(const Mesh& mesh, const VoxelGridOptions& voxel,
                                                   const VolumeDomain& fine, const std::vector<std::vector<int>>& pinned,
                                                   const HandleNodesOn& handle_nodes_on, const BbwOptions& options,
                                                   BbwReport* report, const Progress& progress, std::string* detail);

}  // namespace skinning

#endif  // SKINNING_CORE_WEIGHTS_BBW_COARSE_START_H_
