#include "core/weights/endpoint_weights.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/rig/bones.h"
#include "core/rig/joint_frames.h"
#include "core/skinning/stbs.h"
#include "core/util/status_macros.h"
#include "core/util/timing.h"
#include "core/weights/bbw_coarse_start.h"
#include "core/weights/handles.h"

namespace skinning {

namespace {

// Eq. 8: e = (p − a)·(b − a) / |b − a|², clamped to [0, 1].
Eigen::MatrixXd ProjectionEndpoints(const RowMatrixX3d& V, const std::vector<StbsBone>& bones) {
  Eigen::MatrixXd E = Eigen::MatrixXd::Zero(V.rows(), static_cast<Eigen::Index>(bones.size()));
  for (size_t j = 0; j < bones.size(); ++j) {
    if (!bones[j].valid) continue;
    const Eigen::Vector3d d = bones[j].b - bones[j].a;
    const double d2 = d.squaredNorm();
    for (Eigen::Index i = 0; i < V.rows(); ++i) {
      const double e = (V.row(i).transpose() - bones[j].a).dot(d) / d2;
      E(i, static_cast<Eigen::Index>(j)) = std::clamp(e, 0.0, 1.0);
    }
  }
  return E;
}

// Eq. 7 with point BBW at the joints and at the bone ends that are not joints.
absl::StatusOr<Eigen::MatrixXd> JointBbwEndpoints(const Mesh& mesh, const Skeleton& skeleton,
                                                  const std::vector<StbsBone>& bones,
                                                  const EndpointBakeOptions& options,
                                                  const Progress& progress, BakeReport* report,
                                                  Eigen::MatrixXd* node_endpoint, VolumeDomain* domain_out) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<JointHandle> handles = JointPointHandles(skeleton);
  const double tol = 1e-9 * std::max(1.0, BoundingBoxDiagonal(mesh.V));
  // handle_b[j]: the handle at the end of joint j's bone.
  std::vector<int> handle_b(bones.size(), -1);
  for (size_t j = 0; j < bones.size(); ++j) {
    if (!bones[j].valid) continue;
    for (size_t h = 0; h < handles.size(); ++h) {
      if (!handles[h].segments.empty() && (handles[h].segments[0].a - bones[j].b).norm() <= tol) {
        handle_b[j] = static_cast<int>(h);
        break;
      }
    }
    if (handle_b[j] < 0) {
      JointHandle extra;
      extra.joint = static_cast<int>(handles.size());
      extra.deforms = true;
      extra.segments.push_back(Segment{bones[j].b, bones[j].b});
      handle_b[j] = static_cast<int>(handles.size());
      handles.push_back(extra);
    }
  }
  DomainReport domain_report;
  ASSIGN_OR_RETURN(VolumeDomain domain,
                   BuildDomain(mesh, options.domain, &domain_report, progress.Sub(0.0, 0.1)));
  report->domain = domain_report.BriefReport();
  report->domain_nodes = domain.num_nodes();
  // A bone end that is not a joint may lie outside the volume (a glTF leaf bone continued past
  // the fingertip or the top of the head): such a point handle moves to the domain node nearest
  // to it, the end of the limb as the volume sees it (on each grid: the coarse start's too).
  const size_t num_joints = skeleton.size();
  const HandleNodesOn point_nodes_on =
      [&handles, num_joints](const VolumeDomain& d) -> absl::StatusOr<std::vector<std::vector<int>>> {
    std::vector<JointHandle> on_d = handles;
    ASSIGN_OR_RETURN(const double reach, PointReach(d));
    for (size_t h = num_joints; h < on_d.size(); ++h) {
      const Eigen::Vector3d p = on_d[h].segments[0].a;
      Eigen::Index nearest = 0;
      const double d2 = (d.nodes.rowwise() - p.transpose()).rowwise().squaredNorm().minCoeff(&nearest);
      if (std::sqrt(d2) > reach) {
        const Eigen::Vector3d q = d.nodes.row(nearest).transpose();
        on_d[h].segments[0] = Segment{q, q};
      }
    }
    return RasterizeHandles(d, on_d);
  };
  ASSIGN_OR_RETURN(std::vector<std::vector<int>> pinned, point_nodes_on(domain));
  report->domain_seconds = SecondsSince(t0);
  RETURN_IF_ERROR(progress.CheckCancelled());
  const auto t1 = std::chrono::steady_clock::now();
  std::string coarse;
  BbwReport br;
  ASSIGN_OR_RETURN(Eigen::MatrixXd node_weights,
                   BbwFromCoarseStart(mesh, options.domain.voxel, domain, pinned, point_nodes_on, options.bbw, &br,
                                      progress.Sub(0.1, 1.0), &coarse));
  report->solve_seconds = SecondsSince(t1);
  report->detail = absl::StrFormat("%d point handles (%d at bone ends that are not joints), %s%d "
                                   "factorizations, %.3g s",
                                   handles.size(), handles.size() - skeleton.size(), coarse,
                                   br.factorizations, br.seconds);
  // Eq. 7 on the nodes; the mesh gets them by the domain's interpolation.
  const Eigen::MatrixXd& J = node_weights;  // #N by #handles
  Eigen::MatrixXd En = Eigen::MatrixXd::Zero(domain.num_nodes(), skeleton.size());
  for (size_t j = 0; j < bones.size(); ++j) {
    if (!bones[j].valid) continue;
    const Eigen::Index jj = static_cast<Eigen::Index>(j);
    En.col(jj) = (0.5 * ((1.0 - J.col(jj).array()) + J.col(handle_b[j]).array()))
                     .cwiseMax(0.0)
                     .cwiseMin(1.0)
                     .matrix();
  }
  Eigen::MatrixXd E = domain.to_mesh * En;
  if (node_endpoint != nullptr) *node_endpoint = std::move(En);
  if (domain_out != nullptr) *domain_out = std::move(domain);
  return E;
}

}  // namespace

absl::Status EndpointBakeOptions::Validate() const {
  if (method != EndpointMethod::kJointBbw && method != EndpointMethod::kProjection)
    return absl::InvalidArgumentError(
        absl::StrFormat("options.method = %d is not an endpoint method", static_cast<int>(method)));
  if (method == EndpointMethod::kProjection) return absl::OkStatus();
  RETURN_IF_ERROR(domain.Validate());
  return bbw.Validate();
}

const char* EndpointMethodName(EndpointMethod method) {
  switch (method) {
    case EndpointMethod::kJointBbw:
      return "endpoint_joint_bbw";
    case EndpointMethod::kProjection:
      return "endpoint_projection";
  }
  return "unknown";
}

absl::StatusOr<EndpointBakeResult> BakeEndpointWeights(const Mesh& mesh, const Skeleton& skeleton,
                                                       const EndpointBakeOptions& options,
                                                       const Progress& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(options.Validate());
  RETURN_IF_ERROR(ValidateMesh(mesh));
  RETURN_IF_ERROR(ValidateSkeleton(skeleton));
  ASSIGN_OR_RETURN(std::vector<JointHandle> handles, JointHandles(skeleton));
  const std::vector<StbsBone> bones = StbsBones(handles);
  if (std::none_of(bones.begin(), bones.end(), [](const StbsBone& b) { return b.valid; }))
    return absl::InvalidArgumentError(
        "skeleton has no joint with a single bone to bake endpoint weights for");

  EndpointBakeResult result;
  result.report.method = EndpointMethodName(options.method);
  if (options.method == EndpointMethod::kProjection) {
    result.report.domain = "none";
    const auto t1 = std::chrono::steady_clock::now();
    result.endpoint = ProjectionEndpoints(mesh.V, bones);
    result.report.solve_seconds = SecondsSince(t1);
  } else {
    ASSIGN_OR_RETURN(result.endpoint,
                     JointBbwEndpoints(mesh, skeleton, bones, options, progress, &result.report,
                                       &result.node_endpoint, &result.domain));
  }
  RETURN_IF_ERROR(progress.CheckCancelled());
  result.report.total_seconds = SecondsSince(t0);
  progress.Report("done", 1.0);
  return result;
}

}  // namespace skinning
