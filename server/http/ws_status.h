// Marks a status as "the WebSocket frame was not the expected message" (closed with 1008,
// policy violation) rather than an answer of the service (4000 + its gRPC code).
#ifndef SKINNING_SERVER_HTTP_WS_STATUS_H_
#define SKINNING_SERVER_HTTP_WS_STATUS_H_

#include "absl/status/status.h"
#include "absl/strings/cord.h"

namespace skinning {

inline constexpr char kBadFramePayload[] = "type.skinning.dev/websocket-bad-frame";

inline absl::Status BadFrame(absl::string_view message) {
  absl::Status s = absl::InvalidArgumentError(message);
  s.SetPayload(kBadFramePayload, absl::Cord("1"));
  return s;
}

inline bool IsBadFrame(const absl::Status& s) { return s.GetPayload(kBadFramePayload).has_value(); }

}  // namespace skinning

#endif  // SKINNING_SERVER_HTTP_WS_STATUS_H_
