// Prometheus metrics of the skinning server, served over HTTP on their own port.
//
// Series (all names follow the Prometheus conventions: base units, _total for counters):
//   grpc_server_started_total{grpc_service,grpc_method,grpc_type}            counter
//   grpc_server_handled_total{grpc_service,grpc_method,grpc_type,grpc_code}  counter
//   grpc_server_handling_seconds{grpc_service,grpc_method,grpc_type}         histogram
//     recorded by a server interceptor; grpc_type is unary, client_stream, server_stream or
//     bidi_stream; grpc_code is the status code's name (OK, INVALID_ARGUMENT, ...). A stream's
//     handling time runs from its start to its status.
//   skinning_bakes_queued{method}, skinning_bakes_running{method}            gauges; method is
//     the bake method's recipe name (bbw, bone_heat, geodesic_voxel, fast_model, ...)
//   skinning_bakes_finished_total{method,state}   counter; state is done, failed or cancelled
//   skinning_bake_duration_seconds{method}        histogram of the run time of bakes that end done
//   skinning_bake_loads_total{method}             counter of stored bakes loaded into memory by
//     their recipe (a status check never loads one; posing with a bake not in memory does)
//   skinning_frame_seconds{method}                histogram of one frame's posing by deformer
//     (lbs, dqs, stbs_lbs, ..., psd_support_dqs)
//   skinning_store_operation_errors_total{operation}  counter; put, get, exists, delete, list
//   skinning_rig_cache_{hits,misses,evictions}_total, skinning_rig_cache_{bytes,entries}
//   skinning_bake_cache_{hits,misses,evictions}_total, skinning_bake_cache_{bytes,entries}
//     read from the caches when scraped.
//   skinning_gltf_uploads_reading, skinning_gltf_uploads_waiting   gauges: glTF uploads being
//     read, and waiting for a turn (--max_gltf_reads, --gltf_read_queue), read when scraped
#ifndef SKINNING_SERVER_METRICS_METRICS_H_
#define SKINNING_SERVER_METRICS_METRICS_H_

#include <grpcpp/support/server_interceptor.h>
#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/bake/bake_queue.h"
#include "server/bake/bake_store.h"
#include "server/pose/posing.h"
#include "server/store/lru_cache.h"

namespace skinning {

// Bucket upper bounds (seconds) of the histograms.
extern const std::vector<double> kHandlingSecondsBuckets;  // 50 µs … 60 s
extern const std::vector<double> kFrameSecondsBuckets;     // 1 µs … 100 ms
extern const std::vector<double> kBakeSecondsBuckets;      // 100 ms … 1 h

// The gRPC code's canonical name ("OK", "INVALID_ARGUMENT"); "UNKNOWN" outside 0..16.
const char* GrpcCodeName(int code);

// Reads cache statistics when scraped and reports them as <prefix>_hits_total,
// <prefix>_misses_total, <prefix>_evictions_total (counters), <prefix>_bytes and
// <prefix>_entries (gauges).
// What the shared bake queue reports (Metrics::AddBakeQueue).
struct BakeQueueStats {
  int64_t length = 0, pending = 0, reclaimed = 0, acknowledged = 0, store_errors = 0;
};

class CacheStatsCollectable : public prometheus::Collectable {
 public:
  // `what` names the cache in the help texts ("rig cache"); `read` is called on every scrape
  // from the metrics endpoint's thread and must stay valid while this is registered.
  CacheStatsCollectable(std::string prefix, std::string what, std::function<CacheStats()> read);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const std::string prefix_, what_;
  const std::function<CacheStats()> read_;
};

class Metrics : public BakeObserver, public BakeLoadObserver, public FrameObserver {
 public:
  Metrics();
  ~Metrics() override;
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // The counters, gauges and histograms kept in this process.
  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }

  // Adds a cache whose statistics are read at scrape time (see CacheStatsCollectable). Call
  // before Serve.
  void AddCache(const std::string& prefix, const std::string& what,
                std::function<CacheStats()> read);
  // The shared bake queue (--redis), read at scrape time: skinning_bake_queue_length and
  // skinning_bake_queue_pending (gauges, every replica's jobs), skinning_bake_queue_reclaimed_total,
  // skinning_bake_queue_acknowledged_total and skinning_bake_queue_store_errors_total (counters, this
  // process's workers and calls).
  void AddBakeQueue(std::function<BakeQueueStats()> read) { bake_queue_ = std::move(read); }
  // The glTF uploads being read and waiting (UploadGate), read at scrape time:
  // skinning_gltf_uploads_reading and skinning_gltf_uploads_waiting (gauges).
  void AddUploads(std::function<std::pair<int, int>()> read) { uploads_ = std::move(read); }

  // A gRPC server interceptor factory recording the grpc_server_* families. This object must
  // outlive the server it is given to.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> NewInterceptorFactory();

  // skinning_store_operation_errors_total, for InstrumentedBlobStore.
  prometheus::Family<prometheus::Counter>& store_errors() { return *store_errors_; }

  // skinning_frame_seconds{method=`method`} ("lbs", "dqs", "fast"); the reference stays valid.
  prometheus::Histogram& FrameSeconds(const std::string& method);
  // Creates the series of bake method `method` (at 0), so dashboards see them before any bake.
  void AddBakeMethod(const std::string& method);

  // FrameObserver: one frame posed with `deformer` in `seconds`.
  void OnFrame(v1::Deformer deformer, double seconds) override;
  // BakeObserver: moves the queued/running gauges, counts finished bakes, times done ones.
  void OnBakeTransition(const BakeTransition& t) override;
  // BakeLoadObserver: counts a stored bake loaded into memory.
  void OnBakeLoad(const std::string& method, double seconds) override;

  // The Prometheus text exposition of everything kept here (the caches read now). Called by
  // the metrics port's /metrics from its worker threads.
  std::string Render() const;

  // Per gRPC method: the series the interceptor updates, created once.
  struct MethodSeries {
    prometheus::Labels labels;  // grpc_service, grpc_method, grpc_type
    prometheus::Counter* started = nullptr;
    prometheus::Histogram* handling = nullptr;
    std::array<std::atomic<prometheus::Counter*>, 17> handled{};  // by code, added on first use
  };
  // The series of `full_method` ("/pkg.Service/Method"), created on first use.
  MethodSeries& GrpcMethod(absl::string_view full_method,
                           grpc::experimental::ServerRpcInfo::Type type);
  // grpc_server_handled_total for `series` and `code` (0..16; others count as UNKNOWN).
  prometheus::Counter& Handled(MethodSeries& series, int code);

 private:
  // Per bake method ("bbw", "bone_heat", "geodesic_voxel", ...).
  struct BakeSeries {
    prometheus::Gauge* queued = nullptr;
    prometheus::Gauge* running = nullptr;
    prometheus::Histogram* duration = nullptr;
    prometheus::Counter* done = nullptr;
    prometheus::Counter* failed = nullptr;
    prometheus::Counter* cancelled = nullptr;
    prometheus::Counter* loads = nullptr;
  };
  // Called with bakes_mu_ held.
  BakeSeries& Bake(const std::string& method);

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* started_;
  prometheus::Family<prometheus::Counter>* handled_;
  prometheus::Family<prometheus::Histogram>* handling_;
  prometheus::Family<prometheus::Gauge>* bakes_queued_;
  prometheus::Family<prometheus::Gauge>* bakes_running_;
  prometheus::Family<prometheus::Counter>* bakes_finished_;
  prometheus::Family<prometheus::Histogram>* bake_seconds_;
  prometheus::Family<prometheus::Counter>* bake_loads_;
  prometheus::Family<prometheus::Histogram>* frame_seconds_;
  prometheus::Family<prometheus::Counter>* store_errors_;
  std::vector<std::shared_ptr<CacheStatsCollectable>> caches_;
  std::function<BakeQueueStats()> bake_queue_;
  std::function<std::pair<int, int>()> uploads_;

  std::mutex methods_mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<MethodSeries>> methods_;  // by full method
  std::mutex bakes_mu_;
  absl::flat_hash_map<std::string, BakeSeries> bakes_;  // by method
  // By v1::Deformer value; filled on first use (the histogram references never move).
  std::array<std::atomic<prometheus::Histogram*>, 16> frames_by_deformer_{};
};

}  // namespace skinning

#endif  // SKINNING_SERVER_METRICS_METRICS_H_
