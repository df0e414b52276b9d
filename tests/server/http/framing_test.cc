// The transport's checks of a request's head against RFC 9112 section 6 (framing), RFC 9110
// section 10.1.1 (Expect) and RFC 6455 section 4.2.1 (the WebSocket key), on requests built field
// by field.
#include "server/http/framing.h"

#include <string>
#include <utility>
#include <vector>

#include <boost/beast/http/error.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::testing::HasSubstr;

HttpRequest Request(const std::vector<std::pair<std::string, std::string>>& fields, unsigned version = 11) {
  HttpRequest req;
  req.version(version);
  for (const auto& [name, value] : fields) req.insert(name, value);
  return req;
}

TEST(HttpFramingTest, OnlyExactlyChunkedFramesABody) {
  EXPECT_TRUE(FramingError(Request({}), false).ok());
  for (const char* chunked : {"chunked", "Chunked", " CHUNKED ", "chunked,", ", chunked", "chunked ,\t"})
    EXPECT_TRUE(FramingError(Request({{"Transfer-Encoding", chunked}}), true).ok()) << chunked;
  // Codings this server does not decode: 501.
  for (const char* other : {"gzip", "identity", "gzip, chunked", "x-custom"}) {
    const absl::Status s = FramingError(Request({{"Transfer-Encoding", other}}), false);
    EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << other;
    EXPECT_THAT(s.message(), HasSubstr(other));
  }
  // Lists that are wrong whatever the codings: 400.
  const std::pair<std::vector<std::pair<std::string, std::string>>, const char*> bad[] = {
      {{{"Transfer-Encoding", "chunked, chunked"}}, "twice"},
      {{{"Transfer-Encoding", "chunked, identity"}}, "last"},
      {{{"Transfer-Encoding", "chunked, gzip"}}, "last"},
      {{{"Transfer-Encoding", " , "}}, "empty"},
      {{{"Transfer-Encoding", "gzip"}, {"Transfer-Encoding", "chunked"}}, "several"},
  };
  for (const auto& [fields, why] : bad) {
    const absl::Status s = FramingError(Request(fields), true);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << why;
    EXPECT_THAT(s.message(), HasSubstr(why));
  }
  EXPECT_EQ(FramingError(Request({{"Transfer-Encoding", "chunked"}}, 10), true).code(),
            absl::StatusCode::kInvalidArgument);
  // Where the parser did not take the value as chunked, the body is not framed: refused.
  EXPECT_EQ(FramingError(Request({{"Transfer-Encoding", "chunked"}}), false).code(), absl::StatusCode::kInvalidArgument);
  // A value is quoted in the message as its printable ASCII (the error body escapes it as JSON).
  EXPECT_THAT(FramingError(Request({{"Transfer-Encoding", "gz\"ip\\\x80"}}), false).message(),
              HasSubstr("'gz\"ip\\?'"));
}

TEST(HttpFramingTest, OnlyHundredContinueIsExpectedAndOnlyOverHttp11) {
  EXPECT_FALSE(*ExpectsContinue(Request({})));
  EXPECT_TRUE(*ExpectsContinue(Request({{"Expect", "100-continue"}})));
  EXPECT_TRUE(*ExpectsContinue(Request({{"Expect", " 100-Continue "}})));
  EXPECT_FALSE(*ExpectsContinue(Request({{"Expect", "100-continue"}}, 10)));
  for (const char* other : {"200-ok", "100-continue, foo", ""}) {
    const absl::StatusOr<bool> r = ExpectsContinue(Request({{"Expect", other}}));
    ASSERT_FALSE(r.ok()) << other;
    EXPECT_THAT(r.status().message(), HasSubstr("not supported"));
  }
}

TEST(HttpFramingTest, AWebSocketKeyIsTheBase64OfSixteenBytes) {
  EXPECT_TRUE(WebSocketKeyError(Request({{"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}})).ok());  // RFC 6455's
  EXPECT_TRUE(WebSocketKeyError(Request({{"Sec-WebSocket-Key", " AAAAAAAAAAAAAAAAAAAAAA== "}})).ok());
  const std::pair<std::vector<std::pair<std::string, std::string>>, const char*> bad[] = {
      {{}, "without Sec-WebSocket-Key"},
      {{{"Sec-WebSocket-Key", "abc"}}, "'abc' is not the base64 of 16 bytes"},
      {{{"Sec-WebSocket-Key", ""}}, "'' is not"},
      {{{"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ"}}, "is not"},    // unpadded
      {{{"Sec-WebSocket-Key", "AAAAAAAAAAAAAAAAAAAAAAA="}}, "is not"},  // 17 bytes
      {{{"Sec-WebSocket-Key", "!!!!!!!!!!!!!!!!!!!!!!=="}}, "is not"},  // not base64
      {{{"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}, {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}},
       "several"},
  };
  for (const auto& [fields, why] : bad) {
    const absl::Status s = WebSocketKeyError(Request(fields));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << why;
    EXPECT_THAT(s.message(), HasSubstr(why));
  }
}

TEST(HttpFramingTest, BrokenChunkedBodiesAreNamed) {
  EXPECT_THAT(BodyError(boost::beast::http::error::bad_chunk), HasSubstr("chunk size"));
  EXPECT_THAT(BodyError(boost::beast::http::error::bad_chunk_extension), HasSubstr("chunk extension"));
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
