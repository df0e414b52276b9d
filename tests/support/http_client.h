// HTTP, Connect and WebSocket clients for tests, on Boost.Beast (blocking, one connection per
// call unless a Connection is kept).
#ifndef SKINNING_TESTS_SUPPORT_HTTP_CLIENT_H_
#define SKINNING_TESTS_SUPPORT_HTTP_CLIENT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <google/protobuf/message.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace skinning::testing {

struct HttpResponse {
  int status = 0;                              // e.g. 200
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;                            // de-chunked
};

using Headers = std::vector<std::pair<std::string, std::string>>;

// One request to 127.0.0.1:`port` ("Connection: close"). UNAVAILABLE when it cannot connect,
// DEADLINE_EXCEEDED after `timeout_s`, DATA_LOSS for a response that does not parse.
absl::StatusOr<HttpResponse> HttpCall(int port, const std::string& method, const std::string& target,
                                      const std::string& body = "", const Headers& headers = {},
                                      double timeout_s = 30);
// GET http://`host`:`port``path`; `host` is a numeric IPv4 address.
absl::StatusOr<HttpResponse> HttpGet(const std::string& host, int port, const std::string& path,
                                     double timeout_s = 10);

// The value of the metric line `series` (the exact text before the value, labels included) that
// the metrics endpoint on 127.0.0.1:`port` serves; 0 when the line is absent or the endpoint does not
// answer.
double ScrapeMetric(int port, const std::string& series);

// A Connect unary call with JSON (protobuf's JSON mapping) or binary protobuf. The answer is
// parsed into `response`; a Connect error body becomes the status (its code and message).
absl::Status ConnectUnary(int port, const std::string& path, const google::protobuf::Message& request,
                          google::protobuf::Message* response, bool json, const Headers& headers = {});

// protobuf's JSON parser reads the number -0 as the integer 0, so a -0 the server writes ("-0", as
// protobuf prints it; a browser's JSON.parse keeps the sign) comes back from a JSON answer of
// ConnectUnary or ConnectStream as +0. This folds -0 into +0 in every float and double of `m`
// (nested messages too), for comparing a binary answer with a JSON one bit for bit.
void FoldNegativeZeros(google::protobuf::Message* m);

// A Connect server-streaming call: each message parsed into a fresh copy of `prototype` and given
// to `on_message`; returns the end-of-stream status.
absl::Status ConnectStream(int port, const std::string& path, const google::protobuf::Message& request,
                           const google::protobuf::Message& prototype,
                           const std::function<void(const google::protobuf::Message&)>& on_message, bool json,
                           const Headers& headers = {});
// The same with the request body given as it goes on the wire (e.g. a compressed envelope).
absl::Status ConnectStreamBody(int port, const std::string& path, const std::string& body,
                               const google::protobuf::Message& prototype,
                               const std::function<void(const google::protobuf::Message&)>& on_message, bool json,
                               const Headers& headers = {});
// A Connect streaming envelope: the flags byte (0x01 compressed, 0x02 end of stream), the
// payload's length big-endian in 4 bytes, the payload.
std::string ConnectEnvelope(uint8_t flags, const std::string& payload);

// A WebSocket client.
class WebSocketClient {
 public:
  // Connects and upgrades at `target` ("/skinning.v1.PoseService/PoseSession"). The error names
  // the HTTP status when the server refuses the upgrade.
  static absl::StatusOr<std::unique_ptr<WebSocketClient>> Open(int port, const std::string& target,
                                                               const Headers& headers = {});
  ~WebSocketClient();
  absl::Status Send(const std::string& payload, bool text);
  // One frame of a message: with `fin` false the message stays open and the next SendPart (same
  // `text`) continues it.
  absl::Status SendPart(const std::string& payload, bool text, bool fin);
  // The next message; NOT_FOUND once the server closed (close_code() says how).
  absl::StatusOr<std::string> Receive(bool* text = nullptr);
  int close_code() const { return close_code_; }
  const std::string& close_reason() const { return close_reason_; }
  void Close();

 private:
  WebSocketClient();
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int close_code_ = 0;
  std::string close_reason_;
};

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_HTTP_CLIENT_H_
