// A rig: a mesh, its skeleton and (optionally) its skinning weights, validated together.
#ifndef SKINNING_SERVER_CONVERT_RIG_H_
#define SKINNING_SERVER_CONVERT_RIG_H_

#include <optional>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "absl/status/status.h"
#include "core/geometry/mesh.h"
#include "core/rig/skeleton.h"
#include "core/skinning/weights.h"

namespace skinning {

struct Rig {
  std::string name;
  Mesh mesh;
  // The meshes `mesh` is made of (empty: one mesh), for output that keeps them apart.
  std::vector<MeshPart> mesh_parts;
  Skeleton skeleton;
  std::vector<MorphTarget> morph_targets;  // applied before skinning; may be empty
  // At most one of these is set; neither means the rig needs a bake before posing.
  std::optional<SparseWeights> sparse_weights;   // #V by k
  std::optional<Eigen::MatrixXd> dense_weights;  // #V by #joints
  bool has_weights() const { return sparse_weights.has_value() || dense_weights.has_value(); }
};

// ValidateMesh, ValidateMeshParts, ValidateSkeleton and ValidateWeights with the fields named "rig.mesh",
// "rig.skeleton" and "rig.weights".
absl::Status ValidateRig(const Rig& rig);

// The exact sparse form of the rig's weights: dense weights become k = (most non-zeros in a
// row) influences, so nothing is truncated. Rows renormalized. Requires has_weights().
SparseWeights ExactSparseWeights(const Rig& rig);

}  // namespace skinning

#endif  // SKINNING_SERVER_CONVERT_RIG_H_
