#include "core/io/medit.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <Eigen/LU>
#include <cmath>
#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "tests/support/data.h"
#include "tests/support/temp_files.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::DataPath;
using ::skinning::testing::TempPath;
using ::skinning::testing::WriteText;

TEST(MeditTest, HandHasReadmeCounts) {
  const std::string path = DataPath("libigl/hand/hand.mesh");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<TetMesh> mesh = ReadMedit(path);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  EXPECT_EQ(mesh->V.rows(), 7234);
  EXPECT_EQ(mesh->F.rows(), 9556);
  EXPECT_EQ(mesh->T.rows(), 29998);
  // 0-based, and the triangles use only the first 4,780 (surface) vertices.
  EXPECT_EQ(mesh->F.minCoeff(), 0);
  EXPECT_EQ(mesh->F.maxCoeff(), 4779);
  EXPECT_GE(mesh->T.minCoeff(), 0);
  EXPECT_LT(mesh->T.maxCoeff(), 7234);
  EXPECT_EQ(mesh->V.row(0), Eigen::RowVector3d(0.013411, -0.798051, -0.081061));
  // README: bounding box about 1.16 x 1.57 x 0.57.
  const Eigen::RowVector3d extent = mesh->V.colwise().maxCoeff() - mesh->V.colwise().minCoeff();
  EXPECT_NEAR(extent.x(), 1.16, 0.01);
  EXPECT_NEAR(extent.y(), 1.57, 0.01);
  EXPECT_NEAR(extent.z(), 0.57, 0.01);
}

TEST(MeditTest, HandTetrahedraHaveNonZeroVolume) {
  const std::string path = DataPath("libigl/hand/hand.mesh");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<TetMesh> mesh = ReadMedit(path);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  int degenerate = 0;
  for (Eigen::Index t = 0; t < mesh->T.rows(); ++t) {
    const Eigen::Vector3d a = mesh->V.row(mesh->T(t, 0)), b = mesh->V.row(mesh->T(t, 1)),
                          c = mesh->V.row(mesh->T(t, 2)), d = mesh->V.row(mesh->T(t, 3));
    Eigen::Matrix3d M;
    M << b - a, c - a, d - a;
    degenerate += std::abs(M.determinant()) < 1e-15;
  }
  EXPECT_EQ(degenerate, 0);
}

TEST(MeditTest, RoundTripIsBitExact) {
  const std::string path = DataPath("libigl/hand/hand.mesh");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<TetMesh> mesh = ReadMedit(path);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  mesh->V(5, 2) = 1.0 / 3.0;
  const std::string copy = TempPath(".mesh");
  ASSERT_TRUE(WriteMedit(copy, *mesh).ok());
  absl::StatusOr<TetMesh> back = ReadMedit(copy);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->V, mesh->V);
  EXPECT_EQ(back->F, mesh->F);
  EXPECT_EQ(back->T, mesh->T);
  std::remove(copy.c_str());
}

TEST(MeditTest, ReadsCommentsAndKeywordValuesOnTheirOwnLines) {
  const std::string path = TempPath(".mesh");
  WriteText(path,
            "MeshVersionFormatted\n2\n# comment\nDimension\n3\nVertices\n4\n"
            "0 0 0 1\n1 0 0 1\n0 1 0 1\n0 0 1 1\nEdges\n1\n1 2 0\n"
            "Tetrahedra\n1\n1 2 3 4 0\nTriangles 1\n1 3 2 7\nEnd\n");
  absl::StatusOr<TetMesh> mesh = ReadMedit(path);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  EXPECT_EQ(mesh->V.rows(), 4);
  EXPECT_EQ(mesh->T.row(0), Eigen::RowVector4i(0, 1, 2, 3));
  EXPECT_EQ(mesh->F.row(0), Eigen::RowVector3i(0, 2, 1));
  std::remove(path.c_str());
}

TEST(MeditTest, RejectsOutOfRangeIndexNamingTheLine) {
  const std::string path = TempPath(".mesh");
  WriteText(path,
            "MeshVersionFormatted 1\nDimension 3\nVertices\n3\n0 0 0 0\n1 0 0 0\n0 1 0 0\n"
            "Triangles\n2\n1 2 3 0\n1 2 4 0\nEnd\n");
  const absl::Status s = ReadMedit(path).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            path + ":11: triangle 1 corner 2 = 4 is out of range (3 vertices, 1-based)");
  WriteText(path,
            "MeshVersionFormatted 1\nDimension 3\nVertices\n3\n0 0 0 0\n1 0 0 0\n0 1 0 0\n"
            "Tetrahedra\n1\n0 1 2 3 0\nEnd\n");
  EXPECT_NE(ReadMedit(path).status().message().find(":10: tetrahedron 0 corner 0 = 0 is out of"),
            absl::string_view::npos);
  std::remove(path.c_str());
}

TEST(MeditTest, RejectsTruncatedFileBadTokensAndUnknownKeywords) {
  const std::string path = TempPath(".mesh");
  WriteText(path, "MeshVersionFormatted 1\nDimension 3\nVertices\n3\n0 0 0 0\n1 0 0 0\n");
  EXPECT_EQ(ReadMedit(path).status().message(),
            path + ":6: unexpected end of file, expected a coordinate");
  WriteText(path, "MeshVersionFormatted 1\nDimension 3\nVertices\n1\n0 zero 0 0\nEnd\n");
  EXPECT_EQ(ReadMedit(path).status().message(), path + ":5: 'zero' is not a number");
  WriteText(path, "MeshVersionFormatted 1\nDimension 3\nHexahedra\n0\nEnd\n");
  EXPECT_EQ(ReadMedit(path).status().message(), path + ":3: unsupported MEDIT keyword 'Hexahedra'");
  WriteText(path, "MeshVersionFormatted 1\nDimension 2\nEnd\n");
  EXPECT_EQ(ReadMedit(path).status().code(), absl::StatusCode::kInvalidArgument);
  std::remove(path.c_str());
}

TEST(MeditTest, MissingFileIsNotFound) {
  EXPECT_EQ(ReadMedit("/nonexistent/none.mesh").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
