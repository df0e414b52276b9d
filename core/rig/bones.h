// Bones as geometry: the bind-space segments (or points) each joint's weights attach to.
#ifndef SKINNING_CORE_RIG_BONES_H_
#define SKINNING_CORE_RIG_BONES_H_

#include <vector>

#include <Eigen/Core>

#include "absl/status/statusor.h"
#include "core/rig/skeleton.h"

namespace skinning {

struct Segment {
  Eigen::Vector3d a, b;  // bind space; a == b for a point
  bool IsPoint() const { return a == b; }
};

// What a joint's weight is pinned to: one bone segment (joint → tail), or one segment to each
// child joint, or — for a leaf without a tail — the joint's point. Non-deforming joints have
// no segments and receive no weight.
struct JointHandle {
  int joint = -1;
  bool deforms = true;
  std::vector<Segment> segments;
};

// One JointHandle per skeleton joint (index = joint). Child segments of zero length are dropped
// (a child at its parent's position). A leaf without a tail (glTF has no bone tails) gets a bone
// continuing its parent's direction for `leaf_length_ratio` × the parent bone's length (the
// convention of glTF importers such as Blender's); 0, or a leaf with no parent bone, leaves a
// point. INVALID_ARGUMENT for an explicit tail at the joint's own position:
// "skeleton.joints[3]: bone has zero length".
absl::StatusOr<std::vector<JointHandle>> JointHandles(const Skeleton& skeleton,
                                                      double leaf_length_ratio = 1.0);

// Distance from p to the segment (or point).
double DistanceToSegment(const Eigen::Vector3d& p, const Segment& s);

}  // namespace skinning

#endif  // SKINNING_CORE_RIG_BONES_H_
