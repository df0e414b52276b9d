#include "server/http/grpc_web.h"

#include <cstdint>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/http/framing.h"

namespace skinning::grpc_web {

std::optional<Format> ParseMediaType(absl::string_view media) {
  if (media == "application/grpc-web" || media == "application/grpc-web+proto") return Format{false, false};
  if (media == "application/grpc-web+json") return Format{false, true};
  if (media == "application/grpc-web-text" || media == "application/grpc-web-text+proto") return Format{true, false};
  return std::nullopt;
}

absl::StatusOr<std::string> DecodeText(absl::string_view body) {
  std::string out, piece;
  size_t start = 0;
  while (start < body.size()) {
    // A piece ends after its padding, or at the end of the body.
    size_t end = body.find('=', start);
    end = end == absl::string_view::npos ? body.size() : body.find_first_not_of('=', end);
    if (end == absl::string_view::npos) end = body.size();
    const absl::string_view part = body.substr(start, end - start);
    if (part.size() % 4 != 0 || !absl::Base64Unescape(part, &piece))
      return absl::InvalidArgumentError(absl::StrCat("the application/grpc-web-text body is not base64 (at byte ",
                                                     start, ": ", Quoted(part), ")"));
    out += piece;
    start = end;
  }
  return out;
}

std::string Trailers(const absl::Status& status) {
  std::string out = absl::StrCat("grpc-status:", static_cast<int>(status.code()), "\r\n");
  if (status.ok()) return out;
  out += "grpc-message:";
  for (const char c : status.message()) {
    const auto b = static_cast<uint8_t>(c);
    if (b < 0x20 || b > 0x7E || c == '%') {
      absl::StrAppendFormat(&out, "%%%02X", b);
    } else {
      out.push_back(c);
    }
  }
  out += "\r\n";
  return out;
}

absl::StatusOr<std::chrono::nanoseconds> ParseTimeout(absl::string_view value) {
  int64_t n = 0, unit_ns = 0;
  const bool digits = value.size() >= 2 && value.size() <= 9 &&
                      value.substr(0, value.size() - 1).find_first_not_of("0123456789") == absl::string_view::npos;
  if (digits) {
    for (char c : value.substr(0, value.size() - 1)) n = 10 * n + (c - '0');
    switch (value.back()) {
      case 'H': unit_ns = int64_t{3600} * 1000000000; break;
      case 'M': unit_ns = int64_t{60} * 1000000000; break;
      case 'S': unit_ns = 1000000000; break;
      case 'm': unit_ns = 1000000; break;
      case 'u': unit_ns = 1000; break;
      case 'n': unit_ns = 1; break;
      default: break;
    }
  }
  if (unit_ns > 0) {
    // Up to 10⁹ s (about 32 years): 99,999,999 hours would not fit in nanoseconds, and a
    // deadline that far is none.
    constexpr int64_t kMaxNs = int64_t{1000000000} * 1000000000;
    return std::chrono::nanoseconds(n > kMaxNs / unit_ns ? kMaxNs : n * unit_ns);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("grpc-timeout ", Quoted(value), " is not 1 to 8 digits and a unit (H, M, S, m, u or n)"));
}

}  // namespace skinning::grpc_web
