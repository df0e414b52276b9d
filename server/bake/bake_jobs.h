// Bakes as jobs: a bounded worker pool with a bounded queue, content-addressed job ids, progress
// and cancellation, results stored atomically before they are reported done.
#ifndef SKINNING_SERVER_BAKE_BAKE_JOBS_H_
#define SKINNING_SERVER_BAKE_BAKE_JOBS_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <Eigen/Core>

#include "absl/status/statusor.h"
#include "core/rig/joint_frames.h"
#include "core/skinning/stbs.h"
#include "core/skinning/swing_twist.h"
#include "core/skinning/weights.h"
#include "core/solve/elastic.h"
#include "core/solve/fast_skinning.h"
#include "core/weights/bake.h"
#include "server/store/blob_store.h"
#include "server/store/lru_cache.h"
#include "server/store/rig_store.h"
#include "skinning/v1/skinning.pb.h"
#include "skinning/v1/store.pb.h"

namespace skinning {

// Version of the StoredBake layout; readers refuse other versions.
inline constexpr uint32_t kBakeFormatVersion = 1;

// A finished bake, ready for posing and GetWeights.
struct LoadedBake {
  std::string bake_id;
  std::string rig_id;
  v1::BakeOptions options;
  v1::BakeReport report;
  Eigen::MatrixXd dense;  // #V by #joints (weights bakes); #V by (m + extra) (FAST models)
  SparseWeights sparse;   // top options.influences of dense (FAST: exact, every non-zero)
  // BAKE_METHOD_FAST_MODEL only: the reduced model and the joint of each of its m handles.
  FastModelPtr fast;
  std::vector<int> fast_handle_joints;
  // BAKE_METHOD_SWING_TWIST: dense/sparse hold the deformer weights d; swing s and twist t are
  // #V by #joints; swing_twist is the per-frame layout (top options.influences deformers).
  Eigen::MatrixXd swing, twist;
  std::shared_ptr<const SwingTwistWeights> swing_twist;
  std::vector<JointFrame> frames;
  // BAKE_METHOD_ENDPOINT: dense/sparse hold the bone weights; endpoint e is #V by #joints, and
  // endpoint_aligned (#V by k) follows sparse's slots.
  Eigen::MatrixXd endpoint;
  RowMatrixXf endpoint_aligned;
  std::vector<StbsBone> bones;
  // BAKE_METHOD_ELASTIC_MODEL: the prefactored gold-standard model (no weights).
  std::shared_ptr<const ElasticModel> elastic;
  size_t bytes = 0;

  bool has_weights() const { return !fast && !swing_twist && !elastic; }
};

struct BakeJobsOptions {
  int workers = 1;            // bakes computed at once
  int max_queue = 16;         // bakes waiting beyond the workers; more → RESOURCE_EXHAUSTED
  size_t cache_bytes = size_t{256} << 20;  // finished bakes kept in memory
};

// A bake job's change of state. `from` is BAKE_STATE_UNSPECIFIED for a job just queued;
// `run_seconds` is the time since the job started running when it ends after running, else 0.
struct BakeTransition {
  v1::BakeMethod method = v1::BAKE_METHOD_UNSPECIFIED;  // normalized (never UNSPECIFIED)
  v1::BakeState from = v1::BAKE_STATE_UNSPECIFIED;
  v1::BakeState to = v1::BAKE_STATE_UNSPECIFIED;
  double run_seconds = 0.0;
};

// Watches bake jobs (for metrics). Called with BakeJobs' lock held: be quick, do not call back.
class BakeObserver {
 public:
  virtual ~BakeObserver() = default;
  virtual void OnBakeTransition(const BakeTransition& transition) = 0;
};

class BakeJobs {
 public:
  // `observer` (may be null) must outlive this object.
  BakeJobs(RigStore* rigs, std::shared_ptr<BlobStore> blobs, BakeJobsOptions options,
           BakeObserver* observer = nullptr);
  ~BakeJobs();  // Shutdown()

  // Validates, normalizes the options (defaults filled in) and returns the bake's status: an
  // existing queued/running job or stored result (reused = true), or a new queued job.
  absl::StatusOr<v1::BakeStatus> Start(const std::string& rig_id, const v1::BakeOptions& options);
  // NOT_FOUND for a bake neither running nor stored.
  absl::StatusOr<v1::BakeStatus> Get(const std::string& bake_id);
  // Calls on_status with the current status, then after every change, until the bake ends,
  // on_status returns false, or stop() returns true (polled every 100 ms).
  absl::Status Watch(const std::string& bake_id,
                     const std::function<bool(const v1::BakeStatus&)>& on_status,
                     const std::function<bool()>& stop);
  // Cancels a queued or running bake and waits (up to 5 s) for it to stop; returns the final
  // status. A finished bake is returned unchanged.
  absl::StatusOr<v1::BakeStatus> Cancel(const std::string& bake_id);
  // A finished bake's weights; FAILED_PRECONDITION naming the state when it is not done, or
  // naming the bake to run when it is unknown.
  absl::StatusOr<std::shared_ptr<const LoadedBake>> Result(const std::string& bake_id);

  RigStore* rigs() const { return rigs_; }

  // Cancels queued and running bakes and stops the workers.
  void Shutdown();

  // The in-memory cache of finished bakes.
  CacheStats cache_stats() const { return cache_.stats(); }

  // "bake-" + 32 hex digits of SHA-256 over the rig id and the normalized options.
  static std::string BakeId(const std::string& rig_id, const v1::BakeOptions& normalized);
  static absl::Status CheckBakeId(const std::string& bake_id);
  // Fills defaults and checks ranges: "options.voxel_resolution = 300 is over the limit (256)".
  static absl::StatusOr<v1::BakeOptions> NormalizeOptions(const v1::BakeOptions& options);

 private:
  struct Job;
  void WorkerLoop();
  void Run(const std::shared_ptr<Job>& job);
  void RunFast(const std::shared_ptr<Job>& job, const LoadedRig& rig, const Progress& progress);
  void RunSwingTwist(const std::shared_ptr<Job>& job, const LoadedRig& rig, const Progress& progress);
  void RunEndpoint(const std::shared_ptr<Job>& job, const LoadedRig& rig, const Progress& progress);
  void RunElastic(const std::shared_ptr<Job>& job, const LoadedRig& rig, const Progress& progress);
  // Ends a job that failed (or was cancelled: a CANCELLED status or the job's cancel flag).
  void Fail(const std::shared_ptr<Job>& job, absl::Status status);
  // The bone weights a bake uses: the rig's own, or the weights bake `source`'s (#V by #joints).
  absl::StatusOr<Eigen::MatrixXd> SourceWeights(const LoadedRig& rig, const std::string& source);
  // Stores the artifact atomically, caches it, then reports DONE (or FAILED/CANCELLED).
  void StoreAndFinish(const std::shared_ptr<Job>& job, const v1::BakeReport& report, v1::StoredBake stored,
                      std::shared_ptr<LoadedBake> loaded);
  v1::BakeStatus StatusLocked(const Job& job) const;
  // Sets job.state and tells the observer.
  void SetStateLocked(Job& job, v1::BakeState state);
  absl::StatusOr<v1::BakeStatus> StoredStatus(const std::string& bake_id);
  absl::StatusOr<std::shared_ptr<const LoadedBake>> Load(const std::string& bake_id);
  void PruneLocked();

  RigStore* rigs_;
  std::shared_ptr<BlobStore> blobs_;
  const BakeJobsOptions options_;
  BakeObserver* const observer_;
  LruCache<LoadedBake> cache_;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // any job changed, or the queue did
  std::map<std::string, std::shared_ptr<Job>> jobs_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_BAKE_BAKE_JOBS_H_
