#include "core/solve/elastic.h"

#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "core/geometry/mesh.h"
#include "core/geometry/volume_domain.h"
#include "core/rig/bones.h"
#include "core/weights/geodesic_weights.h"
#include "core/weights/handles.h"
#include "tests/support/fixtures.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

// ElasticModel::Create with geodesic voxel start weights (as BuildElasticModel gives it), or zero
// start weights where those cannot be computed, so that Create's own checks are reached.
absl::StatusOr<std::shared_ptr<const ElasticModel>> CreateModel(
    const VolumeDomain& domain, const std::vector<std::vector<int>>& pinned) {
  absl::StatusOr<Eigen::MatrixXd> start = GeodesicVoxelWeights(domain, pinned);
  return ElasticModel::Create(
      domain, pinned,
      start.ok()
          ? *std::move(start)
          : Eigen::MatrixXd::Zero(domain.num_nodes(), static_cast<Eigen::Index>(pinned.size())));
}

struct CylinderModel {
  Rig rig;
  std::shared_ptr<const ElasticModel> model;
};

CylinderModel MakeCylinderModel(int resolution) {
  CylinderModel c;
  c.rig = testing::MakeCylinderRig();
  VoxelGridOptions vo;
  vo.resolution = resolution;
  absl::StatusOr<VolumeDomain> domain = BuildVoxelDomain(c.rig.mesh, vo);
  EXPECT_TRUE(domain.ok()) << domain.status();
  absl::StatusOr<std::vector<JointHandle>> handles = JointHandles(c.rig.skeleton);
  EXPECT_TRUE(handles.ok());
  absl::StatusOr<std::vector<std::vector<int>>> pinned = RasterizeHandles(*domain, *handles);
  EXPECT_TRUE(pinned.ok()) << pinned.status();
  absl::StatusOr<std::shared_ptr<const ElasticModel>> model = CreateModel(*domain, *pinned);
  EXPECT_TRUE(model.ok()) << model.status();
  c.model = *model;
  return c;
}

// A cube [0,1]³ split into 6 tets around the main diagonal, plus optionally a second such cube
// far away (a disconnected part).
void CubeTets(const Eigen::Vector3d& offset, RowMatrixX3d* TV, RowMatrixX4i* TT) {
  const int v0 = static_cast<int>(TV->rows());
  TV->conservativeResize(v0 + 8, 3);
  for (int c = 0; c < 8; ++c) {
    TV->row(v0 + c) = (offset + Eigen::Vector3d(c & 1, (c >> 1) & 1, (c >> 2) & 1)).transpose();
  }
  const int tets[6][4] = {{0, 1, 3, 7}, {0, 3, 2, 7}, {0, 2, 6, 7}, {0, 6, 4, 7}, {0, 4, 5, 7}, {0, 5, 1, 7}};
  const int t0 = static_cast<int>(TT->rows());
  TT->conservativeResize(t0 + 6, 4);
  for (int t = 0; t < 6; ++t)
    for (int k = 0; k < 4; ++k) (*TT)(t0 + t, k) = v0 + tets[t][k];
}

// The tet domain of one unit cube (8 nodes, 6 tets).
absl::StatusOr<VolumeDomain> CubeTetDomain() {
  RowMatrixX3d TV(0, 3);
  RowMatrixX4i TT(0, 4);
  CubeTets(Eigen::Vector3d(0, 0, 0), &TV, &TT);
  return BuildTetDomain(TV, TT, TV);
}

TEST(ElasticEnergy, RejectsDomainWithoutElements) {
  VolumeDomain d;
  d.nodes = RowMatrixX3d::Zero(3, 3);
  absl::StatusOr<ElasticEnergy> e = BuildElasticEnergy(d);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
}

// Uniform scaling by s: every element's best rotation is I (S_e = s ω G, G = Σ d̃ d̃ᵀ SPD), so
// E = ½ (s − 1)² Σ_e ω_e Σ |d̃|² = ½ (s − 1)² × total volume; any rigid motion has E = 0.
TEST(ElasticEnergy, ScalingEnergyIsHalfSquaredStrainTimesVolumeAndRigidIsZero) {
  Rig rig = testing::MakeCylinderRig(21, 16);
  VoxelGridOptions vo;
  vo.resolution = 16;
  absl::StatusOr<VolumeDomain> voxel = BuildVoxelDomain(rig.mesh, vo);
  ASSERT_TRUE(voxel.ok()) << voxel.status();
  RowMatrixX3d TV(0, 3);
  RowMatrixX4i TT(0, 4);
  CubeTets(Eigen::Vector3d(0, 0, 0), &TV, &TT);
  CubeTets(Eigen::Vector3d(1, 0, 0), &TV, &TT);  // shares a face's positions, separate nodes
  absl::StatusOr<VolumeDomain> tet = BuildTetDomain(TV, TT, TV);
  ASSERT_TRUE(tet.ok()) << tet.status();
  for (const VolumeDomain* d : {&*voxel, &*tet}) {
    absl::StatusOr<ElasticEnergy> en = BuildElasticEnergy(*d);
    ASSERT_TRUE(en.ok()) << en.status();
    double total_volume = d->kind == VolumeDomain::Kind::kVoxelGrid
                              ? std::pow(d->spacing, 3) * static_cast<double>(d->elements.rows())
                              : 2.0;
    EXPECT_NEAR(en->volume.sum(), total_volume, 1e-9 * total_volume);
    // L: symmetric, rows sum to zero.
    Eigen::VectorXd ones = Eigen::VectorXd::Ones(en->num_nodes());
    EXPECT_LT((en->L * ones).cwiseAbs().maxCoeff(), 1e-12);
    EXPECT_LT((Eigen::SparseMatrix<double>(en->L.transpose()) - en->L).norm(), 1e-12);
    for (double s : {0.5, 1.3, 2.0}) {
      const double E = ElasticEnergyValue(*en, s * d->nodes);
      EXPECT_NEAR(E, 0.5 * (s - 1) * (s - 1) * total_volume, 1e-10 * total_volume) << "s = " << s;
    }
    Eigen::Affine3d A = Eigen::Affine3d::Identity();
    A.rotate(Eigen::AngleAxisd(2.1, Eigen::Vector3d(1, 2, -0.5).normalized()));
    A.translation() = Eigen::Vector3d(3, -1, 0.5);
    RowMatrixX3d X = (d->nodes * A.linear().transpose()).rowwise() + A.translation().transpose();
    EXPECT_LT(ElasticEnergyValue(*en, X), 1e-20 + 1e-12 * total_volume);
    // A non-rigid, non-scaling deformation has positive energy.
    RowMatrixX3d Y = d->nodes;
    Y.col(0) += 0.3 * d->nodes.col(1);  // shear
    EXPECT_GT(ElasticEnergyValue(*en, Y), 1e-4 * total_volume);
  }
}

TEST(ElasticModel, RestPoseGivesRestNodesAndZeroEnergy) {
  CylinderModel c = MakeCylinderModel(24);
  std::vector<Eigen::Affine3d> T(2, Eigen::Affine3d::Identity());
  ElasticReport report;
  absl::StatusOr<RowMatrixX3d> X = c.model->Solve(T, nullptr, ElasticOptions(), &report);
  ASSERT_TRUE(X.ok()) << X.status();
  const RowMatrixX3d& rest = c.model->domain().nodes;
  EXPECT_LT((*X - rest).cwiseAbs().maxCoeff(), 1e-10);
  EXPECT_LT(c.model->Energy(*X), 1e-20);
  EXPECT_EQ(report.stop_reason, "converged");
  // ToMesh of the rest nodes is the mesh (trilinear maps reproduce linear functions).
  EXPECT_LT((c.model->ToMesh(*X) - c.rig.mesh.V).cwiseAbs().maxCoeff(), 1e-10);
}

TEST(ElasticModel, RigidMotionOfAllHandlesGivesRigidResult) {
  CylinderModel c = MakeCylinderModel(24);
  Eigen::Affine3d A = Eigen::Affine3d::Identity();
  A.translate(Eigen::Vector3d(0.3, -0.2, 1.0));
  A.rotate(Eigen::AngleAxisd(1.0, Eigen::Vector3d(0.2, 1, 0.4).normalized()));
  std::vector<Eigen::Affine3d> T(2, A);
  const RowMatrixX3d& rest = c.model->domain().nodes;
  const RowMatrixX3d expected = (rest * A.linear().transpose()).rowwise() + A.translation().transpose();
  // From the default start and from a start perturbed by noise of 2% of the radius.
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0.0, 0.005);
  RowMatrixX3d perturbed = expected;
  for (int i = 0; i < perturbed.size(); ++i) perturbed.data()[i] += noise(rng);
  {
    ElasticReport report;
    absl::StatusOr<RowMatrixX3d> X = c.model->Solve(T, nullptr, ElasticOptions(), &report);
    ASSERT_TRUE(X.ok()) << X.status();
    EXPECT_LT((*X - expected).cwiseAbs().maxCoeff(), 1e-8) << "iterations " << report.iterations;
    EXPECT_LT(c.model->Energy(*X), 1e-14);
  }
  // From a perturbed start the iterations head back to the rigid motion (local/global converges
  // linearly, slowly for the soft twist about the pinned axis): energy and error shrink a lot.
  {
    ElasticOptions opt;
    opt.relative_tolerance = 0.0;
    opt.max_iterations = 300;
    ElasticReport report;
    absl::StatusOr<RowMatrixX3d> X = c.model->Solve(T, &perturbed, opt, &report);
    ASSERT_TRUE(X.ok()) << X.status();
    const double err0 = (perturbed - expected).cwiseAbs().maxCoeff();
    const double err1 = (*X - expected).cwiseAbs().maxCoeff();
    std::printf("perturbed start: max error %.3g -> %.3g, energy %.3g -> %.3g\n", err0, err1,
                report.initial_energy, report.energy.back());
    EXPECT_LT(err1, 0.1 * err0);
    EXPECT_LT(report.energy.back(), 1e-3 * report.initial_energy);
  }
}

// Twist of the child bone by 90° about the bone axis (x): the middle cross-section (at the
// elbow) turns about half of it, the energy decreases monotonically, and volume is kept.
TEST(ElasticModel, TwistNinetyDegreesTurnsMiddleHalfwayKeepsVolumeEnergyNonIncreasing) {
  CylinderModel c = MakeCylinderModel(28);
  std::vector<Eigen::Affine3d> T(2, Eigen::Affine3d::Identity());
  T[1] = Eigen::Affine3d(Eigen::AngleAxisd(M_PI / 2, Eigen::Vector3d::UnitX()));
  ElasticOptions opt;
  ElasticReport report;
  absl::StatusOr<RowMatrixX3d> X = c.model->Solve(T, nullptr, opt, &report);
  ASSERT_TRUE(X.ok()) << X.status();
  ASSERT_GE(report.energy.size(), 2u);
  EXPECT_LE(report.energy[0], report.initial_energy * (1 + 1e-12));
  for (size_t i = 1; i < report.energy.size(); ++i) {
    EXPECT_LE(report.energy[i], report.energy[i - 1] * (1 + 1e-12)) << "iteration " << i;
  }
  EXPECT_LT(report.energy.back(), 0.9 * report.initial_energy);
  EXPECT_NEAR(c.model->Energy(*X), report.energy.back(), 1e-9 * report.energy.back());
  // The ring of mesh vertices at x = 1 (ring 20 of 41, 24 per ring).
  const RowMatrixX3d V = c.model->ToMesh(*X);
  double sum_angle = 0.0;
  for (int s = 0; s < 24; ++s) {
    const int i = 20 * 24 + s;
    const double a0 = std::atan2(c.rig.mesh.V(i, 2), c.rig.mesh.V(i, 1));
    const double a1 = std::atan2(V(i, 2), V(i, 1));
    sum_angle += std::remainder(a1 - a0, 2 * M_PI);
  }
  const double middle = sum_angle / 24 * 180 / M_PI;
  std::printf("middle cross-section turns %.2f deg; %d iterations (%s), %.3f s, E %.4g -> %.4g\n", middle,
              report.iterations, report.stop_reason.c_str(), report.seconds, report.initial_energy,
              report.energy.back());
  EXPECT_GT(middle, 30.0);
  EXPECT_LT(middle, 60.0);
  const double v0 = SignedVolume(c.rig.mesh.V, c.rig.mesh.F);
  const double v1 = SignedVolume(V, c.rig.mesh.F);
  std::printf("volume %.5f -> %.5f (%.2f%%)\n", v0, v1, 100 * (v1 - v0) / v0);
  EXPECT_NEAR(v1 / v0, 1.0, 0.03);
  // Near the tip (x = 1.9) the surface follows the child bone most of the way, near the root
  // (x = 0.1) hardly at all (only nodes near the axis are pinned, so the surface lags a little).
  auto turn = [&](int i) {
    return std::remainder(std::atan2(V(i, 2), V(i, 1)) - std::atan2(c.rig.mesh.V(i, 2), c.rig.mesh.V(i, 1)),
                          2 * M_PI) * 180 / M_PI;
  };
  const int tip = 38 * 24, root = 2 * 24;
  std::printf("turn at x = 0.1: %.2f deg, at x = 1.9: %.2f deg\n", turn(root), turn(tip));
  EXPECT_GT(turn(tip), 60.0);
  EXPECT_LT(turn(root), 20.0);
  EXPECT_GT(turn(root), -1.0);
}

TEST(ElasticModel, BendKeepsEnergyBelowDefaultStart) {
  CylinderModel c = MakeCylinderModel(24);
  std::vector<Eigen::Affine3d> T(2, Eigen::Affine3d::Identity());
  const Eigen::Vector3d elbow(1, 0, 0);
  T[1] = Eigen::Translation3d(elbow) * Eigen::AngleAxisd(M_PI / 2, Eigen::Vector3d::UnitZ()) *
         Eigen::Translation3d(-elbow);
  absl::StatusOr<RowMatrixX3d> start = c.model->DefaultStart(T);
  ASSERT_TRUE(start.ok());
  ElasticReport report;
  absl::StatusOr<RowMatrixX3d> X = c.model->Solve(T, nullptr, ElasticOptions(), &report);
  ASSERT_TRUE(X.ok()) << X.status();
  EXPECT_NEAR(report.initial_energy, c.model->Energy(*start), 1e-9 * report.initial_energy);
  EXPECT_LT(c.model->Energy(*X), c.model->Energy(*start));
  // Pinned nodes exactly at their bones' transforms.
  for (int j = 0; j < 2; ++j)
    for (int v : c.model->handle_nodes()[j]) {
      const Eigen::Vector3d want = T[j] * c.model->domain().nodes.row(v).transpose();
      EXPECT_LT((X->row(v).transpose() - want).norm(), 1e-12);
    }
}

std::vector<Eigen::Affine3d> Bend(double degrees) {
  std::vector<Eigen::Affine3d> T(2, Eigen::Affine3d::Identity());
  const Eigen::Vector3d elbow(1, 0, 0);
  T[1] = Eigen::Translation3d(elbow) * Eigen::AngleAxisd(degrees * M_PI / 180, Eigen::Vector3d::UnitZ()) *
         Eigen::Translation3d(-elbow);
  return T;
}

// Anderson acceleration against the plain local/global iterations, both run to a tight
// tolerance: the same minimizer (energy and positions), the accelerated energies never
// increasing, and fewer iterations.
TEST(ElasticModel, AndersonReachesThePlainMinimizerInFewerIterationsWithEnergyNonIncreasing) {
  CylinderModel c = MakeCylinderModel(20);
  const std::vector<Eigen::Affine3d> T = Bend(90);
  ElasticOptions plain_options;
  plain_options.anderson_history = 0;
  plain_options.relative_tolerance = 1e-10;
  plain_options.max_iterations = 20000;
  ElasticOptions aa_options = plain_options;
  aa_options.anderson_history = 5;
  ElasticReport plain, aa;
  absl::StatusOr<RowMatrixX3d> Xp = c.model->Solve(T, nullptr, plain_options, &plain);
  absl::StatusOr<RowMatrixX3d> Xa = c.model->Solve(T, nullptr, aa_options, &aa);
  ASSERT_TRUE(Xp.ok() && Xa.ok());
  EXPECT_EQ(plain.stop_reason, "converged");
  EXPECT_EQ(aa.stop_reason, "converged");
  EXPECT_NEAR(aa.energy.back(), plain.energy.back(), 1e-6 * plain.energy.back());
  double scale = 0;
  for (int v = 0; v < Xp->rows(); ++v) scale = std::max(scale, c.model->domain().nodes.row(v).norm());
  EXPECT_LT((*Xa - *Xp).rowwise().norm().maxCoeff(), 1e-3 * scale);
  double last = aa.initial_energy;
  for (double e : aa.energy) {
    EXPECT_LE(e, last);
    last = e;
  }
  EXPECT_LT(aa.iterations, plain.iterations / 2) << "plain " << plain.iterations << ", Anderson " << aa.iterations;
  EXPECT_NEAR(c.model->Energy(*Xa), aa.energy.back(), 1e-9 * aa.energy.back());
}

// keep_lower_start: the last frame's solution is kept as the start when it is nearer (a small
// step of the pose: fewer iterations than a cold start); the default start is taken after a
// jump, when the given start is worse.
TEST(ElasticModel, KeepLowerStartTakesTheWarmStartForASmallStepAndTheDefaultAfterAJump) {
  CylinderModel c = MakeCylinderModel(20);
  ElasticReport first;
  absl::StatusOr<RowMatrixX3d> X90 = c.model->Solve(Bend(90), nullptr, ElasticOptions(), &first);
  ASSERT_TRUE(X90.ok());
  ElasticOptions options;
  options.keep_lower_start = true;
  ElasticReport cold, warm;
  ASSERT_TRUE(c.model->Solve(Bend(95), nullptr, options, &cold).ok());
  absl::StatusOr<RowMatrixX3d> X95 = c.model->Solve(Bend(95), &*X90, options, &warm);
  ASSERT_TRUE(X95.ok());
  EXPECT_EQ(warm.start_index, 0) << "the given start, not the default";
  EXPECT_LT(warm.initial_energy, cold.initial_energy);
  // The same minimizer either way (the iterations saved are measured by bench/emw_bench).
  EXPECT_NEAR(warm.energy.back(), cold.energy.back(), 1e-4 * cold.energy.back());
  // From the rest pose's solution to a 150° bend, the DQS default start is the better one.
  ElasticReport rest, jump;
  absl::StatusOr<RowMatrixX3d> X0 = c.model->Solve(Bend(0), nullptr, ElasticOptions(), &rest);
  ASSERT_TRUE(X0.ok());
  ASSERT_TRUE(c.model->Solve(Bend(150), &*X0, options, &jump).ok());
  absl::StatusOr<RowMatrixX3d> start = c.model->DefaultStart(Bend(150));
  ASSERT_TRUE(start.ok());
  EXPECT_EQ(jump.start_index, -1) << "the default start";
  EXPECT_NEAR(jump.initial_energy, c.model->Energy(*start), 1e-9 * jump.initial_energy);
}

// NextStart along a bend that goes on at the same pace (100°, 105°, then 110°): the motion's
// projection s is 1, and the prediction (carried start plus the last correction) is nearer the
// 110° minimizer than the carried start, in distance and in energy. Going back to 100° gives
// s = −1 and a start nearer the 100° solution than the carried one; a twist about the bone, across
// the bend's motion, gives s = 0 and the carried start itself. Where the path of minimizers turns
// (on this coarse cylinder between 85° and 90°: the correction of the 85° → 90° step is 3× that of
// 90° → 95°), the prediction has the higher energy and Solve, given both, keeps the carried start.
TEST(ElasticModel, NextStartPredictsAlongAMotionThatGoesOnAndUndoesItOnAReversal) {
  CylinderModel c = MakeCylinderModel(20);
  ElasticOptions tight;
  tight.relative_tolerance = 1e-10;
  tight.max_iterations = 5000;
  auto solve = [&](double degrees) {
    absl::StatusOr<RowMatrixX3d> X = c.model->Solve(Bend(degrees), nullptr, tight);
    EXPECT_TRUE(X.ok()) << X.status();
    return *X;
  };
  auto distance = [](const RowMatrixX3d& A, const RowMatrixX3d& B) { return (A - B).rowwise().norm().maxCoeff(); };
  // The history after frames a then b, solved to `tight`.
  auto history = [&](double a, double b, const RowMatrixX3d& Xa, const RowMatrixX3d& Xb) {
    ElasticModel::FrameHistory first{Bend(a), Xa, {}, {}};
    absl::StatusOr<ElasticModel::Prediction> p = c.model->NextStart(first, Bend(b));
    EXPECT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->continuation, 0.0) << "no correction after a first frame";
    EXPECT_FALSE(p->predicted);
    EXPECT_EQ(p->start, p->carried);
    ElasticModel::FrameHistory h = ElasticModel::NextHistory(first, *p, Bend(b), Xb);
    EXPECT_EQ(h.correction, Xb - p->carried);
    EXPECT_EQ(h.T_before.size(), 2u);
    return h;
  };
  const RowMatrixX3d X100 = solve(100), X105 = solve(105), X110 = solve(110);
  const ElasticModel::FrameHistory h = history(100, 105, X100, X105);

  absl::StatusOr<ElasticModel::Prediction> on = c.model->NextStart(h, Bend(110));
  ASSERT_TRUE(on.ok()) << on.status();
  EXPECT_NEAR(on->continuation, 1.0, 1e-9);
  EXPECT_TRUE(on->predicted);
  EXPECT_LT(distance(on->start, X110), 0.5 * distance(on->carried, X110));
  EXPECT_LT(c.model->Energy(on->start), c.model->Energy(on->carried));
  // Solved from both starts, the prediction is taken (the lower energy) and reaches the minimizer.
  ElasticOptions session;
  session.keep_lower_start = true;
  ElasticReport taken;
  absl::StatusOr<RowMatrixX3d> X = c.model->Solve(Bend(110), on->Starts(), session, &taken);
  ASSERT_TRUE(X.ok()) << X.status();
  EXPECT_EQ(taken.start_index, 0);
  EXPECT_NEAR(taken.initial_energy, c.model->Energy(on->start), 1e-9 * taken.initial_energy);
  EXPECT_NEAR(taken.energy.back(), c.model->Energy(X110), 1e-4 * taken.energy.back());

  absl::StatusOr<ElasticModel::Prediction> back = c.model->NextStart(h, Bend(100));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_NEAR(back->continuation, -1.0, 1e-3);  // the changes' translations differ at second order
  EXPECT_TRUE(back->predicted);
  EXPECT_LT(distance(back->start, X100), 0.5 * distance(back->carried, X100));

  std::vector<Eigen::Affine3d> twisted = Bend(105);
  twisted[1] = twisted[1] * Eigen::AngleAxisd(0.05, Eigen::Vector3d::UnitX());  // about the bone's axis at rest
  absl::StatusOr<ElasticModel::Prediction> across = c.model->NextStart(h, twisted);
  ASSERT_TRUE(across.ok()) << across.status();
  EXPECT_NEAR(across->continuation, 0.0, 0.05);

  const RowMatrixX3d X85 = solve(85), X90 = solve(90), X95 = solve(95);
  absl::StatusOr<ElasticModel::Prediction> turn = c.model->NextStart(history(85, 90, X85, X90), Bend(95));
  ASSERT_TRUE(turn.ok()) << turn.status();
  EXPECT_NEAR(turn->continuation, 1.0, 1e-9);
  EXPECT_GT(c.model->Energy(turn->start), c.model->Energy(turn->carried));
  ElasticReport refused;
  ASSERT_TRUE(c.model->Solve(Bend(95), turn->Starts(), session, &refused).ok());
  EXPECT_EQ(refused.start_index, 1) << "the carried start, the lower energy";
  EXPECT_NEAR(refused.initial_energy, c.model->Energy(turn->carried), 1e-9 * refused.initial_energy);
  const RowMatrixX3d wrong(3, 3);
  EXPECT_EQ(c.model->Solve(Bend(95), {&turn->start, &wrong}, session).status().code(),
            absl::StatusCode::kInvalidArgument);

  ElasticModel::FrameHistory broken = h;
  broken.correction.conservativeResize(3, 3);
  EXPECT_EQ(c.model->NextStart(broken, Bend(110)).status().code(), absl::StatusCode::kInvalidArgument);
}

// Prediction::enough and ElasticOptions::first_start_enough: in a motion that goes on at one pace
// (100°, 105°, then 106°) the prediction's energy is below 1.25 × the last frame's, so Solve takes
// it after one local step instead of three, and returns exactly what comparing every start gives
// (the prediction is the lowest of them too). After a jump (105° to 150°) the first start is above
// the bound and every start competes. A history without its energy gives no bound.
TEST(ElasticModel, AStartBelowTheLastFramesEnergyBoundIsTakenWithoutTryingTheOthers) {
  CylinderModel c = MakeCylinderModel(20);
  ElasticReport r100, r105;
  absl::StatusOr<RowMatrixX3d> X100 = c.model->Solve(Bend(100), nullptr, ElasticOptions(), &r100);
  absl::StatusOr<RowMatrixX3d> X105 = c.model->Solve(Bend(105), nullptr, ElasticOptions(), &r105);
  ASSERT_TRUE(X100.ok() && X105.ok());
  const ElasticModel::FrameHistory first{Bend(100), *X100, {}, {}, r100.energy.back()};
  absl::StatusOr<ElasticModel::Prediction> at105 = c.model->NextStart(first, Bend(105));
  ASSERT_TRUE(at105.ok()) << at105.status();
  EXPECT_DOUBLE_EQ(at105->enough, 1.25 * r100.energy.back());
  const ElasticModel::FrameHistory h = ElasticModel::NextHistory(first, *at105, Bend(105), *X105, r105.energy.back());
  EXPECT_EQ(h.energy, r105.energy.back());

  absl::StatusOr<ElasticModel::Prediction> on = c.model->NextStart(h, Bend(106));
  ASSERT_TRUE(on.ok()) << on.status();
  ASSERT_TRUE(on->predicted);
  EXPECT_DOUBLE_EQ(on->enough, 1.25 * r105.energy.back());
  EXPECT_LE(c.model->Energy(on->start), on->enough);
  ElasticOptions every;
  every.keep_lower_start = true;
  ElasticOptions bounded = every;
  bounded.first_start_enough = on->enough;
  ElasticReport all, one;
  absl::StatusOr<RowMatrixX3d> X_all = c.model->Solve(Bend(106), on->Starts(), every, &all);
  absl::StatusOr<RowMatrixX3d> X_one = c.model->Solve(Bend(106), on->Starts(), bounded, &one);
  ASSERT_TRUE(X_all.ok() && X_one.ok());
  EXPECT_EQ(all.starts_tried, 3) << "the prediction, the carried start and the default start";
  EXPECT_EQ(all.start_index, 0);
  EXPECT_EQ(one.starts_tried, 1);
  EXPECT_EQ(one.start_index, 0);
  EXPECT_EQ(one.iterations, all.iterations);
  EXPECT_EQ(*X_one, *X_all);

  absl::StatusOr<ElasticModel::Prediction> jump = c.model->NextStart(h, Bend(150));
  ASSERT_TRUE(jump.ok()) << jump.status();
  EXPECT_GT(c.model->Energy(jump->start), jump->enough);
  bounded.first_start_enough = jump->enough;
  ElasticReport far;
  ASSERT_TRUE(c.model->Solve(Bend(150), jump->Starts(), bounded, &far).ok());
  EXPECT_EQ(far.starts_tried, static_cast<int>(jump->Starts().size()) + 1);
  absl::StatusOr<RowMatrixX3d> fallback = c.model->DefaultStart(Bend(150));
  ASSERT_TRUE(fallback.ok());
  double lowest = c.model->Energy(*fallback);
  for (const RowMatrixX3d* start : jump->Starts()) lowest = std::min(lowest, c.model->Energy(*start));
  EXPECT_NEAR(far.initial_energy, lowest, 1e-9 * lowest) << "the lowest of all the starts";

  const ElasticModel::FrameHistory unknown{Bend(105), *X105, {}, {}};
  absl::StatusOr<ElasticModel::Prediction> blind = c.model->NextStart(unknown, Bend(106));
  ASSERT_TRUE(blind.ok());
  EXPECT_EQ(blind->enough, 0.0);
  bounded.first_start_enough = -1.0;
  EXPECT_EQ(c.model->Solve(Bend(106), on->Starts(), bounded).status().code(), absl::StatusCode::kInvalidArgument);
}

// floor_strain: near the rest pose the stopping rule compares the decrease with the energy of a
// uniform 1 % strain instead of the ever smaller E. A 2° bend, whose energy is below that floor,
// stops in fewer iterations than with the relative rule alone, and its nodes are no farther from
// a tightly converged reference than a 90° bend's are from its own. The 90° bend, far above the
// floor, is solved bit for bit as without it.
TEST(ElasticModel, AnEnergyFloorStopsPosesNearRestAsPreciselyAsBentOnes) {
  CylinderModel c = MakeCylinderModel(20);
  const double floor = 0.5 * 0.01 * 0.01 * c.model->energy().volume.sum();
  ElasticOptions relative_only;
  relative_only.floor_strain = 0.0;
  ElasticOptions tight = relative_only;
  tight.relative_tolerance = 1e-13;
  tight.max_iterations = 5000;
  auto error = [&](double degrees, const ElasticOptions& options, ElasticReport* report) {
    absl::StatusOr<RowMatrixX3d> X = c.model->Solve(Bend(degrees), nullptr, options, report);
    absl::StatusOr<RowMatrixX3d> reference = c.model->Solve(Bend(degrees), nullptr, tight);
    EXPECT_TRUE(X.ok() && reference.ok());
    return (*X - *reference).rowwise().norm().maxCoeff();
  };
  ElasticReport floored, relative, bent;
  const double near_rest = error(2, ElasticOptions(), &floored);
  const double near_rest_relative = error(2, relative_only, &relative);
  const double bend = error(90, ElasticOptions(), &bent);
  EXPECT_LT(floored.energy.back(), floor);
  EXPECT_LT(floored.iterations, relative.iterations);
  EXPECT_EQ(floored.stop_reason, "converged");
  EXPECT_LE(near_rest, bend) << "2°: " << near_rest << " (relative rule alone " << near_rest_relative
                             << "), 90°: " << bend;
  double last = floored.initial_energy;
  for (double e : floored.energy) {
    EXPECT_LE(e, last);
    last = e;
  }

  EXPECT_GT(bent.energy.back(), floor);
  absl::StatusOr<RowMatrixX3d> with = c.model->Solve(Bend(90), nullptr, ElasticOptions());
  absl::StatusOr<RowMatrixX3d> without = c.model->Solve(Bend(90), nullptr, relative_only);
  ASSERT_TRUE(with.ok() && without.ok());
  EXPECT_EQ(*with, *without);

  for (double bad : {-0.01, std::nan("")}) {
    ElasticOptions o;
    o.floor_strain = bad;
    EXPECT_EQ(c.model->Solve(Bend(2), nullptr, o).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

// The volume term in closed form, at the start (no iteration). Uniform scaling by s: the nearest
// rotation and the nearest determinant-1 matrix are both I, so E = (1 + κ) ½ (s − 1)² × volume.
// A volume-keeping stretch F = diag(2, 1/√2, 1/√2): the volume term is 0 (V = F) and the ARAP term
// is Σ_e ½ ω_e Σ_edges |(F − I) d̃|² = volume / 6 · |F − I|² (cube cells: Σ d̃ d̃ᵀ = 4h² I).
TEST(ElasticModel, VolumeTermMatchesClosedFormsAtTheStart) {
  CylinderModel c = MakeCylinderModel(16);
  const double volume = c.model->energy().volume.sum();
  const double kappa = 10.0;
  ElasticOptions opt;
  opt.volume_weight = kappa;
  opt.max_iterations = 0;
  for (double s : {0.8, 1.25}) {
    std::vector<Eigen::Affine3d> T(2, Eigen::Affine3d(Eigen::Scaling(s)));
    const RowMatrixX3d start = s * c.model->domain().nodes;
    ElasticReport report;
    ASSERT_TRUE(c.model->Solve(T, &start, opt, &report).ok());
    EXPECT_NEAR(report.initial_energy, (1 + kappa) * 0.5 * (s - 1) * (s - 1) * volume, 1e-9 * volume) << s;
  }
  const Eigen::Matrix3d F = Eigen::Vector3d(2, 1 / std::sqrt(2.0), 1 / std::sqrt(2.0)).asDiagonal();
  std::vector<Eigen::Affine3d> T(2, Eigen::Affine3d(F));
  const RowMatrixX3d start = c.model->domain().nodes * F.transpose();
  ElasticReport report;
  ASSERT_TRUE(c.model->Solve(T, &start, opt, &report).ok());
  EXPECT_NEAR(report.initial_energy, volume / 6 * (F - Eigen::Matrix3d::Identity()).squaredNorm(), 1e-9 * volume);
}

// A 90° elbow bend: the plain gold standard (κ = 0, Poisson ratio 0) lets the bent cylinder lose
// volume; with κ = 100 it keeps it far better, the combined energy never increases, the bones'
// nodes stay pinned, and the ARAP part is no lower than the κ = 0 optimum's.
TEST(ElasticModel, VolumeTermKeepsABentCylindersVolume) {
  CylinderModel c = MakeCylinderModel(24);
  std::vector<Eigen::Affine3d> T(2, Eigen::Affine3d::Identity());
  const Eigen::Vector3d elbow(1, 0, 0);
  T[1] = Eigen::Translation3d(elbow) * Eigen::AngleAxisd(M_PI / 2, Eigen::Vector3d::UnitZ()) *
         Eigen::Translation3d(-elbow);
  const double v_rest = SignedVolume(c.rig.mesh.V, c.rig.mesh.F);
  double change[2], arap[2];
  for (int q = 0; q < 2; ++q) {
    ElasticOptions opt;
    opt.volume_weight = q == 0 ? 0.0 : 100.0;
    opt.relative_tolerance = 1e-7;
    opt.max_iterations = 3000;
    ElasticReport report;
    absl::StatusOr<RowMatrixX3d> X = c.model->Solve(T, nullptr, opt, &report);
    ASSERT_TRUE(X.ok()) << X.status();
    for (size_t i = 1; i < report.energy.size(); ++i) {
      EXPECT_LE(report.energy[i], report.energy[i - 1] * (1 + 1e-12)) << "κ " << opt.volume_weight << ", iteration " << i;
    }
    for (int j = 0; j < 2; ++j)
      for (int v : c.model->handle_nodes()[j]) {
        const Eigen::Vector3d want = T[j] * c.model->domain().nodes.row(v).transpose();
        EXPECT_LT((X->row(v).transpose() - want).norm(), 1e-12);
      }
    change[q] = SignedVolume(c.model->ToMesh(*X), c.rig.mesh.F) / v_rest - 1;
    arap[q] = c.model->Energy(*X);
    std::printf("κ = %g: volume change %+.3f%%, ARAP energy %.5g, %d iterations (%s)\n", opt.volume_weight,
                100 * change[q], arap[q], report.iterations, report.stop_reason.c_str());
  }
  EXPECT_LT(std::abs(change[1]), 0.3 * std::abs(change[0]));
  EXPECT_GE(arap[1], arap[0] * (1 - 1e-3));
}

TEST(ElasticModel, VolumeTermNeedsCubeCellsAndAFiniteNonNegativeWeight) {
  absl::StatusOr<VolumeDomain> tet = CubeTetDomain();
  ASSERT_TRUE(tet.ok()) << tet.status();
  auto model = CreateModel(*tet, {{0, 7}});
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<Eigen::Affine3d> T(1, Eigen::Affine3d::Identity());
  ElasticOptions opt;
  opt.volume_weight = 1.0;
  EXPECT_EQ((*model)->Solve(T, nullptr, opt).status().code(), absl::StatusCode::kInvalidArgument);
  opt.volume_weight = 0.0;
  EXPECT_TRUE((*model)->Solve(T, nullptr, opt).ok());
  CylinderModel c = MakeCylinderModel(12);
  T.assign(2, Eigen::Affine3d::Identity());
  for (double bad : {-1.0, std::nan("")}) {
    opt.volume_weight = bad;
    EXPECT_EQ(c.model->Solve(T, nullptr, opt).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(ElasticModel, RejectsWrongTransformCountAndInitialShape) {
  CylinderModel c = MakeCylinderModel(16);
  std::vector<Eigen::Affine3d> T(3, Eigen::Affine3d::Identity());
  EXPECT_EQ(c.model->Solve(T, nullptr, ElasticOptions()).status().code(), absl::StatusCode::kInvalidArgument);
  T.resize(2);
  RowMatrixX3d bad = RowMatrixX3d::Zero(5, 3);
  EXPECT_EQ(c.model->Solve(T, &bad, ElasticOptions()).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ElasticModel, FailsWhenAConnectedPartHasNoPinnedNode) {
  RowMatrixX3d TV(0, 3);
  RowMatrixX4i TT(0, 4);
  CubeTets(Eigen::Vector3d(0, 0, 0), &TV, &TT);
  CubeTets(Eigen::Vector3d(5, 0, 0), &TV, &TT);
  absl::StatusOr<VolumeDomain> tet = BuildTetDomain(TV, TT, TV);
  ASSERT_TRUE(tet.ok()) << tet.status();
  auto model = CreateModel(*tet, {{0, 7}});
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(CreateModel(*tet, {{0, 7}, {8}}).ok());
  EXPECT_EQ(CreateModel(*tet, {{0, 7}, {99}}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ElasticModel, RejectsStartWeightsOfTheWrongShapeOrNotFinite) {
  absl::StatusOr<VolumeDomain> tet = CubeTetDomain();
  ASSERT_TRUE(tet.ok()) << tet.status();
  EXPECT_TRUE(ElasticModel::Create(*tet, {{0, 7}}, Eigen::MatrixXd::Ones(8, 1)).ok());
  EXPECT_EQ(ElasticModel::Create(*tet, {{0, 7}}, Eigen::MatrixXd::Ones(7, 1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ElasticModel::Create(*tet, {{0, 7}}, Eigen::MatrixXd::Ones(8, 2)).status().code(),
            absl::StatusCode::kInvalidArgument);
  Eigen::MatrixXd nan = Eigen::MatrixXd::Ones(8, 1);
  nan(3, 0) = std::nan("");
  EXPECT_EQ(ElasticModel::Create(*tet, {{0, 7}}, nan).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ElasticModel, CancelledSolveReturnsCancelled) {
  CylinderModel c = MakeCylinderModel(16);
  std::atomic<bool> cancel{true};
  Progress progress([](const std::string&, double) {}, &cancel);
  std::vector<Eigen::Affine3d> T(2, Eigen::Affine3d::Identity());
  EXPECT_EQ(c.model->Solve(T, nullptr, ElasticOptions(), nullptr, progress).status().code(),
            absl::StatusCode::kCancelled);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
