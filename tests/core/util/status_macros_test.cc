#include "core/util/status_macros.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

absl::Status Fails(int* calls) {
  ++*calls;
  return absl::InvalidArgumentError("bad");
}

absl::Status Succeeds(int* calls) {
  ++*calls;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<int>> MakeInt(int v) {
  if (v < 0) return absl::OutOfRangeError("negative");
  return std::make_unique<int>(v);
}

absl::Status ReturnIfError(bool fail, int* calls, int* reached) {
  RETURN_IF_ERROR(Succeeds(calls));
  RETURN_IF_ERROR(fail ? Fails(calls) : Succeeds(calls));
  ++*reached;
  return absl::OkStatus();
}

absl::StatusOr<int> AssignOrReturn(int v) {
  ASSIGN_OR_RETURN(std::unique_ptr<int> p, MakeInt(v));  // a move-only value
  int doubled = 0;
  ASSIGN_OR_RETURN(doubled, absl::StatusOr<int>(2 * *p));  // an existing variable
  return doubled;
}

TEST(StatusMacros, ReturnIfErrorReturnsTheFirstErrorAndEvaluatesOnce) {
  int calls = 0, reached = 0;
  absl::Status s = ReturnIfError(true, &calls, &reached);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "bad");
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(reached, 0);
  EXPECT_TRUE(ReturnIfError(false, &calls, &reached).ok());
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(reached, 1);
}

TEST(StatusMacros, AssignOrReturnMovesTheValueOrReturnsTheStatus) {
  absl::StatusOr<int> ok = AssignOrReturn(21);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(*ok, 42);
  absl::StatusOr<int> bad = AssignOrReturn(-1);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(bad.status().message(), "negative");
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
