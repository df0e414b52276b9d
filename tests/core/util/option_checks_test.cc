#include "core/util/option_checks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

TEST(OptionChecks, MessagesNameTheFieldAndTheValue) {
  EXPECT_TRUE(CheckInRange("options.voxel.resolution", 8, 8, 256).ok());
  EXPECT_EQ(CheckInRange("options.voxel.resolution", 300, 8, 256).message(),
            "options.voxel.resolution = 300 is outside [8, 256]");
  EXPECT_EQ(CheckAtLeast("options.fast.clusters", -1, 0).message(), "options.fast.clusters = -1 must be ≥ 0");
  EXPECT_EQ(CheckPositive("options.rbf_width", 0).message(), "options.rbf_width = 0 must be positive and finite");
  EXPECT_EQ(CheckPositive("x", std::numeric_limits<double>::infinity()).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckNonNegative("options.volume_weight", -1).message(),
            "options.volume_weight = -1 must be finite and ≥ 0");
  EXPECT_EQ(CheckNonNegative("x", std::nan("")).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckNonNegative("x", 0).ok());
}

TEST(OptionChecks, IterationLimitsNameThePrefixedFields) {
  EXPECT_TRUE(CheckIterationLimits("options", 0, 0.0).ok());
  EXPECT_EQ(CheckIterationLimits("options.emw", -1, 1e-5).message(), "options.emw.max_iterations = -1 must be ≥ 0");
  EXPECT_EQ(CheckIterationLimits("options", 10, -1).message(), "options.relative_tolerance = -1 must be finite and ≥ 0");
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
