// The gRPC door: thin adapters of the generated services. Each call is admitted by the CallGate
// (UNAVAILABLE while draining, UNAUTHENTICATED without a valid bearer token), runs the service's
// transport-neutral handler (server/api) with its CallContext, and has its status mapped once
// (grpc_status.h). Streams are driven here: the handlers see a write callback or a session
// (Pose and the sessions run on the callback API: callback_calls.h).
#ifndef SKINNING_SERVER_GRPC_GRPC_SERVICES_H_
#define SKINNING_SERVER_GRPC_GRPC_SERVICES_H_

#include "server/api/bake_api.h"
#include "server/api/call_context.h"
#include "server/api/fast_api.h"
#include "server/api/pose_api.h"
#include "server/api/rig_api.h"
#include "server/grpc/callback_calls.h"
#include "skinning/internal/v1/load_baseline.grpc.pb.h"
#include "skinning/v1/bake_service.grpc.pb.h"
#include "skinning/v1/fast_service.grpc.pb.h"
#include "skinning/v1/pose_service.grpc.pb.h"
#include "skinning/v1/rig_service.grpc.pb.h"

namespace skinning {

class RigGrpcService final : public v1::RigService::Service {
 public:
  RigGrpcService(const CallGate* gate, RigApi* api) : gate_(gate), api_(api) {}
  grpc::Status CreateRig(grpc::ServerContext*, const v1::CreateRigRequest*, v1::CreateRigResponse*) override;
  grpc::Status GetRig(grpc::ServerContext*, const v1::GetRigRequest*, v1::Rig*) override;
  grpc::Status ListRigs(grpc::ServerContext*, const v1::ListRigsRequest*, v1::ListRigsResponse*) override;
  grpc::Status DeleteRig(grpc::ServerContext*, const v1::DeleteRigRequest*, google::protobuf::Empty*) override;
  grpc::Status CreateExample(grpc::ServerContext*, const v1::CreateExampleRequest*,
                             v1::CreateExampleResponse*) override;
  grpc::Status GetExample(grpc::ServerContext*, const v1::GetExampleRequest*, v1::Example*) override;
  grpc::Status ListExamples(grpc::ServerContext*, const v1::ListExamplesRequest*, v1::ListExamplesResponse*) override;
  grpc::Status DeleteExample(grpc::ServerContext*, const v1::DeleteExampleRequest*, google::protobuf::Empty*) override;
  grpc::Status GetAnimations(grpc::ServerContext*, const v1::GetAnimationsRequest*,
                             v1::GetAnimationsResponse*) override;

 private:
  const CallGate* gate_;
  RigApi* api_;
};

// Pose and the session on the callback API (callback_calls.h: quick work on gRPC's callback
// threads, the rest on the CallbackHost's pool; an open session holds no thread); PoseClip, whose
// clips run long, on the sync API (a thread for the length of the call).
class PoseGrpcService final
    : public v1::PoseService::WithCallbackMethod_Pose<
          v1::PoseService::WithCallbackMethod_PoseSession<v1::PoseService::Service>> {
 public:
  PoseGrpcService(const CallGate* gate, PoseApi* api, CallbackHost* callbacks)
      : gate_(gate), api_(api), callbacks_(callbacks) {
    SetMessageAllocatorFor_Pose(&pose_messages_);
  }
  grpc::ServerUnaryReactor* Pose(grpc::CallbackServerContext*, const v1::PoseRequest*, v1::PoseResponse*) override;
  grpc::Status PoseClip(grpc::ServerContext*, const v1::PoseClipRequest*, v1::PoseClipResponse*) override;
  grpc::ServerBidiReactor<v1::PoseSessionRequest, v1::PoseSessionResponse>* PoseSession(
      grpc::CallbackServerContext*) override;

 private:
  const CallGate* gate_;
  PoseApi* api_;
  CallbackHost* callbacks_;
  ArenaMessageAllocator<v1::PoseRequest, v1::PoseResponse> pose_messages_;
};

class BakeGrpcService final : public v1::BakeService::Service {
 public:
  BakeGrpcService(const CallGate* gate, BakeApi* api) : gate_(gate), api_(api) {}
  grpc::Status StartBake(grpc::ServerContext*, const v1::StartBakeRequest*, v1::StartBakeResponse*) override;
  grpc::Status GetBake(grpc::ServerContext*, const v1::GetBakeRequest*, v1::Bake*) override;
  grpc::Status WatchBake(grpc::ServerContext*, const v1::WatchBakeRequest*, grpc::ServerWriter<v1::Bake>*) override;
  grpc::Status CancelBake(grpc::ServerContext*, const v1::CancelBakeRequest*, v1::Bake*) override;
  grpc::Status GetWeights(grpc::ServerContext*, const v1::GetWeightsRequest*, v1::GetWeightsResponse*) override;

 private:
  const CallGate* gate_;
  BakeApi* api_;
};

// Solve on the sync API (its solves run long), the session on the callback API.
class FastGrpcService final : public v1::FastService::WithCallbackMethod_SolveSession<v1::FastService::Service> {
 public:
  FastGrpcService(const CallGate* gate, FastApi* api, CallbackHost* callbacks)
      : gate_(gate), api_(api), callbacks_(callbacks) {}
  grpc::Status Solve(grpc::ServerContext*, const v1::SolveRequest*, v1::SolveResponse*) override;
  grpc::ServerBidiReactor<v1::SolveSessionRequest, v1::SolveSessionResponse>* SolveSession(
      grpc::CallbackServerContext*) override;

 private:
  const CallGate* gate_;
  FastApi* api_;
  CallbackHost* callbacks_;
};

// bench/load's baseline (--load_baseline): an echo admitted like every call, so that a workload
// can be compared with raw gRPC of the same message sizes on the same server. On the callback
// API, answered inline, as quick Pose calls are (on this machine the faster of gRPC's two APIs).
class LoadBaselineGrpcService final : public internal::v1::LoadBaselineService::WithCallbackMethod_Echo<internal::v1::LoadBaselineService::Service> {
 public:
  LoadBaselineGrpcService(const CallGate* gate, int max_message_bytes)
      : gate_(gate), max_message_bytes_(max_message_bytes) {}
  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext*, const internal::v1::EchoRequest*, internal::v1::EchoResponse*) override;

 private:
  const CallGate* gate_;
  const int max_message_bytes_;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_GRPC_GRPC_SERVICES_H_
