#include "core/math/svd3.h"

#include <gtest/gtest.h>

#include <Eigen/Core>
#include <Eigen/Geometry>
#include <Eigen/SVD>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using Eigen::Matrix3d;
using Eigen::Vector3d;

// Relative accuracy asked of each precision.
template <typename T>
constexpr double kTol = std::is_same_v<T, float> ? 1e-5 : 1e-12;

Matrix3d RandomRotation(std::mt19937& gen) {
  std::normal_distribution<double> n(0.0, 1.0);
  return Eigen::Quaterniond(n(gen), n(gen), n(gen), n(gen)).normalized().toRotationMatrix();
}

Matrix3d RandomEntries(std::mt19937& gen) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Matrix3d A;
  for (int i = 0; i < 9; ++i) A(i) = u(gen);
  return A;
}

// R1 diag(s) R2 with log-uniform singular values in [10^min_exp, 1] and a random sign of the
// determinant: ill-conditioned, nearly rank-deficient and reflected inputs.
Matrix3d RandomConditioned(std::mt19937& gen, double min_exp) {
  std::uniform_real_distribution<double> e(min_exp, 0.0);
  std::bernoulli_distribution flip(0.5);
  Vector3d s(std::pow(10.0, e(gen)), std::pow(10.0, e(gen)), std::pow(10.0, e(gen)));
  if (flip(gen)) s(2) = -s(2);
  return RandomRotation(gen) * s.asDiagonal() * RandomRotation(gen);
}

// Half uniform entries, half conditioned (singular values down to 1e-8 of the largest).
std::vector<Matrix3d> RandomInputs(int count, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<Matrix3d> inputs;
  for (int k = 0; k < count; ++k) {
    inputs.push_back(k % 2 == 0 ? RandomEntries(gen) : RandomConditioned(gen, -8.0));
  }
  return inputs;
}

// Awkward inputs: zero, rank 1 and 2, repeated and nearly repeated singular values, reflections.
std::vector<std::pair<std::string, Matrix3d>> DegenerateMatrices() {
  std::mt19937 gen(7);
  const Matrix3d R1 = RandomRotation(gen), R2 = RandomRotation(gen);
  const Vector3d u = Vector3d(0.3, -1.2, 0.7), v = Vector3d(-0.5, 0.1, 2.0);
  Matrix3d permutation;
  permutation << 0, 1, 0, 0, 0, 1, 1, 0, 0;
  Matrix3d swap_xy;
  swap_xy << 0, 1, 0, 1, 0, 0, 0, 0, 1;
  return {
      {"zero", Matrix3d::Zero()},
      {"rank1 outer", u * v.transpose()},
      {"rank1 axis", Vector3d::UnitX() * Vector3d::UnitX().transpose()},
      {"rank1 column", (Matrix3d() << 0, 0, 1, 0, 0, 2, 0, 0, -3).finished()},
      {"rank2 rotated", R1 * Vector3d(2.0, 0.5, 0.0).asDiagonal() * R2},
      {"rank2 diagonal", Vector3d(1.0, 1.0, 0.0).asDiagonal().toDenseMatrix()},
      {"rank2 repeated rotated", R1 * Vector3d(1.0, 1.0, 0.0).asDiagonal() * R2},
      {"identity", Matrix3d::Identity()},
      {"scaled identity", 2.0 * Matrix3d::Identity()},
      {"minus identity", -Matrix3d::Identity()},
      {"scaled rotation", 3.0 * R1},
      {"repeated largest", Vector3d(3.0, 3.0, 1.0).asDiagonal().toDenseMatrix()},
      {"repeated smallest", Vector3d(1.0, 2.0, 2.0).asDiagonal().toDenseMatrix()},
      {"repeated rotated", R1 * Vector3d(2.0, 1.0, 1.0).asDiagonal() * R2},
      {"nearly repeated", Vector3d(1.0, 1.0 + 1e-7, 1.0 - 1e-7).asDiagonal().toDenseMatrix()},
      {"nearly singular", R1 * Vector3d(1.0, 1e-10, 1e-20).asDiagonal() * R2},
      {"reflection z", Vector3d(1.0, 1.0, -1.0).asDiagonal().toDenseMatrix()},
      {"reflection x", Vector3d(-1.0, 1.0, 1.0).asDiagonal().toDenseMatrix()},
      {"reflection rotated", R1 * Vector3d(1.0, 1.0, -1.0).asDiagonal() * R2},
      {"reflection distinct", R1 * Vector3d(3.0, 2.0, -1.0).asDiagonal() * R2},
      {"reflection rank2", R1 * Vector3d(3.0, 2.0, -0.0).asDiagonal() * swap_xy},
      {"swap xy", swap_xy},
      {"cyclic permutation", permutation},
  };
}

struct Result {
  Matrix3d A;  // the input as the precision under test sees it
  Matrix3d U, V;
  Vector3d sigma;
  Matrix3d R;  // NearestRotation(A)
};

template <typename T>
Result Decompose(const Matrix3d& A) {
  using M = Eigen::Matrix<T, 3, 3>;
  using Vec = Eigen::Matrix<T, 3, 1>;
  const M a = A.cast<T>();
  M U, V;
  Vec sigma;
  Svd3(a, &U, &sigma, &V);
  const M R = NearestRotation(a);
  return {a.template cast<double>(), U.template cast<double>(), V.template cast<double>(),
          sigma.template cast<double>(), R.template cast<double>()};
}

// Orthonormal to tol and det = +1 (to tol).
void ExpectProperRotation(const Matrix3d& Q, double tol, const std::string& what) {
  ASSERT_TRUE(Q.allFinite()) << what;
  EXPECT_LE((Q.transpose() * Q - Matrix3d::Identity()).cwiseAbs().maxCoeff(), tol) << what;
  EXPECT_NEAR(Q.determinant(), 1.0, tol) << what;
}

// Independent polar decomposition: Eigen's JacobiSVD with the smallest singular direction
// flipped for reflections.
Matrix3d ReferenceNearestRotation(const Matrix3d& A) {
  Eigen::JacobiSVD<Matrix3d> svd(A, Eigen::ComputeFullU | Eigen::ComputeFullV);
  const Matrix3d U = svd.matrixU(), V = svd.matrixV();
  Vector3d d(1.0, 1.0, (U * V.transpose()).determinant() < 0.0 ? -1.0 : 1.0);
  return U * d.asDiagonal() * V.transpose();
}

template <typename T>
void CheckReconstruction(const std::vector<Matrix3d>& inputs) {
  double worst = 0.0;
  for (const Matrix3d& input : inputs) {
    const Result r = Decompose<T>(input);
    const double error = (r.U * r.sigma.asDiagonal() * r.V.transpose() - r.A).norm() / r.A.norm();
    worst = std::max(worst, error);
    ASSERT_LE(error, kTol<T>) << "A =\n" << r.A;
  }
  ::testing::Test::RecordProperty(
      std::is_same_v<T, float> ? "worst_relative_error_float" : "worst_relative_error_double",
      [worst] {
        char buffer[32];
        std::snprintf(buffer, sizeof(buffer), "%.3g", worst);
        return std::string(buffer);
      }());
}

TEST(Svd3Test, ReconstructsRandomMatrices) {
  const std::vector<Matrix3d> inputs = RandomInputs(10000, 1);
  CheckReconstruction<double>(inputs);
  CheckReconstruction<float>(inputs);
}

template <typename T>
void CheckRotations(const std::vector<Matrix3d>& inputs) {
  for (const Matrix3d& input : inputs) {
    const Result r = Decompose<T>(input);
    ExpectProperRotation(r.U, kTol<T>, "U");
    ExpectProperRotation(r.V, kTol<T>, "V");
    ExpectProperRotation(r.R, kTol<T>, "NearestRotation");
    if (::testing::Test::HasFailure()) FAIL() << "A =\n" << r.A;
  }
}

TEST(Svd3Test, UAndVAreProperRotations) {
  const std::vector<Matrix3d> inputs = RandomInputs(10000, 2);
  CheckRotations<double>(inputs);
  CheckRotations<float>(inputs);
}

template <typename T>
void CheckSingularValues(const Matrix3d& input, const std::string& what) {
  const Result r = Decompose<T>(input);
  const Vector3d reference = Eigen::JacobiSVD<Matrix3d>(r.A).singularValues();
  const double tol = kTol<T> * std::max(reference(0), std::numeric_limits<double>::min());
  EXPECT_GE(r.sigma(0), -tol) << what;
  EXPECT_GE(r.sigma(1), -tol) << what;
  EXPECT_GE(std::abs(r.sigma(0)), std::abs(r.sigma(1)) - tol) << what;
  EXPECT_GE(std::abs(r.sigma(1)), std::abs(r.sigma(2)) - tol) << what;
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(std::abs(r.sigma(i)), reference(i), tol) << what;
  // sigma(2) carries the sign of det A (when det A is clearly away from zero).
  if (reference(2) > 100.0 * tol) {
    EXPECT_EQ(r.sigma(2) < 0.0, r.A.determinant() < 0.0) << what;
  }
}

TEST(Svd3Test, SingularValuesSortedAndMatchEigen) {
  for (const Matrix3d& input : RandomInputs(10000, 3)) {
    CheckSingularValues<double>(input, "double");
    CheckSingularValues<float>(input, "float");
    if (HasFailure()) FAIL() << "A =\n" << input;
  }
}

// The polar factor's sensitivity is about 1 / (sigma_1 + sigma_2 det-signed) relative to
// sigma_0; inputs where it is ambiguous (gap at rounding level) are skipped.
template <typename T>
void CheckNearestRotation(const Matrix3d& input, double base_tol, int* checked) {
  const Result r = Decompose<T>(input);
  ExpectProperRotation(r.R, kTol<T>, "NearestRotation");
  const Vector3d s = Eigen::JacobiSVD<Matrix3d>(r.A).singularValues();
  const double gap = s(1) + (r.A.determinant() < 0.0 ? -s(2) : s(2));
  if (gap < 1e-3 * s(0)) return;
  const Matrix3d reference = ReferenceNearestRotation(r.A);
  EXPECT_LE((r.R - reference).cwiseAbs().maxCoeff(), base_tol * s(0) / gap) << "A =\n" << r.A;
  ++*checked;
}

TEST(Svd3Test, NearestRotationMatchesPolarDecomposition) {
  int checked_double = 0, checked_float = 0;
  std::mt19937 gen(4);
  std::vector<Matrix3d> inputs = RandomInputs(10000, 5);
  // Near-rotations, as the ARAP local step sees them.
  for (int k = 0; k < 2000; ++k) inputs.push_back(RandomRotation(gen) + 0.2 * RandomEntries(gen));
  for (const Matrix3d& input : inputs) {
    CheckNearestRotation<double>(input, 1e-12, &checked_double);
    CheckNearestRotation<float>(input, 1e-5, &checked_float);
    if (HasFailure()) return;
  }
  EXPECT_GT(checked_double, 10000);
  EXPECT_GT(checked_float, 10000);
}

template <typename T>
void CheckDegenerate(const std::string& name, const Matrix3d& input) {
  const Result r = Decompose<T>(input);
  const std::string what = name + (std::is_same_v<T, float> ? " (float)" : " (double)");
  ASSERT_TRUE(r.sigma.allFinite()) << what;
  ExpectProperRotation(r.U, kTol<T>, what + " U");
  ExpectProperRotation(r.V, kTol<T>, what + " V");
  ExpectProperRotation(r.R, kTol<T>, what + " NearestRotation");
  const double norm = r.A.norm();
  EXPECT_LE((r.U * r.sigma.asDiagonal() * r.V.transpose() - r.A).norm(), kTol<T> * norm) << what;
  CheckSingularValues<T>(input, what);
  // U Vᵀ is the nearest rotation: compare with the reference when the latter is unique.
  const Vector3d s = Eigen::JacobiSVD<Matrix3d>(r.A).singularValues();
  const double gap = s(1) + (r.A.determinant() < 0.0 ? -s(2) : s(2));
  if (gap > 1e-3 * s(0)) {
    EXPECT_LE((r.R - ReferenceNearestRotation(r.A)).cwiseAbs().maxCoeff(), 1e2 * kTol<T>) << what;
  }
  // Whether unique or not, no rotation may be closer (tr(Rᵀ A) is maximal).
  EXPECT_GE((r.R.transpose() * r.A).trace(),
            (ReferenceNearestRotation(r.A).transpose() * r.A).trace() - kTol<T> * (1.0 + norm))
      << what;
}

TEST(Svd3Test, DegenerateInputs) {
  for (const auto& [name, A] : DegenerateMatrices()) {
    CheckDegenerate<double>(name, A);
    CheckDegenerate<float>(name, A);
  }
  // The zero matrix: zero singular values, any proper rotation.
  const Result zero = Decompose<float>(Matrix3d::Zero());
  EXPECT_EQ(zero.sigma, Vector3d::Zero());
}

TEST(Svd3Test, ReflectionGoesToNearestRotation) {
  // diag(1, 1, -1): the nearest rotations flip one more axis (diag(1, -1, -1) and the like) and
  // lie at Frobenius distance 2; none of 10k random rotations is closer.
  std::mt19937 gen(6);
  std::vector<Matrix3d> rotations;
  for (int k = 0; k < 10000; ++k) rotations.push_back(RandomRotation(gen));
  const std::vector<Matrix3d> reflections = {
      Vector3d(1.0, 1.0, -1.0).asDiagonal().toDenseMatrix(),
      -Matrix3d::Identity(),
      RandomRotation(gen) * Vector3d(1.0, 1.0, -1.0).asDiagonal(),
      RandomRotation(gen) * Vector3d(3.0, 2.0, -1.0).asDiagonal() * RandomRotation(gen),
      RandomRotation(gen) * Vector3d(1.0, 0.5, -0.4).asDiagonal() * RandomRotation(gen),
  };
  for (const Matrix3d& A : reflections) {
    double best_random = std::numeric_limits<double>::infinity();
    for (const Matrix3d& Q : rotations) best_random = std::min(best_random, (Q - A).norm());
    const Matrix3d Rd = NearestRotation(A);
    const Matrix3d R_float = NearestRotation(Eigen::Matrix3f(A.cast<float>())).cast<double>();
    ExpectProperRotation(Rd, 1e-12, "double");
    ExpectProperRotation(R_float, 1e-5, "float");
    EXPECT_LE((Rd - A).norm(), best_random + 1e-12) << "A =\n" << A;
    EXPECT_LE((R_float - A).norm(), best_random + 1e-5) << "A =\n" << A;
    // Distance² = Σσ² + 3 - 2 (σ0 + σ1 - σ2) for a reflection.
    const Vector3d s = Eigen::JacobiSVD<Matrix3d>(A).singularValues();
    const double expected = std::sqrt(s.squaredNorm() + 3.0 - 2.0 * (s(0) + s(1) - s(2)));
    EXPECT_NEAR((Rd - A).norm(), expected, 1e-12) << "A =\n" << A;
    EXPECT_NEAR((R_float - A).norm(), expected, 1e-5) << "A =\n" << A;
  }
  // diag(1, 1, -1) itself: all singular values are 1, so every rotation that fixes two of the
  // axes' signs and flips one more (diag(1, -1, -1)) or unflips z (the identity) is at distance
  // 2; U Vᵀ of an SVD with U = V = I gives the identity. Either way det = +1 and distance 2.
  const Matrix3d R = NearestRotation(Vector3d(1.0, 1.0, -1.0).asDiagonal().toDenseMatrix());
  EXPECT_NEAR((R - Vector3d(1.0, 1.0, -1.0).asDiagonal().toDenseMatrix()).norm(), 2.0, 1e-12);
}

// accurate = false: the scaled entries or singular values are subnormal, so only the
// robustness properties are checked (subnormals carry too few bits for the relative bounds).
template <typename T>
void CheckScaled(double scale, unsigned seed, bool accurate) {
  using M = Eigen::Matrix<T, 3, 3>;
  for (const Matrix3d& unit : RandomInputs(1000, seed)) {
    const Matrix3d input = scale * unit;
    const Result r = Decompose<T>(input);
    char what_buffer[32];
    std::snprintf(what_buffer, sizeof(what_buffer), "scale %g", scale);
    const std::string what = what_buffer;
    ASSERT_TRUE(r.sigma.allFinite()) << what;
    ExpectProperRotation(r.U, kTol<T>, what + " U");
    ExpectProperRotation(r.V, kTol<T>, what + " V");
    ExpectProperRotation(r.R, kTol<T>, what + " NearestRotation");
    if (!accurate) continue;
    // Errors in units of the scale (norms and determinants of 1e300 would overflow).
    const Matrix3d a = r.A / scale;
    const Matrix3d recon = r.U * (r.sigma / scale).asDiagonal() * r.V.transpose();
    EXPECT_LE((recon - a).norm(), kTol<T> * a.norm()) << what;
    // The nearest rotation does not depend on the scale.
    const M unit_a = a.cast<T>();
    const Matrix3d unit_r = NearestRotation(unit_a).template cast<double>();
    const Vector3d s = Eigen::JacobiSVD<Matrix3d>(a).singularValues();
    const double gap = s(1) + (a.determinant() < 0.0 ? -s(2) : s(2));
    if (gap > 1e-3 * s(0)) {
      EXPECT_LE((r.R - unit_r).cwiseAbs().maxCoeff(), 10.0 * kTol<T> * s(0) / gap) << what;
    }
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "A / scale =\n" << unit;
      return;
    }
  }
}

TEST(Svd3Test, HugeAndTinyScales) {
  // The inputs' entries and singular values reach 1e-8 of the largest, so these stay normal.
  for (double scale : {1e-295, 1e-150, 1e150, 1e300}) CheckScaled<double>(scale, 8, true);
  for (double scale : {1e-28, 1e-15, 1e15, 1e35}) CheckScaled<float>(scale, 9, true);
  // Subnormal entries (and results): still proper rotations, finite singular values.
  for (double scale : {1e-310, 1e-318}) CheckScaled<double>(scale, 10, false);
  for (double scale : {1e-38, 1e-42}) CheckScaled<float>(scale, 11, false);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
