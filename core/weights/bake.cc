#include "core/weights/bake.h"

#include <chrono>

#include "absl/strings/str_format.h"
#include "core/rig/bones.h"

namespace skinning {
namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Columns of the deforming joints (domain result has one column per joint already).
absl::StatusOr<Eigen::MatrixXd> VolumetricBake(const Mesh& mesh, const std::vector<JointHandle>& handles,
                                               const BakeOptions& options, const Progress& progress,
                                               BakeReport* report) {
  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<VolumeDomain> domain;
  if (options.tet_mesh) {
    domain = BuildTetDomain(options.tet_mesh->TV, options.tet_mesh->TT, mesh.V, progress.Sub(0.0, 0.1));
    if (domain.ok())
      report->domain = absl::StrFormat("tet mesh (%d nodes, %d tets)", domain->num_nodes(), options.tet_mesh->TT.rows());
  } else {
    VoxelGridReport voxel_report;
    domain = BuildVoxelDomain(mesh, options.voxel, &voxel_report, progress.Sub(0.0, 0.1));
    if (domain.ok())
      report->domain = absl::StrFormat("voxel grid %d (%dx%dx%d cells, %d in the domain, %d nodes, spacing %g)",
                                       voxel_report.resolution, voxel_report.cells.x(), voxel_report.cells.y(),
                                       voxel_report.cells.z(), voxel_report.inside_cells, voxel_report.nodes,
                                       voxel_report.spacing);
  }
  if (!domain.ok()) return domain.status();
  report->domain_nodes = domain->num_nodes();
  absl::StatusOr<std::vector<std::vector<int>>> pinned = RasterizeHandles(*domain, handles);
  if (!pinned.ok()) return pinned.status();
  report->domain_seconds = Seconds(t0);
  const auto t1 = std::chrono::steady_clock::now();
  absl::StatusOr<Eigen::MatrixXd> node_weights;
  if (options.method == BakeMethod::kBbw) {
    BbwReport r;
    node_weights = BoundedBiharmonicWeights(*domain, *pinned, options.bbw, &r, progress.Sub(0.1, 1.0));
    int max_iterations = 0;
    for (int it : r.iterations) max_iterations = std::max(max_iterations, it);
    report->detail = absl::StrFormat("%d factorizations, at most %d active-set iterations per handle, %.3g s",
                                     r.factorizations, max_iterations, r.seconds);
  } else {
    GeodesicWeightsReport r;
    node_weights = GeodesicVoxelWeights(*domain, *pinned, options.geodesic, &r, progress.Sub(0.1, 1.0));
    report->detail = absl::StrFormat("falloff %g, %d unreachable nodes, %.3g s", options.geodesic.falloff,
                                     r.unreachable_nodes, r.seconds);
  }
  if (!node_weights.ok()) return node_weights.status();
  report->solve_seconds = Seconds(t1);
  // To the mesh: interpolation keeps rows summing to one and entries in [0, 1].
  Eigen::MatrixXd W = domain->to_mesh * *node_weights;
  return W;
}

}  // namespace

const char* BakeMethodName(BakeMethod method) {
  switch (method) {
    case BakeMethod::kBoneHeat:
      return "bone_heat";
    case BakeMethod::kGeodesicVoxel:
      return "geodesic_voxel";
    case BakeMethod::kBbw:
      return "bbw";
  }
  return "unknown";
}

absl::StatusOr<BakeResult> BakeWeights(const Mesh& mesh, const Skeleton& skeleton, const BakeOptions& options,
                                       const Progress& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  if (auto s = ValidateMesh(mesh); !s.ok()) return s;
  if (auto s = ValidateSkeleton(skeleton); !s.ok()) return s;
  if (options.influences < 1 || options.influences > BakeOptions::kMaxInfluences)
    return absl::InvalidArgumentError(absl::StrFormat("options.influences = %d must be in [1, %d]",
                                                      options.influences, BakeOptions::kMaxInfluences));
  if (options.tet_mesh && options.method == BakeMethod::kBoneHeat)
    return absl::InvalidArgumentError("options.tet_mesh: bone heat works on the surface and takes no tet mesh");
  absl::StatusOr<std::vector<JointHandle>> handles = JointHandles(skeleton);
  if (!handles.ok()) return handles.status();
  int deforming = 0;
  for (const JointHandle& h : *handles) deforming += h.deforms;
  if (deforming == 0) return absl::InvalidArgumentError("skeleton has no deforming joint to bake weights for");

  BakeResult result;
  result.report.method = BakeMethodName(options.method);
  absl::StatusOr<Eigen::MatrixXd> W;
  if (options.method == BakeMethod::kBoneHeat) {
    result.report.domain = "surface";
    result.report.domain_nodes = static_cast<int>(mesh.V.rows());
    BoneHeatReport r;
    const auto t1 = std::chrono::steady_clock::now();
    W = BoneHeatWeights(mesh, *handles, options.bone_heat, &r, progress);
    result.report.solve_seconds = Seconds(t1);
    result.report.detail = absl::StrFormat("%d vertices without a visible bone, %.3g s",
                                           r.vertices_without_visible_bone, r.seconds);
  } else {
    W = VolumetricBake(mesh, *handles, options, progress, &result.report);
  }
  if (!W.ok()) return W.status();
  if (auto s = progress.CheckCancelled(); !s.ok()) return s;
  result.dense = *std::move(W);
  // Exact partition of unity and bounds on the vertices (interpolation keeps them up to rounding).
  result.dense = result.dense.cwiseMax(0.0).cwiseMin(1.0);
  for (int i = 0; i < result.dense.rows(); ++i) {
    const double sum = result.dense.row(i).sum();
    if (!(sum > 0))
      return absl::InternalError(absl::StrFormat("vertex %d received no weight from %s", i, result.report.method));
    result.dense.row(i) /= sum;
  }
  result.sparse = TopK(result.dense, std::min<int>(options.influences, static_cast<int>(result.dense.cols())));
  result.report.total_seconds = Seconds(t0);
  progress.Report("done", 1.0);
  return result;
}

}  // namespace skinning
