#include "tests/support/http_client.h"

#include <chrono>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace skinning::testing {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

absl::StatusOr<HttpResponse> HttpCall(int port, const std::string& method, const std::string& target,
                                      const std::string& body, const Headers& headers, double timeout_s) {
  net::io_context io;
  beast::tcp_stream stream(io);
  stream.expires_after(std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
  beast::error_code ec;
  stream.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)), ec);
  if (ec) return absl::UnavailableError(absl::StrCat("connect to port ", port, ": ", ec.message()));
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, absl::StrCat("127.0.0.1:", port));
  req.set(http::field::connection, "close");
  for (const auto& [name, value] : headers) req.set(name, value);
  req.body() = body;
  if (!body.empty() || method == "POST") req.prepare_payload();
  http::write(stream, req, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("write: ", ec.message()));
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(1ull << 31);
  http::read(stream, buffer, parser, ec);
  if (ec == beast::error::timeout) return absl::DeadlineExceededError("no answer in time");
  if (ec) return absl::DataLossError(absl::StrCat("read: ", ec.message()));
  HttpResponse out;
  const auto& res = parser.get();
  out.status = static_cast<int>(res.result_int());
  for (const auto& field : res) out.headers[absl::AsciiStrToLower(std::string(field.name_string()))] = std::string(field.value());
  out.body = res.body();
  return out;
}

absl::StatusOr<HttpResponse> HttpGet(const std::string& host, int port, const std::string& path, double timeout_s) {
  if (host != "127.0.0.1") return absl::InvalidArgumentError("tests call 127.0.0.1 only");
  return HttpCall(port, "GET", path, "", {}, timeout_s);
}

double ScrapeMetric(int port, const std::string& series) {
  absl::StatusOr<HttpResponse> r = HttpGet("127.0.0.1", port, "/metrics");
  if (!r.ok()) return 0;
  for (absl::string_view line : absl::StrSplit(r->body, '\n')) {
    if (absl::ConsumePrefix(&line, series) && absl::ConsumePrefix(&line, " ")) return std::stod(std::string(line));
  }
  return 0;
}

namespace {

absl::StatusCode CodeOf(const std::string& name) {
  static const char* kNames[] = {"ok", "canceled", "unknown", "invalid_argument", "deadline_exceeded",
                                 "not_found", "already_exists", "permission_denied", "resource_exhausted",
                                 "failed_precondition", "aborted", "out_of_range", "unimplemented", "internal",
                                 "unavailable", "data_loss", "unauthenticated"};
  for (int c = 0; c <= 16; ++c)
    if (name == kNames[c]) return static_cast<absl::StatusCode>(c);
  return absl::StatusCode::kUnknown;
}

absl::Status ErrorOf(const std::string& json, const std::string& where) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("code"))
    return absl::DataLossError(absl::StrCat(where, ": not a Connect error: ", json.substr(0, 200)));
  return absl::Status(CodeOf(j["code"].get<std::string>()), j.value("message", ""));
}

absl::Status Decode(const std::string& bytes, bool json, google::protobuf::Message* m) {
  if (json) {
    auto s = google::protobuf::util::JsonStringToMessage(bytes, m);
    if (!s.ok()) return absl::DataLossError(absl::StrCat("bad JSON answer: ", std::string(s.message())));
    return absl::OkStatus();
  }
  if (!m->ParseFromString(bytes)) return absl::DataLossError("bad binary answer");
  return absl::OkStatus();
}

std::string Encode(const google::protobuf::Message& m, bool json) {
  if (!json) return m.SerializeAsString();
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(m, &out);
  return out;
}

}  // namespace

void FoldNegativeZeros(google::protobuf::Message* m) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection& r = *m->GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r.ListFields(*m, &fields);
  for (const FieldDescriptor* f : fields) {
    const int n = f->is_repeated() ? r.FieldSize(*m, f) : 1;
    for (int i = 0; i < n; ++i) {
      switch (f->cpp_type()) {
        case FieldDescriptor::CPPTYPE_FLOAT:
          if (f->is_repeated()) {
            r.SetRepeatedFloat(m, f, i, r.GetRepeatedFloat(*m, f, i) + 0.0f);
          } else {
            r.SetFloat(m, f, r.GetFloat(*m, f) + 0.0f);
          }
          break;
        case FieldDescriptor::CPPTYPE_DOUBLE:
          if (f->is_repeated()) {
            r.SetRepeatedDouble(m, f, i, r.GetRepeatedDouble(*m, f, i) + 0.0);
          } else {
            r.SetDouble(m, f, r.GetDouble(*m, f) + 0.0);
          }
          break;
        case FieldDescriptor::CPPTYPE_MESSAGE:
          FoldNegativeZeros(f->is_repeated() ? r.MutableRepeatedMessage(m, f, i) : r.MutableMessage(m, f));
          break;
        default:
          break;
      }
    }
  }
}

absl::Status ConnectUnary(int port, const std::string& path, const google::protobuf::Message& request,
                          google::protobuf::Message* response, bool json, const Headers& headers) {
  Headers h = headers;
  h.emplace_back("Content-Type", json ? "application/json" : "application/proto");
  h.emplace_back("Connect-Protocol-Version", "1");
  absl::StatusOr<HttpResponse> r = HttpCall(port, "POST", path, Encode(request, json), h);
  if (!r.ok()) return r.status();
  if (r->status != 200) return ErrorOf(r->body, absl::StrCat(path, " HTTP ", r->status));
  return Decode(r->body, json, response);
}

std::string ConnectEnvelope(uint8_t flags, const std::string& payload) {
  std::string body(5, '\0');
  body[0] = static_cast<char>(flags);
  const uint32_t n = static_cast<uint32_t>(payload.size());
  for (int i = 0; i < 4; ++i) body[1 + i] = static_cast<char>((n >> (24 - 8 * i)) & 0xFF);
  return body + payload;
}

absl::Status ConnectStream(int port, const std::string& path, const google::protobuf::Message& request,
                           const google::protobuf::Message& prototype,
                           const std::function<void(const google::protobuf::Message&)>& on_message, bool json,
                           const Headers& headers) {
  return ConnectStreamBody(port, path, ConnectEnvelope(0, Encode(request, json)), prototype, on_message, json,
                           headers);
}

absl::Status ConnectStreamBody(int port, const std::string& path, const std::string& body,
                               const google::protobuf::Message& prototype,
                               const std::function<void(const google::protobuf::Message&)>& on_message, bool json,
                               const Headers& headers) {
  Headers h = headers;
  h.emplace_back("Content-Type", json ? "application/connect+json" : "application/connect+proto");
  h.emplace_back("Connect-Protocol-Version", "1");
  absl::StatusOr<HttpResponse> r = HttpCall(port, "POST", path, body, h, 300);
  if (!r.ok()) return r.status();
  if (r->status != 200) return ErrorOf(r->body, absl::StrCat(path, " HTTP ", r->status));
  size_t at = 0;
  const std::string& b = r->body;
  while (at + 5 <= b.size()) {
    const uint8_t flags = static_cast<uint8_t>(b[at]);
    uint32_t len = 0;
    for (int i = 1; i <= 4; ++i) len = (len << 8) | static_cast<uint8_t>(b[at + i]);
    if (at + 5 + len > b.size()) return absl::DataLossError("truncated envelope");
    const std::string message = b.substr(at + 5, len);
    at += 5 + len;
    if (flags & 0x02) {
      nlohmann::json end = nlohmann::json::parse(message, nullptr, false);
      if (end.is_discarded()) return absl::DataLossError("bad end-of-stream message");
      if (!end.contains("error")) return at == b.size() ? absl::OkStatus() : absl::DataLossError("data after end");
      return ErrorOf(end["error"].dump(), path);
    }
    std::unique_ptr<google::protobuf::Message> m(prototype.New());
    if (absl::Status s = Decode(message, json, m.get()); !s.ok()) return s;
    on_message(*m);
  }
  return absl::DataLossError("the stream ended without an end-of-stream message");
}

struct WebSocketClient::Impl {
  net::io_context io;
  websocket::stream<beast::tcp_stream> ws{io};
  beast::flat_buffer buffer;
};

WebSocketClient::WebSocketClient() : impl_(std::make_unique<Impl>()) {}
WebSocketClient::~WebSocketClient() = default;

absl::StatusOr<std::unique_ptr<WebSocketClient>> WebSocketClient::Open(int port, const std::string& target,
                                                                       const Headers& headers) {
  std::unique_ptr<WebSocketClient> c(new WebSocketClient());
  beast::error_code ec;
  auto& lowest = beast::get_lowest_layer(c->impl_->ws);
  lowest.expires_after(std::chrono::seconds(30));
  lowest.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)), ec);
  if (ec) return absl::UnavailableError(absl::StrCat("connect: ", ec.message()));
  c->impl_->ws.set_option(websocket::stream_base::decorator([headers](websocket::request_type& req) {
    for (const auto& [name, value] : headers) req.set(name, value);
  }));
  websocket::response_type res;
  c->impl_->ws.handshake(res, absl::StrCat("127.0.0.1:", port), target, ec);
  if (ec)
    return absl::UnavailableError(absl::StrCat("upgrade refused: HTTP ", res.result_int(), " ", res.body()));
  lowest.expires_never();
  return c;
}

absl::Status WebSocketClient::Send(const std::string& payload, bool text) {
  impl_->ws.text(text);
  beast::error_code ec;
  impl_->ws.write(net::buffer(payload), ec);
  if (ec) return absl::UnavailableError(absl::StrCat("send: ", ec.message()));
  return absl::OkStatus();
}

absl::Status WebSocketClient::SendPart(const std::string& payload, bool text, bool fin) {
  impl_->ws.text(text);
  beast::error_code ec;
  impl_->ws.write_some(fin, net::buffer(payload), ec);
  if (ec) return absl::UnavailableError(absl::StrCat("send: ", ec.message()));
  return absl::OkStatus();
}

absl::StatusOr<std::string> WebSocketClient::Receive(bool* text) {
  beast::error_code ec;
  impl_->buffer.consume(impl_->buffer.size());
  impl_->ws.read(impl_->buffer, ec);
  if (ec == websocket::error::closed) {
    close_code_ = impl_->ws.reason().code;
    close_reason_ = std::string(impl_->ws.reason().reason.c_str());
    return absl::NotFoundError(absl::StrCat("closed: ", close_code_, " ", close_reason_));
  }
  if (ec) return absl::UnavailableError(absl::StrCat("receive: ", ec.message()));
  if (text) *text = impl_->ws.got_text();
  return beast::buffers_to_string(impl_->buffer.data());
}

void WebSocketClient::Close() {
  beast::error_code ec;
  impl_->ws.close(websocket::close_code::normal, ec);
}

}  // namespace skinning::testing
