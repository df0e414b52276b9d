#include "core/rig/swing_twist.h"

#include <algorithm>
#include <cmath>

namespace skinning {

namespace {
constexpr double kPi = 3.14159265358979323846;
}  // namespace

void SwingTwistSplit(const Eigen::Quaterniond& q_in, const Eigen::Vector3d& axis,
                     Eigen::Quaterniond* swing, double* twist_angle) {
  const double qn = q_in.norm();
  const Eigen::Quaterniond q =
      qn > 0 ? Eigen::Quaterniond(q_in.coeffs() / qn) : Eigen::Quaterniond::Identity();
  // The twist is q projected on the quaternions about `axis`: (w, (v·a) a), normalized.
  double w = q.w();
  double va = q.vec().dot(axis);
  const double len = std::hypot(w, va);
  if (len < 1e-9) {  // 180° swing: no defined twist
    *swing = q;
    if (swing->w() < 0) swing->coeffs() *= -1.0;
    *twist_angle = 0.0;
    return;
  }
  w /= len;
  va /= len;
  // The twist with w ≥ 0 (angle in [−π, π]); a half turn (w ≈ 0, within rounding of cos(π/2))
  // with va < 0 is −π, mapped to +π.
  if (w < 0 || (w < 1e-14 && va < 0)) {
    w = -w;
    va = -va;
  }
  const Eigen::Quaterniond twist(w, va * axis.x(), va * axis.y(), va * axis.z());
  *twist_angle = std::min(2.0 * std::atan2(va, w), kPi);
  *swing = q * twist.conjugate();
  // q·t* has no component along the axis up to rounding; remove it and renormalize.
  Eigen::Vector3d sv = swing->vec();
  sv -= sv.dot(axis) * axis;
  double sw = swing->w();
  if (sw < 0) {
    sw = -sw;
    sv = -sv;
  }
  const double sn = std::sqrt(sw * sw + sv.squaredNorm());
  *swing = Eigen::Quaterniond(sw / sn, sv.x() / sn, sv.y() / sn, sv.z() / sn);
}

}  // namespace skinning
