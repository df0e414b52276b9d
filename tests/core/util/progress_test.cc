// Progress: reports mapped into the caller's range, and the two ways a computation is told to stop
// (the caller's flag, and a flag added by AlsoCancelledBy that every copy shares).
#include "core/util/progress.h"

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

TEST(Progress, SubRangesMapIntoTheCallersRangeAndClamp) {
  std::vector<std::pair<std::string, double>> seen;
  std::atomic<bool> cancel{false};
  const Progress root([&seen](const std::string& stage, double f) { seen.emplace_back(stage, f); }, &cancel);
  const Progress second_half = root.Sub(0.5, 1.0);
  second_half.Sub(0.0, 0.5).Report("a", 0.5);  // 0.5 + 0.5 * 0.25
  second_half.Report("b", 2.0);                 // clamped to the range's end
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].first, "a");
  EXPECT_DOUBLE_EQ(seen[0].second, 0.625);
  EXPECT_DOUBLE_EQ(seen[1].second, 1.0);
}

TEST(Progress, AlsoCancelledByStopsEveryCopyAndKeepsTheCallersFlagAndReports) {
  std::atomic<bool> cancel{false};
  int reports = 0;
  const Progress root([&reports](const std::string&, double) { ++reports; }, &cancel);
  auto flag = std::make_shared<std::atomic<bool>>(false);
  const Progress watched = root.AlsoCancelledBy(flag);
  const Progress sub = watched.Sub(0.2, 0.4);
  flag.reset();  // the copies keep the flag alive
  EXPECT_FALSE(sub.Cancelled());
  sub.Report("x", 0.5);
  EXPECT_EQ(reports, 1);
  cancel = true;  // the caller's own flag still stops it
  EXPECT_TRUE(sub.Cancelled());
  EXPECT_TRUE(root.Cancelled());
  cancel = false;

  auto watcher = std::make_shared<std::atomic<bool>>(false);
  const Progress also = root.AlsoCancelledBy(watcher).Sub(0.0, 0.5);
  EXPECT_FALSE(also.Cancelled());
  *watcher = true;
  EXPECT_TRUE(also.Cancelled());
  EXPECT_EQ(also.CheckCancelled().code(), absl::StatusCode::kCancelled);
  EXPECT_FALSE(root.Cancelled()) << "the added flag stops the copies that carry it, not the caller";
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
