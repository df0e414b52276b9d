#include "core/weights/bbw_coarse_start.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"

namespace skinning {

absl::StatusOr<std::optional<Eigen::MatrixXd>> BbwCoarseStart(const Mesh& mesh, const VoxelGridOptions& voxel,
                                                             const VolumeDomain& fine,
                                                             const HandleNodesOn& handle_nodes_on,
                                                             const BbwOptions& options, const Progress& progress,
                                                             std::string* detail) {
  const int resolution = voxel.resolution / 2;
  if (fine.kind != VolumeDomain::Kind::kVoxelGrid || options.coarsest_resolution <= 0 ||
      resolution < options.coarsest_resolution || resolution < VoxelGridOptions::kMinResolution)
    return std::nullopt;
  VoxelGridOptions coarse_voxel = voxel;
  coarse_voxel.resolution = resolution;
  absl::StatusOr<VolumeDomain> coarse = BuildVoxelDomain(mesh, coarse_voxel, nullptr, progress.Sub(0.0, 0.1));
  RETURN_IF_ERROR(progress.CheckCancelled());
  if (!coarse.ok()) return std::nullopt;
  absl::StatusOr<std::vector<std::vector<int>>> pinned = handle_nodes_on(*coarse);
  if (!pinned.ok()) return std::nullopt;
  BbwOptions raw = options;
  raw.normalize = false;  // the per-handle minimizers: their zero sets are the active sets
  BbwReport report;
  absl::StatusOr<Eigen::MatrixXd> W = BbwFromCoarseStart(mesh, coarse_voxel, *coarse, *pinned, handle_nodes_on, raw,
                                                         &report, progress.Sub(0.1, 1.0), detail);
  RETURN_IF_ERROR(progress.CheckCancelled());
  if (!W.ok()) return std::nullopt;
  ASSIGN_OR_RETURN(Eigen::MatrixXd at_fine, InterpolateOnGrid(*coarse, *W, fine.nodes));
  constexpr double kSnap = 1e-3;
  at_fine = at_fine.unaryExpr([](double v) { return v < kSnap ? 0.0 : v > 1.0 - kSnap ? 1.0 : v; });
  absl::StrAppendFormat(detail, "start from resolution %d (%d nodes, %s); ", resolution, coarse->num_nodes(),
                        report.BriefReport());
  return std::optional<Eigen::MatrixXd>(std::move(at_fine));
}

absl::StatusOr<Eigen::MatrixXd> BbwFromCoarseStart(const Mesh& mesh, const VoxelGridOptions& voxel,
                                                   const VolumeDomain& fine, const std::vector<std::vector<int>>& pinned,
                                                   const HandleNodesOn& handle_nodes_on, const BbwOptions& options,
                                                   BbwReport* report, const Progress& progress, std::string* detail) {
  constexpr double kCoarseShare = 0.2;
  ASSIGN_OR_RETURN(const std::optional<Eigen::MatrixXd> start,
                   BbwCoarseStart(mesh, voxel, fine, handle_nodes_on, options, progress.Sub(0.0, kCoarseShare), detail));
  return BoundedBiharmonicWeights(fine, pinned, options, report, progress.Sub(start ? kCoarseShare : 0.0, 1.0),
                                  start ? &*start : nullptr);
}

}  // namespace skinning
