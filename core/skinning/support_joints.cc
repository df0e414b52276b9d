#include "core/skinning/support_joints.h"

#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <utility>

#include "core/rig/bones.h"
#include "core/util/status_macros.h"

namespace skinning {

namespace {

// Angle of the rotation a⁻¹ b (q and −q are the same rotation).
double AngleBetween(const Eigen::Quaterniond& a, const Eigen::Quaterniond& b) {
  const Eigen::Quaterniond q = a.normalized().conjugate() * b.normalized();
  return 2.0 * std::atan2(q.vec().norm(), std::abs(q.w()));
}

}  // namespace

std::vector<SupportJoint> FindSupportJoints(const Skeleton& skeleton,
                                            const std::vector<std::vector<Transform>>& poses) {
  const std::vector<Transform> bind = BindPoseLocals(skeleton);
  std::vector<SupportJoint> out;
  for (int j = 0; j < skeleton.size(); ++j) {
    const Joint& joint = skeleton.joints[j];
    if (!joint.deforms || joint.parent < 0 || !skeleton.joints[joint.parent].deforms) continue;
    bool bent = false;
    for (const auto& pose : poses)
      if (static_cast<int>(pose.size()) == skeleton.size() &&
          AngleBetween(bind[j].rotation, pose[j].rotation) > 1e-6)
        bent = true;
    if (!bent) continue;
    SupportJoint s;
    s.joint = j;
    s.parent = joint.parent;
    s.joint_position = BindPosition(skeleton, j);
    s.parent_position = BindPosition(skeleton, joint.parent);
    if (s.parent_length() <= 0) continue;
    bool has_child = false;
    for (int c = 0; c < skeleton.size() && !has_child; ++c) {
      if (skeleton.joints[c].parent != j) continue;
      const Eigen::Vector3d p = BindPosition(skeleton, c);
      if ((p - s.joint_position).norm() > 1e-12) {
        s.child_position = p;
        has_child = true;
      }
    }
    if (!has_child && joint.tail && (*joint.tail - s.joint_position).norm() > 1e-12) {
      s.child_position = *joint.tail;
      has_child = true;
    }
    if (has_child) out.push_back(s);
  }
  return out;
}

Eigen::Affine3d SupportJointTransform(const SupportJoint& support,
                                      const std::vector<Eigen::Affine3d>& T, double x) {
  const Eigen::Affine3d& Tp = T[support.parent];
  const Eigen::Affine3d& Tj = T[support.joint];
  const Eigen::Vector3d s =
      support.joint_position + x * (support.parent_position - support.joint_position);
  const Eigen::Vector3d s_posed = Tp * s;
  const Eigen::Matrix3d Lp = Tp.linear();
  const Eigen::Vector3d rest_bone = Lp * (support.child_position - s);
  const Eigen::Vector3d posed_bone = Tj * support.child_position - s_posed;
  Eigen::Matrix3d R = Eigen::Matrix3d::Identity();
  if (rest_bone.norm() > 0 && posed_bone.norm() > 0)
    R = Eigen::Quaterniond::FromTwoVectors(rest_bone, posed_bone).toRotationMatrix();
  Eigen::Affine3d out = Eigen::Affine3d::Identity();
  out.linear() = R * Lp;
  out.translation() = s_posed - out.linear() * s;
  return out;
}

absl::StatusOr<Eigen::VectorXd> GeodesicVertexDistances(const VolumeDomain& domain,
                                                        const Eigen::Vector3d& point) {
  ASSIGN_OR_RETURN(const double reach, PointReach(domain));
  const std::vector<int> seeds = NodesNear(domain, point, reach);
  const int N = domain.num_nodes();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> dist(N, kInf);
  using Entry = std::pair<double, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  for (int n : seeds) {
    // Start at the node's Euclidean distance from the point, so the field is continuous.
    const double d0 = (domain.nodes.row(n).transpose() - point).norm();
    if (d0 < dist[n]) {
      dist[n] = d0;
      queue.emplace(d0, n);
    }
  }
  if (queue.empty())
    return absl::FailedPreconditionError("support joint: the joint lies outside the voxel domain");
  while (!queue.empty()) {
    const auto [d, v] = queue.top();
    queue.pop();
    if (d > dist[v]) continue;
    for (int e = domain.graph_offsets[v]; e < domain.graph_offsets[v + 1]; ++e) {
      const int u = domain.graph_targets[e];
      const double nd = d + domain.graph_lengths[e];
      if (nd < dist[u]) {
        dist[u] = nd;
        queue.emplace(nd, u);
      }
    }
  }
  // Interpolate; a vertex touching an unreached node is unreached.
  Eigen::VectorXd out = Eigen::VectorXd::Zero(domain.to_mesh.rows());
  for (int i = 0; i < domain.to_mesh.outerSize(); ++i)
    for (Eigen::SparseMatrix<double, Eigen::RowMajor>::InnerIterator it(domain.to_mesh, i); it;
         ++it) {
      if (it.value() == 0) continue;
      out[i] += it.value() * dist[it.col()];
    }
  return out;
}

}  // namespace skinning
