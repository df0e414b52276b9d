// Joint frames for joint-based deformers (Kavan & Sorkine 2012, Sec. 3.3): each joint's
// canonical coordinate system has its origin at the joint and its z-axis along the child bone.
#ifndef SKINNING_CORE_RIG_JOINT_FRAMES_H_
#define SKINNING_CORE_RIG_JOINT_FRAMES_H_

#include <vector>

#include <Eigen/Core>

#include "core/rig/bones.h"
#include "core/rig/skeleton.h"

namespace skinning {

struct JointFrame {
  int joint = -1;
  // The nearest deforming ancestor whose transform the deformer blends from, or -1.
  int parent = -1;
  // Whether the joint has a swing/twist deformer: it deforms and has a deforming ancestor. Other
  // deforming joints (roots) deform rigidly with their own skinning transform.
  bool deformer = false;
  Eigen::Vector3d center = Eigen::Vector3d::Zero();    // bind-space joint position
  // Columns x, y, z: orthonormal, det +1, bind space. z is the unit mean direction of the
  // joint's bone segments (its JointHandle); a joint without a segment of non-zero length takes
  // the direction from its parent's position to its own, and failing that the world z-axis. x is
  // the world axis least aligned with z, made orthogonal to z (so frames are deterministic).
  Eigen::Matrix3d axes = Eigen::Matrix3d::Identity();
};

// One frame per joint (index = joint). `handles` = JointHandles(skeleton).
std::vector<JointFrame> JointFrames(const Skeleton& skeleton, const std::vector<JointHandle>& handles);

// Point handles at the bind-space position of every deforming joint (index = joint;
// non-deforming joints get deforms = false and no segment): for point-based weights such as the
// deformer blending weights d_j and the joint weights behind endpoint weights.
std::vector<JointHandle> JointPointHandles(const Skeleton& skeleton);

// Whether joint `j` lies in the subtree rooted at `root` (j == root counts).
bool InSubtree(const Skeleton& skeleton, int j, int root);

}  // namespace skinning

#endif  // SKINNING_CORE_RIG_JOINT_FRAMES_H_
