// Static files of --web_dir on the real server: small files whole, large ones in pieces as the
// client takes them (each answer held the whole file: 30 clients asking for a 47 MB file and not
// reading took 1.6 GB), HEAD with the length and no body, and nothing under node_modules (the
// viewer's build tooling, 160 MB beside it, was served).
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/util/process_stats.h"
#include "tests/support/http_client.h"
#include "tests/support/raw_connection.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::ConnectLoopback;
using ::skinning::testing::HttpCall;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::ServerProcess;

void Write(const std::string& path, const std::string& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(HttpStaticTest, LargeFilesGoInPiecesHeadHasTheLengthAndNodeModulesIsNotServed) {
  const std::string web = MakeTempDir("web");
  std::string big(32 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 2654435761u) >> 13);
  Write(web + "/big.bin", big);
  Write(web + "/index.html", "<p>viewer</p>\n");
  Write(web + "/node_modules/pkg/index.js", "export const secret = 1;\n");
  ServerProcess server(MakeTempDir("store"), {"--http_address=127.0.0.1:0", "--web_dir=" + web});
  const int port = server.http_port();
  ASSERT_GT(port, 0) << server.Output();

  auto small = HttpCall(port, "GET", "/");
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(small->status, 200);
  EXPECT_EQ(small->body, "<p>viewer</p>\n");
  EXPECT_EQ(small->headers["content-length"], "14");
  auto large = HttpCall(port, "GET", "/big.bin");
  ASSERT_TRUE(large.ok()) << large.status();
  EXPECT_EQ(large->status, 200);
  EXPECT_EQ(large->headers["transfer-encoding"], "chunked");
  EXPECT_TRUE(large->body == big) << "a large file arrives whole and unchanged (" << large->body.size() << " bytes)";
  auto hidden = HttpCall(port, "GET", "/node_modules/pkg/index.js");
  ASSERT_TRUE(hidden.ok()) << hidden.status();
  EXPECT_EQ(hidden->status, 404);

  // HEAD: the length, no body (the next request on the connection is read as one).
  {
    const int fd = ConnectLoopback(port);
    ASSERT_GE(fd, 0);
    const std::string two = "HEAD /big.bin HTTP/1.1\r\nHost: x\r\n\r\nGET /index.html HTTP/1.1\r\nHost: x\r\n"
                            "Connection: close\r\n\r\n";
    ASSERT_EQ(send(fd, two.data(), two.size(), 0), static_cast<ssize_t>(two.size()));
    std::string got;
    char buf[4096];
    for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) got.append(buf, static_cast<size_t>(n));
    close(fd);
    EXPECT_NE(got.find("Content-Length: " + std::to_string(big.size())), std::string::npos) << got.substr(0, 400);
    const size_t second = got.find("HTTP/1.1 200", 1);
    ASSERT_NE(second, std::string::npos) << got.substr(0, 400);
    EXPECT_EQ(got.find("\r\n\r\n") + 4, second) << "HEAD sent a body";
    EXPECT_NE(got.find("<p>viewer</p>", second), std::string::npos);
  }

  // 20 clients ask for the 32 MiB file and read nothing: the server holds a piece each, not the
  // file (640 MiB), and serves everyone else meanwhile.
  const int64_t before = ResidentBytes(server.pid());
  std::vector<int> stalled;
  for (int i = 0; i < 20; ++i) {
    const int fd = ConnectLoopback(port);
    ASSERT_GE(fd, 0);
    const int small_buffer = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small_buffer, sizeof small_buffer);
    const std::string get = "GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_EQ(send(fd, get.data(), get.size(), 0), static_cast<ssize_t>(get.size()));
    stalled.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const int64_t during = ResidentBytes(server.pid());
  auto meanwhile = HttpCall(port, "GET", "/index.html", "", {}, 5);
  ASSERT_TRUE(meanwhile.ok()) << meanwhile.status();
  EXPECT_EQ(meanwhile->status, 200);
  for (int fd : stalled) close(fd);
  std::printf("resident %.1f MiB before, %.1f MiB with 20 stalled downloads of a 32 MiB file\n", before / 1048576.0,
              during / 1048576.0);
  EXPECT_LT(during - before, int64_t{128} << 20);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
