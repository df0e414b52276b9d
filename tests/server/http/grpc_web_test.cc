// The gRPC-Web pieces of the front door (server/http/grpc_web.h) against their specification
// (doc/PROTOCOL-WEB.md and the gRPC HTTP/2 spec it refers to): media types, base64 bodies in
// several padded pieces, percent-encoded trailers and grpc-timeout's units. The calls themselves
// are tested through the real server (tests/e2e/http_grpc_web_test.cc).
#include "server/http/grpc_web.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "absl/strings/escaping.h"

namespace skinning::grpc_web {
namespace {
namespace SKINNING_TEST_FILE {

TEST(GrpcWebFormatTest, MediaTypes) {
  for (const char* binary : {"application/grpc-web", "application/grpc-web+proto"}) {
    ASSERT_TRUE(ParseMediaType(binary).has_value()) << binary;
    EXPECT_FALSE(ParseMediaType(binary)->text);
    EXPECT_FALSE(ParseMediaType(binary)->json);
  }
  ASSERT_TRUE(ParseMediaType("application/grpc-web+json").has_value());
  EXPECT_TRUE(ParseMediaType("application/grpc-web+json")->json);
  for (const char* text : {"application/grpc-web-text", "application/grpc-web-text+proto"}) {
    ASSERT_TRUE(ParseMediaType(text).has_value()) << text;
    EXPECT_TRUE(ParseMediaType(text)->text);
  }
  for (const char* other : {"application/grpc", "application/grpc-web+thrift", "application/grpc-web-text+json",
                            "application/json", ""})
    EXPECT_FALSE(ParseMediaType(other).has_value()) << other;
}

TEST(GrpcWebFormatTest, TextBodiesMayComeInPaddedPieces) {
  // Every length mod 3, whole and cut in two at every byte (each piece encoded on its own).
  const std::string data = std::string("\x00\x00\x00\x00\x07hello, \xFF\x80", 17);
  for (size_t n = 0; n <= data.size(); ++n) {
    const std::string bytes = data.substr(0, n);
    EXPECT_EQ(DecodeText(absl::Base64Escape(bytes)).value(), bytes);
    for (size_t cut = 0; cut <= n; ++cut) {
      const std::string pieces = absl::Base64Escape(bytes.substr(0, cut)) + absl::Base64Escape(bytes.substr(cut));
      EXPECT_EQ(DecodeText(pieces).value(), bytes) << pieces;
    }
  }
  for (const char* bad : {"abc", "ab=c", "a===", "!!!!", "QUJD\n"}) {
    absl::StatusOr<std::string> d = DecodeText(bad);
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(GrpcWebFormatTest, TrailersPercentEncodeTheMessage) {
  EXPECT_EQ(Trailers(absl::OkStatus()), "grpc-status:0\r\n");
  EXPECT_EQ(Trailers(absl::NotFoundError("rig 'a%b' \xC3\xA9\r\n not found")),
            "grpc-status:5\r\ngrpc-message:rig 'a%25b' %C3%A9%0D%0A not found\r\n");
  EXPECT_EQ(Trailers(absl::InternalError("")), "grpc-status:13\r\ngrpc-message:\r\n");
}

TEST(GrpcWebFormatTest, TimeoutUnits) {
  using std::chrono::nanoseconds;
  EXPECT_EQ(ParseTimeout("2H").value(), std::chrono::hours(2));
  EXPECT_EQ(ParseTimeout("3M").value(), std::chrono::minutes(3));
  EXPECT_EQ(ParseTimeout("30S").value(), std::chrono::seconds(30));
  EXPECT_EQ(ParseTimeout("250m").value(), std::chrono::milliseconds(250));
  EXPECT_EQ(ParseTimeout("7u").value(), std::chrono::microseconds(7));
  EXPECT_EQ(ParseTimeout("12345678n").value(), nanoseconds(12345678));
  EXPECT_EQ(ParseTimeout("0S").value(), nanoseconds(0));
  // 8 digits of hours do not fit in nanoseconds: held at 10⁹ s.
  EXPECT_EQ(ParseTimeout("99999999H").value(), std::chrono::seconds(1000000000));
  for (const char* bad : {"", "S", "30", "123456789S", "-1S", "1.5S", "10s", "10 S"})
    EXPECT_EQ(ParseTimeout(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning::grpc_web
