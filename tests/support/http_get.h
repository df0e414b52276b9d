// A minimal HTTP/1.1 client for tests: one GET over a POSIX socket, no dependencies.
#ifndef SKINNING_TESTS_SUPPORT_HTTP_GET_H_
#define SKINNING_TESTS_SUPPORT_HTTP_GET_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace skinning::testing {

struct HttpResponse {
  int status = 0;                              // e.g. 200
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;                            // de-chunked
};

// GET http://`host`:`port``path` with "Connection: close"; reads until the server closes or
// Content-Length bytes arrived. `host` is a numeric IPv4 address. UNAVAILABLE when it cannot
// connect, DEADLINE_EXCEEDED after `timeout_s`, DATA_LOSS for a response that does not parse.
absl::StatusOr<HttpResponse> HttpGet(const std::string& host, int port, const std::string& path,
                                     double timeout_s = 10);

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_HTTP_GET_H_
