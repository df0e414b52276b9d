// Support joints (Yamamoto et al., WSCG 2011, Sec. 4–5): a virtual joint that slides along the
// parent bone of a bent joint and re-aims at the bent joint's child, used by PSD (psd.h) to
// reduce the volume loss of skinning near bent joints; and their fit to PSD's examples.
#ifndef SKINNING_CORE_SKINNING_SUPPORT_JOINTS_H_
#define SKINNING_CORE_SKINNING_SUPPORT_JOINTS_H_

#include <vector>

#include <Eigen/Core>
#include <Eigen/Geometry>

#include "absl/status/statusor.h"
#include "core/geometry/mesh.h"
#include "core/geometry/volume_domain.h"
#include "core/rig/skeleton.h"
#include "core/rig/transform.h"
#include "core/skinning/psd.h"
#include "core/util/progress.h"

namespace skinning {

struct SupportJoint {
  int joint = -1;   // the bent joint j
  int parent = -1;  // its parent joint p
  // Bind-space positions: j, p, and the child end point c (the first child joint in index order
  // not at j's position, else j's explicit tail).
  Eigen::Vector3d joint_position = Eigen::Vector3d::Zero();
  Eigen::Vector3d parent_position = Eigen::Vector3d::Zero();
  Eigen::Vector3d child_position = Eigen::Vector3d::Zero();
  double parent_length() const { return (parent_position - joint_position).norm(); }
};

// The support joints for a set of poses: one per deforming joint j whose local rotation differs
// from its bind-pose local rotation (BindPoseLocals) by more than 1e-6 rad in one of `poses`
// (each a full list of #joints local transforms), that has a deforming parent p at a different
// position and a child end point. Ordered by joint index.
std::vector<SupportJoint> FindSupportJoints(const Skeleton& skeleton,
                                            const std::vector<std::vector<Transform>>& poses);

// The support joint's skinning transform (bind → posed) at slide x ∈ [0, 1]:
//   s = j + x (p − j),  s' = T_p s,  T^S(y) = s' + R_min L_p (y − s)
// where L_p is the linear part of T_p and R_min the smallest rotation taking L_p (c − s) to
// T_j c − s' (Eigen::Quaterniond::FromTwoVectors). T: #joints skinning transforms
// (SkinningTransforms). At the bind pose (identity T) it is the identity for every x.
Eigen::Affine3d SupportJointTransform(const SupportJoint& support,
                                      const std::vector<Eigen::Affine3d>& T, double x);

// Geodesic volumetric distance (Yamamoto Sec. 5) from a bind-space point to every mesh vertex:
// Dijkstra over the domain's node graph (26-neighbourhood for voxels; edge length = Euclidean
// distance of the node centres) from the nodes within PointReach(domain) of `point`,
// then interpolated to the vertices with domain.to_mesh. Vertices in a part of the
// domain the point does not reach get +infinity.
//   domain  a VolumeDomain (BuildVoxelDomain) of the mesh
// Returns #V distances. FAILED_PRECONDITION when the point lies outside the domain.
absl::StatusOr<Eigen::VectorXd> GeodesicVertexDistances(const VolumeDomain& domain,
                                                        const Eigen::Vector3d& point);

// Blends support joints into per-vertex maps: M_i ← (1 − Σ_s w_is) M_i + Σ_s w_is T^S_s for
// every vertex in `vertices` (3 × 4 maps; weights #V by #support, weight_sums their row sums).
void AddSupportMaps(const Eigen::MatrixXd& weights, const Eigen::VectorXd& weight_sums,
                    const std::vector<int>& vertices, const std::vector<Eigen::Affine3d>& TS,
                    std::vector<Eigen::Matrix<double, 3, 4>>* M);

struct SupportJointFitOptions {
  VoxelGridOptions voxel;      // the grid of the geodesic distances
  double sigma = 0.35;         // Gaussian width σ_s as a multiple of the parent bone's length
  int coarse_samples = 21;     // equally spaced slides tried first (≥ 2)
  int refine_iterations = 40;  // golden-section steps around the best sample
  int sweeps = 2;              // cyclic sweeps over the support joints of one example

  // INVALID_ARGUMENT naming the first bad field (as PsdOptions names it) and its value.
  absl::Status Validate() const;
};

// The fit options PsdOptions describes (voxel and the support_* fields).
SupportJointFitOptions SupportJointFitOptionsOf(const PsdOptions& options);

struct SupportJointFit {
  Eigen::MatrixXd weights;      // #V by #support w^S (rows with a sum over 1 divided by it)
  Eigen::VectorXd weight_sums;  // #V row sums of `weights`
  std::vector<int> vertices;    // the vertices with a positive sum
  std::vector<std::vector<double>> slides;  // per example, per support joint: the slide x
  VoxelGridReport grid;         // the geodesic-distance grid
};

// PSD's support-joint fit (psd.h describes the model): the support weights w^S_is =
// exp(−g_is² / (2 σ_s²)) · e_i from geodesic vertex distances g on a voxel grid of the mesh and
// the normalized base-skinning error e of the examples, then per example the slides x (coarse
// search, golden-section refinement, `sweeps` cyclic sweeps over the support joints).
//   found      the support joints (FindSupportJoints of the examples' poses)
//   T          per example, its #joints skinning transforms
//   base_maps  per example, per vertex the base skinning map A_i (3 × 4); on return with the
//              support joints blended in at the fitted slides (AddSupportMaps)
// FAILED_PRECONDITION when the grid cannot be built or a support joint lies outside it;
// CANCELLED when cancelled. Progress stages "psd: support weights", "psd: support slides" (in
// the caller's PSD build range).
absl::StatusOr<SupportJointFit> FitSupportJoints(
    const Mesh& mesh, const Skeleton& skeleton, const std::vector<PsdExample>& examples,
    const std::vector<SupportJoint>& found, const std::vector<std::vector<Eigen::Affine3d>>& T,
    const SupportJointFitOptions& options, const Progress& progress,
    std::vector<std::vector<Eigen::Matrix<double, 3, 4>>>* base_maps);

}  // namespace skinning

#endif  // SKINNING_CORE_SKINNING_SUPPORT_JOINTS_H_
