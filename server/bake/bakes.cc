#include "server/bake/bakes.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "core/rig/bones.h"
#include "core/util/status_macros.h"
#include "server/bake/bake_options.h"

namespace skinning {
namespace {

// "SUCCEEDED" for BAKE_STATE_SUCCEEDED, and so on.
std::string StateName(v1::BakeState s) { return std::string(absl::StripPrefix(v1::BakeState_Name(s), "BAKE_STATE_")); }

absl::Status NotRun(const BakeRef& bake) {
  return absl::FailedPreconditionError(absl::StrCat(
      "bake '", bake.name(), "' has not been run: start it with StartBake for this rig and options first"));
}

}  // namespace

absl::Status Bakes::CheckNotPending(const BakeRef& bake) {
  std::optional<v1::Bake> pending = queue_->Pending(bake);
  if (!pending.has_value()) return absl::OkStatus();
  const v1::BakeMetadata& m = pending->metadata();
  return absl::FailedPreconditionError(absl::StrFormat(
      "bake '%s' is %s (%.0f%%%s): wait for it with WatchBake%s", bake.name(), StateName(m.state()),
      100 * m.progress_fraction(), pending->has_error() ? absl::StrCat(", ", pending->error().message()) : "",
      pending->done() ? " after starting it again with StartBake" : ""));
}

absl::StatusOr<BakeRef> Bakes::Access(const std::string& tenant, const std::string& name, const char* field) {
  ASSIGN_OR_RETURN(BakeRef ref, ParseBakeName(name, field));
  if (absl::Status access = rigs_->CheckAccess(ref.rig_id, tenant); !access.ok())
    return absl::Status(access.code(), absl::StrCat("bake '", name, "': ", access.message()));
  return ref;
}

absl::StatusOr<std::shared_ptr<const LoadedBake>> Bakes::Result(const BakeRef& bake) {
  RETURN_IF_ERROR(CheckNotPending(bake));
  absl::StatusOr<std::shared_ptr<const LoadedBake>> loaded = store_->Load(bake.bake_id);
  if (absl::IsNotFound(loaded.status()) || (loaded.ok() && (*loaded)->rig_id != bake.rig_id)) {
    // Without tenants, Access lets a rig through that is not in the cache (it is read when used):
    // a bake of a rig that is not stored is the rig's NOT_FOUND, not a bake to run.
    ASSIGN_OR_RETURN(const bool rig_stored, rigs_->Stored(bake.rig_id));
    if (!rig_stored) return absl::NotFoundError(absl::StrCat("bake '", bake.name(), "': rig '", RigName(bake.rig_id), "' not found"));
    return NotRun(bake);
  }
  return loaded;
}

absl::Status Bakes::StillStored(const std::string& tenant, const std::string& rig_id, const std::string& bake_id) {
  RETURN_IF_ERROR(rigs_->CheckAccess(rig_id, tenant));
  ASSIGN_OR_RETURN(const bool rig_stored, rigs_->Stored(rig_id));
  if (!rig_stored)
    return absl::NotFoundError(absl::StrCat("rig '", RigName(rig_id), "' was deleted while the session was open"));
  if (bake_id.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(const bool bake_stored, store_->Stored(bake_id));
  if (!bake_stored)
    return absl::NotFoundError(
        absl::StrCat("bake '", BakeName(rig_id, bake_id), "' was deleted while the session was open"));
  return absl::OkStatus();
}

absl::Status Bakes::CheckWeightsSource(const LoadedRig& rig, const Recipe& recipe, const v1::BakeOptions& options) {
  const char* field = recipe.WeightsSourceField();
  const std::string source = recipe.WeightsSource(options);
  if (source.empty()) {
    if (rig.rig.has_weights()) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat("rig '", RigName(rig.id), "' has no weights for ", recipe.name(),
                                                      ": bake weights first (StartBake with options.bbw) and give "
                                                      "its name as ",
                                                      field));
  }
  ASSIGN_OR_RETURN(const BakeRef ref, ParseBakeName(source, field));
  const std::string not_weights =
      absl::StrCat(field, " '", source, "' is not a bake of bone weights of rig '", RigName(rig.id), "'");
  if (ref.rig_id != rig.id) return absl::InvalidArgumentError(not_weights);
  RETURN_IF_ERROR(CheckNotPending(ref));
  absl::StatusOr<std::shared_ptr<const internal::v1::StoredBake>> header = store_->Header(ref.bake_id);
  if (absl::IsNotFound(header.status())) return NotRun(ref);
  RETURN_IF_ERROR(header.status());
  const Recipe* source_recipe = recipes_->Find((*header)->options().method_case());
  if ((*header)->rig_id() != rig.id || source_recipe == nullptr || !source_recipe->HasBoneWeights())
    return absl::InvalidArgumentError(not_weights);
  return absl::OkStatus();
}

absl::StatusOr<StartedBake> Bakes::Start(const std::string& rig_id, const v1::BakeOptions& options,
                                         const std::string& tenant) {
  ASSIGN_OR_RETURN(std::shared_ptr<const LoadedRig> rig, rigs_->Get(rig_id));
  ASSIGN_OR_RETURN(NormalizedBakeOptions normalized, NormalizeBakeOptions(options, *recipes_));
  // What can be refused at once is refused at once (bone geometry); the rest (a mesh with no
  // inside, a skeleton outside the mesh) shows when the domain is built and fails the bake.
  RETURN_IF_ERROR(JointHandles(rig->rig.skeleton).status());
  if (normalized.recipe->WeightsSourceField() != nullptr)
    RETURN_IF_ERROR(CheckWeightsSource(*rig, *normalized.recipe, normalized.options));
  BakeJob job;
  job.rig_id = rig_id;
  job.bake_id = BakeId(rig_id, normalized.options);
  job.options = std::move(normalized.options);
  job.recipe = normalized.recipe;
  job.tenant = tenant;
  return queue_->Start(job);
}

}  // namespace skinning
