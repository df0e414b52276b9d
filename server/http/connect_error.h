// Connect's error format (connectrpc.com/docs/protocol#error-end-stream): the code names, their
// HTTP statuses and the JSON error object. Below both the Connect service and the HTTP transport,
// so that a refusal of the transport (a bad framing, a body over the limit) and an error of a
// method reach a client in one format.
#ifndef SKINNING_SERVER_HTTP_CONNECT_ERROR_H_
#define SKINNING_SERVER_HTTP_CONNECT_ERROR_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace skinning {

// Connect's name of a status code ("invalid_argument", "canceled", ...).
const char* ConnectCodeName(absl::StatusCode code);
// The HTTP status of a Connect unary error with that code (invalid_argument 400, not_found 404,
// unauthenticated 401, unavailable 503, ...).
unsigned ConnectHttpStatus(absl::StatusCode code);
// A Connect error object, {"code": "...", "message": "..."}: the message JSON-escaped (bytes that
// are not UTF-8 replaced). Noted as an error sent through `door` (server/api/client_errors.h).
std::string ConnectErrorJson(const absl::Status& status, absl::string_view door = "connect");

}  // namespace skinning

#endif  // SKINNING_SERVER_HTTP_CONNECT_ERROR_H_
