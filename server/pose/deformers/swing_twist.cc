// Swing/twist joint deformers with energy-minimizing weights (Kavan & Sorkine 2012), from a
// swing_twist bake.
#include "core/skinning/swing_twist.h"
#include "server/bake/recipes/swing_twist.h"
#include "server/pose/deformers/deformers.h"

namespace skinning {
namespace {

class SwingTwistDeformer final : public Deformer {
 public:
  v1::Deformer kind() const override { return v1::DEFORMER_SWING_TWIST; }
  const char* bake_method() const override { return "swing_twist"; }
  absl::Status CheckTarget(const PoseTarget& target, bool geometry) const override { return NeedsBake(*this, target); }
  absl::Status Deform(const PoseTarget& target, const FrameInput& frame, FrameOutput* out) const override {
    const SwingTwistPayload& p = *target.bake->payload_as<SwingTwistPayload>();
    const SwingTwistFrameFloat prepared = PrepareSwingTwistFloat(p.frames, frame.transforms);
    SwingTwistFloat(frame.positions, out->vertex_count, p.weights, prepared, out->positions);
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Deformer> NewSwingTwistDeformer() { return std::make_unique<SwingTwistDeformer>(); }

}  // namespace skinning
