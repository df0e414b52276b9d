// Fuzz target: a request's bytes through what the front door's transport does with a request's
// head before any router sees it (server/http/http_server.cc): Beast's parser with the server's
// header limit, then the framing and Expect checks (server/http/framing.h), the WebSocket key of
// an upgrade, the ?access_token= query parameter (server/http/front_door.h), the body up to a
// limit, and the Connect error object every refusal is sent as. It aborts when
// - a request whose framing is accepted carries a Transfer-Encoding that the parser does not read
//   as chunked (its body would be read as the next request);
// - a refusal's message is not printable ASCII (header values are quoted as such);
// - a refusal's error object does not parse as JSON back to its code and message;
// - an accepted WebSocket key is not 24 characters of base64 ending "==";
// - a decoded query parameter is longer than the target it came from.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cctype>
#include <limits>
#include <optional>
#include <string>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "server/http/connect_error.h"
#include "server/http/framing.h"
#include "server/http/front_door.h"
#include "server/http/http_server.h"

namespace {

namespace http = boost::beast::http;

void Fail(const char* what, absl::string_view detail = "") {
  std::fprintf(stderr, "http_head_fuzz: %s %.*s\n", what, static_cast<int>(detail.size()), detail.data());
  std::abort();
}

// What the transport does with a refusal: the message as the client gets it.
void CheckRefusal(const absl::Status& status) {
  if (status.ok()) return;
  for (char c : status.message())
    if (c < 0x20 || c > 0x7e) Fail("a refusal's message is not printable ASCII:", status.message());
  const nlohmann::json error = nlohmann::json::parse(skinning::ConnectErrorJson(status, "http"), nullptr, false);
  if (!error.is_object() || error.value("code", "") != skinning::ConnectCodeName(status.code()) ||
      error.value("message", "") != status.message())
    Fail("the error object does not give back the code and message:", status.message());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  http::request_parser<http::string_body> parser;
  parser.header_limit(static_cast<uint32_t>(skinning::HttpServerOptions{}.max_header_bytes));  // the default
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  boost::beast::error_code ec;
  const size_t head = parser.put(boost::asio::buffer(data, size), ec);
  if (ec || !parser.is_header_done()) return 0;  // refused with 400/431 by Beast's words, or incomplete
  const skinning::HttpRequest& req = parser.get();

  const absl::Status framing = skinning::FramingError(req, parser.chunked());
  CheckRefusal(framing);
  if (framing.ok() && req.count(http::field::transfer_encoding) > 0 && !parser.chunked())
    Fail("a Transfer-Encoding other than chunked was accepted");
  const absl::StatusOr<bool> expects = skinning::ExpectsContinue(req);
  CheckRefusal(expects.status());

  if (boost::beast::websocket::is_upgrade(req)) {
    const absl::Status key = skinning::WebSocketKeyError(req);
    CheckRefusal(key);
    if (key.ok()) {
      const auto value = req[http::field::sec_websocket_key];
      std::string trimmed(value.data(), value.size());
      trimmed.erase(0, trimmed.find_first_not_of(" \t"));
      trimmed.erase(trimmed.find_last_not_of(" \t") + 1);
      if (trimmed.size() != 24 || !absl::EndsWith(trimmed, "==")) Fail("an accepted key:", trimmed);
      for (size_t i = 0; i < 22; ++i) {
        const char c = trimmed[i];
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/'))
          Fail("an accepted key that is not base64:", trimmed);
      }
    }
  }

  const absl::string_view target(req.target().data(), req.target().size());
  const absl::StatusOr<std::optional<std::string>> token = skinning::QueryParameter(target, "access_token");
  CheckRefusal(token.status());
  if (token.ok() && *token && (*token)->size() > target.size()) Fail("a decoded parameter longer than its target");

  // The body, as the transport reads it once the head is accepted (a smaller limit here).
  if (!framing.ok() || !expects.ok() || parser.is_done()) return 0;
  parser.body_limit(1 << 16);
  parser.put(boost::asio::buffer(data + head, size - head), ec);
  if (ec && ec != http::error::need_more && ec != http::error::body_limit)
    CheckRefusal(absl::InvalidArgumentError(skinning::BodyError(ec)));
  return 0;
}
