// Linear blend skinning: v' = Σ_j w_j T_j v with the rig's (or the bake's) bone weights.
#include "core/skinning/lbs.h"
#include "server/pose/deformers/deformers.h"

namespace skinning {
namespace {

class LbsDeformer final : public Deformer {
 public:
  v1::Deformer kind() const override { return v1::DEFORMER_UNSPECIFIED; }
  absl::Status CheckTarget(const PoseTarget& target, bool geometry) const override {
    return NeedsBoneWeights(*this, target, geometry);
  }
  absl::Status Deform(const PoseTarget& target, const FrameInput& frame, FrameOutput* out) const override {
    const SparseWeights& W = *target.weights;
    LbsFloat(frame.positions, out->vertex_count, W.joints.data(), W.weights.data(), W.k(),
             frame.transforms34.data(), out->positions, out->normals ? frame.normals : nullptr, out->normals);
    out->normals_written = true;
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Deformer> NewLbsDeformer() { return std::make_unique<LbsDeformer>(); }

}  // namespace skinning
