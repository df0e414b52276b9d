// The gold standard: full corotational elasticity with the bones' nodes placed by the pose,
// solved on an elastic_model bake's prefactored model. Slow (seconds per frame).
#include <optional>

#include "core/solve/elastic.h"
#include "core/util/status_macros.h"
#include "server/bake/recipes/elastic_model.h"
#include "server/pose/deformers/deformers.h"

namespace skinning {
namespace {

// A session's last frames (ElasticModel::FrameHistory), with the model they were solved on
// (held, so that its address cannot be taken by another model while the state lives).
struct WarmStart {
  std::shared_ptr<const ElasticModel> model;
  ElasticModel::FrameHistory history;
};

class ElasticDeformer final : public Deformer {
 public:
  v1::Deformer kind() const override { return v1::DEFORMER_ELASTIC; }
  bool TakesMorphTargets() const override { return false; }
  const char* bake_method() const override { return "elastic_model"; }
  absl::Status CheckTarget(const PoseTarget& target, bool geometry) const override { return NeedsBake(*this, target); }
  absl::Status Deform(const PoseTarget& target, const FrameInput& frame, FrameOutput* out) const override {
    const std::shared_ptr<const ElasticModel>& shared = target.bake->payload_as<ElasticModelPayload>()->model;
    const ElasticModel& model = *shared;
    // In a session or clip, the next frame starts from the last solution carried forward and,
    // when the motion goes on, from a prediction along it (ElasticModel::NextStart).
    FrameMemory* memory = frame.memory;
    const WarmStart* last = nullptr;
    std::optional<ElasticModel::Prediction> prediction;
    if (memory != nullptr && memory->owner == &model && memory->state != nullptr) {
      last = static_cast<const WarmStart*>(memory->state.get());
      ASSIGN_OR_RETURN(prediction, model.NextStart(last->history, frame.transforms));
    }
    ElasticOptions options;
    options.keep_lower_start = true;
    // A start as near as the motion lets it be is taken without trying the others.
    if (prediction) options.first_start_enough = prediction->enough;
    ElasticReport report;
    ASSIGN_OR_RETURN(RowMatrixX3d X, model.Solve(frame.transforms,
                                                 prediction ? prediction->Starts() : std::vector<const RowMatrixX3d*>{},
                                                 options, &report));
    const double energy = report.energy.empty() ? report.initial_energy : report.energy.back();
    const RowMatrixX3d U = model.ToMesh(X);
    for (int i = 0; i < U.size(); ++i) out->positions[i] = static_cast<float>(U.data()[i]);
    if (memory != nullptr) {
      auto next = std::make_shared<WarmStart>();
      next->model = shared;
      next->history =
          prediction ? ElasticModel::NextHistory(last->history, *prediction, frame.transforms, std::move(X), energy)
                     : ElasticModel::FrameHistory{frame.transforms, std::move(X), {}, {}, energy};
      memory->owner = &model;
      memory->state = std::move(next);
    }
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Deformer> NewElasticDeformer() { return std::make_unique<ElasticDeformer>(); }

}  // namespace skinning
