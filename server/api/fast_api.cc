#include "server/api/fast_api.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"

namespace skinning {

absl::StatusOr<std::unique_ptr<FastFrameSolver>> FastApi::Open(const CallContext& ctx, const std::string& bake) {
  ASSIGN_OR_RETURN(const BakeRef ref, bakes_->Access(ctx.tenant(), bake, "bake"));
  ASSIGN_OR_RETURN(std::shared_ptr<const LoadedBake> loaded, bakes_->Result(ref));
  ASSIGN_OR_RETURN(std::shared_ptr<const LoadedRig> rig, bakes_->rigs().Get(ref.rig_id));
  return FastFrameSolver::Open(std::move(loaded), std::move(rig));
}

bool FastApi::Resident(const CallContext& ctx, const v1::SolveRequest& req) {
  absl::StatusOr<BakeRef> ref = ParseBakeName(req.bake(), "bake");
  return !ref.ok() || bakes_->Resident(ctx.tenant(), *ref);  // a malformed name: refused at once
}

absl::Status FastApi::Solve(const CallContext& ctx, const v1::SolveRequest& req, v1::SolveResponse* resp) {
  RETURN_IF_ERROR(ctx.StillWanted());
  ASSIGN_OR_RETURN(std::unique_ptr<FastFrameSolver> solver, Open(ctx, req.bake()));
  if (req.warm_start_size() != 0) RETURN_IF_ERROR(solver->WarmStart(req.warm_start()));
  const absl::Status s = solver->Solve(req.constraints(), req.iteration_count(), req.outputs(),
                                       [&ctx] { return ctx.StillWanted(); }, resp->mutable_solution());
  bakes_->store().ChargeGrowth(solver->bake());  // a new constraint set's operators
  return s;
}

absl::Status FastApi::Session::Step(const v1::SolveSessionRequest& req, v1::SolveSessionResponse* resp) {
  if (ctx_.draining()) return DrainingSessionError();
  if (solver_ == nullptr) {
    ASSIGN_OR_RETURN(solver_, api_->Open(ctx_, req.bake()));
    recheck_.Restart();
  } else if (!req.bake().empty() && req.bake() != solver_->bake().name) {
    return absl::InvalidArgumentError(
        absl::StrCat("bake '", req.bake(), "' differs from the session's '", solver_->bake().name, "'"));
  } else if (recheck_.Due()) {
    const LoadedBake& bake = solver_->bake();
    if (absl::Status s = api_->bakes_->StillStored(ctx_.tenant(), bake.rig_id, bake.bake_id); !s.ok())
      return SessionTargetGone(frames_ + 1, s);
  }
  resp->Clear();
  resp->set_sequence(req.sequence());
  absl::Status s = solver_->Solve(req.constraints(), req.iteration_count(), req.outputs(), nullptr,
                                  resp->mutable_solution());
  api_->bakes_->store().ChargeGrowth(solver_->bake());  // a new constraint set's operators
  if (!s.ok())
    return absl::Status(s.code(), absl::StrFormat("frame %d: %s", frames_ + 1, s.message()));  // from 1
  ++frames_;
  return absl::OkStatus();
}

}  // namespace skinning
