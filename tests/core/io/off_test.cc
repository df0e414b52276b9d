#include "core/io/off.h"

#include <gtest/gtest.h>
#include <unistd.h>

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

TEST(OffTest, BarHasReadmeCountsAndExtent) {
  const std::string path = DataPath("deformation-benchmark/bar/bar.off");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<Mesh> mesh = ReadOff(path);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  EXPECT_EQ(mesh->V.rows(), 6084);
  EXPECT_EQ(mesh->F.rows(), 12106);
  EXPECT_EQ(mesh->N.rows(), 0);
  EXPECT_GE(mesh->F.minCoeff(), 0);
  EXPECT_LT(mesh->F.maxCoeff(), 6084);
  // README: x, y in [-6, 6], z in [25.4, 100].
  EXPECT_NEAR(mesh->V.col(0).minCoeff(), -6, 0.1);
  EXPECT_NEAR(mesh->V.col(0).maxCoeff(), 6, 0.1);
  EXPECT_NEAR(mesh->V.col(2).minCoeff(), 25.4, 0.1);
  EXPECT_NEAR(mesh->V.col(2).maxCoeff(), 100, 0.1);
  EXPECT_EQ(mesh->V.row(0), Eigen::RowVector3d(-0.2147583663, -5.3243217468, 100.0012435913));
}

TEST(OffTest, PlaneHasReadmeCounts) {
  const std::string path = DataPath("deformation-benchmark/plane/plane.off");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<Mesh> mesh = ReadOff(path);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  EXPECT_EQ(mesh->V.rows(), 40401);
  EXPECT_EQ(mesh->F.rows(), 80000);
}

TEST(OffTest, PolygonsAreFanTriangulatedAndExtraColumnsIgnored) {
  const std::string path = TempPath(".off");
  WriteText(path,
            "COFF # coloured\n5 2 0\n0 0 0 255 0 0 255\n1 0 0 255 0 0 255\n1 1 0 0 0 0 0\n"
            "0 1 0 0 0 0 0\n\n# a comment line\n2 2 0 0 0 0\n"
            "4 0 1 2 3 0.5 0.5 0.5\n3 1 4 2\n");
  absl::StatusOr<Mesh> mesh = ReadOff(path);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  RowMatrixX3i expected(3, 3);
  expected << 0, 1, 2, 0, 2, 3, 1, 4, 2;
  EXPECT_EQ(mesh->F, expected);
  EXPECT_EQ(mesh->V.row(4), Eigen::RowVector3d(2, 2, 0));
  std::remove(path.c_str());
}

TEST(OffTest, CountsMayShareTheHeaderLine) {
  const std::string path = TempPath(".off");
  WriteText(path, "OFF 3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n");
  absl::StatusOr<Mesh> mesh = ReadOff(path);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  EXPECT_EQ(mesh->F.rows(), 1);
  std::remove(path.c_str());
}

TEST(OffTest, RoundTripIsBitExact) {
  const std::string path = DataPath("deformation-benchmark/bar/bar.off");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<Mesh> mesh = ReadOff(path);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  mesh->V(7, 0) = 1.0 / 3.0;
  const std::string copy = TempPath(".off");
  ASSERT_TRUE(WriteOff(copy, *mesh).ok());
  absl::StatusOr<Mesh> back = ReadOff(copy);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->V, mesh->V);
  EXPECT_EQ(back->F, mesh->F);
  std::remove(copy.c_str());
}

TEST(OffTest, RejectsOutOfRangeFaceIndexNamingTheLine) {
  const std::string path = TempPath(".off");
  WriteText(path, "OFF\n3 2 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n3 0 1 3\n");
  const absl::Status s = ReadOff(path).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), path + ":7: face index 3 is out of range (3 vertices)");
  std::remove(path.c_str());
}

TEST(OffTest, RejectsTruncatedFileAndBadTokens) {
  const std::string path = TempPath(".off");
  WriteText(path, "OFF\n3 1 0\n0 0 0\n1 0 0\n");
  EXPECT_EQ(ReadOff(path).status().message(), path + ":4: truncated: found 2 of 3 vertices");
  WriteText(path, "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n");
  EXPECT_EQ(ReadOff(path).status().message(), path + ":5: truncated: found 0 of 1 faces");
  WriteText(path, "OFF\n3 1 0\n0 0 0\n1 x 0\n0 1 0\n3 0 1 2\n");
  EXPECT_EQ(ReadOff(path).status().message(), path + ":4: 'x' is not a number");
  WriteText(path, "OFF\n3 1 0\n0 0 0\n1 0 0\n0 1 0\n2 0 1\n");
  EXPECT_NE(ReadOff(path).status().message().find(":6: expected a corner count of at least 3"),
            absl::string_view::npos);
  WriteText(path, "PLY\n");
  EXPECT_EQ(ReadOff(path).status().code(), absl::StatusCode::kInvalidArgument);
  std::remove(path.c_str());
}

TEST(OffTest, MissingFileIsNotFound) {
  EXPECT_EQ(ReadOff("/nonexistent/none.off").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
