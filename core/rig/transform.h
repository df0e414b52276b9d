// A joint's local transform as translation, rotation and scale (T·R·S, the glTF convention).
#ifndef SKINNING_CORE_RIG_TRANSFORM_H_
#define SKINNING_CORE_RIG_TRANSFORM_H_

#include <Eigen/Core>
#include <Eigen/Geometry>

namespace skinning {

struct Transform {
  Eigen::Vector3d translation = Eigen::Vector3d::Zero();
  Eigen::Quaterniond rotation = Eigen::Quaterniond::Identity();  // unit quaternion
  Eigen::Vector3d scale = Eigen::Vector3d::Ones();                // per-axis, in the local frame

  // The 4x4 affine matrix T·R·S.
  Eigen::Affine3d ToAffine() const;
  bool HasUnitScale(double tol = 1e-12) const;
};

// Decomposes an affine matrix with positive per-axis scale and no shear into T·R·S.
// Matrices with shear come back with the nearest rotation (polar decomposition) and the
// diagonal of the stretch as scale.
Transform DecomposeAffine(const Eigen::Affine3d& A);

}  // namespace skinning

#endif  // SKINNING_CORE_RIG_TRANSFORM_H_
