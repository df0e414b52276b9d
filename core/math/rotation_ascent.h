// Warm-started rotation fitting for local/global solvers: a few ascent steps on
// f(R) = tr(Rᵀ A) over rotations from the previous frame's rotation (Müller et al. 2016,
// "A Robust Method to Extract the Rotational Part of Deformations"), instead of an SVD.
#ifndef SKINNING_CORE_MATH_ROTATION_ASCENT_H_
#define SKINNING_CORE_MATH_ROTATION_ASCENT_H_

#include <cmath>
#include <limits>

#include <Eigen/Core>
#include <Eigen/Geometry>

namespace skinning {

// Up to max_steps steps R ← exp(ω/2) R with ω = Σ_c R_c × A_c / |Σ_c R_c · A_c| (quaternion
// update, renormalized), stopping before a step whose |ω/2|² is below `negligible` and after one
// below `converged`. Returns the rotation and updates *q when f did not decrease, else keeps
// *q and returns its rotation (the start).
template <typename Scalar>
Eigen::Matrix<Scalar, 3, 3> WarmRotationAscent(const Eigen::Matrix<Scalar, 3, 3>& A, Eigen::Quaternion<Scalar>* q,
                                                int max_steps, Scalar negligible, Scalar converged) {
  using Matrix3 = Eigen::Matrix<Scalar, 3, 3>;
  using Vector3 = Eigen::Matrix<Scalar, 3, 1>;
  const Matrix3 start = q->toRotationMatrix();
  const Scalar f_start = (start.transpose() * A).trace();
  Eigen::Quaternion<Scalar> cur = *q;
  Matrix3 R = start;
  for (int step = 0; step < max_steps; ++step) {
    const Vector3 omega = R.col(0).cross(A.col(0)) + R.col(1).cross(A.col(1)) + R.col(2).cross(A.col(2));
    const Scalar denom = std::abs(R.col(0).dot(A.col(0)) + R.col(1).dot(A.col(1)) + R.col(2).dot(A.col(2))) +
                         std::numeric_limits<Scalar>::min();
    const Vector3 half = (Scalar(0.5) / denom) * omega;
    const Scalar h2 = half.squaredNorm();
    if (h2 < negligible) break;
    cur = (Eigen::Quaternion<Scalar>(Scalar(1), half.x(), half.y(), half.z()) * cur).normalized();
    R = cur.toRotationMatrix();
    if (h2 < converged) break;
  }
  if ((R.transpose() * A).trace() >= f_start) {
    *q = cur;
    return R;
  }
  return start;
}

}  // namespace skinning

#endif  // SKINNING_CORE_MATH_ROTATION_ASCENT_H_
