// The swing/twist joint deformer (Kavan & Sorkine 2012, Sec. 3.3–3.5, Eq. 5–6).
#ifndef SKINNING_CORE_SKINNING_SWING_TWIST_H_
#define SKINNING_CORE_SKINNING_SWING_TWIST_H_

#include <cmath>
#include <vector>

#include <Eigen/Core>
#include <Eigen/Geometry>

#include "core/geometry/mesh.h"
#include "core/rig/joint_frames.h"
#include "core/skinning/sincos_poly.h"
#include "core/skinning/weights.h"

namespace skinning {

// Frames come from core/rig/joint_frames.h (JointFrame: centre c, axes C with z along the child
// bone, parent p = nearest deforming ancestor, deformer flag). M = skinning transforms (#J, bind
// space → posed, world · inverse bind). For a joint j with a deformer (parent p):
//   Δ = M_p⁻¹ M_j; Rot = nearest rotation of Δ's linear part (Δ's own when rigid);
//   E(x) = Δx − (c + Rot(x − c))     (affine remainder; 0 for a rotation about the joint, and
//                                     taken as 0 within float rounding: kFloatRigidTolerance)
//   Q = Cᵀ Rot C = Q_swing · Q_twist (split about z), twist angle θ;
//   x̃ = Cᵀ(p̃ − c);  Γ = ((1 − s) I + s Q_swing) · Rz(t θ) · x̃          (Eq. 6)
//   deformer_j(p̃) = M_p (c + C Γ + s E(p̃))
// so s = t = 1 gives M_j p̃ and s = t = 0 gives M_p p̃. Deforming joints without a deformer
// (roots) and non-deforming joints: deformer_j(p̃) = M_j p̃. Result p = Σ_j d_j deformer_j(p̃)
// (Eq. 5).

// Reference (double, dense).
//   V       #V by 3 bind-space positions
//   D       #V by #J deformer weights d (rows sum to 1)
//   S, T    #V by #J swing weights s and twist weights t (any real; usually in [0, 1])
//   frames  #J joint frames (JointFrames)
//   M       #J skinning transforms
//   U       out: #V by 3 posed positions
void SwingTwist(const RowMatrixX3d& V, const Eigen::MatrixXd& D, const Eigen::MatrixXd& S,
                const Eigen::MatrixXd& T, const std::vector<JointFrame>& frames,
                const std::vector<Eigen::Affine3d>& M, RowMatrixX3d* U);

// Sparse per-vertex layout for the per-frame kernel: the top k deformer weights (renormalized)
// and the s, t of those slots' joints.
struct SwingTwistWeights {
  SparseWeights deformer;    // #V by k
  RowMatrixXf swing, twist;  // #V by k, aligned with deformer.joints (0 in unused slots)
  // Optional (k ≤ 16): the same data grouped by deformer, in blocks of 8 vertices, so that the
  // per-frame kernel runs each joint's deformer once per block on lane vectors, however many
  // slots the joint takes among the 8 vertices. Block b (vertices 8b..8b+7) has the entries
  // [lane_offsets[b], lane_offsets[b + 1]), one per distinct joint with a non-zero weight in the
  // block: lane_joints[e] the joint, lanes[24 e + {0, 8, 16} + l] the weight, swing and twist of
  // vertex 8b + l for it (0 where the vertex does not use it). Filled by MakeSwingTwistWeights
  // and PackSwingTwistWeights; empty (or stale in size) = not used. Re-pack after editing rows.
  std::vector<int32_t> lane_offsets;  // ⌊#V/8⌋ + 1
  std::vector<int32_t> lane_joints;   // #entries
  std::vector<float> lanes;           // #entries · 24
  bool unit_twist = false;            // every packed twist weight is in [−1, 1] (no angle reduction)
};
//   D, S, T  #V by #J as in SwingTwist;  k ≥ 1 slots per vertex.
SwingTwistWeights MakeSwingTwistWeights(const Eigen::MatrixXd& D, const Eigen::MatrixXd& S,
                                        const Eigen::MatrixXd& T, int k);
// Fills W->lane_offsets, lane_joints and lanes from the rows (k ≤ 16; clears them for larger k).
void PackSwingTwistWeights(SwingTwistWeights* W);

// Per-frame prepared parameters (float), computed once per frame from frames and M. Opaque to
// callers; `params` holds kStride floats per joint (layout in swing_twist.cc).
struct SwingTwistFrameFloat {
  static constexpr int kStride = 56;
  int num_joints = 0;
  std::vector<float> params;       // #J * kStride
  bool any_remainder = false;      // some deformer has a non-zero affine remainder E
};
//   frames  #J;  M  #J skinning transforms (same order).
SwingTwistFrameFloat PrepareSwingTwistFloat(const std::vector<JointFrame>& frames,
                                            const std::vector<Eigen::Affine3d>& M);

// float32 kernel: V n*3 floats (xyz interleaved), U n*3 out (may not alias V). W has n rows;
// joint indices must be < frame.num_joints.
void SwingTwistFloat(const float* V, int n, const SwingTwistWeights& W,
                     const SwingTwistFrameFloat& frame, float* U);

// sin and cos of x (radians, |x| < 100,000) in float, to ~2e-7 absolute near 0 (the reduction
// costs float's precision of x beyond): reduction to [−π, π], then SinCosPi (sincos_poly.h).
// Shared by the per-frame kernels (swing/twist, STBS).
inline void FastSinCos(float x, float* s, float* c) {
  constexpr float kInvTwoPi = 0.15915494309189535f;
  constexpr float kTwoPiHi = 6.28125f;                   // exact in float
  constexpr float kTwoPiLo = 1.9353071795864769253e-3f;  // 2π − kTwoPiHi
  // k = round(x / 2π) without a libm call (nearbyint is one on baseline x86-64): the offset
  // keeps the truncation a floor for |x| < 100,000 (twist angles times bone parameters reach
  // ±20,000 rad); clamped before the conversion so that no input is undefined (NaN → 0).
  float kf = x * kInvTwoPi + 16384.5f;
  kf = kf >= 0.0f ? kf : 0.0f;
  kf = kf <= 32767.0f ? kf : 32767.0f;
  const float k = static_cast<float>(static_cast<int>(kf) - 16384);
  x = (x - k * kTwoPiHi) - k * kTwoPiLo;
  SinCosPi(x, s, c);
}

}  // namespace skinning

#endif  // SKINNING_CORE_SKINNING_SWING_TWIST_H_
