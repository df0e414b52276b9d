#include "server/bake/bake_runner.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "server/bake/bake_options.h"
#include "server/convert/convert.h"

namespace skinning {

absl::StatusOr<Eigen::MatrixXd> BakeRunner::SourceWeights(const LoadedRig& rig, const std::string& weights_bake) const {
  if (weights_bake.empty()) {
    if (!rig.rig.has_weights())
      return absl::FailedPreconditionError(absl::StrCat("rig '", RigName(rig.id), "' has no weights"));
    return ToDense(rig.weights, rig.rig.skeleton.size());
  }
  ASSIGN_OR_RETURN(const BakeRef ref, ParseBakeName(weights_bake, "weights_bake"));
  ASSIGN_OR_RETURN(std::shared_ptr<const LoadedBake> source, store_->Load(ref.bake_id));
  if (!source->bone_weights)
    return absl::InvalidArgumentError(absl::StrCat("bake '", weights_bake, "' holds no bone weights"));
  return source->dense;
}

static absl::Status RigDeleted(const std::string& rig_id, const char* when) {
  // "Deleted" is what the server sees; a store that lost its data (Redis emptied or restarted
  // without persistence) looks the same, and the caller then only needs to register it again.
  return absl::NotFoundError(absl::StrCat("rig '", RigName(rig_id), "' was deleted ", when,
                                          " (by DeleteRig, or the store lost it: register it again); nothing was stored"));
}

absl::Status BakeRunner::CheckRigStored(const std::string& rig_id, const char* when) const {
  ASSIGN_OR_RETURN(const bool stored, rigs_->Stored(rig_id));
  return stored ? absl::OkStatus() : RigDeleted(rig_id, when);
}

absl::StatusOr<std::shared_ptr<const internal::v1::StoredBake>> BakeRunner::Run(const BakeJob& job,
                                                                                const Progress& progress) const {
  const Recipe& recipe = *job.recipe;
  // A rig deleted (on any replica) while its bake waited or ran: a replica that still caches it
  // would bake it, and the result would be stored where no call can reach it (every call on a
  // bake checks access to its rig).
  RETURN_IF_ERROR(CheckRigStored(job.rig_id, "while its bake was queued"));
  // While it runs, a watcher asks the store once a second: a deleted rig stops the bake (within
  // about a second and the method's next cancellation check), as CancelBake would.
  auto gone = std::make_shared<std::atomic<bool>>(false);
  struct Stop {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
  };
  auto stop = std::make_shared<Stop>();
  std::thread watcher([rigs = rigs_, rig_id = job.rig_id, gone, stop] {
    std::unique_lock<std::mutex> lock(stop->mu);
    while (!stop->cv.wait_for(lock, std::chrono::seconds(1), [&stop] { return stop->done; })) {
      lock.unlock();
      const absl::StatusOr<bool> stored = rigs->Stored(rig_id);
      lock.lock();
      if (stored.ok() && !*stored) {  // a store error is not a deletion: go on
        *gone = true;
        return;
      }
    }
  });
  absl::Cleanup stop_watcher = [&stop, &watcher] {
    {
      std::lock_guard<std::mutex> lock(stop->mu);
      stop->done = true;
    }
    stop->cv.notify_all();
    watcher.join();
  };
  const Progress watched = progress.AlsoCancelledBy(gone);
  ASSIGN_OR_RETURN(std::shared_ptr<const LoadedRig> rig, rigs_->Get(job.rig_id));
  BakeOptions options = CoreBakeOptions(job.options, recipe, *rig);
  if (recipe.WeightsSourceField() != nullptr) {
    ASSIGN_OR_RETURN(options.source_weights, SourceWeights(*rig, recipe.WeightsSource(job.options)));
  }
  absl::StatusOr<BakeResult> ran = recipe.Run(job.options, options, *rig, watched);
  if (*gone) return RigDeleted(job.rig_id, "while its bake ran");
  RETURN_IF_ERROR(ran.status());
  BakeResult result = *std::move(ran);
  RETURN_IF_ERROR(progress.CheckCancelled());
  progress.Report("storing", 1.0);

  internal::v1::StoredBake stored;
  stored.set_format_version(kBakeFormatVersion);
  stored.set_bake_id(job.bake_id);
  stored.set_rig_id(job.rig_id);
  *stored.mutable_options() = job.options;
  *stored.mutable_report() = BakeReportToProto(result.report);
  stored.mutable_report()->set_method(recipe.name());  // the API's name of the method, not a variant's
  stored.set_created_unix_ms(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
  stored.set_tenant(job.tenant);
  if (job.create_time.seconds() != 0) *stored.mutable_create_time() = job.create_time;
  if (job.start_time.seconds() != 0) *stored.mutable_start_time() = job.start_time;
  recipe.Store(result, stored.mutable_artifact());

  ASSIGN_OR_RETURN(std::shared_ptr<const LoadedBake> loaded,
                   PrepareBake(recipe, StoredBakeHeader(stored), std::move(result), *rig));
  RETURN_IF_ERROR(CheckRigStored(job.rig_id, "while its bake ran"));
  if (absl::Status s = store_->Put(stored, loaded); !s.ok())
    return absl::Status(s.code(), absl::StrCat("storing the bake: ", s.message()));
  // A DeleteRig that ran between the check above and the Put may have listed the rig's bakes
  // before this one's index entry was written. Its rig was then gone before this check, so the
  // bake never outlives its rig. (A store error here is not a deletion: the bake stays stored.)
  if (absl::Status s = CheckRigStored(job.rig_id, "while its bake was being stored"); absl::IsNotFound(s)) {
    (void)store_->Delete(job.rig_id, job.bake_id);
    return s;
  }
  return loaded->header;
}

}  // namespace skinning
