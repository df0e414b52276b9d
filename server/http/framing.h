// What the HTTP/1.1 transport (http_server.h) checks in a request's head before it reads the
// body: the framing (RFC 9112 section 6) and the expectation (RFC 9110 section 10.1.1); the key
// of a WebSocket upgrade (RFC 6455 section 4.2.1); and the words for a body that does not parse.
#ifndef SKINNING_SERVER_HTTP_FRAMING_H_
#define SKINNING_SERVER_HTTP_FRAMING_H_

#include <string>

#include <boost/system/error_code.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/http/http_server.h"

namespace skinning {

// Why the request's framing is refused, OK when it is not. A Transfer-Encoding other than
// exactly "chunked" (any case, optional whitespace, empty list elements) would let its body be
// read as the next request (smuggling). UNIMPLEMENTED (answered 501) for a coding this server
// does not decode; INVALID_ARGUMENT (400) for several Transfer-Encoding lines, chunked twice or
// not last, an empty value, a Transfer-Encoding in an HTTP/1.0 request, or a value that the
// parser read otherwise (`parsed_chunked`: whether it reads the body as chunked).
absl::Status FramingError(const HttpRequest& request, bool parsed_chunked);

// Whether to send 100 Continue before reading the body: the request is HTTP/1.1 and expects
// 100-continue (an HTTP/1.0 client does not wait for it). INVALID_ARGUMENT (answered 417) for
// any other expectation.
absl::StatusOr<bool> ExpectsContinue(const HttpRequest& request);

// Why a WebSocket upgrade's Sec-WebSocket-Key is refused (INVALID_ARGUMENT, answered 400), OK
// when it is the base64 of 16 bytes (RFC 6455 section 4.2.1; Beast takes any value up to 24
// characters). Only the key: the version and the other upgrade headers are Beast's to check.
absl::Status WebSocketKeyError(const HttpRequest& request);

// A value from the request (a header, the target) quoted in an error message: 'value' with its
// printable ASCII (other bytes become '?'), at most 64 characters ("...'" past them).
std::string Quoted(absl::string_view value);

// What is wrong with a body that did not parse (a chunked one: its size, a missing CRLF), in
// words for a 400.
std::string BodyError(const boost::system::error_code& ec);

}  // namespace skinning

#endif  // SKINNING_SERVER_HTTP_FRAMING_H_
