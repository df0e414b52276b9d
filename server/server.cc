#include "server/server.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/process_stats.h"
#include "core/util/status_macros.h"
#include "server/grpc/tls.h"
#include "server/store/instrumented_blob_store.h"

namespace skinning {

namespace {

// The local queue's bakes that were queued or running when the server last stopped (a shutdown,
// SIGKILL, a crash), queued again as StartBake queues them. A record whose bake is stored
// meanwhile, whose rig is gone or whose options no longer validate goes; one the full queue
// refuses stays, to be tried again. A record whose server still runs on this machine (another
// server on the same directory) is left to it; so is one that another server starting at the
// same time took first (BakeStore::ClaimPending). A record from another machine (a shared
// volume) is taken over at start only: that machine's processes cannot be seen from here. At start
// (`at_start`) every record left to another server is named and the counts are printed; later
// (PendingBakeAdopter) the counts only when a record was queued or dropped.
//
// `failures` (the adopter's; null at start) holds the failure lines printed since the store last
// answered every step: a failure that lasts is printed once, not every pass, and its end once.
void ResumePendingBakes(BakeStore& store, Bakes& bakes, bool at_start,
                        absl::flat_hash_set<std::string>* failures = nullptr) {
  bool failed = false;
  auto failure = [&](std::string line) {
    failed = true;
    if (failures != nullptr && !failures->insert(line).second) return;
    std::printf("skinning-server bakes: %s\n", line.c_str());
    std::fflush(stdout);  // the adopter may print nothing else for a long time
  };
  // After the pass: the end of a failure printed before.
  auto ended = absl::MakeCleanup([&] {
    if (failures == nullptr || failed || failures->empty()) return;
    failures->clear();
    std::printf("skinning-server bakes: the store answers again; unfinished bakes are taken over as before\n");
    std::fflush(stdout);
  });
  absl::StatusOr<std::vector<BakeStore::PendingRecord>> pending = store.Pending();
  if (!pending.ok()) {
    failure(absl::StrCat("cannot read the bakes to start again: ", pending.status().message()));
    return;
  }
  if (pending->empty()) return;
  const std::string host = HostName();
  int queued = 0, done = 0, dropped = 0, kept = 0, others = 0;
  for (const BakeStore::PendingRecord& record : *pending) {
    const internal::v1::PendingBake& p = record.bake;
    const std::string name = BakeName(p.rig_id(), record.bake_id);
    // After the start, another machine's records are left alone: their server cannot be seen,
    // and taking them over every few seconds would have two machines bake each other's bakes.
    if (!at_start && p.host() != host) {
      ++others;
      continue;
    }
    if (QueuedByARunningServerHere(p)) {
      ++others;  // this server's own records too, after the start
      if (at_start)
        std::printf("skinning-server bakes: %s is left to the server that queued it (pid %s, still running)\n",
                    name.c_str(), WriterPid(p.writer()).c_str());
      continue;
    }
    absl::StatusOr<bool> claimed = store.ClaimPending(record);
    if (!claimed.ok()) {
      ++kept;
      failure(absl::StrCat(name, " is not started again now: ", claimed.status().message()));
      continue;
    }
    if (!*claimed) {
      ++others;
      std::printf("skinning-server bakes: %s is left to another server that took it first\n", name.c_str());
      continue;
    }
    absl::StatusOr<StartedBake> started = bakes.Start(p.rig_id(), p.options(), p.tenant());
    if (started.ok() && started->bake.name() == name && !started->bake.done()) {
      ++queued;
      continue;
    }
    if (absl::IsResourceExhausted(started.status()) || absl::IsUnavailable(started.status())) {
      // The refusal deleted the record: it is written again as no running server's, so that the
      // next try (here, or by another server of this machine, or at the next start) takes it.
      ++kept;
      internal::v1::PendingBake again = p;
      again.set_host(host);
      again.clear_writer();
      again.clear_stage();
      again.clear_progress_fraction();
      if (absl::StatusOr<std::string> s = store.PutPending(record.bake_id, again); !s.ok())
        failure(absl::StrCat(name, " will not be started again after a restart: ", s.status().message()));
      continue;
    }
    (void)store.DeletePending(record.bake_id);
    if (started.ok()) {
      ++done;
    } else {
      ++dropped;
      std::printf("skinning-server bakes: %s is not started again: %s\n", name.c_str(),
                  std::string(started.status().message()).c_str());
    }
  }
  if (!at_start && queued + done + dropped == 0) return;
  std::printf("skinning-server bakes: %d of %s unfinished bakes queued again; %d stored already, %d dropped, %d "
              "left to try again (the queue is full or the store failed), %d left to other servers on this store\n",
              queued, at_start ? "the last run's" : "ended servers'", done, dropped, kept, others);
  std::fflush(stdout);
}

BakeQueueStats QueueStats(RedisBakeQueue& queue) {
  BakeQueueStats stats;
  if (absl::StatusOr<std::pair<int64_t, int64_t>> lengths = queue.Lengths(); lengths.ok()) {
    stats.length = lengths->first;
    stats.pending = lengths->second;
  }
  const RedisBakeQueueCounts counts = queue.counts();
  stats.reclaimed = counts.reclaimed;
  stats.acknowledged = counts.acked;
  stats.store_errors = counts.store_errors;
  return stats;
}

}  // namespace

// Without --redis, every kEvery: the records of bakes whose server ended while this one runs
// (another server on the same directory, stopped or killed) are taken over, and records a full
// queue refused are tried again (ResumePendingBakes, as at start).
class PendingBakeAdopter {
 public:
  static constexpr std::chrono::seconds kEvery{5};
  PendingBakeAdopter(BakeStore* store, Bakes* bakes)
      : thread_([this, store, bakes] {
          std::unique_lock<std::mutex> lock(mu_);
          absl::flat_hash_set<std::string> failures;  // this thread's only
          while (!cv_.wait_for(lock, kEvery, [this] { return stop_; })) {
            lock.unlock();
            ResumePendingBakes(*store, *bakes, /*at_start=*/false, &failures);
            lock.lock();
          }
        }) {}
  ~PendingBakeAdopter() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the others are built
};

// Counts that cannot work used to be changed without a word (0 bake workers ran as 1).
absl::Status ValidateServerOptions(const ServerOptions& options) {
  if (options.bakes.workers < 1)
    return absl::InvalidArgumentError(absl::StrFormat("bake_workers = %d must be at least 1", options.bakes.workers));
  if (options.bakes.max_queue < 0)
    return absl::InvalidArgumentError(absl::StrFormat(
        "bake_queue = %d must not be negative (0: a bake starts only on an idle worker)", options.bakes.max_queue));
  if (!options.http_address.empty() && options.http_threads < 1)
    return absl::InvalidArgumentError(absl::StrFormat("http_threads = %d must be at least 1", options.http_threads));
  if (options.http_request_timeout.count() < 0)
    return absl::InvalidArgumentError(absl::StrFormat("http_request_timeout_ms = %d must not be negative (0: 10000)",
                                                      options.http_request_timeout.count()));
  if (options.keepalive_seconds < 0 || (options.keepalive_seconds > 0 && options.keepalive_timeout_seconds < 1))
    return absl::InvalidArgumentError(absl::StrFormat(
        "keepalive_seconds = %d must not be negative (0: never ping), and keepalive_timeout_seconds = %d must be at "
        "least 1 when it pings",
        options.keepalive_seconds, options.keepalive_timeout_seconds));
  if (options.max_gltf_reads < 0 || options.gltf_read_queue < 0)
    return absl::InvalidArgumentError(absl::StrFormat("max_gltf_reads = %d and gltf_read_queue = %d must not be negative",
                                                      options.max_gltf_reads, options.gltf_read_queue));
  if (options.http_websocket_unsent_mb < 0 || options.http_websocket_unsent_mb > (int64_t{1} << 30))
    return absl::InvalidArgumentError(absl::StrFormat(
        "http_websocket_unsent_mb = %d must be between 0 (no limit) and 2^30", options.http_websocket_unsent_mb));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<BlobStore>> OpenStore(const ServerOptions& options) {
  if (options.redis_address.empty()) return OpenFilesystemBlobStore(options.store_dir);
  const size_t colon = options.redis_address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(absl::string_view(options.redis_address).substr(colon + 1), &port))
    return absl::InvalidArgumentError(
        absl::StrCat("redis address '", options.redis_address, "' is not host:port"));
  return OpenRedisBlobStore(options.redis_address.substr(0, colon), port, options.redis_prefix,
                            options.redis_credentials);
}

absl::StatusOr<std::unique_ptr<SkinningServer>> SkinningServer::Start(const ServerOptions& options,
                                                                     std::unique_ptr<BlobStore> blobs) {
  RETURN_IF_ERROR(ValidateServerOptions(options));
  if (blobs == nullptr) {
    ASSIGN_OR_RETURN(blobs, OpenStore(options));
  }
  std::unique_ptr<SkinningServer> s(new SkinningServer());
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!options.tls_cert_file.empty() || !options.tls_key_file.empty() ||
      !options.tls_client_ca_file.empty()) {
    ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> tls, TlsServerCredentials(options.tls_cert_file, options.tls_key_file,
                                                          options.tls_client_ca_file));
    credentials = std::move(tls);
    s->tls_ = true;
    s->mutual_tls_ = !options.tls_client_ca_file.empty();
  }
  if (!options.auth_tokens_file.empty()) {
    absl::StatusOr<std::unique_ptr<TokenFile>> tokens =
        TokenFile::Open(options.auth_tokens_file, options.auth_tokens_reload);
    if (!tokens.ok())
      return absl::Status(tokens.status().code(),
                          absl::StrCat("--auth_tokens: ", tokens.status().message()));
    s->tokens_ = *std::move(tokens);
  }
  if (!options.metrics_address.empty()) s->metrics_ = std::make_unique<Metrics>();
  s->gate_ = std::make_unique<CallGate>(s->tokens_.get(), &s->draining_);
  s->blobs_ = std::move(blobs);
  if (s->metrics_) s->blobs_ = std::make_shared<InstrumentedBlobStore>(s->blobs_, s->metrics_->store_errors());
  s->rigs_ = std::make_unique<RigStore>(s->blobs_, options.cache_bytes, options.limits);
  s->examples_ = std::make_unique<ExampleStore>(s->blobs_);
  s->psd_models_ = std::make_unique<PsdModels>(s->examples_.get(), options.psd_cache_bytes);
  // Bakes: the store of finished ones, the runner that computes and stores one, the queue.
  const RecipeRegistry& recipes = RecipeRegistry::Default();
  s->bake_store_ = std::make_unique<BakeStore>(s->blobs_, s->rigs_.get(), &recipes, options.bake_cache_bytes,
                                               s->metrics_.get());
  if (absl::StatusOr<BakeStore::OlderBakes> older = s->bake_store_->IndexOlderBakes(); !older.ok()) {
    s->older_bakes_summary_ = absl::StrCat("could not index the bakes of older servers (DeleteRig leaves those "
                                           "that have no entry): ",
                                           older.status().ToString());
  } else if (older->indexed + older->deleted + older->unreadable > 0) {
    s->older_bakes_summary_ = absl::StrFormat(
        "bakes of older servers: %d indexed under their rig, %d deleted (their rig was deleted), %d unreadable "
        "(left in place)",
        older->indexed, older->deleted, older->unreadable);
  }
  s->bake_runner_ = std::make_unique<BakeRunner>(s->rigs_.get(), s->bake_store_.get());
  BakeRunner* runner = s->bake_runner_.get();
  BakeRunFunction run = [runner](const BakeJob& job, const Progress& progress) { return runner->Run(job, progress); };
  if (options.role != "all" && options.role != "api" && options.role != "worker")
    return absl::InvalidArgumentError(absl::StrCat("role '", options.role, "' is not all, api or worker"));
  if (options.redis_address.empty()) {
    if (options.role != "all")
      return absl::InvalidArgumentError(
          absl::StrCat("role '", options.role, "' needs --redis (the queue the api and worker replicas share)"));
    s->bake_queue_ = std::make_unique<LocalBakeQueue>(s->bake_store_.get(), std::move(run), options.bakes, s->metrics_.get());
  } else {
    RedisBakeQueueOptions q;
    const size_t colon = options.redis_address.rfind(':');
    q.host = options.redis_address.substr(0, colon);
    q.port = std::atoi(options.redis_address.c_str() + colon + 1);
    q.prefix = options.redis_prefix;
    q.credentials = options.redis_credentials;
    q.workers = options.role == "api" ? 0 : std::max(1, options.bakes.workers);
    q.lease = options.bake_lease;
    q.max_attempts = options.bake_max_attempts;
    ASSIGN_OR_RETURN(std::unique_ptr<RedisBakeQueue> queue,
                     RedisBakeQueue::Open(s->bake_store_.get(), &recipes, std::move(run), q, s->metrics_.get()));
    s->redis_queue_ = queue.get();
    s->bake_queue_ = std::move(queue);
  }
  s->bakes_ = std::make_unique<Bakes>(s->rigs_.get(), s->bake_store_.get(), s->bake_queue_.get(), &recipes);
  if (options.redis_address.empty()) {
    ResumePendingBakes(*s->bake_store_, *s->bakes_, /*at_start=*/true);
    s->adopter_ = std::make_unique<PendingBakeAdopter>(s->bake_store_.get(), s->bakes_.get());
  }
  s->poser_ = std::make_unique<Poser>(s->rigs_.get(), s->bakes_.get(), s->psd_models_.get(), s->metrics_.get());
  // The services' logic, then their gRPC adapters.
  if (options.max_gltf_reads > 0)
    s->uploads_ = std::make_unique<UploadGate>(options.max_gltf_reads, options.gltf_read_queue);
  // Stored clips are bounded as CreateRig's sampled ones are (a quarter of the message limit).
  s->animations_ = std::make_unique<AnimationStore>(s->blobs_, static_cast<size_t>(options.max_message_bytes) / 4);
  s->rig_api_ = std::make_unique<RigApi>(s->rigs_.get(), s->examples_.get(), s->animations_.get(),
                                         s->bake_store_.get(), static_cast<size_t>(options.max_message_bytes),
                                         options.max_clip_frames, s->uploads_.get());
  s->pose_api_ = std::make_unique<PoseApi>(s->poser_.get(), options.max_clip_frames,
                                           static_cast<size_t>(options.max_message_bytes));
  s->bake_api_ = std::make_unique<BakeApi>(s->bakes_.get());
  s->fast_api_ = std::make_unique<FastApi>(s->bakes_.get());
  s->rig_service_ = std::make_unique<RigGrpcService>(s->gate_.get(), s->rig_api_.get());
  s->callbacks_ = std::make_unique<CallbackHost>(options.callback_threads, options.max_sessions);
  s->pose_service_ = std::make_unique<PoseGrpcService>(s->gate_.get(), s->pose_api_.get(), s->callbacks_.get());
  s->bake_service_ = std::make_unique<BakeGrpcService>(s->gate_.get(), s->bake_api_.get());
  s->fast_service_ = std::make_unique<FastGrpcService>(s->gate_.get(), s->fast_api_.get(), s->callbacks_.get());

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // Health checking and reflection share the port (and its TLS) but need no token.
  builder.AddListeningPort(options.address, credentials, &s->port_);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  // Keepalive: without it a client that stopped answering (a phone off the network, a frozen
  // process) held its sessions, and their --max_sessions slots, until its kernel reset the socket,
  // which for a frozen process is never. The server pings only connections with calls open, and
  // goes on pinging while no data flows (gRPC's default stops after 2 pings without data).
  if (options.keepalive_seconds > 0) {
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, options.keepalive_seconds * 1000);
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, std::max(1, options.keepalive_timeout_seconds) * 1000);
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
    builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  }
  const int threads = options.threads > 0 ? options.threads : 128;
  grpc::ResourceQuota quota("skinning-server");
  quota.SetMaxThreads(threads);
  builder.SetResourceQuota(quota);
  // gRPC's sync server keeps between min and max threads polling for new calls (defaults 1 and
  // 2); with few pollers, threads are created and retired as calls come and go. More pollers
  // measured faster under load here (bench/load, README "Load and limits").
  if (options.min_pollers > 0) builder.SetSyncServerOption(grpc::ServerBuilder::MIN_POLLERS, options.min_pollers);
  if (options.max_pollers > 0)
    builder.SetSyncServerOption(grpc::ServerBuilder::MAX_POLLERS, std::max(options.max_pollers, options.min_pollers));
  // Every role answers calls (the deployment sends API traffic to api replicas only; a worker
  // answers whoever calls it directly); the roles differ in who bakes.
  builder.RegisterService(s->rig_service_.get());
  builder.RegisterService(s->pose_service_.get());
  builder.RegisterService(s->bake_service_.get());
  builder.RegisterService(s->fast_service_.get());
  if (options.load_baseline) {
    s->load_baseline_service_ = std::make_unique<LoadBaselineGrpcService>(s->gate_.get(), options.max_message_bytes);
    builder.RegisterService(s->load_baseline_service_.get());
  }
  if (s->metrics_) {
    RigStore* rigs = s->rigs_.get();
    BakeStore* bakes = s->bake_store_.get();
    for (const auto& recipe : recipes.all()) s->metrics_->AddBakeMethod(recipe->name());
    s->metrics_->AddCache("skinning_rig_cache", "rig cache", [rigs] { return rigs->cache_stats(); });
    s->metrics_->AddCache("skinning_bake_cache", "bake cache", [bakes] { return bakes->cache_stats(); });
    PsdModels* psd = s->psd_models_.get();
    s->metrics_->AddCache("skinning_psd_model_cache", "PSD model cache", [psd] { return psd->cache_stats(); });
    if (RedisBakeQueue* queue = s->redis_queue_) s->metrics_->AddBakeQueue([queue] { return QueueStats(*queue); });
    if (const UploadGate* uploads = s->uploads_.get()) {
      s->metrics_->AddUploads([uploads] {
        const UploadGate::Counts c = uploads->counts();
        return std::make_pair(c.reading, c.waiting);
      });
    }
    HttpServerOptions metrics_http;
    metrics_http.address = options.metrics_address;
    metrics_http.io_threads = 1;
    metrics_http.worker_threads = 1;
    metrics_http.max_body_bytes = 1 << 16;
    Metrics* metrics = s->metrics_.get();
    absl::StatusOr<std::unique_ptr<HttpServer>> exposer =
        HttpServer::Start(metrics_http, MetricsRouter([metrics] { return metrics->Render(); }, &s->draining_));
    if (!exposer.ok())
      return absl::Status(exposer.status().code(), absl::StrCat("metrics: ", exposer.status().message()));
    s->exposer_ = *std::move(exposer);
    s->metrics_port_ = s->exposer_->port();
  }
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(s->inflight_.NewInterceptorFactory());
  if (s->metrics_) interceptors.push_back(s->metrics_->NewInterceptorFactory());
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  s->server_ = builder.BuildAndStart();
  if (!s->server_ || s->port_ == 0)
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options.address));
  // The HTTP front door calls the same handlers through the same gate and metrics.
  s->connect_ = std::make_unique<ConnectService>(
      s->gate_.get(),
      ConnectService::Apis{s->rig_api_.get(), s->pose_api_.get(), s->bake_api_.get(), s->fast_api_.get()},
      s->metrics_.get(),
      ConnectOptions{static_cast<size_t>(options.max_message_bytes), options.http_compress_min_bytes});
  if (!options.http_address.empty()) {
    HttpServerOptions http;
    http.address = options.http_address;
    http.io_threads = std::max(1, options.http_threads);
    http.worker_threads = std::max(2, options.http_threads);
    http.max_body_bytes = static_cast<size_t>(options.max_message_bytes);
    http.max_websocket_message_bytes = static_cast<size_t>(options.max_message_bytes);
    if (options.http_request_timeout.count() > 0) http.request_timeout = options.http_request_timeout;
    http.max_connections = std::max(0, options.http_max_connections);
    http.websocket_unsent_bytes = static_cast<size_t>(options.http_websocket_unsent_mb) << 20;
    http.cors_origin = FrontDoorCorsOrigin(options.http_cors_origins);
    FrontDoorOptions door;
    door.cors_origins = options.http_cors_origins;
    door.web_dir = options.web_dir;
    absl::StatusOr<std::unique_ptr<HttpServer>> front =
        HttpServer::Start(http, FrontDoorRouter(s->connect_.get(), std::move(door), &s->draining_));
    if (!front.ok()) return absl::Status(front.status().code(), absl::StrCat("http: ", front.status().message()));
    s->front_door_ = *std::move(front);
  }
  if (!options.health_address.empty()) {
    // Its own server: the default health service (EnableDefaultHealthCheckService above) and
    // nothing else, so the plaintext port opens no way around TLS or the tokens.
    grpc::ServerBuilder health;
    health.AddListeningPort(options.health_address, grpc::InsecureServerCredentials(), &s->health_port_);
    s->health_server_ = health.BuildAndStart();
    if (!s->health_server_ || s->health_port_ == 0)
      return absl::UnavailableError(absl::StrCat("cannot listen on ", options.health_address, " (health port)"));
    s->health_server_->GetHealthCheckService()->SetServingStatus(true);
  }
  s->server_->GetHealthCheckService()->SetServingStatus(true);
  return s;
}

std::string SkinningServer::SecuritySummary() const {
  std::string summary = !tls_ ? "plaintext" : mutual_tls_ ? "TLS with client certificates" : "TLS";
  if (tokens_ != nullptr) {
    const int tenants = tokens_->Current()->tenant_count();
    absl::StrAppend(&summary, ", bearer tokens (", tenants, tenants == 1 ? " tenant)" : " tenants)");
  } else
    absl::StrAppend(&summary, ", no authentication");
  return summary;
}

void SkinningServer::Shutdown(std::chrono::milliseconds drain) {
  if (shut_down_) return;
  shut_down_ = true;
  draining_ = true;
  server_->GetHealthCheckService()->SetServingStatus(false);
  if (health_server_) health_server_->GetHealthCheckService()->SetServingStatus(false);
  // Bakes in progress are cancelled (nothing half-done is stored). The local queue keeps their
  // records, so the server restarted on this store starts them again; the Redis queue hands them
  // back to another worker.
  adopter_.reset();  // takes no record over from now on
  bake_queue_->Shutdown();
  // New calls are refused with UNAVAILABLE while draining (clients retry elsewhere); wait for the
  // ones in flight, then shut down at once. gRPC's own Shutdown(deadline) would wait for the
  // whole deadline whenever a client is still connected, even idle. A session waiting for its
  // client's next frame is not in flight: it used to hold the drain to its deadline; it now ends
  // with the shutdown (UNAVAILABLE), and one that sends a frame meanwhile is told it drains.
  const auto deadline = std::chrono::steady_clock::now() + drain;
  while (inflight_.count() - callbacks_->idle() > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
  if (front_door_) front_door_->Stop(deadline);
  // Last: probes see NOT_SERVING, not a closed port, until everything else has stopped.
  if (health_server_) health_server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
}

void SkinningServer::Wait() { server_->Wait(); }

SkinningServer::~SkinningServer() {
  if (server_) {
    Shutdown(std::chrono::milliseconds(0));
    server_->Wait();
  }
}

}  // namespace skinning
