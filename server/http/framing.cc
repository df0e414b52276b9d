#include "server/http/framing.h"

#include <iterator>
#include <vector>

#include <boost/beast/http/error.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace skinning {

namespace http = boost::beast::http;

namespace {

absl::string_view View(boost::beast::string_view v) { return absl::string_view(v.data(), v.size()); }

}  // namespace

std::string Quoted(absl::string_view value) {
  std::string out = "'";
  for (char c : value.substr(0, 64)) out += c >= 0x20 && c < 0x7f ? c : '?';
  return absl::StrCat(out, value.size() > 64 ? "...'" : "'");
}

absl::Status FramingError(const HttpRequest& request, bool parsed_chunked) {
  const auto [first, last] = request.equal_range(http::field::transfer_encoding);
  if (first == last) return absl::OkStatus();
  if (std::next(first) != last)
    return absl::InvalidArgumentError("several Transfer-Encoding header lines (send one: chunked)");
  if (request.version() < 11) return absl::InvalidArgumentError("Transfer-Encoding in an HTTP/1.0 request");
  const absl::string_view value = View(first->value());
  std::vector<absl::string_view> codings;
  for (absl::string_view coding : absl::StrSplit(value, ','))
    if (coding = absl::StripAsciiWhitespace(coding); !coding.empty()) codings.push_back(coding);
  int chunked = 0;
  for (absl::string_view coding : codings) chunked += absl::EqualsIgnoreCase(coding, "chunked");
  if (codings.empty()) return absl::InvalidArgumentError("empty Transfer-Encoding");
  const std::string named = absl::StrCat("Transfer-Encoding ", Quoted(value));
  if (chunked > 1) return absl::InvalidArgumentError(absl::StrCat(named, " lists chunked twice"));
  if (chunked == 1 && !absl::EqualsIgnoreCase(codings.back(), "chunked"))
    return absl::InvalidArgumentError(absl::StrCat(named, ": chunked must be the last coding"));
  if (codings.size() > 1 || chunked == 0)
    return absl::UnimplementedError(absl::StrCat(named, " is not supported: send chunked or a Content-Length"));
  if (!parsed_chunked) return absl::InvalidArgumentError(absl::StrCat(named, " is not a valid list of codings"));
  return absl::OkStatus();
}

absl::StatusOr<bool> ExpectsContinue(const HttpRequest& request) {
  bool expects = false;
  for (auto [it, end] = request.equal_range(http::field::expect); it != end; ++it) {
    const absl::string_view expect = View(it->value());
    if (!absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(expect), "100-continue"))
      return absl::InvalidArgumentError(
          absl::StrCat("Expect ", Quoted(expect), " is not supported (only 100-continue)"));
    expects = request.version() >= 11;
  }
  return expects;
}

absl::Status WebSocketKeyError(const HttpRequest& request) {
  const auto [first, last] = request.equal_range(http::field::sec_websocket_key);
  if (first == last) return absl::InvalidArgumentError("a WebSocket upgrade without Sec-WebSocket-Key");
  if (std::next(first) != last) return absl::InvalidArgumentError("several Sec-WebSocket-Key header lines");
  const absl::string_view key = absl::StripAsciiWhitespace(View(first->value()));
  std::string nonce;
  // 16 bytes are 24 characters of base64 with "==" (Base64Unescape also takes them unpadded).
  if (key.size() != 24 || !absl::EndsWith(key, "==") || !absl::Base64Unescape(key, &nonce) || nonce.size() != 16)
    return absl::InvalidArgumentError(
        absl::StrCat("Sec-WebSocket-Key ", Quoted(key), " is not the base64 of 16 bytes (RFC 6455 4.2.1)"));
  return absl::OkStatus();
}

std::string BodyError(const boost::system::error_code& ec) {
  if (ec == http::error::bad_chunk)
    return "malformed chunked body: a chunk size that is not hex or overflows, or a chunk not followed by CRLF";
  if (ec == http::error::bad_chunk_extension) return "malformed chunked body: a bad chunk extension";
  return absl::StrCat("malformed request body: ", ec.message());
}

}  // namespace skinning
