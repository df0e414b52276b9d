// The gold standard: full corotational elasticity with the bones' nodes placed by the pose,
// solved on an elastic_model bake's prefactored model. Slow (seconds per frame).
#include "core/solve/elastic.h"
#include "core/util/status_macros.h"
#include "server/bake/recipes/elastic_model.h"
#include "server/pose/deformers/deformers.h"

namespace skinning {
namespace {

class ElasticDeformer final : public Deformer {
 public:
  v1::Deformer kind() const override { return v1::DEFORMER_ELASTIC; }
  bool TakesMorphTargets() const override { return false; }
  const char* bake_method() const override { return "elastic_model"; }
  absl::Status CheckTarget(const PoseTarget& target, bool geometry) const override { return NeedsBake(*this, target); }
  absl::Status Deform(const PoseTarget& target, const FrameInput& frame, FrameOutput* out) const override {
    const ElasticModel& model = *target.bake->payload_as<ElasticModelPayload>()->model;
    ASSIGN_OR_RETURN(const RowMatrixX3d X, model.Solve(frame.transforms, nullptr, ElasticOptions()));
    const RowMatrixX3d U = model.ToMesh(X);
    for (int i = 0; i < U.size(); ++i) out->positions[i] = static_cast<float>(U.data()[i]);
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Deformer> NewElasticDeformer() { return std::make_unique<ElasticDeformer>(); }

}  // namespace skinning
