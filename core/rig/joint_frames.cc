#include "core/rig/joint_frames.h"

#include <cmath>

namespace skinning {

std::vector<JointFrame> JointFrames(const Skeleton& skeleton, const std::vector<JointHandle>& handles) {
  const int n = skeleton.size();
  std::vector<JointFrame> frames(n);
  for (int j = 0; j < n; ++j) {
    JointFrame& f = frames[j];
    f.joint = j;
    f.center = BindPosition(skeleton, j);
    int p = skeleton.joints[j].parent;
    while (p >= 0 && !skeleton.joints[p].deforms) p = skeleton.joints[p].parent;
    f.parent = p;
    f.deformer = skeleton.joints[j].deforms && p >= 0;
    Eigen::Vector3d z = Eigen::Vector3d::Zero();
    if (j < static_cast<int>(handles.size())) {
      for (const Segment& s : handles[j].segments) {
        const Eigen::Vector3d d = s.b - s.a;
        if (d.norm() > 0) z += d.normalized();
      }
    }
    if (z.norm() < 1e-12 && skeleton.joints[j].parent >= 0) {
      z = f.center - BindPosition(skeleton, skeleton.joints[j].parent);
    }
    if (z.norm() < 1e-12) z = Eigen::Vector3d::UnitZ();
    z.normalize();
    int least = 0;
    for (int a = 1; a < 3; ++a)
      if (std::abs(z[a]) < std::abs(z[least])) least = a;
    Eigen::Vector3d x = Eigen::Vector3d::Unit(least);
    x = (x - x.dot(z) * z).normalized();
    const Eigen::Vector3d y = z.cross(x);
    f.axes.col(0) = x;
    f.axes.col(1) = y;
    f.axes.col(2) = z;
  }
  return frames;
}

std::vector<JointHandle> JointPointHandles(const Skeleton& skeleton) {
  std::vector<JointHandle> handles(skeleton.size());
  for (int j = 0; j < skeleton.size(); ++j) {
    handles[j].joint = j;
    handles[j].deforms = skeleton.joints[j].deforms;
    if (!handles[j].deforms) continue;
    const Eigen::Vector3d c = BindPosition(skeleton, j);
    handles[j].segments.push_back(Segment{c, c});
  }
  return handles;
}

bool InSubtree(const Skeleton& skeleton, int j, int root) {
  for (int k = j, steps = 0; k >= 0 && steps <= skeleton.size(); k = skeleton.joints[k].parent, ++steps)
    if (k == root) return true;
  return false;
}

}  // namespace skinning
