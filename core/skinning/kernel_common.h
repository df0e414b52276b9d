// What the skinning kernels (LBS, DQS, STBS, swing/twist) share: packing a joint's parameters,
// the per-vertex blend (each vertex's position is the weighted sum, over its weight slots, of
// what one joint's deformer makes of it), in float for the kernels and double for references,
// and skinning through a vertex order in gathered chunks.
#ifndef SKINNING_CORE_SKINNING_KERNEL_COMMON_H_
#define SKINNING_CORE_SKINNING_KERNEL_COMMON_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <Eigen/Core>

#include "core/geometry/mesh.h"

namespace skinning {

// Writes matrix m row-major as floats at out (a joint's packed kernel parameters).
template <typename Mat>
inline void PutRowMajor(const Mat& m, float* out) {
  for (int r = 0; r < m.rows(); ++r)
    for (int c = 0; c < m.cols(); ++c) out[r * m.cols() + c] = static_cast<float>(m(r, c));
}

// Float kernels, top-k weights: U_i = Σ_c w_ic · slot(i·k + c, 3i), skipping zero weights.
// `slot(rc, o, d)` writes the deformed position of vertex o/3 under the joint of slot rc into
// d[3]. K > 0 fixes k at compile time (unrolled), else k_runtime is used.
template <int K, typename Slot>
inline void BlendSlots(int n, int k_runtime, const float* __restrict weights, float* __restrict U, Slot&& slot) {
  const int k = K > 0 ? K : k_runtime;
  for (int i = 0; i < n; ++i) {
    const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(i) * k;
    const std::ptrdiff_t o = 3 * static_cast<std::ptrdiff_t>(i);
    float ax = 0.f, ay = 0.f, az = 0.f;
    for (int c = 0; c < k; ++c) {
      const float w = weights[row + c];
      if (w == 0.f) continue;
      float d[3];
      slot(row + c, o, d);
      ax += w * d[0];
      ay += w * d[1];
      az += w * d[2];
    }
    U[o] = ax;
    U[o + 1] = ay;
    U[o + 2] = az;
  }
}

// A float kernel over a vertex order (a DqsLaneOrder's `order`: n row indices into the mesh's
// vertices) in chunks of kOrderChunk rows (a multiple of 8, so only the last chunk has a tail):
// each chunk's positions, and normals when kNormals, are gathered from V (N) into aligned
// buffers, `kernel(r0, m, v, nv, u, nu)` deforms the m rows from row r0 into u (nu), and the
// results are scattered back into U (NU). N and NU may be null without kNormals.
constexpr int kOrderChunk = 256;
template <bool kNormals, typename Kernel>
inline void SkinInOrder(const int32_t* order, int n, const float* V, const float* N, float* U, float* NU,
                        Kernel&& kernel) {
  alignas(64) float v[3 * kOrderChunk], u[3 * kOrderChunk];
  alignas(64) float nv[kNormals ? 3 * kOrderChunk : 1], nu[kNormals ? 3 * kOrderChunk : 1];
  for (int r0 = 0; r0 < n; r0 += kOrderChunk) {
    const int m = std::min(kOrderChunk, n - r0);
    const int32_t* idx = order + r0;
    for (int i = 0; i < m; ++i) {
      const std::ptrdiff_t o = 3 * static_cast<std::ptrdiff_t>(idx[i]);
      for (int c = 0; c < 3; ++c) v[3 * i + c] = V[o + c];
      if constexpr (kNormals)
        for (int c = 0; c < 3; ++c) nv[3 * i + c] = N[o + c];
    }
    kernel(r0, m, v, nv, u, nu);
    for (int i = 0; i < m; ++i) {
      const std::ptrdiff_t o = 3 * static_cast<std::ptrdiff_t>(idx[i]);
      for (int c = 0; c < 3; ++c) U[o + c] = u[3 * i + c];
      if constexpr (kNormals)
        for (int c = 0; c < 3; ++c) NU[o + c] = nu[3 * i + c];
    }
  }
}

// Double references, dense weights: U_i = (Σ_j W_ij · transform(i, j)) p_i, skipping zero
// weights; `transform(i, j)` is joint j's 3×4 affine map for vertex i.
template <typename TransformOf>
inline void BlendDense(const RowMatrixX3d& V, const Eigen::MatrixXd& W, TransformOf&& transform, RowMatrixX3d* U) {
  using Matrix34d = Eigen::Matrix<double, 3, 4>;
  const Eigen::Index n = V.rows();
  U->resize(n, 3);
  for (Eigen::Index i = 0; i < n; ++i) {
    Matrix34d M = Matrix34d::Zero();
    for (Eigen::Index j = 0; j < W.cols(); ++j) {
      const double w = W(i, j);
      if (w == 0) continue;
      M.noalias() += w * transform(i, j);
    }
    U->row(i) = (M.leftCols<3>() * V.row(i).transpose() + M.col(3)).transpose();
  }
}

}  // namespace skinning

#endif  // SKINNING_CORE_SKINNING_KERNEL_COMMON_H_
