// A joint's local transform as translation, rotation and scale (T·R·S, the glTF convention).
#ifndef SKINNING_CORE_RIG_TRANSFORM_H_
#define SKINNING_CORE_RIG_TRANSFORM_H_

#include <optional>

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

// Skinning transforms built from float32 rig data (glTF accessors; the API's Transform and
// inverse_bind are floats) are rigid only up to float rounding: |AᵀA − I| (max-abs entry) of
// 4.5e-7 to 1.3e-6 on the sample characters' own transforms. The kernels (DQS, STBS,
// swing/twist) count a linear part within this tolerance of orthonormal (det > 0) as its
// nearest rotation and drop the stretch it leaves (about half the tolerance at most: a uniform
// scale of 1 ± 5e-6, 10 µm at 2 m from the origin), so that such rigs take the rigid paths;
// larger stretches are kept exactly.
constexpr double kFloatRigidTolerance = 1e-5;
// A's nearest rotation when |AᵀA − I| ≤ kFloatRigidTolerance (max-abs entry) and det A > 0, else
// nullopt (a real stretch, a shear, a mirror, a non-finite entry). The rotation is A itself when
// |AᵀA − I| ≤ 1e-12, else svd3.h's NearestRotation (two of its polar Newton steps reach rounding
// from an error of 1e-5).
std::optional<Eigen::Matrix3d> RotationWithinRounding(const Eigen::Matrix3d& A);

// t with every translation, rotation and scale component rounded to float32 (−0 folded into +0),
// as a rig stores it (the API's Transform is float32) and a glTF export of the rig holds it.
Transform RoundedToFloat(const Transform& t);

// q itself when it is a unit quaternion to float precision (|q|² within 2^-21 of 1; a unit
// quaternion rounded to float32 is within 2^-23), else q normalized. The glTF reader and writer
// use it for rest rotations, so that a rotation read from a file, stored as float32 and written
// again reads back to the same bits (normalizing every time could move a component by an ulp).
Eigen::Quaterniond UnitWithinFloatRounding(const Eigen::Quaterniond& q);

}  // namespace skinning

#endif  // SKINNING_CORE_RIG_TRANSFORM_H_
