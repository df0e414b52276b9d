// What the services use to reach bakes: starting one (options filled in and every input checked
// before anything is queued), and a bake's result for posing, GetWeights and FAST solves.
// Status checks go to the queue (BakeQueue::Get / Watch / Cancel), which never loads a result.
#ifndef SKINNING_SERVER_BAKE_BAKES_H_
#define SKINNING_SERVER_BAKE_BAKES_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/bake/bake_queue.h"
#include "server/bake/bake_store.h"
#include "server/bake/recipe.h"
#include "server/names.h"
#include "server/store/rig_store.h"

namespace skinning {

class Bakes {
 public:
  // Nothing is owned; everything must outlive this object.
  Bakes(RigStore* rigs, BakeStore* store, BakeQueue* queue, const RecipeRegistry* recipes)
      : rigs_(rigs), store_(store), queue_(queue), recipes_(recipes) {}

  // Normalizes the options (INVALID_ARGUMENT naming the field), checks what can be refused at
  // once (the rig's bones; the bone weights a method builds on: FAILED_PRECONDITION when the rig
  // has none and no weights bake is named, or the named bake has not been run), then starts or
  // finds the bake. No access check: the caller has checked the tenant's access to the rig.
  absl::StatusOr<StartedBake> Start(const std::string& rig_id, const v1::BakeOptions& options,
                                    const std::string& tenant);
  // The bake named `name` (request field `field`) when `tenant` may use its rig:
  // INVALID_ARGUMENT for a malformed name, PERMISSION_DENIED / NOT_FOUND for the rig (messages
  // start with the bake's name).
  absl::StatusOr<BakeRef> Access(const std::string& tenant, const std::string& name, const char* field);
  // A finished bake, loaded. FAILED_PRECONDITION naming the state when it is queued, running,
  // failed or cancelled, or naming the call to make when it has not been run.
  absl::StatusOr<std::shared_ptr<const LoadedBake>> Result(const BakeRef& bake);
  // Whether Access and Result would answer from memory now, asking the store nothing (see
  // RigStore::Resident): with a shared queue, whose job records are in the store, never.
  bool Resident(const std::string& tenant, const BakeRef& bake) {
    return rigs_->Resident(bake.rig_id, tenant) && queue_->PendingFromMemory() && store_->Resident(bake.bake_id);
  }
  // For an open session: whether `tenant` may still use the rig, and the rig and the bake
  // (`bake_id` "" for none) are still stored, asking the store rather than the caches (another
  // replica may have deleted them). NOT_FOUND "rig 'rigs/X' was deleted while the session was open" (or the bake),
  // PERMISSION_DENIED as Access.
  absl::Status StillStored(const std::string& tenant, const std::string& rig_id, const std::string& bake_id);

  BakeQueue& queue() { return *queue_; }
  BakeStore& store() { return *store_; }
  RigStore& rigs() { return *rigs_; }

 private:
  // FAILED_PRECONDITION when the bake's job has not succeeded (it is queued, running, failed or
  // cancelled), naming its state.
  absl::Status CheckNotPending(const BakeRef& bake);
  // The weights bake a method builds on must be a finished bake of bone weights of the same rig.
  absl::Status CheckWeightsSource(const LoadedRig& rig, const Recipe& recipe, const v1::BakeOptions& options);

  RigStore* rigs_;
  BakeStore* store_;
  BakeQueue* queue_;
  const RecipeRegistry* recipes_;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_BAKE_BAKES_H_
