// The one place where core/absl errors become gRPC status codes.
#ifndef SKINNING_SERVER_GRPC_GRPC_STATUS_H_
#define SKINNING_SERVER_GRPC_GRPC_STATUS_H_

#include <string>

#include <grpcpp/support/status.h>

#include "absl/status/status.h"
#include "server/api/client_errors.h"

namespace skinning {

// absl and gRPC share the canonical code numbering (OK = 0 … UNAUTHENTICATED = 16); the message
// is passed through (and noted: server/api/client_errors.h). Codes outside that range become
// INTERNAL.
inline grpc::Status ToGrpcStatus(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  NoteClientError("grpc", s);
  const int code = static_cast<int>(s.code());
  if (code <= 0 || code > 16) return grpc::Status(grpc::StatusCode::INTERNAL, std::string(s.message()));
  return grpc::Status(static_cast<grpc::StatusCode>(code), std::string(s.message()));
}

}  // namespace skinning

#endif  // SKINNING_SERVER_GRPC_GRPC_STATUS_H_
