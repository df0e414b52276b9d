// Volume-domain options and reports, the one domain builder (BuildDomain) and node lookup. The
// builders themselves: voxel_domain.cc, tet_domain.cc.
#include "core/geometry/volume_domain.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
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
  return absl::StrFormat("voxel grid %d (%dx%dx%d cells, %d in the domain, %d nodes, spacing %g%s)", resolution,
                         cells.x(), cells.y(), cells.z(), inside_cells, nodes, spacing,
                         surface_only ? "; surface cells only: the mesh encloses no volume" : "");
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

absl::StatusOr<Eigen::MatrixXd> InterpolateOnGrid(const VolumeDomain& grid, const Eigen::MatrixXd& values,
                                                  const RowMatrixX3d& points) {
  if (grid.kind != VolumeDomain::Kind::kVoxelGrid || !(grid.spacing > 0.0))
    return absl::InvalidArgumentError("InterpolateOnGrid needs a voxel domain");
  if (values.rows() != grid.num_nodes())
    return absl::InvalidArgumentError(absl::StrFormat("values have %d rows; the grid has %d nodes", values.rows(),
                                                      grid.num_nodes()));
  const Eigen::Vector3i& c = grid.cells;
  const int sx = c.x() + 1, sy = c.y() + 1;
  Eigen::MatrixXd out(points.rows(), values.cols());
  for (Eigen::Index i = 0; i < points.rows(); ++i) {
    const Eigen::Vector3d g = (points.row(i).transpose() - grid.origin) / grid.spacing;
    int cell[3];
    double t[3];
    for (int a = 0; a < 3; ++a) {
      cell[a] = std::clamp(static_cast<int>(std::floor(g(a))), 0, c(a) - 1);
      t[a] = std::clamp(g(a) - cell[a], 0.0, 1.0);
    }
    double total = 0.0;
    out.row(i).setZero();
    for (int k = 0; k < 8; ++k) {
      const int dx = k & 1, dy = (k >> 1) & 1, dz = (k >> 2) & 1;
      const int node = grid.grid_node[(cell[0] + dx) + sx * ((cell[1] + dy) + sy * (cell[2] + dz))];
      if (node < 0) continue;
      const double w = (dx ? t[0] : 1.0 - t[0]) * (dy ? t[1] : 1.0 - t[1]) * (dz ? t[2] : 1.0 - t[2]);
      out.row(i) += w * values.row(node);
      total += w;
    }
    if (total > 0.0) {
      out.row(i) /= total;
    } else {
      out.row(i).setConstant(std::numeric_limits<double>::quiet_NaN());
    }
  }
  return out;
}

}  // namespace skinning
