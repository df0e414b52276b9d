// Bone heat weights (Baran & Popović 2007), on the surface: options `bone_heat {heat_coefficient}`.
#include "absl/strings/str_format.h"
#include "server/bake/recipes/bone_weights.h"

namespace skinning {
namespace {

class BoneHeatRecipe final : public BoneWeightsRecipe {
 public:
  const char* name() const override { return "bone_heat"; }
  v1::BakeOptions::MethodCase method_case() const override { return v1::BakeOptions::kBoneHeat; }
  bool Volumetric(const v1::BakeOptions& options) const override { return false; }

  absl::Status Normalize(v1::BakeOptions* options) const override {
    v1::BoneHeatOptions& o = *options->mutable_bone_heat();
    if (o.heat_coefficient() == 0) o.set_heat_coefficient(BoneHeatOptions().heat_coefficient);
    if (!(o.heat_coefficient() > 0 && o.heat_coefficient() < 1e6))
      return absl::InvalidArgumentError(absl::StrFormat(
          "options.bone_heat.heat_coefficient = %g must be positive (and below 1e6)", o.heat_coefficient()));
    return absl::OkStatus();
  }

  void ToCore(const v1::BakeOptions& options, BakeOptions* core) const override {
    core->method = BakeMethod::kBoneHeat;
    core->bone_heat.heat_coefficient = options.bone_heat().heat_coefficient();
  }
};

}  // namespace

std::unique_ptr<Recipe> NewBoneHeatRecipe() { return std::make_unique<BoneHeatRecipe>(); }

}  // namespace skinning
