#include "tests/support/http_get.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/util/status_macros.h"

namespace skinning::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Closes the descriptor when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

int RemainingMs(Clock::time_point until) {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
  return ms > 0 ? static_cast<int>(ms) : 0;
}

// Waits for `events` on `fd` until `until`; false on timeout.
bool WaitFor(int fd, short events, Clock::time_point until) {
  while (true) {
    pollfd p{fd, events, 0};
    const int r = poll(&p, 1, RemainingMs(until));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return false;
  }
}

// The body of a "Transfer-Encoding: chunked" message.
absl::StatusOr<std::string> Dechunk(const std::string& raw) {
  std::string body;
  size_t at = 0;
  while (true) {
    const size_t eol = raw.find("\r\n", at);
    if (eol == std::string::npos)
      return absl::DataLossError("chunked body: missing chunk size line");
    std::string size_text = raw.substr(at, eol - at);
    size_text = size_text.substr(0, size_text.find(';'));  // chunk extensions
    char* end = nullptr;
    const unsigned long size = std::strtoul(size_text.c_str(), &end, 16);
    if (end == size_text.c_str())
      return absl::DataLossError(absl::StrCat("chunked body: bad size '", size_text, "'"));
    at = eol + 2;
    if (size == 0) return body;
    if (at + size > raw.size()) return absl::DataLossError("chunked body: truncated chunk");
    body.append(raw, at, size);
    at += size + 2;  // the chunk's CRLF
  }
}

}  // namespace

absl::StatusOr<HttpResponse> HttpGet(const std::string& host, int port, const std::string& path,
                                     double timeout_s) {
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(timeout_s));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1)
    return absl::InvalidArgumentError(absl::StrCat("host '", host, "' is not an IPv4 address"));
  Fd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
    return absl::UnavailableError(
        absl::StrCat("connect ", host, ":", port, ": ", std::strerror(errno)));

  const std::string request = absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: ", host, ":", port,
                                           "\r\nAccept: text/plain\r\nConnection: close\r\n\r\n");
  for (size_t sent = 0; sent < request.size();) {
    if (!WaitFor(fd.get(), POLLOUT, until))
      return absl::DeadlineExceededError("sending the request timed out");
    const ssize_t n = send(fd.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError(absl::StrCat("send: ", std::strerror(errno)));
    sent += static_cast<size_t>(n);
  }

  // Read the head, then the body up to Content-Length or the end of the connection.
  std::string raw;
  size_t head_end = std::string::npos;
  long long content_length = -1;
  HttpResponse response;
  char buf[8192];
  while (true) {
    if (head_end != std::string::npos && content_length >= 0 &&
        raw.size() >= head_end + 4 + static_cast<size_t>(content_length))
      break;
    if (!WaitFor(fd.get(), POLLIN, until))
      return absl::DeadlineExceededError("reading the response timed out");
    const ssize_t n = recv(fd.get(), buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::UnavailableError(absl::StrCat("recv: ", std::strerror(errno)));
    if (n == 0) break;
    raw.append(buf, static_cast<size_t>(n));
    if (head_end == std::string::npos && (head_end = raw.find("\r\n\r\n")) != std::string::npos) {
      std::vector<std::string> lines = absl::StrSplit(raw.substr(0, head_end), "\r\n");
      std::vector<std::string> status_line = absl::StrSplit(lines[0], absl::MaxSplits(' ', 2));
      if (status_line.size() < 2 || !absl::StartsWith(status_line[0], "HTTP/1.") ||
          !absl::SimpleAtoi(status_line[1], &response.status))
        return absl::DataLossError(absl::StrCat("bad status line '", lines[0], "'"));
      for (size_t i = 1; i < lines.size(); ++i) {
        const size_t colon = lines[i].find(':');
        if (colon == std::string::npos)
          return absl::DataLossError(absl::StrCat("bad header line '", lines[i], "'"));
        response.headers[absl::AsciiStrToLower(lines[i].substr(0, colon))] =
            std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
      }
      auto it = response.headers.find("content-length");
      if (it != response.headers.end() && !absl::SimpleAtoi(it->second, &content_length))
        return absl::DataLossError(absl::StrCat("bad Content-Length '", it->second, "'"));
    }
  }
  if (head_end == std::string::npos)
    return absl::DataLossError("the connection closed before the response head ended");
  std::string body = raw.substr(head_end + 4);
  auto te = response.headers.find("transfer-encoding");
  if (te != response.headers.end() && absl::AsciiStrToLower(te->second) == "chunked") {
    ASSIGN_OR_RETURN(body, Dechunk(body));
  } else if (content_length >= 0) {
    if (body.size() < static_cast<size_t>(content_length))
      return absl::DataLossError(
          absl::StrCat("body has ", body.size(), " of ", content_length, " bytes"));
    body.resize(static_cast<size_t>(content_length));
  }
  response.body = std::move(body);
  return response;
}

}  // namespace skinning::testing
