// Field checks for the options structs' Validate(): INVALID_ARGUMENT naming the field and value.
#ifndef SKINNING_CORE_UTIL_OPTION_CHECKS_H_
#define SKINNING_CORE_UTIL_OPTION_CHECKS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace skinning {

// "<field> = 300 is outside [8, 256]" unless lo ≤ value ≤ hi.
absl::Status CheckInRange(absl::string_view field, int value, int lo, int hi);
// "<field> = -1 must be ≥ 0" unless value ≥ min.
absl::Status CheckAtLeast(absl::string_view field, int value, int min);
// "<field> = 0 must be positive and finite" unless 0 < value < ∞.
absl::Status CheckPositive(absl::string_view field, double value);
// "<field> = -1 must be finite and ≥ 0" unless 0 ≤ value < ∞.
absl::Status CheckNonNegative(absl::string_view field, double value);

// The stopping rule of the local/global solvers (energy-minimizing weights, the elastic model):
// at most `max_iterations` (≥ 0) iterations, stop when the decrease is ≤ relative_tolerance
// (≥ 0) × the energy. `prefix` names the struct ("options", "options.emw").
absl::Status CheckIterationLimits(absl::string_view prefix, int max_iterations, double relative_tolerance);

}  // namespace skinning

#endif  // SKINNING_CORE_UTIL_OPTION_CHECKS_H_
