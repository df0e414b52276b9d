#include "server/metrics/metrics.h"

#include <grpcpp/grpcpp.h>
#include <prometheus/text_serializer.h>

#include <pthread.h>

#include <chrono>
#include <exception>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/util/blas_kernels.h"
#include "core/util/build_info.h"


namespace skinning {

const std::vector<double> kHandlingSecondsBuckets = {
    50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3,
    0.1,   0.25,   0.5,    1,      2.5,  5,      10,   30,    60};
const std::vector<double> kFrameSecondsBuckets = {1e-6,   2.5e-6, 5e-6,   10e-6, 25e-6,  50e-6,
                                                  100e-6, 250e-6, 500e-6, 1e-3,  2.5e-3, 5e-3,
                                                  10e-3,  25e-3,  50e-3,  0.1};
const std::vector<double> kBakeSecondsBuckets = {0.1, 0.25, 0.5, 1,   2.5, 5,    10,
                                                 30,  60,   120, 300, 600, 1800, 3600};

namespace {

using grpc::experimental::InterceptionHookPoints;
using grpc::experimental::Interceptor;
using grpc::experimental::InterceptorBatchMethods;
using grpc::experimental::ServerInterceptorFactoryInterface;
using grpc::experimental::ServerRpcInfo;
using Clock = std::chrono::steady_clock;

const char* RpcTypeName(ServerRpcInfo::Type type) {
  switch (type) {
    case ServerRpcInfo::Type::UNARY:
      return "unary";
    case ServerRpcInfo::Type::CLIENT_STREAMING:
      return "client_stream";
    case ServerRpcInfo::Type::SERVER_STREAMING:
      return "server_stream";
    case ServerRpcInfo::Type::BIDI_STREAMING:
      return "bidi_stream";
  }
  return "unknown";
}

// Times one call from its creation to its status.
class MetricsInterceptor : public Interceptor {
 public:
  MetricsInterceptor(Metrics* metrics, Metrics::MethodSeries* series)
      : metrics_(metrics), series_(series), start_(Clock::now()) {
    series_->started->Increment();
  }
  ~MetricsInterceptor() override {
    if (!finished_) Finish(static_cast<int>(grpc::StatusCode::CANCELLED));
  }

  void Intercept(InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS) && !finished_)
      Finish(static_cast<int>(methods->GetSendStatus().error_code()));
    methods->Proceed();
  }

 private:
  void Finish(int code) {
    finished_ = true;
    metrics_->Handled(*series_, code).Increment();
    series_->handling->Observe(std::chrono::duration<double>(Clock::now() - start_).count());
  }

  Metrics* const metrics_;
  Metrics::MethodSeries* const series_;
  const Clock::time_point start_;
  bool finished_ = false;
};

class MetricsInterceptorFactory : public ServerInterceptorFactoryInterface {
 public:
  explicit MetricsInterceptorFactory(Metrics* metrics) : metrics_(metrics) {}
  Interceptor* CreateServerInterceptor(ServerRpcInfo* info) override {
    const char* method = info->method();
    return new MetricsInterceptor(metrics_,
                                  &metrics_->GrpcMethod(method ? method : "", info->type()));
  }

 private:
  Metrics* const metrics_;
};

prometheus::MetricFamily Family(std::string name, std::string help, prometheus::MetricType type,
                                double value) {
  prometheus::MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  prometheus::ClientMetric m;
  if (type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  f.metric.push_back(std::move(m));
  return f;
}

}  // namespace

const char* GrpcCodeName(int code) {
  static const char* const kNames[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
  return code >= 0 && code <= 16 ? kNames[code] : "UNKNOWN";
}

CacheStatsCollectable::CacheStatsCollectable(std::string prefix, std::string what,
                                             std::function<CacheStats()> read)
    : prefix_(std::move(prefix)), what_(std::move(what)), read_(std::move(read)) {}

std::vector<prometheus::MetricFamily> CacheStatsCollectable::Collect() const {
  const CacheStats s = read_();
  using prometheus::MetricType;
  return {
      Family(prefix_ + "_hits_total", "Lookups found in the " + what_, MetricType::Counter, s.hits),
      Family(prefix_ + "_misses_total", "Lookups not found in the " + what_, MetricType::Counter,
             s.misses),
      Family(prefix_ + "_evictions_total",
             "Entries evicted from the " + what_ + " to stay within its capacity",
             MetricType::Counter, s.evictions),
      Family(prefix_ + "_bytes", "Approximate memory held by the " + what_, MetricType::Gauge,
             static_cast<double>(s.bytes)),
      Family(prefix_ + "_entries", "Entries in the " + what_, MetricType::Gauge,
             static_cast<double>(s.entries)),
  };
}

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {
  started_ = &prometheus::BuildCounter()
                  .Name("grpc_server_started_total")
                  .Help("RPCs started on the server")
                  .Register(*registry_);
  handled_ = &prometheus::BuildCounter()
                  .Name("grpc_server_handled_total")
                  .Help("RPCs completed on the server, by status code")
                  .Register(*registry_);
  handling_ =
      &prometheus::BuildHistogram()
           .Name("grpc_server_handling_seconds")
           .Help("Time from an RPC's start to its status on the server (a stream's whole life)")
           .Register(*registry_);
  bakes_queued_ = &prometheus::BuildGauge()
                       .Name("skinning_bakes_queued")
                       .Help("Bakes waiting for a worker")
                       .Register(*registry_);
  bakes_running_ = &prometheus::BuildGauge()
                        .Name("skinning_bakes_running")
                        .Help("Bakes being computed")
                        .Register(*registry_);
  bakes_finished_ = &prometheus::BuildCounter()
                         .Name("skinning_bakes_finished_total")
                         .Help("Bakes that ended, by final state (done, failed, cancelled)")
                         .Register(*registry_);
  bake_seconds_ =
      &prometheus::BuildHistogram()
           .Name("skinning_bake_duration_seconds")
           .Help("Run time of bakes that ended done, from leaving the queue to being stored")
           .Register(*registry_);
  bake_loads_ = &prometheus::BuildCounter()
                     .Name("skinning_bake_loads_total")
                     .Help("Stored bakes loaded into memory by their method (weights parsed, models rebuilt)")
                     .Register(*registry_);
  frame_seconds_ =
      &prometheus::BuildHistogram()
           .Name("skinning_frame_seconds")
           .Help("Time to pose one frame (Pose, each PoseClip frame, each PoseSession frame)")
           .Register(*registry_);
  store_errors_ = &prometheus::BuildCounter()
                       .Name("skinning_store_operation_errors_total")
                       .Help("Blob store operations that failed (NOT_FOUND does not count)")
                       .Register(*registry_);
  // Which kernels CHOLMOD's dense work runs on (core/util/blas_kernels.h): a dashboard over many
  // replicas shows the nodes whose OpenBLAS runs slow kernels.
  {
    const std::string version = OpenBlasVersion();
    prometheus::BuildGauge()
        .Name("skinning_blas_info")
        .Help("The BLAS under CHOLMOD (always 1): its library, the kernels it runs, and the kernels OpenBLAS "
              "chose itself when the server replaced them")
        .Register(*registry_)
        .Add({{"library", version.empty() ? "not OpenBLAS" : version},
              {"kernels", OpenBlasCoreName()},
              {"replaced", ReplacedOpenBlasCore()}})
        .Set(1);
  }
  // Which build each replica runs (the start's "version:" line says the same), so that a rollout
  // shows on a dashboard as one series giving way to the next.
  prometheus::BuildGauge()
      .Name("skinning_build_info")
      .Help("This server's build (always 1): the project's version, its CMake build type and the gRPC library's version")
      .Register(*registry_)
      .Add({{"version", ProjectVersion()}, {"build_type", BuildType()}, {"grpc", grpc::Version()}})
      .Set(1);
  // Every deformer's series exists from the start (a dashboard sees 0, not "no data").
  for (int d = v1::Deformer_MIN; d <= v1::Deformer_MAX; ++d)
    if (v1::Deformer_IsValid(d)) FrameSeconds(DeformerLabel(static_cast<v1::Deformer>(d)));
}

Metrics::~Metrics() = default;

void Metrics::AddCache(const std::string& prefix, const std::string& what,
                       std::function<CacheStats()> read) {
  caches_.push_back(std::make_shared<CacheStatsCollectable>(prefix, what, std::move(read)));
}

std::unique_ptr<ServerInterceptorFactoryInterface> Metrics::NewInterceptorFactory() {
  return std::make_unique<MetricsInterceptorFactory>(this);
}

Metrics::MethodSeries& Metrics::GrpcMethod(absl::string_view full_method,
                                           ServerRpcInfo::Type type) {
  std::lock_guard<std::mutex> lock(methods_mu_);
  auto it = methods_.find(full_method);
  if (it != methods_.end()) return *it->second;
  // "/skinning.v1.RigService/CreateRig" → service and method.
  std::string service = "unknown", method(full_method);
  absl::string_view rest = full_method;
  if (absl::StartsWith(rest, "/")) rest.remove_prefix(1);
  if (const size_t slash = rest.find('/'); slash != absl::string_view::npos) {
    service = std::string(rest.substr(0, slash));
    method = std::string(rest.substr(slash + 1));
  }
  if (method.empty()) method = "unknown";
  auto series = std::make_unique<MethodSeries>();
  series->labels = {
      {"grpc_service", service}, {"grpc_method", method}, {"grpc_type", RpcTypeName(type)}};
  series->started = &started_->Add(series->labels);
  series->handling = &handling_->Add(series->labels, kHandlingSecondsBuckets);
  MethodSeries& ref = *series;
  methods_.emplace(std::string(full_method), std::move(series));
  return ref;
}

prometheus::Counter& Metrics::Handled(MethodSeries& series, int code) {
  if (code < 0 || code > 16) code = static_cast<int>(grpc::StatusCode::UNKNOWN);
  if (prometheus::Counter* c = series.handled[code].load(std::memory_order_acquire)) return *c;
  prometheus::Labels labels = series.labels;
  labels["grpc_code"] = GrpcCodeName(code);
  // Family::Add returns the existing counter for the same labels, so a race stores the same one.
  prometheus::Counter* c = &handled_->Add(labels);
  series.handled[code].store(c, std::memory_order_release);
  return *c;
}

prometheus::Histogram& Metrics::FrameSeconds(const std::string& method) {
  return frame_seconds_->Add({{"method", method}}, kFrameSecondsBuckets);
}

void Metrics::OnFrame(v1::Deformer deformer, double seconds) {
  const int i = static_cast<int>(deformer);
  if (i < 0 || i >= static_cast<int>(frames_by_deformer_.size())) {
    FrameSeconds(DeformerLabel(deformer)).Observe(seconds);
    return;
  }
  prometheus::Histogram* h = frames_by_deformer_[i].load(std::memory_order_acquire);
  if (h == nullptr) {
    h = &FrameSeconds(DeformerLabel(deformer));
    frames_by_deformer_[i].store(h, std::memory_order_release);
  }
  h->Observe(seconds);
}

void Metrics::AddBakeMethod(const std::string& method) {
  std::lock_guard<std::mutex> lock(bakes_mu_);
  Bake(method);
}

void Metrics::OnBakeLoad(const std::string& method, double seconds) {
  std::lock_guard<std::mutex> lock(bakes_mu_);
  Bake(method).loads->Increment();
}

Metrics::BakeSeries& Metrics::Bake(const std::string& label) {
  auto it = bakes_.find(label);
  if (it != bakes_.end()) return it->second;
  BakeSeries s;
  s.queued = &bakes_queued_->Add({{"method", label}});
  s.running = &bakes_running_->Add({{"method", label}});
  s.duration = &bake_seconds_->Add({{"method", label}}, kBakeSecondsBuckets);
  s.done = &bakes_finished_->Add({{"method", label}, {"state", "done"}});
  s.failed = &bakes_finished_->Add({{"method", label}, {"state", "failed"}});
  s.cancelled = &bakes_finished_->Add({{"method", label}, {"state", "cancelled"}});
  s.loads = &bake_loads_->Add({{"method", label}});
  return bakes_.emplace(label, s).first->second;
}

void Metrics::OnBakeTransition(const BakeTransition& t) {
  std::lock_guard<std::mutex> lock(bakes_mu_);
  BakeSeries& s = Bake(t.method);
  if (t.from == v1::BAKE_STATE_QUEUED) s.queued->Decrement();
  if (t.from == v1::BAKE_STATE_RUNNING) s.running->Decrement();
  switch (t.to) {
    case v1::BAKE_STATE_QUEUED:
      s.queued->Increment();
      break;
    case v1::BAKE_STATE_RUNNING:
      s.running->Increment();
      break;
    case v1::BAKE_STATE_SUCCEEDED:
      s.done->Increment();
      if (t.from == v1::BAKE_STATE_RUNNING) s.duration->Observe(t.run_seconds);
      break;
    case v1::BAKE_STATE_FAILED:
      s.failed->Increment();
      break;
    case v1::BAKE_STATE_CANCELLED:
      s.cancelled->Increment();
      break;
    default:
      break;
  }
}

std::string Metrics::Render() const {
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  if (bake_queue_) {
    const BakeQueueStats q = bake_queue_();
    using prometheus::MetricType;
    families.push_back(Family("skinning_bake_queue_length", "Entries in the shared bake stream (every replica's).",
                              MetricType::Gauge, static_cast<double>(q.length)));
    families.push_back(Family("skinning_bake_queue_pending", "Bake jobs taken by a worker and not yet acknowledged.",
                              MetricType::Gauge, static_cast<double>(q.pending)));
    families.push_back(Family("skinning_bake_queue_reclaimed_total",
                              "Bake jobs this process's workers took over from a worker that stopped renewing its lease.",
                              MetricType::Counter, static_cast<double>(q.reclaimed)));
    families.push_back(Family("skinning_bake_queue_acknowledged_total", "Bake jobs this process's workers ended.",
                              MetricType::Counter, static_cast<double>(q.acknowledged)));
    families.push_back(Family("skinning_bake_queue_store_errors_total",
                              "The bake queue's Redis commands that failed (Redis unreachable, or an error reply).",
                              MetricType::Counter, static_cast<double>(q.store_errors)));
  }
  if (uploads_) {
    const auto [reading, waiting] = uploads_();
    families.push_back(Family("skinning_gltf_uploads_reading", "glTF uploads being read (--max_gltf_reads).",
                              prometheus::MetricType::Gauge, static_cast<double>(reading)));
    families.push_back(Family("skinning_gltf_uploads_waiting",
                              "glTF uploads waiting for a turn to be read (--gltf_read_queue).",
                              prometheus::MetricType::Gauge, static_cast<double>(waiting)));
  }
  for (const auto& cache : caches_) {
    std::vector<prometheus::MetricFamily> more = cache->Collect();
    families.insert(families.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace skinning
