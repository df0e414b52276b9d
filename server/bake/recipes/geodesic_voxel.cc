// Geodesic voxel weights (Dijkstra over the voxel grid, inverse-power falloff or Dionne & de
// Lasa's weight function, then optional smoothing): options `geodesic_voxel {falloff,
// dionne_falloff, smoothing}`.
#include "absl/strings/str_format.h"
#include "server/bake/recipes/bone_weights.h"

namespace skinning {
namespace {

constexpr double kMaxFalloff = 16;

class GeodesicVoxelRecipe final : public BoneWeightsRecipe {
 public:
  const char* name() const override { return "geodesic_voxel"; }
  v1::BakeOptions::MethodCase method_case() const override { return v1::BakeOptions::kGeodesicVoxel; }

  absl::Status Normalize(v1::BakeOptions* options) const override {
    v1::GeodesicVoxelOptions& o = *options->mutable_geodesic_voxel();
    if (o.falloff() == 0) o.set_falloff(GeodesicWeightsOptions().falloff);
    if (!(o.falloff() > 0 && o.falloff() <= kMaxFalloff))
      return absl::InvalidArgumentError(
          absl::StrFormat("options.geodesic_voxel.falloff = %g must be in (0, %g]", o.falloff(), kMaxFalloff));
    if (o.has_dionne_falloff() && !(o.dionne_falloff() >= 0 && o.dionne_falloff() <= 1))
      return absl::InvalidArgumentError(
          absl::StrFormat("options.geodesic_voxel.dionne_falloff = %g must be in [0, 1]", o.dionne_falloff()));
    if (o.smoothing() < 0 || o.smoothing() > GeodesicWeightsOptions::kMaxSmoothing)
      return absl::InvalidArgumentError(absl::StrFormat("options.geodesic_voxel.smoothing = %d must be in [0, %d]",
                                                        o.smoothing(), GeodesicWeightsOptions::kMaxSmoothing));
    return absl::OkStatus();
  }

  void ToCore(const v1::BakeOptions& options, BakeOptions* core) const override {
    core->method = BakeMethod::kGeodesicVoxel;
    core->geodesic.falloff = options.geodesic_voxel().falloff();
    if (options.geodesic_voxel().has_dionne_falloff()) core->geodesic.dionne_falloff = options.geodesic_voxel().dionne_falloff();
    core->geodesic.smoothing = options.geodesic_voxel().smoothing();
  }
};

}  // namespace

std::unique_ptr<Recipe> NewGeodesicVoxelRecipe() { return std::make_unique<GeodesicVoxelRecipe>(); }

}  // namespace skinning
