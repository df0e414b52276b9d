// 3x3 singular value decomposition, nearest rotations and cofactors for the per-frame solvers.
#ifndef SKINNING_CORE_MATH_SVD3_H_
#define SKINNING_CORE_MATH_SVD3_H_

#include <Eigen/Core>

namespace skinning {

// A = U · diag(sigma) · Vᵀ with U, V proper rotations (det = +1) and |sigma| sorted decreasing;
// the sign of det A is carried by sigma(2) (negative for a reflection). Robust for rank-deficient
// and repeated-singular-value inputs.
//
// Accuracy (svd3_test.cc): |U diag(sigma) Vᵀ - A| ≤ 1e-12 |A| (double), 1e-5 |A| (float;
// measured worst 2e-6) for finite A whose singular values are normal numbers; U, V orthonormal
// to the same bounds. Subnormal entries or singular values lose relative accuracy but the
// results stay finite and U, V proper. Non-finite input gives unspecified output.
// Method: one-sided Jacobi with quaternion-accumulated V, then Givens QR of A·V (svd3.cc);
// bench/svd3_bench.cc measures it against Eigen::JacobiSVD.
void Svd3(const Eigen::Matrix3d& A, Eigen::Matrix3d* U, Eigen::Vector3d* sigma, Eigen::Matrix3d* V);
void Svd3(const Eigen::Matrix3f& A, Eigen::Matrix3f* U, Eigen::Vector3f* sigma, Eigen::Matrix3f* V);

// The cofactor matrix of A: cof(A) = det(A) · A⁻ᵀ, whose columns are c1×c2, c2×c0, c0×c1 for the
// columns c0, c1, c2 of A (defined for every A, singular or not). Written out entry by entry:
// with Eigen's cross products the polar iteration in svd3.cc took 8 % longer (bench/svd3_bench).
inline Eigen::Matrix3d Cofactor(const Eigen::Matrix3d& A) {
  Eigen::Matrix3d C;
  C(0, 0) = A(1, 1) * A(2, 2) - A(1, 2) * A(2, 1);
  C(0, 1) = A(1, 2) * A(2, 0) - A(1, 0) * A(2, 2);
  C(0, 2) = A(1, 0) * A(2, 1) - A(1, 1) * A(2, 0);
  C(1, 0) = A(0, 2) * A(2, 1) - A(0, 1) * A(2, 2);
  C(1, 1) = A(0, 0) * A(2, 2) - A(0, 2) * A(2, 0);
  C(1, 2) = A(0, 1) * A(2, 0) - A(0, 0) * A(2, 1);
  C(2, 0) = A(0, 1) * A(1, 2) - A(0, 2) * A(1, 1);
  C(2, 1) = A(0, 2) * A(1, 0) - A(0, 0) * A(1, 2);
  C(2, 2) = A(0, 0) * A(1, 1) - A(0, 1) * A(1, 0);
  return C;
}

// The rotation nearest to A in the Frobenius norm, det = +1 always (for a reflected A the
// singular vector of the smallest singular value is flipped): U · Vᵀ from Svd3. In double, A with
// det A > 0 and |A|_F |A⁻¹|_F ≤ 100 (the elastic local step's elements) takes Newton's polar
// iteration instead (svd3.cc: the same factor to rounding, 3.6× faster on near-rotations in
// bench/svd3_bench).
Eigen::Matrix3d NearestRotation(const Eigen::Matrix3d& A);
Eigen::Matrix3f NearestRotation(const Eigen::Matrix3f& A);

}  // namespace skinning

#endif  // SKINNING_CORE_MATH_SVD3_H_
