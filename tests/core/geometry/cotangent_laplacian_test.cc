#include "core/geometry/cotangent_laplacian.h"

#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <Eigen/Geometry>
#include <Eigen/SparseCore>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <utility>
#include <vector>
#include "tests/support/fixtures.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

// A flat (n+1) by (n+1) grid on [0, 1]² in z = 0; interior vertices jittered by up to `jitter`
// of a cell so that the triangles are irregular (some obtuse).
Mesh FlatGrid(int n, double jitter, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-jitter, jitter);
  Mesh mesh;
  mesh.V.resize((n + 1) * (n + 1), 3);
  for (int y = 0; y <= n; ++y)
    for (int x = 0; x <= n; ++x) {
      const bool interior = x > 0 && x < n && y > 0 && y < n;
      const double dx = interior ? u(gen) : 0.0, dy = interior ? u(gen) : 0.0;
      mesh.V.row(y * (n + 1) + x) << (x + dx) / n, (y + dy) / n, 0.0;
    }
  mesh.F.resize(2 * n * n, 3);
  int f = 0;
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      const int a = y * (n + 1) + x, b = a + 1, c = a + n + 1, d = c + 1;
      // Alternate the diagonal so the mesh is not a single family of parallel edges.
      if ((x + y) % 2 == 0) {
        mesh.F.row(f++) << a, b, d;
        mesh.F.row(f++) << a, d, c;
      } else {
        mesh.F.row(f++) << a, b, c;
        mesh.F.row(f++) << b, d, c;
      }
    }
  return mesh;
}

bool OnGridBoundary(int i, int n) {
  const int x = i % (n + 1), y = i / (n + 1);
  return x == 0 || y == 0 || x == n || y == n;
}

// The unit icosphere: an icosahedron subdivided `levels` times, vertices projected to the sphere.
Mesh UnitIcosphere(int levels) {
  const double t = (1.0 + std::sqrt(5.0)) / 2.0;
  std::vector<Eigen::Vector3d> v = {{-1, t, 0}, {1, t, 0}, {-1, -t, 0}, {1, -t, 0},
                                    {0, -1, t}, {0, 1, t}, {0, -1, -t}, {0, 1, -t},
                                    {t, 0, -1}, {t, 0, 1}, {-t, 0, -1}, {-t, 0, 1}};
  std::vector<Eigen::Vector3i> f = {{0, 11, 5}, {0, 5, 1},  {0, 1, 7},   {0, 7, 10}, {0, 10, 11},
                                    {1, 5, 9},  {5, 11, 4}, {11, 10, 2}, {10, 7, 6}, {7, 1, 8},
                                    {3, 9, 4},  {3, 4, 2},  {3, 2, 6},   {3, 6, 8},  {3, 8, 9},
                                    {4, 9, 5},  {2, 4, 11}, {6, 2, 10},  {8, 6, 7},  {9, 8, 1}};
  for (auto& p : v) p.normalize();
  for (int level = 0; level < levels; ++level) {
    std::map<std::pair<int, int>, int> midpoint;
    auto mid = [&](int a, int b) {
      const auto key = std::minmax(a, b);
      auto it = midpoint.find(key);
      if (it != midpoint.end()) return it->second;
      v.push_back((v[a] + v[b]).normalized());
      midpoint[key] = static_cast<int>(v.size()) - 1;
      return static_cast<int>(v.size()) - 1;
    };
    std::vector<Eigen::Vector3i> next;
    for (const auto& tri : f) {
      const int ab = mid(tri[0], tri[1]), bc = mid(tri[1], tri[2]), ca = mid(tri[2], tri[0]);
      next.push_back({tri[0], ab, ca});
      next.push_back({tri[1], bc, ab});
      next.push_back({tri[2], ca, bc});
      next.push_back({ab, bc, ca});
    }
    f = std::move(next);
  }
  Mesh mesh;
  mesh.V = testing::PositionRows(v);
  mesh.F = testing::TriangleRows(f);
  return mesh;
}

double TotalArea(const Mesh& mesh) {
  double area = 0;
  for (int f = 0; f < mesh.F.rows(); ++f) {
    const Eigen::Vector3d a = mesh.V.row(mesh.F(f, 0)), b = mesh.V.row(mesh.F(f, 1)),
                          c = mesh.V.row(mesh.F(f, 2));
    area += 0.5 * (b - a).cross(c - a).norm();
  }
  return area;
}

TEST(CotangentLaplacianTest, RowsSumToZeroAndMatrixIsSymmetric) {
  for (const Mesh& mesh : {FlatGrid(8, 0.3, 1), UnitIcosphere(2)}) {
    const Eigen::SparseMatrix<double> K = CotangentStiffness(mesh.V, mesh.F);
    ASSERT_EQ(K.rows(), mesh.V.rows());
    ASSERT_EQ(K.cols(), mesh.V.rows());
    const Eigen::VectorXd row_sums = K * Eigen::VectorXd::Ones(K.cols());
    EXPECT_LT(row_sums.cwiseAbs().maxCoeff(), 1e-12);
    const Eigen::SparseMatrix<double> KT = K.transpose();
    EXPECT_LT((Eigen::MatrixXd(K) - Eigen::MatrixXd(KT)).cwiseAbs().maxCoeff(), 1e-14);
  }
}

TEST(CotangentLaplacianTest, IsPositiveSemiDefinite) {
  const Mesh mesh = FlatGrid(10, 0.35, 2);  // jittered: has obtuse triangles
  const Eigen::MatrixXd K = Eigen::MatrixXd(CotangentStiffness(mesh.V, mesh.F));
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(K);
  EXPECT_GT(eig.eigenvalues().minCoeff(), -1e-10);
  // Exactly one zero eigenvalue on a connected mesh: the constants.
  EXPECT_GT(eig.eigenvalues()(1), 1e-6);
}

TEST(CotangentLaplacianTest, LinearFunctionIsHarmonicAtInteriorVerticesOfFlatMesh) {
  const int n = 12;
  const Mesh mesh = FlatGrid(n, 0.3, 3);
  const Eigen::SparseMatrix<double> K = CotangentStiffness(mesh.V, mesh.F);
  const Eigen::VectorXd f =
      0.7 * mesh.V.col(0) - 1.3 * mesh.V.col(1) + Eigen::VectorXd::Constant(mesh.V.rows(), 2.0);
  const Eigen::VectorXd Kf = K * f;
  int interior = 0;
  for (int i = 0; i < mesh.V.rows(); ++i) {
    if (OnGridBoundary(i, n)) continue;
    ++interior;
    EXPECT_NEAR(Kf(i), 0.0, 1e-12) << "vertex " << i;
  }
  EXPECT_EQ(interior, (n - 1) * (n - 1));
}

TEST(CotangentLaplacianTest, DirichletEnergyOfLinearFunctionIsGradientSquaredTimesArea) {
  const Mesh flat = FlatGrid(9, 0.3, 4);
  // The same mesh rotated and moved off the origin, with a gradient not in its plane: only the
  // in-plane part of the gradient counts.
  const Eigen::Matrix3d R =
      Eigen::AngleAxisd(0.7, Eigen::Vector3d(1, 2, 3).normalized()).toRotationMatrix();
  Mesh moved = flat;
  for (int i = 0; i < moved.V.rows(); ++i)
    moved.V.row(i) = (R * flat.V.row(i).transpose() + Eigen::Vector3d(0.3, -2, 5)).transpose();
  const Eigen::Vector3d a(0.4, -1.1, 2.5);
  const Eigen::Vector3d normal = R * Eigen::Vector3d::UnitZ();
  const Eigen::Vector3d a_tangent = a - a.dot(normal) * normal;
  const double area = TotalArea(moved);
  EXPECT_NEAR(area, 1.0, 1e-12);
  const Eigen::VectorXd f = moved.V * a;
  const Eigen::SparseMatrix<double> K = CotangentStiffness(moved.V, moved.F);
  const double energy = f.dot(K * f);
  EXPECT_NEAR(energy, a_tangent.squaredNorm() * area, 1e-10);
  // In the plane z = 0 with an in-plane gradient: |a|² · area.
  const Eigen::Vector3d b(1.5, -0.5, 0.0);
  const Eigen::VectorXd g = flat.V * b;
  EXPECT_NEAR(g.dot(CotangentStiffness(flat.V, flat.F) * g), b.squaredNorm() * 1.0, 1e-10);
}

TEST(CotangentLaplacianTest, SphereHeightIsEigenfunctionWithEigenvalueTwo) {
  const Mesh sphere = UnitIcosphere(4);  // 2562 vertices
  const Eigen::SparseMatrix<double> K = CotangentStiffness(sphere.V, sphere.F);
  const Eigen::VectorXd z = sphere.V.col(2);
  // Δz = −M⁻¹Kz should be −2z on the unit sphere.
  auto error_with = [&](MassLumping lumping) -> Eigen::VectorXd {
    const Eigen::VectorXd M = LumpedMass(sphere.V, sphere.F, lumping);
    return -(K * z).cwiseQuotient(M) + 2.0 * z;
  };
  const Eigen::VectorXd voronoi = error_with(MassLumping::kVoronoi);
  const Eigen::VectorXd barycentric = error_with(MassLumping::kBarycentric);
  auto rms = [](const Eigen::VectorXd& e) { return std::sqrt(e.squaredNorm() / e.size()); };
  std::printf(
      "[ values ] unit sphere, 2562 vertices, |M⁻¹Kz − 2z|: Voronoi rms %.4f max %.4f; "
      "barycentric rms %.4f max %.4f\n",
      rms(voronoi), voronoi.cwiseAbs().maxCoeff(), rms(barycentric),
      barycentric.cwiseAbs().maxCoeff());
  EXPECT_LT(rms(voronoi), 0.01);
  EXPECT_LT(voronoi.cwiseAbs().maxCoeff(), 0.02);
  // Barycentric lumping is as good on the valence-6 vertices but gives the 12 valence-5 ones
  // (indices 0–11, whose 1-ring triangles are 72°–54°–54°) too little area: up to ~15% there.
  EXPECT_LT(rms(barycentric), 0.05);
  EXPECT_LT(barycentric.tail(barycentric.size() - 12).cwiseAbs().maxCoeff(), 0.02);
  EXPECT_LT(barycentric.cwiseAbs().maxCoeff(), 0.3);
}

TEST(CotangentLaplacianTest, LumpedMassesSumToSurfaceArea) {
  for (const Mesh& mesh : {FlatGrid(7, 0.4, 5), UnitIcosphere(3)}) {
    const double area = TotalArea(mesh);
    for (MassLumping lumping : {MassLumping::kVoronoi, MassLumping::kBarycentric}) {
      const Eigen::VectorXd M = LumpedMass(mesh.V, mesh.F, lumping);
      EXPECT_NEAR(M.sum(), area, 1e-12 * area);
      EXPECT_GT(M.minCoeff(), 0.0);
    }
  }
}

TEST(CotangentLaplacianTest, VoronoiMassMatchesClosedFormsOnSingleTriangles) {
  // Right isosceles triangle (0,0),(1,0),(0,1): non-obtuse (the right angle is not obtuse);
  // the circumcentre is the hypotenuse midpoint, so the right-angle corner's Voronoi region is
  // the square of side ½ (area ¼) and the others get (½ − ¼)/2 = ⅛ each.
  RowMatrixX3d V(3, 3);
  V << 0, 0, 0, 1, 0, 0, 0, 1, 0;
  RowMatrixX3i F(1, 3);
  F << 0, 1, 2;
  Eigen::VectorXd M = VoronoiMass(V, F);
  EXPECT_NEAR(M(0), 0.25, 1e-15);
  EXPECT_NEAR(M(1), 0.125, 1e-15);
  EXPECT_NEAR(M(2), 0.125, 1e-15);
  // Obtuse triangle: half the area to the obtuse corner, a quarter to each other one.
  V << 0, 0, 0, 4, 0, 0, 2, 0.5, 0;  // area 1, obtuse at vertex 2
  M = VoronoiMass(V, F);
  EXPECT_NEAR(M(2), 0.5, 1e-15);
  EXPECT_NEAR(M(0), 0.25, 1e-15);
  EXPECT_NEAR(M(1), 0.25, 1e-15);
  M = BarycentricMass(V, F);
  EXPECT_NEAR(M(0), 1.0 / 3.0, 1e-15);
}

TEST(CotangentLaplacianTest, VoronoiMassIsTheCircumcentreRegionOfAcuteTriangles) {
  // For a non-obtuse triangle, corner c's Voronoi region is the quadrilateral (c, midpoint of
  // one edge, circumcentre, midpoint of the other edge): two right triangles.
  std::mt19937 gen(9);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  int tested = 0;
  while (tested < 100) {
    RowMatrixX3d V(3, 3);
    for (int i = 0; i < 3; ++i) V.row(i) << u(gen), u(gen), u(gen);
    const Eigen::Vector3d a = V.row(0), b = V.row(1), c = V.row(2);
    if ((b - a).dot(c - a) <= 0 || (a - b).dot(c - b) <= 0 || (a - c).dot(b - c) <= 0) continue;
    ++tested;
    // Circumcentre from the standard formula.
    const Eigen::Vector3d ab = b - a, ac = c - a, n = ab.cross(ac);
    const Eigen::Vector3d o =
        a +
        (ac.squaredNorm() * n.cross(ab) + ab.squaredNorm() * ac.cross(n)) / (2 * n.squaredNorm());
    auto area = [](const Eigen::Vector3d& p, const Eigen::Vector3d& q, const Eigen::Vector3d& r) {
      return 0.5 * (q - p).cross(r - p).norm();
    };
    const Eigen::Vector3d p[3] = {a, b, c};
    RowMatrixX3i F(1, 3);
    F << 0, 1, 2;
    const Eigen::VectorXd M = VoronoiMass(V, F);
    for (int k = 0; k < 3; ++k) {
      const Eigen::Vector3d m1 = 0.5 * (p[k] + p[(k + 1) % 3]), m2 = 0.5 * (p[k] + p[(k + 2) % 3]);
      EXPECT_NEAR(M(k), area(p[k], m1, o) + area(p[k], o, m2), 1e-12);
    }
  }
}

TEST(CotangentLaplacianTest, EquilateralTriangleHasCotangentOfSixtyDegrees) {
  RowMatrixX3d V(3, 3);
  V << 0, 0, 0, 1, 0, 0, 0.5, std::sqrt(3.0) / 2, 0;
  RowMatrixX3i F(1, 3);
  F << 0, 1, 2;
  const Eigen::MatrixXd K = Eigen::MatrixXd(CotangentStiffness(V, F));
  const double half_cot60 = 0.5 / std::sqrt(3.0);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(K(i, j), i == j ? 2 * half_cot60 : -half_cot60, 1e-15);
}

TEST(CotangentLaplacianTest, DegenerateTrianglesAndUnusedVerticesContributeNothing) {
  RowMatrixX3d V(5, 3);
  V << 0, 0, 0, 1, 0, 0, 0, 1, 0, 2, 0, 0, 9, 9, 9;  // vertex 4 is on no triangle
  RowMatrixX3i F(2, 3);
  F << 0, 1, 2, 0, 1, 3;  // the second triangle is flat (collinear)
  const Eigen::SparseMatrix<double> K = CotangentStiffness(V, F);
  EXPECT_TRUE(Eigen::MatrixXd(K).allFinite());
  EXPECT_EQ(Eigen::MatrixXd(K).row(3).cwiseAbs().sum(), 0.0);
  EXPECT_EQ(Eigen::MatrixXd(K).row(4).cwiseAbs().sum(), 0.0);
  const Eigen::VectorXd M = VoronoiMass(V, F);
  EXPECT_EQ(M(3), 0.0);
  EXPECT_EQ(M(4), 0.0);
  EXPECT_NEAR(M.sum(), 0.5, 1e-15);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
