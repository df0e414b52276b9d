// The store's failures on the server's stdout, for the operator.
#ifndef SKINNING_SERVER_STORE_STORE_LOG_H_
#define SKINNING_SERVER_STORE_STORE_LOG_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace skinning {

// One line on stdout (as the server's other lines) per store failure, at most one every 10 s of
// each kind (Redis: the first word of its reply, or "unreachable"; the embedded store: the failed
// system call's error), with how many were not printed: an operator sees store trouble in the log
// (nothing was printed before, while every call and the bake workers failed).
//   "skinning-server store: UNAVAILABLE: <message><hint> (and 3 more store failures in the last 10 s)"
void LogStoreFailure(absl::string_view kind, const absl::Status& status, absl::string_view hint = "");

}  // namespace skinning

#endif  // SKINNING_SERVER_STORE_STORE_LOG_H_
