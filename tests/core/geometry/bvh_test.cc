#include "core/geometry/bvh.h"

#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <chrono>
#include <cmath>
#include <random>
#include <vector>

#include "core/io/obj.h"
#include "tests/support/data.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::DataPath;

// An independent segment–triangle test: the segment's end points on opposite sides of the
// triangle's plane (signed distances), then the crossing point inside all three edges.
// Returns the crossing parameter in [0, 1], or -1.
double BruteForceCrossing(const Eigen::Vector3d& a, const Eigen::Vector3d& b,
                          const Eigen::Vector3d& v0, const Eigen::Vector3d& v1,
                          const Eigen::Vector3d& v2) {
  const Eigen::Vector3d n = (v1 - v0).cross(v2 - v0);
  const double da = n.dot(a - v0), db = n.dot(b - v0);
  if ((da > 0 && db > 0) || (da < 0 && db < 0) || da == db) return -1;
  const double t = da / (da - db);
  const Eigen::Vector3d x = a + t * (b - a);
  const double s0 = (v1 - v0).cross(x - v0).dot(n), s1 = (v2 - v1).cross(x - v1).dot(n),
               s2 = (v0 - v2).cross(x - v2).dot(n);
  if (s0 < 0 || s1 < 0 || s2 < 0) return -1;
  return t;
}

// The mesh's triangles with their bounding boxes (padded by 1e-9 of the mesh's size), which let
// the brute forces below skip triangles exactly (with room for rounding): a segment can cross a
// triangle only where its own box meets the triangle's, and no point of a triangle is nearer than
// its box. (It keeps the tests quick under the sanitizers.)
struct BruteForceTriangles {
  struct Triangle {
    Eigen::Vector3d v0, v1, v2;
    Eigen::AlignedBox3d box;
  };
  explicit BruteForceTriangles(const Mesh& mesh) {
    const double pad = 1e-9 * (mesh.V.colwise().maxCoeff() - mesh.V.colwise().minCoeff()).norm();
    for (int f = 0; f < mesh.F.rows(); ++f) {
      Triangle t{mesh.V.row(mesh.F(f, 0)), mesh.V.row(mesh.F(f, 1)), mesh.V.row(mesh.F(f, 2)), {}};
      t.box.extend(t.v0).extend(t.v1).extend(t.v2);
      t.box.min().array() -= pad;
      t.box.max().array() += pad;
      triangles.push_back(t);
    }
  }
  std::vector<Triangle> triangles;
};

bool BruteForceHits(const BruteForceTriangles& mesh, const Eigen::Vector3d& a, const Eigen::Vector3d& b,
                    double epsilon) {
  const double len = (b - a).norm();
  const Eigen::AlignedBox3d segment_box = Eigen::AlignedBox3d(a).extend(b);
  for (const BruteForceTriangles::Triangle& tri : mesh.triangles) {
    if (!tri.box.intersects(segment_box)) continue;
    const double t = BruteForceCrossing(a, b, tri.v0, tri.v1, tri.v2);
    if (t >= 0 && t * len > epsilon && (1 - t) * len > epsilon) return true;
  }
  return false;
}

// A closed axis-aligned unit cube [0, 1]³, 12 triangles.
Mesh UnitCube() {
  Mesh mesh;
  mesh.V.resize(8, 3);
  for (int i = 0; i < 8; ++i) mesh.V.row(i) << (i & 1), (i >> 1) & 1, (i >> 2) & 1;
  mesh.F.resize(12, 3);
  mesh.F << 0, 2, 1, 1, 2, 3, 4, 5, 6, 5, 7, 6, 0, 1, 4, 1, 5, 4, 2, 6, 3, 3, 6, 7, 0, 4, 2, 2, 4,
      6, 1, 3, 5, 3, 7, 5;
  return mesh;
}

TEST(BvhTest, SegmentHitsAgreeWithBruteForceOnArm) {
  const std::string path = DataPath("libigl/arm/arm.obj");
  SKINNING_REQUIRE_DATA(path);
  const absl::StatusOr<Mesh> mesh = ReadObj(path);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  const TriangleBvh bvh(mesh->V, mesh->F);
  EXPECT_EQ(bvh.num_triangles(), mesh->F.rows());
  const BruteForceTriangles triangles(*mesh);
  const Eigen::Vector3d lo = mesh->V.colwise().minCoeff(), hi = mesh->V.colwise().maxCoeff();
  const Eigen::Vector3d pad = 0.1 * (hi - lo);
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::uniform_int_distribution<int> pick(0, static_cast<int>(mesh->V.rows()) - 1);
  auto random_point = [&]() {
    return Eigen::Vector3d(lo.x() - pad.x() + u(gen) * (hi.x() - lo.x() + 2 * pad.x()),
                           lo.y() - pad.y() + u(gen) * (hi.y() - lo.y() + 2 * pad.y()),
                           lo.z() - pad.z() + u(gen) * (hi.z() - lo.z() + 2 * pad.z()));
  };
  const double diag = BoundingBoxDiagonal(mesh->V);
  int hits = 0, mismatches = 0, trials = 0;
  for (int k = 0; k < 3000; ++k) {
    // Long random segments and short ones with and without an end-point tolerance, and
    // segments starting at a mesh vertex (as bone heat casts them) with a tolerance. (Without
    // one, such a segment touches the vertex's own triangles at t ≈ 0, and rounding decides.)
    Eigen::Vector3d a = random_point(), b;
    std::vector<double> epsilons = {0.0, 1e-3 * diag};
    if (k % 3 == 0) {
      b = random_point();
    } else if (k % 3 == 1) {
      b = a + 0.05 * (random_point() - a);
    } else {
      a = mesh->V.row(pick(gen)).transpose();
      b = random_point();
      epsilons = {1e-6 * diag, 1e-3 * diag};
    }
    for (double epsilon : epsilons) {
      const bool fast = bvh.SegmentHitsSurface(a, b, epsilon);
      const bool slow = BruteForceHits(triangles, a, b, epsilon);
      ++trials;
      hits += slow;
      mismatches += fast != slow;
    }
  }
  EXPECT_GT(hits, trials / 10);
  EXPECT_LT(hits, trials * 9 / 10);
  EXPECT_EQ(mismatches, 0) << mismatches << " of " << trials;
}

TEST(BvhTest, ClosestPointAgreesWithBruteForceOnArm) {
  const std::string path = DataPath("libigl/arm/arm.obj");
  SKINNING_REQUIRE_DATA(path);
  const absl::StatusOr<Mesh> mesh = ReadObj(path);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  const TriangleBvh bvh(mesh->V, mesh->F);
  const BruteForceTriangles triangles(*mesh);
  const Eigen::Vector3d lo = mesh->V.colwise().minCoeff(), hi = mesh->V.colwise().maxCoeff();
  std::mt19937 gen(11);
  std::uniform_real_distribution<double> u(-0.2, 1.2);
  for (int k = 0; k < 300; ++k) {
    const Eigen::Vector3d p = lo + Eigen::Vector3d(u(gen), u(gen), u(gen)).cwiseProduct(hi - lo);
    double best = INFINITY;
    for (const BruteForceTriangles::Triangle& tri : triangles.triangles) {
      if (tri.box.squaredExteriorDistance(p) > best) continue;  // no nearer point in its box
      const Eigen::Vector3d q = ClosestPointOnTriangle(p, tri.v0, tri.v1, tri.v2);
      best = std::min(best, (q - p).squaredNorm());
    }
    const TriangleBvh::ClosestPointResult r = bvh.ClosestPoint(p);
    ASSERT_GE(r.triangle, 0);
    EXPECT_NEAR(r.squared_distance, best, 1e-12);
    EXPECT_NEAR((r.point - p).squaredNorm(), r.squared_distance, 1e-12);
  }
}

TEST(BvhTest, ClosestPointOnTriangleIsNoFartherThanAnySampledPoint) {
  std::mt19937 gen(3);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int k = 0; k < 200; ++k) {
    const Eigen::Vector3d a(u(gen), u(gen), u(gen)), b(u(gen), u(gen), u(gen)),
        c(u(gen), u(gen), u(gen)), p(2 * u(gen), 2 * u(gen), 2 * u(gen));
    const Eigen::Vector3d q = ClosestPointOnTriangle(p, a, b, c);
    // q lies in the triangle: its barycentric coordinates are non-negative and reproduce it.
    const Eigen::Vector3d n = (b - a).cross(c - a);
    EXPECT_NEAR(n.dot(q - a), 0.0, 1e-12);
    const double ba = (b - q).cross(c - q).dot(n) / n.squaredNorm(),
                 bb = (c - q).cross(a - q).dot(n) / n.squaredNorm();
    EXPECT_GE(ba, -1e-12);
    EXPECT_GE(bb, -1e-12);
    EXPECT_LE(ba + bb, 1 + 1e-12);
    const double dq = (q - p).norm();
    const int s = 40;
    for (int i = 0; i <= s; ++i)
      for (int j = 0; i + j <= s; ++j) {
        const Eigen::Vector3d x = a + (b - a) * i / s + (c - a) * j / s;
        ASSERT_LE(dq, (x - p).norm() + 1e-12);
      }
  }
}

TEST(BvhTest, SegmentsLeavingACubeCrossItAndSegmentsInsideDoNot) {
  const Mesh cube = UnitCube();
  const TriangleBvh bvh(cube.V, cube.F);
  const Eigen::Vector3d centre(0.5, 0.5, 0.5);
  EXPECT_FALSE(bvh.SegmentHitsSurface(centre, Eigen::Vector3d(0.9, 0.2, 0.7), 0.0));
  EXPECT_TRUE(bvh.SegmentHitsSurface(centre, Eigen::Vector3d(1.5, 0.5, 0.5), 0.0));
  EXPECT_TRUE(
      bvh.SegmentHitsSurface(Eigen::Vector3d(-1, 0.3, 0.4), Eigen::Vector3d(2, 0.6, 0.5), 0.0));
  EXPECT_FALSE(
      bvh.SegmentHitsSurface(Eigen::Vector3d(-1, 2, 0.4), Eigen::Vector3d(2, 2, 0.5), 0.0));
  // From a corner vertex to the centre: touches the corner's triangles only at the start.
  const Eigen::Vector3d corner(1, 1, 1);
  EXPECT_FALSE(bvh.SegmentHitsSurface(corner, centre, 1e-6));
  // From the corner out through the opposite corner region: crosses the far faces.
  EXPECT_TRUE(bvh.SegmentHitsSurface(corner, Eigen::Vector3d(-0.5, 0.2, 0.4), 1e-6));
  // Ending just past a face: the crossing is within ε of the end point.
  EXPECT_TRUE(bvh.SegmentHitsSurface(centre, Eigen::Vector3d(1.01, 0.5, 0.5), 1e-3));
  EXPECT_FALSE(bvh.SegmentHitsSurface(centre, Eigen::Vector3d(1.01, 0.5, 0.5), 0.05));
  // A segment in a face's plane never hits that face.
  EXPECT_FALSE(
      bvh.SegmentHitsSurface(Eigen::Vector3d(0.2, 0.3, 0), Eigen::Vector3d(0.7, 0.6, 0), 0.0));
}

TEST(BvhTest, EmptyHierarchyReportsNothing) {
  const TriangleBvh bvh(RowMatrixX3d(0, 3), RowMatrixX3i(0, 3));
  EXPECT_EQ(bvh.num_triangles(), 0);
  EXPECT_FALSE(bvh.SegmentHitsSurface(Eigen::Vector3d::Zero(), Eigen::Vector3d::Ones(), 0.0));
  EXPECT_EQ(bvh.ClosestPoint(Eigen::Vector3d::Zero()).triangle, -1);
}

TEST(BvhTest, TwoHundredThousandSegmentQueriesOnArm) {
  const std::string path = DataPath("libigl/arm/arm.obj");
  SKINNING_REQUIRE_DATA(path);
  const absl::StatusOr<Mesh> mesh = ReadObj(path);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  auto start = std::chrono::steady_clock::now();
  const TriangleBvh bvh(mesh->V, mesh->F);
  const double build =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Every vertex to 24 points along the arm's centre line (the bounding box's long axis),
  // a bone-heat-like load: ~200k segments (10k vertices × 20 bones would be the same count).
  const Eigen::Vector3d lo = mesh->V.colwise().minCoeff(), hi = mesh->V.colwise().maxCoeff();
  const Eigen::Vector3d mid = 0.5 * (lo + hi);
  const double eps = 1e-6 * BoundingBoxDiagonal(mesh->V);
  const int targets = 24;
  start = std::chrono::steady_clock::now();
  int hits = 0, queries = 0;
  for (int i = 0; i < mesh->V.rows(); ++i) {
    const Eigen::Vector3d a = mesh->V.row(i).transpose();
    for (int t = 0; t < targets; ++t) {
      const Eigen::Vector3d b(lo.x() + (hi.x() - lo.x()) * (t + 0.5) / targets, mid.y(), mid.z());
      hits += bvh.SegmentHitsSurface(a, b, eps);
      ++queries;
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ timing ] arm BVH build %.4f s; %d segment queries %.3f s (%.2f M/s), %d hit\n",
              build, queries, seconds, queries / seconds / 1e6, hits);
  // No time bound here (speed goals live in bench/; a sanitizer build is several times slower):
  // the figure is printed, and the queries must have found the surface.
  EXPECT_GT(hits, 0);
}

// The winding number of a closed surface is 1 inside and 0 outside; the first-order
// approximation stays close to the exact sum (beta = ∞) and reverses with the orientation.
TEST(BvhTest, WindingNumberIsOneInsideZeroOutsideAndTheDipoleSumIsClose) {
  const std::string path = DataPath("libigl/arm/arm.obj");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<Mesh> arm = ReadObj(path);
  ASSERT_TRUE(arm.ok()) << arm.status();
  const TriangleBvh cube(UnitCube().V, UnitCube().F);
  EXPECT_NEAR(cube.WindingNumber(Eigen::Vector3d(0.5, 0.4, 0.3), INFINITY), 1.0, 1e-12);
  EXPECT_NEAR(cube.WindingNumber(Eigen::Vector3d(1.5, 0.4, 0.3), INFINITY), 0.0, 1e-12);
  const TriangleBvh bvh(arm->V, arm->F);
  std::mt19937 rng(3);
  const Eigen::Vector3d lo = arm->V.colwise().minCoeff(), hi = arm->V.colwise().maxCoeff();
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int k = 0; k < 200; ++k) {
    const Eigen::Vector3d q = lo + (hi - lo).cwiseProduct(Eigen::Vector3d(u(rng), u(rng), u(rng)));
    double exact = 0.0;  // brute force over every triangle
    for (int f = 0; f < arm->F.rows(); ++f) {
      const Eigen::Vector3d a = arm->V.row(arm->F(f, 0)).transpose() - q,
                            b = arm->V.row(arm->F(f, 1)).transpose() - q,
                            c = arm->V.row(arm->F(f, 2)).transpose() - q;
      const double la = a.norm(), lb = b.norm(), lc = c.norm();
      exact += 2.0 * std::atan2(a.dot(b.cross(c)), la * lb * lc + a.dot(b) * lc + b.dot(c) * la + c.dot(a) * lb);
    }
    exact /= 4.0 * M_PI;
    EXPECT_NEAR(bvh.WindingNumber(q, INFINITY), exact, 1e-9) << k;
    EXPECT_NEAR(bvh.WindingNumber(q, 6.0), exact, 0.01) << k;
  }
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
