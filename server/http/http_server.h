// The HTTP/1.1 and WebSocket transport of the front door and the metrics port, on Boost.Beast.
// It reads requests with limits (header size, body size refused from Content-Length before the
// body is read, a deadline for headers and body), takes no transfer coding but chunked (RFC 9112
// section 6: anything else is refused and the connection closed, so that no body is read as the
// next request), answers Expect: 100-continue, hands each whole request to a Router, and
// writes what the router answers: a whole response, a streamed (chunked) one, or a WebSocket
// session on the same connection. Routers do no I/O of their own: blocking work goes to the
// server's worker pool (Post), answers come back through the Exchange.
#ifndef SKINNING_SERVER_HTTP_HTTP_SERVER_H_
#define SKINNING_SERVER_HTTP_HTTP_SERVER_H_

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <chrono>
#include <cstddef>
#include <functional>
#include <istream>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "absl/status/statusor.h"

namespace skinning {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

struct HttpServerOptions {
  std::string address;           // host:port; port 0 picks a free port
  // Threads running the sockets and the routers' quick work (a unary call or a WebSocket frame
  // whose last of its kind was quick).
  int io_threads = 8;
  // The pool for the rest (Post): unary calls and WebSocket frames not known to be quick, and
  // the metrics.
  int worker_threads = 16;
  // Threads that read the static files (PostFile), apart from the worker pool: a file never waits
  // behind slow calls and frames, which may hold every worker for seconds.
  int file_threads = 2;
  // Streams that last as long as their subject (a bake's watch) run each on a thread of their
  // own (StartStreamThread), at most this many at once, so that they never hold the pool.
  int max_streams = 256;
  size_t max_body_bytes = 64 << 20;
  size_t max_header_bytes = 16 << 10;
  // A request's headers must arrive within this from its first byte (from the connection's
  // start for the first request), and its body within this again (slow or stalled clients are
  // cut off).
  std::chrono::milliseconds request_timeout{10000};
  // A keep-alive connection that does not start a new request for this long is closed.
  std::chrono::milliseconds idle_timeout{60000};
  // A WebSocket that neither sends nor answers our pings for this long is closed.
  std::chrono::milliseconds websocket_idle_timeout{60000};
  size_t max_websocket_message_bytes = 64 << 20;
  // Frames a WebSocket session holds (received but not answered, answered but not sent) before
  // it stops reading from the client.
  int websocket_queue = 16;
  // Answers computed and not yet sent, summed over every WebSocket session: at or over this, a
  // session that still has an unsent answer computes no more until it has sent it (a session
  // with nothing unsent always may, so clients that read are not held back by ones that do not).
  // Bounds the memory of clients that send frames and stop reading: 100 such connections held
  // 136 MB of CesiumMan answers (337 MB as JSON). 0 = no limit.
  size_t websocket_unsent_bytes = 256 << 20;
  // Connections (WebSockets included) open at once; one more is answered 503 with Retry-After
  // and closed, without counting. 0 = no limit.
  int max_connections = 0;
  // The origin that a refusal of the transport (400, 413, 417, 431, 501) names in
  // Access-Control-Allow-Origin, given the request's headers as far as they were parsed; empty =
  // none. Unset: no CORS headers on those refusals.
  std::function<std::string(const HttpRequest&)> cors_origin;
};

// What the front door does with a WebSocket session: one answer per frame, in order.
class WebSocketHandler {
 public:
  virtual ~WebSocketHandler() = default;
  struct Reply {
    std::string payload;
    bool text = false;
  };
  // Called on a socket thread, one frame at a time, in the order received. A non-OK status
  // closes the session (CloseCode gives the code); the reply is sent otherwise.
  virtual absl::StatusOr<Reply> OnFrame(const std::string& payload, bool text) = 0;
  // Whether this frame, the next OnFrame's, may wait for something other than the CPU (the
  // store): such a frame runs on the pool even when the last one was quick. Called, if at all,
  // just before OnFrame with the same frame (a handler may keep what it decoded for it).
  virtual bool NextFrameMayWait(const std::string& /*payload*/, bool /*text*/) { return true; }
};

// The WebSocket close code of a failed frame: 1008 (policy violation) for a frame that is not
// the expected message, 4000 + the gRPC code otherwise (4003 INVALID_ARGUMENT, 4014
// UNAVAILABLE, ...). The reason is the status message cut to the protocol's 123 bytes.
int CloseCode(const absl::Status& status);

class Exchange;
class WebSocketSession;

class HttpServer {
 public:
  // Answers one request through `exchange` (now or later, from any thread).
  using Router = std::function<void(std::shared_ptr<Exchange> exchange)>;

  // Listens and serves until destroyed. UNAVAILABLE when the address cannot be bound;
  // INVALID_ARGUMENT when it is not host:port.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options, Router router);
  ~HttpServer();  // Stop()

  int port() const { return port_; }
  const HttpServerOptions& options() const { return options_; }
  // Runs `work` on the worker pool.
  // Runs `work` on a thread of its own, for a stream that lasts as long as its subject (a bake's
  // watch): four watches on the pool held every worker, and files and other watches waited for
  // one to end. False, and `work` not run, when options.max_streams are running. Stop waits for
  // them (they see the server draining and end).
  bool StartStreamThread(std::function<void()> work);
  void Post(std::function<void()> work);
  // Runs `work` (reading a static file) on the file threads.
  void PostFile(std::function<void()> work);
  // Whether the calling thread is one of the pool's (work already there need not be posted again).
  bool OnPool();
  // Stops accepting, closes every connection, joins the threads. Open WebSocket sessions get
  // the answers already computed and then a close frame, 4014 (UNAVAILABLE: the server is
  // shutting down, reconnect), waited for until `sessions_deadline` and at least a second,
  // instead of a dropped socket (1006 in a browser, which cannot tell it from a network failure):
  // a session answering a long frame (a FAST set of 256 extra weights, 0.6 s or more) closes
  // once the frame is answered. Idempotent.
  void Stop(std::chrono::steady_clock::time_point sessions_deadline = {});
  bool stopping() const { return stopping_.load(); }
  int open_connections() const { return connections_.load(); }

 private:
  friend class Connection;
  friend class Exchange;
  friend class WebSocketSession;
  HttpServer(const HttpServerOptions& options, Router router);
  void Accept();
  // After an accept that failed for want of descriptors or memory: waits (100 ms, doubling up
  // to 1 s while it keeps failing) instead of retrying at once, which would spin.
  void AcceptLater(const boost::system::error_code& ec);
  // At max_connections: answers 503 (Retry-After: 1) and closes, reading what the client sent
  // for up to a second first so that the close does not reset the answer away.
  void RefuseConnection(boost::asio::ip::tcp::socket socket);

  const HttpServerOptions options_;
  const Router router_;
  // Open WebSocket sessions, so that Stop can close them; guarded by sessions_mu_. Declared before
  // io_: sessions still queued in it are destroyed with it, and unregister themselves here.
  std::mutex sessions_mu_;
  std::condition_variable sessions_done_;
  std::unordered_map<WebSocketSession*, std::weak_ptr<WebSocketSession>> sessions_;
  std::atomic<int> connections_{0};
  std::atomic<size_t> ws_unsent_bytes_{0};  // WebSocket answers computed and not yet sent
  boost::asio::io_context io_;
  // Keeps io_'s threads running until Stop ends them. Once the listener has closed, a stream
  // whose thread is about to write (its end-of-stream, as the server drains) has no operation
  // pending on its socket; with no other socket waiting, run() returned for want of work and that
  // write was never made (the client saw the body cut off).
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> io_work_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer accept_retry_;     // on the acceptor's strand
  std::chrono::milliseconds accept_backoff_{0};  // 0 = the last accept succeeded
  boost::asio::thread_pool workers_;
  boost::asio::thread_pool file_workers_;
  std::vector<std::thread> io_threads_;
  std::atomic<bool> stopping_{false};
  bool at_connection_limit_ = false;  // on the acceptor's strand: logged once per episode
  int port_ = 0;
  std::mutex streams_mu_;
  std::condition_variable streams_done_;
  int streams_ = 0;  // threads of StartStreamThread running; guarded by streams_mu_
};

// One request and the way to answer it. Exactly one of Respond, StartStream or
// AcceptWebSocket, once; they may be called from any thread.
class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  const HttpRequest& request() const { return request_; }
  HttpServer& server() { return *server_; }

  // Every answer to this request (Respond, StartStream) carries the CORS headers for `origin`
  // (the router checked it against the allow-list).
  void AllowOrigin(std::string origin) { allow_origin_ = std::move(origin); }

  // Sends `response` (Content-Length and keep-alive are set here), then reads the next request.
  void Respond(HttpResponse response);

  // A response whose body is written in pieces (chunked). The writer blocks its (worker) thread
  // until each piece is written; Write returns false once the client is gone or stopped reading
  // for the request timeout, and the handler should stop.
  class StreamWriter {
   public:
    virtual ~StreamWriter() = default;
    virtual bool Write(std::string piece) = 0;
    // Ends the body; the connection then reads the next request.
    virtual void Finish() = 0;
  };
  // `header`'s status and fields (no body) are sent first.
  std::unique_ptr<StreamWriter> StartStream(HttpResponse header);

  // Sends `header`'s status and fields, then `file`'s bytes (chunked, a piece at a time as the
  // client takes them: a slow reader holds one piece in memory and no thread).
  void SendFile(HttpResponse header, std::unique_ptr<std::istream> file);

  // Whether the client has closed or reset the connection since it sent this request (from any
  // thread; a few microseconds). Long handlers (a watch, a clip) poll it to stop working for a
  // client that left, as gRPC cancels a call whose client went away. A client that half-closes
  // its side after the request counts as gone (as nginx takes it); browsers and Connect clients
  // do not.
  bool ClientGone() const;

  // Upgrades the connection (the request must be a WebSocket upgrade) and runs `handler` on it.
  // `subprotocol`, when not empty, is echoed in Sec-WebSocket-Protocol.
  void AcceptWebSocket(std::unique_ptr<WebSocketHandler> handler, std::string subprotocol = "");

 private:
  friend class Connection;
  Exchange(HttpServer* server, std::shared_ptr<class Connection> connection, HttpRequest request)
      : server_(server), connection_(std::move(connection)), request_(std::move(request)) {}
  void AddCors(HttpResponse* response) const;
  HttpServer* server_;
  std::shared_ptr<class Connection> connection_;
  HttpRequest request_;
  std::string allow_origin_;
};

// A plain response: `status`, Content-Type `content_type`, `body`, keep-alive as the request asked.
HttpResponse MakeResponse(const HttpRequest& request, unsigned status, const std::string& content_type,
                          std::string body);

}  // namespace skinning

#endif  // SKINNING_SERVER_HTTP_HTTP_SERVER_H_
