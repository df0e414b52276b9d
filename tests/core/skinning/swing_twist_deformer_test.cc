#include "core/skinning/swing_twist.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/rig/bones.h"
#include "core/rig/joint_frames.h"
#include "core/skinning/lbs.h"
#include "core/skinning/simd8.h"
#include "tests/support/fixtures.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

constexpr double kPi = 3.14159265358979323846;

// Cylinder along x (joint 0 at 0, joint 1 "elbow" at 1) with smooth synthetic deformer weights:
// d_1 = smoothstep over x ∈ [0.7, 1.3], d_0 = 1 − d_1.
struct CylinderSetup {
  Rig rig;
  std::vector<JointFrame> frames;
  Eigen::MatrixXd D;
};

CylinderSetup MakeSetup() {
  CylinderSetup s;
  s.rig = testing::MakeCylinderRig(21, 16);
  auto handles = JointHandles(s.rig.skeleton);
  EXPECT_TRUE(handles.ok());
  s.frames = JointFrames(s.rig.skeleton, *handles);
  const RowMatrixX3d& V = s.rig.mesh.V;
  s.D.resize(V.rows(), 2);
  for (Eigen::Index i = 0; i < V.rows(); ++i) {
    const double t = std::clamp((V(i, 0) - 0.7) / 0.6, 0.0, 1.0);
    const double d1 = t * t * (3 - 2 * t);
    s.D(i, 0) = 1 - d1;
    s.D(i, 1) = d1;
  }
  return s;
}

// Rotation R about the line through c: x ↦ c + R(x − c).
Eigen::Affine3d RotationAbout(const Eigen::Vector3d& c, const Eigen::Matrix3d& R) {
  Eigen::Affine3d A = Eigen::Affine3d::Identity();
  A.linear() = R;
  A.translation() = c - R * c;
  return A;
}

std::vector<Eigen::Affine3d> RandomPose(std::mt19937& gen, bool with_scale) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<Eigen::Affine3d> M;
  for (int j = 0; j < 2; ++j) {
    Eigen::Affine3d A = Eigen::Affine3d::Identity();
    A.translate(Eigen::Vector3d(u(gen), u(gen), u(gen)));
    A.rotate(Eigen::Quaterniond(u(gen), u(gen), u(gen), u(gen)).normalized());
    if (with_scale) A.scale(Eigen::Vector3d(1.0 + 0.5 * u(gen), 1.0 + 0.3 * u(gen), 1.0));
    M.push_back(A);
  }
  return M;
}

double MaxDiff(const RowMatrixX3d& A, const RowMatrixX3d& B) {
  return (A - B).cwiseAbs().maxCoeff();
}

TEST(SwingTwistDeformer, BindPoseIsIdentity) {
  const CylinderSetup s = MakeSetup();
  const Eigen::MatrixXd S = Eigen::MatrixXd::Constant(s.D.rows(), 2, 0.3);
  const Eigen::MatrixXd T = Eigen::MatrixXd::Constant(s.D.rows(), 2, 0.7);
  RowMatrixX3d U;
  SwingTwist(s.rig.mesh.V, s.D, S, T, s.frames, {Eigen::Affine3d::Identity(), Eigen::Affine3d::Identity()},
             &U);
  EXPECT_LT(MaxDiff(U, s.rig.mesh.V), 1e-12);
}

TEST(SwingTwistDeformer, FullSwingAndTwistEqualsLbsWithDeformerWeights) {
  const CylinderSetup s = MakeSetup();
  const Eigen::MatrixXd ones = Eigen::MatrixXd::Ones(s.D.rows(), 2);
  std::mt19937 gen(3);
  for (bool with_scale : {false, true}) {
    for (int trial = 0; trial < 5; ++trial) {
      const std::vector<Eigen::Affine3d> M = RandomPose(gen, with_scale);
      RowMatrixX3d U, L;
      SwingTwist(s.rig.mesh.V, s.D, ones, ones, s.frames, M, &U);
      Lbs(s.rig.mesh.V, s.D, M, &L);
      EXPECT_LT(MaxDiff(U, L), 1e-9) << "scale " << with_scale << " trial " << trial;
    }
  }
}

TEST(SwingTwistDeformer, ZeroSwingAndTwistEqualsParentTransform) {
  const CylinderSetup s = MakeSetup();
  const Eigen::MatrixXd zeros = Eigen::MatrixXd::Zero(s.D.rows(), 2);
  std::mt19937 gen(4);
  for (bool with_scale : {false, true}) {
    for (int trial = 0; trial < 5; ++trial) {
      const std::vector<Eigen::Affine3d> M = RandomPose(gen, with_scale);
      RowMatrixX3d U;
      SwingTwist(s.rig.mesh.V, s.D, zeros, zeros, s.frames, M, &U);
      RowMatrixX3d expected = (M[0] * s.rig.mesh.V.transpose()).transpose();
      EXPECT_LT(MaxDiff(U, expected), 1e-9) << "scale " << with_scale << " trial " << trial;
    }
  }
}

TEST(SwingTwistDeformer, HalfTwistWeightTurnsByHalfTheAngle) {
  const CylinderSetup s = MakeSetup();
  const Eigen::Vector3d c(1, 0, 0);
  const double theta = 2.5;
  std::vector<Eigen::Affine3d> M = {
      Eigen::Affine3d::Identity(),
      RotationAbout(c, Eigen::AngleAxisd(theta, Eigen::Vector3d::UnitX()).toRotationMatrix())};
  const Eigen::Index n = s.D.rows();
  Eigen::MatrixXd D = Eigen::MatrixXd::Zero(n, 2);
  D.col(1).setOnes();
  std::mt19937 gen(5);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  Eigen::MatrixXd S(n, 2);
  for (Eigen::Index i = 0; i < n; ++i) S(i, 0) = u01(gen), S(i, 1) = u01(gen);  // irrelevant
  const Eigen::MatrixXd T = Eigen::MatrixXd::Constant(n, 2, 0.5);
  RowMatrixX3d U;
  SwingTwist(s.rig.mesh.V, D, S, T, s.frames, M, &U);
  const Eigen::Affine3d half =
      RotationAbout(c, Eigen::AngleAxisd(theta / 2, Eigen::Vector3d::UnitX()).toRotationMatrix());
  RowMatrixX3d expected = (half * s.rig.mesh.V.transpose()).transpose();
  EXPECT_LT(MaxDiff(U, expected), 1e-12);
}

TEST(SwingTwistDeformer, HalfSwingWeightBlendsLinearly) {
  const CylinderSetup s = MakeSetup();
  const Eigen::Vector3d c(1, 0, 0);
  const Eigen::Vector3d swing_axis = Eigen::Vector3d(0, 1, 2).normalized();  // ⟂ bone (x)
  std::vector<Eigen::Affine3d> M = {
      Eigen::Affine3d::Identity(),
      RotationAbout(c, Eigen::AngleAxisd(1.1, swing_axis).toRotationMatrix())};
  const Eigen::Index n = s.D.rows();
  Eigen::MatrixXd D = Eigen::MatrixXd::Zero(n, 2);
  D.col(1).setOnes();
  const Eigen::MatrixXd S = Eigen::MatrixXd::Constant(n, 2, 0.5);
  const Eigen::MatrixXd T = Eigen::MatrixXd::Constant(n, 2, 0.2);  // no twist to apply
  RowMatrixX3d U;
  SwingTwist(s.rig.mesh.V, D, S, T, s.frames, M, &U);
  RowMatrixX3d expected =
      0.5 * s.rig.mesh.V + 0.5 * RowMatrixX3d((M[1] * s.rig.mesh.V.transpose()).transpose());
  EXPECT_LT(MaxDiff(U, expected), 1e-12);
}

TEST(SwingTwistDeformer, FloatKernelMatchesDoubleReference) {
  const CylinderSetup s = MakeSetup();
  const Eigen::Index n = s.D.rows();
  std::mt19937 gen(6);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  Eigen::MatrixXd S(n, 2), T(n, 2);
  for (Eigen::Index i = 0; i < n; ++i)
    for (int j = 0; j < 2; ++j) S(i, j) = u01(gen), T(i, j) = u01(gen);
  for (int k : {4, 1, 2}) {
    const SwingTwistWeights W = MakeSwingTwistWeights(s.D, S, T, k);
    const Eigen::MatrixXd Dk = ToDense(W.deformer, 2);
    const std::vector<float> V(s.rig.mesh.V.data(), s.rig.mesh.V.data() + 3 * n);
    for (bool with_scale : {false, true}) {
      for (int trial = 0; trial < 4; ++trial) {
        std::vector<Eigen::Affine3d> M = RandomPose(gen, with_scale);
        if (trial == 0) {  // a twist close to ±π
          M[0] = Eigen::Affine3d::Identity();
          M[1] = RotationAbout(Eigen::Vector3d(1, 0, 0),
                               Eigen::AngleAxisd(3.1, Eigen::Vector3d::UnitX()).toRotationMatrix());
        }
        RowMatrixX3d ref;
        SwingTwist(s.rig.mesh.V, Dk, S, T, s.frames, M, &ref);
        const SwingTwistFrameFloat frame = PrepareSwingTwistFloat(s.frames, M);
        if (trial == 0) {
          EXPECT_FALSE(frame.any_remainder);  // a rotation about the joint
        }
        if (with_scale && trial > 0) {
          EXPECT_TRUE(frame.any_remainder);
        }
        // Also without the packed lanes (the rows gathered per block on the fly).
        SwingTwistWeights unpacked = W;
        unpacked.lanes.clear();
        unpacked.lane_joints.clear();
        unpacked.lane_offsets.clear();
        EXPECT_EQ(W.lane_offsets.size(), static_cast<size_t>(n / 8) + 1);
        EXPECT_EQ(W.lanes.size(), 24 * W.lane_joints.size());
        EXPECT_LE(W.lane_joints.size(), static_cast<size_t>(n / 8) * 2) << "at most the 2 joints per block";
        for (const SwingTwistWeights* Wp : {&W, static_cast<const SwingTwistWeights*>(&unpacked)}) {
          std::vector<float> U(3 * n);
          SwingTwistFloat(V.data(), static_cast<int>(n), *Wp, frame, U.data());
          const double scale = std::max(1.0, ref.cwiseAbs().maxCoeff());
          double worst = 0;
          for (Eigen::Index i = 0; i < n; ++i)
            for (int d = 0; d < 3; ++d) worst = std::max(worst, std::abs(U[3 * i + d] - ref(i, d)));
          EXPECT_LT(worst / scale, 1e-5) << "k " << k << " scale " << with_scale << " trial "
                                         << trial << " packed " << (Wp == &W);
        }
      }
    }
  }
}

// Twist weights beyond [−1, 1] (angles past ±π) take the kernel with the angle reduction;
// weights within it the one without. Both match the double reference.
TEST(SwingTwistDeformer, TwistWeightsPastOneUseTheReducedAngleKernelAndMatchTheReference) {
  const CylinderSetup s = MakeSetup();
  const Eigen::Index n = s.D.rows();
  std::mt19937 gen(9);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  for (double scale : {1.0, 1.7}) {
    Eigen::MatrixXd S(n, 2), T(n, 2);
    for (Eigen::Index i = 0; i < n; ++i)
      for (int j = 0; j < 2; ++j) S(i, j) = u01(gen), T(i, j) = scale * u01(gen);
    const SwingTwistWeights W = MakeSwingTwistWeights(s.D, S, T, 4);
    EXPECT_EQ(W.unit_twist, scale == 1.0);
    const std::vector<float> V(s.rig.mesh.V.data(), s.rig.mesh.V.data() + 3 * n);
    std::vector<Eigen::Affine3d> M(2, Eigen::Affine3d::Identity());
    M[1] = RotationAbout(Eigen::Vector3d(1, 0, 0), Eigen::AngleAxisd(3.0, Eigen::Vector3d::UnitX()).toRotationMatrix());
    RowMatrixX3d ref;
    SwingTwist(s.rig.mesh.V, ToDense(W.deformer, 2), S, T, s.frames, M, &ref);
    std::vector<float> U(3 * n);
    SwingTwistFloat(V.data(), static_cast<int>(n), W, PrepareSwingTwistFloat(s.frames, M), U.data());
    double worst = 0;
    for (Eigen::Index i = 0; i < n; ++i)
      for (int d = 0; d < 3; ++d) worst = std::max(worst, std::abs(U[3 * i + d] - ref(i, d)));
    EXPECT_LT(worst / std::max(1.0, ref.cwiseAbs().maxCoeff()), 1e-5) << "twist scale " << scale;
  }
}

TEST(FastSinCos, MatchesStdSinCos) {
  double worst = 0;
  for (int i = -200000; i <= 200000; ++i) {
    const float x = static_cast<float>(i * 1e-4);  // [−20, 20]
    float s, c;
    FastSinCos(x, &s, &c);
    worst = std::max({worst, std::abs(s - std::sin(static_cast<double>(x))),
                      std::abs(c - std::cos(static_cast<double>(x)))});
  }
  EXPECT_LT(worst, 1e-6);
}

// The polynomials of the kernels (sincos_poly.h) on [−π, π], scalar and on 8 lanes (the lane path
// of the swing/twist and STBS kernels), against the double sin and cos of the same float: worst
// 5.2e-7 to 5.8e-7 (cos near ±π, where 1 − q² rounds near −1), so 8e-7 bounds float rounding
// while a wrong coefficient (an error of 1e-5 or more) fails.
TEST(SinCosPi, MatchesStdSinCosOnMinusPiToPi) {
  constexpr int kSteps = 1 << 20;
  double worst_scalar = 0, worst_lanes = 0;
  for (int i = -kSteps; i <= kSteps; i += 8) {
    float x[8], s[8], c[8];
    for (int l = 0; l < 8; ++l) {
      x[l] = static_cast<float>(std::min(i + l, kSteps) * (M_PI / kSteps));
      SinCosPi(x[l], &s[l], &c[l]);
      worst_scalar = std::max({worst_scalar, std::abs(s[l] - std::sin(static_cast<double>(x[l]))),
                               std::abs(c[l] - std::cos(static_cast<double>(x[l])))});
    }
#ifdef SKINNING_VECTOR_EXT
    simd8::F8 sv, cv;
    simd8::SinCos8Reduced(simd8::Load8(x), &sv, &cv);
    for (int l = 0; l < 8; ++l)
      worst_lanes = std::max({worst_lanes, std::abs(sv[l] - std::sin(static_cast<double>(x[l]))),
                              std::abs(cv[l] - std::cos(static_cast<double>(x[l])))});
#endif
  }
  EXPECT_LT(worst_scalar, 8e-7);
  EXPECT_LT(worst_lanes, 8e-7);
  // Exact where it must be: the rest angle and the half turn.
  float s, c;
  SinCosPi(0.0f, &s, &c);
  EXPECT_EQ(s, 0.0f);
  EXPECT_EQ(c, 1.0f);
  SinCosPi(static_cast<float>(M_PI), &s, &c);
  EXPECT_NEAR(c, -1.0, 3e-7);
  EXPECT_NEAR(s, 0.0, 3e-7);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
