// gRPC-Web (github.com/grpc/grpc, doc/PROTOCOL-WEB.md) on the HTTP front door: the wire format
// of grpc-web clients (Google's grpc-web, connect-web's gRPC-Web transport, Flutter's web
// channel, Envoy's grpc_web filter in front of other servers). A call is `POST /pkg.Service/Method`
// with one length-prefixed message (the framing of gRPC and of Connect's streams); the answer
// is HTTP 200 with the answer's messages in the same framing, then a trailers frame (flag 0x80)
// holding `grpc-status` and `grpc-message`. The -text variants carry the same bytes in base64.
// This file holds the pieces that are not Connect's: media types, base64 bodies, trailers and
// grpc-timeout. server/http/connect.cc serves the calls.
#ifndef SKINNING_SERVER_HTTP_GRPC_WEB_H_
#define SKINNING_SERVER_HTTP_GRPC_WEB_H_

#include <chrono>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace skinning::grpc_web {

struct Format {
  bool text = false;  // application/grpc-web-text…: base64 bodies
  bool json = false;  // application/grpc-web+json: messages in protobuf's JSON mapping
};
// The format of a gRPC-Web media type (lower case, without parameters): application/grpc-web,
// application/grpc-web+proto, application/grpc-web+json, application/grpc-web-text and
// application/grpc-web-text+proto; nullopt for any other.
std::optional<Format> ParseMediaType(absl::string_view media);

// A -text body decoded: base64 (RFC 4648, standard alphabet), possibly several padded pieces one
// after another (a client may encode each frame on its own). INVALID_ARGUMENT otherwise.
absl::StatusOr<std::string> DecodeText(absl::string_view body);

// The payload of the trailers frame for `status`: "grpc-status:N\r\n", and for an error
// "grpc-message:M\r\n" with M percent-encoded as gRPC does (bytes outside printable ASCII, and
// '%', as %XX).
std::string Trailers(const absl::Status& status);

// A grpc-timeout value: 1 to 8 digits and a unit (H, M, S, m, u, n). INVALID_ARGUMENT otherwise.
absl::StatusOr<std::chrono::nanoseconds> ParseTimeout(absl::string_view value);

}  // namespace skinning::grpc_web

#endif  // SKINNING_SERVER_HTTP_GRPC_WEB_H_
