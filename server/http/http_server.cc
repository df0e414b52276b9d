#include "server/http/http_server.h"

#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <deque>
#include <future>
#include <istream>
#include <limits>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "server/api/client_errors.h"
#include "server/api/quick.h"
#include "server/http/connect_error.h"
#include "server/http/framing.h"
#include "server/http/ws_status.h"

namespace skinning {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;

// The pieces a file is sent in (Exchange::SendFile).
constexpr size_t kFilePieceBytes = 256 << 10;

int CloseCode(const absl::Status& status) {
  if (IsBadFrame(status)) return 1008;
  return 4000 + static_cast<int>(status.code());
}

namespace {

// The close reason: the message cut to 123 bytes, not inside a UTF-8 sequence.
std::string CloseReason(absl::string_view message) {
  if (message.size() <= 123) return std::string(message);
  size_t n = 123;
  while (n > 0 && (static_cast<unsigned char>(message[n]) & 0xC0) == 0x80) --n;
  return std::string(message.substr(0, n));
}

// The client closed, reset or stalled (Beast's timeout has closed the socket: no 408 can be sent).
bool ReadEndedByClient(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == http::error::partial_message || ec == beast::error::timeout ||
         ec == net::error::operation_aborted || ec == net::error::connection_reset || ec == net::error::eof;
}

void SetCorsHeaders(HttpResponse* response, const std::string& origin) {
  if (origin.empty()) return;
  response->set(http::field::access_control_allow_origin, origin);
  response->set(http::field::vary, "Origin");
  response->set(http::field::access_control_expose_headers,
                "Content-Type, Connect-Content-Encoding, Grpc-Status, Grpc-Message, Grpc-Encoding");
}

constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";

// A refusal of the transport (a bad framing, too many connections): the front door's error
// format (a Connect error body) with its own HTTP status, closing the connection.
HttpResponse TransportRefusal(unsigned http_status, const absl::Status& status) {
  HttpRequest dummy;
  dummy.version(11);
  dummy.keep_alive(false);
  return MakeResponse(dummy, http_status, "application/json", ConnectErrorJson(status, "http"));
}

}  // namespace

HttpResponse MakeResponse(const HttpRequest& request, unsigned status, const std::string& content_type,
                          std::string body) {
  HttpResponse res{static_cast<http::status>(status), request.version()};
  res.set(http::field::server, "skinning-server");
  if (!content_type.empty()) res.set(http::field::content_type, content_type);
  res.keep_alive(request.keep_alive());
  res.body() = std::move(body);
  return res;
}

// One TCP connection: requests in sequence (HTTP/1.1 keep-alive), or a WebSocket after an upgrade.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(HttpServer* server, tcp::socket socket) : server_(server), stream_(std::move(socket)) {
    ++server_->connections_;
  }
  ~Connection() { --server_->connections_; }

  void Start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->ReadHeader(true); });
  }

  // The first request's headers must arrive within the request timeout of the connection's
  // start. Between keep-alive requests the idle timeout runs until the next request's first
  // byte, and the request timeout from there (a client that trickles its headers is cut off).
  void ReadHeader(bool first) {
    if (server_->stopping()) return Close();
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(server_->options_.max_header_bytes));
    // The limit applies once the headers are read (OnHeader), so that a refusal knows them all.
    // (Not boost::none: Beast 1.74 finds every Content-Length over that.)
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    if (first || buffer_.size() > 0) return ReadHeaderBytes();
    stream_.expires_after(server_->options_.idle_timeout);
    stream_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](beast::error_code ec, size_t n) {
      if (ec) return self->Close();
      self->buffer_.commit(n);
      self->ReadHeaderBytes();
    });
  }

  void ReadHeaderBytes() {
    stream_.expires_after(server_->options_.request_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec == http::error::header_limit)
      return RespondAndClose(431, absl::ResourceExhaustedError(absl::StrCat(
                                      "request headers over the limit of ", server_->options_.max_header_bytes,
                                      " bytes")));
    if (ReadEndedByClient(ec)) return Close();
    if (ec)
      return RespondAndClose(400, absl::InvalidArgumentError(absl::StrCat("malformed HTTP request: ", ec.message())));
    const HttpRequest& request = parser_->get();
    if (const absl::Status framing = FramingError(request, parser_->chunked()); !framing.ok())
      return RespondAndClose(absl::IsUnimplemented(framing) ? 501 : 400, framing);
    // A Content-Length over the limit is refused here, before any of the body is read (and
    // before 100 Continue); a chunked body is cut at the limit.
    const auto length = parser_->content_length();  // boost::optional
    if (length && *length > server_->options_.max_body_bytes) return RefuseBody();
    parser_->body_limit(server_->options_.max_body_bytes);
    const absl::StatusOr<bool> expects_continue = ExpectsContinue(request);
    if (!expects_continue.ok()) return RespondAndClose(417, expects_continue.status());
    if (parser_->is_done()) return OnBody({});
    // The body (any size up to the limit) within the request timeout.
    stream_.expires_after(server_->options_.request_timeout);
    if (!*expects_continue) return ReadBody();
    // The client waits for this before it sends the body (curl: 1 s, for bodies over 1 MiB).
    net::async_write(stream_, net::buffer(kContinue, sizeof kContinue - 1),
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (ec) return self->Close();
                       self->ReadBody();
                     });
  }

  void ReadBody() {
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->OnBody(ec); });
  }

  // 413 naming the size when the request declared it (a chunked body is cut at the limit).
  void RefuseBody() {
    const auto length = parser_->content_length();  // boost::optional
    RespondAndClose(413, absl::ResourceExhaustedError(absl::StrCat(
                             "request body", length ? absl::StrCat(" of ", *length, " bytes") : "",
                             " is over the limit of ", server_->options_.max_body_bytes, " bytes")));
  }

  void OnBody(beast::error_code ec) {
    if (ec == http::error::body_limit) return RefuseBody();
    if (ReadEndedByClient(ec)) return Close();
    if (ec) return RespondAndClose(400, absl::InvalidArgumentError(BodyError(ec)));
    // RFC 6455 section 4.1: the client waits for the 101 before it sends frames. Bytes read with
    // the upgrade request would never reach the WebSocket (its handshake takes the parsed
    // request, not our buffer): refused, not silently lost.
    if (websocket::is_upgrade(parser_->get()) && buffer_.size() > 0)
      return RespondAndClose(400, absl::InvalidArgumentError(absl::StrCat(
                                      buffer_.size(), " bytes came after the WebSocket upgrade request, before the "
                                      "handshake's 101: a client must wait for the 101 before it sends frames "
                                      "(RFC 6455 section 4.1)")));
    stream_.expires_never();
    std::shared_ptr<Exchange> exchange(new Exchange(server_, shared_from_this(), parser_->release()));
    server_->router_(std::move(exchange));
  }

  // Transport-level refusals answer in the front door's error format (a Connect error body) with
  // their own HTTP status. A browser page of an allowed origin gets the CORS headers, so that it
  // sees the refusal.
  void RespondAndClose(unsigned http_status, const absl::Status& status) {
    HttpResponse res = TransportRefusal(http_status, status);
    if (parser_ && server_->options_.cors_origin) SetCorsHeaders(&res, server_->options_.cors_origin(parser_->get()));
    Write(std::move(res));
  }

  // Sends `res`, then reads the next request or closes.
  void Write(HttpResponse res) {
    net::post(stream_.get_executor(), [self = shared_from_this(), res = std::move(res)]() mutable {
      auto owned = std::make_shared<HttpResponse>(std::move(res));
      // A HEAD answer states the length of the body it leaves out; others are measured here.
      if (!owned->has_content_length()) owned->prepare_payload();
      const bool keep = owned->keep_alive();
      self->stream_.expires_after(self->server_->options_.request_timeout);
      http::async_write(self->stream_, *owned, [self, owned, keep](beast::error_code ec, size_t) {
        if (ec || !keep) return self->Close();
        self->ReadHeader(false);
      });
    });
  }

  // Runs `op(done)` on the connection's strand and waits (on a worker thread) until it calls
  // done(ok); false when the server stops first.
  bool RunAndWait(std::function<void(std::function<void(bool)>)> op) {
    auto promise = std::make_shared<std::promise<bool>>();
    std::future<bool> result = promise->get_future();
    net::post(stream_.get_executor(), [op = std::move(op), promise] {
      op([promise](bool ok) { promise->set_value(ok); });
    });
    while (result.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready)
      if (server_->stopping()) return false;
    return result.get();
  }

  // Writes the rest of `file` as chunks of up to kFilePieceBytes, one at a time (a slow reader
  // holds one piece, no thread), then the last chunk; then the next request, or the close.
  // `piece`: the one buffer of this file's pieces (null on the first call).
  void SendFilePieces(std::shared_ptr<std::istream> file, bool keep_alive,
                      std::shared_ptr<std::string> piece = nullptr) {
    if (server_->stopping()) return Close();
    if (!piece) piece = std::make_shared<std::string>();
    piece->resize(kFilePieceBytes);
    file->read(piece->data(), static_cast<std::streamsize>(piece->size()));
    piece->resize(static_cast<size_t>(file->gcount()));
    stream_.expires_after(server_->options_.request_timeout);
    auto self = shared_from_this();
    if (piece->empty()) {
      return net::async_write(stream_, http::make_chunk_last(), [self, keep_alive](beast::error_code ec, size_t) {
        if (ec || !keep_alive) return self->Close();
        self->ReadHeader(false);
      });
    }
    net::async_write(stream_, http::make_chunk(net::buffer(*piece)),
                     [self, piece, file, keep_alive](beast::error_code ec, size_t) {
                       if (ec) return self->Close();
                       self->SendFilePieces(file, keep_alive, piece);
                     });
  }

  // Whether the client closed its side of the connection or reset it while its request is being
  // answered (a peek at the socket: end of stream or an error; a pipelined next request waiting
  // counts as there). On the connection's strand, so that it never races the socket's close.
  bool PeerGone() {
    if (!stream_.socket().is_open()) return true;
    char byte;
    const ssize_t n = ::recv(stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  }
  bool OnStrand() {
    const auto* strand = stream_.get_executor().target<net::strand<net::io_context::executor_type>>();
    return strand != nullptr && strand->running_in_this_thread();
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  HttpServer* server_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
};

namespace {

class ChunkWriter : public Exchange::StreamWriter {
 public:
  ChunkWriter(std::shared_ptr<Connection> c, bool keep_alive) : c_(std::move(c)), keep_alive_(keep_alive) {}
  ~ChunkWriter() override {
    if (!finished_) c_->RunAndWait([c = c_](std::function<void(bool)> done) {
      c->Close();
      done(true);
    });
  }

  bool Write(std::string piece) override {
    if (failed_ || piece.empty()) return !failed_;
    auto owned = std::make_shared<std::string>(std::move(piece));
    failed_ = !c_->RunAndWait([c = c_, owned](std::function<void(bool)> done) {
      c->stream_.expires_after(c->server_->options().request_timeout);
      net::async_write(c->stream_, http::make_chunk(net::buffer(*owned)),
                       [owned, done](beast::error_code ec, size_t) { done(!ec); });
    });
    return !failed_;
  }

  void Finish() override {
    if (finished_) return;
    finished_ = true;
    const bool ok = !failed_ && c_->RunAndWait([c = c_](std::function<void(bool)> done) {
      c->stream_.expires_after(c->server_->options().request_timeout);
      net::async_write(c->stream_, http::make_chunk_last(), [done](beast::error_code ec, size_t) { done(!ec); });
    });
    net::post(c_->stream_.get_executor(), [c = c_, keep = ok && keep_alive_] {
      if (!keep) return c->Close();
      c->ReadHeader(false);
    });
  }

 private:
  std::shared_ptr<Connection> c_;
  const bool keep_alive_;
  bool failed_ = false, finished_ = false;
};

}  // namespace

// A WebSocket: frames read into a bounded inbox, answered one at a time on the worker pool, the
// answers written in order from a bounded outbox. Reading pauses while the queues are full.
class WebSocketSession : public std::enable_shared_from_this<WebSocketSession> {
 public:
  WebSocketSession(HttpServer* server, beast::tcp_stream stream, std::unique_ptr<WebSocketHandler> handler)
      : server_(server), ws_(std::move(stream)), handler_(std::move(handler)), message_timer_(ws_.get_executor()) {
    ++server_->connections_;
  }
  ~WebSocketSession() {
    for (const WebSocketHandler::Reply& r : outbox_) server_->ws_unsent_bytes_ -= r.payload.size();
    {
      std::lock_guard<std::mutex> lock(server_->sessions_mu_);
      server_->sessions_.erase(this);
      if (server_->sessions_.empty()) server_->sessions_done_.notify_all();
    }
    --server_->connections_;
  }

  void Run(HttpRequest request, std::string subprotocol) {
    {
      std::lock_guard<std::mutex> lock(server_->sessions_mu_);
      server_->sessions_.emplace(this, weak_from_this());
    }
    beast::get_lowest_layer(ws_).expires_never();
    websocket::stream_base::timeout timeout;
    timeout.handshake_timeout = server_->options_.request_timeout;
    timeout.idle_timeout = server_->options_.websocket_idle_timeout;
    timeout.keep_alive_pings = true;  // ping at half the idle timeout; a pong keeps it open
    ws_.set_option(timeout);
    ws_.set_option(websocket::stream_base::decorator([subprotocol](websocket::response_type& res) {
      res.set(http::field::server, "skinning-server");
      if (!subprotocol.empty()) res.set(http::field::sec_websocket_protocol, subprotocol);
    }));
    ws_.read_message_max(server_->options_.max_websocket_message_bytes);
    // One frame per message: Beast otherwise cuts messages into 4 KiB frames, one send each
    // (a 10k-vertex answer would be 30 system calls).
    ws_.auto_fragment(false);
    auto owned = std::make_shared<HttpRequest>(std::move(request));
    ws_.async_accept(*owned, [self = shared_from_this(), owned](beast::error_code ec) {
      if (ec) return;
      self->accepted_ = true;
      if (self->server_->stopping()) return self->CloseForShutdown();
      self->Read();
    });
  }

  // On the session's strand, from Stop: the answers computed go out, then 4014 (UNAVAILABLE).
  void CloseForShutdown() {
    if (!accepted_ || gone_ || close_pending_) return;
    closing_ = true;
    close_pending_ = true;
    close_.code = static_cast<uint16_t>(CloseCode(absl::UnavailableError("")));
    close_.reason = "the server is shutting down; reconnect (another replica serves the session)";
    inbox_.clear();
    Write();
  }

  boost::asio::any_io_executor executor() { return ws_.get_executor(); }

 private:
  struct Frame {
    std::string payload;
    bool text = false;
  };

  size_t Held() const { return inbox_.size() + outbox_.size() + (stepping_ ? 1 : 0); }
  size_t Limit() const { return static_cast<size_t>(std::max(1, server_->options_.websocket_queue)); }

  // A message is read in parts (its frames, as they come), so that one begun and never finished
  // is noticed: it must end within --http_request_timeout_ms of its first part, as an HTTP body
  // must arrive, or the session closes with 1008. (Read whole, a message of 50 MiB sent but for
  // its last frame was held for as long as the client answered pings.)
  void Read() {
    if (reading_ || closing_ || Held() >= Limit()) return;
    reading_ = true;
    ws_.async_read_some(buffer_, 0, [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    reading_ = false;
    if (ec) {
      // The client closed, went away, stopped answering pings, or sent an invalid frame
      // (Beast closes with 1002/1009 itself): nothing more to read; answers in flight are dropped.
      closing_ = true;
      gone_ = true;
      message_timer_.cancel();
      return;
    }
    if (!ws_.is_message_done()) {
      if (!message_started_) {
        message_started_ = true;
        message_timer_.expires_after(server_->options_.request_timeout);
        message_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
          if (ec || !self->message_started_ || self->gone_ || self->closing_) return;
          // The answers computed go out first, then the close frame (1008, a bad frame).
          self->CloseWith(BadFrame("a message must end within --http_request_timeout_ms of its first frame"));
        });
      }
      reading_ = true;
      ws_.async_read_some(buffer_, 0, [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
      return;
    }
    message_started_ = false;
    message_timer_.cancel();
    inbox_.push_back(Frame{beast::buffers_to_string(buffer_.data()), ws_.got_text()});
    buffer_.consume(buffer_.size());
    // consume() keeps the capacity: one 20 MiB frame held 20 MiB for the session's life (5 idle
    // sessions that had each sent one held 139 MB). Past 1 MiB it is given back.
    if (buffer_.capacity() > (size_t{1} << 20)) buffer_.shrink_to_fit();
    Step();
    Read();
  }

  // The server's budget of unsent answers is spent: a session with one of its own unsent waits
  // for it to go (its write's completion steps it again).
  bool OverUnsentBudget() const {
    const size_t budget = server_->options_.websocket_unsent_bytes;
    return budget > 0 && !outbox_.empty() && server_->ws_unsent_bytes_.load() >= budget;
  }

  // One frame at a time, in order. On this socket thread when the session's last frame was quick
  // (QuickTimer: most pose frames, no hand-off) and this one asks the store nothing
  // (NextFrameMayWait); the first frame (it opens the rig and bake), a frame whose recheck of them
  // is due, and frames after a slow one on the server's pool, so that a long frame (a FAST set of
  // 256 extra weights, 0.6 s; an elastic frame, 1 s) or a stalled store holds no socket thread:
  // four such sessions held every thread of the front door, and every other call and session
  // waited.
  void Step() {
    if (stepping_ || closing_ || inbox_.empty() || outbox_.size() >= Limit() || OverUnsentBudget()) return;
    stepping_ = true;
    Frame frame = std::move(inbox_.front());
    inbox_.pop_front();
    if ((quick_ && !handler_->NextFrameMayWait(frame.payload, frame.text)) || server_->stopping())
      return Stepped(Run(frame));
    net::post(server_->workers_, [self = shared_from_this(), frame = std::move(frame)] {
      net::post(self->ws_.get_executor(),
                [self, reply = self->Run(frame)]() mutable { self->Stepped(std::move(reply)); });
    });
  }

  absl::StatusOr<WebSocketHandler::Reply> Run(const Frame& frame) {
    const QuickTimer timer;
    absl::StatusOr<WebSocketHandler::Reply> reply = handler_->OnFrame(frame.payload, frame.text);
    quick_ = timer.Quick();
    return reply;
  }

  // On the strand, with the frame's answer: it goes out even when the session is closing for the
  // server's shutdown (a close waits for it: Write).
  void Stepped(absl::StatusOr<WebSocketHandler::Reply> reply) {
    stepping_ = false;
    if (gone_) return;
    if (!reply.ok()) {
      if (close_pending_) return Write();  // closing already: that close's code stands
      return CloseWith(reply.status());
    }
    server_->ws_unsent_bytes_ += reply->payload.size();
    outbox_.push_back(*std::move(reply));
    Write();
    Step();
    Read();
  }

  void Write() {
    if (writing_ || gone_) return;
    if (outbox_.empty()) {
      if (close_pending_ && !stepping_) DoClose();  // else after the frame's answer (Stepped)
      return;
    }
    writing_ = true;
    ws_.text(outbox_.front().text);
    ws_.async_write(net::buffer(outbox_.front().payload), [self = shared_from_this()](beast::error_code ec, size_t) {
      self->writing_ = false;
      if (ec) {
        self->closing_ = self->gone_ = true;
        return;
      }
      self->server_->ws_unsent_bytes_ -= self->outbox_.front().payload.size();
      self->outbox_.pop_front();
      self->Write();
      self->Step();
      self->Read();
    });
  }

  // The answers already computed go out first, then the close frame.
  void CloseWith(const absl::Status& status) {
    closing_ = true;
    close_pending_ = true;
    NoteClientError("websocket", status);
    close_.code = static_cast<uint16_t>(CloseCode(status));
    close_.reason = CloseReason(status.message());
    inbox_.clear();
    Write();
  }

  void DoClose() {
    close_pending_ = false;
    ws_.async_close(close_, [self = shared_from_this()](beast::error_code) {});
  }

  HttpServer* server_;
  websocket::stream<beast::tcp_stream> ws_;
  std::unique_ptr<WebSocketHandler> handler_;
  beast::flat_buffer buffer_;
  net::steady_timer message_timer_;  // the message being read must end by then
  bool message_started_ = false;     // a part of a message has come, not its end
  std::deque<Frame> inbox_;
  std::deque<WebSocketHandler::Reply> outbox_;
  bool reading_ = false, stepping_ = false, writing_ = false;
  bool quick_ = false;  // the last frame was quick (QuickTimer): the next runs on this thread
  bool closing_ = false, close_pending_ = false, gone_ = false, accepted_ = false;
  websocket::close_reason close_;
};

void Exchange::AddCors(HttpResponse* response) const { SetCorsHeaders(response, allow_origin_); }

void Exchange::Respond(HttpResponse response) {
  AddCors(&response);
  response.keep_alive(response.keep_alive() && request_.keep_alive());
  connection_->Write(std::move(response));
}

std::unique_ptr<Exchange::StreamWriter> Exchange::StartStream(HttpResponse header) {
  AddCors(&header);
  auto head = std::make_shared<http::response<http::empty_body>>(header.result(), request_.version());
  for (const auto& field : header) head->set(field.name_string(), field.value());
  const bool keep_alive = request_.keep_alive();
  head->keep_alive(keep_alive);
  head->chunked(true);
  auto c = connection_;
  const bool ok = c->RunAndWait([c, head](std::function<void(bool)> done) {
    auto serializer = std::make_shared<http::response_serializer<http::empty_body>>(*head);
    c->stream_.expires_after(c->server_->options().request_timeout);
    http::async_write_header(c->stream_, *serializer,
                             [head, serializer, done](beast::error_code ec, size_t) { done(!ec); });
  });
  if (!ok) {
    // The client is gone: every Write fails, and the connection closes.
    class Gone : public StreamWriter {
     public:
      explicit Gone(std::shared_ptr<Connection> c) : c_(std::move(c)) {}
      bool Write(std::string) override { return false; }
      void Finish() override {}

     private:
      std::shared_ptr<Connection> c_;
    };
    return std::make_unique<Gone>(c);
  }
  return std::make_unique<ChunkWriter>(c, keep_alive);
}

void Exchange::AcceptWebSocket(std::unique_ptr<WebSocketHandler> handler, std::string subprotocol) {
  auto c = connection_;
  net::post(c->stream_.get_executor(), [c, handler = std::move(handler), request = std::move(request_),
                                        subprotocol = std::move(subprotocol)]() mutable {
    auto session = std::make_shared<WebSocketSession>(c->server_, std::move(c->stream_), std::move(handler));
    session->Run(std::move(request), std::move(subprotocol));
  });
}

void Exchange::SendFile(HttpResponse header, std::unique_ptr<std::istream> file) {
  AddCors(&header);
  auto head = std::make_shared<http::response<http::empty_body>>(header.result(), request_.version());
  for (const auto& field : header) head->set(field.name_string(), field.value());
  head->keep_alive(request_.keep_alive());
  head->chunked(true);
  auto c = connection_;
  net::post(c->stream_.get_executor(), [c, head, file = std::shared_ptr<std::istream>(std::move(file))] {
    auto serializer = std::make_shared<http::response_serializer<http::empty_body>>(*head);
    c->stream_.expires_after(c->server_->options().request_timeout);
    http::async_write_header(c->stream_, *serializer, [c, head, serializer, file](beast::error_code ec, size_t) {
      if (ec) return c->Close();
      c->SendFilePieces(file, head->keep_alive());
    });
  });
}

bool Exchange::ClientGone() const {
  const std::shared_ptr<Connection>& c = connection_;
  if (c->OnStrand()) return c->PeerGone();  // a unary call, on the socket's own thread
  return !c->RunAndWait([c](std::function<void(bool)> done) { done(!c->PeerGone()); });
}

HttpServer::HttpServer(const HttpServerOptions& options, Router router)
    : options_(options),
      router_(std::move(router)),
      io_(std::max(1, options.io_threads)),
      io_work_(io_.get_executor()),
      acceptor_(net::make_strand(io_)),
      accept_retry_(acceptor_.get_executor()),
      workers_(static_cast<size_t>(std::max(1, options.worker_threads))),
      file_workers_(static_cast<size_t>(std::max(1, options.file_threads))) {}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options, Router router) {
  const size_t colon = options.address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(options.address.substr(colon + 1), &port) || port < 0 ||
      port > 65535)
    return absl::InvalidArgumentError(absl::StrCat("address '", options.address, "' is not host:port"));
  std::string host = options.address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "0.0.0.0";
  std::unique_ptr<HttpServer> s(new HttpServer(options, std::move(router)));
  beast::error_code ec;
  const net::ip::address ip = net::ip::make_address(host, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("address '", options.address, "': ", ec.message()));
  const tcp::endpoint endpoint(ip, static_cast<unsigned short>(port));
  s->acceptor_.open(endpoint.protocol(), ec);
  if (!ec) s->acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) s->acceptor_.bind(endpoint, ec);
  if (!ec) s->acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("cannot listen on ", options.address, ": ", ec.message()));
  s->port_ = s->acceptor_.local_endpoint().port();
  s->Accept();
  for (int i = 0; i < std::max(1, options.io_threads); ++i) s->io_threads_.emplace_back([io = &s->io_] { io->run(); });
  return s;
}

namespace {

// A connection over HttpServer::max_connections: the 503, then what the client sends is read and
// dropped until it closes or a second is up (closing with unread bytes would send a reset, which
// can destroy the answer before the client reads it).
class RefusedConnection : public std::enable_shared_from_this<RefusedConnection> {
 public:
  explicit RefusedConnection(tcp::socket socket) : stream_(std::move(socket)) {}
  void Send(std::shared_ptr<HttpResponse> res) {
    stream_.expires_after(std::chrono::seconds(1));
    http::async_write(stream_, *res, [self = shared_from_this(), res](beast::error_code ec, size_t) {
      if (ec) return self->stream_.close();
      self->stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
      self->Drain();
    });
  }

 private:
  void Drain() {
    stream_.async_read_some(net::buffer(buffer_), [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->stream_.close();
      self->Drain();
    });
  }
  beast::tcp_stream stream_;
  std::array<char, 4096> buffer_;
};

}  // namespace

void HttpServer::Accept() {
  acceptor_.async_accept(net::make_strand(io_), [this](beast::error_code ec, tcp::socket socket) {
    if (stopping_) return;
    // Out of descriptors (or kernel memory) the connection stays queued and the acceptor ready:
    // accepting again at once would spin every front-door thread until a descriptor frees up.
    if (ec == net::error::no_descriptors || ec == beast::error_code(ENFILE, boost::system::system_category()) ||
        ec == net::error::no_buffer_space || ec == net::error::no_memory)
      return AcceptLater(ec);
    if (!ec) {
      accept_backoff_ = std::chrono::milliseconds(0);
      if (options_.max_connections > 0 && connections_.load() >= options_.max_connections) {
        RefuseConnection(std::move(socket));
      } else {
        at_connection_limit_ = false;
        socket.set_option(tcp::no_delay(true), ec);
        std::make_shared<Connection>(this, std::move(socket))->Start();
      }
    }
    Accept();
  });
}

void HttpServer::RefuseConnection(tcp::socket socket) {
  const absl::Status status = absl::UnavailableError(
      absl::StrCat("the server has ", options_.max_connections, " connections open, its limit; retry later"));
  if (!at_connection_limit_) {
    std::fprintf(stderr, "skinning-server: http %s: %s (refusing with 503 until one closes)\n",
                 options_.address.c_str(), std::string(status.message()).c_str());
    at_connection_limit_ = true;
  }
  auto res = std::make_shared<HttpResponse>(TransportRefusal(503, status));
  res->set(http::field::retry_after, "1");
  res->prepare_payload();
  std::make_shared<RefusedConnection>(std::move(socket))->Send(std::move(res));
}

void HttpServer::AcceptLater(const beast::error_code& ec) {
  if (accept_backoff_.count() == 0) {
    // Once per episode (until an accept succeeds), not once per failed accept.
    std::fprintf(stderr, "skinning-server: http %s: cannot accept connections (%s); retrying every 0.1 to 1 s\n",
                 options_.address.c_str(), ec.message().c_str());
    accept_backoff_ = std::chrono::milliseconds(100);
  } else {
    accept_backoff_ = std::min(2 * accept_backoff_, std::chrono::milliseconds(1000));
  }
  accept_retry_.expires_after(accept_backoff_);
  accept_retry_.async_wait([this](beast::error_code ec) {
    if (!ec && !stopping_) Accept();
  });
}

void HttpServer::Post(std::function<void()> work) { net::post(workers_, std::move(work)); }

void HttpServer::PostFile(std::function<void()> work) { net::post(file_workers_, std::move(work)); }

bool HttpServer::OnPool() { return workers_.get_executor().running_in_this_thread(); }

bool HttpServer::StartStreamThread(std::function<void()> work) {
  {
    std::lock_guard<std::mutex> lock(streams_mu_);
    if (streams_ >= std::max(1, options_.max_streams)) return false;
    ++streams_;
  }
  const auto release = [this] {
    std::lock_guard<std::mutex> lock(streams_mu_);
    if (--streams_ == 0) streams_done_.notify_all();
  };
  try {
    std::thread([release, work = std::move(work)]() mutable {
      work();
      work = nullptr;  // what it holds (the exchange, its connection) goes before Stop may return
      release();       // the last use of this server
    }).detach();
  } catch (const std::system_error&) {  // no thread to be had: refused like the limit
    release();
    return false;
  }
  return true;
}

void HttpServer::Stop(std::chrono::steady_clock::time_point sessions_deadline) {
  if (stopping_.exchange(true)) return;
  net::post(acceptor_.get_executor(), [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
    accept_retry_.cancel();
  });
  // The streams' threads finish first (handlers see the server draining and write their end; a
  // write still waiting for its client fails once stopping), then the sessions close, then the
  // pool's work ends (a session's frame on the pool answers first: the pool is joined after the
  // sessions are), then the sockets go with the io_context's queued operations.
  {
    std::unique_lock<std::mutex> lock(streams_mu_);
    streams_done_.wait(lock, [this] { return streams_ == 0; });
  }
  // Open sessions are closed with a close frame rather than dropped: a browser sees 1006 for a
  // dropped socket and cannot tell it from a network failure.
  std::vector<std::shared_ptr<WebSocketSession>> open;
  {
    std::lock_guard<std::mutex> lock(sessions_mu_);
    for (auto& [raw, weak] : sessions_)
      if (auto s = weak.lock()) open.push_back(std::move(s));
  }
  for (auto& s : open) net::post(s->executor(), [s] { s->CloseForShutdown(); });
  open.clear();  // the sessions' own operations keep them alive until they end
  {
    std::unique_lock<std::mutex> lock(sessions_mu_);
    const auto deadline = std::max(sessions_deadline, std::chrono::steady_clock::now() + std::chrono::seconds(1));
    sessions_done_.wait_until(lock, deadline, [this] { return sessions_.empty(); });
  }
  workers_.join();
  file_workers_.join();
  io_work_.reset();
  io_.stop();
  for (std::thread& t : io_threads_) t.join();
  io_threads_.clear();
}

HttpServer::~HttpServer() { Stop(); }

}  // namespace skinning
