#include "core/weights/bbw.h"

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <Eigen/SparseCore>
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/weights/bbw_internal.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using SpMat = Eigen::SparseMatrix<double>;

// A chain of nodes on the x axis at `x` (ascending): K is the 1D linear finite-element stiffness
// (1/len per segment), mass the lumped segment lengths (half of each adjacent segment).
VolumeDomain MakeChain(const std::vector<double>& x) {
  const int n = static_cast<int>(x.size());
  VolumeDomain d;
  d.kind = VolumeDomain::Kind::kTetMesh;
  d.nodes = RowMatrixX3d::Zero(n, 3);
  d.mass = Eigen::VectorXd::Zero(n);
  std::vector<Eigen::Triplet<double>> t;
  for (int i = 0; i < n; ++i) d.nodes(i, 0) = x[i];
  for (int e = 0; e + 1 < n; ++e) {
    const double len = x[e + 1] - x[e];
    const double k = 1.0 / len;
    t.emplace_back(e, e, k);
    t.emplace_back(e + 1, e + 1, k);
    t.emplace_back(e, e + 1, -k);
    t.emplace_back(e + 1, e, -k);
    d.mass(e) += len / 2;
    d.mass(e + 1) += len / 2;
  }
  d.K.resize(n, n);
  d.K.setFromTriplets(t.begin(), t.end());
  return d;
}

std::vector<double> Uniform(int n, double length) {
  std::vector<double> x(n);
  for (int i = 0; i < n; ++i) x[i] = length * i / (n - 1);
  return x;
}

// A voxel domain: the cells (cx by cy by cz, side h) for which inside(i, j, k) holds, trilinear
// (Q1) stiffness integrated by 2×2×2 Gauss quadrature, mass h³/8 per cell corner. `grid_node`
// maps grid point (i, j, k) → node index or -1, with index i + (cx+1)(j + (cy+1) k).
struct VoxelFixture {
  VolumeDomain domain;
  std::vector<int> grid_node;
  int px = 0, py = 0, pz = 0;  // grid points per axis
  int Node(int i, int j, int k) const { return grid_node[i + px * (j + py * k)]; }
};

Eigen::Matrix<double, 8, 8> Q1ElementStiffness(double h) {
  const double g[2] = {0.5 - 0.5 / std::sqrt(3.0), 0.5 + 0.5 / std::sqrt(3.0)};
  Eigen::Matrix<double, 8, 8> ke = Eigen::Matrix<double, 8, 8>::Zero();
  for (int qx = 0; qx < 2; ++qx) {
    for (int qy = 0; qy < 2; ++qy) {
      for (int qz = 0; qz < 2; ++qz) {
        const double xi[3] = {g[qx], g[qy], g[qz]};
        Eigen::Matrix<double, 3, 8> grad;
        for (int a = 0; a < 8; ++a) {
          const int c[3] = {a & 1, (a >> 1) & 1, (a >> 2) & 1};
          double f[3], df[3];
          for (int dim = 0; dim < 3; ++dim) {
            f[dim] = c[dim] ? xi[dim] : 1.0 - xi[dim];
            df[dim] = c[dim] ? 1.0 : -1.0;
          }
          grad(0, a) = df[0] * f[1] * f[2];
          grad(1, a) = f[0] * df[1] * f[2];
          grad(2, a) = f[0] * f[1] * df[2];
        }
        ke += 0.125 * grad.transpose() * grad;  // quadrature weight (½)³ on the unit cube
      }
    }
  }
  return h * ke;  // ∇ scales by 1/h, the volume by h³
}

VoxelFixture MakeVoxels(int cx, int cy, int cz, double h,
                        const std::function<bool(int, int, int)>& inside) {
  VoxelFixture f;
  f.px = cx + 1;
  f.py = cy + 1;
  f.pz = cz + 1;
  f.grid_node.assign(f.px * f.py * f.pz, -1);
  VolumeDomain& d = f.domain;
  d.kind = VolumeDomain::Kind::kVoxelGrid;
  d.spacing = h;
  d.cells = Eigen::Vector3i(cx, cy, cz);
  d.cell_inside.assign(static_cast<size_t>(cx) * cy * cz, 0);
  std::vector<std::array<int, 8>> elements;
  std::vector<Eigen::Vector3d> positions;
  for (int k = 0; k < cz; ++k) {
    for (int j = 0; j < cy; ++j) {
      for (int i = 0; i < cx; ++i) {
        if (!inside(i, j, k)) continue;
        d.cell_inside[i + cx * (j + cy * k)] = 1;
        std::array<int, 8> e;
        for (int a = 0; a < 8; ++a) {
          const int gi = i + (a & 1), gj = j + ((a >> 1) & 1), gk = k + ((a >> 2) & 1);
          int& id = f.grid_node[gi + f.px * (gj + f.py * gk)];
          if (id < 0) {
            id = static_cast<int>(positions.size());
            positions.emplace_back(gi * h, gj * h, gk * h);
          }
          e[a] = id;
        }
        elements.push_back(e);
      }
    }
  }
  const int n = static_cast<int>(positions.size());
  d.nodes.resize(n, 3);
  for (int i = 0; i < n; ++i) d.nodes.row(i) = positions[i].transpose();
  d.mass = Eigen::VectorXd::Zero(n);
  d.elements.resize(static_cast<int>(elements.size()), 8);
  const Eigen::Matrix<double, 8, 8> ke = Q1ElementStiffness(h);
  std::vector<Eigen::Triplet<double>> t;
  t.reserve(elements.size() * 64);
  for (int e = 0; e < static_cast<int>(elements.size()); ++e) {
    for (int a = 0; a < 8; ++a) {
      d.elements(e, a) = elements[e][a];
      d.mass(elements[e][a]) += h * h * h / 8;
      for (int b = 0; b < 8; ++b) t.emplace_back(elements[e][a], elements[e][b], ke(a, b));
    }
  }
  d.K.resize(n, n);
  d.K.setFromTriplets(t.begin(), t.end());
  return f;
}

VoxelFixture MakeCube(int nodes_per_side) {
  const int c = nodes_per_side - 1;
  return MakeVoxels(c, c, c, 1.0 / c, [](int, int, int) { return true; });
}

// Grid points from (i0, j0, k0) stepping (di, dj, dk) `count` times, as node indices.
std::vector<int> Line(const VoxelFixture& f, int i0, int j0, int k0, int di, int dj, int dk,
                      int count) {
  std::vector<int> nodes;
  for (int s = 0; s < count; ++s) {
    const int id = f.Node(i0 + s * di, j0 + s * dj, k0 + s * dk);
    if (id >= 0) nodes.push_back(id);
  }
  return nodes;
}

// Q = K M⁻¹ K, computed here on its own.
SpMat Bilaplacian(const VolumeDomain& d) {
  SpMat minv(d.num_nodes(), d.num_nodes());
  std::vector<Eigen::Triplet<double>> t;
  for (int i = 0; i < d.num_nodes(); ++i) t.emplace_back(i, i, 1.0 / d.mass(i));
  minv.setFromTriplets(t.begin(), t.end());
  return SpMat(d.K * minv * d.K);
}

std::vector<int> HandleOf(int n, const std::vector<std::vector<int>>& handles) {
  std::vector<int> of(n, -1);
  for (int h = 0; h < static_cast<int>(handles.size()); ++h) {
    for (int v : handles[h]) of[v] = h;
  }
  return of;
}

// Checks the KKT conditions of handle h's QP at w (#N, not normalized) to the solver's stated
// tolerance eps (BbwOptions::bound_tolerance): the handle values; the bounds to eps; with
// g = Q w (the gradient on the free nodes): g = 0 at a free weight (to 1e-8 of the row scale
// Σⱼ|Qᵢⱼ|, the solve's rounding), and at a weight held exactly at a bound a multiplier of the
// right sign up to eps·Qᵢᵢ — g ≥ −eps·Qᵢᵢ where w = 0, g ≤ eps·Qᵢᵢ where w = 1 (releasing it
// alone would move it by less than eps). Returns the number of weights held at a bound.
int ExpectKkt(const SpMat& Q, const std::vector<int>& handle_of, int h, const Eigen::VectorXd& w,
              double eps) {
  const Eigen::VectorXd g = Q * w;
  Eigen::VectorXd scale = Eigen::VectorXd::Zero(w.size());
  for (int k = 0; k < Q.outerSize(); ++k) {
    for (SpMat::InnerIterator it(Q, k); it; ++it) scale(it.row()) += std::abs(it.value());
  }
  int active = 0, failures = 0;
  for (int i = 0; i < w.size(); ++i) {
    if (handle_of[i] >= 0) {
      EXPECT_EQ(w(i), handle_of[i] == h ? 1.0 : 0.0) << "handle " << h << " node " << i;
      continue;
    }
    const double rounding = 1e-8 * scale(i);
    const double multiplier_tol = eps * Q.coeff(i, i) + rounding;
    bool ok = w(i) >= -eps && w(i) <= 1.0 + eps;
    if (w(i) == 0.0) {
      ok = ok && g(i) >= -multiplier_tol;
      ++active;
    } else if (w(i) == 1.0) {
      ok = ok && g(i) <= multiplier_tol;
      ++active;
    } else {
      ok = ok && std::abs(g(i)) <= rounding;
    }
    if (!ok && ++failures <= 5) {
      ADD_FAILURE() << "KKT fails for handle " << h << " at node " << i << ": w = " << w(i)
                    << ", gradient = " << g(i) << ", eps " << eps << ", rounding " << rounding;
    }
  }
  EXPECT_EQ(failures, 0) << "handle " << h;
  return active;
}

void ExpectPartitionOfUnity(const Eigen::MatrixXd& W, const std::vector<int>& handle_of) {
  EXPECT_GE(W.minCoeff(), 0.0);
  EXPECT_LE(W.maxCoeff(), 1.0);
  for (int i = 0; i < W.rows(); ++i) {
    ASSERT_NEAR(W.row(i).sum(), 1.0, 1e-12) << "node " << i;
    if (handle_of[i] >= 0) {
      for (int h = 0; h < W.cols(); ++h) {
        ASSERT_EQ(W(i, h), h == handle_of[i] ? 1.0 : 0.0) << "node " << i << " handle " << h;
      }
    }
  }
}

// The exact solution of the discrete unconstrained problem on a uniform chain with handles at
// nodes 0, c and n (values v0, vc, vn), derived independently of Q's assembly. On the uniform
// chain Q = h³·M·Δ_h⁴ where Δ_h⁴ is the fourth difference of the sequence extended past each end
// node by even reflection (the lumped-mass Neumann Laplacian applied twice). So (Q w)ᵢ = 0 at
// every free node means: w is a cubic p on [0, c] and a cubic q on [c, n] with
//   p(0) = v0, p(−1) = p(1)              (row 1: the reflected ghost value)
//   p(c) = q(c) = vc, p(c±1) = q(c±1)    (rows c∓1 see one node across the handle)
//   q(n) = vn, q(n+1) = q(n−1)           (row n−1)
// in node units. (Note the end conditions: in the limit this is the clamped spline, w' = 0 at a
// pinned end of the domain, not the natural w'' = 0 — the lumped K M⁻¹ K penalizes the slope at
// the boundary.) Returns w at nodes 0..n.
Eigen::VectorXd ChainClosedForm(int n, int c, double v0, double vc, double vn) {
  // Unknowns: p(t) = Σ a_k t^k, q(t) = Σ b_k (t − c)^k, k = 0..3.
  auto row_p = [](double t) {
    Eigen::Matrix<double, 1, 8> r = Eigen::Matrix<double, 1, 8>::Zero();
    for (int k = 0; k < 4; ++k) r(k) = std::pow(t, k);
    return r;
  };
  auto row_q = [c](double t) {
    Eigen::Matrix<double, 1, 8> r = Eigen::Matrix<double, 1, 8>::Zero();
    for (int k = 0; k < 4; ++k) r(4 + k) = std::pow(t - c, k);
    return r;
  };
  Eigen::Matrix<double, 8, 8> A;
  Eigen::Matrix<double, 8, 1> b = Eigen::Matrix<double, 8, 1>::Zero();
  A.row(0) = row_p(0), b(0) = v0;
  A.row(1) = row_p(-1) - row_p(1);
  A.row(2) = row_p(c), b(2) = vc;
  A.row(3) = row_q(c), b(3) = vc;
  A.row(4) = row_p(c + 1) - row_q(c + 1);
  A.row(5) = row_p(c - 1) - row_q(c - 1);
  A.row(6) = row_q(n), b(6) = vn;
  A.row(7) = row_q(n + 1) - row_q(n - 1);
  const Eigen::Matrix<double, 8, 1> coef = A.fullPivLu().solve(b);
  Eigen::VectorXd w(n + 1);
  for (int i = 0; i <= n; ++i) w(i) = (i <= c ? row_p(i) : row_q(i)).dot(coef);
  return w;
}

constexpr int kChainN = 40;  // nodes 0..40
constexpr int kChainC = 14;  // the middle handle, off centre

TEST(BbwTest, UnconstrainedWeightsArePiecewiseCubicOnAChain) {
  const VolumeDomain d = MakeChain(Uniform(kChainN + 1, 2.0));
  const std::vector<std::vector<int>> handles = {{0}, {kChainC}, {kChainN}};
  absl::StatusOr<Eigen::MatrixXd> W = internal::UnconstrainedBiharmonicWeights(d, handles);
  ASSERT_TRUE(W.ok()) << W.status();
  const double values[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  for (int h = 0; h < 3; ++h) {
    const Eigen::VectorXd expected =
        ChainClosedForm(kChainN, kChainC, values[h][0], values[h][1], values[h][2]);
    EXPECT_LT((W->col(h) - expected).cwiseAbs().maxCoeff(), 1e-9) << "handle " << h;
  }
  // The case is built so that the cubics overshoot: handle 0's weight dips below 0 on [c, n].
  EXPECT_LT(ChainClosedForm(kChainN, kChainC, 1, 0, 0).minCoeff(), -0.01);
  // Linear precision of the sum: the three unconstrained weights sum to 1.
  EXPECT_LT((W->rowwise().sum().array() - 1.0).abs().maxCoeff(), 1e-9);
}

TEST(BbwTest, BoundsBecomeActiveWhereTheCubicOvershootsAndKktHolds) {
  const VolumeDomain d = MakeChain(Uniform(kChainN + 1, 2.0));
  const std::vector<std::vector<int>> handles = {{0}, {kChainC}, {kChainN}};
  const std::vector<int> handle_of = HandleOf(d.num_nodes(), handles);
  const SpMat Q = Bilaplacian(d);
  BbwOptions raw;
  raw.normalize = false;
  BbwReport report;
  absl::StatusOr<Eigen::MatrixXd> W = BoundedBiharmonicWeights(d, handles, raw, &report);
  ASSERT_TRUE(W.ok()) << W.status();
  const Eigen::VectorXd overshoot = ChainClosedForm(kChainN, kChainC, 1, 0, 0);
  for (int h = 0; h < 3; ++h) ExpectKkt(Q, handle_of, h, W->col(h), raw.bound_tolerance);
  // Where handle 0's cubic went negative the lower bound is now active.
  int active_where_overshooting = 0;
  for (int i = kChainC + 1; i < kChainN; ++i) {
    if (overshoot(i) < -1e-3 && W->coeff(i, 0) <= 1e-12) ++active_where_overshooting;
  }
  EXPECT_GT(active_where_overshooting, 0);
  EXPECT_GT(report.iterations[0], 0);
  EXPECT_LE(report.max_violation_before_clamp, raw.bound_tolerance);

  absl::StatusOr<Eigen::MatrixXd> normalized = BoundedBiharmonicWeights(d, handles);
  ASSERT_TRUE(normalized.ok()) << normalized.status();
  ExpectPartitionOfUnity(*normalized, handle_of);
}

TEST(BbwTest, KktConditionsHoldOnA3DGrid) {
  const VoxelFixture f = MakeCube(12);
  const std::vector<std::vector<int>> handles = {
      Line(f, 2, 2, 2, 1, 0, 0, 8),  // along x
      Line(f, 9, 2, 9, 0, 1, 0, 8),  // along y
      Line(f, 2, 9, 3, 0, 0, 1, 7),  // along z
      Line(f, 5, 6, 6, 1, 0, 0, 3),  // short, in the middle
  };
  const std::vector<int> handle_of = HandleOf(f.domain.num_nodes(), handles);
  const SpMat Q = Bilaplacian(f.domain);
  BbwOptions raw;
  raw.normalize = false;
  BbwReport report;
  absl::StatusOr<Eigen::MatrixXd> W = BoundedBiharmonicWeights(f.domain, handles, raw, &report);
  ASSERT_TRUE(W.ok()) << W.status();
  int active = 0;
  for (int h = 0; h < 4; ++h) {
    active += ExpectKkt(Q, handle_of, h, W->col(h), raw.bound_tolerance);
  }
  EXPECT_GT(active, 0) << "the bounds should matter on this problem";
  EXPECT_LE(report.max_violation_before_clamp, raw.bound_tolerance);
  std::printf("3D grid: %d nodes, %d active bounds, iterations %d %d %d %d, %d factorizations\n",
              f.domain.num_nodes(), active, report.iterations[0], report.iterations[1],
              report.iterations[2], report.iterations[3], report.factorizations);

  absl::StatusOr<Eigen::MatrixXd> normalized = BoundedBiharmonicWeights(f.domain, handles);
  ASSERT_TRUE(normalized.ok()) << normalized.status();
  ExpectPartitionOfUnity(*normalized, handle_of);
  // The normalization divides each row of the QP minimizers (clamped) by its sum.
  const Eigen::MatrixXd clamped = W->cwiseMax(0.0).cwiseMin(1.0);
  for (int i = 0; i < clamped.rows(); ++i) {
    const double sum = clamped.row(i).sum();
    ASSERT_GT(sum, 0.0);
    EXPECT_LT((normalized->row(i) - clamped.row(i) / sum).cwiseAbs().maxCoeff(), 1e-12);
  }
}

// The ADMM warm start changes only where the active-set solves start: to a tight tolerance,
// with and without it, the result is the same minimizer (A is positive definite, so it is
// unique). The default tolerance stops within its stated KKT tolerance, close to that minimizer.
TEST(BbwTest, WarmStartAndDefaultToleranceReachTheMinimizer) {
  const VoxelFixture f = MakeCube(14);
  const std::vector<std::vector<int>> handles = {
      Line(f, 2, 2, 2, 1, 0, 0, 10), Line(f, 11, 2, 11, 0, 1, 0, 10),
      Line(f, 2, 11, 3, 0, 0, 1, 9), Line(f, 6, 7, 7, 1, 0, 0, 3)};
  const std::vector<int> handle_of = HandleOf(f.domain.num_nodes(), handles);
  const SpMat Q = Bilaplacian(f.domain);
  auto solve = [&](double tolerance, int admm, BbwReport* report) {
    BbwOptions o;
    o.normalize = false;
    o.bound_tolerance = tolerance;
    o.admm_iterations = admm;
    absl::StatusOr<Eigen::MatrixXd> W = BoundedBiharmonicWeights(f.domain, handles, o, report);
    EXPECT_TRUE(W.ok()) << W.status();
    for (int h = 0; W.ok() && h < W->cols(); ++h) ExpectKkt(Q, handle_of, h, W->col(h), tolerance);
    return W.ok() ? *W : Eigen::MatrixXd();
  };
  BbwReport cold_report, warm_report, default_report;
  const Eigen::MatrixXd cold = solve(1e-10, 0, &cold_report);
  const Eigen::MatrixXd warm = solve(1e-10, 60, &warm_report);
  const BbwOptions defaults;
  const Eigen::MatrixXd fast = solve(defaults.bound_tolerance, defaults.admm_iterations,
                                     &default_report);
  ASSERT_EQ(cold.size(), warm.size());
  ASSERT_EQ(cold.size(), fast.size());
  EXPECT_EQ(cold_report.admm_iterations, 0);
  EXPECT_EQ(warm_report.admm_iterations, 60);
  EXPECT_GT(warm_report.admm_rho, 0.0);
  EXPECT_LT((cold - warm).cwiseAbs().maxCoeff(), 1e-7);
  // Within 1e-6 of the KKT conditions the weights stay within a thousandth of the minimizer's.
  const double difference = (cold - fast).cwiseAbs().maxCoeff();
  EXPECT_LT(difference, 1e-3);
  std::printf("3D grid, %d nodes: exact from the unconstrained start %d factorizations, exact "
              "from ADMM %d, default (eps %g, ADMM %d) %d; default vs exact max %.2g\n",
              f.domain.num_nodes(), cold_report.factorizations, warm_report.factorizations,
              defaults.bound_tolerance, defaults.admm_iterations,
              default_report.factorizations, difference);
}

TEST(BbwTest, MonotoneFallbackReachesTheSameMinimizer) {
  const VoxelFixture f = MakeCube(9);
  const std::vector<std::vector<int>> handles = {
      Line(f, 1, 1, 1, 1, 0, 0, 6), Line(f, 7, 1, 7, 0, 1, 0, 6), Line(f, 1, 7, 2, 0, 0, 1, 5)};
  const std::vector<int> handle_of = HandleOf(f.domain.num_nodes(), handles);
  BbwOptions raw;
  raw.normalize = false;
  raw.max_iterations = 1000;
  raw.bound_tolerance = 1e-10;  // both to the exact minimizer (up to rounding)
  absl::StatusOr<Eigen::MatrixXd> pdas = BoundedBiharmonicWeights(f.domain, handles, raw);
  ASSERT_TRUE(pdas.ok()) << pdas.status();
  BbwReport report;
  absl::StatusOr<Eigen::MatrixXd> monotone =
      internal::BoundedBiharmonicWeightsMonotone(f.domain, handles, raw, &report);
  ASSERT_TRUE(monotone.ok()) << monotone.status();
  const SpMat Q = Bilaplacian(f.domain);
  for (int h = 0; h < 3; ++h) ExpectKkt(Q, handle_of, h, monotone->col(h), raw.bound_tolerance);
  EXPECT_LT((*pdas - *monotone).cwiseAbs().maxCoeff(), 1e-8);
  std::printf("monotone fallback iterations: %d %d %d\n", report.iterations[0],
              report.iterations[1], report.iterations[2]);
}

// Minimizes ½ xᵀ A x − bᵀ x over [0, 1]ⁿ (A symmetric positive definite) independently of the
// library: dense single-pivot principal pivoting with Murty's least-index rule, which ends for
// a P-matrix (any A here). Each variable is at 0, at 1 or free; the free ones are solved
// exactly (dense LDLᵀ) with the others at their bound, and the lowest-numbered variable that
// breaks the KKT conditions (a free value outside [0, 1], a bound whose multiplier has the
// wrong sign) changes state, one at a time. The library instead pivots whole blocks on sparse
// factorizations (primal-dual active set). The result is checked against the KKT conditions
// here, which for a strictly convex problem make it the unique minimizer whatever the pivoting.
Eigen::VectorXd ReferenceBoxQp(const Eigen::MatrixXd& A, const Eigen::VectorXd& b) {
  const int n = static_cast<int>(b.size());
  enum State { kLower, kUpper, kFree };
  std::vector<State> state(n, kFree);
  const double tol = 1e-9 * A.cwiseAbs().maxCoeff();
  Eigen::VectorXd x(n), g(n);
  auto solve_free = [&] {
    std::vector<int> free;
    for (int i = 0; i < n; ++i) {
      x(i) = state[i] == kUpper ? 1.0 : 0.0;
      if (state[i] == kFree) free.push_back(i);
    }
    const int nf = static_cast<int>(free.size());
    const Eigen::VectorXd bound_part = A * x;
    Eigen::MatrixXd Aff(nf, nf);
    Eigen::VectorXd r(nf);
    for (int i = 0; i < nf; ++i) {
      r(i) = b(free[i]) - bound_part(free[i]);
      for (int j = 0; j < nf; ++j) Aff(i, j) = A(free[i], free[j]);
    }
    const Eigen::VectorXd xf = Aff.ldlt().solve(r);
    for (int i = 0; i < nf; ++i) x(free[i]) = xf(i);
    g = A * x - b;
  };
  int pivots = 0;
  for (;; ++pivots) {
    solve_free();
    int broken = -1;
    for (int i = 0; i < n && broken < 0; ++i) {
      if ((state[i] == kFree && (x(i) < 0.0 || x(i) > 1.0)) ||
          (state[i] == kLower && g(i) < -tol) || (state[i] == kUpper && g(i) > tol))
        broken = i;
    }
    if (broken < 0) break;
    if (pivots > 100 * n) {
      ADD_FAILURE() << "least-index pivoting did not end in " << pivots << " pivots";
      break;
    }
    State& s = state[broken];
    s = s != kFree ? kFree : (x(broken) < 0.0 ? kLower : kUpper);
  }
  for (int i = 0; i < n; ++i) {  // the KKT conditions, checked on their own
    EXPECT_GE(x(i), 0.0);
    EXPECT_LE(x(i), 1.0);
    if (state[i] == kFree) {
      EXPECT_LE(std::abs(g(i)), tol) << "reference gradient " << i;
    } else if (state[i] == kLower) {
      EXPECT_GE(g(i), -tol) << "reference multiplier " << i;
    } else {
      EXPECT_LE(g(i), tol) << "reference multiplier " << i;
    }
  }
  return x;
}

TEST(BbwTest, MatchesAnIndependentQpSolveOnATinyProblem) {
  // A non-uniform 1D chain (28 nodes) and a 5×3×2 grid (30 nodes).
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> u(0.5, 1.5);
  std::vector<double> x = {0.0};
  for (int i = 1; i < 28; ++i) x.push_back(x.back() + u(gen));
  const VolumeDomain chain = MakeChain(x);
  const VoxelFixture grid = MakeVoxels(4, 2, 1, 0.5, [](int, int, int) { return true; });
  struct Case {
    const VolumeDomain* domain;
    std::vector<std::vector<int>> handles;
  };
  const std::vector<Case> cases = {
      {&chain, std::vector<std::vector<int>>{{3}, {11, 12}, {20}, {27}}},
      {&grid.domain,
       std::vector<std::vector<int>>{
           {grid.Node(0, 0, 0), grid.Node(0, 1, 0)}, {grid.Node(4, 2, 1)}, {grid.Node(2, 1, 1)}}},
  };
  int active = 0;
  for (const Case& c : cases) {
    const int n = c.domain->num_nodes();
    ASSERT_LE(n, 30);
    const std::vector<int> handle_of = HandleOf(n, c.handles);
    const Eigen::MatrixXd Q = Eigen::MatrixXd(Bilaplacian(*c.domain));
    std::vector<int> free;
    for (int i = 0; i < n; ++i) {
      if (handle_of[i] < 0) free.push_back(i);
    }
    const int nf = static_cast<int>(free.size());
    Eigen::MatrixXd A(nf, nf);
    for (int r = 0; r < nf; ++r) {
      for (int s = 0; s < nf; ++s) A(r, s) = Q(free[r], free[s]);
    }
    BbwOptions raw;
    raw.normalize = false;
    absl::StatusOr<Eigen::MatrixXd> W = BoundedBiharmonicWeights(*c.domain, c.handles, raw);
    ASSERT_TRUE(W.ok()) << W.status();
    Eigen::MatrixXd reference = Eigen::MatrixXd::Zero(n, c.handles.size());
    for (int h = 0; h < static_cast<int>(c.handles.size()); ++h) {
      Eigen::VectorXd pinned = Eigen::VectorXd::Zero(n);
      for (int v : c.handles[h]) pinned(v) = 1.0;
      const Eigen::VectorXd q_pinned = Q * pinned;
      Eigen::VectorXd b(nf);
      for (int r = 0; r < nf; ++r) b(r) = -q_pinned(free[r]);
      const Eigen::VectorXd xf = ReferenceBoxQp(A, b);
      reference.col(h) = pinned;
      for (int r = 0; r < nf; ++r) {
        reference(free[r], h) = xf(r);
        if (xf(r) <= 0.0 || xf(r) >= 1.0) ++active;
      }
    }
    EXPECT_LT((*W - reference).cwiseAbs().maxCoeff(), 1e-6) << n << " nodes";

    absl::StatusOr<Eigen::MatrixXd> normalized = BoundedBiharmonicWeights(*c.domain, c.handles);
    ASSERT_TRUE(normalized.ok()) << normalized.status();
    const Eigen::MatrixXd clamped = reference.cwiseMax(0.0).cwiseMin(1.0);
    const Eigen::MatrixXd expected = clamped.array().colwise() / clamped.rowwise().sum().array();
    EXPECT_LT((*normalized - expected).cwiseAbs().maxCoeff(), 1e-6) << n << " nodes";
  }
  EXPECT_GT(active, 0) << "the bounds should matter on these problems";
}

TEST(BbwTest, EmptyHandleGetsAZeroColumn) {
  const VoxelFixture f = MakeCube(6);
  const std::vector<std::vector<int>> handles = {
      Line(f, 1, 1, 1, 1, 0, 0, 3), {}, Line(f, 4, 4, 4, 0, 0, -1, 3)};
  BbwReport report;
  absl::StatusOr<Eigen::MatrixXd> W = BoundedBiharmonicWeights(f.domain, handles, {}, &report);
  ASSERT_TRUE(W.ok()) << W.status();
  EXPECT_EQ(W->col(1).cwiseAbs().maxCoeff(), 0.0);
  ExpectPartitionOfUnity(*W, HandleOf(f.domain.num_nodes(), handles));
  EXPECT_EQ(report.iterations.size(), 3u);
  EXPECT_EQ(report.zero_sum_nodes, 0);
}

TEST(BbwTest, SingleHandleGivesWeightOneEverywhere) {
  const VoxelFixture f = MakeCube(5);
  absl::StatusOr<Eigen::MatrixXd> W =
      BoundedBiharmonicWeights(f.domain, {Line(f, 1, 1, 1, 1, 1, 1, 3)});
  ASSERT_TRUE(W.ok()) << W.status();
  EXPECT_LT((W->array() - 1.0).abs().maxCoeff(), 1e-12);
}

TEST(BbwTest, ReportsProgressFromZeroToOne) {
  const VoxelFixture f = MakeCube(8);
  const std::vector<std::vector<int>> handles = {
      Line(f, 1, 1, 1, 1, 0, 0, 5), Line(f, 6, 6, 1, 0, 0, 1, 6), Line(f, 1, 6, 6, 1, 0, 0, 4)};
  std::vector<double> fractions;
  std::vector<std::string> stages;
  const Progress progress(
      [&](const std::string& stage, double fraction) {
        stages.push_back(stage);
        fractions.push_back(fraction);
      },
      nullptr);
  ASSERT_TRUE(BoundedBiharmonicWeights(f.domain, handles, {}, nullptr, progress).ok());
  ASSERT_FALSE(fractions.empty());
  EXPECT_EQ(fractions.front(), 0.0);
  EXPECT_EQ(fractions.back(), 1.0);
  EXPECT_TRUE(std::is_sorted(fractions.begin(), fractions.end()));
  for (const std::string& s : stages) EXPECT_EQ(s, "bbw");
}

TEST(BbwTest, CancelStopsPromptly) {
  const VoxelFixture f = MakeCube(14);
  std::vector<std::vector<int>> handles;
  for (int k = 1; k <= 12; k += 2) handles.push_back(Line(f, 1, 1 + (k % 5), k, 1, 0, 0, 10));
  std::atomic<bool> cancel{false};
  double last_fraction = 0.0;
  int reports_after_cancel = 0;
  const Progress progress(
      [&](const std::string&, double fraction) {
        if (cancel) ++reports_after_cancel;
        last_fraction = fraction;
        if (fraction > 0.0) cancel = true;  // as soon as one handle is done
      },
      &cancel);
  BbwOptions options;
  options.threads = 1;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Eigen::MatrixXd> W =
      BoundedBiharmonicWeights(f.domain, handles, options, nullptr, progress);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(W.status().code(), absl::StatusCode::kCancelled) << W.status();
  EXPECT_LT(last_fraction, 1.0);
  EXPECT_LE(reports_after_cancel, 1);  // at most the handle that was in flight
  std::printf("cancelled after %.3f s at fraction %.3f\n", seconds, last_fraction);

  // Cancelled before the start: nothing is solved.
  std::atomic<bool> already{true};
  absl::StatusOr<Eigen::MatrixXd> W2 =
      BoundedBiharmonicWeights(f.domain, handles, {}, nullptr, Progress(nullptr, &already));
  EXPECT_EQ(W2.status().code(), absl::StatusCode::kCancelled);
}

TEST(BbwTest, RejectsOutOfRangeHandleNode) {
  const VolumeDomain d = MakeChain(Uniform(10, 1.0));
  absl::StatusOr<Eigen::MatrixXd> W = BoundedBiharmonicWeights(d, {{0}, {3, 10}});
  EXPECT_EQ(W.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(W.status().message().find("handle_nodes[1][1]"), std::string::npos) << W.status();
  W = BoundedBiharmonicWeights(d, {{-1}, {3}});
  EXPECT_EQ(W.status().code(), absl::StatusCode::kInvalidArgument);
}

// A node listed by two handles (a joint where two bones meet) is pinned to ½ for each, as
// libigl's boundary conditions split it; on a uniform chain with the shared node in the middle
// the two weights mirror each other.
TEST(BbwTest, ANodeOfTwoHandlesIsPinnedToHalfForEach) {
  const VolumeDomain d = MakeChain(Uniform(11, 1.0));
  absl::StatusOr<Eigen::MatrixXd> W = BoundedBiharmonicWeights(d, {{0, 5}, {5, 10}});
  ASSERT_TRUE(W.ok()) << W.status();
  EXPECT_EQ((*W)(5, 0), 0.5);
  EXPECT_EQ((*W)(5, 1), 0.5);
  EXPECT_EQ((*W)(0, 0), 1.0);
  EXPECT_EQ((*W)(10, 1), 1.0);
  for (int i = 0; i <= 10; ++i) {
    EXPECT_NEAR((*W)(i, 0), (*W)(10 - i, 1), 1e-12) << "node " << i;
    EXPECT_NEAR(W->row(i).sum(), 1.0, 1e-12) << "node " << i;
  }
  // Listing a node twice in one handle changes nothing.
  absl::StatusOr<Eigen::MatrixXd> again = BoundedBiharmonicWeights(d, {{0, 5, 5}, {5, 10}});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *W);
}

TEST(BbwTest, RejectsAllHandlesEmpty) {
  const VolumeDomain d = MakeChain(Uniform(10, 1.0));
  EXPECT_EQ(BoundedBiharmonicWeights(d, {{}, {}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BoundedBiharmonicWeights(d, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(BbwTest, RejectsMismatchedDomainSizes) {
  VolumeDomain d = MakeChain(Uniform(10, 1.0));
  VolumeDomain short_mass = d;
  short_mass.mass.conservativeResize(9);
  EXPECT_EQ(BoundedBiharmonicWeights(short_mass, {{0}, {9}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  VolumeDomain big_k = d;
  big_k.K.conservativeResize(11, 11);
  EXPECT_EQ(BoundedBiharmonicWeights(big_k, {{0}, {9}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  VolumeDomain zero_mass = d;
  zero_mass.mass(4) = 0.0;
  EXPECT_EQ(BoundedBiharmonicWeights(zero_mass, {{0}, {9}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(BbwTest, NonConvergingHandleIsFailedPrecondition) {
  const VolumeDomain d = MakeChain(Uniform(kChainN + 1, 2.0));
  BbwOptions options;
  options.max_iterations = 0;  // handle 0 needs at least one active-set iteration
  absl::StatusOr<Eigen::MatrixXd> W =
      BoundedBiharmonicWeights(d, {{0}, {kChainC}, {kChainN}}, options);
  EXPECT_EQ(W.status().code(), absl::StatusCode::kFailedPrecondition) << W.status();
}

TEST(BbwTest, DomainPartWithoutHandlesIsFailedPrecondition) {
  // Two separate bars; only the first has handles.
  const VoxelFixture f = MakeVoxels(9, 2, 2, 0.1, [](int i, int, int) { return i < 4 || i > 5; });
  absl::StatusOr<Eigen::MatrixXd> W =
      BoundedBiharmonicWeights(f.domain, {{f.Node(0, 0, 0)}, {f.Node(4, 2, 2)}});
  EXPECT_EQ(W.status().code(), absl::StatusCode::kFailedPrecondition) << W.status();
}

// A blocky character in a T pose on a voxel grid (36 by 8 by 43 cells of spacing 2): torso, head,
// two arms, two legs and feet, with 20 bones as lines of grid points (several meeting near one
// joint, as on a real skeleton). About 4k nodes: the solver's times on real characters are
// bench/bake_bench's; this checks the result where many handles compete.
struct Character {
  VoxelFixture voxels;
  std::vector<std::vector<int>> handles;
  std::vector<int> expected_sizes;  // the grid points each bone's line was given
};

Character MakeCharacter() {
  // Cells: x across (arms), y depth, z up.
  auto in_box = [](int i, int j, int k, int i0, int i1, int j0, int j1, int k0, int k1) {
    return i >= i0 && i < i1 && j >= j0 && j < j1 && k >= k0 && k < k1;
  };
  auto inside = [&](int i, int j, int k) {
    return in_box(i, j, k, 13, 24, 1, 8, 20, 36) ||                                 // torso
           in_box(i, j, k, 15, 21, 1, 7, 36, 43) ||                                 // head
           in_box(i, j, k, 0, 13, 2, 7, 31, 36) ||                                  // left arm
           in_box(i, j, k, 24, 36, 2, 7, 31, 36) ||                                 // right arm
           in_box(i, j, k, 13, 18, 2, 7, 0, 20) ||                                  // left leg
           in_box(i, j, k, 19, 23, 2, 7, 0, 20) ||                                  // right leg
           in_box(i, j, k, 13, 18, 0, 2, 0, 2) || in_box(i, j, k, 19, 23, 0, 2, 0, 2);  // feet
  };
  Character c;
  c.voxels = MakeVoxels(36, 8, 43, 2.0, inside);
  const VoxelFixture& f = c.voxels;
  // Grid points (i0, j0, k0) + s (di, dj, dk), s < count; each line lies inside the body and
  // leaves at least one free grid point to the next bone along a limb.
  auto bone = [&](int i0, int j0, int k0, int di, int dj, int dk, int count) {
    c.handles.push_back(Line(f, i0, j0, k0, di, dj, dk, count));
    c.expected_sizes.push_back(count);
  };
  bone(16, 4, 20, 1, 0, 0, 5);  // pelvis
  bone(18, 4, 21, 0, 0, 1, 5);  // hips
  bone(18, 4, 27, 0, 0, 1, 4);  // spine
  bone(18, 4, 32, 0, 0, 1, 4);  // chest
  bone(18, 4, 37, 0, 0, 1, 2);  // neck
  bone(18, 4, 40, 0, 0, 1, 2);  // head
  for (int side = 0; side < 2; ++side) {
    const int s = side == 0 ? -1 : 1;
    bone(18 + s * 2, 4, 33, s, 0, 0, 3);   // clavicle
    bone(18 + s * 6, 4, 33, s, 0, 0, 5);   // upper arm
    bone(18 + s * 12, 4, 33, s, 0, 0, 4);  // forearm
    bone(18 + s * 17, 4, 33, s, 0, 0, 2);  // hand
    const int leg = side == 0 ? 15 : 21;
    bone(leg, 4, 18, 0, 0, -1, 8);  // thigh
    bone(leg, 4, 9, 0, 0, -1, 6);   // shin
    bone(leg, 2, 1, 0, -1, 0, 2);   // foot
  }
  return c;
}

// Every handle's QP minimizer meets the KKT conditions (ExpectKkt) on a character with 20 bones,
// the bounds are active somewhere, and the normalized weights are a partition of unity that
// pins every bone's own nodes.
TEST(BbwTest, KktConditionsHoldForEveryBoneOfATwentyBoneCharacter) {
  const Character c = MakeCharacter();
  ASSERT_EQ(c.handles.size(), 20u);
  std::set<int> distinct;
  int total = 0;
  for (size_t h = 0; h < c.handles.size(); ++h) {
    ASSERT_EQ(static_cast<int>(c.handles[h].size()), c.expected_sizes[h]) << "bone " << h << " leaves the body";
    distinct.insert(c.handles[h].begin(), c.handles[h].end());
    total += c.expected_sizes[h];
  }
  ASSERT_EQ(static_cast<int>(distinct.size()), total) << "two bones share a grid point";
  const VolumeDomain& d = c.voxels.domain;
  const std::vector<int> handle_of = HandleOf(d.num_nodes(), c.handles);
  const SpMat Q = Bilaplacian(d);
  BbwOptions raw;
  raw.normalize = false;
  BbwReport report;
  absl::StatusOr<Eigen::MatrixXd> W = BoundedBiharmonicWeights(d, c.handles, raw, &report);
  ASSERT_TRUE(W.ok()) << W.status();
  int active = 0;
  for (int h = 0; h < static_cast<int>(c.handles.size()); ++h) {
    active += ExpectKkt(Q, handle_of, h, W->col(h), raw.bound_tolerance);
  }
  EXPECT_GT(active, 0) << "the bounds should matter with 20 handles";
  EXPECT_LE(report.max_violation_before_clamp, raw.bound_tolerance);
  std::printf("BBW character: %d nodes, 20 handles, %d active bounds, %d factorizations\n", d.num_nodes(),
              active, report.factorizations);

  absl::StatusOr<Eigen::MatrixXd> normalized = BoundedBiharmonicWeights(d, c.handles);
  ASSERT_TRUE(normalized.ok()) << normalized.status();
  ExpectPartitionOfUnity(*normalized, handle_of);
}

// An active-set iteration whose free set differs little from the last factorized one borders
// that factorization (BbwOptions::max_update_columns) instead of factorizing again. To a tight
// tolerance the result is the minimizer that factorizing every iteration reaches, for any bound
// on the changed variables, with fewer factorizations; KKT holds for every bone.
TEST(BbwTest, BorderedUpdatesReachTheMinimizerOfFactorizingEveryIteration) {
  const Character c = MakeCharacter();
  const VolumeDomain& d = c.voxels.domain;
  const std::vector<int> handle_of = HandleOf(d.num_nodes(), c.handles);
  const SpMat Q = Bilaplacian(d);
  auto solve = [&](int max_update_columns, BbwReport* report) {
    BbwOptions o;
    o.normalize = false;
    o.bound_tolerance = 1e-10;
    o.max_update_columns = max_update_columns;
    absl::StatusOr<Eigen::MatrixXd> W = BoundedBiharmonicWeights(d, c.handles, o, report);
    EXPECT_TRUE(W.ok()) << W.status();
    return W.ok() ? *W : Eigen::MatrixXd();
  };
  BbwReport factorized_report;
  const Eigen::MatrixXd factorized = solve(0, &factorized_report);
  ASSERT_GT(factorized.size(), 0);
  EXPECT_EQ(factorized_report.updates, 0);
  for (int max_update_columns : {1, 8, BbwOptions().max_update_columns}) {
    BbwReport report;
    const Eigen::MatrixXd W = solve(max_update_columns, &report);
    ASSERT_EQ(W.size(), factorized.size());
    EXPECT_GT(report.updates, 0) << "bound " << max_update_columns;
    EXPECT_LT(report.factorizations, factorized_report.factorizations) << "bound " << max_update_columns;
    EXPECT_LT((W - factorized).cwiseAbs().maxCoeff(), 1e-7) << "bound " << max_update_columns;
    for (int h = 0; h < W.cols(); ++h) ExpectKkt(Q, handle_of, h, W.col(h), 1e-10);
    std::printf("bound %d: %d factorizations and %d updates (every iteration factorized: %d)\n",
                max_update_columns, report.factorizations, report.updates, factorized_report.factorizations);
  }
}

// A start given by the caller (a coarser grid's solution, BbwCoarseStart) replaces the ADMM
// estimate of the first active sets: the exact minimizer as the start certifies itself in one
// active-set iteration per handle; a start that is wrong everywhere (every entry at a bound, the
// opposite of the minimizer's) or says nothing (NaN: every node starts free) still ends at the
// minimizer, KKT to the tolerance. A start of the wrong shape is refused.
TEST(BbwTest, AGivenStartReplacesTheAdmmEstimateAndReachesTheSameMinimizer) {
  const Character c = MakeCharacter();
  const VolumeDomain& d = c.voxels.domain;
  const std::vector<int> handle_of = HandleOf(d.num_nodes(), c.handles);
  const SpMat Q = Bilaplacian(d);
  BbwOptions o;
  o.normalize = false;
  o.bound_tolerance = 1e-10;
  BbwReport admm_report;
  absl::StatusOr<Eigen::MatrixXd> reference = BoundedBiharmonicWeights(d, c.handles, o, &admm_report);
  ASSERT_TRUE(reference.ok()) << reference.status();
  EXPECT_FALSE(admm_report.given_start);
  EXPECT_GT(admm_report.admm_iterations, 0);

  const int handles = static_cast<int>(c.handles.size());
  const Eigen::MatrixXd wrong = (reference->array() > 0.5).select(Eigen::MatrixXd::Zero(d.num_nodes(), handles),
                                                                  Eigen::MatrixXd::Ones(d.num_nodes(), handles));
  const Eigen::MatrixXd silent =
      Eigen::MatrixXd::Constant(d.num_nodes(), handles, std::numeric_limits<double>::quiet_NaN());
  struct Case {
    const char* name;
    const Eigen::MatrixXd* start;
  };
  for (const Case& k : {Case{"the minimizer", &*reference}, Case{"every bound wrong", &wrong}, Case{"NaN", &silent}}) {
    BbwReport report;
    absl::StatusOr<Eigen::MatrixXd> W = BoundedBiharmonicWeights(d, c.handles, o, &report, {}, k.start);
    ASSERT_TRUE(W.ok()) << k.name << ": " << W.status();
    EXPECT_TRUE(report.given_start) << k.name;
    EXPECT_EQ(report.admm_iterations, 0) << k.name;
    EXPECT_THAT(report.BriefReport(), ::testing::HasSubstr("active sets from the given start")) << k.name;
    EXPECT_LT((*W - *reference).cwiseAbs().maxCoeff(), 1e-7) << k.name;
    for (int h = 0; h < handles; ++h) ExpectKkt(Q, handle_of, h, W->col(h), 1e-10);
    if (k.start == &*reference) {
      for (int h = 0; h < handles; ++h) EXPECT_LE(report.iterations[h], 1) << "handle " << h;
    }
  }

  const Eigen::MatrixXd short_start = reference->topRows(d.num_nodes() - 1);
  absl::StatusOr<Eigen::MatrixXd> refused = BoundedBiharmonicWeights(d, c.handles, o, nullptr, {}, &short_start);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), ::testing::HasSubstr("nodes by handles"));
}

// The weights do not depend on how the handles fall to the worker threads: a thread that
// bordered the factorization its last handle left (a few nodes apart on a small grid) got weights
// a few units in the last place away from a factorized solve, so the same bake run twice could
// differ. 2, 3 and 4 workers (each taking the next handle when free) give bit-identical weights.
// (One thread is not compared: it leaves CHOLMOD's OpenMP loops and OpenBLAS's threads on.)
TEST(BbwTest, WeightsAreTheSameWhateverTheThreadCount) {
  const VoxelFixture f = MakeCube(6);
  const std::vector<std::vector<int>> handles = {Line(f, 1, 1, 1, 1, 0, 0, 4), Line(f, 4, 1, 4, 0, 1, 0, 4),
                                                 Line(f, 1, 4, 2, 0, 0, 1, 3), Line(f, 2, 3, 3, 1, 0, 0, 2),
                                                 Line(f, 4, 4, 1, 0, 0, 1, 2), Line(f, 1, 2, 4, 1, 0, 0, 2)};
  Eigen::MatrixXd first;
  for (int threads : {2, 3, 4}) {
    BbwOptions o;
    o.threads = threads;
    BbwReport report;
    absl::StatusOr<Eigen::MatrixXd> W = BoundedBiharmonicWeights(f.domain, handles, o, &report);
    ASSERT_TRUE(W.ok()) << W.status();
    if (threads == 2) {
      first = *W;
      continue;
    }
    EXPECT_EQ((*W - first).cwiseAbs().maxCoeff(), 0.0) << threads << " threads";
  }
}

TEST(BbwTest, RejectsANegativeUpdateBound) {
  const VoxelFixture f = MakeCube(4);
  BbwOptions o;
  o.max_update_columns = -1;
  absl::StatusOr<Eigen::MatrixXd> W = BoundedBiharmonicWeights(f.domain, {Line(f, 1, 1, 1, 1, 0, 0, 2)}, o);
  EXPECT_EQ(W.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(W.status().message()), ::testing::HasSubstr("options.bbw.max_update_columns"));
  o = BbwOptions();
  o.coarsest_resolution = -1;
  EXPECT_THAT(std::string(o.Validate().message()), ::testing::HasSubstr("options.bbw.coarsest_resolution"));
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
