// Deforming one frame: one Deformer per v1::Deformer value (LBS, DQS, STBS over either, swing/
// twist, elastic, PSD over either with or without support joints), behind one interface. Posing
// (posing.h) decodes a pose once into a FrameInput and asks the deformer for the positions.
#ifndef SKINNING_SERVER_POSE_DEFORMER_H_
#define SKINNING_SERVER_POSE_DEFORMER_H_

#include <memory>
#include <string>
#include <vector>

#include <Eigen/Geometry>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/rig/pose.h"
#include "core/skinning/psd.h"
#include "core/skinning/stbs.h"
#include "server/bake/loaded_bake.h"
#include "server/store/rig_store.h"
#include "skinning/v1/pose.pb.h"

namespace skinning {

// What a call poses: the rig and the weights and bake it poses with (the call's preamble).
struct PoseTarget {
  std::shared_ptr<const LoadedRig> rig;
  std::shared_ptr<const LoadedBake> bake;  // the request's bake, or null
  const SparseWeights* weights = nullptr;  // the rig's own or the bake's bone weights; null if none
  std::shared_ptr<const PsdModel> psd;     // PSD deformers: the model of the caller's examples
};

// What a deformer carries from one frame to the next of one session or clip (the elastic
// deformer: the last solution, to start the next solve from). Held by the session or clip call;
// none for a single Pose call. A deformer checks `owner` (what the state was made for, e.g. the
// bake's model) before using `state`, since a session may change deformer or bake.
struct FrameMemory {
  const void* owner = nullptr;
  std::shared_ptr<void> state;
};

// A pose decoded once: the validated core pose, stretch and twist, and the skinning transforms.
struct FrameInput {
  FrameMemory* memory = nullptr;  // this session's or clip's, or null
  Pose pose;
  BoneStretchTwist stretch_twist;          // empty vectors unless the pose sets them
  std::vector<Eigen::Affine3d> transforms;  // #J skinning transforms (world pose · inverse bind)
  std::vector<float> transforms34;          // the same, 12 floats per joint, 3x4 row-major
  // For a deformer that UsesDqsLaneOrder and a frame that skins vertices: the weights' DQS vertex
  // order (the rig's or bake's, prepared by the first such frame); null otherwise.
  const DqsLaneOrder* dqs_lanes = nullptr;
  // The rest geometry the deformer skins: the rig's bind positions and normals, or, when the
  // pose's morph weights change the mesh, the morphed ones (held in morphed_*). #V*3 floats;
  // normals null when the rig has none.
  const float* positions = nullptr;
  const float* normals = nullptr;
  bool morphed = false;
  std::vector<float> morphed_positions, morphed_normals;
};

// Where a frame's geometry goes.
struct FrameOutput {
  int vertex_count = 0;
  float* positions = nullptr;  // 3 × vertex_count, always written
  float* normals = nullptr;    // 3 × vertex_count when asked and the rig has normals, else null
  bool normals_written = false;  // set by a deformer that wrote `normals` itself
};

class Deformer {
 public:
  virtual ~Deformer() = default;

  virtual v1::Deformer kind() const = 0;
  // The recipe name of the bake this deformer needs ("endpoint", "swing_twist",
  // "elastic_model"), or nullptr when the rig's or any bake's bone weights do.
  virtual const char* bake_method() const { return nullptr; }
  // Whether Pose.bone_stretch / bone_twist may hold values other than 1 / 0.
  virtual bool TakesStretchTwist() const { return false; }
  // Whether the call fetches a PSD model for it (PoseTarget::psd).
  virtual bool UsesPsdModel() const { return false; }
  // Whether it skins through the weights' DQS vertex order (FrameInput::dqs_lanes).
  virtual bool UsesDqsLaneOrder() const { return false; }
  // Whether it skins FrameInput::positions (so morph targets apply); elastic does not yet.
  virtual bool TakesMorphTargets() const { return true; }

  // OK when `target` has what this deformer needs for a frame (`geometry`: vertices or normals
  // asked; transforms alone need no weights). FAILED_PRECONDITION naming the bake to run;
  // INVALID_ARGUMENT for a bake of another kind.
  virtual absl::Status CheckTarget(const PoseTarget& target, bool geometry) const = 0;
  // The frame's skinning transforms: FK · inverse bind (STBS: with the bones stretched).
  // INVALID_ARGUMENT for bad stretch or twist values, messages starting with `field`.
  virtual absl::StatusOr<std::vector<Eigen::Affine3d>> Transforms(const PoseTarget& target, const Pose& pose,
                                                                  const BoneStretchTwist& stretch_twist,
                                                                  const char* field) const;
  // Whether an identity frame (every transform the identity, no twist) gives back the bind mesh
  // exactly, so posing may copy it (bit for bit) instead of deforming.
  virtual bool KeepsBindPose(const PoseTarget& target) const { return true; }
  // The posed positions into out->positions; normals into out->normals (then normals_written)
  // when the method transforms them itself, else posing recomputes them from the posed surface.
  virtual absl::Status Deform(const PoseTarget& target, const FrameInput& frame, FrameOutput* out) const = 0;
};

// The deformer's name in messages, "DEFORMER_DQS" (UNSPECIFIED: "DEFORMER_UNSPECIFIED (LBS)").
std::string DeformerName(v1::Deformer kind);
// The metrics label: "lbs" for UNSPECIFIED, else the name without "DEFORMER_", in lower case.
std::string DeformerLabel(v1::Deformer kind);

// Preconditions the deformers share.
// Bone weights for the geometry: INVALID_ARGUMENT for a bake without bone weights (naming the
// deformer it is for), FAILED_PRECONDITION when the rig has no weights and no bake is given.
absl::Status NeedsBoneWeights(const Deformer& deformer, const PoseTarget& target, bool geometry);
// A bake of the recipe deformer.bake_method() (whose payload Deform reads); FAILED_PRECONDITION
// naming the bake to run otherwise.
absl::Status NeedsBake(const Deformer& deformer, const PoseTarget& target);

// One deformer per v1::Deformer value.
class DeformerRegistry {
 public:
  // Every deformer of this server (deformer.cc).
  static const DeformerRegistry& Default();

  void Add(std::unique_ptr<Deformer> deformer) { deformers_.push_back(std::move(deformer)); }
  // INVALID_ARGUMENT naming `field` for a value that is no deformer.
  absl::StatusOr<const Deformer*> Find(v1::Deformer kind, const char* field = "deformer") const;
  // The deformer that poses with bakes of recipe `method`, or nullptr.
  const Deformer* ForBakeMethod(const std::string& method) const;
  const std::vector<std::unique_ptr<Deformer>>& all() const { return deformers_; }

 private:
  std::vector<std::unique_ptr<Deformer>> deformers_;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_POSE_DEFORMER_H_
