#include "core/rig/rig.h"

#include <algorithm>

namespace skinning {

absl::Status ValidateRig(const Rig& rig) {
  if (auto s = ValidateMesh(rig.mesh, "rig.mesh"); !s.ok()) return s;
  if (auto s = ValidateSkeleton(rig.skeleton, "rig.skeleton"); !s.ok()) return s;
  const int nv = static_cast<int>(rig.mesh.V.rows());
  if (rig.sparse_weights)
    return ValidateWeights(*rig.sparse_weights, nv, rig.skeleton.size(), "rig.weights");
  if (rig.dense_weights)
    return ValidateWeights(*rig.dense_weights, nv, rig.skeleton.size(), "rig.weights");
  return absl::OkStatus();
}

SparseWeights ExactSparseWeights(const Rig& rig) {
  SparseWeights W;
  if (rig.sparse_weights) {
    W = *rig.sparse_weights;
  } else {
    const Eigen::MatrixXd& D = *rig.dense_weights;
    int k = 1;
    for (int i = 0; i < D.rows(); ++i)
      k = std::max(k, static_cast<int>((D.row(i).array() > 0).count()));
    W = TopK(D, k);
  }
  NormalizeRows(&W);
  return W;
}

}  // namespace skinning
