// Posing a stored rig, shared by Pose, PoseClip and PoseSession (and any other door): the call's
// preamble written once (the rig with the tenant's access checked, the bake's weights, the
// deformer and its PSD model) and one frame's work (the pose decoded once, the deformer asked,
// the outputs filled).
#ifndef SKINNING_SERVER_POSE_POSING_H_
#define SKINNING_SERVER_POSE_POSING_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/bake/bakes.h"
#include "server/pose/deformer.h"
#include "server/pose/psd_models.h"
#include "server/store/rig_store.h"
#include "skinning/v1/pose.pb.h"

namespace skinning {

// Watches per-frame posing (for metrics): one frame posed successfully with `deformer` in
// `seconds`. Called on the calls' threads.
class FrameObserver {
 public:
  virtual ~FrameObserver() = default;
  virtual void OnFrame(v1::Deformer deformer, double seconds) = 0;
};

class Poser {
 public:
  // `psd` (may be null: the PSD deformers then pose as plain LBS / DQS) and `frames` (may be
  // null) must outlive this object, as must the others.
  Poser(RigStore* rigs, Bakes* bakes, PsdModels* psd, FrameObserver* frames,
        const DeformerRegistry* deformers = &DeformerRegistry::Default())
      : rigs_(rigs), bakes_(bakes), psd_(psd), frames_(frames), deformers_(deformers) {}

  // The rig named `rig` (field `rig_field`) for `tenant` (PERMISSION_DENIED, NOT_FOUND), posed
  // with the bake named `bake` when it is not empty (it must be a finished bake of that rig, not
  // a FAST model) or with the rig's own weights.
  absl::StatusOr<PoseTarget> Open(const std::string& tenant, const std::string& rig, const std::string& bake,
                                  const char* rig_field = "rig", const char* bake_field = "bake");
  // Whether the opened target is still there for `tenant` (Bakes::StillStored; asks the store).
  absl::Status StillStored(const PoseTarget& target, const std::string& tenant);
  // The deformer `kind` (INVALID_ARGUMENT for an unknown value); for the PSD deformers, sets the
  // model of the tenant's current examples in `target` (a cache lookup after the first build).
  absl::StatusOr<const Deformer*> Use(v1::Deformer kind, const std::string& tenant, PoseTarget* target);
  // Whether Open and then Use would answer from memory now, asking the store nothing (see
  // RigStore::Resident): the doors run a quick call on their socket threads only then.
  bool Resident(const std::string& tenant, const std::string& rig, const std::string& bake, v1::Deformer kind);
  // The same for Use alone, on a target already open (a session's later frames).
  bool Resident(const std::string& tenant, const PoseTarget& target, v1::Deformer kind);

  // One frame: `out` gets what `outputs` asks (vertices when nothing is). INVALID_ARGUMENT for a
  // bad pose (messages start with `field`), FAILED_PRECONDITION when the deformer lacks its bake
  // or weights. Told to the FrameObserver when it succeeds.
  // `memory` (may be null) carries a deformer's state between the frames of one session or clip.
  // DQS frames that skin vertices use the weights' vertex order, the first one preparing it.
  absl::Status Frame(const PoseTarget& target, const Deformer& deformer, const v1::Pose& pose,
                     const v1::PoseOutputs& outputs, v1::PosedFrame* out, const char* field = "pose",
                     FrameMemory* memory = nullptr) const;

 private:
  bool PsdResident(const std::string& tenant, const std::string& rig_id, v1::Deformer kind);
  absl::Status FrameUntimed(const PoseTarget& target, const Deformer& deformer, const v1::Pose& pose,
                            const v1::PoseOutputs& outputs, v1::PosedFrame* out, const char* field,
                            FrameMemory* memory) const;

  RigStore* rigs_;
  Bakes* bakes_;
  PsdModels* psd_;
  FrameObserver* frames_;
  const DeformerRegistry* deformers_;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_POSE_POSING_H_
