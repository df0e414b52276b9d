#include "core/io/deformation_benchmark.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
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

TEST(DeformationBenchmarkTest, BarSelectionHasReadmeCounts) {
  const std::string path = DataPath("deformation-benchmark/bar/bar.sel");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<std::vector<int>> sel = ReadSel(path);
  ASSERT_TRUE(sel.ok()) << sel.status();
  ASSERT_EQ(sel->size(), 6084u);  // one per bar.off vertex
  EXPECT_EQ(std::count(sel->begin(), sel->end(), 0), 382);
  EXPECT_EQ(std::count(sel->begin(), sel->end(), 1), 5122);
  EXPECT_EQ(std::count(sel->begin(), sel->end(), 2), 580);
}

TEST(DeformationBenchmarkTest, PlaneSelectionHasReadmeCounts) {
  const std::string path = DataPath("deformation-benchmark/plane/plane.sel");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<std::vector<int>> sel = ReadSel(path);
  ASSERT_TRUE(sel.ok()) << sel.status();
  ASSERT_EQ(sel->size(), 40401u);
  EXPECT_EQ(std::count(sel->begin(), sel->end(), 0), 1809);
  EXPECT_EQ(std::count(sel->begin(), sel->end(), 1), 36984);
  EXPECT_EQ(std::count(sel->begin(), sel->end(), 2), 1608);
}

TEST(DeformationBenchmarkTest, BarDefIsA135DegreeRotationAboutZ) {
  const std::string path = DataPath("deformation-benchmark/bar/bar.def");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<Eigen::Affine3d> def = ReadDef(path);
  ASSERT_TRUE(def.ok()) << def.status();
  const Eigen::Affine3d expected(Eigen::AngleAxisd(0.75 * M_PI, Eigen::Vector3d::UnitZ()));
  // The file rounds to 6 digits (0.707107).
  EXPECT_LT((def->matrix() - expected.matrix()).cwiseAbs().maxCoeff(), 1e-6);
  EXPECT_EQ(def->translation(), Eigen::Vector3d::Zero());
  EXPECT_EQ((*def)(0, 1), -0.707107);  // row-major: first line is the first row
}

TEST(DeformationBenchmarkTest, PlaneDefIsATranslation) {
  const std::string path = DataPath("deformation-benchmark/plane/plane.def");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<Eigen::Affine3d> def = ReadDef(path);
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_TRUE(def->linear().isIdentity(1e-12));
  // README: (-32.3, 0, 56.7); the file has (-32.299956, 0, 56.703263) in its last column.
  EXPECT_LT((def->translation() - Eigen::Vector3d(-32.3, 0, 56.7)).norm(), 0.01);
  EXPECT_EQ(def->translation(), Eigen::Vector3d(-32.299956, 0, 56.703263));
}

TEST(DeformationBenchmarkTest, RejectsMalformedFiles) {
  const std::string path = TempPath(".sel");
  WriteText(path, "# status\n0\n1\ntwo\n");
  EXPECT_EQ(ReadSel(path).status().message(), path + ":4: 'two' is not an integer");
  WriteText(path, "# transform\n1 0 0 0\n0 1 0 0\n0 0 1 0\n");
  EXPECT_EQ(ReadDef(path).status().message(),
            path + ":4: truncated: expected 16 matrix entries, found 12");
  WriteText(path, "1 0 0 0\n0 1 0 0\n0 0 1 0\n0 0 1 1\n");
  EXPECT_EQ(ReadDef(path).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadSel("/nonexistent/x.sel").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ReadDef("/nonexistent/x.def").status().code(), absl::StatusCode::kNotFound);
  std::remove(path.c_str());
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
