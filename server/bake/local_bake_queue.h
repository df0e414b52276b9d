// The bake queue of one process: a bounded pool of workers taking jobs from a bounded queue,
// with progress, cancellation and the state of ended jobs kept in memory (the last 1000).
#ifndef SKINNING_SERVER_BAKE_LOCAL_BAKE_QUEUE_H_
#define SKINNING_SERVER_BAKE_LOCAL_BAKE_QUEUE_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "core/util/progress.h"
#include "server/bake/bake_queue.h"
#include "server/bake/bake_store.h"

namespace skinning {

struct LocalBakeQueueOptions {
  int workers = 1;     // bakes computed at once
  int max_queue = 16;  // bakes waiting beyond the workers; more → RESOURCE_EXHAUSTED
};

// Computes a job and stores it (BakeRunner::Run in production): the stored header when done,
// CANCELLED when progress.Cancelled() stopped it, the method's error otherwise. Nothing may be
// stored unless it returns OK.
using BakeRunFunction = std::function<absl::StatusOr<std::shared_ptr<const internal::v1::StoredBake>>(
    const BakeJob& job, const Progress& progress)>;

class LocalBakeQueue final : public BakeQueue {
 public:
  // `store` answers for bakes without a job here; `observer` (may be null) must outlive this.
  LocalBakeQueue(BakeStore* store, BakeRunFunction run, LocalBakeQueueOptions options,
                 BakeObserver* observer = nullptr);
  ~LocalBakeQueue() override;  // Shutdown()

  absl::StatusOr<StartedBake> Start(const BakeJob& job) override;
  absl::StatusOr<v1::Bake> Get(const BakeRef& bake) override;
  std::optional<v1::Bake> Pending(const BakeRef& bake) override;
  absl::Status Watch(const BakeRef& bake, const std::function<bool(const v1::Bake&)>& on_change,
                     const std::function<bool()>& stop) override;
  absl::StatusOr<v1::Bake> Cancel(const BakeRef& bake) override;
  void Shutdown() override;

 private:
  struct Job;
  void WorkerLoop();
  void Run(const std::shared_ptr<Job>& job);
  // The jobs whose bake another running server on this store queued first (Job::left_to, in
  // waiting_): every 250 ms, CheckWaitingJob for each. They hold no worker while they wait.
  void WaitLoop();
  // Shows the other server's stage and progress (from the bake's record) while that server holds
  // the record; then ends the job SUCCEEDED from the store, or queues it to be computed here (the
  // record now this server's) when that server ended without storing the bake.
  void CheckWaitingJob(const std::shared_ptr<Job>& job);
  // The job of `bake` (its rig must match), or null; null too when it succeeded: a succeeded bake
  // is answered from the store, where it is gone once its rig is deleted (BakeStore::DeleteForRig).
  std::shared_ptr<Job> FindLocked(const BakeRef& bake) const;
  v1::Bake BakeLocked(const Job& job) const;
  // Sets the state (and the end time of a final one) and tells the observer; one not `counted`
  // is told as leaving its state only (BakeObserver: to UNSPECIFIED).
  void SetStateLocked(Job& job, v1::BakeState state, bool counted = true);
  // The stored bake's resource; NOT_FOUND naming the bake when it is not stored.
  absl::StatusOr<v1::Bake> Stored(const BakeRef& bake);
  void PruneLocked();
  // Writes the bake's record as this server's: the bytes written, or nullopt (and a line
  // printed) when the store fails.
  std::optional<std::string> PutPendingRecord(const BakeJob& spec);
  // Writes the job's stage and progress into its record when the stage changed, else at most once
  // a second, if the record is still this server's (else it is no longer owned: Job::owns_record).
  void UpdatePendingRecord(Job& job, const std::string& stage, double fraction);

  BakeStore* store_;
  const BakeRunFunction run_;
  const LocalBakeQueueOptions options_;
  BakeObserver* const observer_;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // any job changed, or the queue did
  std::map<std::string, std::shared_ptr<Job>> jobs_;  // by bake id
  std::deque<std::shared_ptr<Job>> queue_;
  std::vector<std::shared_ptr<Job>> waiting_;  // QUEUED jobs waiting for another server (WaitLoop)
  int busy_ = 0;  // workers running a job
  bool stopping_ = false;
  std::vector<std::thread> workers_;
  std::thread waiter_;  // WaitLoop
};

}  // namespace skinning

#endif  // SKINNING_SERVER_BAKE_LOCAL_BAKE_QUEUE_H_
