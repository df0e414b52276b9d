#include "server/grpc/grpc_services.h"

#include "absl/strings/str_cat.h"
#include "absl/hash/hash.h"
#include "server/grpc/grpc_status.h"

namespace skinning {
namespace {

// Admits the call, runs `handler` with its context, maps the status.
template <typename Handler>
grpc::Status Serve(const CallGate& gate, grpc::ServerContext* ctx, Handler handler) {
  absl::StatusOr<CallContext> call = AdmitGrpcCall(gate, ctx);
  if (!call.ok()) return ToGrpcStatus(call.status());
  return ToGrpcStatus(handler(*call));
}

}  // namespace

grpc::Status RigGrpcService::CreateRig(grpc::ServerContext* ctx, const v1::CreateRigRequest* req,
                                       v1::CreateRigResponse* resp) {
  return Serve(*gate_, ctx, [&](const CallContext& c) { return api_->CreateRig(c, *req, resp); });
}

grpc::Status RigGrpcService::GetRig(grpc::ServerContext* ctx, const v1::GetRigRequest* req, v1::Rig* resp) {
  return Serve(*gate_, ctx, [&](const CallContext& c) { return api_->GetRig(c, *req, resp); });
}

grpc::Status RigGrpcService::ListRigs(grpc::ServerContext* ctx, const v1::ListRigsRequest* req,
                                      v1::ListRigsResponse* resp) {
  return Serve(*gate_, ctx, [&](const CallContext& c) { return api_->ListRigs(c, *req, resp); });
}

grpc::Status RigGrpcService::DeleteRig(grpc::ServerContext* ctx, const v1::DeleteRigRequest* req,
                                       google::protobuf::Empty* resp) {
  return Serve(*gate_, ctx, [&](const CallContext& c) { return api_->DeleteRig(c, *req, resp); });
}

grpc::Status RigGrpcService::CreateExample(grpc::ServerContext* ctx, const v1::CreateExampleRequest* req,
                                           v1::CreateExampleResponse* resp) {
  return Serve(*gate_, ctx, [&](const CallContext& c) { return api_->CreateExample(c, *req, resp); });
}

grpc::Status RigGrpcService::GetExample(grpc::ServerContext* ctx, const v1::GetExampleRequest* req,
                                        v1::Example* resp) {
  return Serve(*gate_, ctx, [&](const CallContext& c) { return api_->GetExample(c, *req, resp); });
}

grpc::Status RigGrpcService::ListExamples(grpc::ServerContext* ctx, const v1::ListExamplesRequest* req,
                                          v1::ListExamplesResponse* resp) {
  return Serve(*gate_, ctx, [&](const CallContext& c) { return api_->ListExamples(c, *req, resp); });
}

grpc::Status RigGrpcService::DeleteExample(grpc::ServerContext* ctx, const v1::DeleteExampleRequest* req,
                                           google::protobuf::Empty* resp) {
  return Serve(*gate_, ctx, [&](const CallContext& c) { return api_->DeleteExample(c, *req, resp); });
}

grpc::Status RigGrpcService::GetAnimations(grpc::ServerContext* ctx, const v1::GetAnimationsRequest* req,
                                           v1::GetAnimationsResponse* resp) {
  return Serve(*gate_, ctx, [&](const CallContext& c) { return api_->GetAnimations(c, *req, resp); });
}

grpc::ServerUnaryReactor* PoseGrpcService::Pose(grpc::CallbackServerContext* ctx, const v1::PoseRequest* req,
                                                 v1::PoseResponse* resp) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  absl::StatusOr<CallContext> call = AdmitGrpcCall(*gate_, ctx);
  if (!call.ok()) {
    reactor->Finish(ToGrpcStatus(call.status()));
    return reactor;
  }
  const uint64_t kind = absl::HashOf(call->tenant(), PoseApi::CostKey(*req));
  // Here on gRPC's thread only when quick last time and nothing to wait for: a call that asks
  // the store (a stale ownership check, a shared queue's job record) waits on the pool, so a
  // stalled store holds no callback thread.
  const bool inline_call = callbacks_->WasQuick(kind) && api_->Resident(*call, *req);
  auto run = [this, reactor, req, resp, kind, c = *std::move(call)] {
    const QuickTimer timer;
    const absl::Status s = api_->Pose(c, *req, resp);
    callbacks_->RecordQuick(kind, timer.Quick());
    reactor->Finish(ToGrpcStatus(s));
  };
  if (inline_call)
    run();
  else
    callbacks_->Post(std::move(run));
  return reactor;
}

grpc::Status PoseGrpcService::PoseClip(grpc::ServerContext* ctx, const v1::PoseClipRequest* req,
                                       v1::PoseClipResponse* resp) {
  return Serve(*gate_, ctx, [&](const CallContext& c) { return api_->PoseClip(c, *req, resp); });
}

grpc::ServerBidiReactor<v1::PoseSessionRequest, v1::PoseSessionResponse>* PoseGrpcService::PoseSession(
    grpc::CallbackServerContext* ctx) {
  return new SessionReactor<v1::PoseSessionRequest, v1::PoseSessionResponse, PoseApi::Session>(
      ctx, *gate_, callbacks_, [this](CallContext c) { return api_->OpenSession(std::move(c)); });
}

grpc::Status BakeGrpcService::StartBake(grpc::ServerContext* ctx, const v1::StartBakeRequest* req,
                                        v1::StartBakeResponse* resp) {
  return Serve(*gate_, ctx, [&](const CallContext& c) { return api_->StartBake(c, *req, resp); });
}

grpc::Status BakeGrpcService::GetBake(grpc::ServerContext* ctx, const v1::GetBakeRequest* req, v1::Bake* resp) {
  return Serve(*gate_, ctx, [&](const CallContext& c) { return api_->GetBake(c, *req, resp); });
}

grpc::Status BakeGrpcService::WatchBake(grpc::ServerContext* ctx, const v1::WatchBakeRequest* req,
                                        grpc::ServerWriter<v1::Bake>* writer) {
  return Serve(*gate_, ctx, [&](const CallContext& c) {
    return api_->WatchBake(c, *req, [writer](const v1::Bake& bake) { return writer->Write(bake); });
  });
}

grpc::Status BakeGrpcService::CancelBake(grpc::ServerContext* ctx, const v1::CancelBakeRequest* req,
                                         v1::Bake* resp) {
  return Serve(*gate_, ctx, [&](const CallContext& c) { return api_->CancelBake(c, *req, resp); });
}

grpc::Status BakeGrpcService::GetWeights(grpc::ServerContext* ctx, const v1::GetWeightsRequest* req,
                                         v1::GetWeightsResponse* resp) {
  return Serve(*gate_, ctx, [&](const CallContext& c) { return api_->GetWeights(c, *req, resp); });
}

grpc::Status FastGrpcService::Solve(grpc::ServerContext* ctx, const v1::SolveRequest* req, v1::SolveResponse* resp) {
  return Serve(*gate_, ctx, [&](const CallContext& c) { return api_->Solve(c, *req, resp); });
}

grpc::ServerBidiReactor<v1::SolveSessionRequest, v1::SolveSessionResponse>* FastGrpcService::SolveSession(
    grpc::CallbackServerContext* ctx) {
  return new SessionReactor<v1::SolveSessionRequest, v1::SolveSessionResponse, FastApi::Session>(
      ctx, *gate_, callbacks_, [this](CallContext c) { return api_->OpenSession(std::move(c)); });
}

grpc::ServerUnaryReactor* LoadBaselineGrpcService::Echo(grpc::CallbackServerContext* ctx,
                                                        const internal::v1::EchoRequest* req,
                                                        internal::v1::EchoResponse* resp) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  absl::Status s = AdmitGrpcCall(*gate_, ctx).status();
  if (s.ok() && (req->response_bytes() < 0 || req->response_bytes() > max_message_bytes_ - 16))
    s = absl::InvalidArgumentError(
        absl::StrCat("response_bytes ", req->response_bytes(), " is not in [0, ", max_message_bytes_ - 16, "]"));
  if (s.ok()) resp->mutable_payload()->resize(static_cast<size_t>(req->response_bytes()));
  reactor->Finish(ToGrpcStatus(s));
  return reactor;
}

}  // namespace skinning
