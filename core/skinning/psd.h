// Pose space deformation (Lewis, Cordner & Fong 2000) over LBS or DQS, optionally with the
// support joints of Yamamoto et al. (WSCG 2011, Sec. 3–6).
#ifndef SKINNING_CORE_SKINNING_PSD_H_
#define SKINNING_CORE_SKINNING_PSD_H_

#include <memory>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <Eigen/Geometry>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/geometry/mesh.h"
#include "core/geometry/volume_domain.h"
#include "core/rig/pose.h"
#include "core/rig/skeleton.h"
#include "core/skinning/weights.h"
#include "core/util/progress.h"

namespace skinning {

// Given example shapes (a sculpted mesh at an example pose), PSD
//   1. inverse-skins every example to the base (bind) pose:
//        δ_ik = A_i(P_k)⁻¹ (example_ik) − v_i       (A_i: vertex i's blended affine map, 3×3 solve)
//   2. interpolates the base-pose displacements δ_ik in pose space with radial basis functions:
//        r_k(P) with r_k(P_l) = [k == l]  (exact at every example)
//   3. skins the interpolated shape:
//        Deform(P)_i = A_i(P) (v_i + Σ_k r_k(P) δ_ik).
//
// Base skinning A_i(P): the per-vertex blended transform of LBS (Σ_j w_ij T_j(P)) or of DQS (the
// blended rigid transform, with DQS's stretch blend when a transform has scale; see dqs.h), where
// T_j = SkinningTransforms (core/rig/pose.h). The maps are extracted from the library's own Lbs /
// Dqs (applied to the unit points 0, e_x, e_y, e_z), so PSD at the rest pose IS plain skinning.
//
// Support joints (Yamamoto Sec. 4–5): for each bent joint j — a deforming joint whose local
// rotation differs from its rest rotation in some example, that has a deforming parent joint p
// and a child end point c (its first child joint in index order, else its explicit tail) — one
// support joint slides along the parent bone, s(x) = j + x·(p − j), x ∈ [0, 1] (bind positions),
// and re-aims at the child: its transform maps bind → posed as
//        T^S(y) = s' + R_min · L_p (y − s),   s' = T_p s,
// i.e. the parent's linear part L_p followed by the smallest rotation R_min taking the rest virtual
// bone L_p (c − s) to the direction of the posed one (T_j c − s'), about s (the virtual bone keeps
// its length, so it reaches T_j c exactly only at x = 0). With support joints the per-vertex map is
// the affine combination A_i = (1 − Σ_s w^S_is) · base_i + Σ_s w^S_is · T^S_s. Per example k the
// slide x_sk minimizes Σ_i |example_ik − A_i(P_k; x) v_i|² (a coarse search over
// `support_coarse_samples` equally spaced x, then golden-section refinement in the bracket around
// the best sample; several support joints: `support_sweeps` cyclic coordinate sweeps). An example
// in which T^S does not depend on x (joint and parent unposed) gets the mean slide of the others
// instead of an arbitrary minimizer. At other
// poses x_s(P) = x̄_s + Σ_k r_k(P)(x_sk − x̄_s) with the RBF weights of the joint's region (x̄_s the
// mean over the examples; at the rest pose T^S is the identity whatever x is). PSD then runs on
// what remains: inverse and forward skinning use A_i with the support joints. Support weights:
// w^S_is = exp(−g_is² / (2 σ_s²)) · e_i, where g_is is the geodesic voxel distance from joint j
// (Dijkstra over BuildVoxelDomain's 26-neighbour node graph from the nodes within PointReach of j,
// interpolated to the vertices by to_mesh), σ_s = support_sigma × |p − j| (the parent bone's
// length), and e_i = max over examples of |example_ik − base_i(P_k) v_i|, normalized to max 1 over
// the vertices. Where Σ_s w^S_is > 1 the support weights of that vertex are divided by their sum.
//
// Pose space: the distance between two poses is per joint
//        d_j(P, Q)² = θ_j² + |Δt_j|² / ℓ² + |log s_j(P) − log s_j(Q)|²
// with θ_j the angle of R_j(P)⁻¹ R_j(Q) (axis-angle distance of the LOCAL rotations), Δt_j the
// difference of local translations and ℓ the mesh's bounding-box diagonal (translations and scales
// count so that examples that differ only there stay distinguishable). Only "active" joints count:
// those whose local transform differs between two of the examples (incl. the rest pose).
// Regions: vertex i is influenced by the joints it has weight on, their child joints (a bone's
// shape near its end follows its child's rotation) and, with support joints, the bent joint of
// every support joint with w^S_is > 0; a region is the set of vertices with the same influencing ∩
// active joint set. Each region has its own RBF: D(P, Q)² = Σ_{j ∈ region} d_j², Gaussian kernel
// φ(D) = exp(−D² / σ_r²), σ_r = rbf_width × the mean over the centres of the distance to the
// nearest other centre. If the restricted distance makes two centres coincide (< 1e-9 rad), the
// region uses all active joints instead, so interpolation stays exact. The centres are the examples
// plus an implicit rest-pose example with zero displacement (unless an example is at the rest pose,
// which then takes its place). The RBF system Φ C = I is solved in double by full-pivot LU.
//
// The "rest pose" of the implicit example is the bind pose (BindPoseLocals; an empty Pose), where
// every skinning transform is the identity and the mesh is the bind mesh; for rigs whose
// Joint::rest reproduces the bind pose (the usual case) it is also RestPose(skeleton).
//
// Storage: δ is kept sparsely per example (vertices with |δ_ik| > 1e-12 · bounding-box diagonal;
// below that it is rounding noise of the inverse solve), grouped by region, so a frame costs a copy
// of the base positions, Σ_k nnz_k multiply-adds and one LBS/DQS pass (LBS with support joints:
// one LbsFloat pass with k + #support influences; DQS with support: DqsFloat, then the support
// blend on the vertices with support weight).
// Thread safety: a built model is immutable; Deform and DeformFloat may run concurrently
// (DeformFloat keeps a thread_local scratch buffer of #V·3 floats).

struct PsdExample {
  std::string name;
  Pose pose;       // core/rig/pose.h: local transform per joint (full pose; empty = bind pose)
  RowMatrixX3d V;  // #V×3 the sculpted mesh in that pose (same space as skinned positions)
};

enum class PsdBase { kLbs, kDqs };

struct PsdOptions {
  PsdBase base = PsdBase::kLbs;
  bool support_joints = false;
  // The grid for geodesic voxel distances (support-joint weights only); default resolution 64.
  VoxelGridOptions voxel;

  // RBF kernel width σ_r as a multiple of the mean nearest-centre distance of the region's
  // centres (Gaussian φ(D) = exp(−D²/σ_r²)). Larger is smoother between examples but worse
  // conditioned. Must be > 0.
  double rbf_width = 1.0;

  // Support joints: Gaussian width of the support weights as a multiple of the parent bone's
  // length (σ_s = support_sigma · |p − j|). Must be > 0.
  double support_sigma = 0.35;
  // Coarse search: this many equally spaced x in [0, 1] (≥ 2), then golden-section refinement
  // of the bracket around the best sample for `support_refine_iterations` steps.
  int support_coarse_samples = 21;
  int support_refine_iterations = 40;
  // Cyclic coordinate sweeps over the support joints of one example (only matters with ≥ 2
  // support joints whose weights overlap).
  int support_sweeps = 2;

  // INVALID_ARGUMENT naming the first bad field and its value (the support-joint fields only
  // with support_joints).
  absl::Status Validate() const;
};

struct PsdReport {
  int examples = 0;  // the examples given (the implicit rest example not counted)
  int regions = 0;   // distinct RBF interpolants (joint subsets)
  // Per example, per support joint (empty without support joints): the optimized slide x.
  std::vector<std::vector<double>> support_slide;
  // Max over examples and vertices |Deform(example pose) − example|, measured after Build.
  double max_reproduction_error = 0.0;
  double seconds = 0.0;
  std::string detail;  // human-readable summary (support joints, regions, non-zeros)

  // "4 examples, 3 regions, max reproduction error 2.1e-13, 0.52 s; <detail>"
  std::string BriefReport() const;
};

// INVALID_ARGUMENT with the field and index: wrong vertex count ("examples[2].positions: 1200
// vertices, the rig has 1250"), non-finite coordinates ("examples[2].positions[17].y is not
// finite"), an invalid pose (ValidatePose, field "examples[2].pose"), two examples with the same
// pose (max per-joint rotation difference < 1e-6 rad and translations/scales equal within 1e-9):
// "examples[3] has the same pose as examples[1] ('elbow-90')". An example AT the rest pose is
// allowed (it replaces the implicit rest example). Two examples, or an example and the rest pose,
// nearer than kMinExampleDistance in pose space (but not the same pose) are refused too: the
// interpolant between them has the slope of their shapes' difference over their distance, and
// amplifies it everywhere else (two shapes 0.001 rad apart, 0.1 apart in shape, moved a 2-unit
// arm by 26 units 0.4 rad away). `diagonal`: the mesh's bounding-box diagonal ℓ.
inline constexpr double kMinExampleDistance = 0.01;
absl::Status ValidateExamples(const Skeleton& skeleton, int num_vertices,
                              const std::vector<PsdExample>& examples, double diagonal,
                              const char* field = "examples");

struct PsdModelData;  // psd_model.h

class PsdModel {
 public:
  // mesh     the rig's mesh (V #V×3 bind positions; F for the voxel grid with support joints)
  // skeleton the rig's skeleton (validated by the caller or here)
  // weights  the base skinning weights (#V×k sparse, rows sum to 1)
  // examples ≥ 1 examples, checked with ValidateExamples
  // INVALID_ARGUMENT for bad input or options, FAILED_PRECONDITION when support joints are asked
  // for but no joint qualifies or the voxel grid fails, CANCELLED when cancelled.
  static absl::StatusOr<std::shared_ptr<const PsdModel>> Build(
      const Mesh& mesh, const Skeleton& skeleton, const SparseWeights& weights,
      const std::vector<PsdExample>& examples, const PsdOptions& options,
      PsdReport* report = nullptr, const Progress& progress = {});

  // U: #V×3 positions at `pose` (INVALID_ARGUMENT for a pose that fails ValidatePose).
  absl::Status Deform(const Pose& pose, RowMatrixX3d* U) const;
  // float32 per-frame path for the server: U = n*3 floats (n = num_vertices()), xyz interleaved.
  // `rest`, when given (#V·3 floats), replaces the model's rest positions under the example
  // corrections: a mesh morphed by morph targets, corrected, then skinned (morph first, then the
  // examples, then skinning). The corrections stay those the examples were fitted with.
  absl::Status DeformFloat(const Pose& pose, float* U, const float* rest = nullptr) const;

  int num_examples() const;
  int num_vertices() const;
  int num_support_joints() const;
  const PsdOptions& options() const;

  // Per support joint: the bent joint it belongs to (index into the skeleton).
  std::vector<int> support_joint_bent_joints() const;
  // #V×#support support weights w^S (zero columns when there are no support joints).
  const Eigen::MatrixXd& support_weights() const;
  // The slide x of every support joint at `pose` (interpolated as described above).
  absl::StatusOr<std::vector<double>> SupportSlides(const Pose& pose) const;

  ~PsdModel();

 private:
  PsdModel();
  std::unique_ptr<PsdModelData> d_;
};

}  // namespace skinning

#endif  // SKINNING_CORE_SKINNING_PSD_H_
