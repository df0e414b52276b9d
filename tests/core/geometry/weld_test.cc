// Welding repeated points.
#include "core/geometry/weld.h"

#include <gtest/gtest.h>

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

// A unit square as two triangles that share no vertex (six vertices, four points).
Mesh SplitSquare() {
  Mesh m;
  m.V.resize(6, 3);
  m.V << 0, 0, 0, 1, 0, 0, 1, 1, 0,  //
      0, 0, 0, 1, 1, 0, 0, 1, 0;
  m.F.resize(2, 3);
  m.F << 0, 1, 2, 3, 4, 5;
  return m;
}

TEST(Weld, MergesCopiesOfAPointAndReindexesTheTriangles) {
  const WeldedMesh w = Weld(SplitSquare());
  EXPECT_TRUE(w.changed);
  ASSERT_EQ(w.mesh.V.rows(), 4);
  EXPECT_EQ(w.of, (std::vector<int>{0, 1, 2, 0, 2, 3}));
  ASSERT_EQ(w.mesh.F.rows(), 2);
  for (int f = 0; f < 2; ++f)
    for (int c = 0; c < 3; ++c) {
      const int original = SplitSquare().F(f, c);
      EXPECT_EQ(w.mesh.F(f, c), w.of[original]);
      EXPECT_EQ(w.mesh.V.row(w.mesh.F(f, c)), SplitSquare().V.row(original));
    }
}

TEST(Weld, ToleranceIsRelativeToTheDiagonalAndNearCopiesMergeAcrossCells) {
  Mesh m = SplitSquare();
  const double diag = std::sqrt(2.0);
  m.V(3, 0) += 0.5e-7 * diag;  // within the default 1e-7 of the diagonal: one point
  m.V(4, 1) -= 0.5e-7 * diag;
  EXPECT_EQ(Weld(m).mesh.V.rows(), 4);
  m.V(4, 2) += 1e-6 * diag;  // beyond it: a point of its own
  EXPECT_EQ(Weld(m).mesh.V.rows(), 5);
  // Scaled up a million times, the same relative offsets give the same answer.
  m.V *= 1e6;
  EXPECT_EQ(Weld(m).mesh.V.rows(), 5);
}

TEST(Weld, AnIndexedMeshIsUnchangedAndCollapsedTrianglesAreDropped) {
  Mesh m = Weld(SplitSquare()).mesh;
  const WeldedMesh again = Weld(m);
  EXPECT_FALSE(again.changed);
  EXPECT_EQ(again.mesh.V, m.V);
  EXPECT_EQ(again.mesh.F, m.F);
  // A sliver whose two corners coincide disappears.
  m.V.conservativeResize(5, 3);
  m.V.row(4) = m.V.row(1);
  m.F.conservativeResize(3, 3);
  m.F.row(2) << 1, 4, 2;
  EXPECT_EQ(Weld(m).mesh.F.rows(), 2);
}

// Stray vertices (no triangle uses them) leave the mesh and take the nearest used vertex's row.
TEST(Weld, VerticesNoTriangleUsesTakeTheNearestUsedVertex) {
  Mesh m = SplitSquare();
  m.V.conservativeResize(8, 3);
  m.V.row(6) << 0.9, 0.1, 0.5;  // nearest used point: (1, 0, 0)
  m.V.row(7) << 5, 5, 5;        // far away: nearest (1, 1, 0)
  const WeldedMesh w = Weld(m);
  EXPECT_TRUE(w.changed);
  ASSERT_EQ(w.mesh.V.rows(), 4);
  EXPECT_EQ(w.of, (std::vector<int>{0, 1, 2, 0, 2, 3, 1, 2}));
  EXPECT_EQ(w.mesh.F.maxCoeff(), 3);
  // An indexed mesh with one stray vertex changes too (it used to be baked with the stray point).
  Mesh indexed = Weld(SplitSquare()).mesh;
  indexed.V.conservativeResize(5, 3);
  indexed.V.row(4) << 0, 0.9, 0;
  const WeldedMesh v = Weld(indexed);
  EXPECT_TRUE(v.changed);
  EXPECT_EQ(v.of.back(), 3);
}

TEST(Weld, UnweldGivesEveryCopyItsPointsRow) {
  const WeldedMesh w = Weld(SplitSquare());
  Eigen::MatrixXd M(4, 2);
  M << 1, 2, 3, 4, 5, 6, 7, 8;
  const Eigen::MatrixXd U = Unweld(M, w.of);
  ASSERT_EQ(U.rows(), 6);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(U.row(i), M.row(w.of[i]));
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
