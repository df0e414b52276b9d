// What the automatic bone-weight methods (bbw, bone_heat, geodesic_voxel) share: they store the
// #V by #J weights and load them back as the bone weights posing uses.
#ifndef SKINNING_SERVER_BAKE_RECIPES_BONE_WEIGHTS_H_
#define SKINNING_SERVER_BAKE_RECIPES_BONE_WEIGHTS_H_

#include "server/bake/recipe.h"

namespace skinning {

class BoneWeightsRecipe : public Recipe {
 public:
  void Store(const BakeResult& result, internal::v1::BakeArtifact* artifact) const override;
  absl::StatusOr<BakeResult> Restore(const internal::v1::StoredBake& stored, const LoadedRig& rig) const override;
  absl::Status Prepare(BakeResult result, const LoadedRig& rig, LoadedBake* bake) const override;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_BAKE_RECIPES_BONE_WEIGHTS_H_
