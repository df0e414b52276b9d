#include "core/rig/bones.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace skinning {

absl::StatusOr<std::vector<JointHandle>> JointHandles(const Skeleton& skeleton, double leaf_length_ratio) {
  const int n = skeleton.size();
  std::vector<Eigen::Vector3d> position(n);
  for (int j = 0; j < n; ++j) position[j] = BindPosition(skeleton, j);
  std::vector<std::vector<int>> children(n);
  for (int j = 0; j < n; ++j)
    if (skeleton.joints[j].parent >= 0) children[skeleton.joints[j].parent].push_back(j);
  std::vector<JointHandle> handles(n);
  for (int j = 0; j < n; ++j) {
    const Joint& joint = skeleton.joints[j];
    JointHandle& h = handles[j];
    h.joint = j;
    h.deforms = joint.deforms;
    if (!joint.deforms) continue;
    if (joint.tail) {
      if ((*joint.tail - position[j]).norm() <= 1e-12 * (1.0 + position[j].norm()))
        return absl::InvalidArgumentError(
            absl::StrFormat("skeleton.joints[%d] (%s): bone has zero length (tail at the joint)", j, joint.name));
      h.segments.push_back({position[j], *joint.tail});
      continue;
    }
    for (int c : children[j]) {
      if ((position[c] - position[j]).norm() > 1e-9 * (1.0 + position[j].norm()))
        h.segments.push_back({position[j], position[c]});
    }
    if (h.segments.empty() && children[j].empty() && joint.parent >= 0 && leaf_length_ratio > 0) {
      const Eigen::Vector3d along = position[j] - position[joint.parent];
      if (along.norm() > 1e-9 * (1.0 + position[j].norm()))
        h.segments.push_back({position[j], position[j] + leaf_length_ratio * along});
    }
    if (h.segments.empty()) h.segments.push_back({position[j], position[j]});
  }
  return handles;
}

double DistanceToSegment(const Eigen::Vector3d& p, const Segment& s) {
  const Eigen::Vector3d d = s.b - s.a;
  const double len2 = d.squaredNorm();
  if (len2 == 0) return (p - s.a).norm();
  const double t = std::clamp((p - s.a).dot(d) / len2, 0.0, 1.0);
  return (p - (s.a + t * d)).norm();
}

}  // namespace skinning
