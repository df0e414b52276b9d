#include "core/solve/fast_skinning.h"

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/geometry/volume_domain.h"
#include "core/io/deformation_benchmark.h"
#include "core/io/dmat.h"
#include "core/io/gltf.h"
#include "core/io/obj.h"
#include "core/io/off.h"
#include "core/io/tgf.h"
#include "core/rig/bones.h"
#include "core/rig/skeleton.h"
#include "core/skinning/lbs.h"
#include "core/skinning/weights.h"
#include "core/weights/bbw.h"
#include "tests/support/data.h"
#include "tests/support/fixtures.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using Kind = HandleConstraint::Kind;

struct Tube {
  Mesh mesh;
  Eigen::MatrixXd W;   // #V by 2
  Eigen::Vector3d joint0, joint1, tip;
};

// The two-bone tube fixture with dense weights (joint 0 at the origin, joint 1 at x = 1).
Tube MakeTube(int rings = 21, int segments = 16) {
  const Rig rig = testing::MakeTwoBoneTube(rings, segments);
  Tube t;
  t.mesh = rig.mesh;
  t.W = rig.dense_weights.has_value() ? *rig.dense_weights : ToDense(*rig.sparse_weights, 2);
  t.joint0 = BindPosition(rig.skeleton, 0);
  t.joint1 = BindPosition(rig.skeleton, 1);
  t.tip = Eigen::Vector3d(2.0, 0.0, 0.0);
  return t;
}

Affine34 ToAffine34(const Eigen::Affine3d& A) { return A.matrix().topRows<3>(); }
Eigen::Affine3d ToAffine3d(const Affine34& T) {
  Eigen::Affine3d A = Eigen::Affine3d::Identity();
  A.matrix().topRows<3>() = T;
  return A;
}
std::vector<Eigen::Affine3d> ToAffine3d(const std::vector<Affine34>& T) {
  std::vector<Eigen::Affine3d> out;
  for (const auto& t : T) out.push_back(ToAffine3d(t));
  return out;
}

// Deformed mesh V' = M T with the model's weights.
RowMatrixX3d Deform(const Mesh& mesh, const FastModel& model, const std::vector<Affine34>& T) {
  RowMatrixX3d U;
  Lbs(mesh.V, FastModelWeights(model), ToAffine3d(T), &U);
  return U;
}

// The rotation nearest to A (det +1) by an SVD computed here, independently of svd3.
Eigen::Matrix3d TestNearestRotation(const Eigen::Matrix3d& A) {
  Eigen::JacobiSVD<Eigen::Matrix3d> svd(A, Eigen::ComputeFullU | Eigen::ComputeFullV);
  Eigen::Matrix3d D = Eigen::Matrix3d::Identity();
  D(2, 2) = (svd.matrixU() * svd.matrixV().transpose()).determinant() < 0 ? -1.0 : 1.0;
  return svd.matrixU() * D * svd.matrixV().transpose();
}

// Unreduced spokes-and-rims ARAP energy (Eq. 4): one edge set per vertex i — the edges of all
// triangles around i, each with c = ½ cot(angle opposite the edge in that triangle) — and its
// own optimal rotation R_i.
double UnreducedSpokesAndRimsEnergy(const Mesh& mesh, const RowMatrixX3d& U) {
  const int n = static_cast<int>(mesh.V.rows());
  struct Edge { int a, b; double c; };
  std::vector<std::vector<Edge>> sets(n);
  for (int f = 0; f < mesh.F.rows(); ++f) {
    for (int k = 0; k < 3; ++k) {
      const int o = mesh.F(f, k), a = mesh.F(f, (k + 1) % 3), b = mesh.F(f, (k + 2) % 3);
      const Eigen::Vector3d u = mesh.V.row(a) - mesh.V.row(o), v = mesh.V.row(b) - mesh.V.row(o);
      const double cot = u.dot(v) / u.cross(v).norm();
      for (int i = 0; i < 3; ++i) sets[mesh.F(f, i)].push_back({a, b, 0.5 * cot});
    }
  }
  double E = 0.0;
  for (int i = 0; i < n; ++i) {
    Eigen::Matrix3d C = Eigen::Matrix3d::Zero();  // Σ c e' eᵀ
    for (const Edge& e : sets[i]) {
      const Eigen::Vector3d r = mesh.V.row(e.a) - mesh.V.row(e.b);
      const Eigen::Vector3d d = U.row(e.a) - U.row(e.b);
      C += e.c * d * r.transpose();
    }
    const Eigen::Matrix3d R = TestNearestRotation(C);
    for (const Edge& e : sets[i]) {
      const Eigen::Vector3d r = mesh.V.row(e.a) - mesh.V.row(e.b);
      const Eigen::Vector3d d = U.row(e.a) - U.row(e.b);
      E += 0.5 * e.c * (d - R * r).squaredNorm();
    }
  }
  return E;
}

Affine34 Rigid(const Eigen::Vector3d& axis, double angle, const Eigen::Vector3d& about,
               const Eigen::Vector3d& shift = Eigen::Vector3d::Zero()) {
  Eigen::Affine3d A = Eigen::Translation3d(about + shift) *
                      Eigen::AngleAxisd(angle, axis.normalized()) * Eigen::Translation3d(-about);
  return ToAffine34(A);
}

// ---------------------------------------------------------------------------------------------

TEST(FastSkinningTest, AllHandlesFullyConstrainedGivesExactlyLbs) {
  const Tube tube = MakeTube();
  auto model = PrecomputeFast(tube.mesh, tube.W);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(FastModelTotalHandles(**model), 2);
  FastSolver solver(*model);
  ASSERT_TRUE(solver.SetConstraints({{Kind::kFull, Eigen::Vector3d::Zero()}, {Kind::kFull, Eigen::Vector3d::Zero()}}).ok());
  const std::vector<Affine34> targets = {
      Rigid(Eigen::Vector3d(0, 0, 1), 0.3, tube.joint0, Eigen::Vector3d(0.1, -0.2, 0.05)),
      Rigid(Eigen::Vector3d(1, 1, 0), 1.1, tube.joint1, Eigen::Vector3d(0.4, 0.3, 0.0))};
  std::vector<Affine34> T;
  ASSERT_TRUE(solver.Solve(targets, &T).ok());
  ASSERT_EQ(T.size(), 2u);
  for (int j = 0; j < 2; ++j) EXPECT_LT((T[j] - targets[j]).cwiseAbs().maxCoeff(), 1e-12) << j;
  RowMatrixX3d lbs, fast;
  Lbs(tube.mesh.V, tube.W, ToAffine3d(targets), &lbs);
  fast = Deform(tube.mesh, **model, T);
  EXPECT_LT((lbs - fast).cwiseAbs().maxCoeff(), 1e-12 * BoundingBoxDiagonal(tube.mesh.V));
}

// Drags joint 1 of the tube (a bend) from the rest pose with the root fixed and records the
// reduced energy after every iteration: surface and volumetric energies, with extra weights.
TEST(FastSkinningTest, EnergyNeverIncreasesOverIterations) {
  const Tube tube = MakeTube();
  struct Case { const char* name; FastOptions options; };
  std::vector<Case> cases(3);
  cases[0].name = "surface";
  cases[1].name = "surface+4 extra";
  cases[1].options.extra_weights = 4;
  cases[2].name = "voxels+2 extra";
  cases[2].options.energy = FastEnergy::kVolumetric;
  cases[2].options.domain.voxel.resolution = 32;
  cases[2].options.extra_weights = 2;
  for (const Case& c : cases) {
    FastReport report;
    auto model = PrecomputeFast(tube.mesh, tube.W, c.options, &report);
    ASSERT_TRUE(model.ok()) << c.name << ": " << model.status();
    FastSolver solver(*model);
    ASSERT_TRUE(solver.SetConstraints({{Kind::kFull, Eigen::Vector3d::Zero()}, {Kind::kPosition, tube.tip}}).ok());
    std::vector<Affine34> targets(2, Affine34::Identity());
    targets[1].col(3) = Eigen::Vector3d(1.3, 1.1, 0.2);  // tip 2 → about 1.7 from the root
    std::vector<Affine34> T;
    FastSolveReport sr;
    ASSERT_TRUE(solver.Solve(targets, &T, 40, &sr, true).ok());
    ASSERT_EQ(sr.energy.size(), 40u);
    std::printf("[ %s ] m'=%d r=%d precompute %.3fs energy %.6g → %.6g → %.6g\n", c.name,
                FastModelTotalHandles(**model), report.clusters, report.seconds, sr.energy[0],
                sr.energy[9], sr.energy.back());
    EXPECT_GT(sr.energy[0], 0.0);
    for (size_t i = 1; i < sr.energy.size(); ++i) {
      // Float per-frame matrices: allow rounding of 1e-6 of the first energy.
      EXPECT_LE(sr.energy[i], sr.energy[i - 1] + 1e-6 * sr.energy[0]) << c.name << " at " << i;
    }
    EXPECT_LT(sr.energy.back(), sr.energy[0]);
    EXPECT_NEAR(solver.Energy(T), sr.energy.back(), 1e-12 * sr.energy[0]);
  }
}

// The tube with 3 extra weights, its root held turned by 0.4 about y and its tip dragged to
// (1.2, 0.9, -0.5).
struct DraggedTube {
  Tube tube = MakeTube();
  absl::StatusOr<FastModelPtr> model;
  std::vector<HandleConstraint> constraints{{Kind::kFull, Eigen::Vector3d::Zero()}, {Kind::kPosition, tube.tip}};
  std::vector<Affine34> targets{Rigid(Eigen::Vector3d(0, 1, 0), 0.4, tube.joint0), Affine34::Identity()};
  DraggedTube() {
    FastOptions options;
    options.extra_weights = 3;
    model = PrecomputeFast(tube.mesh, tube.W, options);
    targets[1].col(3) = Eigen::Vector3d(1.2, 0.9, -0.5);
  }
};

// Solvers on one model share the solution operators of the constraint sets used lately (a
// session's or a call's first frame with a set another used cost a KKT solve each time: 1.3 s
// with 256 extra weights). A solver served from the cache gives the transforms of one that built
// the operators itself on a separately precomputed, identical model; the cache keeps 4 sets.
TEST(FastSkinningTest, SolversShareTheOperatorsOfRecentConstraintSets) {
  const DraggedTube dragged, fresh;
  ASSERT_TRUE(dragged.model.ok() && fresh.model.ok());
  const FastModel& model = **dragged.model;
  const int mm = FastModelTotalHandles(model);
  EXPECT_EQ(FastModelCachedConstraintSets(model), 0);
  {
    FastSolver first(*dragged.model);
    ASSERT_TRUE(first.SetConstraints(dragged.constraints).ok());
  }
  EXPECT_EQ(FastModelCachedConstraintSets(model), 1) << "kept after the solver that built them is gone";
  FastSolver cached(*dragged.model), built(*fresh.model);
  ASSERT_TRUE(cached.SetConstraints(dragged.constraints).ok());
  EXPECT_EQ(FastModelCachedConstraintSets(model), 1) << "the same set is not built twice";
  ASSERT_TRUE(built.SetConstraints(dragged.constraints).ok());
  std::vector<Affine34> Tc, Tb;
  ASSERT_TRUE(cached.Solve(dragged.targets, &Tc, 10).ok());
  ASSERT_TRUE(built.Solve(dragged.targets, &Tb, 10).ok());
  ASSERT_EQ(static_cast<int>(Tc.size()), mm);
  for (int j = 0; j < mm; ++j) EXPECT_EQ(Tc[j], Tb[j]) << "handle " << j;
  // Other sets (the dragged point moved): the oldest leave beyond 4; the solvers using one keep it.
  for (int k = 1; k <= 5; ++k) {
    std::vector<HandleConstraint> c = dragged.constraints;
    c[1].point += Eigen::Vector3d(0.01 * k, 0, 0);
    FastSolver other(*dragged.model);
    ASSERT_TRUE(other.SetConstraints(c).ok());
    EXPECT_EQ(FastModelCachedConstraintSets(model), std::min(1 + k, 4));
  }
  ASSERT_TRUE(cached.Solve(dragged.targets, &Tc, 10).ok());
  ASSERT_TRUE(built.Solve(dragged.targets, &Tb, 10).ok());
  for (int j = 0; j < mm; ++j) EXPECT_EQ(Tc[j], Tb[j]) << "handle " << j;
}

// Far from the model too: the float solve used to lose the pose to rounding there (off by 5 units
// at 8e7, which a tolerance relative to the translation let through).
TEST(FastSkinningTest, TranslatingEveryConstraintTranslatesTheResult) {
  const DraggedTube dragged;
  const Tube& tube = dragged.tube;
  const absl::StatusOr<FastModelPtr>& model = dragged.model;
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<HandleConstraint>& constraints = dragged.constraints;
  const std::vector<Affine34>& targets = dragged.targets;
  const int mm = FastModelTotalHandles(**model);
  for (double far : {1.0, 1e7}) {
    const Eigen::Vector3d t = far * Eigen::Vector3d(3.0, -7.0, 2.5);
    std::vector<Affine34> moved = targets;
    for (auto& m : moved) m.col(3) += t;
    FastSolver a(*model), b(*model);
    ASSERT_TRUE(a.SetConstraints(constraints).ok());
    ASSERT_TRUE(b.SetConstraints(constraints).ok());
    std::vector<Affine34> Ta(mm, Affine34::Identity()), Tb = Ta;
    for (auto& m : Tb) m.col(3) += t;  // the translated warm start
    ASSERT_TRUE(a.Solve(targets, &Ta, 25).ok());
    ASSERT_TRUE(b.Solve(moved, &Tb, 25).ok());
    // The float solve's own accuracy, plus the doubles' rounding of the translation.
    const double tol = 1e-6 * BoundingBoxDiagonal(tube.mesh.V) + 1e-14 * t.norm();
    double worst = 0.0;
    for (int j = 0; j < mm; ++j) {
      Affine34 expected = Ta[j];
      expected.col(3) += t;
      worst = std::max(worst, (Tb[j] - expected).cwiseAbs().maxCoeff());
    }
    std::printf("[ translation ] |t| = %.3g, worst transform deviation %.3g (tolerance %.3g)\n", t.norm(), worst,
                tol);
    EXPECT_LT(worst, tol);
    const RowMatrixX3d Ua = Deform(tube.mesh, **model, Ta), Ub = Deform(tube.mesh, **model, Tb);
    EXPECT_LT(((Ub.rowwise() - t.transpose()) - Ua).cwiseAbs().maxCoeff(), tol);
  }
}

// A session's first frame has no warm start (empty T): the solver starts from the rest pose
// carried with the constraints, so a character first posed far away gets, after the same few
// iterations, the translated result of the same frame near the origin, to rounding: the same
// float solve runs on the same numbers. It used to start from the rest pose at the origin, and
// after 3 iterations was off by 3.4e-7 at |t| = 80 and 6.2e-5 at |t| = 8e3 (now 4e-15 and 5e-13).
TEST(FastSkinningTest, FirstFrameFarAwayIsTheTranslatedFirstFrame) {
  const DraggedTube dragged;
  const absl::StatusOr<FastModelPtr>& model = dragged.model;
  ASSERT_TRUE(model.ok()) << model.status();
  const double diagonal = BoundingBoxDiagonal(dragged.tube.mesh.V);
  for (double far : {10.0, 1e3}) {
    const Eigen::Vector3d t = far * Eigen::Vector3d(3.0, -7.0, 2.5);
    std::vector<Affine34> moved = dragged.targets;
    for (auto& m : moved) m.col(3) += t;
    FastSolver a(*model), b(*model);
    ASSERT_TRUE(a.SetConstraints(dragged.constraints).ok());
    ASSERT_TRUE(b.SetConstraints(dragged.constraints).ok());
    std::vector<Affine34> Ta, Tb;  // first use: no warm start
    ASSERT_TRUE(a.Solve(dragged.targets, &Ta, 3).ok());
    ASSERT_TRUE(b.Solve(moved, &Tb, 3).ok());
    ASSERT_EQ(Ta.size(), Tb.size());
    double worst = 0.0;
    for (size_t j = 0; j < Ta.size(); ++j) {
      Affine34 expected = Ta[j];
      expected.col(3) += t;
      worst = std::max(worst, (Tb[j] - expected).cwiseAbs().maxCoeff());
    }
    std::printf("[ first frame ] |t| = %.3g, worst transform deviation %.3g\n", t.norm(), worst);
    EXPECT_LT(worst, 1e-9 * diagonal + 1e-14 * t.norm()) << "|t| = " << t.norm();
  }
}

// The energy does not change when every handle moves by one translation; far from the origin it
// used to lose every digit to cancellation (negative at 1e8).
TEST(FastSkinningTest, EnergyIsTheSameFarFromTheOrigin) {
  const DraggedTube dragged;
  ASSERT_TRUE(dragged.model.ok()) << dragged.model.status();
  FastSolver solver(*dragged.model);
  ASSERT_TRUE(solver.SetConstraints(dragged.constraints).ok());
  std::vector<Affine34> T(FastModelTotalHandles(**dragged.model), Affine34::Identity());
  ASSERT_TRUE(solver.Solve(dragged.targets, &T, 3).ok());  // a bent, not yet converged state: E > 0
  const double e0 = solver.Energy(T);
  ASSERT_GT(e0, 0.0);
  for (double distance : {1.0, 1e4, 1e8}) {
    std::vector<Affine34> moved = T;
    for (auto& m : moved) m.col(3) += distance * Eigen::Vector3d(1, -0.7, 0.3);
    const double e = solver.Energy(moved);
    std::printf("[ far ] translation %g: energy %.12g (at the origin %.12g)\n", distance, e, e0);
    // The translations themselves hold only ~16 digits: at 1e8 about 1e-8 of the tube's size.
    EXPECT_NEAR(e, e0, 1e-6 * e0) << "translation " << distance;
  }
}

// With r = #V every spokes-and-rims edge set has its own rotation, so the reduced energy of T
// must equal the unreduced energy (Eq. 4) of V' = M T, computed here from the mesh.
TEST(FastSkinningTest, OneClusterPerElementMatchesUnreducedArapEnergy) {
  const Tube tube = MakeTube(7, 8);
  FastOptions options;
  options.clusters = static_cast<int>(tube.mesh.V.rows());
  auto model = PrecomputeFast(tube.mesh, tube.W, options);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(FastModelClusters(**model), tube.mesh.V.rows());
  FastSolver solver(*model);
  ASSERT_TRUE(solver.SetConstraints({{Kind::kFull, Eigen::Vector3d::Zero()}, {Kind::kFree, Eigen::Vector3d::Zero()}}).ok());
  std::mt19937 gen(7);
  std::normal_distribution<double> noise(0.0, 0.2);
  for (int trial = 0; trial < 4; ++trial) {
    std::vector<Affine34> T = {
        Rigid(Eigen::Vector3d(0.3, 1, 0.2), 0.2 * trial, tube.joint0),
        Rigid(Eigen::Vector3d(0, 0.5, 1), 0.7 + 0.5 * trial, tube.joint1)};
    if (trial > 0) {  // general affine maps (shear, scale) too
      for (auto& t : T) t += Affine34::NullaryExpr([&]() { return noise(gen); });
    }
    const double reduced = solver.Energy(T);
    const double unreduced =
        UnreducedSpokesAndRimsEnergy(tube.mesh, Deform(tube.mesh, **model, T));
    std::printf("[ r = #V ] trial %d: reduced %.12g unreduced %.12g\n", trial, reduced, unreduced);
    EXPECT_NEAR(reduced, unreduced, 1e-8 * unreduced);
  }
  // And the rest pose has zero energy.
  EXPECT_NEAR(solver.Energy({Affine34::Identity(), Affine34::Identity()}), 0.0, 1e-12);
}

TEST(FastSkinningTest, SerializedModelRoundTripsAndCorruptionIsDataLoss) {
  const Tube tube = MakeTube(9, 8);
  FastOptions options;
  options.extra_weights = 2;
  auto model = PrecomputeFast(tube.mesh, tube.W, options);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string bytes = SerializeFastModel(**model);
  auto parsed = ParseFastModel(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(SerializeFastModel(**parsed), bytes);
  EXPECT_EQ(FastModelWeights(**parsed), FastModelWeights(**model));
  EXPECT_EQ(FastModelClusters(**parsed), FastModelClusters(**model));

  EXPECT_EQ(ParseFastModel(bytes.substr(0, bytes.size() - 1)).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(ParseFastModel(bytes + "x").status().code(), absl::StatusCode::kDataLoss);
  std::string bad_magic = bytes;
  bad_magic[0] = 'X';
  EXPECT_EQ(ParseFastModel(bad_magic).status().code(), absl::StatusCode::kDataLoss);
  std::string bad_version = bytes;
  bad_version[8] = 9;
  EXPECT_EQ(ParseFastModel(bad_version).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ParseFastModel("").status().code(), absl::StatusCode::kDataLoss);
}

TEST(FastSkinningTest, RejectsWrongCountsAndUnpinnedTranslation) {
  const Tube tube = MakeTube(9, 8);
  auto model = PrecomputeFast(tube.mesh, tube.W);
  ASSERT_TRUE(model.ok());
  FastSolver solver(*model);
  EXPECT_EQ(solver.SetConstraints({{Kind::kFull, Eigen::Vector3d::Zero()}}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(solver.SetConstraints({{Kind::kFree, Eigen::Vector3d::Zero()}, {Kind::kFree, Eigen::Vector3d::Zero()}}).code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<Affine34> T;
  EXPECT_EQ(solver.Solve({Affine34::Identity(), Affine34::Identity()}, &T).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(PrecomputeFast(tube.mesh, tube.W.leftCols(1) * 0.5).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// Botsch–Sorkine bar: 135° twist.

// Mean squared distance of the xy offsets from their centroid (∝ cross-section area for a
// similar shape) and the rotation angle about z from rest to deformed, of vertices in a band.
void CrossSection(const RowMatrixX3d& V, const RowMatrixX3d& U, const std::vector<int>& band,
                  double* area_ratio, double* angle) {
  Eigen::Vector2d c0 = Eigen::Vector2d::Zero(), c1 = Eigen::Vector2d::Zero();
  for (int i : band) {
    c0 += V.row(i).head<2>().transpose();
    c1 += U.row(i).head<2>().transpose();
  }
  c0 /= band.size();
  c1 /= band.size();
  double m0 = 0, m1 = 0, cross = 0, dot = 0;
  for (int i : band) {
    const Eigen::Vector2d p = V.row(i).head<2>().transpose() - c0;
    const Eigen::Vector2d q = U.row(i).head<2>().transpose() - c1;
    m0 += p.squaredNorm();
    m1 += q.squaredNorm();
    cross += p.x() * q.y() - p.y() * q.x();
    dot += p.dot(q);
  }
  *area_ratio = m1 / m0;
  *angle = std::atan2(cross, dot);
}

TEST(FastSkinningTest, BarTwistIsReproducedWithoutCollapse) {
  const std::string dir = testing::DataPath("deformation-benchmark/bar/");
  SKINNING_REQUIRE_DATA(dir + "bar.off");
  SKINNING_REQUIRE_DATA(dir + "bar.sel");
  SKINNING_REQUIRE_DATA(dir + "bar.def");
  auto mesh = ReadOff(dir + "bar.off");
  auto sel = ReadSel(dir + "bar.sel");
  auto def = ReadDef(dir + "bar.def");
  ASSERT_TRUE(mesh.ok() && sel.ok() && def.ok());
  const int n = static_cast<int>(mesh->V.rows());
  ASSERT_EQ(static_cast<int>(sel->size()), n);

  // Region weights: BBW on the voxel domain, each region pinned at the corners of the cells
  // that hold its vertices.
  VoxelGridOptions vo;
  vo.resolution = 64;
  auto domain = BuildVoxelDomain(*mesh, vo);
  ASSERT_TRUE(domain.ok()) << domain.status();
  std::vector<std::vector<int>> pins(2);
  std::vector<int> owner(domain->num_nodes(), -1);
  const Eigen::Vector3i& cells = domain->cells;
  for (int i = 0; i < n; ++i) {
    const int region = (*sel)[i] == 0 ? 0 : (*sel)[i] == 2 ? 1 : -1;
    if (region < 0) continue;
    Eigen::Vector3i c;
    for (int d = 0; d < 3; ++d) {
      c(d) = std::clamp(static_cast<int>(std::floor((mesh->V(i, d) - domain->origin(d)) /
                                                    domain->spacing)),
                        0, cells(d) - 1);
    }
    for (int corner = 0; corner < 8; ++corner) {
      const int x = c.x() + (corner & 1), y = c.y() + ((corner >> 1) & 1),
                z = c.z() + ((corner >> 2) & 1);
      const int node = domain->grid_node[x + (cells.x() + 1) * (y + (cells.y() + 1) * z)];
      ASSERT_GE(node, 0);
      ASSERT_NE(owner[node], 1 - region) << "regions share a node";
      if (owner[node] < 0) {
        owner[node] = region;
        pins[region].push_back(node);
      }
    }
  }
  auto WN = BoundedBiharmonicWeights(*domain, pins);
  ASSERT_TRUE(WN.ok()) << WN.status();
  Eigen::MatrixXd W = domain->to_mesh * *WN;
  NormalizeRows(&W);

  // The volumetric (voxel) energy is the one asserted: spokes and rims model a thin shell,
  // which narrows under a twist (logged for comparison, only checked not to collapse).
  for (const FastEnergy energy : {FastEnergy::kVolumetric, FastEnergy::kSurface}) {
    const bool volumetric = energy == FastEnergy::kVolumetric;
    FastOptions options;
    options.energy = energy;
    options.extra_weights = 20;
    FastReport report;
    auto model = PrecomputeFast(*mesh, W, options, &report);
    ASSERT_TRUE(model.ok()) << model.status();
    FastSolver solver(*model);
    ASSERT_TRUE(solver.SetConstraints({{Kind::kFull, Eigen::Vector3d::Zero()}, {Kind::kFull, Eigen::Vector3d::Zero()}}).ok());

    // The twist as an animation: 9 frames of 15°, 15 iterations each, then 30 more.
    const Eigen::Affine3d full = *def;
    const Eigen::AngleAxisd twist(full.linear());
    std::vector<Affine34> T;
    std::vector<Affine34> targets(2, Affine34::Identity());
    const int frames = 9;
    for (int f = 1; f <= frames; ++f) {
      Eigen::Affine3d step = Eigen::Affine3d::Identity();
      step.linear() =
          Eigen::AngleAxisd(twist.angle() * f / frames, twist.axis()).toRotationMatrix();
      step.translation() = full.translation() * f / frames;
      targets[1] = ToAffine34(f == frames ? full : step);
      ASSERT_TRUE(solver.Solve(targets, &T, f == frames ? 45 : 15).ok());
    }
    const RowMatrixX3d U = Deform(*mesh, **model, T);

    // Handle region: exactly bar.def; fixed region: exactly at rest.
    double handle_err = 0, fixed_err = 0;
    double zmax_fixed = -1e300, zmin_handle = 1e300;
    for (int i = 0; i < n; ++i) {
      const Eigen::Vector3d v = mesh->V.row(i);
      if ((*sel)[i] == 2) {
        handle_err = std::max(handle_err, (U.row(i).transpose() - full * v).norm());
        zmin_handle = std::min(zmin_handle, v.z());
      } else if ((*sel)[i] == 0) {
        fixed_err = std::max(fixed_err, (U.row(i).transpose() - v).norm());
        zmax_fixed = std::max(zmax_fixed, v.z());
      }
    }
    const double diag = BoundingBoxDiagonal(mesh->V);
    EXPECT_LT(handle_err, 1e-9 * diag);
    EXPECT_LT(fixed_err, 1e-9 * diag);

    // The middle cross-section.
    const double zmid = 0.5 * (zmax_fixed + zmin_handle);
    std::vector<int> band;
    for (int i = 0; i < n; ++i) {
      if (std::abs(mesh->V(i, 2) - zmid) < 1.5) band.push_back(i);
    }
    ASSERT_GT(band.size(), 20u);
    double area_ratio = 0, angle = 0;
    CrossSection(mesh->V, U, band, &area_ratio, &angle);
    // Plain LBS with the same two region weights, for comparison (the candy wrapper).
    RowMatrixX3d lbs;
    Lbs(mesh->V, W, std::vector<Eigen::Affine3d>{Eigen::Affine3d::Identity(), full}, &lbs);
    double lbs_area = 0, lbs_angle = 0;
    CrossSection(mesh->V, lbs, band, &lbs_area, &lbs_angle);
    const double deg = 180.0 / M_PI;
    std::printf(
        "[ bar, %s ] m'=%d r=%d precompute %.2fs; handle error %.1e, middle section (z=%.1f, %zu "
        "vertices): area ratio %.3f, rotation %.1f° (twist %.1f°); plain LBS: area ratio %.3f, "
        "rotation %.1f°\n",
        volumetric ? "voxels" : "spokes+rims", FastModelTotalHandles(**model), report.clusters,
        report.seconds, handle_err, zmid, band.size(), area_ratio, angle * deg,
        twist.angle() * deg, lbs_area, lbs_angle * deg);
    EXPECT_NEAR(area_ratio, 1.0, volumetric ? 0.1 : 0.3);
    EXPECT_NEAR(angle, 0.5 * twist.angle(), 0.25 * twist.angle());
  }
}

// ---------------------------------------------------------------------------------------------
// Shape-aware IK: root fixed, the hand's end point dragged, everything else free.

struct ChainCheck {
  double max_length_error = 0.0;  // relative
  double constraint_error = 0.0;  // relative to the bounding-box diagonal
};

// Rotates `point` about `pivot` (axis ⟂ to point − pivot and `up`) so that it moves by `dist`.
Eigen::Vector3d Swing(const Eigen::Vector3d& point, const Eigen::Vector3d& pivot,
                      const Eigen::Vector3d& up, double dist) {
  const Eigen::Vector3d arm = point - pivot;
  const double angle = 2.0 * std::asin(std::min(1.0, dist / (2.0 * arm.norm())));
  const Eigen::Vector3d axis = arm.cross(up).normalized();
  return pivot + Eigen::AngleAxisd(angle, axis) * arm;
}

TEST(FastSkinningTest, ArmAndCesiumManDraggedByTheHandKeepBoneLengths) {
  // --- libigl arm: 4-bone chain.
  {
    const std::string dir = testing::DataPath("libigl/arm/");
    SKINNING_REQUIRE_DATA(dir + "arm.obj");
    SKINNING_REQUIRE_DATA(dir + "arm.tgf");
    SKINNING_REQUIRE_DATA(dir + "arm-weights.dmat");
    auto mesh = ReadObj(dir + "arm.obj");
    auto tgf = ReadTgf(dir + "arm.tgf");
    auto W = ReadDmat(dir + "arm-weights.dmat");
    ASSERT_TRUE(mesh.ok() && tgf.ok() && W.ok());
    const int m = static_cast<int>(tgf->E.rows());
    ASSERT_EQ(W->cols(), m);
    // Root bone: the one whose head is no bone's tail; hand bone: whose tail is no bone's head.
    int root = -1, hand = -1;
    double arm_length = 0;
    for (int j = 0; j < m; ++j) {
      bool head_is_tail = false, tail_is_head = false;
      for (int k = 0; k < m; ++k) {
        head_is_tail |= tgf->E(k, 1) == tgf->E(j, 0);
        tail_is_head |= tgf->E(k, 0) == tgf->E(j, 1);
      }
      if (!head_is_tail) root = j;
      if (!tail_is_head) hand = j;
      arm_length += (tgf->C.row(tgf->E(j, 1)) - tgf->C.row(tgf->E(j, 0))).norm();
    }
    ASSERT_GE(root, 0);
    ASSERT_GE(hand, 0);
    const Eigen::Vector3d tip = tgf->C.row(tgf->E(hand, 1));
    const Eigen::Vector3d pivot = tgf->C.row(tgf->E(root, 1));  // the root bone's far end
    const Eigen::Vector3d target = Swing(tip, pivot, Eigen::Vector3d::UnitZ(), 0.2 * arm_length);

    FastReport report;
    auto model = PrecomputeFast(*mesh, *W, {}, &report);
    ASSERT_TRUE(model.ok()) << model.status();
    FastSolver solver(*model);
    std::vector<HandleConstraint> cons(m);
    cons[root].kind = Kind::kFull;
    cons[hand] = {Kind::kPosition, tip};
    ASSERT_TRUE(solver.SetConstraints(cons).ok());
    std::vector<Affine34> targets(m, Affine34::Identity());
    targets[hand].col(3) = target;
    std::vector<Affine34> T;
    ASSERT_TRUE(solver.Solve(targets, &T, 50).ok());
    const double diag = BoundingBoxDiagonal(mesh->V);
    const double cerr = (T[hand] * tip.homogeneous() - target).norm() / diag;
    EXPECT_LT(cerr, 1e-6);
    EXPECT_LT((T[root] - Affine34::Identity()).cwiseAbs().maxCoeff(), 1e-12);
    std::printf("[ arm ] m=%d r=%d precompute %.2fs, tip dragged %.3f (20%% of %.3f): "
                "constraint error %.2g of diag\n",
                m, report.clusters, report.seconds, (target - tip).norm(), arm_length, cerr);
    for (int j = 0; j < m; ++j) {
      const Eigen::Vector3d a = tgf->C.row(tgf->E(j, 0)), b = tgf->C.row(tgf->E(j, 1));
      const double rest = (b - a).norm();
      const double now = (T[j] * b.homogeneous() - T[j] * a.homogeneous()).norm();
      std::printf("[ arm ]   bone %d: rest length %.4f, deformed %.4f (%+.2f%%)\n", j, rest, now,
                  100.0 * (now / rest - 1.0));
      EXPECT_NEAR(now / rest, 1.0, 0.02) << "arm bone " << j;
    }
  }

  // --- CesiumMan: 19 skin joints, left arm chain by name.
  {
    const std::string path = testing::DataPath("gltf/CesiumMan/CesiumMan.glb");
    SKINNING_REQUIRE_DATA(path);
    auto ch = ReadGltf(path);
    ASSERT_TRUE(ch.ok()) << ch.status();
    const int m = ch->num_skin_joints;
    const Eigen::MatrixXd W = ToDense(ch->weights, m);
    const Skeleton& sk = ch->skeleton;
    // Left arm: the joints named "arm_joint_L"; the hand is the one without an arm child, the
    // shoulder the one whose parent is not an arm joint.
    std::vector<int> arm;
    for (int j = 0; j < m; ++j) {
      if (sk.joints[j].name.find("arm_joint_L") != std::string::npos) arm.push_back(j);
    }
    ASSERT_GE(arm.size(), 2u) << "no left arm joints found by name";
    auto in_arm = [&](int j) { return std::find(arm.begin(), arm.end(), j) != arm.end(); };
    int hand = -1, shoulder = -1;
    for (int j : arm) {
      bool has_arm_child = false;
      for (int k : arm) has_arm_child |= sk.joints[k].parent == j;
      if (!has_arm_child) hand = j;
      if (!in_arm(sk.joints[j].parent)) shoulder = j;
    }
    ASSERT_GE(hand, 0);
    ASSERT_GE(shoulder, 0);
    int root = 0;
    while (sk.joints[root].parent >= 0 && sk.joints[root].parent < m) root = sk.joints[root].parent;
    auto handles = JointHandles(sk);
    ASSERT_TRUE(handles.ok()) << handles.status();
    double arm_length = 0;
    for (int j : arm) {
      for (int k : arm) {
        if (sk.joints[k].parent == j) {
          arm_length += (BindPosition(sk, k) - BindPosition(sk, j)).norm();
        }
      }
    }
    const Eigen::Vector3d hand_p = BindPosition(sk, hand);
    const Eigen::Vector3d shoulder_p = BindPosition(sk, shoulder);
    // Up: the axis of the mesh's largest extent (the standing character's height).
    Eigen::Vector3d extent = ch->mesh.V.colwise().maxCoeff() - ch->mesh.V.colwise().minCoeff();
    int up_axis;
    extent.maxCoeff(&up_axis);
    const Eigen::Vector3d target =
        Swing(hand_p, shoulder_p, Eigen::Vector3d::Unit(up_axis), 0.2 * arm_length);

    FastOptions options;
    FastReport report;
    auto model = PrecomputeFast(ch->mesh, W, options, &report);
    ASSERT_TRUE(model.ok()) << model.status();
    FastSolver solver(*model);
    std::vector<HandleConstraint> cons(m);
    cons[root].kind = Kind::kFull;
    cons[hand] = {Kind::kPosition, hand_p};
    ASSERT_TRUE(solver.SetConstraints(cons).ok());
    std::vector<Affine34> targets(m, Affine34::Identity());
    targets[hand].col(3) = target;
    std::vector<Affine34> T;
    ASSERT_TRUE(solver.Solve(targets, &T, 50).ok());
    const double diag = BoundingBoxDiagonal(ch->mesh.V);
    const double cerr = (T[hand] * hand_p.homogeneous() - target).norm() / diag;
    EXPECT_LT(cerr, 1e-6);
    std::printf("[ CesiumMan ] m=%d r=%d precompute %.2fs, root %s, hand %s dragged %.3f (20%% "
                "of arm %.3f): constraint error %.2g of diag\n",
                m, report.clusters, report.seconds, sk.joints[root].name.c_str(),
                sk.joints[hand].name.c_str(), (target - hand_p).norm(), arm_length, cerr);
    for (int j : arm) {
      for (const Segment& seg : (*handles)[j].segments) {
        if (seg.IsPoint()) continue;
        const double rest = (seg.b - seg.a).norm();
        const double now = (T[j] * seg.b.homogeneous() - T[j] * seg.a.homogeneous()).norm();
        std::printf("[ CesiumMan ]   %s: rest length %.4f, deformed %.4f (%+.2f%%)\n",
                    sk.joints[j].name.c_str(), rest, now, 100.0 * (now / rest - 1.0));
        EXPECT_NEAR(now / rest, 1.0, 0.02) << sk.joints[j].name;
      }
    }
  }
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
