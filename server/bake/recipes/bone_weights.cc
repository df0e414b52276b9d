#include "server/bake/recipes/bone_weights.h"

#include "core/util/status_macros.h"

namespace skinning {

void BoneWeightsRecipe::Store(const BakeResult& result, internal::v1::BakeArtifact* artifact) const {
  StoreMatrix(result.weights, artifact->mutable_weights());
}

absl::StatusOr<BakeResult> BoneWeightsRecipe::Restore(const internal::v1::StoredBake& stored,
                                                      const LoadedRig& rig) const {
  BakeResult result;
  ASSIGN_OR_RETURN(result.weights, RestoreBoneWeights(stored, rig));
  return result;
}

absl::Status BoneWeightsRecipe::Prepare(BakeResult result, const LoadedRig& rig, LoadedBake* bake) const {
  SetWeights(std::move(result.weights), bake);
  return absl::OkStatus();
}

}  // namespace skinning
