#include "tests/support/raw_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace skinning::testing {

int ConnectLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

RawConnection::RawConnection(int port) : fd_(ConnectLoopback(port)) {}

RawConnection::~RawConnection() {
  if (fd_ >= 0) close(fd_);
}

bool RawConnection::Send(const std::string& bytes) {
  for (size_t sent = 0; fd_ >= 0 && sent < bytes.size();) {
    const ssize_t n = send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return fd_ >= 0;
}

std::string RawConnection::Read(double timeout_s, const std::function<bool(const std::string&)>& done) {
  std::string got;
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::microseconds(static_cast<int64_t>(timeout_s * 1e6));
  while (fd_ >= 0 && !closed_ && std::chrono::steady_clock::now() < until && !(done && done(got))) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(fd_, buf, sizeof buf);
    if (n <= 0) {
      closed_ = true;
      break;
    }
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

bool HasWholeResponse(const std::string& got) {
  const size_t head_end = got.find("\r\n\r\n");
  if (head_end == std::string::npos) return false;
  const std::string head = absl::AsciiStrToLower(got.substr(0, head_end));
  if (absl::StartsWith(head, "http/1.1 1")) return true;
  const std::string body = got.substr(head_end + 4);
  for (absl::string_view line : absl::StrSplit(head, "\r\n")) {
    size_t length = 0;
    if (absl::ConsumePrefix(&line, "content-length:") && absl::SimpleAtoi(line, &length)) return body.size() >= length;
    if (absl::ConsumePrefix(&line, "transfer-encoding:")) return absl::StrContains(body, "0\r\n\r\n");
  }
  return true;
}

std::string RawExchange(int port, const std::string& bytes, double timeout_s, bool* closed) {
  RawConnection c(port);
  c.Send(bytes);
  std::string got = c.Read(timeout_s);
  *closed = c.closed();
  return got;
}

}  // namespace skinning::testing
