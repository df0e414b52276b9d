// Poses and forward kinematics.
#ifndef SKINNING_CORE_RIG_POSE_H_
#define SKINNING_CORE_RIG_POSE_H_

#include <vector>

#include <Eigen/Geometry>

#include "absl/status/statusor.h"
#include "core/rig/skeleton.h"
#include "core/rig/transform.h"

namespace skinning {

// One local transform per joint (relative to the parent, as Joint::rest). An empty pose means
// the bind pose: every skinning transform is exactly the identity.
struct Pose {
  std::vector<Transform> local;  // empty, or #joints
};

// The rest pose: every joint at its Joint::rest transform.
Pose RestPose(const Skeleton& skeleton);

// The pose's local transforms (#joints): pose.local, or the bind pose's (BindPoseLocals) for an
// empty pose.
std::vector<Transform> PoseLocals(const Skeleton& skeleton, const Pose& pose);

// World transforms (#joints) from local ones: world_j = world_parent(j) · local_j.
// `order` is TopologicalOrder(skeleton). local.size() must equal the joint count.
std::vector<Eigen::Affine3d> ForwardKinematics(const Skeleton& skeleton,
                                               const std::vector<int>& order,
                                               const std::vector<Transform>& local);

// Skinning transforms (#joints): world_j(pose) · inverse_bind_j; identities for an empty pose.
// Fails with INVALID_ARGUMENT when the pose has the wrong joint count or non-finite values.
absl::StatusOr<std::vector<Eigen::Affine3d>> SkinningTransforms(const Skeleton& skeleton,
                                                                const std::vector<int>& order,
                                                                const Pose& pose);

// Checks a pose against a skeleton: "pose.joints[3].rotation is not a unit quaternion".
absl::Status ValidatePose(const Skeleton& skeleton, const Pose& pose, const char* field = "pose");

// The smallest |scale| a pose's joint may have (ValidatePose).
inline constexpr double kMinPoseScale = 1e-12;

}  // namespace skinning

#endif  // SKINNING_CORE_RIG_POSE_H_
