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
    case kGetRig: {
      v1::GetRigRequest req;
      v1::Rig resp;
      if (Parse(data, size, &req)) (void)s.rig_api().GetRig(ShortCall(), req, &resp);
      return;
    }
    case kListRigs: {
      v1::ListRigsRequest req;
      v1::ListRigsResponse resp;
      if (Parse(data, size, &req)) (void)s.rig_api().ListRigs(ShortCall(), req, &resp);
      return;
    }
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
    case kGetExample: {
      v1::GetExampleRequest req;
      v1::Example resp;
      if (Parse(data, size, &req)) (void)s.rig_api().GetExample(ShortCall(), req, &resp);
      return;
    }
    case kListExamples: {
      v1::ListExamplesRequest req;
      v1::ListExamplesResponse resp;
      if (Parse(data, size, &req)) (void)s.rig_api().ListExamples(ShortCall(), req, &resp);
      return;
    }
    case kDeleteExample: {
      v1::DeleteExampleRequest req;
      google::protobuf::Empty resp;
      if (Parse(data, size, &req) && req.name() != w.example) (void)s.rig_api().DeleteExample(ShortCall(), req, &resp);
      return;
    }
    case kPose: {
      v1::PoseRequest req;
      v1::PoseResponse resp;
      if (Parse(data, size, &req)) (void)s.pose_api().Pose(ShortCall(), req, &resp);
      return;
    }
    case kPoseClip: {
      v1::PoseClipRequest req;
      v1::PoseClipResponse resp;
      if (Parse(data, size, &req)) (void)s.pose_api().PoseClip(ShortCall(), req, &resp);
      return;
    }
    case kPoseSession: {  // the frame as the first and as a later frame
      v1::PoseSessionRequest req;
      if (!Parse(data, size, &req)) return;
      auto session = s.pose_api().OpenSession(ShortCall());
      v1::PoseSessionResponse resp;
      if (session->Step(req, &resp).ok()) (void)session->Step(req, &resp);
      return;
    }
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
    case kGetBake: {
      v1::GetBakeRequest req;
      v1::Bake resp;
      if (Parse(data, size, &req)) (void)s.bake_api().GetBake(ShortCall(), req, &resp);
      return;
    }
    case kWatchBake: {  // the first state only
      v1::WatchBakeRequest req;
      if (Parse(data, size, &req))
        (void)s.bake_api().WatchBake(ShortCall(0.2), req, [](const v1::Bake&) { return false; });
      return;
    }
    case kCancelBake: {
      v1::CancelBakeRequest req;
      v1::Bake resp;
      if (Parse(data, size, &req)) (void)s.bake_api().CancelBake(ShortCall(), req, &resp);
      return;
    }
    case kGetWeights: {
      v1::GetWeightsRequest req;
      v1::GetWeightsResponse resp;
      if (Parse(data, size, &req)) (void)s.bake_api().GetWeights(ShortCall(), req, &resp);
      return;
    }
    case kSolve: {
      v1::SolveRequest req;
      v1::SolveResponse resp;
      if (Parse(data, size, &req)) (void)s.fast_api().Solve(ShortCall(), req, &resp);
      return;
    }
    case kSolveSession: {
      v1::SolveSessionRequest req;
      if (!Parse(data, size, &req)) return;
      auto session = s.fast_api().OpenSession(ShortCall());
      v1::SolveSessionResponse resp;
      if (session->Step(req, &resp).ok()) (void)session->Step(req, &resp);
      return;
    }
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
