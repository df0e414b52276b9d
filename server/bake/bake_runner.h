// Computes a bake job and stores it: the rig, the bone weights it builds on, the core Bake with
// the recipe's options, then the StoredBake (header and the recipe's artifact) and the loaded
// form, in that order, so a bake is stored before its queue reports it done.
#ifndef SKINNING_SERVER_BAKE_BAKE_RUNNER_H_
#define SKINNING_SERVER_BAKE_BAKE_RUNNER_H_

#include <memory>
#include <string>

#include <Eigen/Core>

#include "absl/status/statusor.h"
#include "core/util/progress.h"
#include "server/bake/bake_queue.h"
#include "server/bake/bake_store.h"
#include "server/store/rig_store.h"

namespace skinning {

class BakeRunner {
 public:
  BakeRunner(RigStore* rigs, BakeStore* store) : rigs_(rigs), store_(store) {}

  // The stored header once stored; CANCELLED (nothing stored) when progress.Cancelled(); the
  // method's error otherwise. Runs on a queue's worker thread.
  absl::StatusOr<std::shared_ptr<const internal::v1::StoredBake>> Run(const BakeJob& job,
                                                                      const Progress& progress) const;

 private:
  // The #V by #J bone weights a method builds on: the rig's own (`weights_bake` empty) or the
  // named weights bake's.
  absl::StatusOr<Eigen::MatrixXd> SourceWeights(const LoadedRig& rig, const std::string& weights_bake) const;

  // NOT_FOUND "rig '…' was deleted <when>; nothing was stored" when the rig is no longer stored.
  absl::Status CheckRigStored(const std::string& rig_id, const char* when) const;

  RigStore* rigs_;
  BakeStore* store_;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_BAKE_BAKE_RUNNER_H_
