// Protobuf's own log lines, limited. Protobuf writes a line to stderr for some bad input it
// parses (an ERROR for a string field that is not UTF-8), so every hostile request could add a
// line to the server's log; with this, at most `lines` per `window` are written, the first one
// over says that the rest of the window is dropped, and the next line after the window says how
// many were. FATAL lines always pass. Process-wide (protobuf has one log handler); call once
// from main before serving.
#ifndef SKINNING_SERVER_PROTOBUF_LOG_H_
#define SKINNING_SERVER_PROTOBUF_LOG_H_

#include "absl/time/time.h"

namespace skinning {

void LimitProtobufLogging(int lines = 10, absl::Duration window = absl::Seconds(10));

}  // namespace skinning

#endif  // SKINNING_SERVER_PROTOBUF_LOG_H_
