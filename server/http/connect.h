// The Connect protocol (connectrpc.com/docs/protocol) over the transport-neutral service
// handlers of server/api, the same ones the gRPC door calls: every unary method and the
// server-streaming WatchBake as `POST /skinning.v1.<Service>/<Method>`, JSON (protobuf's
// canonical mapping: server/http/proto_json.h, else protobuf's JSON utilities) or binary
// protobuf, and the same methods in gRPC-Web (server/http/grpc_web.h); and the two
// bidirectional sessions as WebSockets. Calls are admitted by the same CallGate (bearer token,
// tenant, draining) and counted in the same grpc_server_* metrics as gRPC calls.
#ifndef SKINNING_SERVER_HTTP_CONNECT_H_
#define SKINNING_SERVER_HTTP_CONNECT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <google/protobuf/message.h>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/api/bake_api.h"
#include "server/api/call_context.h"
#include "server/api/fast_api.h"
#include "server/api/pose_api.h"
#include "server/api/quick.h"
#include "server/api/rig_api.h"
#include "server/http/connect_error.h"
#include "server/http/http_server.h"
#include "server/metrics/metrics.h"

namespace skinning {

struct ConnectOptions {
  // A gzip request body (Content-Encoding: gzip; in a stream, Connect-Content-Encoding: gzip
  // and compressed envelopes) may inflate to this much; more is RESOURCE_EXHAUSTED.
  size_t max_message_bytes = 64 << 20;
  // A unary answer of at least this many bytes is sent gzip-compressed (Content-Encoding: gzip)
  // when the request's Accept-Encoding takes gzip; 0 = never (the default: level 1 costs 15–17 ms
  // per MB of JSON, which it halves, and 33–37 ms per MB of posed floats, which shrink by 7 %;
  // bench/json_bench).
  size_t compress_min_bytes = 0;
};

class ConnectService {
 public:
  struct Apis {
    RigApi* rig = nullptr;
    PoseApi* pose = nullptr;
    BakeApi* bake = nullptr;
    FastApi* fast = nullptr;
  };
  // `metrics` may be null. Everything must outlive this object.
  ConnectService(const CallGate* gate, Apis apis, Metrics* metrics, ConnectOptions options = {});

  enum class Kind { kNone, kUnary, kServerStream, kBidiSession };
  // What `path` ("/skinning.v1.PoseService/Pose") is.
  Kind KindOf(const std::string& path) const;
  // Every method path served, for documentation and the completeness test.
  std::vector<std::string> Paths() const;

  // Answers a POST to a unary or server-streaming method, in Connect or gRPC-Web by its
  // Content-Type. A unary call runs on this thread when the last of its kind was quick, else on
  // the server's pool (the answer is sent from there); a stream blocks: call it on a thread of
  // its own.
  void Serve(const std::shared_ptr<Exchange>& exchange, const std::string& path);

  // A WebSocket session of a bidirectional method, admitted now (token from `authorization`):
  // binary frames carry the protobuf request and answer, text frames their JSON. UNAUTHENTICATED
  // / UNAVAILABLE as CallGate.
  absl::StatusOr<std::unique_ptr<WebSocketHandler>> OpenSession(const std::string& path,
                                                                std::optional<absl::string_view> authorization);

 private:
  struct Method {
    Kind kind = Kind::kNone;
    const google::protobuf::Message* request = nullptr;   // prototype
    const google::protobuf::Message* response = nullptr;  // prototype
    std::function<absl::Status(const CallContext&, const google::protobuf::Message&, google::protobuf::Message*)> unary;
    std::function<absl::Status(const CallContext&, const google::protobuf::Message&,
                               const std::function<bool(const google::protobuf::Message&)>&)>
        stream;
    std::function<std::unique_ptr<WebSocketHandler>(CallContext)> session;
    Metrics::MethodSeries* series = nullptr;  // unary and streaming calls' grpc_server_* series
    // Unary: what decides a call's cost beyond its method and tenant, hashed (null: nothing).
    std::function<uint64_t(const google::protobuf::Message&)> cost_key;
    // Unary: whether a call would answer from memory, asking the store nothing (null: never
    // known, so the call always runs on the pool).
    std::function<bool(const CallContext&, const google::protobuf::Message&)> resident;
  };
  // Counts a unary or streaming call's end in its grpc_server_* series (may be null).
  void Handled(Metrics::MethodSeries* series, std::chrono::steady_clock::time_point start, const absl::Status& status);
  template <typename Api, typename Req, typename Resp>
  void AddUnary(const std::string& path, Api* api, absl::Status (Api::*fn)(const CallContext&, const Req&, Resp*));
  // A bidirectional method served as WebSocket sessions of api->OpenSession.
  template <typename Session, typename Req, typename Resp, typename Api>
  void AddSession(const std::string& path, Api* api);

  const CallGate* gate_;
  Metrics* metrics_;
  const ConnectOptions options_;
  absl::flat_hash_map<std::string, Method> methods_;
  QuickKinds quick_;  // which kinds of unary call were quick last time
};

}  // namespace skinning

#endif  // SKINNING_SERVER_HTTP_CONNECT_H_
