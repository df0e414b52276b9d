#include "core/weights/handles.h"

#include <Eigen/Geometry>
#include <algorithm>
#include <vector>
#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"

namespace skinning {

using Eigen::Vector3d;

namespace {

// The handle assignment of RasterizeHandles and RasterizeRigidBones for a given reach.
absl::StatusOr<std::vector<std::vector<int>>> RasterizeWithin(
    const VolumeDomain& domain, const std::vector<JointHandle>& handles, double radius) {
  const int n = domain.num_nodes();
  // A hair of slack so that nodes exactly at the radius (a corner of the cell holding a point
  // handle at the cell centre) are not lost to rounding.
  const double reach = radius * (1.0 + 1e-9);
  const int nh = static_cast<int>(handles.size());
  std::vector<std::vector<int>> result(nh);
  // Bounding boxes of each handle's segments, grown by the reach, to skip far nodes quickly.
  std::vector<Eigen::AlignedBox3d> boxes(nh);
  for (int h = 0; h < nh; ++h) {
    for (const Segment& s : handles[h].segments) {
      boxes[h].extend(s.a);
      boxes[h].extend(s.b);
    }
    if (!boxes[h].isEmpty()) {
      boxes[h].min().array() -= reach;
      boxes[h].max().array() += reach;
    }
  }
  auto distance = [&](int h, const Vector3d& p) {
    double d = std::numeric_limits<double>::infinity();
    if (!handles[h].deforms || !boxes[h].contains(p)) return d;
    for (const Segment& s : handles[h].segments) d = std::min(d, DistanceToSegment(p, s));
    return d;
  };
  std::vector<int> owner(n, -1);
  std::vector<int> count(nh, 0);
  for (int i = 0; i < n; ++i) {
    const Vector3d p = domain.nodes.row(i).transpose();
    double owner_dist = std::numeric_limits<double>::infinity();
    for (int h = 0; h < nh; ++h) {
      const double d = distance(h, p);
      if (d <= reach && d < owner_dist) owner[i] = h, owner_dist = d;
    }
    if (owner[i] >= 0) ++count[owner[i]];
  }
  // A joint that reaches nodes but is nearest to none (a leaf joint's point at the end of its
  // parent's bone) takes the node nearest to it from a joint that keeps at least one other.
  std::vector<uint8_t> locked(n, 0);
  for (int h = 0; h < nh; ++h) {
    if (!handles[h].deforms || count[h] > 0) continue;
    int best = -1;
    double best_dist = std::numeric_limits<double>::infinity();
    bool reaches = false;
    for (int i = 0; i < n; ++i) {
      const double d = distance(h, domain.nodes.row(i).transpose());
      if (!(d <= reach)) continue;
      reaches = true;
      if (locked[i] || (owner[i] >= 0 && count[owner[i]] < 2)) continue;
      if (d < best_dist) best = i, best_dist = d;
    }
    const int joint = handles[h].joint >= 0 ? handles[h].joint : h;
    if (!reaches)
      return absl::FailedPreconditionError(absl::StrFormat(
          "skeleton.joints[%d] lies outside the mesh (no domain node within %g of its bone)", joint,
          radius));
    if (best < 0)
      return absl::FailedPreconditionError(absl::StrFormat(
          "skeleton.joints[%d] shares every domain node within %g of its bone with other joints "
          "(raise the resolution)",
          joint, radius));
    if (owner[best] >= 0) --count[owner[best]];
    owner[best] = h;
    count[h] = 1;
    locked[best] = 1;
  }
  for (int i = 0; i < n; ++i)
    if (owner[i] >= 0) result[owner[i]].push_back(i);
  return result;
}

}  // namespace

absl::StatusOr<std::vector<std::vector<int>>> RasterizeHandles(
    const VolumeDomain& domain, const std::vector<JointHandle>& handles) {
  ASSIGN_OR_RETURN(const double radius, PointReach(domain));
  return RasterizeWithin(domain, handles, radius);
}

absl::StatusOr<std::vector<std::vector<int>>> RasterizeRigidBones(
    const VolumeDomain& domain, const std::vector<JointHandle>& handles) {
  double radius;
  if (domain.kind == VolumeDomain::Kind::kVoxelGrid) {
    if (!(domain.spacing > 0.0))
      return absl::InvalidArgumentError("voxel domain has no spacing (not built?)");
    radius = std::sqrt(3.0) * domain.spacing;
  } else {
    std::vector<double> lengths = domain.graph_lengths;
    if (lengths.empty()) return absl::InvalidArgumentError("tet domain has no edges");
    std::nth_element(lengths.begin(), lengths.begin() + lengths.size() / 2, lengths.end());
    radius = lengths[lengths.size() / 2];
  }
  return RasterizeWithin(domain, handles, radius);
}

absl::StatusOr<int> SplitSharedJoints(const VolumeDomain& domain, const std::vector<JointHandle>& handles,
                                      std::vector<std::vector<int>>* pinned) {
  ASSIGN_OR_RETURN(const double radius, PointReach(domain));
  const double reach = radius * (1.0 + 1e-9);
  const int n = domain.num_nodes(), nh = static_cast<int>(handles.size());
  if (n == 0) return 0;
  const double diag = (domain.nodes.colwise().maxCoeff() - domain.nodes.colwise().minCoeff()).norm();
  const double same = 1e-9 * std::max(diag, 1e-300);
  // The ends of every deforming joint's bones, and which joints meet at each distinct point.
  struct Meeting {
    Vector3d point;
    std::vector<int> joints;
  };
  std::vector<Meeting> meetings;
  for (int h = 0; h < nh; ++h) {
    if (!handles[h].deforms) continue;
    for (const Segment& s : handles[h].segments) {
      if ((s.b - s.a).norm() <= same) continue;  // a point handle: not a bone
      for (const Vector3d& end : {s.a, s.b}) {
        auto it = std::find_if(meetings.begin(), meetings.end(),
                               [&](const Meeting& m) { return (m.point - end).norm() <= same; });
        if (it == meetings.end()) it = meetings.insert(meetings.end(), Meeting{end, {}});
        if (std::find(it->joints.begin(), it->joints.end(), h) == it->joints.end()) it->joints.push_back(h);
      }
    }
  }
  std::vector<std::vector<uint8_t>> listed(nh);
  for (int h = 0; h < nh; ++h) {
    listed[h].assign(n, 0);
    for (int i : (*pinned)[h]) listed[h][i] = 1;
  }
  std::vector<uint8_t> shared(n, 0);
  for (const Meeting& m : meetings) {
    if (m.joints.size() < 2) continue;
    for (int i = 0; i < n; ++i) {
      if ((domain.nodes.row(i).transpose() - m.point).norm() > reach) continue;
      bool pinned_by_one = false;  // the node belongs to the bones that meet here
      for (int h : m.joints) pinned_by_one |= listed[h][i] != 0;
      if (!pinned_by_one) continue;
      for (int h : m.joints) {
        if (listed[h][i]) continue;
        listed[h][i] = 1;
        (*pinned)[h].push_back(i);
      }
      shared[i] = 1;
    }
  }
  return static_cast<int>(std::count(shared.begin(), shared.end(), 1));
}

}  // namespace skinning
