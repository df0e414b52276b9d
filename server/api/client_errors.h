// Every error message the server sends to a client, whichever door it leaves by, passes through
// NoteClientError. With SKINNING_CLIENT_ERROR_LOG set (to a file name) when the process starts,
// each one is appended to that file as one line "door<TAB>code<TAB>message" — the test suite sets
// it to check that no message names a server path (tests/leak). Unset, this costs one branch.
#ifndef SKINNING_SERVER_API_CLIENT_ERRORS_H_
#define SKINNING_SERVER_API_CLIENT_ERRORS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace skinning {

// `door`: "grpc", "connect", "websocket" or "http".
void NoteClientError(absl::string_view door, const absl::Status& status);

}  // namespace skinning

#endif  // SKINNING_SERVER_API_CLIENT_ERRORS_H_
