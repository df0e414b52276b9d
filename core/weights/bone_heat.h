// Bone heat weights (Baran & Popović 2007, "Automatic rigging and animation of 3D characters").
#ifndef SKINNING_CORE_WEIGHTS_BONE_HEAT_H_
#define SKINNING_CORE_WEIGHTS_BONE_HEAT_H_

#include <string>
#include <vector>

#include <Eigen/Core>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/geometry/mesh.h"
#include "core/rig/bones.h"
#include "core/util/progress.h"

namespace skinning {

struct BoneHeatOptions {
  // Heat transfer strength c in H_ii = c / d_i², d_i the distance to the nearest bone, with
  // −Δ = M⁻¹K (Meyer et al.'s Laplace–Beltrami operator: cotangent stiffness K over the mixed
  // Voronoi area M). The paper says c = 1 without saying how its Laplacian is scaled; Blender's
  // implementation, the weights riggers compare with, builds its Laplacian a quarter of Meyer's
  // (cotangents halved, areas doubled), which is c = 4 here. 4 reproduces Blender on the arm
  // (bench/weights_quality: 0.180 % posed RMS against the arm's weights, Blender 0.175 %).
  double heat_coefficient = 4.0;
  // Bones within this factor of the nearest visible bone's distance all count as nearest (the
  // paper: "if the shortest distance to h bones is d, H_jj = h·c/d²"). 1e-4 relative, Blender's
  // tolerance: a vertex on the plane of a joint is equally near both bones in the model, but the
  // file's float coordinates put the two distances ~1e-7 apart, so an exact tie test gives the
  // whole ring to one bone (RiggedSimple's middle ring: 0.207 % posed RMS, worse than rigid
  // nearest-bone binding at 0.185 %; 1e-4: 0.177 %; the arm and the 19-joint characters move by
  // at most 0.001 %). Larger tolerances blur real nearest bones (1e-2: RiggedFigure 0.217 → 0.264).
  double tie_tolerance = 1e-4;
  // Which bones heat a vertex. false (the paper's words): the nearest bone visible from it, even
  // when a nearer bone is hidden. true (Blender's implementation): the nearest bones only, when
  // visible; a vertex whose nearest bone is hidden gets no heat and takes its neighbours'.
  // Default true: measured closer to the characters' own weights (arm 0.46 % → 0.18 % with c = 4).
  bool nearest_must_be_visible = true;
  // Blender's distance: d / (½ (cos θ + 1.001)), θ between the vertex normal and the direction
  // from the bone to the vertex, so that a bone behind the surface (on the normal's far side)
  // counts as far. false: the Euclidean distance (the paper).
  bool normal_weighted_distance = false;

  // INVALID_ARGUMENT naming the first bad field and its value.
  absl::Status Validate() const;
};

struct BoneHeatReport {
  int vertices_without_visible_bone = 0;  // fell back to the nearest bone, visible or not
  double seconds = 0.0;
  // Added (details of the above): of those vertices, the ones that kept H_ii = 0 and take their
  // heat from their neighbours (the paper's rule). The others lie on a connected component of
  // the mesh from which no bone is visible at all (whose system would otherwise be singular), or
  // on no triangle: they are heated by their nearest bone regardless of visibility.
  int vertices_heated_by_neighbours = 0;
  // Added: rows that were all zero after clamping; they get weight 1 on the nearest joint.
  int zero_rows = 0;
  // Added: per-stage wall times in seconds (visibility ray casts, CHOLMOD factorization, solves).
  double visibility_seconds = 0.0;
  double factorize_seconds = 0.0;
  double solve_seconds = 0.0;

  // "12 vertices without a visible bone, 0.87 s"
  std::string BriefReport() const;
};

// Solves (−Δ + H) w_j = H p_j for every deforming joint j on the surface, with Δ the cotangent
// Laplacian (mass-weighted), p_ij = 1 when joint j's bone is vertex i's nearest bone and is
// visible from it (line of sight inside the mesh, tested by ray casting against a BVH of the
// mesh; BoneHeatOptions::nearest_must_be_visible false: the nearest visible bone), and
// one CHOLMOD factorization shared by all joints. Results clamped to [0, 1] and normalized.
// Returns #V by #joints (columns of non-deforming joints are zero).
// Details (added): Δ = −M⁻¹K with K the cotangent stiffness and M the mixed-Voronoi lumped mass
// (core/geometry/cotangent_laplacian.h), solved in the symmetric positive definite form
// (K + MH) w_j = MH p_j. The sources H, p are NearestVisibleBones below; a point handle (leaf
// joint) is a zero-length segment. Vertices that see no bone keep H_ii = 0, unless their whole
// connected component sees none (then it would have no heat at all) or they have zero mass: those
// use their nearest bone regardless of visibility (see BoneHeatReport). A row that is all zero
// after clamping becomes 1 on the nearest joint. Visibility rays run on two threads.
//   mesh     V #V by 3, F #F by 3 (validated: INVALID_ARGUMENT names the field)
//   handles  #joints, index = weight column (JointHandles); INVALID_ARGUMENT when no deforming
//            joint has a segment or an end point is not finite
// Progress stages "visibility", "factorize", "solve joint k/n"; CANCELLED when cancelled;
// INTERNAL if CHOLMOD fails.
absl::StatusOr<Eigen::MatrixXd> BoneHeatWeights(const Mesh& mesh,
                                                const std::vector<JointHandle>& handles,
                                                const BoneHeatOptions& options = {},
                                                BoneHeatReport* report = nullptr,
                                                const Progress& progress = {});

// Added for tests and diagnostics: the heat sources of the system above.
struct BoneHeatSources {
  // #V H_ii = h·c/d_i², d_i the distance to the nearest visible bone (floored at 1e-6 of the
  // bounding-box diagonal) and h the number of joints tied at that distance; 0 for a vertex that
  // sees no bone.
  Eigen::VectorXd heat;
  // #V by #joints p_ij = 1/h for each of the h nearest visible joints, 0 otherwise (all zero for
  // a vertex that sees no bone).
  Eigen::MatrixXd nearest;
  // #V nearest joint regardless of visibility (-1 when no joint has a segment).
  Eigen::VectorXi nearest_any;
};

// The nearest visible joints of every vertex: the segment from the vertex to the closest point
// of a joint's bone segment (or point) must not cross the mesh (hits within 1e-6 of the
// bounding-box diagonal of either end are ignored). The rule of BoneHeatWeights before its
// fallbacks. Preconditions: mesh valid (ValidateMesh), handles as from JointHandles.
//   V  #V by 3, F  #F by 3 (the mesh), handles  one per joint.
BoneHeatSources NearestVisibleBones(const RowMatrixX3d& V, const RowMatrixX3i& F,
                                    const std::vector<JointHandle>& handles,
                                    const BoneHeatOptions& options = {});

}  // namespace skinning

#endif  // SKINNING_CORE_WEIGHTS_BONE_HEAT_H_
