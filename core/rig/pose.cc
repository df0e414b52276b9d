#include "core/rig/pose.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"

namespace skinning {

std::vector<Transform> PoseLocals(const Skeleton& skeleton, const Pose& pose) {
  return pose.local.empty() ? BindPoseLocals(skeleton) : pose.local;
}

Pose RestPose(const Skeleton& skeleton) {
  Pose pose;
  pose.local.reserve(skeleton.size());
  for (const Joint& j : skeleton.joints) pose.local.push_back(j.rest);
  return pose;
}

std::vector<Eigen::Affine3d> ForwardKinematics(const Skeleton& skeleton,
                                               const std::vector<int>& order,
                                               const std::vector<Transform>& local) {
  std::vector<Eigen::Affine3d> world(skeleton.size(), Eigen::Affine3d::Identity());
  for (int j : order) {
    const int p = skeleton.joints[j].parent;
    const Eigen::Affine3d L = local[j].ToAffine();
    world[j] = p < 0 ? L : world[p] * L;
  }
  return world;
}

absl::Status ValidatePose(const Skeleton& skeleton, const Pose& pose, const char* field) {
  if (pose.local.empty()) return absl::OkStatus();
  if (static_cast<int>(pose.local.size()) != skeleton.size())
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s has %d joints, the skeleton has %d", field, pose.local.size(), skeleton.size()));
  for (size_t j = 0; j < pose.local.size(); ++j) {
    const Transform& t = pose.local[j];
    // The field's name is formatted only for an error (this runs on every posed frame).
    auto where = [&] { return absl::StrFormat("%s.joints[%d]", field, j); };
    if (!t.translation.allFinite())
      return absl::InvalidArgumentError(where() + ".translation is not finite");
    if (!t.rotation.coeffs().allFinite())
      return absl::InvalidArgumentError(where() + ".rotation is not finite");
    const double n = t.rotation.norm();
    if (std::abs(n - 1.0) > 1e-3)
      return absl::InvalidArgumentError(
          absl::StrFormat("%s.rotation has norm %g, not a unit quaternion", where(), n));
    if (!t.scale.allFinite() || t.scale.cwiseAbs().minCoeff() < kMinPoseScale)
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s.scale (%g, %g, %g) must be finite with every |scale| ≥ 1e-12", where(), t.scale(0), t.scale(1),
          t.scale(2)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Eigen::Affine3d>> SkinningTransforms(const Skeleton& skeleton,
                                                                const std::vector<int>& order,
                                                                const Pose& pose) {
  RETURN_IF_ERROR(ValidatePose(skeleton, pose));
  if (pose.local.empty())
    return std::vector<Eigen::Affine3d>(skeleton.size(), Eigen::Affine3d::Identity());
  std::vector<Eigen::Affine3d> T = ForwardKinematics(skeleton, order, pose.local);
  for (int j = 0; j < skeleton.size(); ++j) T[j] = T[j] * skeleton.joints[j].inverse_bind;
  return T;
}

}  // namespace skinning
