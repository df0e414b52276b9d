// RigService's logic, transport-neutral: rigs (create, get, list, delete) and their example
// shapes for pose space deformation. Rigs are reached through the caller's tenant
// (RigStore::GetForTenant / CheckAccess); examples are the tenant's own.
#ifndef SKINNING_SERVER_API_RIG_API_H_
#define SKINNING_SERVER_API_RIG_API_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "google/protobuf/empty.pb.h"
#include "server/api/call_context.h"
#include "server/api/upload_gate.h"
#include "server/bake/bake_store.h"
#include "server/store/animation_store.h"
#include "server/store/example_store.h"
#include "server/store/rig_store.h"
#include "skinning/v1/rig_service.pb.h"

namespace skinning {

class RigApi {
 public:
  // `examples` may be null (the example methods are then UNIMPLEMENTED), and `animations` (then
  // CreateRig stores none and GetAnimations is UNIMPLEMENTED); DeleteRig removes the caller's
  // examples and animations of the rig with it, every tenant's and the stored bakes (`bakes`, may
  // be null) once no tenant owns it. `max_response_bytes`: the server's message limit, which
  // ListExamples pages stay below. `max_clip_frames`: most frames of the animations CreateRig
  // samples from a glTF file (each clip at 30 frames per second, or fewer to fit). `uploads`
  // (may be null: no bound) admits the glTF uploads CreateRig reads at once.
  RigApi(RigStore* rigs, ExampleStore* examples, AnimationStore* animations, BakeStore* bakes,
         size_t max_response_bytes, int max_clip_frames, UploadGate* uploads = nullptr)
      : rigs_(rigs),
        examples_(examples),
        animations_(animations),
        bakes_(bakes),
        max_response_bytes_(max_response_bytes),
        max_clip_frames_(max_clip_frames),
        uploads_(uploads) {}

  // From the rig, or from a glTF file's bytes (read by ReadGltfBytes; its animations sampled),
  // read and registered during a turn of `uploads` (UploadGate::Enter's errors). The file's
  // animations, or the request's with a rig (checked by ValidateClips first), are then stored for
  // the caller.
  absl::Status CreateRig(const CallContext& ctx, const v1::CreateRigRequest& req, v1::CreateRigResponse* resp);
  absl::Status GetRig(const CallContext& ctx, const v1::GetRigRequest& req, v1::Rig* resp);
  absl::Status ListRigs(const CallContext& ctx, const v1::ListRigsRequest& req, v1::ListRigsResponse* resp);
  absl::Status DeleteRig(const CallContext& ctx, const v1::DeleteRigRequest& req, google::protobuf::Empty* resp);

  // Validated by ResolveExample and ValidateNewExample before anything is stored.
  absl::Status CreateExample(const CallContext& ctx, const v1::CreateExampleRequest& req,
                             v1::CreateExampleResponse* resp);
  absl::Status GetExample(const CallContext& ctx, const v1::GetExampleRequest& req, v1::Example* resp);
  absl::Status ListExamples(const CallContext& ctx, const v1::ListExamplesRequest& req,
                            v1::ListExamplesResponse* resp);
  absl::Status DeleteExample(const CallContext& ctx, const v1::DeleteExampleRequest& req,
                             google::protobuf::Empty* resp);
  absl::Status GetAnimations(const CallContext& ctx, const v1::GetAnimationsRequest& req,
                             v1::GetAnimationsResponse* resp);

 private:
  // The rig of an example call: UNIMPLEMENTED when examples are off, else the tenant's rig
  // (NOT_FOUND for an unknown or deleted one, as GetForTenant).
  absl::StatusOr<std::shared_ptr<const LoadedRig>> ExampleRig(const std::string& rig_id, const std::string& tenant);

  RigStore* rigs_;
  ExampleStore* examples_;
  AnimationStore* animations_;
  BakeStore* bakes_;
  size_t max_response_bytes_;
  int max_clip_frames_;
  UploadGate* uploads_;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_API_RIG_API_H_
