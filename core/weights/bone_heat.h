// Bone heat weights (Baran & Popović 2007, "Automatic rigging and animation of 3D characters").
#ifndef SKINNING_CORE_WEIGHTS_BONE_HEAT_H_
#define SKINNING_CORE_WEIGHTS_BONE_HEAT_H_

#include <vector>

#include <Eigen/Core>

#include "absl/status/statusor.h"
#include "core/geometry/mesh.h"
#include "core/rig/bones.h"
#include "core/util/progress.h"

namespace skinning {

struct BoneHeatOptions {
  // Heat transfer strength c in H_ii = c / d_i², d_i the distance to the nearest visible bone
  // (the paper uses c = 1).
  double heat_coefficient = 1.0;
  // Bones within this factor of the nearest visible bone's distance all count as nearest (the
  // paper: "if the shortest distance to h bones is d, H_jj = h·c/d²" for ties within 1e-8).
  double tie_tolerance = 1e-8;
};

struct BoneHeatReport {
  int vertices_without_visible_bone = 0;  // fell back to the nearest bone, visible or not
  double seconds = 0.0;
};

// Solves (−Δ + H) w_j = H p_j for every deforming joint j on the surface, with Δ the cotangent
// Laplacian (mass-weighted), p_ij = 1 when joint j's bone is the nearest bone visible from
// vertex i (line of sight inside the mesh, tested by ray casting against a BVH of the mesh), and
// one CHOLMOD factorization shared by all joints. Results clamped to [0, 1] and normalized.
// Returns #V by #joints (columns of non-deforming joints are zero).
absl::StatusOr<Eigen::MatrixXd> BoneHeatWeights(const Mesh& mesh,
                                                const std::vector<JointHandle>& handles,
                                                const BoneHeatOptions& options = {},
                                                BoneHeatReport* report = nullptr,
                                                const Progress& progress = {});

}  // namespace skinning

#endif  // SKINNING_CORE_WEIGHTS_BONE_HEAT_H_
