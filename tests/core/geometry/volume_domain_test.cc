#include "core/geometry/volume_domain.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "core/io/gltf.h"
#include "core/io/medit.h"
#include "core/io/obj.h"
#include "core/io/tgf.h"
#include "core/rig/bones.h"
#include "tests/support/data.h"
#include "tests/support/fixtures.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::DataPath;
using ::skinning::testing::MakeSphere;
using ::skinning::testing::OrientOutward;
using ::testing::HasSubstr;

constexpr double kPi = 3.14159265358979323846;

// ---------------------------------------------------------------------------------------------
// Fixtures generated in code.

// A torus about the z axis: major radius R, tube radius r.
Mesh Torus(double R, double r, int nu = 64, int nv = 24) {
  Mesh m;
  m.V.resize(nu * nv, 3);
  for (int i = 0; i < nu; ++i)
    for (int j = 0; j < nv; ++j) {
      const double u = 2 * kPi * i / nu, v = 2 * kPi * j / nv;
      m.V.row(i * nv + j) << (R + r * std::cos(v)) * std::cos(u),
          (R + r * std::cos(v)) * std::sin(u), r * std::sin(v);
    }
  m.F.resize(2 * nu * nv, 3);
  int f = 0;
  for (int i = 0; i < nu; ++i)
    for (int j = 0; j < nv; ++j) {
      const int a = i * nv + j, b = ((i + 1) % nu) * nv + j, c = ((i + 1) % nu) * nv + (j + 1) % nv,
                d = i * nv + (j + 1) % nv;
      m.F.row(f++) << a, b, c;
      m.F.row(f++) << a, c, d;
    }
  OrientOutward(&m, [&](const Eigen::Vector3d& p) {
    const Eigen::Vector2d xy(p.x(), p.y());
    const Eigen::Vector2d on = R * xy.normalized();
    return Eigen::Vector3d(on.x(), on.y(), 0.0);
  });
  return m;
}

// Signed distance to the exact torus (negative inside).
double TorusDistance(const Eigen::Vector3d& p, double R, double r) {
  return std::hypot(std::hypot(p.x(), p.y()) - R, p.z()) - r;
}

Mesh Concatenate(const Mesh& a, const Mesh& b) {
  Mesh m;
  m.V.resize(a.V.rows() + b.V.rows(), 3);
  m.V << a.V, b.V;
  m.F.resize(a.F.rows() + b.F.rows(), 3);
  m.F << a.F, (b.F.array() + static_cast<int>(a.V.rows())).matrix();
  return m;
}

// Volume enclosed by a closed, outward-oriented triangle mesh (divergence theorem).
double EnclosedVolume(const Mesh& m) {
  double v = 0;
  for (int f = 0; f < m.F.rows(); ++f) {
    const Eigen::Vector3d a = m.V.row(m.F(f, 0)), b = m.V.row(m.F(f, 1)), c = m.V.row(m.F(f, 2));
    v += a.dot(b.cross(c)) / 6.0;
  }
  return v;
}

struct TetFixture {
  RowMatrixX3d TV;
  RowMatrixX4i TT;
  std::vector<bool> boundary;  // per vertex: on the cube's surface
};

// The unit cube as n³ small cubes of 6 Kuhn tetrahedra each (conforming), interior vertices
// jittered by up to `jitter` cells.
TetFixture TetCube(int n, double jitter, unsigned seed = 1) {
  TetFixture t;
  auto id = [n](int x, int y, int z) { return x + (n + 1) * (y + (n + 1) * z); };
  t.TV.resize((n + 1) * (n + 1) * (n + 1), 3);
  t.boundary.resize(t.TV.rows());
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-jitter / n, jitter / n);
  for (int z = 0; z <= n; ++z)
    for (int y = 0; y <= n; ++y)
      for (int x = 0; x <= n; ++x) {
        const bool b = x == 0 || y == 0 || z == 0 || x == n || y == n || z == n;
        Eigen::RowVector3d p(double(x) / n, double(y) / n, double(z) / n);
        if (!b) p += Eigen::RowVector3d(u(gen), u(gen), u(gen));
        t.TV.row(id(x, y, z)) = p;
        t.boundary[id(x, y, z)] = b;
      }
  const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  t.TT.resize(6 * n * n * n, 4);
  int k = 0;
  for (int z = 0; z < n; ++z)
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x)
        for (const auto& perm : perms) {
          int c[3] = {x, y, z};
          t.TT(k, 0) = id(c[0], c[1], c[2]);
          for (int s = 0; s < 3; ++s) {
            ++c[perm[s]];
            t.TT(k, s + 1) = id(c[0], c[1], c[2]);
          }
          ++k;
        }
  return t;
}

double TetVolume(const RowMatrixX3d& TV, const RowMatrixX4i& TT, int t) {
  Eigen::Matrix3d D;
  for (int k = 0; k < 3; ++k) D.col(k) = (TV.row(TT(t, k + 1)) - TV.row(TT(t, 0))).transpose();
  return D.determinant() / 6.0;
}

VolumeDomain VoxelDomainOrDie(const Mesh& mesh, int resolution, VoxelGridReport* report = nullptr) {
  VoxelGridOptions options;
  options.resolution = resolution;
  absl::StatusOr<VolumeDomain> domain = BuildVoxelDomain(mesh, options, report);
  EXPECT_TRUE(domain.ok()) << domain.status();
  return domain.ok() ? *std::move(domain) : VolumeDomain{};
}

// Index of the cell (x, y, z) holding p, or -1 outside the grid.
int64_t CellIndexOf(const VolumeDomain& d, const Eigen::Vector3d& p) {
  const Eigen::Vector3d t = (p - d.origin) / d.spacing;
  const Eigen::Vector3i c = t.array().floor().cast<int>();
  if ((c.array() < 0).any() || (c.array() >= d.cells.array()).any()) return -1;
  return c.x() + int64_t{d.cells.x()} * (c.y() + int64_t{d.cells.y()} * c.z());
}

Eigen::Vector3d CellCentre(const VolumeDomain& d, int64_t cell) {
  const int x = cell % d.cells.x(), y = (cell / d.cells.x()) % d.cells.y(),
            z = cell / (int64_t{d.cells.x()} * d.cells.y());
  return d.origin + d.spacing * Eigen::Vector3d(x + 0.5, y + 0.5, z + 0.5);
}

// Dijkstra over the domain graph.
std::vector<double> GraphDistances(const VolumeDomain& d, int source) {
  std::vector<double> dist(d.num_nodes(), std::numeric_limits<double>::infinity());
  using Item = std::pair<double, int>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> queue;
  dist[source] = 0;
  queue.push({0.0, source});
  while (!queue.empty()) {
    const auto [di, i] = queue.top();
    queue.pop();
    if (di > dist[i]) continue;
    for (int k = d.graph_offsets[i]; k < d.graph_offsets[i + 1]; ++k) {
      const double nd = di + d.graph_lengths[k];
      if (nd < dist[d.graph_targets[k]]) {
        dist[d.graph_targets[k]] = nd;
        queue.push({nd, d.graph_targets[k]});
      }
    }
  }
  return dist;
}

int NearestNode(const VolumeDomain& d, const Eigen::Vector3d& p) {
  int best = 0;
  (d.nodes.rowwise() - p.transpose()).rowwise().squaredNorm().minCoeff(&best);
  return best;
}

// Checks K: symmetric, rows summing to 0, positive semi-definite (dense eigenvalues).
void ExpectSymmetricPsdWithZeroRowSums(const Eigen::SparseMatrix<double>& K) {
  const Eigen::MatrixXd dense(K);
  const double scale = dense.cwiseAbs().maxCoeff();
  ASSERT_GT(scale, 0);
  EXPECT_LE((dense - dense.transpose()).cwiseAbs().maxCoeff(), 1e-14 * scale);
  EXPECT_LE(dense.rowwise().sum().cwiseAbs().maxCoeff(), 1e-12 * scale);
  EXPECT_TRUE((dense.diagonal().array() > 0).all());
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(dense, Eigen::EigenvaluesOnly);
  EXPECT_GE(eig.eigenvalues().minCoeff(), -1e-10 * scale);
  // Connected domain: exactly one zero eigenvalue (the constants).
  EXPECT_GT(eig.eigenvalues()(1), 1e-8 * scale);
}

// ---------------------------------------------------------------------------------------------
// Discretization.

TEST(VolumeDomainTest, StiffnessRowsSumToZeroAndIsSymmetricPSD) {
  const VolumeDomain voxels = VoxelDomainOrDie(MakeSphere(Eigen::Vector3d(0.1, 0.2, 0.3), 1.0), 8);
  ASSERT_GT(voxels.num_nodes(), 0);
  ASSERT_LT(voxels.num_nodes(), 3000);
  ExpectSymmetricPsdWithZeroRowSums(voxels.K);

  const TetFixture cube = TetCube(4, 0.1);
  absl::StatusOr<VolumeDomain> tets = BuildTetDomain(cube.TV, cube.TT, cube.TV);
  ASSERT_TRUE(tets.ok()) << tets.status();
  ExpectSymmetricPsdWithZeroRowSums(tets->K);
}

TEST(VolumeDomainTest, MassSumsToDomainVolume) {
  // Voxels: the mass is the domain cells' volume; the domain covers the (inscribed polyhedral)
  // sphere and reaches at most a cell diagonal beyond it (surface cells).
  const double r = 1.0;
  const Mesh sphere = MakeSphere(Eigen::Vector3d::Zero(), r, 96, 48);
  VoxelGridReport report;
  const VolumeDomain voxels = VoxelDomainOrDie(sphere, 48, &report);
  EXPECT_FALSE(report.surface_only);
  const double h = voxels.spacing;
  EXPECT_NEAR(voxels.mass.sum(), report.inside_cells * h * h * h, 1e-12);
  EXPECT_TRUE((voxels.mass.array() > 0).all());
  const double exact = 4.0 / 3.0 * kPi * r * r * r;
  std::printf(
      "voxel sphere r=1 at resolution 48: domain volume %.4f, ball %.4f (ratio %.4f), "
      "%d cells of which %d surface\n",
      voxels.mass.sum(), exact, voxels.mass.sum() / exact, report.inside_cells,
      report.surface_cells);
  EXPECT_GE(voxels.mass.sum(), EnclosedVolume(sphere));
  EXPECT_LE(voxels.mass.sum(), 4.0 / 3.0 * kPi * std::pow(r + std::sqrt(3.0) * h, 3));
  EXPECT_NEAR(voxels.mass.sum() / exact, 1.0, 0.12);

  // Tets: the sum of |tet volumes|, whatever the orientation.
  TetFixture cube = TetCube(3, 0.1);
  for (int t = 0; t < cube.TT.rows(); t += 2) std::swap(cube.TT(t, 0), cube.TT(t, 1));  // flip
  absl::StatusOr<VolumeDomain> tets = BuildTetDomain(cube.TV, cube.TT, cube.TV);
  ASSERT_TRUE(tets.ok()) << tets.status();
  double total = 0;
  for (int t = 0; t < cube.TT.rows(); ++t) total += std::abs(TetVolume(cube.TV, cube.TT, t));
  EXPECT_NEAR(tets->mass.sum(), total, 1e-14);
  EXPECT_NEAR(tets->mass.sum(), 1.0, 1e-14);  // the unit cube
  EXPECT_TRUE((tets->mass.array() > 0).all());
}

TEST(VolumeDomainTest, LinearFunctionHasZeroDirichletEnergyAndLaplacianOfQuadratic) {
  // For f = a·x + b: (K f)_i = ∫∇f·∇φ_i = 0 at interior nodes, and fᵀKf = ∫|∇f|² = |a|²·volume,
  // exactly on both discretizations (both reproduce linear functions).
  const Eigen::Vector3d a(0.3, -1.2, 0.7);
  const double b = 0.4;
  {
    const VolumeDomain d = VoxelDomainOrDie(Torus(1.0, 0.4), 24);
    const Eigen::VectorXd f = (d.nodes * a).array() + b;
    const Eigen::VectorXd Kf = d.K * f;
    const double h3 = std::pow(d.spacing, 3);
    int interior = 0;
    for (int i = 0; i < d.num_nodes(); ++i) {
      if (std::abs(d.mass[i] - h3) > 1e-12 * h3) continue;  // all 8 cells in the domain
      ++interior;
      EXPECT_NEAR(Kf[i], 0.0, 1e-12) << "node " << i;
    }
    EXPECT_GT(interior, 100);
    EXPECT_NEAR(f.dot(Kf), a.squaredNorm() * d.mass.sum(), 1e-10 * a.squaredNorm() * d.mass.sum());
    // For q = |x|², Δq = 6: on the uniform grid −(K q)_i = 6 · mass_i exactly at interior nodes
    // (1D stiffness stencil on x² gives −2h, the mass stencils on 1 give h² ).
    const Eigen::VectorXd q = d.nodes.rowwise().squaredNorm();
    const Eigen::VectorXd Kq = d.K * q;
    for (int i = 0; i < d.num_nodes(); ++i) {
      if (std::abs(d.mass[i] - h3) > 1e-12 * h3) continue;
      EXPECT_NEAR(-Kq[i], 6.0 * d.mass[i], 1e-9 * d.mass[i]) << "node " << i;
    }
  }
  {
    const TetFixture cube = TetCube(5, 0.15);
    absl::StatusOr<VolumeDomain> d = BuildTetDomain(cube.TV, cube.TT, cube.TV);
    ASSERT_TRUE(d.ok()) << d.status();
    const Eigen::VectorXd f = (d->nodes * a).array() + b;
    const Eigen::VectorXd Kf = d->K * f;
    for (int i = 0; i < d->num_nodes(); ++i)
      if (!cube.boundary[i]) {
        EXPECT_NEAR(Kf[i], 0.0, 1e-12) << "node " << i;
      }
    EXPECT_NEAR(f.dot(Kf), a.squaredNorm() * 1.0, 1e-12);
    // Unstructured: the discrete Laplacian of |x|² is 6 only on average over the interior.
    const Eigen::VectorXd q = d->nodes.rowwise().squaredNorm();
    const Eigen::VectorXd Kq = d->K * q;
    double lap = 0, mass = 0;
    for (int i = 0; i < d->num_nodes(); ++i)
      if (!cube.boundary[i]) lap -= Kq[i], mass += d->mass[i];
    EXPECT_NEAR(lap / mass, 6.0, 0.3);
  }
}

TEST(VolumeDomainTest, TrilinearMapReproducesLinearFunctions) {
  const Eigen::Vector3d a(-0.6, 0.25, 1.1);
  const double b = -0.3;
  {
    const Mesh torus = Torus(1.0, 0.3);
    const VolumeDomain d = VoxelDomainOrDie(torus, 40);
    const Eigen::VectorXd at_mesh = d.to_mesh * ((d.nodes * a).array() + b).matrix();
    const Eigen::VectorXd exact = (torus.V * a).array() + b;
    EXPECT_LE((at_mesh - exact).cwiseAbs().maxCoeff(), 1e-12);
  }
  {
    const TetFixture cube = TetCube(4, 0.1);
    std::mt19937 gen(7);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    RowMatrixX3d V(300, 3);
    for (int i = 0; i < V.rows(); ++i) V.row(i) << u(gen), u(gen), u(gen);
    V.row(0) = cube.TV.row(10);  // coincident
    V.row(1) << 1.0, 0.5, 0.0;   // on the boundary
    absl::StatusOr<VolumeDomain> d = BuildTetDomain(cube.TV, cube.TT, V);
    ASSERT_TRUE(d.ok()) << d.status();
    const Eigen::VectorXd at_mesh = d->to_mesh * ((d->nodes * a).array() + b).matrix();
    const Eigen::VectorXd exact = (V * a).array() + b;
    EXPECT_LE((at_mesh - exact).cwiseAbs().maxCoeff(), 1e-12);
    EXPECT_EQ(d->to_mesh.row(0).nonZeros(), 1);
    EXPECT_EQ(d->to_mesh.coeff(0, 10), 1.0);
  }
}

// Carrying a coarse grid's node values to a finer grid of the same mesh (BBW's coarse start):
// trilinear interpolation reproduces a linear function wherever a coarse cell holds the point with
// all its corners, and it stays a convex combination of the coarse values near the domain's
// boundary (corners off the domain left out); a point far from the coarse domain gets NaN.
TEST(VolumeDomainTest, InterpolateOnGridCarriesNodeValuesToAFinerGrid) {
  const Mesh torus = Torus(1.0, 0.3);
  const VolumeDomain coarse = VoxelDomainOrDie(torus, 20);
  const VolumeDomain fine = VoxelDomainOrDie(torus, 40);
  const Eigen::Vector3d a(-0.6, 0.25, 1.1);
  Eigen::MatrixXd values(coarse.num_nodes(), 2);
  values.col(0) = ((coarse.nodes * a).array() - 0.3).matrix();
  values.col(1) = Eigen::VectorXd::LinSpaced(coarse.num_nodes(), 0.0, 1.0);
  absl::StatusOr<Eigen::MatrixXd> at_fine = InterpolateOnGrid(coarse, values, fine.nodes);
  ASSERT_TRUE(at_fine.ok()) << at_fine.status();
  ASSERT_EQ(at_fine->rows(), fine.num_nodes());
  ASSERT_EQ(at_fine->cols(), 2);
  const Eigen::Vector3i& c = coarse.cells;
  int whole_cells = 0;
  for (int i = 0; i < fine.num_nodes(); ++i) {
    const Eigen::Vector3d g = (fine.nodes.row(i).transpose() - coarse.origin) / coarse.spacing;
    const Eigen::Vector3i cell = g.array().floor().cast<int>().cwiseMax(0).cwiseMin(c.array() - 1);
    bool whole = true;
    for (int k = 0; k < 8; ++k) {
      const Eigen::Vector3i corner = cell + Eigen::Vector3i(k & 1, (k >> 1) & 1, (k >> 2) & 1);
      whole &= coarse.grid_node[corner.x() + (c.x() + 1) * (corner.y() + (c.y() + 1) * corner.z())] >= 0;
    }
    ASSERT_FALSE(std::isnan((*at_fine)(i, 0))) << "fine node " << i << " lies in the coarse grid's domain cells";
    if (whole) {
      ++whole_cells;
      EXPECT_NEAR((*at_fine)(i, 0), fine.nodes.row(i).dot(a) - 0.3, 1e-12) << "fine node " << i;
    }
    EXPECT_GE((*at_fine)(i, 1), -1e-15);
    EXPECT_LE((*at_fine)(i, 1), 1.0 + 1e-15);
  }
  EXPECT_GT(whole_cells, fine.num_nodes() / 2);

  RowMatrixX3d far(1, 3);
  far << 0.0, 0.0, 0.0;  // the hole of the torus: no coarse domain cell there
  absl::StatusOr<Eigen::MatrixXd> at_far = InterpolateOnGrid(coarse, values, far);
  ASSERT_TRUE(at_far.ok());
  EXPECT_TRUE(std::isnan((*at_far)(0, 0)));

  EXPECT_EQ(InterpolateOnGrid(coarse, values.topRows(3), fine.nodes).status().code(),
            absl::StatusCode::kInvalidArgument);
  const TetFixture cube = TetCube(2, 0.1);
  absl::StatusOr<VolumeDomain> tets = BuildTetDomain(cube.TV, cube.TT, cube.TV);
  ASSERT_TRUE(tets.ok());
  EXPECT_EQ(InterpolateOnGrid(*tets, Eigen::MatrixXd::Zero(tets->num_nodes(), 1), cube.TV).status().code(),
            absl::StatusCode::kInvalidArgument);
}

void ExpectPartitionOfUnity(const Eigen::SparseMatrix<double, Eigen::RowMajor>& M) {
  for (int i = 0; i < M.rows(); ++i) {
    double sum = 0;
    for (Eigen::SparseMatrix<double, Eigen::RowMajor>::InnerIterator it(M, i); it; ++it) {
      EXPECT_GE(it.value(), 0.0);
      sum += it.value();
    }
    EXPECT_NEAR(sum, 1.0, 1e-14) << "row " << i;
  }
}

TEST(VolumeDomainTest, ToMeshRowsArePartitionOfUnity) {
  const Mesh sphere = MakeSphere(Eigen::Vector3d(1, 2, 3), 0.5);
  const VolumeDomain voxels = VoxelDomainOrDie(sphere, 20);
  ASSERT_EQ(voxels.to_mesh.rows(), sphere.V.rows());
  ASSERT_EQ(voxels.to_mesh.cols(), voxels.num_nodes());
  ExpectPartitionOfUnity(voxels.to_mesh);

  const TetFixture cube = TetCube(3, 0.1);
  RowMatrixX3d V(50, 3);
  std::mt19937 gen(3);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int i = 0; i < V.rows(); ++i) V.row(i) << u(gen), u(gen), u(gen);
  absl::StatusOr<VolumeDomain> tets = BuildTetDomain(cube.TV, cube.TT, V);
  ASSERT_TRUE(tets.ok()) << tets.status();
  ExpectPartitionOfUnity(tets->to_mesh);
}

// ---------------------------------------------------------------------------------------------
// Inside/outside.

TEST(VolumeDomainTest, VoxelizesSphereAndTorus) {
  {
    const VolumeDomain d = VoxelDomainOrDie(MakeSphere(Eigen::Vector3d::Zero(), 1.0), 32);
    EXPECT_TRUE(d.cell_inside[CellIndexOf(d, Eigen::Vector3d(0.01, 0.02, 0.03))]);
    EXPECT_FALSE(d.cell_inside[0]);  // a padding corner
    // Every cell well inside the ball is in the domain, every cell well outside is not.
    for (int64_t c = 0; c < static_cast<int64_t>(d.cell_inside.size()); ++c) {
      const double dist = CellCentre(d, c).norm() - 1.0;
      if (dist < -d.spacing) {
        EXPECT_TRUE(d.cell_inside[c]) << c;
      }
      if (dist > d.spacing) {
        EXPECT_FALSE(d.cell_inside[c]) << c;
      }
    }
  }
  {
    const double R = 1.0, r = 0.35;
    const Mesh torus = Torus(R, r);
    VoxelGridReport report;
    const VolumeDomain d = VoxelDomainOrDie(torus, 48, &report);
    EXPECT_FALSE(d.cell_inside[CellIndexOf(d, Eigen::Vector3d(0.01, 0.01, 0.01))]);  // the hole
    EXPECT_TRUE(d.cell_inside[CellIndexOf(d, Eigen::Vector3d(R, 0.01, 0.01))]);
    EXPECT_TRUE(d.cell_inside[CellIndexOf(d, Eigen::Vector3d(-R, 0.01, 0.01))]);
    int checked = 0;
    for (int64_t c = 0; c < static_cast<int64_t>(d.cell_inside.size()); ++c) {
      const double dist = TorusDistance(CellCentre(d, c), R, r);
      if (dist < -d.spacing) {
        EXPECT_TRUE(d.cell_inside[c]) << c;
        ++checked;
      } else if (dist > d.spacing) {
        EXPECT_FALSE(d.cell_inside[c]) << c;
        ++checked;
      }
    }
    EXPECT_GT(checked, 0.75 * d.cell_inside.size());
    std::printf(
        "torus at resolution 48: %d domain cells (%d surface), %d components, %d winding "
        "evaluations, %.3f s\n",
        report.inside_cells, report.surface_cells, report.components, report.winding_evaluations,
        report.seconds);
  }
}

// Compares a domain's cells with the union of balls (centre, radius): inside cells well within
// must be in, cells well outside must be out.
void ExpectCellsMatchBalls(const VolumeDomain& d,
                           const std::vector<std::pair<Eigen::Vector3d, double>>& balls) {
  for (int64_t c = 0; c < static_cast<int64_t>(d.cell_inside.size()); ++c) {
    double dist = std::numeric_limits<double>::infinity();
    for (const auto& [centre, radius] : balls)
      dist = std::min(dist, (CellCentre(d, c) - centre).norm() - radius);
    if (dist < -d.spacing) {
      EXPECT_TRUE(d.cell_inside[c]) << "cell " << c << " at depth " << dist;
    }
    if (dist > d.spacing) {
      EXPECT_FALSE(d.cell_inside[c]) << "cell " << c << " at " << dist;
    }
  }
}

TEST(VolumeDomainTest, RobustToSelfIntersectionsAndDuplicatedComponents) {
  const Eigen::Vector3d c1(-0.5, 0, 0), c2(0.5, 0.1, 0);
  // Two overlapping spheres (the winding number is 2 in the overlap).
  ExpectCellsMatchBalls(VoxelDomainOrDie(Concatenate(MakeSphere(c1, 1.0), MakeSphere(c2, 1.0)), 40),
                        {{c1, 1.0}, {c2, 1.0}});
  // The same sphere twice.
  const Mesh sphere = MakeSphere(c1, 1.0);
  ExpectCellsMatchBalls(VoxelDomainOrDie(Concatenate(sphere, sphere), 32), {{c1, 1.0}});
  // A sphere with the fan around one equator vertex deleted: a hole about 3 cells wide, through
  // which the inside is one component with the outside.
  Mesh holed = sphere;
  const int pierced = 1 + 11 * 48 + 5;  // ring 12 (next to the equator), segment 5
  std::vector<int> keep;
  for (int f = 0; f < holed.F.rows(); ++f)
    if ((holed.F.row(f).array() != pierced).all()) keep.push_back(f);
  ASSERT_EQ(holed.F.rows() - static_cast<int>(keep.size()), 6);
  RowMatrixX3i F(keep.size(), 3);
  for (size_t k = 0; k < keep.size(); ++k) F.row(k) = holed.F.row(keep[k]);
  holed.F = F;
  VoxelGridReport report;
  const VolumeDomain d = VoxelDomainOrDie(holed, 32, &report);
  ExpectCellsMatchBalls(d, {{c1, 1.0}});
  std::printf(
      "holed sphere at resolution 32: %d components, %d winding evaluations "
      "(%lld cells), %.3f s\n",
      report.components, report.winding_evaluations, static_cast<long long>(d.cell_inside.size()),
      report.seconds);
}

TEST(VolumeDomainTest, InvertedOrientationStillHasAnInside) {
  Mesh sphere = MakeSphere(Eigen::Vector3d::Zero(), 1.0);
  sphere.F.col(1).swap(sphere.F.col(2));
  ExpectCellsMatchBalls(VoxelDomainOrDie(sphere, 24), {{Eigen::Vector3d::Zero(), 1.0}});
}

TEST(VolumeDomainTest, EveryMeshVertexLiesInADomainCell) {
  for (const Mesh& mesh : {Torus(1.0, 0.2, 48, 12), MakeSphere(Eigen::Vector3d(0.5, 0, 0), 0.7)}) {
    const VolumeDomain d = VoxelDomainOrDie(mesh, 16);
    for (int v = 0; v < mesh.V.rows(); ++v) {
      const Eigen::Vector3d p = mesh.V.row(v).transpose();
      const int64_t cell = CellIndexOf(d, p);
      ASSERT_GE(cell, 0);
      // The vertex's cell, or (on a cell face) a neighbouring cell that also holds it, is in
      // the domain; and the nodes it interpolates from are corners of one domain element.
      std::set<int> nodes;
      for (Eigen::SparseMatrix<double, Eigen::RowMajor>::InnerIterator it(d.to_mesh, v); it; ++it)
        nodes.insert(static_cast<int>(it.col()));
      bool in_one_element = false;
      for (int e = 0; e < d.elements.rows() && !in_one_element; ++e) {
        const std::set<int> corners(d.elements.row(e).data(), d.elements.row(e).data() + 8);
        if (!std::includes(corners.begin(), corners.end(), nodes.begin(), nodes.end())) continue;
        const Eigen::Vector3d lo = d.nodes.row(d.elements(e, 0)).transpose();
        in_one_element =
            ((p - lo).array() >= -1e-12).all() && ((p - lo).array() <= d.spacing + 1e-12).all();
      }
      EXPECT_TRUE(in_one_element) << "vertex " << v;
    }
  }
}

TEST(VolumeDomainTest, AnOpenPlaneIsASheetOfItsSurfaceCells) {
  // A flat square encloses no volume (no cell centre has |w| >= 1/2: a finite plane subtends less
  // than a hemisphere from every point off it), so the domain is the cells it passes through.
  Mesh plane;
  const int n = 10;
  plane.V.resize((n + 1) * (n + 1), 3);
  for (int y = 0; y <= n; ++y)
    for (int x = 0; x <= n; ++x) plane.V.row(x + (n + 1) * y) << x * 0.1, y * 0.1, 0.0;
  plane.F.resize(2 * n * n, 3);
  for (int y = 0, f = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const int a = x + (n + 1) * y;
      plane.F.row(f++) << a, a + 1, a + n + 2;
      plane.F.row(f++) << a, a + n + 2, a + n + 1;
    }
  // Flat on a grid plane, then tilted so that the sheet crosses cells at every angle. (A curved
  // open sheet may enclose |w| > 1/2 on its concave side, and then has an inside.)
  const Eigen::Matrix3d tilt = (Eigen::AngleAxisd(0.3, Eigen::Vector3d::UnitX()) *
                                Eigen::AngleAxisd(0.5, Eigen::Vector3d::UnitY()))
                                   .toRotationMatrix();
  for (const Eigen::Matrix3d& R : {Eigen::Matrix3d(Eigen::Matrix3d::Identity()), tilt}) {
    SCOPED_TRACE(R.isIdentity() ? "flat" : "tilted");
    Mesh sheet = plane;
    sheet.V = plane.V * R.transpose();
    VoxelGridOptions options;
    options.resolution = 16;  // K is checked densely below
    VoxelGridReport report;
    absl::StatusOr<VolumeDomain> d = BuildVoxelDomain(sheet, options, &report);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_TRUE(report.surface_only);
    EXPECT_THAT(report.BriefReport(), HasSubstr("surface cells only: the mesh encloses no volume"));
    EXPECT_EQ(report.inside_cells, report.surface_cells);
    const double h = d->spacing;
    const Eigen::Vector3d normal = R.col(2), corner = Eigen::Vector3d::Zero();
    // Every domain cell touches the sheet's plane: its centre is within half a cell diagonal.
    int cells = 0;
    for (int z = 0; z < d->cells.z(); ++z)
      for (int y = 0; y < d->cells.y(); ++y)
        for (int x = 0; x < d->cells.x(); ++x) {
          if (!d->cell_inside[x + d->cells.x() * (y + d->cells.y() * z)]) continue;
          ++cells;
          const Eigen::Vector3d centre = d->origin + h * Eigen::Vector3d(x + 0.5, y + 0.5, z + 0.5);
          EXPECT_LE(std::abs(normal.dot(centre - corner)), std::sqrt(3.0) / 2 * h * (1 + 1e-9));
        }
    EXPECT_EQ(cells, report.inside_cells);
    // Every point of the square lies in a domain cell (one of the cells whose closed box holds it).
    for (int i = 0; i <= 40; ++i)
      for (int j = 0; j <= 40; ++j) {
        const Eigen::Vector3d p = R * Eigen::Vector3d(i / 40.0, j / 40.0, 0.0);
        const Eigen::Vector3d g = (p - d->origin) / h;
        bool covered = false;
        for (int k = 0; k < 8; ++k) {
          Eigen::Vector3i c;
          for (int a = 0; a < 3; ++a) c[a] = static_cast<int>(std::floor(g[a] + ((k >> a) & 1 ? 1e-9 : -1e-9)));
          covered |= (c.array() >= 0).all() && (c.array() < d->cells.array()).all() &&
                     d->cell_inside[c.x() + d->cells.x() * (c.y() + d->cells.y() * c.z())];
        }
        EXPECT_TRUE(covered) << "point " << p.transpose() << " of the sheet is in no domain cell";
      }
    // The vertices interpolate exactly from the sheet's nodes, and the operators are those of any
    // domain: K symmetric positive semi-definite with zero row sums, the mass the cells' volume.
    const RowMatrixX3d back = d->to_mesh * d->nodes;
    EXPECT_LT((back - sheet.V).cwiseAbs().maxCoeff(), 1e-12);
    ExpectSymmetricPsdWithZeroRowSums(d->K);
    EXPECT_NEAR(d->mass.sum(), report.inside_cells * h * h * h, 1e-12);
    EXPECT_TRUE((d->mass.array() > 0).all());
  }
  // A mesh whose vertices all coincide has no surface to embed either.
  Mesh point = plane;
  point.V = plane.V.row(5).replicate(plane.V.rows(), 1);
  absl::StatusOr<VolumeDomain> d = BuildVoxelDomain(point, VoxelGridOptions{});
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("all its vertices coincide"));
}

TEST(VolumeDomainTest, ResolutionOverTheLimitIsRejected) {
  const Mesh sphere = MakeSphere(Eigen::Vector3d::Zero(), 1.0, 12, 6);
  for (int res : {VoxelGridOptions::kMaxResolution + 1, VoxelGridOptions::kMinResolution - 1, 0}) {
    VoxelGridOptions options;
    options.resolution = res;
    absl::StatusOr<VolumeDomain> d = BuildVoxelDomain(sphere, options);
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(d.status().message()), HasSubstr(std::to_string(res)));
    EXPECT_THAT(std::string(d.status().message()), HasSubstr("[8, 256]"));
  }
  VoxelGridOptions options;
  options.resolution = VoxelGridOptions::kMinResolution;
  EXPECT_TRUE(BuildVoxelDomain(sphere, options).ok());
}

TEST(VolumeDomainTest, CancelledBuildReturnsCancelled) {
  std::atomic<bool> cancel{true};
  std::vector<std::string> stages;
  const Progress progress([&](const std::string& stage, double) { stages.push_back(stage); },
                          &cancel);
  EXPECT_EQ(
      BuildVoxelDomain(Torus(1.0, 0.3), VoxelGridOptions{}, nullptr, progress).status().code(),
      absl::StatusCode::kCancelled);
  const TetFixture cube = TetCube(3, 0.0);
  EXPECT_EQ(BuildTetDomain(cube.TV, cube.TT, cube.TV, progress).status().code(),
            absl::StatusCode::kCancelled);
  cancel = false;
  stages.clear();
  EXPECT_TRUE(BuildVoxelDomain(Torus(1.0, 0.3), VoxelGridOptions{}, nullptr, progress).ok());
  EXPECT_FALSE(stages.empty());
}

// ---------------------------------------------------------------------------------------------
// The node graph.

// Pairs of nodes that are corners of a common element (voxel cell or tet).
std::set<std::pair<int, int>> ElementPairs(const VolumeDomain& d) {
  std::set<std::pair<int, int>> pairs;
  for (int e = 0; e < d.elements.rows(); ++e)
    for (int a = 0; a < d.elements.cols(); ++a)
      for (int b = 0; b < d.elements.cols(); ++b)
        if (a != b) pairs.insert({d.elements(e, a), d.elements(e, b)});
  return pairs;
}

void ExpectGraphIsElementAdjacency(const VolumeDomain& d) {
  ASSERT_EQ(static_cast<int>(d.graph_offsets.size()), d.num_nodes() + 1);
  ASSERT_EQ(d.graph_offsets.back(), static_cast<int>(d.graph_targets.size()));
  ASSERT_EQ(d.graph_targets.size(), d.graph_lengths.size());
  std::set<std::pair<int, int>> edges;
  for (int i = 0; i < d.num_nodes(); ++i)
    for (int k = d.graph_offsets[i]; k < d.graph_offsets[i + 1]; ++k) {
      const int j = d.graph_targets[k];
      EXPECT_TRUE(edges.insert({i, j}).second) << "duplicate edge " << i << "-" << j;
      EXPECT_NEAR(d.graph_lengths[k], (d.nodes.row(i) - d.nodes.row(j)).norm(), 1e-14);
    }
  // Edges join exactly the nodes of a common element: a path never leaves the domain.
  EXPECT_EQ(edges, ElementPairs(d));
}

TEST(VolumeDomainTest, GraphEdgesStayInsideTheDomain) {
  const VolumeDomain voxels = VoxelDomainOrDie(Torus(1.0, 0.3, 32, 12), 16);
  ExpectGraphIsElementAdjacency(voxels);
  // ... and each voxel edge's midpoint lies in (the closure of) a domain cell, at length h, h√2
  // or h√3.
  const double h = voxels.spacing;
  for (int i = 0; i < voxels.num_nodes(); ++i)
    for (int k = voxels.graph_offsets[i]; k < voxels.graph_offsets[i + 1]; ++k) {
      const double len = voxels.graph_lengths[k] / h;
      EXPECT_TRUE(std::abs(len - 1) < 1e-12 || std::abs(len - std::sqrt(2.0)) < 1e-12 ||
                  std::abs(len - std::sqrt(3.0)) < 1e-12);
    }
  const TetFixture cube = TetCube(3, 0.1);
  absl::StatusOr<VolumeDomain> tets = BuildTetDomain(cube.TV, cube.TT, cube.TV);
  ASSERT_TRUE(tets.ok()) << tets.status();
  ExpectGraphIsElementAdjacency(*tets);
}

TEST(VolumeDomainTest, GeodesicAroundTorus) {
  const double R = 1.0, r = 0.25;
  const VolumeDomain d = VoxelDomainOrDie(Torus(R, r), 48);
  const int from = NearestNode(d, Eigen::Vector3d(R, 0, 0));
  const int to = NearestNode(d, Eigen::Vector3d(-R, 0, 0));
  const double straight = (d.nodes.row(from) - d.nodes.row(to)).norm();
  const double geodesic = GraphDistances(d, from)[to];
  std::printf("torus R=1 r=0.25: straight %.3f, graph geodesic %.3f, inner half circle %.3f\n",
              straight, geodesic, kPi * (R - r));
  // Around the hole: at least half the inner rim, at most half the centre circle plus the
  // 26-neighbourhood's overestimate of Euclidean length (< 8%).
  EXPECT_GT(geodesic, kPi * (R - r));
  EXPECT_GT(geodesic, 1.15 * straight);
  EXPECT_LT(geodesic, 1.08 * kPi * R + 4 * d.spacing);
}

// ---------------------------------------------------------------------------------------------
// Tet input errors.

TEST(VolumeDomainTest, BuildDomainIsTheVoxelOrTetBuilderAndReportsItInOneLine) {
  const Mesh sphere = MakeSphere(Eigen::Vector3d::Zero(), 1.0, 24, 12);
  DomainOptions options;
  options.voxel.resolution = 12;
  DomainReport report;
  absl::StatusOr<VolumeDomain> voxels = BuildDomain(sphere, options, &report);
  ASSERT_TRUE(voxels.ok()) << voxels.status();
  VoxelGridReport direct_report;
  const VolumeDomain direct = VoxelDomainOrDie(sphere, 12, &direct_report);
  EXPECT_EQ(voxels->nodes, direct.nodes);
  EXPECT_EQ(report.nodes, direct.num_nodes());
  EXPECT_EQ(report.BriefReport(),
            absl::StrFormat("voxel grid 12 (%dx%dx%d cells, %d in the domain, %d nodes, spacing %g)",
                            direct.cells.x(), direct.cells.y(), direct.cells.z(),
                            direct_report.inside_cells, direct.num_nodes(), direct.spacing));

  const TetFixture cube = TetCube(2, 0.0);
  Mesh on_tets;
  on_tets.V = cube.TV;
  options.tet_mesh = TetDomainInput{cube.TV, cube.TT};
  absl::StatusOr<VolumeDomain> tets = BuildDomain(on_tets, options, &report);
  ASSERT_TRUE(tets.ok()) << tets.status();
  EXPECT_EQ(tets->kind, VolumeDomain::Kind::kTetMesh);
  EXPECT_EQ(report.BriefReport(), absl::StrFormat("tet mesh (%d nodes, %d tets)", cube.TV.rows(), cube.TT.rows()));

  options.tet_mesh.reset();
  options.voxel.resolution = 300;
  EXPECT_EQ(BuildDomain(sphere, options).status().message(),
            "options.voxel.resolution = 300 is outside [8, 256]");
}

TEST(VolumeDomainTest, TetInputErrorsAreInvalidArgument) {
  const TetFixture cube = TetCube(2, 0.0);
  RowMatrixX4i bad = cube.TT;
  bad(3, 2) = 1000;
  absl::StatusOr<VolumeDomain> d = BuildTetDomain(cube.TV, bad, cube.TV);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("tetrahedra[3][2] = 1000"));

  RowMatrixX3d outside(1, 3);
  outside << 1.5, 0.5, 0.5;
  d = BuildTetDomain(cube.TV, cube.TT, outside);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("vertices[0]"));

  // A flat extra tet is skipped: no NaN in K, same K as without it.
  RowMatrixX4i with_flat(cube.TT.rows() + 1, 4);
  with_flat << cube.TT, RowMatrixX4i::Zero(1, 4);
  with_flat.bottomRows(1) << 0, 1, 2, 2;  // 0, 1, 2 are collinear on the cube's edge
  d = BuildTetDomain(cube.TV, with_flat, cube.TV);
  ASSERT_TRUE(d.ok()) << d.status();
  absl::StatusOr<VolumeDomain> plain = BuildTetDomain(cube.TV, cube.TT, cube.TV);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(d->elements.rows(), cube.TT.rows());
  EXPECT_EQ((Eigen::MatrixXd(d->K) - Eigen::MatrixXd(plain->K)).cwiseAbs().maxCoeff(), 0.0);
}

// ---------------------------------------------------------------------------------------------
// Real characters.

TEST(VolumeDomainTest, HandTetDomainMapsSurfaceToCoincidentNodes) {
  const std::string mesh_path = DataPath("libigl/hand/hand.mesh");
  SKINNING_REQUIRE_DATA(mesh_path);
  absl::StatusOr<TetMesh> tet = ReadMedit(mesh_path);
  ASSERT_TRUE(tet.ok()) << tet.status();
  const RowMatrixX3d V = tet->V.topRows(4780);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<VolumeDomain> d = BuildTetDomain(tet->V, tet->T, V);
  ASSERT_TRUE(d.ok()) << d.status();
  std::printf("hand tet domain: %d nodes, %lld tets, %.3f s\n", d->num_nodes(),
              static_cast<long long>(d->elements.rows()),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  for (int v = 0; v < V.rows(); ++v) {
    ASSERT_EQ(d->to_mesh.row(v).nonZeros(), 1) << v;
    EXPECT_EQ(d->to_mesh.coeff(v, v), 1.0) << v;
  }
  double volume = 0;
  for (int t = 0; t < tet->T.rows(); ++t) volume += std::abs(TetVolume(tet->V, tet->T, t));
  EXPECT_NEAR(d->mass.sum(), volume, 1e-12 * volume);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
