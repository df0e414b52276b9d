// Skeletons: a tree of joints, each with a name, a parent, a rest local transform and an
// inverse bind matrix.
#ifndef SKINNING_CORE_RIG_SKELETON_H_
#define SKINNING_CORE_RIG_SKELETON_H_

#include <optional>
#include <string>
#include <vector>

#include <Eigen/Geometry>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/rig/transform.h"

namespace skinning {

struct Joint {
  std::string name;
  int parent = -1;  // index into Skeleton::joints, -1 for a root
  // Local transform relative to the parent in the rest pose (the file's own node transform).
  Transform rest;
  // Maps bind-space (mesh) positions into this joint's frame at bind time; the inverse of the
  // joint's world transform in the bind pose. Skinning transform = world(pose) · inverse_bind.
  Eigen::Affine3d inverse_bind = Eigen::Affine3d::Identity();
  // False for joints that never receive weights (e.g. a glTF skin's non-joint ancestors such as
  // an "Armature" node); bakes give them weight 0.
  bool deforms = true;
  // Bind-space end point of the bone that starts at this joint, when the source says so (libigl
  // .tgf bones). Without it a bone runs to each child joint, and a leaf joint is a point handle.
  std::optional<Eigen::Vector3d> tail;
};

struct Skeleton {
  std::vector<Joint> joints;
  int size() const { return static_cast<int>(joints.size()); }
  // Index of the joint with this name, or -1.
  int Find(const std::string& name) const;
};

// Parents in range, no self-parent, no cycle, finite transforms, unit rotations, non-zero
// scale, invertible inverse binds. `field` prefixes messages: "skeleton.joints[4]: parent 4 is
// itself".
absl::Status ValidateSkeleton(const Skeleton& skeleton, const char* field = "skeleton");

// Joint indices ordered so that every parent comes before its children. Fails on a cycle or an
// out-of-range parent.
absl::StatusOr<std::vector<int>> TopologicalOrder(const Skeleton& skeleton);

// Bind-space position of joint j: the translation of inverse_bind⁻¹.
Eigen::Vector3d BindPosition(const Skeleton& skeleton, int j);

// Rest local transforms that reproduce the bind pose exactly: local_j = ib_parent · ib_j^-1
// (for roots, ib_j^-1). Posing with these gives identity skinning transforms.
std::vector<Transform> BindPoseLocals(const Skeleton& skeleton);

}  // namespace skinning

#endif  // SKINNING_CORE_RIG_SKELETON_H_
