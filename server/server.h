// The skinning server: wires the stores, the bake queue, the posing, the services and their gRPC
// adapters, health checking, reflection and metrics into one gRPC server.
#ifndef SKINNING_SERVER_SERVER_H_
#define SKINNING_SERVER_SERVER_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/server.h>

#include "absl/status/statusor.h"
#include "server/api/bake_api.h"
#include "server/api/call_context.h"
#include "server/api/fast_api.h"
#include "server/api/pose_api.h"
#include "server/api/rig_api.h"
#include "server/auth/token_file.h"
#include "server/bake/bake_runner.h"
#include "server/bake/bake_store.h"
#include "server/bake/bakes.h"
#include "server/bake/local_bake_queue.h"
#include "server/bake/redis_bake_queue.h"
#include "server/grpc/grpc_services.h"
#include "server/grpc/inflight.h"
#include "server/http/connect.h"
#include "server/http/front_door.h"
#include "server/http/http_server.h"
#include "server/metrics/metrics.h"
#include "server/pose/posing.h"
#include "server/pose/psd_models.h"
#include "server/store/animation_store.h"
#include "server/store/example_store.h"
#include "server/store/redis_credentials.h"
#include "server/store/rig_store.h"

namespace skinning {

class PendingBakeAdopter;  // server.cc

struct ServerOptions {
  std::string address = "0.0.0.0:50051";  // host:port; port 0 picks a free port
  int threads = 0;  // max gRPC sync threads (each unary call but Pose, each WatchBake, in flight holds one); 0 = 128
  // The calls on gRPC's callback API (Pose, and the pose and FAST sessions, of which an open one
  // holds no thread): the threads that run their work when it is not quick (0 = twice the cores,
  // at least 4) and the most sessions open at once (0 = no limit).
  int callback_threads = 0;
  RedisCredentials redis_credentials;  // with redis_address: AUTH on every connection
  int max_sessions = 10000;
  // HTTP/2 keepalive: every connection with calls open is pinged after this long without traffic,
  // and closed (its calls cancelled) when the ping is not answered within the timeout: a client
  // that froze or dropped off the network gives its session slots back. <= 0: no pings.
  int keepalive_seconds = 60;
  int keepalive_timeout_seconds = 20;
  // Threads of the gRPC sync server waiting for new calls: at least min_pollers, at most
  // max_pollers (the rest of the `threads` only work). 0 = gRPC's default (1 and 2).
  int min_pollers = 2;
  // Serve skinning.internal.v1.LoadBaselineService/Echo (bench/load's raw-gRPC baseline).
  bool load_baseline = false;
  int max_pollers = 8;
  std::string store_dir = "skinning-store";  // filesystem store, used when redis_address is empty
  // host:port of a Redis shared by several replicas; empty = the filesystem store in store_dir.
  std::string redis_address;
  std::string redis_prefix = "skinning:";  // namespace of this service's keys in Redis
  int max_message_bytes = 64 << 20;        // largest request or response
  size_t cache_bytes = size_t{1} << 30;    // in-memory rig cache (LRU by bytes)
  size_t bake_cache_bytes = size_t{256} << 20;  // finished bakes kept in memory
  size_t psd_cache_bytes = size_t{512} << 20;   // PSD models built from examples, kept in memory
  RigLimits limits;
  int max_clip_frames = 10000;
  // glTF uploads (CreateRig from a file) read at once, and how many more may wait for a turn
  // (UploadGate); max_gltf_reads 0 = no bound.
  int max_gltf_reads = 2;
  int gltf_read_queue = 8;
  LocalBakeQueueOptions bakes;
  // Who bakes: "all" (this process serves calls and bakes), "api" (it serves calls and queues
  // bakes for workers) or "worker" (it bakes what any replica queued; it answers calls too, but
  // the deployment sends it none). api and worker need redis_address: with Redis, bakes go
  // through the shared queue (RedisBakeQueue).
  std::string role = "all";
  std::chrono::milliseconds bake_lease{10000};  // RedisBakeQueueOptions::lease
  int bake_max_attempts = 3;                    // RedisBakeQueueOptions::max_attempts
  // host:port of the Prometheus /metrics endpoint (port 0 picks a free port); empty = no
  // metrics are kept or served.
  std::string metrics_address;
  // The HTTP front door (Connect, WebSocket sessions, the viewer; README "From a browser or a
  // phone"): host:port, port 0 picks a free port; empty = off.
  std::string http_address;
  // A plaintext port serving only grpc.health.v1.Health, with the status of the main port
  // (SERVING, NOT_SERVING while draining): for probes that cannot speak TLS (the kubelet's gRPC
  // probe) when the main port does. host:port, port 0 picks a free port; empty = off.
  std::string health_address;
  std::vector<std::string> http_cors_origins;  // FrontDoorOptions::cors_origins
  std::string web_dir;                         // the viewer's folder served at /; empty = none
  // The front door's socket threads (unary calls and session frames run on them), and as many
  // more for streams and files.
  int http_threads = 4;
  // A request's headers and body must arrive within this; 0 = 10 s.
  std::chrono::milliseconds http_request_timeout{0};
  // Front-door connections (WebSockets included) open at once; more are answered 503. 0 = no limit.
  int http_max_connections = 10000;
  // WebSocket answers computed and not yet sent, over every session, before sessions with an
  // unsent answer compute no more (HttpServerOptions::websocket_unsent_bytes); 0 = no limit.
  int64_t http_websocket_unsent_mb = 256;
  // Unary answers of at least this many bytes go gzip-compressed to clients that accept gzip
  // (ConnectOptions::compress_min_bytes); 0 = never.
  size_t http_compress_min_bytes = 0;
  // Security (see README, "Security"). A token file of `TOKEN TENANT` lines; empty = no
  // authentication (every caller is the tenant "", which sees every rig).
  std::string auth_tokens_file;
  // How often the token file is read again (TokenFile): tokens added, rotated or revoked in it
  // take effect without a restart. 0 = read once at start.
  std::chrono::milliseconds auth_tokens_reload{10000};
  // PEM files. With a certificate and key the gRPC port serves TLS only; with a client CA as
  // well, clients must present a certificate signed by it (mutual TLS). Empty = plaintext.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
};

// Opens the store the options select: the directory, or with --redis the shared store.
// UNAVAILABLE while Redis is unreachable or loading its data (worth waiting for); the error names
// its address (for the operator's log).
absl::StatusOr<std::unique_ptr<BlobStore>> OpenStore(const ServerOptions& options);
// The options' counts and sizes; INVALID_ARGUMENT naming the first bad one. SkinningServer::Start
// checks them first; main checks them before it waits for the store.
absl::Status ValidateServerOptions(const ServerOptions& options);

class SkinningServer {
 public:
  // Serves `blobs` (an OpenStore result), or opens the store itself when it is null.
  static absl::StatusOr<std::unique_ptr<SkinningServer>> Start(const ServerOptions& options,
                                                               std::unique_ptr<BlobStore> blobs = nullptr);
  ~SkinningServer();

  int port() const { return port_; }
  // The metrics endpoint's port; 0 when metrics are off.
  int metrics_port() const { return metrics_port_; }
  // The HTTP front door's port; 0 when it is off.
  int http_port() const { return front_door_ ? front_door_->port() : 0; }
  // The plaintext health port's; 0 when it is off.
  int health_port() const { return health_port_; }
  RigStore& store() { return *rigs_; }
  Bakes& bakes() { return *bakes_; }
  // The service code both doors call (for in-process callers such as the RPC fuzz target).
  RigApi& rig_api() { return *rig_api_; }
  PoseApi& pose_api() { return *pose_api_; }
  BakeApi& bake_api() { return *bake_api_; }
  FastApi& fast_api() { return *fast_api_; }
  // One line on the server's security: "TLS with client certificates, bearer tokens (2 tenants)".
  std::string SecuritySummary() const;
  // What indexing the bakes of older servers did at start (BakeStore::IndexOlderBakes), or
  // its error (the server serves anyway), as one line; empty when there was nothing to do.
  const std::string& older_bakes_summary() const { return older_bakes_summary_; }

  // Graceful shutdown: reports NOT_SERVING on the health service, stops accepting calls, lets
  // calls in flight finish for up to `drain`, then cancels what remains.
  void Shutdown(std::chrono::milliseconds drain);
  void Wait();

 private:
  SkinningServer() = default;
  // Members are destroyed in reverse order: everything below outlives what uses it.
  std::unique_ptr<Metrics> metrics_;  // first: outlives everything that reports to it
  std::unique_ptr<TokenFile> tokens_;  // null: authentication off
  bool tls_ = false;
  bool mutual_tls_ = false;
  std::atomic<bool> draining_{false};
  std::unique_ptr<CallGate> gate_;
  std::shared_ptr<BlobStore> blobs_;
  std::unique_ptr<RigStore> rigs_;
  std::unique_ptr<ExampleStore> examples_;  // PSD examples per rig and tenant
  std::unique_ptr<AnimationStore> animations_;  // the animations registered with each rig, per tenant
  std::unique_ptr<PsdModels> psd_models_;   // PSD models built from them, cached
  std::unique_ptr<BakeStore> bake_store_;
  std::string older_bakes_summary_;
  std::unique_ptr<BakeRunner> bake_runner_;
  std::unique_ptr<BakeQueue> bake_queue_;  // LocalBakeQueue, or RedisBakeQueue with --redis
  RedisBakeQueue* redis_queue_ = nullptr;   // bake_queue_ when it is the Redis one
  std::unique_ptr<Bakes> bakes_;
  std::unique_ptr<PendingBakeAdopter> adopter_;  // without --redis; stopped before the queue
  std::unique_ptr<Poser> poser_;
  std::unique_ptr<UploadGate> uploads_;
  std::unique_ptr<RigApi> rig_api_;
  std::unique_ptr<PoseApi> pose_api_;
  std::unique_ptr<BakeApi> bake_api_;
  std::unique_ptr<FastApi> fast_api_;
  std::unique_ptr<RigGrpcService> rig_service_;
  std::unique_ptr<PoseGrpcService> pose_service_;
  std::unique_ptr<BakeGrpcService> bake_service_;
  std::unique_ptr<FastGrpcService> fast_service_;
  std::unique_ptr<LoadBaselineGrpcService> load_baseline_service_;
  InflightCalls inflight_;
  std::unique_ptr<CallbackHost> callbacks_;  // destroyed after server_, whose callback calls have ended by then
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> health_server_;  // only grpc.health.v1.Health, plaintext
  int health_port_ = 0;
  bool shut_down_ = false;
  std::unique_ptr<ConnectService> connect_;
  std::unique_ptr<HttpServer> front_door_;
  std::unique_ptr<HttpServer> exposer_;  // last: stops scraping the store first
  int metrics_port_ = 0;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_SERVER_H_
