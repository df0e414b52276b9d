// Fuzz target: the front door's gRPC-Web pieces (server/http/grpc_web.h) on outside bytes, as
// a -text request body, an error message sent in the trailers and a grpc-timeout value.
// DecodeText either refuses the input with INVALID_ARGUMENT or gives bytes that encode back to
// base64 and decode to themselves; the trailers are printable ASCII lines whose grpc-message
// percent-decodes to the message; ParseTimeout refuses the value with INVALID_ARGUMENT or gives
// 0 to 10⁹ s, and only for 1 to 8 digits and a unit. Anything else aborts.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "server/http/grpc_web.h"

namespace {

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "grpc_web_fuzz: %s\n", what);
  std::abort();
}

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace skinning::grpc_web;
  const absl::string_view in(reinterpret_cast<const char*>(data), size);

  absl::StatusOr<std::string> decoded = DecodeText(in);
  if (decoded.ok()) {
    absl::StatusOr<std::string> again = DecodeText(absl::Base64Escape(*decoded));
    if (!again.ok() || *again != *decoded) Fail("DecodeText of its output's base64 is not its output");
    if (decoded->size() > in.size()) Fail("DecodeText gave more bytes than it read");
  } else if (decoded.status().code() != absl::StatusCode::kInvalidArgument) {
    Fail("DecodeText failed with another code");
  }

  const std::string message(in);
  const std::string trailers = Trailers(absl::InternalError(message));
  if (!absl::StartsWith(trailers, "grpc-status:13\r\ngrpc-message:") || !absl::EndsWith(trailers, "\r\n"))
    Fail("the trailers are not the status line and the message line");
  constexpr size_t kHead = sizeof("grpc-status:13\r\ngrpc-message:") - 1;
  const absl::string_view encoded = absl::string_view(trailers).substr(kHead, trailers.size() - kHead - 2);
  std::string back;
  for (size_t i = 0; i < encoded.size(); ++i) {
    const char c = encoded[i];
    if (static_cast<uint8_t>(c) < 0x20 || static_cast<uint8_t>(c) > 0x7E) Fail("the message is not printable ASCII");
    if (c != '%') {
      back.push_back(c);
      continue;
    }
    if (i + 2 >= encoded.size()) Fail("a cut percent escape");
    const int hi = Hex(encoded[i + 1]), lo = Hex(encoded[i + 2]);
    if (hi < 0 || lo < 0) Fail("a percent escape that is not two upper-case hex digits");
    back.push_back(static_cast<char>(16 * hi + lo));
    i += 2;
  }
  if (back != message) Fail("the message does not percent-decode back to itself");

  absl::StatusOr<std::chrono::nanoseconds> timeout = ParseTimeout(in);
  const bool grammar = size >= 2 && size <= 9 && in.substr(0, size - 1).find_first_not_of("0123456789") ==
                                                    absl::string_view::npos &&
                       absl::string_view("HMSmun").find(in.back()) != absl::string_view::npos;
  if (timeout.ok() != grammar) Fail("ParseTimeout took a value outside the grammar or refused one in it");
  if (timeout.ok() && (timeout->count() < 0 || *timeout > std::chrono::seconds(1000000000)))
    Fail("ParseTimeout gave a negative or larger than 10^9 s timeout");
  if (!timeout.ok() && timeout.status().code() != absl::StatusCode::kInvalidArgument)
    Fail("ParseTimeout failed with another code");
  return 0;
}
