#include "server/api/bake_api.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"
#include "server/convert/convert.h"
#include "server/names.h"

namespace skinning {

absl::Status BakeApi::StartBake(const CallContext& ctx, const v1::StartBakeRequest& req,
                                v1::StartBakeResponse* resp) {
  ASSIGN_OR_RETURN(const std::string rig_id, ParseRigName(req.parent(), "parent"));
  RETURN_IF_ERROR(bakes_->rigs().CheckAccess(rig_id, ctx.tenant()));
  // The store, not a cache: a rig deleted on another replica was queued and failed later.
  ASSIGN_OR_RETURN(const bool stored, bakes_->rigs().Stored(rig_id));
  if (!stored) return absl::NotFoundError(absl::StrCat("rig '", RigName(rig_id), "' not found"));
  ASSIGN_OR_RETURN(StartedBake started, bakes_->Start(rig_id, req.options(), ctx.tenant()));
  *resp->mutable_bake() = std::move(started.bake);
  resp->set_created(started.created);
  return absl::OkStatus();
}

absl::Status BakeApi::GetBake(const CallContext& ctx, const v1::GetBakeRequest& req, v1::Bake* resp) {
  ASSIGN_OR_RETURN(const BakeRef ref, bakes_->Access(ctx.tenant(), req.name(), "name"));
  ASSIGN_OR_RETURN(*resp, bakes_->queue().Get(ref));
  return absl::OkStatus();
}

absl::Status BakeApi::WatchBake(const CallContext& ctx, const v1::WatchBakeRequest& req,
                                const std::function<bool(const v1::Bake&)>& write) {
  ASSIGN_OR_RETURN(const BakeRef ref, bakes_->Access(ctx.tenant(), req.name(), "name"));
  absl::Status s = bakes_->queue().Watch(ref, write, [&ctx] { return ctx.cancelled() || ctx.draining(); });
  if (absl::IsCancelled(s) && ctx.draining()) return DrainingWatchError();
  return s;
}

absl::Status BakeApi::CancelBake(const CallContext& ctx, const v1::CancelBakeRequest& req, v1::Bake* resp) {
  ASSIGN_OR_RETURN(const BakeRef ref, bakes_->Access(ctx.tenant(), req.name(), "name"));
  ASSIGN_OR_RETURN(*resp, bakes_->queue().Cancel(ref));
  return absl::OkStatus();
}

absl::Status BakeApi::GetWeights(const CallContext& ctx, const v1::GetWeightsRequest& req,
                                 v1::GetWeightsResponse* resp) {
  ASSIGN_OR_RETURN(const BakeRef ref, bakes_->Access(ctx.tenant(), req.bake(), "bake"));
  if (!v1::WeightsFormat_IsValid(req.format()))
    return absl::InvalidArgumentError(
        absl::StrFormat("format = %d is not a WeightsFormat", static_cast<int>(req.format())));
  ASSIGN_OR_RETURN(std::shared_ptr<const LoadedBake> bake, bakes_->Result(ref));
  // The method's extra channels, or its refusal (a bake without weights).
  RETURN_IF_ERROR(bake->recipe->FillWeights(*bake, resp));
  resp->set_bake(bake->name);
  *resp->mutable_report() = bake->report();
  if (req.format() == v1::WEIGHTS_FORMAT_DENSE) {
    DenseToProto(bake->dense, resp->mutable_weights()->mutable_dense());
    return absl::OkStatus();
  }
  const int k = req.influence_count() == 0 ? bake->sparse.k() : req.influence_count();
  if (k < 1 || k > BakeOptions::kMaxInfluences)
    return absl::InvalidArgumentError(
        absl::StrFormat("influence_count = %d must be in [1, %d]", k, BakeOptions::kMaxInfluences));
  SparseToProto(k == bake->sparse.k() ? bake->sparse : TopK(bake->dense, std::min<int>(k, bake->dense.cols())),
                resp->mutable_weights()->mutable_sparse());
  return absl::OkStatus();
}

}  // namespace skinning
