// Volume-domain options and reports, the one domain builder (BuildDomain) and node lookup. The
// builders themselves: voxel_domain.cc, tet_domain.cc.
#include "core/geometry/volume_domain.h"

#include <chrono>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "core/util/option_checks.h"
#include "core/util/status_macros.h"
#include "core/util/timing.h"

namespace skinning {

absl::Status VoxelGridOptions::Validate() const {
  RETURN_IF_ERROR(CheckInRange("options.voxel.resolution", resolution, kMinResolution, kMaxResolution));
  return CheckPositive("options.voxel.winding_threshold", winding_threshold);
}

std::string VoxelGridReport::BriefReport() const {
  return absl::StrFormat("voxel grid %d (%dx%dx%d cells, %d in the domain, %d nodes, spacing %g)",
                         resolution, cells.x(), cells.y(), cells.z(), inside_cells, nodes, spacing);
}

absl::Status DomainOptions::Validate() const {
  if (tet_mesh) return absl::OkStatus();
  return voxel.Validate();
}

std::string DomainReport::BriefReport() const {
  if (kind == VolumeDomain::Kind::kVoxelGrid) return voxel.BriefReport();
  return absl::StrFormat("tet mesh (%d nodes, %d tets)", nodes, tets);
}

absl::StatusOr<VolumeDomain> BuildDomain(const Mesh& mesh, const DomainOptions& options,
                                         DomainReport* report, const Progress& progress) {
  const auto start_time = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(options.Validate());
  DomainReport r;
  VolumeDomain domain;
  if (options.tet_mesh) {
    r.kind = VolumeDomain::Kind::kTetMesh;
    r.tets = static_cast<int>(options.tet_mesh->TT.rows());
    ASSIGN_OR_RETURN(domain,
                     BuildTetDomain(options.tet_mesh->TV, options.tet_mesh->TT, mesh.V, progress));
  } else {
    r.kind = VolumeDomain::Kind::kVoxelGrid;
    ASSIGN_OR_RETURN(domain, BuildVoxelDomain(mesh, options.voxel, &r.voxel, progress));
  }
  r.nodes = domain.num_nodes();
  r.seconds = SecondsSince(start_time);
  if (report != nullptr) *report = std::move(r);
  return domain;
}

absl::StatusOr<double> PointReach(const VolumeDomain& domain) {
  if (domain.kind == VolumeDomain::Kind::kVoxelGrid) {
    if (!(domain.spacing > 0.0))
      return absl::InvalidArgumentError("voxel domain has no spacing (not built?)");
    return 0.5 * std::sqrt(3.0) * domain.spacing;
  }
  return 1e-6 * BoundingBoxDiagonal(domain.nodes);
}

std::vector<int> NodesNear(const VolumeDomain& domain, const Eigen::Vector3d& point,
                           double radius) {
  const double reach = radius * (1.0 + 1e-9);
  std::vector<int> out;
  for (int i = 0; i < domain.num_nodes(); ++i)
    if ((domain.nodes.row(i).transpose() - point).norm() <= reach) out.push_back(i);
  return out;
}

}  // namespace skinning
