#include "server/bake/bake_runner.h"

#include <chrono>

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

absl::StatusOr<std::shared_ptr<const internal::v1::StoredBake>> BakeRunner::Run(const BakeJob& job,
                                                                                const Progress& progress) const {
  const Recipe& recipe = *job.recipe;
  ASSIGN_OR_RETURN(std::shared_ptr<const LoadedRig> rig, rigs_->Get(job.rig_id));
  BakeOptions options = CoreBakeOptions(job.options, recipe, *rig);
  if (recipe.WeightsSourceField() != nullptr) {
    ASSIGN_OR_RETURN(options.source_weights, SourceWeights(*rig, recipe.WeightsSource(job.options)));
  }
  ASSIGN_OR_RETURN(BakeResult result, recipe.Run(job.options, options, *rig, progress));
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
  if (absl::Status s = store_->Put(stored, loaded); !s.ok())
    return absl::Status(s.code(), absl::StrCat("storing the bake: ", s.message()));
  return loaded->header;
}

}  // namespace skinning
