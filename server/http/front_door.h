// The HTTP front door: what a browser or a phone calls. One HttpServer routes
//   POST /skinning.v1.<Service>/<Method>        Connect (ConnectService)
//   GET  /skinning.v1.PoseService/PoseSession   WebSocket session (also FastService/SolveSession)
//   GET  /healthz                               "ok" (503 "draining" while shutting down)
//   OPTIONS *                                   CORS preflight
//   GET  /, /<file>                             the browser viewer (web_dir), when given
// Cross-origin calls are answered only for origins on the allow-list (and the page's own
// origin); others get 403 and no CORS headers.
#ifndef SKINNING_SERVER_HTTP_FRONT_DOOR_H_
#define SKINNING_SERVER_HTTP_FRONT_DOOR_H_

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "server/http/connect.h"
#include "server/http/http_server.h"

namespace skinning {

struct FrontDoorOptions {
  // Origins ("https://app.example.com") allowed to call from a browser page on another origin;
  // "*" allows any. Empty: same-origin pages and non-browser clients only.
  std::vector<std::string> cors_origins;
  // Folder served at / (index.html), with its node_modules; empty = no viewer.
  std::string web_dir;
};

// The front door's router. Everything passed must outlive the server that uses it.
HttpServer::Router FrontDoorRouter(ConnectService* connect, FrontDoorOptions options, const std::atomic<bool>* draining);

// The metrics port's router: GET /metrics (Prometheus text from `render`), GET /healthz.
HttpServer::Router MetricsRouter(std::function<std::string()> render, const std::atomic<bool>* draining);

// Whether a browser page of `origin` may call a server reached as `host` (the Host header):
// its own origin, or one on the list. Exposed for tests.
bool OriginAllowed(const std::vector<std::string>& allowed, const std::string& origin, const std::string& host);

// HttpServerOptions::cors_origin of the front door: a request's Origin when OriginAllowed, so
// that the transport's refusals (413, 400, ...) reach the page too.
std::function<std::string(const HttpRequest&)> FrontDoorCorsOrigin(std::vector<std::string> cors_origins);

// The percent-decoded value of the query parameter `name` in `target` ("/path?a=1&name=v%2B"),
// nullopt when absent. '+' stays a plus (tokens have no spaces, and encodeURIComponent writes a
// plus as %2B); INVALID_ARGUMENT for a '%' not followed by two hex digits. Exposed for tests.
absl::StatusOr<std::optional<std::string>> QueryParameter(absl::string_view target, absl::string_view name);

}  // namespace skinning

#endif  // SKINNING_SERVER_HTTP_FRONT_DOOR_H_
