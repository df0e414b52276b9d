#include "core/weights/emw.h"

#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <Eigen/SparseCholesky>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

#include "core/geometry/volume_domain.h"
#include "core/rig/bones.h"
#include "core/rig/joint_frames.h"
#include "core/weights/handles.h"
#include "tests/support/fixtures.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

// The two-bone cylinder on a voxel grid: the elbow (joint 1) rotates, the root (joint 0) is fixed.
struct CylinderSetup {
  Rig rig;
  VolumeDomain domain;
  ElasticEnergy energy;
  std::vector<std::vector<int>> bones;
  std::vector<JointFrame> frames;
};

const CylinderSetup& Cylinder() {
  static const CylinderSetup* setup = [] {
    auto* c = new CylinderSetup;
    c->rig = testing::MakeCylinderRig();
    VoxelGridOptions vo;
    vo.resolution = 28;
    c->domain = *BuildVoxelDomain(c->rig.mesh, vo);
    const std::vector<JointHandle> handles = *JointHandles(c->rig.skeleton);
    c->bones = *RasterizeHandles(c->domain, handles);
    c->frames = JointFrames(c->rig.skeleton, handles);
    c->energy = *BuildElasticEnergy(c->domain);
    return c;
  }();
  return *setup;
}

// Ẽ(w) = Σ_i E(v_i(w)) with exact best rotations, computed through ElasticEnergyValue.
double SampleEnergy(const CylinderSetup& c, EmwKind kind, const Eigen::VectorXd& w) {
  double sum = 0.0;
  for (const Eigen::Affine3d& S : EmwSamples(c.frames[1], kind, M_PI / 2)) {
    RowMatrixX3d V = c.energy.rest;
    for (int n = 0; n < V.rows(); ++n) {
      const Eigen::Vector3d x = c.energy.rest.row(n).transpose();
      V.row(n) = (x + w(n) * (S * x - x)).transpose();
    }
    sum += ElasticEnergyValue(c.energy, V);
  }
  return sum;
}

struct Solved {
  Eigen::VectorXd w;
  EmwReport report;
};

const Solved& Solve(EmwKind kind) {
  static std::map<EmwKind, Solved> cache;
  auto it = cache.find(kind);
  if (it != cache.end()) return it->second;
  const CylinderSetup& c = Cylinder();
  Solved s;
  absl::StatusOr<Eigen::VectorXd> w =
      EnergyMinimizingWeight(c.energy, c.frames[1], kind, c.bones[1], c.bones[0], EmwOptions(), &s.report);
  EXPECT_TRUE(w.ok()) << w.status();
  s.w = *w;
  std::printf("%s: %d nodes, %d iterations (%s), %.3f s (factorize %.3f s), weights in [%.3g, 1 + %.3g], "
              "energy %.6g -> %.6g\n",
              kind == EmwKind::kSwing ? "swing" : "twist", c.energy.num_nodes(), s.report.iterations,
              s.report.stop_reason.c_str(), s.report.seconds, s.report.factorize_seconds, s.report.min_weight,
              s.report.max_weight - 1, s.report.initial_energy, s.report.energy.empty() ? 0.0 : s.report.energy.back());
  return cache.emplace(kind, std::move(s)).first->second;
}

TEST(EnergyMinimizingWeight, SamplesAreRotationsAboutTheJointInItsFrame) {
  const CylinderSetup& c = Cylinder();
  const JointFrame& f = c.frames[1];
  for (EmwKind kind : {EmwKind::kSwing, EmwKind::kTwist}) {
    const auto samples = EmwSamples(f, kind, M_PI / 2);
    ASSERT_EQ(samples.size(), kind == EmwKind::kSwing ? 4u : 2u);
    for (const Eigen::Affine3d& S : samples) {
      EXPECT_LT((S * f.center - f.center).norm(), 1e-12);  // the joint stays
      EXPECT_NEAR(S.linear().determinant(), 1.0, 1e-12);
      const Eigen::Vector3d z = f.axes.col(2);
      if (kind == EmwKind::kTwist) {
        EXPECT_LT((S.linear() * z - z).norm(), 1e-12);  // twist keeps the bone axis
      } else {
        EXPECT_NEAR((S.linear() * z).dot(z), 0.0, 1e-12);  // 90° swing turns it perpendicular
      }
    }
  }
}

TEST(EnergyMinimizingWeight, OneOnMovingZeroOnFixedBoundedWeights) {
  const CylinderSetup& c = Cylinder();
  for (EmwKind kind : {EmwKind::kSwing, EmwKind::kTwist}) {
    const Solved& s = Solve(kind);
    ASSERT_EQ(s.w.size(), c.energy.num_nodes());
    for (int v : c.bones[1]) EXPECT_EQ(s.w(v), 1.0);
    for (int v : c.bones[0]) EXPECT_EQ(s.w(v), 0.0);
    EXPECT_GE(s.w.minCoeff(), -0.05);
    EXPECT_LE(s.w.maxCoeff(), 1.05);
    EXPECT_EQ(s.report.min_weight, s.w.minCoeff());
    EXPECT_EQ(s.report.max_weight, s.w.maxCoeff());
  }
}

TEST(EnergyMinimizingWeight, EnergyNonIncreasingAndMatchesIndependentSampleEnergy) {
  const CylinderSetup& c = Cylinder();
  for (EmwKind kind : {EmwKind::kSwing, EmwKind::kTwist}) {
    const Solved& s = Solve(kind);
    ASSERT_GE(s.report.energy.size(), 2u);
    ASSERT_EQ(static_cast<int>(s.report.energy.size()), s.report.iterations);
    EXPECT_LE(s.report.energy[0], s.report.initial_energy * (1 + 1e-12));
    for (size_t i = 1; i < s.report.energy.size(); ++i) {
      EXPECT_LE(s.report.energy[i], s.report.energy[i - 1] * (1 + 1e-12)) << "iteration " << i;
    }
    EXPECT_LT(s.report.energy.back(), s.report.initial_energy);
    // The reported block objective bounds Ẽ(w) from above (rotations may be slightly off the
    // optimum; the regularizer is positive) and is tight near convergence.
    const double exact = SampleEnergy(c, kind, s.w);
    EXPECT_LE(exact, s.report.energy.back() * (1 + 1e-9));
    EXPECT_GE(exact, 0.99 * s.report.energy.back());
  }
}

// The result is a minimizer: smooth bumps of the free weights in either direction raise Ẽ.
TEST(EnergyMinimizingWeight, BumpsOfTheFreeWeightsRaiseTheEnergy) {
  const CylinderSetup& c = Cylinder();
  std::vector<uint8_t> pinned(c.energy.num_nodes(), 0);
  for (const auto& b : c.bones)
    for (int v : b) pinned[v] = 1;
  for (EmwKind kind : {EmwKind::kSwing, EmwKind::kTwist}) {
    const Solved& s = Solve(kind);
    const double base = SampleEnergy(c, kind, s.w);
    for (double cx : {0.8, 1.0, 1.2}) {
      Eigen::VectorXd bump = Eigen::VectorXd::Zero(s.w.size());
      for (int n = 0; n < bump.size(); ++n) {
        if (pinned[n]) continue;
        const double dx = c.energy.rest(n, 0) - cx;
        bump(n) = std::exp(-dx * dx / (2 * 0.1 * 0.1));
      }
      for (double eps : {-0.1, 0.1}) {
        EXPECT_GT(SampleEnergy(c, kind, s.w + eps * bump), base) << "bump at x = " << cx << ", eps " << eps;
      }
    }
  }
}

// Along the bone axis the twist weight climbs from 0 on the root bone to 1 on the child bone
// (averaged over each slab of nodes with the same x).
TEST(EnergyMinimizingWeight, TwistWeightIsMonotoneAlongTheAxis) {
  const CylinderSetup& c = Cylinder();
  const Solved& s = Solve(EmwKind::kTwist);
  std::map<long, std::pair<double, int>> slabs;
  for (int n = 0; n < c.energy.num_nodes(); ++n) {
    const long key = std::lround(c.energy.rest(n, 0) / c.domain.spacing * 4);
    slabs[key].first += s.w(n);
    slabs[key].second += 1;
  }
  std::vector<std::pair<double, double>> profile;  // x, mean weight
  for (const auto& [key, sum] : slabs) profile.emplace_back(key * c.domain.spacing / 4, sum.first / sum.second);
  for (size_t i = 1; i < profile.size(); ++i) {
    EXPECT_GE(profile[i].second, profile[i - 1].second - 0.01) << "x = " << profile[i].first;
  }
  for (const auto& [x, mean] : profile) {
    if (x > 0.05 && x < 0.6) {
      EXPECT_LT(mean, 0.1) << "x = " << x;
    }
    if (x > 1.4 && x < 1.95) {
      EXPECT_GT(mean, 0.9) << "x = " << x;
    }
    if (std::abs(x - 1.0) < 0.5 * c.domain.spacing) {
      EXPECT_NEAR(mean, 0.5, 0.2) << "x = " << x;
    }
  }
}

// Independent baseline: harmonic weights (L_ff w_f = −L_fc w_c, solved here with Eigen's
// SimplicialLDLT) — EMW must reach a lower sample energy Ẽ for both kinds.
TEST(EnergyMinimizingWeight, LowerSampleEnergyThanHarmonicWeights) {
  const CylinderSetup& c = Cylinder();
  const int n = c.energy.num_nodes();
  std::vector<int> idx(n, -1);
  Eigen::VectorXd wc = Eigen::VectorXd::Zero(n);
  for (int v : c.bones[1]) { idx[v] = -2; wc(v) = 1; }
  for (int v : c.bones[0]) idx[v] = -2;
  int nf = 0;
  for (int v = 0; v < n; ++v) if (idx[v] == -1) idx[v] = nf++;
  std::vector<Eigen::Triplet<double>> t;
  Eigen::VectorXd rhs = Eigen::VectorXd::Zero(nf);
  for (int col = 0; col < n; ++col)
    for (Eigen::SparseMatrix<double>::InnerIterator it(c.energy.L, col); it; ++it) {
      if (idx[it.row()] < 0) continue;
      if (idx[col] >= 0) t.emplace_back(idx[it.row()], idx[col], it.value());
      else rhs(idx[it.row()]) -= it.value() * wc(col);
    }
  Eigen::SparseMatrix<double> A(nf, nf);
  A.setFromTriplets(t.begin(), t.end());
  Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>> s(A);
  Eigen::VectorXd wf = s.solve(rhs);
  Eigen::VectorXd w = wc;
  for (int v = 0; v < n; ++v) if (idx[v] >= 0) w(v) = wf(idx[v]);
  for (EmwKind kind : {EmwKind::kSwing, EmwKind::kTwist}) {
    const double harmonic = SampleEnergy(c, kind, w);
    const double emw = SampleEnergy(c, kind, Solve(kind).w);
    std::printf("%s: harmonic %.6g, EMW %.6g\n", kind == EmwKind::kSwing ? "swing" : "twist", harmonic, emw);
    EXPECT_LT(emw, 0.99 * harmonic);
  }
}

// The combined entry point (one shared symbolic analysis) gives the separate calls' results.
TEST(EnergyMinimizingWeight, SwingTwistTogetherEqualsSeparateCalls) {
  const CylinderSetup& c = Cylinder();
  EmwReport rs, rt;
  absl::StatusOr<EmwSwingTwist> st =
      EnergyMinimizingSwingTwistWeights(c.energy, c.frames[1], c.bones[1], c.bones[0], EmwOptions(), &rs, &rt);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_LT((st->swing - Solve(EmwKind::kSwing).w).cwiseAbs().maxCoeff(), 1e-9);
  EXPECT_LT((st->twist - Solve(EmwKind::kTwist).w).cwiseAbs().maxCoeff(), 1e-9);
  EXPECT_EQ(rs.iterations, Solve(EmwKind::kSwing).report.iterations);
  EXPECT_EQ(rt.iterations, Solve(EmwKind::kTwist).report.iterations);
}

TEST(EnergyMinimizingWeight, RejectsEmptyOverlappingOrOutOfRangeNodes) {
  const CylinderSetup& c = Cylinder();
  const JointFrame& f = c.frames[1];
  auto code = [&](const std::vector<int>& moving, const std::vector<int>& fixed) {
    return EnergyMinimizingWeight(c.energy, f, EmwKind::kTwist, moving, fixed).status().code();
  };
  EXPECT_EQ(code({}, c.bones[0]), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(c.bones[1], {}), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(c.bones[1], {c.bones[1][0]}), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(c.bones[1], {c.energy.num_nodes()}), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code({-1}, c.bones[0]), absl::StatusCode::kInvalidArgument);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
