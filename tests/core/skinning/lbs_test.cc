#include "core/skinning/lbs.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/fixtures.h"

#include "core/skinning/weights.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::RandomRig;

Eigen::Affine3d RandomRigid(std::mt19937& gen) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Eigen::Affine3d T = Eigen::Affine3d::Identity();
  T.translate(Eigen::Vector3d(u(gen), u(gen), u(gen)));
  T.rotate(Eigen::Quaterniond(u(gen), u(gen), u(gen), u(gen)).normalized());
  return T;
}

std::vector<Eigen::Affine3d> RandomRigids(int m, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<Eigen::Affine3d> T;
  for (int j = 0; j < m; ++j) T.push_back(RandomRigid(gen));
  return T;
}

std::vector<float> Floats(const RowMatrixX3d& M) {
  return std::vector<float>(M.data(), M.data() + M.size());
}

// The float positions rounded back, as the float path sees them.
RowMatrixX3d RoundToFloat(const RowMatrixX3d& M) { return M.cast<float>().cast<double>(); }

// Σ_c w_c (T_{j_c} v), evaluated point by point with Eigen: the definition of LBS, independent
// of the kernels' blended-matrix formulation.
RowMatrixX3d WeightedSumOfTransformedPoints(const RowMatrixX3d& V, const SparseWeights& W,
                                            const std::vector<Eigen::Affine3d>& T) {
  RowMatrixX3d U = RowMatrixX3d::Zero(V.rows(), 3);
  for (int i = 0; i < V.rows(); ++i) {
    const Eigen::Vector3d v = V.row(i).transpose();
    for (int c = 0; c < W.k(); ++c)
      U.row(i) += double(W.weights(i, c)) * (T[W.joints(i, c)] * v).transpose();
  }
  return U;
}

TEST(LbsTest, IdentityTransformsReproduceInput) {
  // Dyadic weights (multiples of 1/8) sum to exactly one in any order, so Σ w I = I exactly
  // and the blended matrix applied to v gives v bit for bit.
  auto r = RandomRig(200, 6, 4, 1);
  std::mt19937 gen(2);
  for (int i = 0; i < r.W.rows(); ++i) {
    int left = 8;
    for (int c = 0; c < 3; ++c) {
      const int e = static_cast<int>(gen() % (left + 1));
      r.W.weights(i, c) = e / 8.f;
      left -= e;
    }
    r.W.weights(i, 3) = left / 8.f;
  }
  r.V = RoundToFloat(r.V);
  const std::vector<Eigen::Affine3d> T(6, Eigen::Affine3d::Identity());

  RowMatrixX3d U;
  Lbs(r.V, r.W, T, &U);
  EXPECT_EQ(U, r.V);
  Lbs(r.V, ToDense(r.W, 6), T, &U);
  EXPECT_EQ(U, r.V);

  const std::vector<float> Vf = Floats(r.V), Nf = Floats(r.N);
  const std::vector<float> T34 = ToRowMajor34(T);
  std::vector<float> Uf(Vf.size()), NUf(Vf.size());
  for (int k : {4, 3}) {  // the k == 4 kernel and the generic one
    SparseWeights Wk = r.W;
    if (k == 3) {  // fold the fourth slot into the third: still dyadic, still sums to one
      Wk.weights.col(2) += Wk.weights.col(3);
      Wk.joints = Wk.joints.leftCols(3).eval();
      Wk.weights = Wk.weights.leftCols(3).eval();
    }
    LbsFloat(Vf.data(), r.V.rows(), Wk.joints.data(), Wk.weights.data(), k, T34.data(), Uf.data());
    EXPECT_EQ(Uf, Vf) << "k = " << k;
    LbsFloat(Vf.data(), r.V.rows(), Wk.joints.data(), Wk.weights.data(), k, T34.data(), Uf.data(),
             Nf.data(), NUf.data());
    for (size_t c = 0; c < Nf.size(); ++c) EXPECT_NEAR(NUf[c], Nf[c], 1e-6f);
  }
}

TEST(LbsTest, MatchesWeightedSumOfTransformedPoints) {
  const auto r = RandomRig(300, 7, 4, 3);
  const std::vector<Eigen::Affine3d> T = RandomRigids(7, 4);
  RowMatrixX3d U;
  Lbs(r.V, r.W, T, &U);
  EXPECT_LT((U - WeightedSumOfTransformedPoints(r.V, r.W, T)).cwiseAbs().maxCoeff(), 1e-12);
}

TEST(LbsTest, SingleInfluenceMovesRigidly) {
  // Every vertex is bound to one joint with weight 1 (other slots weight 0): it must move
  // exactly as T_j v.
  auto r = RandomRig(100, 5, 4, 5);
  std::vector<Eigen::Affine3d> T = RandomRigids(5, 6);
  T[3].scale(Eigen::Vector3d(0.5, 2.0, 1.5));  // not only rigid: any affine T_j
  for (int i = 0; i < r.W.rows(); ++i) {
    r.W.weights.row(i).setZero();
    r.W.weights(i, i % 4) = 1.f;
    r.W.joints(i, i % 4) = i % 5;
  }
  RowMatrixX3d U;
  Lbs(r.V, r.W, T, &U);
  const std::vector<float> Vf = Floats(r.V), T34 = ToRowMajor34(T);
  std::vector<float> Uf(Vf.size());
  LbsFloat(Vf.data(), r.V.rows(), r.W.joints.data(), r.W.weights.data(), 4, T34.data(), Uf.data());
  for (int i = 0; i < r.V.rows(); ++i) {
    const Eigen::Vector3d expected = T[i % 5] * Eigen::Vector3d(r.V.row(i).transpose());
    EXPECT_LT((U.row(i).transpose() - expected).norm(), 1e-12) << "vertex " << i;
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(Uf[3 * i + c], expected(c), 1e-5) << "vertex " << i;
  }
}

TEST(LbsTest, SparseAndDenseAgree) {
  const auto r = RandomRig(400, 9, 4, 7);
  const std::vector<Eigen::Affine3d> T = RandomRigids(9, 8);
  RowMatrixX3d Us, Ud;
  Lbs(r.V, r.W, T, &Us);
  Lbs(r.V, ToDense(r.W, 9), T, &Ud);
  EXPECT_LT((Us - Ud).cwiseAbs().maxCoeff(), 1e-12);
}

TEST(LbsTest, FloatPathMatchesDoublePath) {
  for (int k : {4, 8, 3, 6}) {  // the 4- and 8-influence vector kernels and the generic one
    const auto r = RandomRig(1000, 8, k, 9 + k);
    std::vector<Eigen::Affine3d> T = RandomRigids(8, 10 + k);
    T[2].scale(Eigen::Vector3d(1.2, 0.9, 1.1));  // normals then depend on the inverse transpose
    // The double reference on the float-rounded inputs, so only the kernel's arithmetic differs.
    const RowMatrixX3d V = RoundToFloat(r.V);
    RowMatrixX3d U, NU;
    Lbs(V, r.W, T, &U);
    LbsNormals(RoundToFloat(r.N), r.W, T, &NU);

    const std::vector<float> Vf = Floats(V), Nf = Floats(r.N), T34 = ToRowMajor34(T);
    std::vector<float> Uf(Vf.size()), NUf(Vf.size());
    LbsFloat(Vf.data(), V.rows(), r.W.joints.data(), r.W.weights.data(), k, T34.data(), Uf.data(),
             Nf.data(), NUf.data());
    const double scale = U.cwiseAbs().maxCoeff();
    double pos_err = 0, nrm_err = 0;
    for (int i = 0; i < V.rows(); ++i) {
      for (int c = 0; c < 3; ++c) {
        pos_err = std::max(pos_err, std::abs(Uf[3 * i + c] - U(i, c)) / scale);
        nrm_err = std::max(nrm_err, std::abs(NUf[3 * i + c] - NU(i, c)));
      }
    }
    EXPECT_LT(pos_err, 1e-5) << "k = " << k;
    EXPECT_LT(nrm_err, 1e-5) << "k = " << k;
    // Positions only must give the same positions.
    std::vector<float> Uf2(Vf.size());
    LbsFloat(Vf.data(), V.rows(), r.W.joints.data(), r.W.weights.data(), k, T34.data(), Uf2.data());
    EXPECT_EQ(Uf2, Uf) << "k = " << k;
  }
}

TEST(LbsTest, NormalsStayUnitAndMatchRigidRotation) {
  const auto r = RandomRig(500, 6, 4, 11);
  std::mt19937 gen(12);
  // One rigid motion shared by every joint: normals are rotated by R.
  const Eigen::Affine3d G = RandomRigid(gen);
  const std::vector<Eigen::Affine3d> same(6, G);
  RowMatrixX3d NU;
  LbsNormals(r.N, r.W, same, &NU);
  const RowMatrixX3d expected = r.N * G.linear().transpose();
  EXPECT_LT((NU - expected).cwiseAbs().maxCoeff(), 1e-12);

  const std::vector<float> Vf = Floats(r.V), Nf = Floats(r.N);
  std::vector<float> Uf(Vf.size()), NUf(Vf.size());
  const std::vector<float> T34 = ToRowMajor34(same);
  LbsFloat(Vf.data(), r.V.rows(), r.W.joints.data(), r.W.weights.data(), 4, T34.data(), Uf.data(),
           Nf.data(), NUf.data());
  for (int i = 0; i < r.N.rows(); ++i)
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(NUf[3 * i + c], expected(i, c), 1e-5);

  // Different rigid motions per joint: the blended matrix is not a rotation, but the output
  // normals are still unit length.
  const std::vector<Eigen::Affine3d> T = RandomRigids(6, 13);
  LbsNormals(r.N, r.W, T, &NU);
  EXPECT_LT((NU.rowwise().norm().array() - 1.0).abs().maxCoeff(), 1e-12);
  const std::vector<float> T34b = ToRowMajor34(T);
  LbsFloat(Vf.data(), r.V.rows(), r.W.joints.data(), r.W.weights.data(), 4, T34b.data(), Uf.data(),
           Nf.data(), NUf.data());
  for (int i = 0; i < r.N.rows(); ++i) {
    const double len = Eigen::Vector3d(NUf[3 * i], NUf[3 * i + 1], NUf[3 * i + 2]).norm();
    EXPECT_NEAR(len, 1.0, 1e-5) << "vertex " << i;
  }
}

TEST(LbsTest, NormalsUseInverseTranspose) {
  // One joint, weight 1, with non-uniform scale and shear: n' ∝ A⁻ᵀ n (Eigen's inverse, an
  // independent computation of what the cofactor form must give).
  auto r = RandomRig(50, 1, 1, 14);
  Eigen::Affine3d A = Eigen::Affine3d::Identity();
  A.linear() << 2.0, 0.3, 0.0, 0.1, 0.5, -0.2, 0.0, 0.4, 1.5;
  A.translation() << 1, 2, 3;
  const std::vector<Eigen::Affine3d> T{A};
  RowMatrixX3d NU;
  LbsNormals(r.N, r.W, T, &NU);
  const Eigen::Matrix3d inv_t = A.linear().inverse().transpose();
  const std::vector<float> Vf = Floats(r.V), Nf = Floats(r.N), T34 = ToRowMajor34(T);
  std::vector<float> Uf(Vf.size()), NUf(Vf.size());
  LbsFloat(Vf.data(), r.V.rows(), r.W.joints.data(), r.W.weights.data(), 1, T34.data(), Uf.data(),
           Nf.data(), NUf.data());
  for (int i = 0; i < r.N.rows(); ++i) {
    const Eigen::Vector3d expected = (inv_t * r.N.row(i).transpose()).normalized();
    EXPECT_LT((NU.row(i).transpose() - expected).norm(), 1e-12);
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(NUf[3 * i + c], expected(c), 1e-5);
  }
}

TEST(LbsTest, ToRowMajor34IsRowMajorTopThreeRows) {
  const std::vector<Eigen::Affine3d> T = RandomRigids(3, 15);
  const std::vector<float> T34 = ToRowMajor34(T);
  ASSERT_EQ(T34.size(), 36u);
  for (int j = 0; j < 3; ++j)
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c)
        EXPECT_EQ(T34[12 * j + 4 * r + c], static_cast<float>(T[j].matrix()(r, c)));
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
