#include "core/util/option_checks.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"

namespace skinning {

absl::Status CheckInRange(absl::string_view field, int value, int lo, int hi) {
  if (value >= lo && value <= hi) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat("%s = %d is outside [%d, %d]", field, value, lo, hi));
}

absl::Status CheckAtLeast(absl::string_view field, int value, int min) {
  if (value >= min) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat("%s = %d must be ≥ %d", field, value, min));
}

absl::Status CheckPositive(absl::string_view field, double value) {
  if (value > 0 && std::isfinite(value)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat("%s = %g must be positive and finite", field, value));
}

absl::Status CheckNonNegative(absl::string_view field, double value) {
  if (value >= 0 && std::isfinite(value)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat("%s = %g must be finite and ≥ 0", field, value));
}

absl::Status CheckIterationLimits(absl::string_view prefix, int max_iterations, double relative_tolerance) {
  RETURN_IF_ERROR(CheckAtLeast(absl::StrCat(prefix, ".max_iterations"), max_iterations, 0));
  return CheckNonNegative(absl::StrCat(prefix, ".relative_tolerance"), relative_tolerance);
}

}  // namespace skinning
