#include "server/bake/recipes/fast_model.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"
#include "server/bake/recipe.h"
#include "server/names.h"

namespace skinning {
namespace {

constexpr int kMaxClusters = 4096;
constexpr int kMaxExtraWeights = 256;

class FastModelRecipe final : public Recipe {
 public:
  const char* name() const override { return "fast_model"; }
  v1::BakeOptions::MethodCase method_case() const override { return v1::BakeOptions::kFastModel; }
  bool UsesInfluences() const override { return false; }
  bool HasBoneWeights() const override { return false; }
  bool Volumetric(const v1::BakeOptions& options) const override {
    return options.fast_model().energy() == v1::FAST_ENERGY_VOLUMETRIC;
  }
  const char* WeightsSourceField() const override { return "options.fast_model.weights_bake"; }
  std::string WeightsSource(const v1::BakeOptions& options) const override {
    return options.fast_model().weights_bake();
  }

  absl::Status Normalize(v1::BakeOptions* options) const override {
    const v1::FastModelOptions& o = options->fast_model();
    if (!v1::FastEnergy_IsValid(o.energy()))
      return absl::InvalidArgumentError(
          absl::StrFormat("options.fast_model.energy = %d is not a FastEnergy", static_cast<int>(o.energy())));
    if (o.cluster_count() < 0 || o.cluster_count() > kMaxClusters)
      return absl::InvalidArgumentError(absl::StrFormat("options.fast_model.cluster_count = %d is outside [0, %d]",
                                                        o.cluster_count(), kMaxClusters));
    if (o.extra_weight_count() < 0 || o.extra_weight_count() > kMaxExtraWeights)
      return absl::InvalidArgumentError(absl::StrFormat(
          "options.fast_model.extra_weight_count = %d is outside [0, %d]", o.extra_weight_count(), kMaxExtraWeights));
    if (!o.weights_bake().empty()) RETURN_IF_ERROR(ParseBakeName(o.weights_bake(), WeightsSourceField()).status());
    return absl::OkStatus();
  }

  void ToCore(const v1::BakeOptions& options, BakeOptions* core) const override {
    const v1::FastModelOptions& o = options.fast_model();
    core->method = BakeMethod::kFastModel;
    core->fast.energy = o.energy() == v1::FAST_ENERGY_VOLUMETRIC ? FastEnergy::kVolumetric : FastEnergy::kSurface;
    core->fast.clusters = o.cluster_count();
    core->fast.extra_weights = o.extra_weight_count();
  }

  void Store(const BakeResult& result, internal::v1::BakeArtifact* artifact) const override {
    artifact->set_model(SerializeFastModel(*result.fast_model));
    for (int j : result.fast_handle_joints) artifact->add_indices(j);
  }

  absl::StatusOr<BakeResult> Restore(const internal::v1::StoredBake& stored, const LoadedRig& rig) const override {
    const std::string what = absl::StrCat("stored bake '", BakeName(stored.rig_id(), stored.bake_id()), "'");
    BakeResult result;
    absl::StatusOr<FastModelPtr> model = ParseFastModel(stored.artifact().model());
    if (!model.ok()) return absl::DataLossError(absl::StrCat(what, ": ", model.status().message()));
    result.fast_model = *std::move(model);
    result.fast_handle_joints.assign(stored.artifact().indices().begin(), stored.artifact().indices().end());
    result.weights = FastModelWeights(*result.fast_model);
    const int nj = rig.rig.skeleton.size();
    bool joints_ok = static_cast<int>(result.fast_handle_joints.size()) == FastModelHandles(*result.fast_model);
    for (int j : result.fast_handle_joints) joints_ok = joints_ok && j >= 0 && j < nj;
    if (result.weights.rows() != rig.rig.mesh.V.rows() || !joints_ok)
      return absl::DataLossError(absl::StrCat(what, " does not match its rig"));
    return result;
  }

  absl::Status Prepare(BakeResult result, const LoadedRig& rig, LoadedBake* bake) const override {
    auto payload = std::make_shared<FastModelPayload>();
    payload->model = std::move(result.fast_model);
    payload->handle_joints = std::move(result.fast_handle_joints);
    bake->sparse = ExactSparse(result.weights);
    bake->dense = std::move(result.weights);
    // The weights, their sparse form and the model (its weights and reduced matrices, about as
    // large again).
    bake->bytes = sizeof(LoadedBake) + static_cast<size_t>(bake->dense.size()) * 8 * 4;
    bake->payload = std::move(payload);
    return absl::OkStatus();
  }

  absl::Status CheckPoseable(const LoadedBake& bake) const override {
    return absl::InvalidArgumentError(
        absl::StrCat("bake '", bake.name, "' is a FAST model, not weights: solve with FastService"));
  }
};

}  // namespace

std::unique_ptr<Recipe> NewFastModelRecipe() { return std::make_unique<FastModelRecipe>(); }

}  // namespace skinning
