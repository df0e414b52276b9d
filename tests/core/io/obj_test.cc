#include "core/io/obj.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "core/geometry/mesh.h"
#include "tests/support/data.h"
#include "tests/support/temp_files.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::DataPath;
using ::skinning::testing::TempPath;

// Every triangle corner names an existing vertex. (Checked here rather than with ValidateMesh:
// see the note in the commit message about core/geometry/mesh.cc.)
bool TrianglesInRange(const Mesh& mesh) {
  return mesh.F.size() == 0 ||
         (mesh.F.minCoeff() >= 0 && mesh.F.maxCoeff() < static_cast<int>(mesh.V.rows()));
}

TEST(ObjTest, ArmHasReadmeCounts) {
  const std::string path = DataPath("libigl/arm/arm.obj");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<Mesh> mesh = ReadObj(path);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  EXPECT_EQ(mesh->V.rows(), 8311);
  EXPECT_EQ(mesh->F.rows(), 16618);
  EXPECT_EQ(mesh->N.rows(), 0);  // v/f only
  EXPECT_TRUE(TrianglesInRange(*mesh));
  // README: bounding box about 1.82 x 0.73 x 0.42.
  const Eigen::RowVector3d extent = mesh->V.colwise().maxCoeff() - mesh->V.colwise().minCoeff();
  EXPECT_NEAR(extent.x(), 1.82, 0.01);
  EXPECT_NEAR(extent.y(), 0.73, 0.01);
  EXPECT_NEAR(extent.z(), 0.42, 0.01);
}

TEST(ObjTest, CylinderQuadsAndCapsAreFanTriangulatedAndMissingMtlIsTolerated) {
  const std::string path = DataPath("libigl/cylinder/cylinder.obj");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<Mesh> mesh = ReadObj(path);  // names cylinder.mtl, which does not exist
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  EXPECT_EQ(mesh->V.rows(), 220);
  EXPECT_EQ(mesh->F.rows(), 200 * 2 + 2 * 18);
  EXPECT_TRUE(TrianglesInRange(*mesh));
  // Rim vertices get the cap normal on the caps and a radial normal on the sides.
  EXPECT_EQ(mesh->N.rows(), 0);
}

TEST(ObjTest, SmallCylindersAreTriangleMeshes) {
  for (const char* name : {"xcylinder", "ycylinder", "zcylinder"}) {
    const std::string path = DataPath(std::string("libigl/cylinder/") + name + ".obj");
    SKINNING_REQUIRE_DATA(path);
    absl::StatusOr<Mesh> mesh = ReadObj(path);
    ASSERT_TRUE(mesh.ok()) << mesh.status();
    EXPECT_EQ(mesh->V.rows(), 42) << name;
    EXPECT_EQ(mesh->F.rows(), 80) << name;
  }
}

TEST(ObjTest, PolygonIsFanTriangulatedAroundFirstCorner) {
  absl::StatusOr<Mesh> mesh =
      ParseObj("v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv -1 1 0\nf 1 2 3 4 5\n", "pentagon.obj");
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  RowMatrixX3i expected(3, 3);
  expected << 0, 1, 2, 0, 2, 3, 0, 3, 4;
  EXPECT_EQ(mesh->F, expected);
}

TEST(ObjTest, NegativeIndicesAreRelativeToVerticesReadSoFar) {
  absl::StatusOr<Mesh> mesh = ParseObj(
      "v 0 0 0\nv 1 0 0\nv 0 1 0\nf -3 -2 -1\n"
      "v 0 0 1\nf -4/1 -1/2 -2/3\n",
      "relative.obj");
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  RowMatrixX3i expected(2, 3);
  expected << 0, 1, 2, 0, 3, 2;
  EXPECT_EQ(mesh->F, expected);
}

TEST(ObjTest, AcceptsAllCornerForms) {
  absl::StatusOr<Mesh> mesh = ParseObj(
      "v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nvn 0 0 1\n"
      "f 1 2 3\nf 1/1 2/1 3/1\nf 1//1 2//1 3//1\nf 1/1/1 2/1/1 3/1/1\n",
      "forms.obj");
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  EXPECT_EQ(mesh->F.rows(), 4);
  for (int f = 0; f < 4; ++f) EXPECT_EQ(mesh->F.row(f), Eigen::RowVector3i(0, 1, 2));
  EXPECT_EQ(mesh->N.rows(), 0);  // the first faces name no normal
}

TEST(ObjTest, KeepsNormalsWhenEveryCornerAgrees) {
  absl::StatusOr<Mesh> mesh = ParseObj(
      "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nvn 0 0 2\nvn 0 0 1\n"
      "f 1//1 2//1 3//1\nf 2//1 4//2 3//1\n",
      "normals.obj");
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  ASSERT_EQ(mesh->N.rows(), 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(mesh->N.row(i), Eigen::RowVector3d(0, 0, 1));  // unit
}

TEST(ObjTest, DropsNormalsWhenAVertexGetsTwoDifferentOnes) {
  absl::StatusOr<Mesh> mesh = ParseObj(
      "v 0 0 0\nv 1 0 0\nv 0 1 0\nvn 0 0 1\nvn 1 0 0\nf 1//1 2//1 3//1\nf 1//2 3//2 2//2\n",
      "normals.obj");
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  EXPECT_EQ(mesh->N.rows(), 0);
}

TEST(ObjTest, IgnoresCommentsGroupsAndMaterials) {
  absl::StatusOr<Mesh> mesh = ParseObj(
      "# header\nmtllib missing.mtl\no thing\ng group\ns 1\nusemtl red\n"
      "v 0 0 0 # trailing comment\nv 1 0 0 1\nv 0 1 0 0.5 0.5 0.5\nf 1 2 3\n",
      "misc.obj");
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  EXPECT_EQ(mesh->V.rows(), 3);
  EXPECT_EQ(mesh->F.rows(), 1);
}

TEST(ObjTest, RejectsOutOfRangeFaceIndexNamingTheLine) {
  absl::StatusOr<Mesh> mesh =
      ParseObj("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n\nf 1 2 9000\n", "arm.obj");
  ASSERT_FALSE(mesh.ok());
  EXPECT_EQ(mesh.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(mesh.status().message(), "arm.obj:6: face index 9000 is out of range (3 vertices)");
}

TEST(ObjTest, RejectsNegativeIndexBeforeTheStart) {
  absl::StatusOr<Mesh> mesh = ParseObj("v 0 0 0\nv 1 0 0\nf -1 -2 -3\nv 0 1 0\n", "neg.obj");
  ASSERT_FALSE(mesh.ok());
  EXPECT_NE(mesh.status().message().find("neg.obj:3: face index -3 is out of range"),
            std::string::npos)
      << mesh.status();
}

TEST(ObjTest, RejectsFaceIndexZero) {
  absl::StatusOr<Mesh> mesh = ParseObj("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n", "zero.obj");
  ASSERT_FALSE(mesh.ok());
  EXPECT_NE(mesh.status().message().find("zero.obj:4: face index 0 is invalid"), std::string::npos)
      << mesh.status();
}

TEST(ObjTest, RejectsNonNumericCoordinate) {
  absl::StatusOr<Mesh> mesh = ParseObj("v 0 0 0\nv 1 zero 0\n", "bad.obj");
  ASSERT_FALSE(mesh.ok());
  EXPECT_EQ(mesh.status().message(), "bad.obj:2: 'zero' is not a number");
}

TEST(ObjTest, RejectsNonNumericFaceIndexAndDegenerateFace) {
  EXPECT_EQ(ParseObj("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 x\n", "a.obj").status().message(),
            "a.obj:4: 'x' is not a face index");
  EXPECT_EQ(ParseObj("v 0 0 0\nv 1 0 0\nf 1 2\n", "b.obj").status().message(),
            "b.obj:3: face has 2 corners, needs at least 3");
  EXPECT_EQ(ParseObj("v 0 0\n", "c.obj").status().message(), "c.obj:1: 'v' needs 3 coordinates");
}

TEST(ObjTest, MissingFileIsNotFound) {
  EXPECT_EQ(ReadObj("/nonexistent/dir/none.obj").status().code(), absl::StatusCode::kNotFound);
}

TEST(ObjTest, RoundTripIsBitExact) {
  Mesh mesh;
  mesh.V.resize(4, 3);
  mesh.V << 0.1, -2.5e-17, 3.0, 1.0 / 3.0, 2.0, -0.0, 12345.678901234567, 1e300, -7e-310, 0, 1, 0;
  mesh.F.resize(2, 3);
  mesh.F << 0, 1, 2, 0, 2, 3;
  const std::string path = TempPath(".obj");
  ASSERT_TRUE(WriteObj(path, mesh).ok());
  absl::StatusOr<Mesh> back = ReadObj(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->V, mesh.V);
  EXPECT_EQ(back->F, mesh.F);
  EXPECT_EQ(back->N.rows(), 0);

  mesh.N.resize(4, 3);
  mesh.N << 0, 0, 1, 0.6, 0, 0.8, 1, 0, 0, 0, -1, 0;  // unit, so reading back keeps them
  ASSERT_TRUE(WriteObj(path, mesh).ok());
  back = ReadObj(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->V, mesh.V);
  EXPECT_EQ(back->F, mesh.F);
  ASSERT_EQ(back->N.rows(), 4);
  EXPECT_TRUE(back->N.isApprox(mesh.N, 1e-15));
  std::remove(path.c_str());
}

TEST(ObjTest, ArmRoundTripReproducesTheMesh) {
  const std::string path = DataPath("libigl/arm/arm.obj");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<Mesh> mesh = ReadObj(path);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  const std::string copy = TempPath(".obj");
  ASSERT_TRUE(WriteObj(copy, *mesh).ok());
  absl::StatusOr<Mesh> back = ReadObj(copy);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->V, mesh->V);
  EXPECT_EQ(back->F, mesh->F);
  std::remove(copy.c_str());
}

TEST(ObjTest, WriteRejectsOutOfRangeTriangle) {
  Mesh mesh;
  mesh.V = RowMatrixX3d::Zero(3, 3);
  mesh.F.resize(1, 3);
  mesh.F << 0, 1, 3;
  EXPECT_EQ(WriteObj(TempPath(".obj"), mesh).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
