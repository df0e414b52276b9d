// The front door's gzip coding against an independent implementation, the gzip program: what
// Gzip writes, gzip -d reads back; what gzip writes, Gunzip reads back. Gunzip's limit stops a
// small body that inflates a thousandfold, and broken input is refused, not half read.
#include "server/http/gzip.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "tests/support/gzip_program.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::GzipProgram;

// 200 kB of a JSON-like text and 100 kB of random bytes: compressible and incompressible parts.
std::string Sample() {
  std::string s;
  for (int i = 0; s.size() < 200000; ++i) s += "{\"vertices\": [" + std::to_string(i * 0.001) + ", 1.5, -2.25]}\n";
  std::mt19937 rng(7);
  for (int i = 0; i < 100000; ++i) s.push_back(static_cast<char>(rng() & 0xFF));
  return s;
}

TEST(GzipTest, GzipProgramReadsWhatGzipWritesAtEveryLevel) {
  const std::string data = Sample();
  for (int level : {1, 6, 9}) {
    SCOPED_TRACE(level);
    const std::string gz = Gzip(data, level).value();
    EXPECT_LT(gz.size(), data.size());
    EXPECT_EQ(GzipProgram(gz, "-dc"), data);
  }
  // An empty body is a valid 20-byte member.
  EXPECT_EQ(GzipProgram(Gzip("", 1).value(), "-dc"), "");
}

TEST(GzipTest, GunzipReadsWhatTheGzipProgramWrites) {
  const std::string data = Sample();
  const std::string gz = GzipProgram(data, "-c -9");
  ASSERT_GT(gz.size(), 18u);
  absl::StatusOr<std::string> back = Gunzip(gz, data.size());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, data);
}

TEST(GzipTest, TheLimitStopsABombAndHoldsExactly) {
  // 20 MB of zeros compress to ~20 kB: a 1 MB limit stops it without inflating the rest.
  const std::string bomb = Gzip(std::string(20 << 20, '\0'), 9).value();
  ASSERT_LT(bomb.size(), 50000u);
  absl::StatusOr<std::string> big = Gunzip(bomb, 1 << 20);
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted) << big.status();
  EXPECT_NE(big.status().message().find("1048576"), std::string::npos) << big.status();

  const std::string data = Sample();
  const std::string gz = Gzip(data, 1).value();
  EXPECT_TRUE(Gunzip(gz, data.size()).ok());
  EXPECT_EQ(Gunzip(gz, data.size() - 1).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(GzipTest, BrokenInputIsRefused) {
  const std::string data = Sample();
  const std::string gz = Gzip(data, 6).value();
  auto code = [](absl::string_view in) { return Gunzip(in, 100 << 20).status().code(); };
  EXPECT_EQ(code(""), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code("not gzip at all"), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(gz.substr(0, gz.size() / 2)), absl::StatusCode::kInvalidArgument);  // cut short
  EXPECT_EQ(code(gz.substr(0, gz.size() - 1)), absl::StatusCode::kInvalidArgument);  // length field cut
  EXPECT_EQ(code(gz + "x"), absl::StatusCode::kInvalidArgument);                     // bytes after its end
  std::string bad_crc = gz;
  bad_crc[bad_crc.size() - 6] ^= 0x5A;  // the CRC-32 of the data (8 bytes from the end: CRC, size)
  EXPECT_EQ(code(bad_crc), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::string> crc = Gunzip(bad_crc, 100 << 20);
  EXPECT_NE(crc.status().message().find("not valid gzip"), std::string::npos) << crc.status();
}

TEST(GzipTest, AcceptEncodingFollowsQValues) {
  EXPECT_TRUE(AcceptsGzip("gzip"));
  EXPECT_TRUE(AcceptsGzip("gzip, deflate, br"));  // what browsers send
  EXPECT_TRUE(AcceptsGzip("br;q=1.0, GZip;q=0.5"));
  EXPECT_TRUE(AcceptsGzip("x-gzip"));
  EXPECT_TRUE(AcceptsGzip("*"));
  EXPECT_TRUE(AcceptsGzip("identity, *;q=0.1"));
  EXPECT_FALSE(AcceptsGzip(""));
  EXPECT_FALSE(AcceptsGzip("identity"));
  EXPECT_FALSE(AcceptsGzip("deflate, br"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0, *"));  // an explicit refusal wins over the wildcard
  EXPECT_FALSE(AcceptsGzip("*;q=0"));
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
