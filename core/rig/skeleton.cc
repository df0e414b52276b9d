#include "core/rig/skeleton.h"

#include <cmath>
#include <limits>
#include <vector>

#include <Eigen/SVD>

#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"

namespace skinning {
namespace {

bool AllFinite(const Eigen::Affine3d& A) { return A.matrix().allFinite(); }

absl::Status ValidateTransform(const Transform& t, const std::string& where) {
  if (!t.translation.allFinite())
    return absl::InvalidArgumentError(absl::StrFormat("%s.translation is not finite", where));
  if (!t.rotation.coeffs().allFinite())
    return absl::InvalidArgumentError(absl::StrFormat("%s.rotation is not finite", where));
  const double n = t.rotation.norm();
  if (std::abs(n - 1.0) > 1e-3)
    return absl::InvalidArgumentError(
        absl::StrFormat("%s.rotation has norm %g, not a unit quaternion", where, n));
  if (!t.scale.allFinite())
    return absl::InvalidArgumentError(absl::StrFormat("%s.scale is not finite", where));
  for (int a = 0; a < 3; ++a) {
    if (std::abs(t.scale(a)) < 1e-12)
      return absl::InvalidArgumentError(
          absl::StrFormat("%s.scale[%d] = %g is zero or below 1e-12 in magnitude", where, a, t.scale(a)));
  }
  return absl::OkStatus();
}

}  // namespace

int Skeleton::Find(const std::string& name) const {
  for (int j = 0; j < size(); ++j) {
    if (joints[j].name == name) return j;
  }
  return -1;
}

absl::StatusOr<std::vector<int>> TopologicalOrder(const Skeleton& skeleton) {
  const int n = skeleton.size();
  std::vector<std::vector<int>> children(n);
  std::vector<int> roots;
  for (int j = 0; j < n; ++j) {
    const int p = skeleton.joints[j].parent;
    if (p == j)
      return absl::InvalidArgumentError(absl::StrFormat("joints[%d]: parent %d is itself", j, p));
    if (p < -1 || p >= n)
      return absl::InvalidArgumentError(
          absl::StrFormat("joints[%d]: parent %d is out of range (%d joints)", j, p, n));
    if (p == -1)
      roots.push_back(j);
    else
      children[p].push_back(j);
  }
  std::vector<int> order;
  order.reserve(n);
  std::vector<int> stack(roots.rbegin(), roots.rend());
  while (!stack.empty()) {
    const int j = stack.back();
    stack.pop_back();
    order.push_back(j);
    for (auto it = children[j].rbegin(); it != children[j].rend(); ++it) stack.push_back(*it);
  }
  if (static_cast<int>(order.size()) != n) {
    // Some joints are unreachable from a root: they sit on a parent cycle. Name one.
    std::vector<bool> seen(n, false);
    for (int j : order) seen[j] = true;
    for (int j = 0; j < n; ++j) {
      if (!seen[j])
        return absl::InvalidArgumentError(absl::StrFormat(
            "joints[%d]: parent chain forms a cycle (no path to a root)", j));
    }
  }
  return order;
}

absl::Status ValidateSkeleton(const Skeleton& skeleton, const char* field) {
  const int n = skeleton.size();
  if (n == 0) return absl::InvalidArgumentError(absl::StrFormat("%s has no joints", field));
  auto order = TopologicalOrder(skeleton);
  if (!order.ok())
    return absl::InvalidArgumentError(absl::StrFormat("%s.%s", field, order.status().message()));
  for (int j = 0; j < n; ++j) {
    const Joint& joint = skeleton.joints[j];
    const std::string where = absl::StrFormat("%s.joints[%d]", field, j);
    RETURN_IF_ERROR(ValidateTransform(joint.rest, where + ".rest"));
    if (!AllFinite(joint.inverse_bind))
      return absl::InvalidArgumentError(where + ".inverse_bind is not finite");
    // Singular relative to its own scale: a uniformly scaled bind (e.g. KHR_mesh_quantization's
    // dequantization folded into it, scale 1e-4 and determinant 1e-12) is fine.
    const Eigen::Vector3d sigma =
        Eigen::JacobiSVD<Eigen::Matrix3d>(joint.inverse_bind.linear()).singularValues();
    if (!(sigma(2) > 1e-12 * sigma(0)))
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s.inverse_bind is singular (singular values %g, %g, %g)", where, sigma(0), sigma(1), sigma(2)));
    if (joint.tail && !joint.tail->allFinite())
      return absl::InvalidArgumentError(where + ".tail is not finite");
  }
  // Rest transforms that are each in range can overflow float down a chain (two translations of
  // 3e38): every posed vertex of such a rig would be infinite.
  std::vector<Eigen::Affine3d> world(n);
  for (int j : *order) {
    const Joint& joint = skeleton.joints[j];
    world[j] = joint.parent >= 0 ? world[joint.parent] * joint.rest.ToAffine() : joint.rest.ToAffine();
    if (!(world[j].matrix().cwiseAbs().maxCoeff() <= std::numeric_limits<float>::max()))
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s.joints[%d] (%s): its rest transform in world space is beyond float range (±3.4e38): the rest "
          "translations or scales down its chain overflow",
          field, j, joint.name));
  }
  return absl::OkStatus();
}

Eigen::Vector3d BindPosition(const Skeleton& skeleton, int j) {
  return skeleton.joints[j].inverse_bind.inverse(Eigen::Affine).translation();
}

std::vector<Transform> BindPoseLocals(const Skeleton& skeleton) {
  std::vector<Transform> local(skeleton.size());
  for (int j = 0; j < skeleton.size(); ++j) {
    const Joint& joint = skeleton.joints[j];
    Eigen::Affine3d L = joint.inverse_bind.inverse();
    if (joint.parent >= 0) L = skeleton.joints[joint.parent].inverse_bind * L;
    local[j] = DecomposeAffine(L);
  }
  return local;
}

}  // namespace skinning
