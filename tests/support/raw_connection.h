// A raw TCP connection to a loopback port, for tests that send what no HTTP client would
// (trickled headers, forbidden framings) and read exactly what the server sends back.
#ifndef SKINNING_TESTS_SUPPORT_RAW_CONNECTION_H_
#define SKINNING_TESTS_SUPPORT_RAW_CONNECTION_H_

#include <functional>
#include <string>

namespace skinning::testing {

// A blocking TCP socket connected to 127.0.0.1:`port` (SOCK_CLOEXEC), or -1; the caller closes it.
int ConnectLoopback(int port);

class RawConnection {
 public:
  // Connects to 127.0.0.1:`port`; connected() says whether it worked.
  explicit RawConnection(int port);
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool connected() const { return fd_ >= 0; }
  // Sends all of `bytes`; false when the server has closed or reset the connection.
  bool Send(const std::string& bytes);
  // What arrives until `done(what arrived in this call)` holds, the server closes the connection
  // (closed() is then true) or `timeout_s` passes. Without `done`: until closed or the timeout.
  std::string Read(double timeout_s, const std::function<bool(const std::string&)>& done = nullptr);
  bool closed() const { return closed_; }

 private:
  int fd_ = -1;
  bool closed_ = false;
};

// Whether `got` holds at least one whole HTTP response: a 1xx head, or a head and its body
// (by Content-Length, or chunked up to the last chunk).
bool HasWholeResponse(const std::string& got);

// Sends `bytes` on a new connection and returns what the server sends until it closes the
// connection or `timeout_s` passes (*closed says which).
std::string RawExchange(int port, const std::string& bytes, double timeout_s, bool* closed);

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_RAW_CONNECTION_H_
