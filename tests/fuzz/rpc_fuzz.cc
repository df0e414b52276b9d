// Fuzz target: every RPC's request message through the service code that the gRPC and Connect
// doors call (RigApi, PoseApi, BakeApi, FastApi and their sessions), in one in-process server
// whose store holds the resources of rpc_world.h. The first byte picks the method, the rest is
// its serialized request (mutations of the valid requests make_seeds writes, which name the
// world's resources). Every call gets a 1 s deadline. So the store does not grow without bound,
// whatever an input creates is deleted again (a rig, an example) or cancelled (a bake), and the
// world's own resources are not deleted (DeleteRig/DeleteExample of them are skipped).
#include <cstdint>
#include <string>

#include "tests/fuzz/rpc_world.h"

namespace skinning::fuzz {
namespace {


template <typename Request>
bool Parse(const uint8_t* data, size_t size, Request* req) {
  return req->ParseFromArray(data, static_cast<int>(size));
}

// Parses the request and calls `fn` on it under a short deadline; the answer is dropped.
template <typename Api, typename Request, typename Response>
void Plain(Api& api, absl::Status (Api::*fn)(const CallContext&, const Request&, Response*), const uint8_t* data,
           size_t size) {
  Request req;
  Response resp;
  if (Parse(data, size, &req)) (void)(api.*fn)(ShortCall(), req, &resp);
}

// Opens a session and steps it with the request as its first and as a later frame.
template <typename Request, typename Response, typename Api>
void TwoFrames(Api& api, const uint8_t* data, size_t size) {
  Request req;
  if (!Parse(data, size, &req)) return;
  auto session = api.OpenSession(ShortCall());
  Response resp;
  if (session->Step(req, &resp).ok()) (void)session->Step(req, &resp);
}

bool IsWorldRig(const RpcWorld& w, const std::string& name) { return name == w.rig || name == w.bare_rig; }

void Call(RpcMethod method, const uint8_t* data, size_t size) {
  RpcWorld& w = World();
  SkinningServer& s = *w.server;
  switch (method) {
    case kCreateRig: {
      v1::CreateRigRequest req;
      v1::CreateRigResponse resp;
      if (!Parse(data, size, &req) || !s.rig_api().CreateRig(ShortCall(), req, &resp).ok()) return;
      if (resp.created() && !IsWorldRig(w, resp.rig().name())) {
        v1::DeleteRigRequest del;
        del.set_name(resp.rig().name());
        google::protobuf::Empty empty;
        (void)s.rig_api().DeleteRig(CallContext(), del, &empty);
      }
      return;
    }
    case kGetRig:
      return Plain(s.rig_api(), &RigApi::GetRig, data, size);
    case kListRigs:
      return Plain(s.rig_api(), &RigApi::ListRigs, data, size);
    case kDeleteRig: {
      v1::DeleteRigRequest req;
      google::protobuf::Empty resp;
      if (Parse(data, size, &req) && !IsWorldRig(w, req.name())) (void)s.rig_api().DeleteRig(ShortCall(), req, &resp);
      return;
    }
    case kCreateExample: {
      v1::CreateExampleRequest req;
      v1::CreateExampleResponse resp;
      if (!Parse(data, size, &req) || !s.rig_api().CreateExample(ShortCall(), req, &resp).ok()) return;
      if (resp.created() && resp.example().name() != w.example) {
        v1::DeleteExampleRequest del;
        del.set_name(resp.example().name());
        google::protobuf::Empty empty;
        (void)s.rig_api().DeleteExample(CallContext(), del, &empty);
      }
      return;
    }
    case kGetExample:
      return Plain(s.rig_api(), &RigApi::GetExample, data, size);
    case kGetAnimations:
      return Plain(s.rig_api(), &RigApi::GetAnimations, data, size);
    case kListExamples:
      return Plain(s.rig_api(), &RigApi::ListExamples, data, size);
    case kDeleteExample: {
      v1::DeleteExampleRequest req;
      google::protobuf::Empty resp;
      if (Parse(data, size, &req) && req.name() != w.example) (void)s.rig_api().DeleteExample(ShortCall(), req, &resp);
      return;
    }
    case kPose:
      return Plain(s.pose_api(), &PoseApi::Pose, data, size);
    case kPoseClip:
      return Plain(s.pose_api(), &PoseApi::PoseClip, data, size);
    case kPoseSession:  // the frame as the first and as a later frame
      return TwoFrames<v1::PoseSessionRequest, v1::PoseSessionResponse>(s.pose_api(), data, size);
    case kStartBake: {
      v1::StartBakeRequest req;
      v1::StartBakeResponse resp;
      if (!Parse(data, size, &req) || !s.bake_api().StartBake(ShortCall(), req, &resp).ok()) return;
      if (resp.bake().name() != w.heat_bake && resp.bake().name() != w.fast_bake) {
        v1::CancelBakeRequest cancel;
        cancel.set_name(resp.bake().name());
        v1::Bake bake;
        (void)s.bake_api().CancelBake(CallContext(), cancel, &bake);
      }
      return;
    }
    case kGetBake:
      return Plain(s.bake_api(), &BakeApi::GetBake, data, size);
    case kWatchBake: {  // the first state only
      v1::WatchBakeRequest req;
      if (Parse(data, size, &req))
        (void)s.bake_api().WatchBake(ShortCall(0.2), req, [](const v1::Bake&) { return false; });
      return;
    }
    case kCancelBake:
      return Plain(s.bake_api(), &BakeApi::CancelBake, data, size);
    case kGetWeights:
      return Plain(s.bake_api(), &BakeApi::GetWeights, data, size);
    case kSolve:
      return Plain(s.fast_api(), &FastApi::Solve, data, size);
    case kSolveSession:
      return TwoFrames<v1::SolveSessionRequest, v1::SolveSessionResponse>(s.fast_api(), data, size);
    case kMethodCount:
      return;
  }
}

}  // namespace
}  // namespace skinning::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace skinning::fuzz;
  if (size == 0) return 0;
  Call(static_cast<RpcMethod>(data[0] % kMethodCount), data + 1, size - 1);
  return 0;
}
