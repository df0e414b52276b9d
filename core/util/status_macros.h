// Error propagation for functions that return absl::Status or absl::StatusOr<T>.
#ifndef SKINNING_CORE_UTIL_STATUS_MACROS_H_
#define SKINNING_CORE_UTIL_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Evaluates `expr` (an absl::Status) once and returns it from the calling function when it is
// not OK:
//   RETURN_IF_ERROR(ValidateMesh(mesh));
#define RETURN_IF_ERROR(expr)                              \
  do {                                                     \
    ::absl::Status skinning_status_macro_status_ = (expr); \
    if (!skinning_status_macro_status_.ok()) {             \
      return skinning_status_macro_status_;                \
    }                                                      \
  } while (false)

// Evaluates `expr` (an absl::StatusOr<T>) once; returns its status from the calling function
// when it is not OK, else moves its value into `lhs` (a declaration or an existing variable):
//   ASSIGN_OR_RETURN(VolumeDomain domain, BuildDomain(mesh, options.domain, &report, progress));
//   ASSIGN_OR_RETURN(result.weights, Solve(...));
// `lhs` must not contain an unparenthesized comma (use an alias for such types).
#define ASSIGN_OR_RETURN(lhs, expr)                                                             \
  SKINNING_ASSIGN_OR_RETURN_IMPL_(SKINNING_STATUS_MACROS_CONCAT_(skinning_statusor_, __LINE__), \
                                  lhs, expr)

// Implementation details.
#define SKINNING_STATUS_MACROS_CONCAT_INNER_(x, y) x##y
#define SKINNING_STATUS_MACROS_CONCAT_(x, y) SKINNING_STATUS_MACROS_CONCAT_INNER_(x, y)
#define SKINNING_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                    \
  if (!statusor.ok()) {                                      \
    return std::move(statusor).status();                     \
  }                                                          \
  lhs = *std::move(statusor)

#endif  // SKINNING_CORE_UTIL_STATUS_MACROS_H_
