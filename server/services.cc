#include "server/services.h"

#include <algorithm>
#include <chrono>
#include <functional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "server/convert/convert.h"
#include "server/grpc_status.h"
#include "server/posing.h"
#include "core/rig/skeleton.h"
#include "core/skinning/lbs.h"
#include "core/solve/fast_skinning.h"

// Authenticates the call with `auth_` (UNAUTHENTICATED ends it) and declares `tenant`, the
// caller's tenant.
#define SKINNING_AUTHENTICATE_OR_RETURN(tenant, ctx)                     \
  absl::StatusOr<std::string> tenant##_or = auth_->Authenticate(*(ctx)); \
  if (!tenant##_or.ok()) return ToGrpcStatus(tenant##_or.status());      \
  const std::string tenant = *std::move(tenant##_or)

// The start of every handler: refuse the call while the server drains (the client retries on
// another replica), then authenticate it and declare `tenant`.
#define SKINNING_BEGIN_CALL(tenant, ctx)      \
  if (draining_->load()) return Draining(); \
  SKINNING_AUTHENTICATE_OR_RETURN(tenant, ctx)

namespace skinning {
namespace {

// Calls that arrive while the server drains: the client retries them on another replica.
grpc::Status Draining() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, "server is shutting down; retry on another replica");
}

}  // namespace

absl::Status DeadlinePassed(const grpc::ServerContext& ctx) {
  if (std::chrono::system_clock::now() < ctx.deadline()) return absl::OkStatus();
  return absl::DeadlineExceededError("the call's deadline passed before the work was done; the work was stopped");
}

absl::Status StillWanted(const grpc::ServerContext& ctx) {
  if (absl::Status s = DeadlinePassed(ctx); !s.ok()) return s;
  if (ctx.IsCancelled()) return absl::CancelledError("the client cancelled the call; the work was stopped");
  return absl::OkStatus();
}

absl::Status CheckBakeAccess(BakeJobs* bakes, const std::string& bake_id,
                             const std::string& tenant) {
  if (tenant.empty()) return absl::OkStatus();
  absl::StatusOr<v1::BakeStatus> status = bakes->Get(bake_id);
  if (absl::IsNotFound(status.status())) return absl::OkStatus();
  if (!status.ok()) return status.status();
  absl::Status access = bakes->rigs()->CheckAccess(status->rig_id(), tenant);
  if (!access.ok())
    return absl::Status(access.code(), absl::StrCat("bake '", bake_id, "': ", access.message()));
  return absl::OkStatus();
}

grpc::Status RigServiceImpl::RegisterRig(grpc::ServerContext* ctx,
                                         const v1::RegisterRigRequest* req,
                                         v1::RegisterRigResponse* resp) {
  SKINNING_BEGIN_CALL(tenant, ctx);
  if (!req->has_rig()) return ToGrpcStatus(absl::InvalidArgumentError("rig is required"));
  if (absl::Status s = StillWanted(*ctx); !s.ok()) return ToGrpcStatus(s);
  // Checked again between validation, hashing and storing (each linear in the rig's size).
  absl::StatusOr<RegisterResult> r =
      store_->Register(req->rig(), tenant, [ctx] { return StillWanted(*ctx); });
  if (!r.ok()) return ToGrpcStatus(r.status());
  resp->set_rig_id(r->rig_id);
  resp->set_created(r->created);
  *resp->mutable_info() = r->info;
  return grpc::Status::OK;
}

grpc::Status RigServiceImpl::GetRig(grpc::ServerContext* ctx, const v1::GetRigRequest* req,
                                    v1::GetRigResponse* resp) {
  SKINNING_BEGIN_CALL(tenant, ctx);
  absl::StatusOr<std::shared_ptr<const LoadedRig>> rig =
      store_->GetForTenant(req->rig_id(), tenant);
  if (!rig.ok()) return ToGrpcStatus(rig.status());
  *resp->mutable_info() = (*rig)->info;
  if (req->include_rig()) *resp->mutable_rig() = RigToProto((*rig)->rig);
  return grpc::Status::OK;
}

grpc::Status RigServiceImpl::ListRigs(grpc::ServerContext* ctx, const v1::ListRigsRequest* req,
                                      v1::ListRigsResponse* resp) {
  SKINNING_BEGIN_CALL(tenant, ctx);
  if (req->page_size() > 1000)
    return ToGrpcStatus(absl::InvalidArgumentError(
        absl::StrFormat("page_size %u exceeds 1000", req->page_size())));
  const size_t page = req->page_size() == 0 ? 100 : req->page_size();
  absl::StatusOr<std::vector<v1::RigInfo>> all = store_->List(tenant);
  if (!all.ok()) return ToGrpcStatus(all.status());
  // The page token is the last id of the previous page; ids are sorted.
  auto it = all->begin();
  if (!req->page_token().empty()) {
    it = std::upper_bound(all->begin(), all->end(), req->page_token(),
                          [](const std::string& token, const v1::RigInfo& info) { return token < info.rig_id(); });
  }
  for (; it != all->end() && static_cast<size_t>(resp->rigs_size()) < page; ++it) *resp->add_rigs() = *it;
  if (it != all->end() && resp->rigs_size() > 0)
    resp->set_next_page_token(resp->rigs(resp->rigs_size() - 1).rig_id());
  return grpc::Status::OK;
}

grpc::Status RigServiceImpl::DeleteRig(grpc::ServerContext* ctx, const v1::DeleteRigRequest* req,
                                       v1::DeleteRigResponse* resp) {
  SKINNING_BEGIN_CALL(tenant, ctx);
  absl::StatusOr<bool> deleted = store_->Delete(req->rig_id(), tenant);
  if (!deleted.ok()) return ToGrpcStatus(deleted.status());
  if (!*deleted) return ToGrpcStatus(absl::NotFoundError(absl::StrCat("rig '", req->rig_id(), "' not found")));
  // Every tenant's examples go with the stored rig; while another tenant still owns it, only the
  // caller's go (with its ownership).
  if (examples_ != nullptr) {
    const absl::Status s = absl::IsNotFound(store_->Get(req->rig_id()).status())
                               ? examples_->DeleteEveryTenant(req->rig_id())
                               : examples_->DeleteAll(req->rig_id(), tenant);
    if (!s.ok()) return ToGrpcStatus(s);
  }
  resp->set_deleted(true);
  return grpc::Status::OK;
}

absl::StatusOr<std::shared_ptr<const LoadedRig>> RigServiceImpl::ExampleRig(const std::string& rig_id,
                                                                          const std::string& tenant) const {
  if (examples_ == nullptr) return absl::UnimplementedError("examples are not enabled");
  // The rig itself, not only the access: an unknown (or deleted) rig is NOT_FOUND.
  return store_->GetForTenant(rig_id, tenant);
}

grpc::Status RigServiceImpl::AddExample(grpc::ServerContext* ctx, const v1::AddExampleRequest* req,
                                        v1::AddExampleResponse* resp) {
  SKINNING_BEGIN_CALL(tenant, ctx);
  absl::StatusOr<std::shared_ptr<const LoadedRig>> rig = ExampleRig(req->rig_id(), tenant);
  if (!rig.ok()) return ToGrpcStatus(rig.status());
  absl::StatusOr<v1::Example> example = ResolveExample(**rig, *req);
  if (!example.ok()) return ToGrpcStatus(example.status());
  const LoadedRig& r = **rig;
  absl::StatusOr<v1::AddExampleResponse> added = examples_->Add(
      r.id, tenant, *std::move(example),
      [&r](const v1::StoredExamples& existing, const v1::Example& e) { return ValidateNewExample(r, existing, e); });
  if (!added.ok()) return ToGrpcStatus(added.status());
  *resp = *std::move(added);
  return grpc::Status::OK;
}

grpc::Status RigServiceImpl::ListExamples(grpc::ServerContext* ctx, const v1::ListExamplesRequest* req,
                                          v1::ListExamplesResponse* resp) {
  SKINNING_BEGIN_CALL(tenant, ctx);
  if (auto rig = ExampleRig(req->rig_id(), tenant); !rig.ok()) return ToGrpcStatus(rig.status());
  absl::StatusOr<ExampleSet> set = examples_->Get(req->rig_id(), tenant);
  if (!set.ok()) return ToGrpcStatus(set.status());
  const v1::StoredExamples& stored = *set->stored;
  const int count = stored.examples_size();
  // page_token: "<revision>:<index of the page's first example>".
  int begin = 0;
  if (!req->page_token().empty()) {
    uint64_t revision = 0;
    const std::vector<std::string> parts = absl::StrSplit(req->page_token(), ':');
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &revision) || !absl::SimpleAtoi(parts[1], &begin) ||
        begin < 0 || begin > count)
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrCat("page_token '", req->page_token(), "' is not one this server gave"));
    if (revision != stored.revision())
      return grpc::Status(grpc::StatusCode::ABORTED,
                          absl::StrFormat("the examples changed since the first page (revision %d, now %d); list "
                                          "again from the first page",
                                          revision, stored.revision()));
  }
  resp->set_revision(stored.revision());
  resp->set_example_count(static_cast<uint32_t>(count));
  // Room for the response's other fields and framing.
  const size_t budget = max_response_bytes_ > 4096 ? max_response_bytes_ - 4096 : max_response_bytes_;
  size_t bytes = 0;
  int end = begin;
  for (; end < count; ++end) {
    if (req->page_size() > 0 && end - begin >= static_cast<int>(req->page_size())) break;
    const v1::Example& e = stored.examples(end);
    const size_t size = (req->include_shapes() ? e.ByteSizeLong() : e.name().size()) + 16;
    if (end > begin && bytes + size > budget) break;
    bytes += size;
    if (req->include_shapes()) {
      *resp->add_examples() = e;
    } else {
      resp->add_examples()->set_name(e.name());
    }
  }
  if (end < count) resp->set_next_page_token(absl::StrCat(stored.revision(), ":", end));
  return grpc::Status::OK;
}

grpc::Status RigServiceImpl::RemoveExample(grpc::ServerContext* ctx, const v1::RemoveExampleRequest* req,
                                           v1::RemoveExampleResponse* resp) {
  SKINNING_BEGIN_CALL(tenant, ctx);
  if (auto rig = ExampleRig(req->rig_id(), tenant); !rig.ok()) return ToGrpcStatus(rig.status());
  absl::StatusOr<v1::RemoveExampleResponse> removed = examples_->Remove(req->rig_id(), tenant, req->name());
  if (!removed.ok()) return ToGrpcStatus(removed.status());
  *resp = *std::move(removed);
  return grpc::Status::OK;
}

absl::StatusOr<const SparseWeights*> ResolveWeights(BakeJobs* bakes, const LoadedRig& rig,
                                                    const std::string& bake_id,
                                                    std::shared_ptr<const LoadedBake>* holder) {
  if (bake_id.empty()) return rig.rig.has_weights() ? &rig.weights : nullptr;
  absl::StatusOr<std::shared_ptr<const LoadedBake>> bake = bakes->Result(bake_id);
  if (!bake.ok()) return bake.status();
  if ((*bake)->fast)
    return absl::InvalidArgumentError(absl::StrCat("bake_id '", bake_id,
                                                   "' is a FAST model, not weights: solve with FastService"));
  if ((*bake)->rig_id != rig.id)
    return absl::InvalidArgumentError(absl::StrCat("bake_id '", bake_id, "' belongs to rig '", (*bake)->rig_id,
                                                   "', not '", rig.id, "'"));
  *holder = *std::move(bake);
  // Swing/twist and elastic bakes carry no bone weights: their own pose methods use the bake.
  return (*holder)->has_weights() ? &(*holder)->sparse : nullptr;
}

absl::Status PoseServiceImpl::FetchPsd(const LoadedRig& rig, const std::string& tenant, const SparseWeights* weights,
                                       const std::string& bake_id, v1::Method method,
                                       std::shared_ptr<const PsdModel>* holder) {
  holder->reset();
  if (psd_ == nullptr || !IsPsdMethod(method)) return absl::OkStatus();
  absl::StatusOr<std::shared_ptr<const PsdModel>> model = psd_->Get(rig, tenant, weights, bake_id, method);
  if (!model.ok()) return model.status();
  *holder = *std::move(model);
  return absl::OkStatus();
}

absl::Status PoseServiceImpl::PoseOneFrame(const PoseContext& pc, const v1::Pose& pose, v1::Method method,
                                           const v1::PoseOutputs& outputs, v1::PosedFrame* out,
                                           const char* field) {
  if (frames_ == nullptr) return PoseFrame(pc, pose, method, outputs, out, field);
  const auto start = std::chrono::steady_clock::now();
  absl::Status s = PoseFrame(pc, pose, method, outputs, out, field);
  if (s.ok()) frames_->OnFrame(method, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return s;
}

grpc::Status PoseServiceImpl::Pose(grpc::ServerContext* ctx, const v1::PoseRequest* req,
                                   v1::PoseResponse* resp) {
  SKINNING_BEGIN_CALL(tenant, ctx);
  // A call that waited for a thread past its deadline is not worked on (the clock only: one
  // frame is too short to be worth polling for cancellation).
  if (absl::Status s = DeadlinePassed(*ctx); !s.ok()) return ToGrpcStatus(s);
  absl::StatusOr<std::shared_ptr<const LoadedRig>> rig =
      store_->GetForTenant(req->rig_id(), tenant);
  if (!rig.ok()) return ToGrpcStatus(rig.status());
  std::shared_ptr<const LoadedBake> bake;
  absl::StatusOr<const SparseWeights*> weights = ResolveWeights(bakes_, **rig, req->bake_id(), &bake);
  if (!weights.ok()) return ToGrpcStatus(weights.status());
  std::shared_ptr<const PsdModel> psd;
  if (auto s = FetchPsd(**rig, tenant, *weights, req->bake_id(), req->method(), &psd); !s.ok()) return ToGrpcStatus(s);
  const PoseContext pc{rig->get(), *weights, bake.get(), psd.get()};
  return ToGrpcStatus(PoseOneFrame(pc, req->pose(), req->method(), req->outputs(), resp->mutable_frame()));
}

grpc::Status PoseServiceImpl::PoseClip(grpc::ServerContext* ctx, const v1::PoseClipRequest* req,
                                       v1::PoseClipResponse* resp) {
  SKINNING_BEGIN_CALL(tenant, ctx);
  if (req->frames_size() > max_clip_frames_)
    return ToGrpcStatus(absl::ResourceExhaustedError(absl::StrFormat(
        "frames: %d frames exceed the server limit of %d per clip", req->frames_size(), max_clip_frames_)));
  absl::StatusOr<std::shared_ptr<const LoadedRig>> rig =
      store_->GetForTenant(req->rig_id(), tenant);
  if (!rig.ok()) return ToGrpcStatus(rig.status());
  std::shared_ptr<const LoadedBake> bake;
  absl::StatusOr<const SparseWeights*> weights = ResolveWeights(bakes_, **rig, req->bake_id(), &bake);
  if (!weights.ok()) return ToGrpcStatus(weights.status());
  std::shared_ptr<const PsdModel> psd;
  if (auto s = FetchPsd(**rig, tenant, *weights, req->bake_id(), req->method(), &psd); !s.ok()) return ToGrpcStatus(s);
  const PoseContext pc{rig->get(), *weights, bake.get(), psd.get()};
  for (int f = 0; f < req->frames_size(); ++f) {
    if (absl::Status s = StillWanted(*ctx); !s.ok())
      return ToGrpcStatus(absl::Status(s.code(), absl::StrFormat("frames[%d] of %d: %s", f, req->frames_size(), s.message())));
    const std::string field = absl::StrFormat("frames[%d]", f);
    if (auto s = PoseOneFrame(pc, req->frames(f), req->method(), req->outputs(), resp->add_frames(), field.c_str());
        !s.ok())
      return ToGrpcStatus(s);
  }
  return grpc::Status::OK;
}

grpc::Status PoseServiceImpl::PoseSession(
    grpc::ServerContext* ctx,
    grpc::ServerReaderWriter<v1::PoseSessionResponse, v1::PoseSessionRequest>* stream) {
  SKINNING_BEGIN_CALL(tenant, ctx);
  v1::PoseSessionRequest req;
  std::shared_ptr<const LoadedRig> rig;
  std::shared_ptr<const LoadedBake> bake;
  const SparseWeights* weights = nullptr;
  std::string rig_bake_id;  // the session's bake_id (PSD model key)
  v1::Method method = v1::METHOD_UNSPECIFIED;
  v1::PoseOutputs outputs;
  v1::PoseSessionResponse resp;
  uint64_t frames = 0;
  while (stream->Read(&req)) {
    if (draining_->load())
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "server is shutting down; reconnect to continue the session");
    if (!rig) {
      if (req.rig_id().empty())
        return ToGrpcStatus(absl::InvalidArgumentError("rig_id is required in the first message of a session"));
      absl::StatusOr<std::shared_ptr<const LoadedRig>> loaded =
          store_->GetForTenant(req.rig_id(), tenant);
      if (!loaded.ok()) return ToGrpcStatus(loaded.status());
      rig = *std::move(loaded);
      absl::StatusOr<const SparseWeights*> w = ResolveWeights(bakes_, *rig, req.bake_id(), &bake);
      if (!w.ok()) return ToGrpcStatus(w.status());
      weights = *w;
      rig_bake_id = req.bake_id();
    } else if (!req.rig_id().empty() && req.rig_id() != rig->id) {
      return ToGrpcStatus(absl::InvalidArgumentError(absl::StrCat(
          "rig_id '", req.rig_id(), "' differs from the session's rig '", rig->id, "'")));
    }
    if (req.method() != v1::METHOD_UNSPECIFIED) method = req.method();
    if (req.has_outputs()) outputs = req.outputs();
    resp.Clear();
    resp.set_sequence(req.sequence());
    const std::string field = absl::StrFormat("frame %d: pose", frames);
    // PSD: the model of the rig's current examples (a cache lookup after the first frame).
    std::shared_ptr<const PsdModel> psd;
    if (auto s = FetchPsd(*rig, tenant, weights, rig_bake_id, method, &psd); !s.ok()) return ToGrpcStatus(s);
    const PoseContext pc{rig.get(), weights, bake.get(), psd.get()};
    if (auto s = PoseOneFrame(pc, req.pose(), method, outputs, resp.mutable_frame(), field.c_str()); !s.ok())
      return ToGrpcStatus(s);
    if (!stream->Write(resp)) break;  // the client went away
    ++frames;
  }
  if (ctx->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "session cancelled");
  return grpc::Status::OK;
}

grpc::Status BakeServiceImpl::StartBake(grpc::ServerContext* ctx, const v1::StartBakeRequest* req,
                                        v1::BakeStatus* resp) {
  SKINNING_BEGIN_CALL(tenant, ctx);
  if (auto access = bakes_->rigs()->CheckAccess(req->rig_id(), tenant); !access.ok())
    return ToGrpcStatus(access);
  absl::StatusOr<v1::BakeStatus> s = bakes_->Start(req->rig_id(), req->options());
  if (!s.ok()) return ToGrpcStatus(s.status());
  *resp = *std::move(s);
  return grpc::Status::OK;
}

grpc::Status BakeServiceImpl::WatchBake(grpc::ServerContext* ctx, const v1::WatchBakeRequest* req,
                                        grpc::ServerWriter<v1::BakeStatus>* writer) {
  SKINNING_BEGIN_CALL(tenant, ctx);
  if (auto access = CheckBakeAccess(bakes_, req->bake_id(), tenant); !access.ok())
    return ToGrpcStatus(access);
  absl::Status s = bakes_->Watch(
      req->bake_id(), [&](const v1::BakeStatus& status) { return writer->Write(status); },
      [&] { return ctx->IsCancelled() || draining_->load(); });
  if (absl::IsCancelled(s) && draining_->load())
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "server is shutting down; watch again elsewhere");
  return ToGrpcStatus(s);
}

grpc::Status BakeServiceImpl::GetBake(grpc::ServerContext* ctx, const v1::GetBakeRequest* req,
                                      v1::BakeStatus* resp) {
  SKINNING_BEGIN_CALL(tenant, ctx);
  absl::StatusOr<v1::BakeStatus> s = bakes_->Get(req->bake_id());
  if (!s.ok()) return ToGrpcStatus(s.status());
  if (auto access = bakes_->rigs()->CheckAccess(s->rig_id(), tenant); !access.ok())
    return ToGrpcStatus(absl::Status(
        access.code(), absl::StrCat("bake '", req->bake_id(), "': ", access.message())));
  *resp = *std::move(s);
  return grpc::Status::OK;
}

grpc::Status BakeServiceImpl::CancelBake(grpc::ServerContext* ctx, const v1::CancelBakeRequest* req,
                                         v1::BakeStatus* resp) {
  SKINNING_BEGIN_CALL(tenant, ctx);
  if (auto access = CheckBakeAccess(bakes_, req->bake_id(), tenant); !access.ok())
    return ToGrpcStatus(access);
  absl::StatusOr<v1::BakeStatus> s = bakes_->Cancel(req->bake_id());
  if (!s.ok()) return ToGrpcStatus(s.status());
  *resp = *std::move(s);
  return grpc::Status::OK;
}

grpc::Status BakeServiceImpl::GetWeights(grpc::ServerContext* ctx, const v1::GetWeightsRequest* req,
                                         v1::GetWeightsResponse* resp) {
  SKINNING_BEGIN_CALL(tenant, ctx);
  if (auto access = CheckBakeAccess(bakes_, req->bake_id(), tenant); !access.ok())
    return ToGrpcStatus(access);
  absl::StatusOr<std::shared_ptr<const LoadedBake>> bake = bakes_->Result(req->bake_id());
  if (!bake.ok()) return ToGrpcStatus(bake.status());
  const LoadedBake& b = **bake;
  if (b.elastic)
    return ToGrpcStatus(absl::FailedPreconditionError(absl::StrCat(
        "bake '", b.bake_id, "' is an elastic model (for METHOD_ELASTIC) and holds no weights")));
  resp->set_bake_id(b.bake_id);
  resp->set_rig_id(b.rig_id);
  *resp->mutable_report() = b.report;
  if (b.swing.size() > 0) DenseToProto(b.swing, resp->mutable_swing());
  if (b.twist.size() > 0) DenseToProto(b.twist, resp->mutable_twist());
  if (b.endpoint.size() > 0) DenseToProto(b.endpoint, resp->mutable_endpoint());
  if (req->dense()) {
    DenseToProto(b.dense, resp->mutable_weights()->mutable_dense());
    return grpc::Status::OK;
  }
  const int k = req->influences() == 0 ? b.sparse.k() : static_cast<int>(req->influences());
  if (k < 1 || k > BakeOptions::kMaxInfluences)
    return ToGrpcStatus(absl::InvalidArgumentError(
        absl::StrFormat("influences = %d must be in [1, %d]", k, BakeOptions::kMaxInfluences)));
  const SparseWeights W = k == b.sparse.k() ? b.sparse : TopK(b.dense, std::min<int>(k, static_cast<int>(b.dense.cols())));
  v1::SparseWeights* sw = resp->mutable_weights()->mutable_sparse();
  sw->set_influences_per_vertex(W.k());
  for (int i = 0; i < W.joints.size(); ++i) sw->add_joints(static_cast<uint32_t>(W.joints.data()[i]));
  for (int i = 0; i < W.weights.size(); ++i) sw->add_weights(W.weights.data()[i]);
  return grpc::Status::OK;
}

namespace {

// Per-session FAST state: the model, the solver (warm start, constraint set) and buffers reused
// frame after frame.
struct FastState {
  std::shared_ptr<const LoadedBake> bake;
  std::unique_ptr<FastSolver> solver;
  std::vector<int> handle_of_joint;  // joint → model handle, -1 for joints without weight
  std::vector<HandleConstraint> constraints;
  std::vector<Affine34> targets;
  std::vector<Affine34> T;
  std::vector<float> T34;
};

absl::Status OpenFast(BakeJobs* bakes, const std::string& bake_id, FastState* st) {
  if (bake_id.empty()) return absl::InvalidArgumentError("bake_id is required (a BAKE_METHOD_FAST_MODEL bake)");
  absl::StatusOr<std::shared_ptr<const LoadedBake>> bake = bakes->Result(bake_id);
  if (!bake.ok()) return bake.status();
  if (!(*bake)->fast)
    return absl::FailedPreconditionError(absl::StrCat(
        "bake '", bake_id, "' holds weights, not a FAST model: run StartBake with method BAKE_METHOD_FAST_MODEL"));
  st->bake = *std::move(bake);
  st->solver = std::make_unique<FastSolver>(st->bake->fast);
  const int m = FastModelHandles(*st->bake->fast);
  int max_joint = 0;
  for (int j : st->bake->fast_handle_joints) max_joint = std::max(max_joint, j);
  st->handle_of_joint.assign(max_joint + 1, -1);
  for (int h = 0; h < m; ++h) st->handle_of_joint[st->bake->fast_handle_joints[h]] = h;
  st->constraints.resize(m);
  st->targets.assign(m, Affine34::Zero());
  st->T.clear();
  return absl::OkStatus();
}

// Converts the request's constraints (joint-indexed) into the solver's (handle-indexed).
absl::Status ReadConstraints(const v1::FastSolveRequest& req, const std::vector<Eigen::Vector3d>& joint_points,
                             FastState* st) {
  for (auto& c : st->constraints) c = HandleConstraint();
  for (int i = 0; i < req.constraints_size(); ++i) {
    const v1::HandleConstraint& c = req.constraints(i);
    const std::string where = absl::StrFormat("constraints[%d]", i);
    if (c.handle() >= st->handle_of_joint.size() || st->handle_of_joint[c.handle()] < 0)
      return absl::InvalidArgumentError(absl::StrFormat("%s.handle = %u is not a handle of this model (a joint with weights)",
                                                        where, c.handle()));
    const int h = st->handle_of_joint[c.handle()];
    HandleConstraint& hc = st->constraints[h];
    switch (c.kind()) {
      case v1::HandleConstraint::FREE:
        break;
      case v1::HandleConstraint::POSITION: {
        if (c.target_size() != 3)
          return absl::InvalidArgumentError(absl::StrFormat("%s.target has %d values, POSITION needs 3", where, c.target_size()));
        if (c.point_size() != 0 && c.point_size() != 3)
          return absl::InvalidArgumentError(absl::StrFormat("%s.point has %d values, expected 3 or none", where, c.point_size()));
        hc.kind = HandleConstraint::Kind::kPosition;
        hc.point = c.point_size() == 3 ? Eigen::Vector3d(c.point(0), c.point(1), c.point(2)) : joint_points[c.handle()];
        st->targets[h].col(3) = Eigen::Vector3d(c.target(0), c.target(1), c.target(2));
        break;
      }
      case v1::HandleConstraint::FULL:
        if (c.target_size() != 12)
          return absl::InvalidArgumentError(absl::StrFormat("%s.target has %d values, FULL needs 12 (3x4 row-major)", where,
                                                            c.target_size()));
        hc.kind = HandleConstraint::Kind::kFull;
        for (int r = 0; r < 3; ++r)
          for (int k = 0; k < 4; ++k) st->targets[h](r, k) = c.target(4 * r + k);
        break;
      default:
        return absl::InvalidArgumentError(absl::StrFormat("%s.kind = %d is not a constraint kind", where, c.kind()));
    }
    if (!st->targets[h].allFinite() || !hc.point.allFinite())
      return absl::InvalidArgumentError(absl::StrCat(where, " has a non-finite value"));
  }
  return absl::OkStatus();
}

// Unary solves of more iterations than this run in chunks of it, checking between chunks whether
// the caller still wants the answer. Each chunk warm-starts from the last one's (snapped) result.
constexpr int kSolveChunk = 50;

// `still_wanted` (may be null: sessions answer every frame) is checked after the constraint
// set is factored and between chunks of iterations.
absl::Status SolveFrame(const v1::FastSolveRequest& req, const LoadedRig& rig, FastState* st,
                        v1::FastSolveResponse* resp, const std::function<absl::Status()>& still_wanted = nullptr) {
  std::vector<Eigen::Vector3d> joint_points(rig.rig.skeleton.size());
  for (int j = 0; j < rig.rig.skeleton.size(); ++j) joint_points[j] = BindPosition(rig.rig.skeleton, j);
  if (auto s = ReadConstraints(req, joint_points, st); !s.ok()) return s;
  if (auto s = st->solver->SetConstraints(st->constraints); !s.ok()) return s;
  if (req.iterations() > 1000)
    return absl::InvalidArgumentError(absl::StrFormat("iterations = %u is over the limit (1000)", req.iterations()));
  const int iterations = req.iterations() == 0 ? 15 : static_cast<int>(req.iterations());
  if (still_wanted) {
    if (auto s = still_wanted(); !s.ok()) return s;
    for (int done = 0; done < iterations; done += kSolveChunk) {
      if (auto s = st->solver->Solve(st->targets, &st->T, std::min(kSolveChunk, iterations - done)); !s.ok()) return s;
      if (auto s = still_wanted(); !s.ok())
        return absl::Status(s.code(), absl::StrFormat("after %d of %d iterations: %s",
                                                      std::min(done + kSolveChunk, iterations), iterations, s.message()));
    }
  } else if (auto s = st->solver->Solve(st->targets, &st->T, iterations); !s.ok()) {
    return s;
  }
  const FastModel& model = *st->bake->fast;
  resp->set_handles(static_cast<uint32_t>(FastModelHandles(model)));
  resp->set_extra_handles(static_cast<uint32_t>(FastModelTotalHandles(model) - FastModelHandles(model)));
  resp->mutable_handle_joints()->Clear();
  for (int j : st->bake->fast_handle_joints) resp->add_handle_joints(static_cast<uint32_t>(j));
  resp->mutable_transforms()->Resize(static_cast<int>(12 * st->T.size()), 0.f);
  float* out = resp->mutable_transforms()->mutable_data();
  for (size_t h = 0; h < st->T.size(); ++h)
    for (int r = 0; r < 3; ++r)
      for (int k = 0; k < 4; ++k) out[12 * h + 4 * r + k] = static_cast<float>(st->T[h](r, k));
  resp->set_energy(st->solver->Energy(st->T));
  if (req.outputs().vertices()) {
    const int n = static_cast<int>(rig.positions.size() / 3);
    const SparseWeights& W = st->bake->sparse;
    resp->mutable_vertices()->Resize(3 * n, 0.f);
    LbsFloat(rig.positions.data(), n, W.joints.data(), W.weights.data(), W.k(), out, resp->mutable_vertices()->mutable_data());
  }
  return absl::OkStatus();
}

}  // namespace

grpc::Status FastServiceImpl::Solve(grpc::ServerContext* ctx, const v1::FastSolveRequest* req,
                                    v1::FastSolveResponse* resp) {
  SKINNING_BEGIN_CALL(tenant, ctx);
  if (auto access = CheckBakeAccess(bakes_, req->bake_id(), tenant); !access.ok())
    return ToGrpcStatus(access);
  if (absl::Status s = StillWanted(*ctx); !s.ok()) return ToGrpcStatus(s);
  FastState st;
  if (auto s = OpenFast(bakes_, req->bake_id(), &st); !s.ok()) return ToGrpcStatus(s);
  absl::StatusOr<std::shared_ptr<const LoadedRig>> rig = bakes_->rigs()->Get(st.bake->rig_id);
  if (!rig.ok()) return ToGrpcStatus(rig.status());
  if (req->warm_start_size() != 0) {
    const int total = FastModelTotalHandles(*st.bake->fast);
    if (req->warm_start_size() != 12 * total)
      return ToGrpcStatus(absl::InvalidArgumentError(
          absl::StrFormat("warm_start has %d values, expected %d (12 per handle)", req->warm_start_size(), 12 * total)));
    st.T.assign(total, Affine34::Zero());
    for (int h = 0; h < total; ++h)
      for (int r = 0; r < 3; ++r)
        for (int k = 0; k < 4; ++k) st.T[h](r, k) = req->warm_start(12 * h + 4 * r + k);
  }
  resp->set_sequence(req->sequence());
  return ToGrpcStatus(SolveFrame(*req, **rig, &st, resp, [ctx] { return StillWanted(*ctx); }));
}

grpc::Status FastServiceImpl::Session(grpc::ServerContext* ctx,
                                      grpc::ServerReaderWriter<v1::FastSolveResponse, v1::FastSolveRequest>* stream) {
  SKINNING_BEGIN_CALL(tenant, ctx);
  FastState st;
  std::shared_ptr<const LoadedRig> rig;
  v1::FastSolveRequest req;
  v1::FastSolveResponse resp;
  uint64_t frames = 0;
  while (stream->Read(&req)) {
    if (draining_->load())
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "server is shutting down; reconnect to continue the session");
    if (!st.bake) {
      if (auto s = CheckBakeAccess(bakes_, req.bake_id(), tenant); !s.ok()) return ToGrpcStatus(s);
      if (auto s = OpenFast(bakes_, req.bake_id(), &st); !s.ok()) return ToGrpcStatus(s);
      absl::StatusOr<std::shared_ptr<const LoadedRig>> loaded = bakes_->rigs()->Get(st.bake->rig_id);
      if (!loaded.ok()) return ToGrpcStatus(loaded.status());
      rig = *std::move(loaded);
    } else if (!req.bake_id().empty() && req.bake_id() != st.bake->bake_id) {
      return ToGrpcStatus(absl::InvalidArgumentError(absl::StrCat("bake_id '", req.bake_id(),
                                                                  "' differs from the session's '", st.bake->bake_id, "'")));
    }
    resp.Clear();
    resp.set_sequence(req.sequence());
    if (auto s = SolveFrame(req, *rig, &st, &resp); !s.ok())
      return ToGrpcStatus(absl::Status(s.code(), absl::StrFormat("frame %d: %s", frames, s.message())));
    if (!stream->Write(resp)) break;
    ++frames;
  }
  if (ctx->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "session cancelled");
  return grpc::Status::OK;
}

}  // namespace skinning
