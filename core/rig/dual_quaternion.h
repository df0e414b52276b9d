// Unit dual quaternions for rigid transforms (Kavan et al. 2008).
#ifndef SKINNING_CORE_RIG_DUAL_QUATERNION_H_
#define SKINNING_CORE_RIG_DUAL_QUATERNION_H_

#include <Eigen/Geometry>

namespace skinning {

// q = real + ε dual. For a rigid transform (R, t): real = r, dual = ½ (0, t) r.
template <typename Scalar>
struct DualQuaternion {
  Eigen::Quaternion<Scalar> real;
  Eigen::Quaternion<Scalar> dual;

  static DualQuaternion FromRigid(const Eigen::Quaternion<Scalar>& r,
                                  const Eigen::Matrix<Scalar, 3, 1>& t) {
    DualQuaternion q;
    q.real = r;
    Eigen::Quaternion<Scalar> tq(Scalar(0), t.x(), t.y(), t.z());
    q.dual.coeffs() = (tq * r).coeffs() * Scalar(0.5);
    return q;
  }
  Eigen::Matrix<Scalar, 3, 1> Translation() const {
    // t = 2 dual · conj(real) for a unit dual quaternion
    Eigen::Quaternion<Scalar> t = dual * real.conjugate();
    return Scalar(2) * t.vec();
  }
};

using DualQuaterniond = DualQuaternion<double>;
using DualQuaternionf = DualQuaternion<float>;

}  // namespace skinning

#endif  // SKINNING_CORE_RIG_DUAL_QUATERNION_H_
