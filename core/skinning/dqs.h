// Dual quaternion skinning (Kavan, Collins, Žára, O'Sullivan 2008).
#ifndef SKINNING_CORE_SKINNING_DQS_H_
#define SKINNING_CORE_SKINNING_DQS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include <Eigen/Geometry>

#include "core/geometry/mesh.h"
#include "core/skinning/weights.h"

namespace skinning {

// Each skinning transform T_j = [A_j | t_j] is split by polar decomposition A_j = R_j S_j into a
// rigid part (R_j, t_j) → unit dual quaternion q_j and a symmetric stretch S_j. Per vertex:
//   1. Antipodality: every q_j is flipped to the hemisphere of the vertex's most influential
//      joint (dot(real_j, real_pivot) < 0 ⇒ q_j = −q_j), so blending takes the short path.
//   2. Non-rigid scale fallback (the paper's two-phase skinning, Sec. 5): the stretches are
//      blended linearly, S = Σ w_j S_j, and applied first, p = S v; when every S_j is the
//      identity this is skipped and DQS is exactly the rigid method. A_j within the float
//      rounding of rig data of a rotation (kFloatRigidTolerance, core/rig/transform.h) counts as
//      rigid: R_j is its nearest rotation and S_j the identity. (The implementation divides
//      S by Σ w_j, which is 1 for valid weights: like the normalized rigid blend of step 3, the
//      stretch then does not pick up the rounding of float weights' row sums.)
//   3. b = Σ w_j q_j, normalized by |b.real|, applied to p as a rigid transform.
// Normals get the blended rotation (and the inverse transpose of S when stretch is present).

// Per-transform data DQS needs, computed once per frame.
struct DqsTransforms {
  std::vector<Eigen::Quaterniond> real;  // #T rotation quaternions
  std::vector<Eigen::Quaterniond> dual;  // #T dual parts
  std::vector<Eigen::Matrix3d> stretch;  // #T symmetric stretch S_j (identity when rigid)
  bool any_stretch = false;
};
DqsTransforms PrepareDqs(const std::vector<Eigen::Affine3d>& T);

// Arguments as Lbs in lbs.h.
void Dqs(const RowMatrixX3d& V, const SparseWeights& W, const std::vector<Eigen::Affine3d>& T,
         RowMatrixX3d* U, const RowMatrixX3d* N = nullptr, RowMatrixX3d* NU = nullptr);
void Dqs(const RowMatrixX3d& V, const Eigen::MatrixXd& W, const std::vector<Eigen::Affine3d>& T,
         RowMatrixX3d* U);
// As above with the per-frame data already prepared (PrepareDqs), e.g. to reuse it across
// meshes sharing a skeleton. `prepared` holds #T transforms.
void Dqs(const RowMatrixX3d& V, const SparseWeights& W, const DqsTransforms& prepared,
         RowMatrixX3d* U, const RowMatrixX3d* N = nullptr, RowMatrixX3d* NU = nullptr);

// float32 fast path; arguments as LbsFloat. `prepared` comes from PrepareDqsFloat.
struct DqsTransformsFloat {
  std::vector<float> q8;       // #T*8: real xyzw, dual xyzw
  std::vector<float> stretch;  // #T*9 row-major, empty when no transform has stretch
};
DqsTransformsFloat PrepareDqsFloat(const std::vector<Eigen::Affine3d>& T);
void DqsFloat(const float* V, int n, const int32_t* joints, const float* weights, int k,
              const DqsTransformsFloat& prepared, float* U, const float* N = nullptr,
              float* NU = nullptr);

// A vertex order for the 8-lane DQS kernel, prepared once per set of weights (a rig's or a
// bake's) and used every frame. The lanes take 8 consecutive vertices and blend each distinct
// joint among them once, so they pay where neighbours share their joints; meshes come in their
// files' order, where they often do not (CesiumMan: 4.0 distinct joints per block of 8 in file
// order, 2.5 with the vertices sorted by the set of joints they use). The order sorts them so,
// each row's used slots by joint (equal sets fill equal slots), unused slots last.
struct DqsLaneOrder {
  int k = 0;
  std::vector<int32_t> order;   // #V: row r of joints and weights is vertex order[r]
  std::vector<int32_t> joints;  // #V*k in that order
  std::vector<float> weights;   // #V*k
  bool empty() const { return order.empty(); }
  size_t bytes() const { return order.size() * 4 * (1 + 2 * static_cast<size_t>(k)); }
};
// The order for W, or an empty one where it would not pay: k other than 4 or 8 (the lanes take
// only those), fewer than 64 vertices, a build without vector types, blocks that average more than
// 1.5 k distinct joints even sorted (the per-vertex kernel is then as fast), or a file order whose
// blocks hold at most 10 % more distinct joints than sorted (gathering the positions would cost
// more than it saves).
DqsLaneOrder PrepareDqsLaneOrder(const SparseWeights& W);
// DqsFloat for the vertices and weights `lanes` was prepared from (not empty; V, U, N and NU in
// the mesh's order, #V = lanes.order.size()). The same blend as DqsFloat up to the order of its
// sums.
void DqsFloat(const float* V, const DqsLaneOrder& lanes, const DqsTransformsFloat& prepared, float* U,
              const float* N = nullptr, float* NU = nullptr);

// A DqsLaneOrder prepared by the first Get, for weights that may never be posed with DQS (a
// server's rigs and bakes: the sort and the 4 (1 + 2k) bytes per vertex are paid by the first DQS
// frame that skins vertices, not by every load). Get is thread-safe: concurrent first calls
// prepare it once and all return it; the order does not change after.
class LazyDqsLaneOrder {
 public:
  LazyDqsLaneOrder() = default;
  LazyDqsLaneOrder(const LazyDqsLaneOrder&) = delete;
  LazyDqsLaneOrder& operator=(const LazyDqsLaneOrder&) = delete;
  // PrepareDqsLaneOrder(W), W the same weights on every call. `*prepared_bytes` (when given) is
  // the order's bytes() on the call that prepared it and 0 on every other call, so that the
  // caller can count the memory once. `also` (when given) runs once, right after the order is
  // prepared and before any call returns it, to lay out more per-vertex data in that order; the
  // bytes it returns are added to `*prepared_bytes`.
  const DqsLaneOrder& Get(const SparseWeights& W, size_t* prepared_bytes = nullptr,
                          const std::function<size_t(const DqsLaneOrder&)>& also = nullptr) const;

 private:
  mutable std::once_flag once_;
  mutable DqsLaneOrder order_;
};

}  // namespace skinning

#endif  // SKINNING_CORE_SKINNING_DQS_H_
