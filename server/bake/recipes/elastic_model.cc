#include "server/bake/recipes/elastic_model.h"

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "server/bake/bake_options.h"
#include "server/bake/recipe.h"
#include "server/names.h"

namespace skinning {
namespace {

// Rough resident size of an elastic model: nodes, the factor, elements.
size_t ElasticModelBytes(const ElasticModel& m) {
  const VolumeDomain& d = m.domain();
  return static_cast<size_t>(d.num_nodes()) * 600 + static_cast<size_t>(d.elements.size()) * 16 +
         static_cast<size_t>(d.to_mesh.nonZeros()) * 12;
}

class ElasticModelRecipe final : public Recipe {
 public:
  const char* name() const override { return "elastic_model"; }
  v1::BakeOptions::MethodCase method_case() const override { return v1::BakeOptions::kElasticModel; }
  bool UsesInfluences() const override { return false; }
  bool HasBoneWeights() const override { return false; }

  void ToCore(const v1::BakeOptions& options, BakeOptions* core) const override {
    core->method = BakeMethod::kElasticModel;
  }

  // Nothing but the header is stored: the domain and its factorization are rebuilt when a
  // replica loads the bake (deterministic, and smaller than storing the factor).
  void Store(const BakeResult& result, internal::v1::BakeArtifact* artifact) const override {}

  absl::StatusOr<BakeResult> Restore(const internal::v1::StoredBake& stored, const LoadedRig& rig) const override {
    absl::StatusOr<BakeResult> rebuilt = Run(stored.options(), CoreBakeOptions(stored.options(), *this, rig), rig, {});
    if (!rebuilt.ok())
      return absl::Status(rebuilt.status().code(), absl::StrCat("bake '", BakeName(stored.rig_id(), stored.bake_id()),
                                                                "': ", rebuilt.status().message()));
    return rebuilt;
  }

  bool RestoreRebuilds() const override { return true; }

  absl::Status Prepare(BakeResult result, const LoadedRig& rig, LoadedBake* bake) const override {
    auto payload = std::make_shared<ElasticModelPayload>();
    payload->model = std::move(result.elastic_model);
    bake->bytes = sizeof(LoadedBake) + ElasticModelBytes(*payload->model);
    bake->payload = std::move(payload);
    return absl::OkStatus();
  }

  absl::Status FillWeights(const LoadedBake& bake, v1::GetWeightsResponse* response) const override {
    return absl::FailedPreconditionError(
        absl::StrCat("bake '", bake.name, "' is an elastic model (for DEFORMER_ELASTIC) and holds no weights"));
  }
};

}  // namespace

std::unique_ptr<Recipe> NewElasticModelRecipe() { return std::make_unique<ElasticModelRecipe>(); }

}  // namespace skinning
