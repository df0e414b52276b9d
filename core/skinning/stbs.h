// Stretchable, twistable bones (Jacobson & Sorkine 2011, Eq. 4–6) over LBS and DQS.
#ifndef SKINNING_CORE_SKINNING_STBS_H_
#define SKINNING_CORE_SKINNING_STBS_H_

#include <vector>

#include <Eigen/Core>
#include <Eigen/Geometry>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/geometry/mesh.h"
#include "core/rig/bones.h"
#include "core/rig/pose.h"
#include "core/rig/skeleton.h"
#include "core/skinning/dqs.h"
#include "core/skinning/weights.h"

namespace skinning {

// Each joint j whose handle is a single bone segment a_j → b_j (bind space) may stretch by λ_j
// along the bone and twist about it by θ_a at a and θ_b at b. A vertex p with endpoint weight e
// for that bone (0 at a, 1 at b) is first moved by the bone's own deformation
//   G_j(p) = a_j + K_j(e)(e s_j + p − a_j),  s_j = (λ_j − 1)(b_j − a_j),
//   K_j(e) = rotation about the unit bone axis by (1 − e) θ_a + e θ_b,
// and then by the joint's skinning transform T_j; the per-joint results are blended by the bone
// weights, linearly (Eq. 5) or as dual quaternions (Eq. 6).

// A joint's bone is its single JointHandle segment (joint → tail, or joint → its only child, or
// a leaf's continued bone); joints with several segments, only a point, or no deformation have
// no bone (valid = false).
struct StbsBone {
  bool valid = false;
  Eigen::Vector3d a, b;  // bind space; start (at the joint) and end
};
// handles  #J JointHandles (core/rig/bones.h); result #J, index = joint.
std::vector<StbsBone> StbsBones(const std::vector<JointHandle>& handles);

struct BoneStretchTwist {  // per joint; empty vectors mean defaults
  std::vector<double> stretch;            // λ_j, length scale of joint j's bone (1 = rest)
  std::vector<double> twist_a, twist_b;   // radians at the bone's start a and end b (0 = rest)
};

// The largest |twist| angle (rad) and stretch factor (and the smallest, its inverse) a pose may
// give: the kernels' sine and cosine reduce angles below 100,000 rad, and a stretch past 1e6 of a
// bone's length is no pose (1e20 overflowed the posed vertices).
inline constexpr double kMaxBoneTwist = 10000.0;
inline constexpr double kMaxBoneStretch = 1e6;

// INVALID_ARGUMENT: sizes ≠ #J (when non-empty), non-finite, out of the ranges above, stretch ≤ 0,
// or a non-default value on a joint without a bone: "<field>.bone_stretch[3] = 2: joint 3 (hips) has no single bone".
// Twist entries are named as on the wire: twist_a[j] is bone_twist[2j], twist_b[j] is
// bone_twist[2j+1].
//   bones  #J from StbsBones
absl::Status ValidateStretchTwist(const Skeleton& skeleton, const std::vector<StbsBone>& bones,
                                  const BoneStretchTwist& st, const char* field = "pose");

// Skinning transforms (#J) where each stretched bone j moves its descendants by the stretch
// offset: child c's world transform = W_j · Translation(δ_j) · local_c with
// δ_j = (λ_j − 1) · IB_j.linear() · (b_j − a_j) (IB = inverse bind). Equals SkinningTransforms
// when every λ = 1. Validates the pose (ValidatePose) and st (ValidateStretchTwist).
//   order  TopologicalOrder(skeleton);  bones  #J from StbsBones
absl::StatusOr<std::vector<Eigen::Affine3d>> StretchedSkinningTransforms(
    const Skeleton& skeleton, const std::vector<int>& order, const Pose& pose,
    const std::vector<StbsBone>& bones, const BoneStretchTwist& st);

// Eq. 5: p' = Σ_i w_i T_i (a_i + K_i(e)(e s_i + p − a_i)). Joints without a bone: plain T_i p.
// Reference, dense.
//   V      #V by 3 bind-space positions
//   W      #V by #J bone weights (rows sum to 1)
//   E      #V by #J endpoint weights (column j = e of joint j's bone, in [0, 1])
//   bones  #J (StbsBones);  T  #J skinning transforms (e.g. StretchedSkinningTransforms)
//   st     stretch and twists (empty = defaults)
//   U      out: #V by 3
void StbsLbs(const RowMatrixX3d& V, const Eigen::MatrixXd& W, const Eigen::MatrixXd& E,
             const std::vector<StbsBone>& bones, const std::vector<Eigen::Affine3d>& T,
             const BoneStretchTwist& st, RowMatrixX3d* U);

// Eq. 6: dual-quaternion blending of the per-vertex transforms Φ_i = T_i ∘ G_i (G_i the rigid
// bone deformation above). Arguments as StbsLbs. When T_i is rigid every Φ_i is rigid and this
// is the paper's method. Otherwise the fallback of core/skinning/dqs.h applies to the Φ_i: each
// is split by polar decomposition into a rigid part and a symmetric stretch (for Φ_i's linear
// part A_i K: rotation R_i K and stretch Kᵀ S_i K), the stretches are blended linearly and
// applied first, then the blended rigid motion.
void StbsDqs(const RowMatrixX3d& V, const Eigen::MatrixXd& W, const Eigen::MatrixXd& E,
             const std::vector<StbsBone>& bones, const std::vector<Eigen::Affine3d>& T,
             const BoneStretchTwist& st, RowMatrixX3d* U);

// Sparse float path for the server. Per-frame parameters, computed once per frame; opaque to
// callers (`params` holds kStride floats per joint, layout in stbs.cc).
struct StbsFrameFloat {
  static constexpr int kStride = 80;
  int num_joints = 0;
  std::vector<float> params;  // #J * kStride
  bool any_stretch = false;   // some T_i is not rigid (DQS takes the two-phase fallback)
};
//   bones  #J;  T  #J skinning transforms;  st  as in StbsLbs
StbsFrameFloat PrepareStbsFloat(const std::vector<StbsBone>& bones,
                                const std::vector<Eigen::Affine3d>& T, const BoneStretchTwist& st);

// float32 kernel.
//   V         n*3 floats, xyz interleaved;  U  n*3 out (may not alias V)
//   W         n by k bone weights (rows sum to 1)
//   endpoint  n by k endpoint weights aligned with W.joints (AlignEndpointWeights), in [0, 1]
//             (outside it the twist angles' sines lose accuracy)
//   dqs       false: Eq. 5 (LBS); true: Eq. 6 (DQS)
void StbsFloat(const float* V, int n, const SparseWeights& W, const RowMatrixXf& endpoint,
               const StbsFrameFloat& frame, bool dqs, float* U);

// endpoint(i, c) = E(i, W.joints(i, c)) (0 in unused slots).
//   W  #V by k;  E  #V by #J;  result #V by k
RowMatrixXf AlignEndpointWeights(const SparseWeights& W, const Eigen::MatrixXd& E);

// StbsFloat through a DQS vertex order of W (dqs.h's PrepareDqsLaneOrder, as the server prepares
// one per rig and bake): the vertices skinned in the order's blocks of 8, which share their
// joints where a file's order does not, 256 at a time gathered and scattered back (CesiumMan in
// bench/deformers_bench: 69–75 → 53–58 µs a frame over LBS, 95–101 → 63–70 over DQS).
// `endpoint_lanes` = LaneEndpointWeights(W, endpoint, lanes). Returns false, writing nothing,
// where it does not apply (call StbsFloat then): an empty order, k ≠ 4, DQS with
// frame.any_stretch (the per-vertex two-phase path), or endpoint_lanes of another shape.
bool StbsFloat(const float* V, const DqsLaneOrder& lanes, const RowMatrixXf& endpoint_lanes,
               const StbsFrameFloat& frame, bool dqs, float* U);
// `endpoint` (aligned with W's slots, AlignEndpointWeights) in the rows and slots of `lanes`
// (#V by lanes.k; empty for an empty order).
RowMatrixXf LaneEndpointWeights(const SparseWeights& W, const RowMatrixXf& endpoint, const DqsLaneOrder& lanes);

}  // namespace skinning

#endif  // SKINNING_CORE_SKINNING_STBS_H_
