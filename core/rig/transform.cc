#include "core/rig/transform.h"

#include <cmath>

#include <Eigen/SVD>

#include "core/math/svd3.h"

namespace skinning {

Eigen::Affine3d Transform::ToAffine() const {
  Eigen::Affine3d A = Eigen::Affine3d::Identity();
  A.linear() = rotation.normalized().toRotationMatrix() * scale.asDiagonal();
  A.translation() = translation;
  return A;
}

bool Transform::HasUnitScale(double tol) const {
  return (scale - Eigen::Vector3d::Ones()).cwiseAbs().maxCoeff() <= tol;
}

Transform DecomposeAffine(const Eigen::Affine3d& A) {
  Transform t;
  t.translation = A.translation();
  const Eigen::Matrix3d L = A.linear();
  // Polar decomposition L = R S via the SVD L = U Σ Vᵀ: R = U Vᵀ (made proper), S = V Σ Vᵀ.
  Eigen::JacobiSVD<Eigen::Matrix3d> svd(L, Eigen::ComputeFullU | Eigen::ComputeFullV);
  Eigen::Matrix3d U = svd.matrixU();
  Eigen::Vector3d sigma = svd.singularValues();
  const Eigen::Matrix3d V = svd.matrixV();
  if ((U * V.transpose()).determinant() < 0) {
    U.col(2) *= -1;
    sigma(2) *= -1;
  }
  const Eigen::Matrix3d R = U * V.transpose();
  const Eigen::Matrix3d S = V * sigma.asDiagonal() * V.transpose();
  t.rotation = Eigen::Quaterniond(R).normalized();
  t.scale = S.diagonal();
  return t;
}

Transform RoundedToFloat(const Transform& t) {
  auto to_float = [](double x) { return static_cast<double>(static_cast<float>(x) + 0.0f); };
  Transform r = t;
  r.translation = t.translation.unaryExpr(to_float);
  r.rotation.coeffs() = t.rotation.coeffs().unaryExpr(to_float);
  r.scale = t.scale.unaryExpr(to_float);
  return r;
}

Eigen::Quaterniond UnitWithinFloatRounding(const Eigen::Quaterniond& q) {
  return std::abs(q.squaredNorm() - 1.0) <= std::ldexp(1.0, -21) ? q : q.normalized();
}

std::optional<Eigen::Matrix3d> RotationWithinRounding(const Eigen::Matrix3d& A) {
  const double error = (A.transpose() * A - Eigen::Matrix3d::Identity()).cwiseAbs().maxCoeff();
  if (!(error <= kFloatRigidTolerance) || !(A.determinant() > 0)) return std::nullopt;
  if (error <= 1e-12) return A;
  return NearestRotation(A);
}

}  // namespace skinning
