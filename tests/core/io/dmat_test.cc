#include "core/io/dmat.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
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

std::string ReadText(const std::string& path) {
  std::string text;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return text;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0) text.append(buffer, n);
  std::fclose(f);
  return text;
}

// A matrix with values that need every digit, signs, subnormals and extremes.
Eigen::MatrixXd AwkwardMatrix() {
  Eigen::MatrixXd M(3, 2);
  M << 1.0 / 3.0, -2.5e-17, std::numeric_limits<double>::denorm_min(), 1e308, -0.0,
      12345.678901234567;
  return M;
}

TEST(DmatTest, ArmWeightsAre8311By4AndRowsSumToOne) {
  const std::string path = DataPath("libigl/arm/arm-weights.dmat");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<Eigen::MatrixXd> W = ReadDmat(path);
  ASSERT_TRUE(W.ok()) << W.status();
  ASSERT_EQ(W->rows(), 8311);
  ASSERT_EQ(W->cols(), 4);
  EXPECT_LT((W->rowwise().sum().array() - 1.0).abs().maxCoeff(), 1e-12);
  EXPECT_GT(W->minCoeff(), 0.0);
  EXPECT_LE(W->maxCoeff(), 1.0);
  // Column-major: the file's second number is W(1, 0), not W(0, 1).
  EXPECT_EQ((*W)(0, 0), 0.5761395659334769);
  EXPECT_EQ((*W)(1, 0), 0.5538895866673019);
}

TEST(DmatTest, HandPoseIsTwentyUnitQuaternions) {
  const std::string path = DataPath("libigl/hand/hand-pose.dmat");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<Eigen::MatrixXd> P = ReadDmat(path);
  ASSERT_TRUE(P.ok()) << P.status();
  ASSERT_EQ(P->size(), 80);
  for (int b = 0; b < 20; ++b) EXPECT_NEAR(P->middleRows(4 * b, 4).norm(), 1.0, 1e-12) << b;
}

TEST(DmatTest, DecimatedMaxSelectionHasReadmeCounts) {
  const std::string path = DataPath("libigl/decimated-max/decimated-max-selection.dmat");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<Eigen::MatrixXd> S = ReadDmat(path);
  ASSERT_TRUE(S.ok()) << S.status();
  ASSERT_EQ(S->size(), 5272);
  EXPECT_EQ((S->array() == -1).count(), 2901);
  EXPECT_EQ((S->array() == 0).count(), 2214);
  EXPECT_EQ((S->array() == 1).count(), 90);
  EXPECT_EQ((S->array() == 2).count(), 67);
}

TEST(DmatTest, AsciiIsColumnMajorWithColsFirstInTheHeader) {
  const std::string path = TempPath(".dmat");
  WriteText(path, "2 3\n1 2 3\n4 5\n6\n");
  absl::StatusOr<Eigen::MatrixXd> M = ReadDmat(path);
  ASSERT_TRUE(M.ok()) << M.status();
  Eigen::MatrixXd expected(3, 2);
  expected << 1, 4, 2, 5, 3, 6;
  EXPECT_EQ(*M, expected);
  std::remove(path.c_str());
}

TEST(DmatTest, AsciiRoundTripIsBitExact) {
  const std::string path = TempPath(".dmat");
  const Eigen::MatrixXd M = AwkwardMatrix();
  ASSERT_TRUE(WriteDmat(path, M, /*ascii=*/true).ok());
  EXPECT_EQ(ReadText(path).substr(0, 4), "2 3\n");
  absl::StatusOr<Eigen::MatrixXd> back = ReadDmat(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, M);
  EXPECT_TRUE(std::signbit((*back)(2, 0)));  // -0.0 survives
  std::remove(path.c_str());
}

TEST(DmatTest, BinaryRoundTripIsBitExactAndLaidOutAsLibigl) {
  const std::string path = TempPath(".dmat");
  const Eigen::MatrixXd M = AwkwardMatrix();
  ASSERT_TRUE(WriteDmat(path, M, /*ascii=*/false).ok());
  // `0 0\n`, `cols rows\n`, then 6 little-endian float64 in column-major order.
  const std::string bytes = ReadText(path);
  ASSERT_EQ(bytes.size(), 8u + 6u * 8u);
  EXPECT_EQ(bytes.substr(0, 8), "0 0\n2 3\n");
  for (int k = 0; k < 6; ++k) {
    uint64_t bits = 0;
    for (int b = 0; b < 8; ++b)
      bits |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[8 + 8 * k + b])) << (8 * b);
    double value;
    std::memcpy(&value, &bits, sizeof(value));
    EXPECT_EQ(value, M(k % 3, k / 3)) << k;
  }
  absl::StatusOr<Eigen::MatrixXd> back = ReadDmat(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, M);
  std::remove(path.c_str());
}

TEST(DmatTest, ArmWeightsSurviveBinaryRoundTrip) {
  const std::string path = DataPath("libigl/arm/arm-weights.dmat");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<Eigen::MatrixXd> W = ReadDmat(path);
  ASSERT_TRUE(W.ok()) << W.status();
  const std::string copy = TempPath(".dmat");
  ASSERT_TRUE(WriteDmat(copy, *W, /*ascii=*/false).ok());
  absl::StatusOr<Eigen::MatrixXd> back = ReadDmat(copy);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, *W);
  std::remove(copy.c_str());
}

TEST(DmatTest, EmptyMatrixRoundTripsInBothForms) {
  const std::string path = TempPath(".dmat");
  for (bool ascii : {true, false}) {
    ASSERT_TRUE(WriteDmat(path, Eigen::MatrixXd(0, 0), ascii).ok());
    absl::StatusOr<Eigen::MatrixXd> back = ReadDmat(path);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->size(), 0) << ascii;
  }
  std::remove(path.c_str());
}

TEST(DmatTest, RejectsTruncatedAscii) {
  const std::string path = TempPath(".dmat");
  WriteText(path, "2 3\n1 2 3\n4 5\n");
  const absl::Status s = ReadDmat(path).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), path + ":3: truncated: expected 2 cols x 3 rows = 6 numbers, found 5");
  std::remove(path.c_str());
}

TEST(DmatTest, RejectsTruncatedBinary) {
  const std::string path = TempPath(".dmat");
  ASSERT_TRUE(WriteDmat(path, AwkwardMatrix(), /*ascii=*/false).ok());
  const std::string bytes = ReadText(path);
  WriteText(path, bytes.substr(0, bytes.size() - 3));
  const absl::Status s = ReadDmat(path).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(
      s.message().find("is truncated: 2 cols x 3 rows need 48 bytes of float64 data, found 45"),
      absl::string_view::npos)
      << s;
  std::remove(path.c_str());
}

TEST(DmatTest, RejectsNonNumericTokenAndExtraValues) {
  const std::string path = TempPath(".dmat");
  WriteText(path, "1 3\n0.5\nabc\n1\n");
  EXPECT_EQ(ReadDmat(path).status().message(), path + ":3: 'abc' is not a number");
  WriteText(path, "1 2\n0.5\n1\n2\n");
  EXPECT_EQ(ReadDmat(path).status().message(),
            path + ":4: extra value '2' after the 1 cols x 2 rows = 2 numbers");
  WriteText(path, "two 3\n");
  EXPECT_NE(ReadDmat(path).status().message().find(path + ":1: expected a header 'cols rows'"),
            absl::string_view::npos);
  WriteText(path, "1000000 1000000\n1\n");
  EXPECT_EQ(ReadDmat(path).status().code(), absl::StatusCode::kInvalidArgument);  // no 8 TB alloc
  std::remove(path.c_str());
}

TEST(DmatTest, MissingFileIsNotFound) {
  EXPECT_EQ(ReadDmat("/nonexistent/none.dmat").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
