// Pose space deformation (Lewis et al. 2000) over the caller's examples of the rig, on LBS or DQS,
// optionally with support joints (Yamamoto et al.). Without examples (no model) it is its base.
#include "server/pose/deformers/deformers.h"

namespace skinning {
namespace {

class PsdDeformer final : public Deformer {
 public:
  PsdDeformer(v1::Deformer kind, const Deformer* base) : kind_(kind), base_(base) {}
  v1::Deformer kind() const override { return kind_; }
  bool UsesPsdModel() const override { return true; }
  absl::Status CheckTarget(const PoseTarget& target, bool geometry) const override {
    return base_->CheckTarget(target, geometry);
  }
  // The model interpolates displacements even at the bind pose (to float rounding).
  bool KeepsBindPose(const PoseTarget& target) const override { return target.psd == nullptr; }
  absl::Status Deform(const PoseTarget& target, const FrameInput& frame, FrameOutput* out) const override {
    if (target.psd == nullptr) return base_->Deform(target, frame, out);
    // Morph first, then the example corrections, then skinning.
    return target.psd->DeformFloat(frame.pose, out->positions,
                                   frame.morphed ? frame.positions : nullptr);
  }

 private:
  const v1::Deformer kind_;
  const Deformer* const base_;
};

}  // namespace

std::unique_ptr<Deformer> NewPsdDeformer(v1::Deformer kind, const Deformer* base) {
  return std::make_unique<PsdDeformer>(kind, base);
}

}  // namespace skinning
