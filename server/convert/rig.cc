#include "server/convert/rig.h"

#include "core/util/status_macros.h"

namespace skinning {

absl::Status ValidateRig(const Rig& rig) {
  RETURN_IF_ERROR(ValidateMesh(rig.mesh, "rig.mesh"));
  RETURN_IF_ERROR(ValidateMeshParts(rig.mesh_parts, rig.mesh, "rig.mesh"));
  RETURN_IF_ERROR(ValidateMorphTargets(rig.morph_targets, rig.mesh, "rig.morph_targets"));
  RETURN_IF_ERROR(ValidateSkeleton(rig.skeleton, "rig.skeleton"));
  const int nv = static_cast<int>(rig.mesh.V.rows());
  if (rig.sparse_weights)
    return ValidateWeights(*rig.sparse_weights, nv, rig.skeleton.size(), "rig.weights");
  if (rig.dense_weights)
    return ValidateWeights(*rig.dense_weights, nv, rig.skeleton.size(), "rig.weights");
  return absl::OkStatus();
}

SparseWeights ExactSparseWeights(const Rig& rig) {
  SparseWeights W = rig.sparse_weights ? *rig.sparse_weights : ExactSparse(*rig.dense_weights);
  NormalizeRows(&W);
  return W;
}

}  // namespace skinning
