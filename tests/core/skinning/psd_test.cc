// Pose space deformation (core/skinning/psd.h) on the cylinder arm bent at the elbow, against the
// synthetic elastic-like truth of tests/support/psd_fixtures.h.
#include "core/skinning/psd.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/skinning/dqs.h"
#include "core/skinning/lbs.h"
#include "server/convert/rig.h"
#include "tests/support/fixtures.h"
#include "tests/support/psd_fixtures.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::testing::HasSubstr;
using testing::ElbowExamples;
using testing::ElbowPose;
using testing::ElbowTruth;
using testing::MakePsdArm;
using testing::RmsDistance;

constexpr double kDeg = M_PI / 180;

PsdOptions Options(PsdBase base, bool support) {
  PsdOptions o;
  o.base = base;
  o.support_joints = support;
  o.voxel.resolution = 32;  // small grid: the test arm is 2 × 0.5 × 0.5
  return o;
}

// Plain skinning of the rig at `pose` with the model's base method.
RowMatrixX3d Skin(const Rig& rig, const Pose& pose, PsdBase base) {
  auto order = TopologicalOrder(rig.skeleton);
  auto T = SkinningTransforms(rig.skeleton, *order, pose);
  RowMatrixX3d U;
  if (base == PsdBase::kLbs)
    Lbs(rig.mesh.V, *rig.sparse_weights, *T, &U);
  else
    Dqs(rig.mesh.V, *rig.sparse_weights, *T, &U);
  return U;
}

double MaxRowDistance(const RowMatrixX3d& A, const RowMatrixX3d& B) {
  return (A - B).rowwise().norm().maxCoeff();
}

class PsdVariantTest : public ::testing::TestWithParam<std::tuple<PsdBase, bool>> {};

TEST_P(PsdVariantTest, ReproducesEveryExampleExactly) {
  const auto [base, support] = GetParam();
  const Rig rig = MakePsdArm(31, 16);
  const auto examples = ElbowExamples(rig, {0, 45, 90, 135});
  PsdReport report;
  auto model = PsdModel::Build(rig.mesh, rig.skeleton, *rig.sparse_weights, examples,
                               Options(base, support), &report);
  ASSERT_TRUE(model.ok()) << model.status();
  const double diag = BoundingBoxDiagonal(rig.mesh.V);
  for (const PsdExample& ex : examples) {
    RowMatrixX3d U;
    ASSERT_TRUE((*model)->Deform(ex.pose, &U).ok());
    EXPECT_LE(MaxRowDistance(U, ex.V), 1e-6 * diag) << ex.name;
    // The float path agrees with the double one to float precision.
    std::vector<float> Uf(3 * U.rows());
    ASSERT_TRUE((*model)->DeformFloat(ex.pose, Uf.data()).ok());
    const RowMatrixX3d Ud =
        Eigen::Map<const RowMatrixX3f>(Uf.data(), U.rows(), 3).cast<double>();
    EXPECT_LE(MaxRowDistance(Ud, ex.V), 1e-5 * diag) << ex.name;
  }
  EXPECT_LE(report.max_reproduction_error, 1e-6 * diag);
  EXPECT_EQ(report.examples, 4);
  EXPECT_GE(report.regions, 1);
  EXPECT_EQ(report.support_slide.size(), support ? 4u : 0u);
  // The examples are not in the span of the base skinning: the test is not vacuous.
  EXPECT_GT(MaxRowDistance(Skin(rig, examples[2].pose, base), examples[2].V), 1e-3 * diag);
}

TEST_P(PsdVariantTest, RestPoseIsPlainSkinning) {
  const auto [base, support] = GetParam();
  const Rig rig = MakePsdArm(31, 16);
  // No example at the rest pose: the implicit rest example carries zero displacement.
  auto model = PsdModel::Build(rig.mesh, rig.skeleton, *rig.sparse_weights,
                               ElbowExamples(rig, {45, 90, 135}), Options(base, support));
  ASSERT_TRUE(model.ok()) << model.status();
  for (const Pose& pose : {RestPose(rig.skeleton), Pose{}}) {
    RowMatrixX3d U;
    ASSERT_TRUE((*model)->Deform(pose, &U).ok());
    // Exactly plain skinning without support joints; with them the identity support transforms
    // are blended in, which only moves the rounding of the float weights' row sums (~6e-8).
    EXPECT_LE(MaxRowDistance(U, Skin(rig, pose, base)), support ? 2e-7 : 1e-12);
    EXPECT_LE(MaxRowDistance(U, rig.mesh.V), 2e-7);
  }
}

TEST_P(PsdVariantTest, InterpolationIsSmoothInTheAngle) {
  const auto [base, support] = GetParam();
  const Rig rig = MakePsdArm(31, 16);
  auto model = PsdModel::Build(rig.mesh, rig.skeleton, *rig.sparse_weights,
                               ElbowExamples(rig, {0, 45, 90, 135}), Options(base, support));
  ASSERT_TRUE(model.ok()) << model.status();
  auto at = [&](double deg) {
    RowMatrixX3d U;
    EXPECT_TRUE((*model)->Deform(ElbowPose(rig.skeleton, deg * kDeg), &U).ok());
    return U;
  };
  // Continuity: halving the step halves the change (no jump), and the second difference is small
  // against the first (no kink), all along the sweep between and across the examples.
  const double h = 1.0;
  for (double deg = 5; deg <= 130; deg += 7.5) {
    const RowMatrixX3d U0 = at(deg), Up = at(deg + h), Um = at(deg - h), Uq = at(deg + h / 2);
    const double d1 = MaxRowDistance(Up, U0), d_half = MaxRowDistance(Uq, U0);
    const double d2 = (Up - 2 * U0 + Um).rowwise().norm().maxCoeff();
    EXPECT_GT(d1, 0) << deg;
    EXPECT_NEAR(d1 / d_half, 2.0, 0.2) << "at " << deg << " deg";
    EXPECT_LE(d2, 0.1 * d1) << "at " << deg << " deg";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Variants, PsdVariantTest,
    ::testing::Combine(::testing::Values(PsdBase::kLbs, PsdBase::kDqs), ::testing::Bool()),
    [](const auto& info) {
      return std::string(std::get<0>(info.param) == PsdBase::kLbs ? "Lbs" : "Dqs") +
             (std::get<1>(info.param) ? "Support" : "Plain");
    });

// RMS distance to the truth (fraction of the diagonal) over held-out poses.
struct HeldOut {
  double base = 0, psd = 0, support = 0;
};
HeldOut HeldOutErrors(PsdBase base, std::vector<double>* per_pose = nullptr) {
  const Rig rig = MakePsdArm(31, 16);
  const auto examples = ElbowExamples(rig, {0, 45, 90, 135});
  auto plain = PsdModel::Build(rig.mesh, rig.skeleton, *rig.sparse_weights, examples,
                               Options(base, false));
  auto support = PsdModel::Build(rig.mesh, rig.skeleton, *rig.sparse_weights, examples,
                                 Options(base, true));
  EXPECT_TRUE(plain.ok() && support.ok());
  const double diag = BoundingBoxDiagonal(rig.mesh.V);
  HeldOut e;
  const std::vector<std::pair<double, double>> poses = {{30, 0}, {60, 5}, {110, -5}, {120, 10}};
  for (const auto& [bend, twist] : poses) {
    const Pose pose = ElbowPose(rig.skeleton, bend * kDeg, twist * kDeg);
    const RowMatrixX3d truth = ElbowTruth(rig.mesh.V, bend * kDeg, twist * kDeg);
    RowMatrixX3d Up, Us;
    EXPECT_TRUE((*plain)->Deform(pose, &Up).ok());
    EXPECT_TRUE((*support)->Deform(pose, &Us).ok());
    const double eb = RmsDistance(Skin(rig, pose, base), truth) / diag;
    const double ep = RmsDistance(Up, truth) / diag, es = RmsDistance(Us, truth) / diag;
    if (per_pose) per_pose->insert(per_pose->end(), {eb, ep, es});
    e.base += eb / poses.size();
    e.psd += ep / poses.size();
    e.support += es / poses.size();
  }
  return e;
}

TEST(PsdQualityTest, SupportJointsBeatPlainPsdWhichBeatsLbsAtHeldOutPoses) {
  std::vector<double> per_pose;
  const HeldOut e = HeldOutErrors(PsdBase::kLbs, &per_pose);
  for (size_t p = 0; p < per_pose.size(); p += 3) {
    EXPECT_LT(per_pose[p + 1], per_pose[p]) << "held-out pose " << p / 3;
    EXPECT_LT(per_pose[p + 2], per_pose[p + 1]) << "held-out pose " << p / 3;
  }
  for (size_t p = 0; p < per_pose.size(); p += 3)
    std::printf("  pose %zu: LBS %.3f%%  PSD %.3f%%  PSD+support %.3f%%\n", p / 3, 100 * per_pose[p],
                100 * per_pose[p + 1], 100 * per_pose[p + 2]);
  RecordProperty("lbs_rms_pct", std::to_string(100 * e.base));
  RecordProperty("psd_rms_pct", std::to_string(100 * e.psd));
  RecordProperty("support_rms_pct", std::to_string(100 * e.support));
  std::printf("held-out RMS (%% of diagonal): LBS %.3f  PSD %.3f  PSD+support %.3f\n",
              100 * e.base, 100 * e.psd, 100 * e.support);
}

TEST(PsdQualityTest, PlainPsdBeatsDqsAtHeldOutPoses) {
  std::vector<double> per_pose;
  const HeldOut e = HeldOutErrors(PsdBase::kDqs, &per_pose);
  for (size_t p = 0; p < per_pose.size(); p += 3)
    EXPECT_LT(per_pose[p + 1], per_pose[p]) << "held-out pose " << p / 3;
  for (size_t p = 0; p < per_pose.size(); p += 3)
    std::printf("  pose %zu: DQS %.3f%%  PSD %.3f%%  PSD+support %.3f%%\n", p / 3, 100 * per_pose[p],
                100 * per_pose[p + 1], 100 * per_pose[p + 2]);
  std::printf("held-out RMS (%% of diagonal): DQS %.3f  PSD(DQS) %.3f  PSD+support(DQS) %.3f\n",
              100 * e.base, 100 * e.psd, 100 * e.support);
}

// The arm's vertices shuffled and its weights padded to 4 slots in a shuffled slot order, so
// neighbouring rows use different joints, as in a file: PSD over DQS then skins through a lane
// order (PrepareDqsLaneOrder), whose float path must still reproduce the examples and agree with
// the double path between them.
TEST(PsdTest, DqsBaseThroughALaneOrderMatchesTheDoublePath) {
  Rig rig = MakePsdArm(31, 16);
  const int n = static_cast<int>(rig.mesh.V.rows());
  std::mt19937 gen(3);
  std::vector<int> perm(n), where(n);
  for (int i = 0; i < n; ++i) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), gen);  // row r is the old vertex perm[r]
  for (int r = 0; r < n; ++r) where[perm[r]] = r;
  const RowMatrixX3d V = rig.mesh.V, N = rig.mesh.N;
  const SparseWeights W = *rig.sparse_weights;
  SparseWeights shuffled;
  shuffled.joints = RowMatrixXi::Zero(n, 4);
  shuffled.weights = RowMatrixXf::Zero(n, 4);
  for (int r = 0; r < n; ++r) {
    rig.mesh.V.row(r) = V.row(perm[r]);
    if (N.rows() == n) rig.mesh.N.row(r) = N.row(perm[r]);
    std::vector<int> slots = {0, 1, 2, 3};
    std::shuffle(slots.begin(), slots.end(), gen);
    for (int c = 0; c < W.k(); ++c) {
      shuffled.joints(r, slots[c]) = W.joints(perm[r], c);
      shuffled.weights(r, slots[c]) = W.weights(perm[r], c);
    }
  }
  for (int f = 0; f < rig.mesh.F.rows(); ++f)
    for (int c = 0; c < 3; ++c) rig.mesh.F(f, c) = where[rig.mesh.F(f, c)];
  rig.sparse_weights = shuffled;
  ASSERT_LE(W.k(), 4);
  ASSERT_FALSE(PrepareDqsLaneOrder(shuffled).empty()) << "the test needs rows in an order that the lanes reorder";

  const auto examples = ElbowExamples(rig, {0, 45, 90, 135});
  auto model = PsdModel::Build(rig.mesh, rig.skeleton, shuffled, examples, Options(PsdBase::kDqs, false));
  ASSERT_TRUE(model.ok()) << model.status();
  const double diag = BoundingBoxDiagonal(rig.mesh.V);
  std::vector<float> Uf(3 * n);
  for (const PsdExample& ex : examples) {
    ASSERT_TRUE((*model)->DeformFloat(ex.pose, Uf.data()).ok());
    EXPECT_LE(MaxRowDistance(Eigen::Map<const RowMatrixX3f>(Uf.data(), n, 3).cast<double>(), ex.V), 1e-5 * diag)
        << ex.name;
  }
  for (double deg : {20.0, 70.0, 110.0}) {
    const Pose pose = ElbowPose(rig.skeleton, deg * kDeg, 0.3);
    RowMatrixX3d U;
    ASSERT_TRUE((*model)->Deform(pose, &U).ok());
    ASSERT_TRUE((*model)->DeformFloat(pose, Uf.data()).ok());
    EXPECT_LE(MaxRowDistance(Eigen::Map<const RowMatrixX3f>(Uf.data(), n, 3).cast<double>(), U), 1e-5 * diag)
        << deg << " deg";
  }
}

TEST(PsdTest, SupportWeightsPeakAtTheBentJointAndVanishFarAway) {
  const Rig rig = MakePsdArm(31, 16);
  PsdReport report;
  auto model = PsdModel::Build(rig.mesh, rig.skeleton, *rig.sparse_weights,
                               ElbowExamples(rig, {45, 90, 135}), Options(PsdBase::kLbs, true),
                               &report);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ((*model)->num_support_joints(), 1);
  EXPECT_EQ((*model)->support_joint_bent_joints(), std::vector<int>{1});
  const Eigen::MatrixXd& WS = (*model)->support_weights();
  double near = 0, far = 0;
  for (int i = 0; i < rig.mesh.V.rows(); ++i) {
    EXPECT_GE(WS(i, 0), 0.0);
    EXPECT_LE(WS(i, 0), 1.0);
    const double dx = std::abs(rig.mesh.V(i, 0) - 1.0);
    if (dx < 0.15) near = std::max(near, WS(i, 0));
    if (dx > 0.6) far = std::max(far, WS(i, 0));
  }
  EXPECT_GT(near, 0.5);
  EXPECT_LT(far, 1e-6);  // the truth equals skinning there: the error factor is zero
  // Slides: one per example, in [0, 1], and the interpolated slide reproduces them.
  ASSERT_EQ(report.support_slide.size(), 3u);
  const std::vector<double> bends = {45, 90, 135};
  for (size_t k = 0; k < 3; ++k) {
    ASSERT_EQ(report.support_slide[k].size(), 1u);
    EXPECT_GE(report.support_slide[k][0], 0.0);
    EXPECT_LE(report.support_slide[k][0], 1.0);
    auto x = (*model)->SupportSlides(ElbowPose(rig.skeleton, bends[k] * kDeg));
    ASSERT_TRUE(x.ok());
    EXPECT_NEAR((*x)[0], report.support_slide[k][0], 1e-9);
  }
}

TEST(PsdTest, SupportJointsRequireABentJoint) {
  const Rig rig = MakePsdArm(21, 12);
  // Only the root moves: no joint with a parent bone bends.
  PsdExample ex;
  ex.name = "root-turn";
  ex.pose = RestPose(rig.skeleton);
  ex.pose.local[0].rotation = Eigen::AngleAxisd(0.5, Eigen::Vector3d::UnitZ());
  auto order = TopologicalOrder(rig.skeleton);
  auto T = SkinningTransforms(rig.skeleton, *order, ex.pose);
  Lbs(rig.mesh.V, *rig.sparse_weights, *T, &ex.V);
  auto model = PsdModel::Build(rig.mesh, rig.skeleton, *rig.sparse_weights, {ex},
                               Options(PsdBase::kLbs, true));
  EXPECT_EQ(model.status().code(), absl::StatusCode::kFailedPrecondition);
  // Without support joints the same example builds and is reproduced.
  auto plain = PsdModel::Build(rig.mesh, rig.skeleton, *rig.sparse_weights, {ex},
                               Options(PsdBase::kLbs, false));
  ASSERT_TRUE(plain.ok()) << plain.status();
  RowMatrixX3d U;
  ASSERT_TRUE((*plain)->Deform(ex.pose, &U).ok());
  EXPECT_LE(MaxRowDistance(U, ex.V), 1e-9);
}

TEST(PsdTest, ExampleAtRestPoseReplacesTheImplicitRestExample) {
  const Rig rig = MakePsdArm(21, 12);
  auto examples = ElbowExamples(rig, {0, 90});
  // A sculpt at the rest pose that differs from the bind mesh: it must be reproduced, so it
  // cannot coexist with an implicit zero-displacement rest example.
  examples[0].V.col(1) *= 1.1;
  auto model = PsdModel::Build(rig.mesh, rig.skeleton, *rig.sparse_weights, examples,
                               Options(PsdBase::kLbs, false));
  ASSERT_TRUE(model.ok()) << model.status();
  for (const auto& ex : examples) {
    RowMatrixX3d U;
    ASSERT_TRUE((*model)->Deform(ex.pose, &U).ok());
    EXPECT_LE(MaxRowDistance(U, ex.V), 1e-9) << ex.name;
  }
}

// A three-joint chain along the cylinder: joints at x = 0, 0.7, 1.4, each blended to the next
// over ±0.1 around the joint.
Rig MakeThreeJointArm() {
  Rig rig = testing::MakeCylinderRig(41, 12, 2.0, 0.25);
  rig.skeleton.joints.resize(3);
  const double xs[3] = {0.0, 0.7, 1.4};
  for (int j = 0; j < 3; ++j) {
    Joint& joint = rig.skeleton.joints[j];
    joint.name = "j" + std::to_string(j);
    joint.parent = j - 1;
    joint.rest = Transform();
    joint.rest.translation = Eigen::Vector3d(j == 0 ? 0.0 : 0.7, 0, 0);
    joint.inverse_bind = Eigen::Affine3d::Identity();
    joint.inverse_bind.translation() = Eigen::Vector3d(-xs[j], 0, 0);
    joint.tail = Eigen::Vector3d(j < 2 ? xs[j + 1] : 1.9, 0, 0);
  }
  const int n = rig.mesh.V.rows();
  SparseWeights W;
  W.joints.resize(n, 2);
  W.weights.resize(n, 2);
  for (int i = 0; i < n; ++i) {
    const double x = rig.mesh.V(i, 0);
    const int j = x < 1.05 ? 0 : 1;  // blends between j and j + 1 around xs[j + 1]
    const double u = std::clamp((x - (xs[j + 1] - 0.1)) / 0.2, 0.0, 1.0);
    W.joints(i, 0) = j;
    W.joints(i, 1) = j + 1;
    W.weights(i, 0) = static_cast<float>(1 - u);
    W.weights(i, 1) = static_cast<float>(u);
  }
  rig.sparse_weights = W;
  return rig;
}

Pose ChainPose(const Skeleton& skeleton, double a, double b) {
  Pose pose = RestPose(skeleton);
  pose.local[1].rotation = Eigen::AngleAxisd(a, Eigen::Vector3d::UnitY());
  pose.local[2].rotation = Eigen::AngleAxisd(b, Eigen::Vector3d::UnitZ());
  return pose;
}

TEST(PsdTest, RegionsIgnoreJointsThatDoNotInfluenceThem) {
  const Rig rig = MakeThreeJointArm();
  ASSERT_TRUE(ValidateRig(rig).ok()) << ValidateRig(rig);
  auto order = TopologicalOrder(rig.skeleton);
  // Sculpts: skinning plus a smooth radial swelling that differs per example everywhere.
  std::vector<PsdExample> examples;
  // Distinct per-joint values, so restricting the distance to one joint keeps the centres apart
  // (otherwise the region falls back to all joints for exactness).
  const std::vector<std::pair<double, double>> angles = {
      {0.8, 0.2}, {0.1, 0.9}, {0.5, -0.4}, {-0.5, 0.5}};
  for (size_t k = 0; k < angles.size(); ++k) {
    PsdExample ex;
    ex.name = "e" + std::to_string(k);
    ex.pose = ChainPose(rig.skeleton, angles[k].first, angles[k].second);
    RowMatrixX3d S = rig.mesh.V;
    for (int i = 0; i < S.rows(); ++i) {
      const double x = S(i, 0);
      S(i, 1) *= 1 + 0.1 * (k + 1) * std::sin(3 * x + k);
      S(i, 2) *= 1 + 0.05 * (k + 1) * std::cos(2 * x);
    }
    auto T = SkinningTransforms(rig.skeleton, *order, ex.pose);
    Lbs(S, *rig.sparse_weights, *T, &ex.V);
    examples.push_back(std::move(ex));
  }
  PsdReport report;
  auto model = PsdModel::Build(rig.mesh, rig.skeleton, *rig.sparse_weights, examples,
                               Options(PsdBase::kLbs, false), &report);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_GE(report.regions, 2);
  // Base-pose shape of a vertex driven rigidly by joint j: T_j⁻¹ U_i.
  auto base_shape = [&](const Pose& pose, int j, const std::vector<int>& rows) {
    RowMatrixX3d U;
    EXPECT_TRUE((*model)->Deform(pose, &U).ok());
    const Eigen::Affine3d Ti = (*SkinningTransforms(rig.skeleton, *order, pose))[j].inverse();
    RowMatrixX3d X(rows.size(), 3);
    for (size_t r = 0; r < rows.size(); ++r) X.row(r) = (Ti * U.row(rows[r]).transpose()).transpose();
    return X;
  };
  std::vector<int> first, last;  // vertices with weight on joint 0 only / joint 2 only
  for (int i = 0; i < rig.mesh.V.rows(); ++i) {
    if (rig.mesh.V(i, 0) < 0.55) first.push_back(i);
    if (rig.mesh.V(i, 0) > 1.55) last.push_back(i);
  }
  // The last segment's shape follows joint 2 only; the first segment's (weights on joint 0,
  // child joint 1) follows joint 1 only.
  const RowMatrixX3d L1 = base_shape(ChainPose(rig.skeleton, 0.3, 0.5), 2, last);
  const RowMatrixX3d L2 = base_shape(ChainPose(rig.skeleton, -0.7, 0.5), 2, last);
  EXPECT_LE(MaxRowDistance(L1, L2), 1e-9);
  const RowMatrixX3d F1 = base_shape(ChainPose(rig.skeleton, 0.3, 0.5), 0, first);
  const RowMatrixX3d F2 = base_shape(ChainPose(rig.skeleton, 0.3, -0.6), 0, first);
  EXPECT_LE(MaxRowDistance(F1, F2), 1e-9);
  // ... but they do change with their own joint (the property is not vacuous).
  const RowMatrixX3d L3 = base_shape(ChainPose(rig.skeleton, 0.3, -0.2), 2, last);
  EXPECT_GT(MaxRowDistance(L1, L3), 1e-3);
  for (const auto& ex : examples) {
    RowMatrixX3d U;
    ASSERT_TRUE((*model)->Deform(ex.pose, &U).ok());
    EXPECT_LE(MaxRowDistance(U, ex.V), 1e-6 * BoundingBoxDiagonal(rig.mesh.V)) << ex.name;
  }
}

TEST(PsdTest, BuildReportsProgressAndStopsWhenCancelled) {
  const Rig rig = MakePsdArm(21, 12);
  std::atomic<bool> cancel{false};
  std::vector<double> fractions;
  Progress progress([&](const std::string&, double f) { fractions.push_back(f); }, &cancel);
  auto model = PsdModel::Build(rig.mesh, rig.skeleton, *rig.sparse_weights,
                               ElbowExamples(rig, {45, 90}), Options(PsdBase::kLbs, true), nullptr,
                               progress);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_FALSE(fractions.empty());
  // (The voxel grid's own stages restart within their sub-range, so only the range is checked.)
  for (double f : fractions) {
    EXPECT_GE(f, 0.0);
    EXPECT_LE(f, 1.0);
  }
  EXPECT_DOUBLE_EQ(fractions.back(), 1.0);
  cancel = true;
  model = PsdModel::Build(rig.mesh, rig.skeleton, *rig.sparse_weights,
                          ElbowExamples(rig, {45, 90}), Options(PsdBase::kLbs, true), nullptr,
                          progress);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kCancelled);
}

TEST(PsdValidationTest, RejectsWrongVertexCount) {
  const Rig rig = MakePsdArm(21, 12);
  auto examples = ElbowExamples(rig, {45, 90, 135});
  examples[2].V.conservativeResize(examples[2].V.rows() - 2, 3);
  const absl::Status s = ValidateExamples(rig.skeleton, rig.mesh.V.rows(), examples, BoundingBoxDiagonal(rig.mesh.V));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("examples[2].positions: " + std::to_string(rig.mesh.V.rows() - 2) +
                        " vertices, the rig has " + std::to_string(rig.mesh.V.rows())));
  auto model = PsdModel::Build(rig.mesh, rig.skeleton, *rig.sparse_weights, examples, {});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PsdValidationTest, RejectsDuplicatePoses) {
  const Rig rig = MakePsdArm(21, 12);
  auto examples = ElbowExamples(rig, {45, 90, 135, 90});
  examples[3].name = "again";
  // A rotation difference below 1e-6 rad still counts as the same pose.
  examples[3].pose.local[1].rotation =
      examples[3].pose.local[1].rotation * Eigen::AngleAxisd(1e-8, Eigen::Vector3d::UnitZ());
  const absl::Status s = ValidateExamples(rig.skeleton, rig.mesh.V.rows(), examples, BoundingBoxDiagonal(rig.mesh.V));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("examples[3] has the same pose as examples[1] ('bend-90')"));
  // 1e-4 rad apart is a different pose, but too near one to interpolate between (below).
  examples[3].pose = ElbowPose(rig.skeleton, 90 * kDeg + 1e-4);
  EXPECT_THAT(std::string(ValidateExamples(rig.skeleton, rig.mesh.V.rows(), examples, BoundingBoxDiagonal(rig.mesh.V))
                              .message()),
              HasSubstr("examples[3] ('again') is 0.0001 from examples[1] ('bend-90') in pose space, under 0.01"));
  examples[3].pose = ElbowPose(rig.skeleton, 90 * kDeg + 0.011);
  EXPECT_TRUE(ValidateExamples(rig.skeleton, rig.mesh.V.rows(), examples, BoundingBoxDiagonal(rig.mesh.V)).ok());
}

// Two examples 0.001 rad apart whose shapes differ by 0.1: the interpolant's slope of 100 per
// radian moved a 2-unit arm by 26 units 0.4 rad away. Such pairs, and an example that near the
// rest pose, are refused.
TEST(PsdValidationTest, RefusesExamplesTooNearEachOtherOrTheRestPose) {
  const Rig rig = MakePsdArm(21, 12);
  const double diag = BoundingBoxDiagonal(rig.mesh.V);
  auto examples = ElbowExamples(rig, {90, 90});
  examples[1].pose = ElbowPose(rig.skeleton, 90 * kDeg + 0.001);
  examples[1].name = "near";
  examples[0].V.col(0).array() += 0.05;
  examples[1].V.col(0).array() -= 0.05;
  absl::Status s = ValidateExamples(rig.skeleton, rig.mesh.V.rows(), examples, diag);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("examples[1] ('near') is 0.001 from examples[0]"));
  EXPECT_EQ(PsdModel::Build(rig.mesh, rig.skeleton, *rig.sparse_weights, examples, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Near the rest pose (the implicit example with no correction).
  auto near_rest = ElbowExamples(rig, {90});
  near_rest[0].pose = ElbowPose(rig.skeleton, 0.005);
  s = ValidateExamples(rig.skeleton, rig.mesh.V.rows(), near_rest, diag);
  EXPECT_THAT(std::string(s.message()), HasSubstr("examples[0] ('bend-90') is 0.005 from the rest pose in pose space"));
  // At the rest pose exactly, it replaces the implicit example; past the limit, both are taken.
  near_rest[0].pose = ElbowPose(rig.skeleton, 0);
  EXPECT_TRUE(ValidateExamples(rig.skeleton, rig.mesh.V.rows(), near_rest, diag).ok());
  examples[1].pose = ElbowPose(rig.skeleton, 90 * kDeg + 0.0101);
  EXPECT_TRUE(ValidateExamples(rig.skeleton, rig.mesh.V.rows(), examples, diag).ok());
}

TEST(PsdValidationTest, RejectsNonFiniteCoordinatesAndBadPoses) {
  const Rig rig = MakePsdArm(21, 12);
  auto examples = ElbowExamples(rig, {45, 90});
  examples[0].V(5, 1) = std::nan("");
  absl::Status s = ValidateExamples(rig.skeleton, rig.mesh.V.rows(), examples, BoundingBoxDiagonal(rig.mesh.V));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("examples[0].positions[5].y is not finite"));

  examples = ElbowExamples(rig, {45, 90});
  examples[1].pose.local[1].rotation.coeffs() *= 2.0;
  s = ValidateExamples(rig.skeleton, rig.mesh.V.rows(), examples, BoundingBoxDiagonal(rig.mesh.V));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("examples[1].pose.joints[1].rotation"));

  auto model = PsdModel::Build(rig.mesh, rig.skeleton, *rig.sparse_weights,
                               ElbowExamples(rig, {45, 90}), {});
  ASSERT_TRUE(model.ok()) << model.status();
  Pose bad = ElbowPose(rig.skeleton, 0.3);
  bad.local[0].translation.x() = std::numeric_limits<double>::infinity();
  RowMatrixX3d U;
  EXPECT_EQ((*model)->Deform(bad, &U).code(), absl::StatusCode::kInvalidArgument);
  std::vector<float> Uf(3 * rig.mesh.V.rows());
  EXPECT_EQ((*model)->DeformFloat(bad, Uf.data()).code(), absl::StatusCode::kInvalidArgument);
}

TEST(PsdValidationTest, RejectsBadOptions) {
  const Rig rig = MakePsdArm(21, 12);
  PsdOptions o;
  o.rbf_width = 0;
  auto model = PsdModel::Build(rig.mesh, rig.skeleton, *rig.sparse_weights,
                               ElbowExamples(rig, {45}), o);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(model.status().message()), HasSubstr("options.rbf_width"));
  model = PsdModel::Build(rig.mesh, rig.skeleton, *rig.sparse_weights, {}, {});
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
