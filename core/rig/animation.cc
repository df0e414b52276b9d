#include "core/rig/animation.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"

namespace skinning {
namespace {

Eigen::Quaterniond SafeNormalized(const Eigen::Quaterniond& q) {
  const double n = q.norm();
  if (!(n > 1e-12) || !std::isfinite(n)) return Eigen::Quaterniond::Identity();
  return Eigen::Quaterniond(q.coeffs() / n);
}

// Spherical interpolation from a to b along the shorter arc.
Eigen::Quaterniond Slerp(const Eigen::Quaterniond& qa, const Eigen::Quaterniond& qb, double s) {
  const Eigen::Quaterniond a = SafeNormalized(qa);
  Eigen::Quaterniond b = SafeNormalized(qb);
  double d = a.dot(b);
  if (d < 0) {
    b.coeffs() = -b.coeffs();
    d = -d;
  }
  Eigen::Vector4d c;
  if (d > 1.0 - 1e-10) {
    c = (1 - s) * a.coeffs() + s * b.coeffs();
  } else {
    const double theta = std::acos(std::min(d, 1.0));
    const double sin_theta = std::sin(theta);
    c = (std::sin((1 - s) * theta) / sin_theta) * a.coeffs() +
        (std::sin(s * theta) / sin_theta) * b.coeffs();
  }
  return SafeNormalized(Eigen::Quaterniond(c(3), c(0), c(1), c(2)));
}

// The channel's value (width numbers) at time t; `slerp`: LINEAR keys are quaternions.
template <typename Channel>
Eigen::VectorXd SampleChannel(const Channel& ch, int width, double t, bool slerp) {
  const size_t n = ch.times.size();
  const bool cubic = ch.interpolation == Interpolation::kCubicSpline;
  const size_t per_key = static_cast<size_t>(width) * (cubic ? 3 : 1);
  // Element e (0 in-tangent, 1 value, 2 out-tangent for cubic; 0 value otherwise) of key k.
  auto element = [&](size_t key, int e) {
    return Eigen::Map<const Eigen::VectorXd>(ch.values.data() + key * per_key + e * width, width);
  };
  const int value_element = cubic ? 1 : 0;
  if (n == 1 || !(t > ch.times.front())) return element(0, value_element);
  if (!(t < ch.times.back())) return element(n - 1, value_element);
  const size_t k = static_cast<size_t>(std::upper_bound(ch.times.begin(), ch.times.end(), t) -
                                       ch.times.begin()) -
                   1;  // times[k] <= t < times[k + 1]
  const double dt = ch.times[k + 1] - ch.times[k];
  const double s = (t - ch.times[k]) / dt;
  switch (ch.interpolation) {
    case Interpolation::kStep:
      return element(k, 0);
    case Interpolation::kLinear: {
      if (slerp) {
        const auto a = element(k, 0), b = element(k + 1, 0);
        const Eigen::Quaterniond q = Slerp(Eigen::Quaterniond(a(3), a(0), a(1), a(2)),
                                           Eigen::Quaterniond(b(3), b(0), b(1), b(2)), s);
        return q.coeffs();  // Eigen stores x, y, z, w
      }
      return (1 - s) * element(k, 0) + s * element(k + 1, 0);
    }
    case Interpolation::kCubicSpline: {
      const double s2 = s * s, s3 = s2 * s;
      return (2 * s3 - 3 * s2 + 1) * element(k, 1) + (s3 - 2 * s2 + s) * dt * element(k, 2) +
             (-2 * s3 + 3 * s2) * element(k + 1, 1) + (s3 - s2) * dt * element(k + 1, 0);
    }
  }
  return element(k, value_element);
}

}  // namespace

std::vector<Transform> SampleAnimation(const Skeleton& skeleton, const Animation& animation,
                                       double t) {
  std::vector<Transform> local;
  local.reserve(skeleton.joints.size());
  for (const Joint& joint : skeleton.joints) local.push_back(joint.rest);
  if (std::isnan(t)) t = animation.start;
  for (const AnimationChannel& ch : animation.channels) {
    if (ch.joint < 0 || ch.joint >= skeleton.size() || ch.times.empty()) continue;
    const int width = ch.path == AnimationPath::kRotation ? 4 : 3;
    const size_t per_key =
        static_cast<size_t>(width) * (ch.interpolation == Interpolation::kCubicSpline ? 3 : 1);
    if (ch.values.size() < ch.times.size() * per_key) continue;  // malformed channel
    const Eigen::VectorXd v = SampleChannel(ch, width, t, ch.path == AnimationPath::kRotation);
    Transform& out = local[ch.joint];
    switch (ch.path) {
      case AnimationPath::kTranslation:
        out.translation = v.head<3>();
        break;
      case AnimationPath::kScale:
        out.scale = v.head<3>();
        break;
      case AnimationPath::kRotation:
        out.rotation = SafeNormalized(Eigen::Quaterniond(v(3), v(0), v(1), v(2)));
        break;
    }
  }
  return local;
}

std::vector<double> SampleMorphWeights(const Animation& animation, double t,
                                       std::vector<double> defaults) {
  if (std::isnan(t)) t = animation.start;
  for (const MorphWeightChannel& ch : animation.morph_channels) {
    const size_t per_key =
        static_cast<size_t>(ch.count) * (ch.interpolation == Interpolation::kCubicSpline ? 3 : 1);
    if (ch.count < 1 || ch.times.empty() || ch.values.size() < ch.times.size() * per_key ||
        ch.first_target < 0 || ch.first_target + ch.count > static_cast<int>(defaults.size())) {
      continue;  // malformed channel
    }
    const Eigen::VectorXd v = SampleChannel(ch, ch.count, t, /*slerp=*/false);
    for (int i = 0; i < ch.count; ++i) defaults[ch.first_target + i] = v(i);
  }
  return defaults;
}

namespace {

// Times finite and strictly increasing (at least one), values finite and `width` a key (3 × width
// for CUBICSPLINE: in-tangent, value, out-tangent).
absl::Status ValidateKeys(const std::vector<double>& times, const std::vector<double>& values, size_t width,
                          Interpolation interpolation, const std::string& where) {
  const size_t per_key = width * (interpolation == Interpolation::kCubicSpline ? 3 : 1);
  if (times.empty()) return absl::InvalidArgumentError(where + ": no keys");
  for (size_t i = 0; i < times.size(); ++i) {
    if (!std::isfinite(times[i]))
      return absl::InvalidArgumentError(absl::StrFormat("%s.times[%d] is not finite", where, i));
    if (i > 0 && !(times[i] > times[i - 1]))
      return absl::InvalidArgumentError(absl::StrFormat("%s.times[%d] = %g is not greater than the previous time",
                                     where, i, times[i]));
  }
  if (values.size() != times.size() * per_key)
    return absl::InvalidArgumentError(absl::StrFormat("%s: %d values for %d keys (expected %d)", where,
                                   values.size(), times.size(), times.size() * per_key));
  for (size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]))
      return absl::InvalidArgumentError(absl::StrFormat("%s.values[%d] is not finite", where, i));
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateAnimationChannel(const AnimationChannel& ch, int num_joints, const std::string& where) {
  if (ch.joint < 0 || ch.joint >= num_joints)
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: joint %d is out of range (%d joints)", where, ch.joint, num_joints));
  return ValidateKeys(ch.times, ch.values, ch.path == AnimationPath::kRotation ? 4 : 3, ch.interpolation, where);
}

absl::Status ValidateMorphWeightChannel(const MorphWeightChannel& ch, int num_targets, const std::string& where) {
  if (ch.count < 1 || ch.first_target < 0 || ch.first_target > num_targets - ch.count)
    return absl::InvalidArgumentError(absl::StrFormat("%s: targets [%d, %d) are out of range (%d morph targets)",
                                                      where, ch.first_target, ch.first_target + ch.count,
                                                      num_targets));
  return ValidateKeys(ch.times, ch.values, static_cast<size_t>(ch.count), ch.interpolation, where);
}

}  // namespace skinning
