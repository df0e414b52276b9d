// Skinning transforms built from float32 rig data are rigid only up to float rounding
// (core/rig/transform.h, kFloatRigidTolerance). The kernels count them as rigid, so that real
// characters take the rigid paths (DQS without the stretch phase, STBS over DQS on its 8-lane
// kernel, swing/twist without the affine remainder), and they still keep a real stretch or a
// real remainder exactly.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/io/gltf.h"
#include "core/rig/bones.h"
#include "core/rig/joint_frames.h"
#include "core/rig/pose.h"
#include "core/rig/transform.h"
#include "core/skinning/dqs.h"
#include "core/skinning/lbs.h"
#include "core/skinning/stbs.h"
#include "core/skinning/swing_twist.h"
#include "core/skinning/weights.h"
#include "tests/support/data.h"
#include "tests/support/fixtures.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

// Every entry of the transform's 3×4 rounded to float, as a float32 file or request stores it.
Eigen::Affine3d RoundedToFloat(const Eigen::Affine3d& A) {
  Eigen::Affine3d F = A;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) F.matrix()(r, c) = static_cast<double>(static_cast<float>(A.matrix()(r, c)));
  return F;
}

double OrthoError(const Eigen::Matrix3d& A) {
  return (A.transpose() * A - Eigen::Matrix3d::Identity()).cwiseAbs().maxCoeff();
}

std::vector<Eigen::Affine3d> RandomRoundedRigids(int m, unsigned seed) {
  std::vector<Eigen::Affine3d> T = testing::RandomRigids(m, seed);
  for (Eigen::Affine3d& A : T) A = RoundedToFloat(A);
  return T;
}

TEST(FloatRigidTest, RotationWithinRoundingIsTheNearestRotationOfARoundedOne) {
  const std::vector<Eigen::Affine3d> T = RandomRoundedRigids(20, 1);
  double largest = 0;
  for (const Eigen::Affine3d& A : T) {
    const Eigen::Matrix3d L = A.linear();
    largest = std::max(largest, OrthoError(L));
    const std::optional<Eigen::Matrix3d> rotation = RotationWithinRounding(L);
    ASSERT_TRUE(rotation.has_value());
    const Eigen::Matrix3d R = *rotation;
    EXPECT_LT(OrthoError(R), 1e-14);
    EXPECT_GT(R.determinant(), 0);
    // The polar factor: RᵀL symmetric (the nearest rotation in Frobenius norm), and R within
    // the rounding of L.
    const Eigen::Matrix3d S = R.transpose() * L;
    EXPECT_LT((S - S.transpose()).cwiseAbs().maxCoeff(), 1e-14);
    EXPECT_LT((R - L).cwiseAbs().maxCoeff(), 1e-6);
  }
  // Float rounding leaves more than the 1e-9 that exactly computed transforms show.
  EXPECT_GT(largest, 1e-9);
  EXPECT_LT(largest, kFloatRigidTolerance);
  // A real scale, a mirror and a shear are not rotations.
  EXPECT_FALSE(RotationWithinRounding(Eigen::Matrix3d(Eigen::Vector3d(1.0001, 1, 1).asDiagonal())).has_value());
  EXPECT_FALSE(RotationWithinRounding(Eigen::Matrix3d(Eigen::Vector3d(-1, 1, 1).asDiagonal())).has_value());
  Eigen::Matrix3d shear = Eigen::Matrix3d::Identity();
  shear(0, 1) = 1e-4;
  EXPECT_FALSE(RotationWithinRounding(shear).has_value());
}

TEST(FloatRigidTest, DqsTakesRoundedTransformsAsRigidAndKeepsARealStretch) {
  const auto r = testing::RandomRig(200, 6, 4, 7);
  std::vector<Eigen::Affine3d> T = RandomRoundedRigids(6, 2);
  const DqsTransforms D = PrepareDqs(T);
  EXPECT_FALSE(D.any_stretch);
  for (int j = 0; j < 6; ++j) EXPECT_LT((D.real[j].toRotationMatrix() - T[j].linear()).cwiseAbs().maxCoeff(), 1e-6);
  // Every vertex bound to joint 2 alone lands at T₂ v, within the dropped rounding.
  auto one = r;
  for (int i = 0; i < one.W.rows(); ++i) {
    one.W.weights.row(i) << 0.f, 1.f, 0.f, 0.f;
    one.W.joints.row(i) << 0, 2, 1, 3;
  }
  RowMatrixX3d U;
  Dqs(one.V, one.W, T, &U);
  std::vector<float> Vf(one.V.data(), one.V.data() + one.V.size()), Uf(one.V.size());
  DqsFloat(Vf.data(), static_cast<int>(one.V.rows()), one.W.joints.data(), one.W.weights.data(), 4,
           PrepareDqsFloat(T), Uf.data());
  for (int i = 0; i < one.V.rows(); ++i) {
    const Eigen::Vector3d expected = T[2] * Eigen::Vector3d(one.V.row(i).transpose());
    EXPECT_LT((U.row(i).transpose() - expected).norm(), 1e-6) << "vertex " << i;
    EXPECT_LT((Eigen::Vector3d(Uf[3 * i], Uf[3 * i + 1], Uf[3 * i + 2]) - expected).norm(), 1e-5) << "vertex " << i;
  }
  // A stretch of 1e-4 is kept, exactly.
  T[2].linear() *= 1.0001;
  const DqsTransforms D2 = PrepareDqs(T);
  EXPECT_TRUE(D2.any_stretch);
  Dqs(one.V, one.W, T, &U);
  for (int i = 0; i < one.V.rows(); ++i) {
    const Eigen::Vector3d expected = T[2] * Eigen::Vector3d(one.V.row(i).transpose());
    EXPECT_LT((U.row(i).transpose() - expected).norm(), 1e-12) << "vertex " << i;
  }
}

TEST(FloatRigidTest, SwingTwistDropsARoundedRemainderAndKeepsARealOne) {
  const Rig rig = testing::MakeCylinderRig(21, 16);
  const std::vector<JointFrame> frames = JointFrames(rig.skeleton, *JointHandles(rig.skeleton));
  ASSERT_TRUE(frames[1].deformer);
  const Eigen::Index n = rig.mesh.V.rows();
  Eigen::MatrixXd D(n, 2), S(n, 2), Tw(n, 2);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double t = std::clamp((rig.mesh.V(i, 0) - 0.7) / 0.6, 0.0, 1.0);
    D(i, 1) = t * t * (3 - 2 * t);
    D(i, 0) = 1 - D(i, 1);
    S.row(i).setConstant(0.3 + 0.6 * t);
    Tw.row(i).setConstant(0.8 * t);
  }
  // The parent anywhere; the child turned 1.2 rad about its own joint: a rotation about the
  // joint, so no remainder, until both are rounded to float.
  Eigen::Affine3d parent = Eigen::Affine3d::Identity();
  parent.translate(Eigen::Vector3d(0.3, -1.7, 2.9));
  parent.rotate(Eigen::AngleAxisd(0.7, Eigen::Vector3d(1, 2, 3).normalized()));
  const Eigen::Vector3d c = frames[1].center;
  Eigen::Affine3d about = Eigen::Affine3d::Identity();
  about.linear() = Eigen::AngleAxisd(1.2, Eigen::Vector3d(0.2, 1, 0.4).normalized()).toRotationMatrix();
  about.translation() = c - about.linear() * c;
  const std::vector<Eigen::Affine3d> exact{parent, parent * about};
  const std::vector<Eigen::Affine3d> rounded{RoundedToFloat(exact[0]), RoundedToFloat(exact[1])};
  const Eigen::Affine3d delta = rounded[0].inverse(Eigen::Affine) * rounded[1];
  ASSERT_GT((delta.translation() - (c - delta.linear() * c)).cwiseAbs().maxCoeff(), 1e-12)
      << "rounding leaves a remainder the old 1e-12 test took for a real one";

  RowMatrixX3d ref;
  SwingTwist(rig.mesh.V, D, S, Tw, frames, exact, &ref);
  const SwingTwistWeights W = MakeSwingTwistWeights(D, S, Tw, 2);
  const std::vector<float> V(rig.mesh.V.data(), rig.mesh.V.data() + 3 * n);
  const SwingTwistFrameFloat frame = PrepareSwingTwistFloat(frames, rounded);
  EXPECT_FALSE(frame.any_remainder);
  std::vector<float> U(3 * n);
  SwingTwistFloat(V.data(), static_cast<int>(n), W, frame, U.data());
  double worst = 0;
  for (Eigen::Index i = 0; i < n; ++i)
    for (int d = 0; d < 3; ++d) worst = std::max(worst, std::abs(U[3 * i + d] - ref(i, d)));
  EXPECT_LT(worst, 1e-5);

  // The child moved off its joint by 1e-3 (a translated joint): a remainder, kept.
  std::vector<Eigen::Affine3d> moved = exact;
  moved[1].pretranslate(parent.linear() * Eigen::Vector3d(1e-3, 0, 0));
  EXPECT_TRUE(PrepareSwingTwistFloat(frames, moved).any_remainder);
  SwingTwist(rig.mesh.V, D, S, Tw, frames, moved, &ref);
  SwingTwistFloat(V.data(), static_cast<int>(n), W, PrepareSwingTwistFloat(frames, moved), U.data());
  worst = 0;
  for (Eigen::Index i = 0; i < n; ++i)
    for (int d = 0; d < 3; ++d) worst = std::max(worst, std::abs(U[3 * i + d] - ref(i, d)));
  EXPECT_LT(worst, 1e-5);
}

// CesiumMan's own skeleton and inverse bind matrices (float32 in the file), posed by forward
// kinematics: its skinning transforms are rigid only to float rounding, and every kernel takes
// them as rigid. Vertices bound to one joint land where that joint's transform puts them.
TEST(FloatRigidTest, SampleCharacterTakesTheRigidPaths) {
  const std::string path = testing::DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<GltfCharacter> g = ReadGltf(path);
  ASSERT_TRUE(g.ok()) << g.status();
  const Skeleton& sk = g->skeleton;
  std::mt19937 gen(5);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Pose pose = RestPose(sk);
  for (size_t j = 0; j < sk.joints.size(); ++j)
    pose.local[j].rotation = Eigen::AngleAxisd(0.8 * u(gen), Eigen::Vector3d(u(gen), u(gen), u(gen)).normalized());
  const std::vector<Eigen::Affine3d> M = *SkinningTransforms(sk, *TopologicalOrder(sk), pose);
  double largest = 0;
  for (const Eigen::Affine3d& A : M) largest = std::max(largest, OrthoError(A.linear()));
  EXPECT_GT(largest, 1e-9) << "the file's float rounding";
  EXPECT_FALSE(PrepareDqs(M).any_stretch);
  const std::vector<JointHandle> handles = *JointHandles(sk);
  EXPECT_FALSE(PrepareSwingTwistFloat(JointFrames(sk, handles), M).any_remainder);
  BoneStretchTwist st;
  for (size_t j = 0; j < sk.joints.size(); ++j) {
    st.stretch.push_back(1.0);
    st.twist_a.push_back(0.3 * u(gen));
    st.twist_b.push_back(0.6 * u(gen));
  }
  EXPECT_FALSE(PrepareStbsFloat(StbsBones(handles), M, st).any_stretch);

  // DQS (float, the file's weights and order) against M v at the vertices one joint moves.
  const SparseWeights& W = g->weights;
  const int n = W.rows();
  const RowMatrixX3d& V = g->mesh.V;
  const std::vector<float> Vf(V.data(), V.data() + V.size());
  std::vector<float> U(Vf.size());
  DqsFloat(Vf.data(), n, W.joints.data(), W.weights.data(), W.k(), PrepareDqsFloat(M), U.data());
  const double diagonal = (V.colwise().maxCoeff() - V.colwise().minCoeff()).norm();
  int single = 0;
  double worst = 0;
  for (int i = 0; i < n; ++i) {
    int joint = -1;
    for (int c = 0; c < W.k(); ++c)
      if (W.weights(i, c) == 1.f) joint = W.joints(i, c);
    if (joint < 0) continue;
    ++single;
    const Eigen::Vector3d expected = M[joint] * Eigen::Vector3d(V.row(i).transpose());
    worst = std::max(worst, (Eigen::Vector3d(U[3 * i], U[3 * i + 1], U[3 * i + 2]) - expected).norm());
  }
  EXPECT_GT(single, n / 10);
  EXPECT_LT(worst, 1e-6 * diagonal) << single << " vertices bound to one joint";
}


// Rig data read from a file is normalized once and stored as float32; an export of the rig read
// again must give the same bits (its content address). Normalizing the stored values again
// moved some of them by an ulp: the test counts how often the plain rule would have, so that it
// can fail.
TEST(FloatRigidTest, NormalizingWeightsAndRestRotationsTwiceGivesTheBitsOfOnce) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> weight(0.0f, 1.0f);
  std::uniform_real_distribution<double> scale(0.5, 2.0), component(-1.0, 1.0);
  for (int k : {1, 4, 8}) {
    SparseWeights W;
    W.joints = RowMatrixXi::Zero(2000, k);
    W.weights.resize(2000, k);
    for (int i = 0; i < W.rows(); ++i)
      for (int c = 0; c < k; ++c) W.weights(i, c) = weight(rng) + 1e-3f;
    NormalizeRows(&W);
    const RowMatrixXf once = W.weights;
    int moved_by_the_plain_rule = 0;
    for (int i = 0; i < W.rows(); ++i) {
      const double sum = once.row(i).cast<double>().sum();
      EXPECT_LE(std::abs(sum - 1.0), k * std::ldexp(1.0, -25)) << "row " << i << " k " << k;
      const RowMatrixXf again = (once.row(i).cast<double>() / sum).cast<float>();
      moved_by_the_plain_rule += again != once.row(i);
    }
    NormalizeRows(&W);
    EXPECT_TRUE(W.weights == once) << "k " << k;
    if (k > 1) {
      EXPECT_GT(moved_by_the_plain_rule, 0) << "k " << k;
    }
  }
  int moved_by_the_plain_rule = 0;
  for (int i = 0; i < 2000; ++i) {
    const Eigen::Quaterniond q =
        Eigen::Quaterniond(Eigen::Vector4d(component(rng), component(rng), component(rng), component(rng)).normalized() *
                           (i % 2 ? scale(rng) : 1.0));
    const Eigen::Vector4f stored = UnitWithinFloatRounding(q).coeffs().cast<float>();  // as a rig keeps it
    const Eigen::Quaterniond read(stored.cast<double>());
    EXPECT_TRUE(UnitWithinFloatRounding(read).coeffs().cast<float>() == stored) << "quaternion " << i;
    moved_by_the_plain_rule += read.normalized().coeffs().cast<float>() != stored;
  }
  EXPECT_GT(moved_by_the_plain_rule, 0);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
