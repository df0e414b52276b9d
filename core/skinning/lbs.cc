#include "core/skinning/lbs.h"

#include <cmath>
#include <cstddef>
#include <cstring>

#include "core/math/svd3.h"
#include "core/skinning/kernel_common.h"
#include "core/skinning/simd4.h"

namespace skinning {

namespace {

using Matrix34d = Eigen::Matrix<double, 3, 4>;

// v / |v|, or zero for a zero vector.
Eigen::Vector3d NormalizedOrZero(const Eigen::Vector3d& v) {
  const double len = v.norm();
  return len > 0 ? Eigen::Vector3d(v / len) : Eigen::Vector3d::Zero();
}

// ---- float32 kernels ------------------------------------------------------------------------
//
// Per vertex the weighted 3x4 matrix M = Σ_c w_c T_{j_c} is accumulated and applied to
// (x, y, z, 1). Two versions:
//  * LbsFloatKernel: plain C++ over 12 contiguous floats, any k (K > 0 fixes k at compile time).
//  * LbsFloatVec (k == 4 or 8, GCC/Clang): the same arithmetic written with generic 4-lane vector
//    types (GCC vector extensions; no intrinsics, so it compiles for any target). Each row of M
//    is one vector; the three row dot products are reduced with a 4x4 transpose-add. GCC's
//    auto-vectorizer did not find this shape for the plain loop (it vectorized the accumulation
//    but applied M with scalar code), which made the plain k == 4 loop ~2.3x slower.

// u = M (v, 1) for a 3x4 row-major M.
inline void Apply34(const float* __restrict m, const float* __restrict v, float* __restrict u) {
  const float x = v[0], y = v[1], z = v[2];
  u[0] = m[0] * x + m[1] * y + m[2] * z + m[3];
  u[1] = m[4] * x + m[5] * y + m[6] * z + m[7];
  u[2] = m[8] * x + m[9] * y + m[10] * z + m[11];
}

// nu = normalize(cof(L) n) for the 3x3 block L of a 3x4 row-major M; zero when degenerate.
inline void ApplyCofactor34(const float* __restrict m, const float* __restrict n,
                            float* __restrict nu) {
  // Columns of L: c0 = (m0, m4, m8), c1 = (m1, m5, m9), c2 = (m2, m6, m10).
  const float a0 = m[0], a1 = m[4], a2 = m[8];
  const float b0 = m[1], b1 = m[5], b2 = m[9];
  const float d0 = m[2], d1 = m[6], d2 = m[10];
  const float x = n[0], y = n[1], z = n[2];
  // x (c1×c2) + y (c2×c0) + z (c0×c1)
  const float ox = x * (b1 * d2 - b2 * d1) + y * (d1 * a2 - d2 * a1) + z * (a1 * b2 - a2 * b1);
  const float oy = x * (b2 * d0 - b0 * d2) + y * (d2 * a0 - d0 * a2) + z * (a2 * b0 - a0 * b2);
  const float oz = x * (b0 * d1 - b1 * d0) + y * (d0 * a1 - d1 * a0) + z * (a0 * b1 - a1 * b0);
  const float len2 = ox * ox + oy * oy + oz * oz;
  const float inv = len2 > 0.f ? 1.f / std::sqrt(len2) : 0.f;
  nu[0] = ox * inv;
  nu[1] = oy * inv;
  nu[2] = oz * inv;
}

template <int K, bool kNormals>
void LbsFloatKernel(const float* __restrict V, int n, const int32_t* __restrict joints,
                    const float* __restrict weights, int k_runtime, const float* __restrict T34,
                    float* __restrict U, const float* __restrict N, float* __restrict NU) {
  const int k = K > 0 ? K : k_runtime;
  for (int i = 0; i < n; ++i) {
    const int32_t* __restrict ji = joints + static_cast<std::ptrdiff_t>(i) * k;
    const float* __restrict wi = weights + static_cast<std::ptrdiff_t>(i) * k;
    alignas(16) float m[12];
    if constexpr (K == 4) {
      const float w0 = wi[0], w1 = wi[1], w2 = wi[2], w3 = wi[3];
      const float* __restrict t0 = T34 + 12 * static_cast<std::ptrdiff_t>(ji[0]);
      const float* __restrict t1 = T34 + 12 * static_cast<std::ptrdiff_t>(ji[1]);
      const float* __restrict t2 = T34 + 12 * static_cast<std::ptrdiff_t>(ji[2]);
      const float* __restrict t3 = T34 + 12 * static_cast<std::ptrdiff_t>(ji[3]);
      // Pairwise sums: two independent chains instead of one of length four.
      for (int c = 0; c < 12; ++c) m[c] = (w0 * t0[c] + w1 * t1[c]) + (w2 * t2[c] + w3 * t3[c]);
    } else {
      for (int c = 0; c < 12; ++c) m[c] = 0.f;
      for (int s = 0; s < k; ++s) {
        const float w = wi[s];
        const float* __restrict t = T34 + 12 * static_cast<std::ptrdiff_t>(ji[s]);
        for (int c = 0; c < 12; ++c) m[c] += w * t[c];
      }
    }
    const std::ptrdiff_t o = 3 * static_cast<std::ptrdiff_t>(i);
    Apply34(m, V + o, U + o);
    if constexpr (kNormals) ApplyCofactor34(m, N + o, NU + o);
  }
}

#ifdef SKINNING_VECTOR_EXT

using simd4::Cross;
using simd4::F4;
using simd4::LaneSums4;
using simd4::Load4;

// [Σ r0, Σ r1, Σ r2, Σ r2]: the lane sums of three vectors.
inline F4 LaneSums3(F4 r0, F4 r1, F4 r2) { return LaneSums4(r0, r1, r2, r2); }

// k == K (4 or 8). Rows ρ0, ρ1, ρ2 of M are vectors [l_r0 l_r1 l_r2 t_r]; u = (ρ_r · (v, 1))_r.
// Normals: the rows of cof(L) are ρ1×ρ2, ρ2×ρ0, ρ0×ρ1 (lane 3 drops out of the cross products).
// The K weighted rows are summed as a balanced tree (K = 4: (a + b) + (c + d), as before k = 8
// existed; K = 8: two such trees added), so the cost per influence stays that of k = 4.
template <int K, bool kNormals>
SKINNING_HOT_CLONES void LbsFloatVec(const float* __restrict V, int n,
                                     const int32_t* __restrict joints,
                                     const float* __restrict weights, const float* __restrict T34,
                                     float* __restrict U, const float* __restrict N,
                                     float* __restrict NU) {
  static_assert(K == 4 || K == 8, "K is 4 or 8");
  for (int i = 0; i < n; ++i) {
    const int32_t* __restrict ji = joints + K * static_cast<std::ptrdiff_t>(i);
    const float* __restrict wi = weights + K * static_cast<std::ptrdiff_t>(i);
    const float* __restrict t[K];
    for (int s = 0; s < K; ++s) t[s] = T34 + 12 * static_cast<std::ptrdiff_t>(ji[s]);
    F4 rho[3];
    for (int r = 0; r < 3; ++r) {
      F4 x[K];
      for (int s = 0; s < K; ++s) x[s] = wi[s] * Load4(t[s] + 4 * r);
      rho[r] = simd4::TreeSum<K>(x);
    }
    const std::ptrdiff_t o = 3 * static_cast<std::ptrdiff_t>(i);
    const F4 p = {V[o], V[o + 1], V[o + 2], 1.f};
    const F4 u = LaneSums3(rho[0] * p, rho[1] * p, rho[2] * p);
    U[o] = u[0];
    U[o + 1] = u[1];
    U[o + 2] = u[2];
    if constexpr (kNormals) {
      const F4 nv = {N[o], N[o + 1], N[o + 2], 0.f};
      const F4 c = LaneSums3(Cross(rho[1], rho[2]) * nv, Cross(rho[2], rho[0]) * nv,
                             Cross(rho[0], rho[1]) * nv);
      const float len2 = c[0] * c[0] + c[1] * c[1] + c[2] * c[2];
      const float inv = len2 > 0.f ? 1.f / std::sqrt(len2) : 0.f;
      NU[o] = c[0] * inv;
      NU[o + 1] = c[1] * inv;
      NU[o + 2] = c[2] * inv;
    }
  }
}

#endif  // SKINNING_VECTOR_EXT

}  // namespace

void Lbs(const RowMatrixX3d& V, const SparseWeights& W, const std::vector<Eigen::Affine3d>& T,
         RowMatrixX3d* U) {
  const Eigen::Index n = V.rows();
  U->resize(n, 3);
  for (Eigen::Index i = 0; i < n; ++i) {
    Matrix34d M = Matrix34d::Zero();
    for (int c = 0; c < W.k(); ++c) {
      const double w = W.weights(i, c);
      if (w == 0) continue;
      M.noalias() += w * T[W.joints(i, c)].matrix().topRows<3>();
    }
    U->row(i) = (M.leftCols<3>() * V.row(i).transpose() + M.col(3)).transpose();
  }
}

void Lbs(const RowMatrixX3d& V, const Eigen::MatrixXd& W, const std::vector<Eigen::Affine3d>& T,
         RowMatrixX3d* U) {
  BlendDense(V, W, [&](Eigen::Index, Eigen::Index j) -> Matrix34d { return T[j].matrix().topRows<3>(); }, U);
}

void LbsNormals(const RowMatrixX3d& N, const SparseWeights& W,
                const std::vector<Eigen::Affine3d>& T, RowMatrixX3d* NU) {
  const Eigen::Index n = N.rows();
  NU->resize(n, 3);
  for (Eigen::Index i = 0; i < n; ++i) {
    Eigen::Matrix3d L = Eigen::Matrix3d::Zero();
    for (int c = 0; c < W.k(); ++c) {
      const double w = W.weights(i, c);
      if (w == 0) continue;
      L.noalias() += w * T[W.joints(i, c)].linear();
    }
    // cof(L) = det(L) L⁻ᵀ: normalized, the inverse-transpose normal; for a reflection (det < 0)
    // it also follows the flipped winding, as a normal recomputed from the deformed triangles would.
    NU->row(i) = NormalizedOrZero(Cofactor(L) * N.row(i).transpose()).transpose();
  }
}

void LbsFloat(const float* V, int n, const int32_t* joints, const float* weights, int k,
              const float* T34, float* U, const float* N, float* NU) {
  const bool normals = N != nullptr && NU != nullptr;
#ifdef SKINNING_VECTOR_EXT
  if (k == 8) {
    if (normals) {
      LbsFloatVec<8, true>(V, n, joints, weights, T34, U, N, NU);
    } else {
      LbsFloatVec<8, false>(V, n, joints, weights, T34, U, nullptr, nullptr);
    }
    return;
  }
#endif
  if (k == 4) {
#ifdef SKINNING_VECTOR_EXT
    if (normals) {
      LbsFloatVec<4, true>(V, n, joints, weights, T34, U, N, NU);
    } else {
      LbsFloatVec<4, false>(V, n, joints, weights, T34, U, nullptr, nullptr);
    }
#else
    if (normals) {
      LbsFloatKernel<4, true>(V, n, joints, weights, k, T34, U, N, NU);
    } else {
      LbsFloatKernel<4, false>(V, n, joints, weights, k, T34, U, nullptr, nullptr);
    }
#endif
  } else {
    if (normals) {
      LbsFloatKernel<0, true>(V, n, joints, weights, k, T34, U, N, NU);
    } else {
      LbsFloatKernel<0, false>(V, n, joints, weights, k, T34, U, nullptr, nullptr);
    }
  }
}

std::vector<float> ToRowMajor34(const std::vector<Eigen::Affine3d>& T) {
  std::vector<float> out(T.size() * 12);
  for (size_t j = 0; j < T.size(); ++j) {
    const Eigen::Matrix4d& M = T[j].matrix();
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c) out[12 * j + 4 * r + c] = static_cast<float>(M(r, c));
  }
  return out;
}

}  // namespace skinning
