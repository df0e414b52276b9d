#include "server/http/front_door.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <utility>

#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/http/framing.h"

namespace skinning {

namespace http = boost::beast::http;
namespace fs = std::filesystem;

namespace {

constexpr char kAllowHeaders[] =
    "Content-Type, Connect-Protocol-Version, Connect-Timeout-Ms, Connect-Accept-Encoding, "
    "Connect-Content-Encoding, Content-Encoding, Authorization, X-User-Agent, X-Grpc-Web, Grpc-Timeout, "
    "Grpc-Encoding, Grpc-Accept-Encoding";

std::string Field(const HttpRequest& req, http::field f) {
  auto it = req.find(f);
  return it == req.end() ? "" : std::string(it->value());
}

std::string ContentTypeOf(const fs::path& p) {
  const std::string ext = absl::AsciiStrToLower(p.extension().string());
  if (ext == ".html") return "text/html; charset=utf-8";
  if (ext == ".js" || ext == ".mjs") return "text/javascript; charset=utf-8";
  if (ext == ".css") return "text/css; charset=utf-8";
  if (ext == ".json" || ext == ".map") return "application/json";
  if (ext == ".glb") return "model/gltf-binary";
  if (ext == ".gltf") return "model/gltf+json";
  if (ext == ".png") return "image/png";
  if (ext == ".svg") return "image/svg+xml";
  if (ext == ".wasm") return "application/wasm";
  if (ext == ".txt" || ext == ".md") return "text/plain; charset=utf-8";
  return "application/octet-stream";
}

// Files up to this size are answered whole; larger ones in pieces (Exchange::SendFile).
constexpr size_t kWholeFileBytes = 1 << 20;
// A unary call's body up to this is decoded on the socket thread that read it.
constexpr size_t kInlineBodyBytes = 1 << 20;

// The file of `target` under `root`, or nullopt: no "..", no hidden segments, nothing under a
// node_modules folder (the site's build tooling, 160 MB of it beside the viewer, is not content),
// inside the root.
std::optional<fs::path> StaticFile(const std::string& root, absl::string_view target) {
  target = target.substr(0, target.find_first_of("?#"));
  if (target.empty() || target[0] != '/') return std::nullopt;
  fs::path p = root;
  for (absl::string_view seg : absl::StrSplit(target.substr(1), '/', absl::SkipEmpty())) {
    if (seg == "." || seg == ".." || absl::StartsWith(seg, ".") || absl::StrContains(seg, '\\') ||
        absl::StrContains(seg, '%') || seg == "node_modules")
      return std::nullopt;
    p /= std::string(seg);
  }
  std::error_code ec;
  if (fs::is_directory(p, ec)) p /= "index.html";
  if (!fs::is_regular_file(p, ec)) return std::nullopt;
  return p;
}

// The value of a hex digit, -1 for another character.
int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

HttpResponse ConnectError(const HttpRequest& req, unsigned status, const absl::Status& s) {
  HttpResponse res = MakeResponse(req, status, "application/json", ConnectErrorJson(s));
  return res;
}

}  // namespace

bool OriginAllowed(const std::vector<std::string>& allowed, const std::string& origin, const std::string& host) {
  if (origin.empty()) return true;  // not a browser's cross-origin call
  if (!host.empty() && (origin == "http://" + host || origin == "https://" + host)) return true;
  for (const std::string& a : allowed)
    if (a == "*" || a == origin) return true;
  return false;
}

std::function<std::string(const HttpRequest&)> FrontDoorCorsOrigin(std::vector<std::string> cors_origins) {
  return [allowed = std::move(cors_origins)](const HttpRequest& req) {
    std::string origin = Field(req, http::field::origin);
    return OriginAllowed(allowed, origin, Field(req, http::field::host)) ? origin : std::string();
  };
}

absl::StatusOr<std::optional<std::string>> QueryParameter(absl::string_view target, absl::string_view name) {
  const size_t q = target.find('?');
  if (q == absl::string_view::npos) return std::nullopt;
  absl::string_view query = target.substr(q + 1);
  query = query.substr(0, query.find('#'));
  for (absl::string_view kv : absl::StrSplit(query, '&')) {
    if (!absl::ConsumePrefix(&kv, name) || !absl::ConsumePrefix(&kv, "=")) continue;
    std::string value;
    for (size_t i = 0; i < kv.size(); ++i) {
      // '+' stays a plus: encodeURIComponent sends a plus as %2B and never a space as '+'.
      if (kv[i] != '%') {
        value += kv[i];
        continue;
      }
      const int hi = i + 2 < kv.size() ? HexDigit(kv[i + 1]) : -1;
      const int lo = hi >= 0 ? HexDigit(kv[i + 2]) : -1;
      if (lo < 0)
        return absl::InvalidArgumentError(absl::StrCat(name, " in the query: ", Quoted(kv.substr(i, 3)), " at offset ",
                                                       i, " is not a percent-escape (% and two hex digits)"));
      value += static_cast<char>(16 * hi + lo);
      i += 2;
    }
    return value;
  }
  return std::nullopt;
}

HttpServer::Router FrontDoorRouter(ConnectService* connect, FrontDoorOptions options,
                                   const std::atomic<bool>* draining) {
  auto opts = std::make_shared<const FrontDoorOptions>(std::move(options));
  return [connect, opts, draining](std::shared_ptr<Exchange> ex) {
    const HttpRequest& req = ex->request();
    const std::string target(req.target());
    const std::string path = target.substr(0, target.find('?'));
    const std::string origin = Field(req, http::field::origin);
    if (!OriginAllowed(opts->cors_origins, origin, Field(req, http::field::host))) {
      // No CORS headers: the browser shows the page nothing.
      return ex->Respond(ConnectError(req, 403,
                                      absl::PermissionDeniedError(absl::StrCat(
                                          "origin '", origin, "' is not allowed to call this server (--http_cors_origins)"))));
    }
    if (!origin.empty()) ex->AllowOrigin(origin);
    if (req.method() == http::verb::options) {
      HttpResponse res = MakeResponse(req, 204, "", "");
      res.set(http::field::access_control_allow_methods, "GET, POST, OPTIONS");
      res.set(http::field::access_control_allow_headers, kAllowHeaders);
      res.set(http::field::access_control_max_age, "7200");
      return ex->Respond(std::move(res));
    }
    if (path == "/healthz" && (req.method() == http::verb::get || req.method() == http::verb::head)) {
      const bool serving = !draining->load();
      HttpResponse res = MakeResponse(req, serving ? 200 : 503, "text/plain; charset=utf-8", serving ? "ok\n" : "draining\n");
      return ex->Respond(std::move(res));
    }
    if (absl::StartsWith(path, "/skinning.v1.")) {
      const ConnectService::Kind kind = connect->KindOf(path);
      if (kind == ConnectService::Kind::kBidiSession && boost::beast::websocket::is_upgrade(req)) {
        if (absl::Status key = WebSocketKeyError(req); !key.ok()) return ex->Respond(ConnectError(req, 400, key));
        // Browsers cannot set headers on a WebSocket: the token may come as ?access_token=.
        std::optional<std::string> token;
        if (auto it = req.find(http::field::authorization); it != req.end()) token = std::string(it->value());
        if (!token) {
          // Percent-decoded: a page sends it through encodeURIComponent (a base64 token's + / =).
          absl::StatusOr<std::optional<std::string>> query_token = QueryParameter(target, "access_token");
          if (!query_token.ok()) return ex->Respond(ConnectError(req, 400, query_token.status()));
          if (*query_token) token = absl::StrCat("Bearer ", **query_token);
        }
        absl::StatusOr<std::unique_ptr<WebSocketHandler>> handler =
            connect->OpenSession(path, token ? std::optional<absl::string_view>(*token) : std::nullopt);
        if (!handler.ok()) {
          HttpResponse res = ConnectError(req, ConnectHttpStatus(handler.status().code()), handler.status());
          return ex->Respond(std::move(res));
        }
        return ex->AcceptWebSocket(*std::move(handler));
      }
      if (kind == ConnectService::Kind::kNone || kind == ConnectService::Kind::kBidiSession) {
        const absl::Status s =
            kind == ConnectService::Kind::kNone
                ? absl::UnimplementedError(absl::StrCat("no method ", Quoted(path), " (see proto/skinning/v1)"))
                : absl::UnimplementedError(absl::StrCat(path, " is bidirectional: open it as a WebSocket"));
        HttpResponse res = ConnectError(req, 404, s);
        return ex->Respond(std::move(res));
      }
      if (req.method() != http::verb::post) {
        HttpResponse res = ConnectError(req, 405, absl::UnimplementedError(absl::StrCat(path, " takes POST")));
        res.set(http::field::allow, "POST");
        return ex->Respond(std::move(res));
      }
      // A unary call runs on this socket thread when the last of its kind was quick, else on the
      // pool (ConnectService::Serve); one with a body over 1 MiB (a rig, a large clip) is read
      // on the pool too, since decoding it is work of its own. A watch lasts as long as its
      // bake: on a thread of its own.
      if (kind == ConnectService::Kind::kServerStream) {
        if (ex->server().StartStreamThread([connect, ex, path] { connect->Serve(ex, path); })) return;
        return ex->Respond(ConnectError(
            req, 429,
            absl::ResourceExhaustedError(absl::StrCat("this replica's front door has ", ex->server().options().max_streams,
                                                      " streams open, its limit; retry later or watch over gRPC"))));
      }
      if (req.body().size() > kInlineBodyBytes) return ex->server().Post([connect, ex, path] { connect->Serve(ex, path); });
      return connect->Serve(ex, path);
    }
    if (!opts->web_dir.empty() && (req.method() == http::verb::get || req.method() == http::verb::head)) {
      // On the file threads: the pool may be held by slow calls and frames.
      return ex->server().PostFile([ex, opts, path] {
        const HttpRequest& req = ex->request();
        std::optional<fs::path> file = StaticFile(opts->web_dir, path);
        if (!file) return ex->Respond(MakeResponse(req, 404, "text/plain; charset=utf-8", "not found\n"));
        std::ifstream in(*file, std::ios::binary);
        std::error_code ec;
        const uintmax_t size = fs::file_size(*file, ec);
        if (!in || ec) return ex->Respond(MakeResponse(req, 404, "text/plain; charset=utf-8", "not found\n"));
        if (size <= kWholeFileBytes || req.method() == http::verb::head) {
          std::string body(req.method() == http::verb::head ? 0 : size, '\0');
          in.read(body.data(), static_cast<std::streamsize>(body.size()));
          body.resize(static_cast<size_t>(in.gcount()));
          HttpResponse res = MakeResponse(req, 200, ContentTypeOf(*file), std::move(body));
          res.set(http::field::cache_control, "no-cache");
          if (req.method() == http::verb::head) res.content_length(size);
          return ex->Respond(std::move(res));
        }
        // A large file goes in pieces as the client takes them (30 clients asking for a 47 MB
        // file and not reading took 1.6 GB when each answer held the whole file).
        HttpResponse head = MakeResponse(req, 200, ContentTypeOf(*file), "");
        head.set(http::field::cache_control, "no-cache");
        ex->SendFile(std::move(head), std::make_unique<std::ifstream>(std::move(in)));
      });
    }
    ex->Respond(MakeResponse(req, 404, "text/plain; charset=utf-8", "not found\n"));
  };
}

HttpServer::Router MetricsRouter(std::function<std::string()> render, const std::atomic<bool>* draining) {
  auto r = std::make_shared<std::function<std::string()>>(std::move(render));
  return [r, draining](std::shared_ptr<Exchange> ex) {
    const HttpRequest& req = ex->request();
    const std::string target(req.target());
    const std::string path = target.substr(0, target.find('?'));
    if (req.method() != http::verb::get && req.method() != http::verb::head)
      return ex->Respond(MakeResponse(req, 405, "text/plain; charset=utf-8", "GET only\n"));
    if (path == "/metrics")
      return ex->server().Post([ex, r] {
        ex->Respond(MakeResponse(ex->request(), 200, "text/plain; version=0.0.4; charset=utf-8", (*r)()));
      });
    if (path == "/healthz") {
      const bool serving = draining == nullptr || !draining->load();
      return ex->Respond(MakeResponse(req, serving ? 200 : 503, "text/plain; charset=utf-8", serving ? "ok\n" : "draining\n"));
    }
    ex->Respond(MakeResponse(req, 404, "text/plain; charset=utf-8", "not found\n"));
  };
}

}  // namespace skinning
