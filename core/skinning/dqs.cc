#include "core/skinning/dqs.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <type_traits>
#include <utility>

#include <Eigen/SVD>

#include "core/rig/dual_quaternion.h"
#include "core/rig/transform.h"
#include "core/skinning/kernel_common.h"
#include "core/skinning/simd4.h"
#include "core/skinning/simd8.h"

namespace skinning {

namespace {

// ---- shared math ----------------------------------------------------------------------------
//
// The blended dual quaternion b = b0 + ε be is not unit. Normalizing by |b0| (Kavan et al. 2008,
// Sec. 4) and converting to a rigid matrix, with n2 = |b0|² and f = 2 / n2:
//   R = I + f [ -(y²+z²)   xy - wz    xz + wy  ]        b0 = (x, y, z, w)
//             [  xy + wz  -(x²+z²)    yz - wx  ]        be = (ex, ey, ez, ew)
//             [  xz - wy   yz + wx   -(x²+y²)  ]
//   t = f (w e - ew v + v × e),   v = (x, y, z), e = (ex, ey, ez)
// which is the usual unit-quaternion matrix of b0/|b0| with the translation 2 vec(ĉε ĉ0*), and
// needs no square root. Writing the diagonal as 1 - f(..) keeps identity blends exact.
// A zero real part (no influences) gives f = 0: the identity.
template <typename Scalar>
inline void BlendedDqToMatrix34(const Scalar* __restrict b, Scalar* __restrict m) {
  const Scalar x = b[0], y = b[1], z = b[2], w = b[3];
  const Scalar ex = b[4], ey = b[5], ez = b[6], ew = b[7];
  const Scalar n2 = x * x + y * y + z * z + w * w;
  const Scalar f = n2 > Scalar(0) ? Scalar(2) / n2 : Scalar(0);
  const Scalar xx = x * x, yy = y * y, zz = z * z;
  const Scalar xy = x * y, xz = x * z, yz = y * z;
  const Scalar wx = w * x, wy = w * y, wz = w * z;
  m[0] = Scalar(1) - f * (yy + zz);
  m[1] = f * (xy - wz);
  m[2] = f * (xz + wy);
  m[4] = f * (xy + wz);
  m[5] = Scalar(1) - f * (xx + zz);
  m[6] = f * (yz - wx);
  m[8] = f * (xz - wy);
  m[9] = f * (yz + wx);
  m[10] = Scalar(1) - f * (xx + yy);
  m[3] = f * (w * ex - ew * x + (y * ez - z * ey));
  m[7] = f * (w * ey - ew * y + (z * ex - x * ez));
  m[11] = f * (w * ez - ew * z + (x * ey - y * ex));
}

// u = L v for a 3x3 row-major L.
template <typename Scalar>
inline void Apply33(const Scalar* __restrict l, const Scalar* __restrict v, Scalar* __restrict u) {
  const Scalar x = v[0], y = v[1], z = v[2];
  u[0] = l[0] * x + l[1] * y + l[2] * z;
  u[1] = l[3] * x + l[4] * y + l[5] * z;
  u[2] = l[6] * x + l[7] * y + l[8] * z;
}

// u = cof(L) v for a 3x3 row-major L: x (c1×c2) + y (c2×c0) + z (c0×c1) over L's columns.
// cof(L) = det(L) L⁻ᵀ, the normal transform up to a scale removed by normalization.
template <typename Scalar>
inline void ApplyCofactor33(const Scalar* __restrict l, const Scalar* __restrict v,
                            Scalar* __restrict u) {
  const Scalar a0 = l[0], a1 = l[3], a2 = l[6];  // c0
  const Scalar b0 = l[1], b1 = l[4], b2 = l[7];  // c1
  const Scalar d0 = l[2], d1 = l[5], d2 = l[8];  // c2
  const Scalar x = v[0], y = v[1], z = v[2];
  u[0] = x * (b1 * d2 - b2 * d1) + y * (d1 * a2 - d2 * a1) + z * (a1 * b2 - a2 * b1);
  u[1] = x * (b2 * d0 - b0 * d2) + y * (d2 * a0 - d0 * a2) + z * (a2 * b0 - a0 * b2);
  u[2] = x * (b0 * d1 - b1 * d0) + y * (d0 * a1 - d1 * a0) + z * (a0 * b1 - a1 * b0);
}

// u = M (v, 1) for a 3x4 row-major M; with kTranslate false only the 3x3 block.
template <bool kTranslate, typename Scalar>
inline void Apply34(const Scalar* __restrict m, const Scalar* __restrict v, Scalar* __restrict u) {
  const Scalar x = v[0], y = v[1], z = v[2];
  u[0] = m[0] * x + m[1] * y + m[2] * z;
  u[1] = m[4] * x + m[5] * y + m[6] * z;
  u[2] = m[8] * x + m[9] * y + m[10] * z;
  if constexpr (kTranslate) {
    u[0] += m[3];
    u[1] += m[7];
    u[2] += m[11];
  }
}

template <typename Scalar>
inline void NormalizeOrZero(Scalar* v) {
  const Scalar len2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
  const Scalar inv = len2 > Scalar(0) ? Scalar(1) / std::sqrt(len2) : Scalar(0);
  v[0] *= inv;
  v[1] *= inv;
  v[2] *= inv;
}

// ---- double reference path --------------------------------------------------------------------

// Skins one vertex from its influences (joint[c], weight[c]), c < count.
//   v, n  bind-space position and normal (n may be null)
//   u, nu outputs
void DqsVertex(const DqsTransforms& D, const int* joint, const double* weight, int count,
               const double* v, const double* n, double* u, double* nu) {
  // Antipodality: the hemisphere of the most influential joint.
  int pivot = 0;
  for (int c = 1; c < count; ++c)
    if (weight[c] > weight[pivot]) pivot = c;
  const Eigen::Vector4d rp = count > 0 ? D.real[joint[pivot]].coeffs() : Eigen::Vector4d::Zero();

  Eigen::Matrix<double, 8, 1> b = Eigen::Matrix<double, 8, 1>::Zero();  // real xyzw, dual xyzw
  Eigen::Matrix3d S = Eigen::Matrix3d::Zero();
  double weight_sum = 0;
  for (int c = 0; c < count; ++c) {
    const int j = joint[c];
    const double w = weight[c];
    const Eigen::Vector4d& r = D.real[j].coeffs();
    const double s = r.dot(rp) < 0 ? -w : w;
    b.head<4>() += s * r;
    b.tail<4>() += s * D.dual[j].coeffs();
    if (D.any_stretch) S += w * D.stretch[j];
    weight_sum += w;
  }
  if (D.any_stretch && weight_sum > 0) S /= weight_sum;
  double m[12];
  BlendedDqToMatrix34(b.data(), m);

  // Phase one (only with stretch): p = S v with the linearly blended stretch.
  const Eigen::Matrix<double, 3, 3, Eigen::RowMajor> Sr = S;
  double p[3] = {v[0], v[1], v[2]};
  if (D.any_stretch) Apply33(Sr.data(), v, p);
  // Phase two: the blended rigid transform.
  Apply34<true>(m, p, u);
  if (n != nullptr) {
    double sn[3] = {n[0], n[1], n[2]};
    if (D.any_stretch) ApplyCofactor33(Sr.data(), n, sn);
    Apply34<false>(m, sn, nu);
    NormalizeOrZero(nu);
  }
}

// ---- float32 kernels -------------------------------------------------------------------------
//
// Per vertex: pivot = largest weight, signed blend of k 8-float dual quaternions, one division,
// apply. Rigid rigs and rigs with stretch are separate instantiations (kStretch), so the common
// rigid case never touches the stretch phase. Three versions (DqsFloat8, below, takes blocks of
// 8 vertices for k == 4 or 8 and DqsFloatVec the rest):
//  * DqsFloatKernel: plain C++, any k (K > 0 fixes k at compile time); builds the 3x4 matrix.
//  * DqsFloatVec (k == 4 or 8, GCC/Clang): generic 4-lane vectors (GCC vector extensions, no
//    intrinsics). The four pivot dot products come out of one transpose-add, the signs are
//    applied by flipping sign bits, and the rigid motion is applied without a matrix:
//      u = p + f (w a + v × a - ew v),   a = v × p + e,   f = 2 / |b0|²
//    for b0 = (v, w), be = (e, ew): the rotation p + f (w v×p + v×(v×p)) of b0/|b0| plus the
//    translation f (w e - ew v + v × e) of the matrix form above, folded together.

template <int K, bool kNormals, bool kStretch>
void DqsFloatKernel(const float* __restrict V, int n, const int32_t* __restrict joints,
                    const float* __restrict weights, int k_runtime, const float* __restrict Q8,
                    const float* __restrict S9, float* __restrict U, const float* __restrict N,
                    float* __restrict NU) {
  const int k = K > 0 ? K : k_runtime;
  for (int i = 0; i < n; ++i) {
    const int32_t* __restrict ji = joints + static_cast<std::ptrdiff_t>(i) * k;
    const float* __restrict wi = weights + static_cast<std::ptrdiff_t>(i) * k;
    int pivot = 0;
    for (int s = 1; s < k; ++s)
      if (wi[s] > wi[pivot]) pivot = s;
    const float* __restrict qp = Q8 + 8 * static_cast<std::ptrdiff_t>(ji[pivot]);
    const float px = qp[0], py = qp[1], pz = qp[2], pw = qp[3];

    alignas(32) float b[8];
    for (int l = 0; l < 8; ++l) b[l] = 0.f;
    for (int s = 0; s < k; ++s) {
      const float* __restrict q = Q8 + 8 * static_cast<std::ptrdiff_t>(ji[s]);
      const float d = q[0] * px + q[1] * py + q[2] * pz + q[3] * pw;
      const float w = d < 0.f ? -wi[s] : wi[s];
      for (int l = 0; l < 8; ++l) b[l] += w * q[l];
    }
    alignas(16) float m[12];
    BlendedDqToMatrix34(b, m);

    const std::ptrdiff_t o = 3 * static_cast<std::ptrdiff_t>(i);
    if constexpr (kStretch) {
      float S[9];
      for (int l = 0; l < 9; ++l) S[l] = 0.f;
      float weight_sum = 0.f;
      for (int s = 0; s < k; ++s) {
        const float w = wi[s];
        const float* __restrict t = S9 + 9 * static_cast<std::ptrdiff_t>(ji[s]);
        for (int l = 0; l < 9; ++l) S[l] += w * t[l];
        weight_sum += w;
      }
      const float inv_sum = weight_sum > 0.f ? 1.f / weight_sum : 0.f;
      for (int l = 0; l < 9; ++l) S[l] *= inv_sum;
      float p[3];
      Apply33(S, V + o, p);
      Apply34<true>(m, p, U + o);
      if constexpr (kNormals) {
        float sn[3];
        ApplyCofactor33(S, N + o, sn);
        Apply34<false>(m, sn, NU + o);
        NormalizeOrZero(NU + o);
      }
    } else {
      Apply34<true>(m, V + o, U + o);
      if constexpr (kNormals) {
        Apply34<false>(m, N + o, NU + o);
        NormalizeOrZero(NU + o);
      }
    }
  }
}

#ifdef SKINNING_VECTOR_EXT

using simd4::Broadcast;
using simd4::Cross;
using simd4::F4;
using simd4::I4;
using simd4::LaneSums4;
using simd4::Load4;

// k == K (4 or 8): the slots in groups of four (one transpose-add of pivot dot products and
// one sign flip per group), the weighted dual quaternions summed as a balanced tree.
template <int K, bool kNormals, bool kStretch>
SKINNING_HOT_CLONES void DqsFloatVec(const float* __restrict V, int n,
                                     const int32_t* __restrict joints,
                                     const float* __restrict weights, const float* __restrict Q8,
                                     const float* __restrict S9, float* __restrict U,
                                     const float* __restrict N, float* __restrict NU) {
  static_assert(K == 4 || K == 8, "K is 4 or 8");
  const I4 kSignBit = {INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN};
  const F4 kXyz = {1.f, 1.f, 1.f, 0.f};
  for (int i = 0; i < n; ++i) {
    const int32_t* __restrict ji = joints + K * static_cast<std::ptrdiff_t>(i);
    const float* __restrict wi = weights + K * static_cast<std::ptrdiff_t>(i);
    int pivot = 0;
    for (int s = 1; s < K; ++s)
      if (wi[s] > wi[pivot]) pivot = s;
    const float* __restrict q[K];
    F4 r[K];
    for (int s = 0; s < K; ++s) {
      q[s] = Q8 + 8 * static_cast<std::ptrdiff_t>(ji[s]);
      r[s] = Load4(q[s]);
    }
    const F4 rp = Load4(Q8 + 8 * static_cast<std::ptrdiff_t>(ji[pivot]));
    F4 real[K], dual[K];
    for (int g = 0; g < K; g += 4) {
      // Antipodality: w_c takes the sign of dot(real_c, real_pivot).
      const F4 d = LaneSums4(r[g] * rp, r[g + 1] * rp, r[g + 2] * rp, r[g + 3] * rp);
      const I4 negative = d < F4{0.f, 0.f, 0.f, 0.f};  // all-ones lanes where d < 0
      const F4 w = reinterpret_cast<F4>(reinterpret_cast<I4>(Load4(wi + g)) ^ (negative & kSignBit));
      for (int l = 0; l < 4; ++l) {
        const F4 wl = Broadcast(w, l);
        real[g + l] = wl * r[g + l];
        dual[g + l] = wl * Load4(q[g + l] + 4);
      }
    }
    const F4 b0 = simd4::TreeSum<K>(real);
    const F4 be = simd4::TreeSum<K>(dual);

    const F4 b0sq = b0 * b0;
    const float n2 = (b0sq[0] + b0sq[1]) + (b0sq[2] + b0sq[3]);
    const float f = n2 > 0.f ? 2.f / n2 : 0.f;
    const F4 v = b0 * kXyz;  // vector part, lane 3 zero
    const F4 e = be * kXyz;
    const float qw = b0[3], ew = be[3];

    const std::ptrdiff_t o = 3 * static_cast<std::ptrdiff_t>(i);
    F4 p = {V[o], V[o + 1], V[o + 2], 0.f};
    F4 nv;
    if constexpr (kNormals) nv = F4{N[o], N[o + 1], N[o + 2], 0.f};
    if constexpr (kStretch) {
      // Phase one: p = S v, S = Σ w_c S_c / Σ w_c (unsigned weights); normals by cof(S).
      // The nine entries as two 4-lane vectors and one scalar, accumulated slot by slot.
      F4 s_lo = {0.f, 0.f, 0.f, 0.f}, s_hi = s_lo;
      float s_last = 0.f;
      for (int s = 0; s < K; ++s) {
        const float ws = wi[s];
        const float* __restrict t = S9 + 9 * static_cast<std::ptrdiff_t>(ji[s]);
        s_lo += ws * Load4(t);
        s_hi += ws * Load4(t + 4);
        s_last += ws * t[8];
      }
      float weight_sum = (wi[0] + wi[1]) + (wi[2] + wi[3]);
      if constexpr (K == 8) weight_sum += (wi[4] + wi[5]) + (wi[6] + wi[7]);
      const float inv_sum = weight_sum > 0.f ? 1.f / weight_sum : 0.f;
      s_lo *= inv_sum;
      s_hi *= inv_sum;
      const float S[9] = {s_lo[0], s_lo[1], s_lo[2], s_lo[3], s_hi[0], s_hi[1], s_hi[2], s_hi[3], s_last * inv_sum};
      float sp[3];
      Apply33(S, V + o, sp);
      p = F4{sp[0], sp[1], sp[2], 0.f};
      if constexpr (kNormals) {
        float sn[3];
        ApplyCofactor33(S, N + o, sn);
        nv = F4{sn[0], sn[1], sn[2], 0.f};
      }
    }
    const F4 a = Cross(v, p) + e;
    const F4 u = p + f * ((qw * a + Cross(v, a)) - ew * v);
    U[o] = u[0];
    U[o + 1] = u[1];
    U[o + 2] = u[2];
    if constexpr (kNormals) {
      const F4 an = Cross(v, nv);
      const F4 nu = nv + f * (qw * an + Cross(v, an));
      const F4 nu2 = nu * nu;
      const float len2 = nu2[0] + nu2[1] + nu2[2];
      const float inv = len2 > 0.f ? 1.f / std::sqrt(len2) : 0.f;
      NU[o] = nu[0] * inv;
      NU[o + 1] = nu[1] * inv;
      NU[o + 2] = nu[2] * inv;
    }
  }
}

// ---- 8-lane kernels (k == 4 or 8) -----------------------------------------------------------
//
// Lanes are 8 consecutive vertices, as in the swing/twist and STBS kernels (simd8.h): the slots'
// weights and joints are transposed into lane vectors, and per slot each distinct joint among the
// lanes is blended once, its dual quaternion broadcast and its weight masked to its lanes.
// Neighbouring vertices mostly share their joints, so a slot costs about one such pass for 8
// vertices, where DqsFloatVec loads, dots and blends one quaternion per vertex and slot in a
// dependent chain. The pivot per lane (largest weight, first on ties, as DqsFloatVec) needs only
// the weights; its real part comes from one pass over the lanes' pivot joints. Same arithmetic as
// DqsFloatVec up to the order of the sums.

using simd8::F8;
using simd8::I8;

// Adds joint j's signed, weighted dual quaternion to b (and its weighted stretch to S): w holds
// the lanes' weights (0 in the lanes that do not use j), rp the lanes' pivot real parts.
template <bool kStretch>
SKINNING_LANES_INLINE void DqsBlendJoint8(const float* __restrict Q8, const float* __restrict S9,
                                          int32_t j, const F8 rp[4], I8 w, F8 b[8], F8 S[9]) {
  const float* __restrict q = Q8 + 8 * static_cast<std::ptrdiff_t>(j);
  const F8 d = rp[0] * q[0] + rp[1] * q[1] + rp[2] * q[2] + rp[3] * q[3];
  const I8 sign_bit = I8{} + INT32_MIN;
  const F8 ws = reinterpret_cast<F8>(w ^ ((d < F8{}) & sign_bit));
  for (int l = 0; l < 8; ++l) b[l] += ws * q[l];
  if constexpr (kStretch) {
    const float* __restrict t = S9 + 9 * static_cast<std::ptrdiff_t>(j);
    for (int l = 0; l < 9; ++l) S[l] += reinterpret_cast<F8>(w) * t[l];
  }
}

template <int K, bool kNormals, bool kStretch>
SKINNING_HOT_CLONES void DqsFloat8(const float* __restrict V, int n8,
                                   const int32_t* __restrict joints,
                                   const float* __restrict weights, const float* __restrict Q8,
                                   const float* __restrict S9, float* __restrict U,
                                   const float* __restrict N, float* __restrict NU) {
  static_assert(K == 4 || K == 8, "K is 4 or 8");
  using simd8::AnyLane;
  using simd8::FirstLane;
  using simd8::LaneValue;
  using simd8::Select;
  const F8 zero = {};
  for (int i0 = 0; i0 < n8; i0 += 8) {
    const std::ptrdiff_t row = K * static_cast<std::ptrdiff_t>(i0);
    F8 W[K];
    I8 J[K];
    if constexpr (K == 4) {
      simd8::Transpose8x4(weights + row, W);
      simd8::Transpose8x4(joints + row, J);
    } else {
      simd8::Transpose8x8(weights + row, W);
      simd8::Transpose8x8(joints + row, J);
    }
    // Where every used slot holds one joint in all lanes (mixed == 0) the slots are blended one
    // by one. Otherwise the block's distinct joints are gathered first, each with its weight per
    // lane summed over the slots that hold it (neighbours often share their joints in another
    // slot order): one pass per joint. A block with more than kMaxJoints = 2K distinct joints
    // would be slower on lanes than DqsFloatVec: it and the next blocks, up to kMixedRun
    // vertices, take DqsFloatVec (a call per block would cost more than it saves).
    constexpr int kMaxJoints = 2 * K;
    bool mixed = false;
    for (int c = 0; c < K; ++c) mixed |= AnyLane(J[c] != J[c][0]) && AnyLane(W[c] != zero);
    int32_t block_joints[kMaxJoints];
    I8 block_weights[kMaxJoints];
    int count = 0;
    if (mixed) {
      I8 pending[K];
      for (int c = 0; c < K; ++c) pending[c] = W[c] != zero;
      bool overflow = false;
      for (int c = 0; c < K && !overflow; ++c) {
        while (AnyLane(pending[c])) {
          if (count == kMaxJoints) {
            overflow = true;
            break;
          }
          const int32_t j = LaneValue(J[c], FirstLane(pending[c]));
          I8 w = {};
          for (int d = c; d < K; ++d) {  // slots before c hold no pending lane of j
            const I8 mine = pending[d] & (J[d] == j);
            w = reinterpret_cast<I8>(reinterpret_cast<F8>(w) +
                                     reinterpret_cast<F8>(reinterpret_cast<I8>(W[d]) & mine));
            pending[d] &= ~mine;
          }
          block_joints[count] = j;
          block_weights[count++] = w;
        }
      }
      if (overflow) {
        constexpr int kMixedRun = 64;
        const int run = std::min(kMixedRun, n8 - i0);
        const std::ptrdiff_t o = 3 * static_cast<std::ptrdiff_t>(i0);
        DqsFloatVec<K, kNormals, kStretch>(V + o, run, joints + row, weights + row, Q8, S9, U + o,
                                           kNormals ? N + o : nullptr, kNormals ? NU + o : nullptr);
        i0 += run - 8;
        continue;
      }
    }
    F8 best = W[0];
    I8 pivot = J[0];
    for (int c = 1; c < K; ++c) {
      const I8 gt = W[c] > best;
      best = Select(gt, W[c], best);
      pivot = Select(gt, J[c], pivot);
    }
    // The pivots' real parts: one broadcast where every lane's pivot is one joint; otherwise one
    // pass per distinct pivot joint (`mine`: the lanes holding it).
    F8 rp[4];
    if (const int32_t j = pivot[0]; !AnyLane(pivot != j)) {
      for (int l = 0; l < 4; ++l) rp[l] = zero + Q8[8 * static_cast<std::ptrdiff_t>(j) + l];
    } else {
      for (int l = 0; l < 4; ++l) rp[l] = zero;
      for (I8 pending = I8{} - 1; AnyLane(pending);) {
        I8 mine;
        const int32_t jl = simd8::TakeLaneGroup(pivot, &pending, &mine);
        const float* __restrict q = Q8 + 8 * static_cast<std::ptrdiff_t>(jl);
        for (int l = 0; l < 4; ++l) rp[l] = Select(mine, zero + q[l], rp[l]);
      }
    }
    // Antipodality (w_c takes the sign of dot(real_c, real_pivot)) and the blend; the stretch
    // with the unsigned weights. A joint held by several slots of a lane blends once with their
    // sum, as its sign is the same for each.
    F8 b[8], S[9];
    for (int l = 0; l < 8; ++l) b[l] = zero;
    if constexpr (kStretch)
      for (int l = 0; l < 9; ++l) S[l] = zero;
    if (!mixed) {
      for (int c = 0; c < K; ++c)
        if (AnyLane(W[c] != zero))
          DqsBlendJoint8<kStretch>(Q8, S9, J[c][0], rp, reinterpret_cast<I8>(W[c]), b, S);
    } else {
      for (int e = 0; e < count; ++e)
        DqsBlendJoint8<kStretch>(Q8, S9, block_joints[e], rp, block_weights[e], b, S);
    }
    F8 px, py, pz, nx, ny, nz;
    simd8::Deinterleave8(V + 3 * row / K, &px, &py, &pz);
    if constexpr (kNormals) simd8::Deinterleave8(N + 3 * row / K, &nx, &ny, &nz);
    if constexpr (kStretch) {
      // Phase one: p = S v, S = Σ w_c S_c / Σ w_c; normals by cof(S) (columns' cross products).
      F8 weight_sum = zero;
      for (int c = 0; c < K; ++c) weight_sum += W[c];
      const F8 inv_sum = Select(weight_sum > zero, 1.f / weight_sum, zero);
      for (int l = 0; l < 9; ++l) S[l] *= inv_sum;
      const F8 sx = S[0] * px + S[1] * py + S[2] * pz;
      const F8 sy = S[3] * px + S[4] * py + S[5] * pz;
      const F8 sz = S[6] * px + S[7] * py + S[8] * pz;
      px = sx;
      py = sy;
      pz = sz;
      if constexpr (kNormals) {
        const F8 cx = nx * (S[4] * S[8] - S[7] * S[5]) + ny * (S[5] * S[6] - S[8] * S[3]) +
                      nz * (S[3] * S[7] - S[6] * S[4]);
        const F8 cy = nx * (S[7] * S[2] - S[1] * S[8]) + ny * (S[8] * S[0] - S[2] * S[6]) +
                      nz * (S[6] * S[1] - S[0] * S[7]);
        const F8 cz = nx * (S[1] * S[5] - S[4] * S[2]) + ny * (S[2] * S[3] - S[5] * S[0]) +
                      nz * (S[0] * S[4] - S[3] * S[1]);
        nx = cx;
        ny = cy;
        nz = cz;
      }
    }
    // Phase two: the blended rigid motion.
    const F8 f = simd8::BlendedDqScale8(b);
    F8 ux, uy, uz;
    simd8::BlendedDqApply8(b, f, px, py, pz, &ux, &uy, &uz);
    simd8::Interleave8(ux, uy, uz, U + 3 * row / K);
    if constexpr (kNormals) {
      // The rotation alone: n + f (w a + v × a),  a = v × n; then normalized.
      const F8 vx = b[0], vy = b[1], vz = b[2], qw = b[3];
      const F8 bx = vy * nz - vz * ny;
      const F8 by = vz * nx - vx * nz;
      const F8 bz = vx * ny - vy * nx;
      const F8 mx = nx + f * (qw * bx + (vy * bz - vz * by));
      const F8 my = ny + f * (qw * by + (vz * bx - vx * bz));
      const F8 mz = nz + f * (qw * bz + (vx * by - vy * bx));
      float len2[8];
      const F8 l2 = mx * mx + my * my + mz * mz;
      std::memcpy(len2, &l2, sizeof(len2));
      for (int l = 0; l < 8; ++l) len2[l] = len2[l] > 0.f ? 1.f / std::sqrt(len2[l]) : 0.f;
      const F8 inv = simd8::Load8(len2);
      simd8::Interleave8(mx * inv, my * inv, mz * inv, NU + 3 * row / K);
    }
  }
}

// The distinct joints among the used slots of the 8 rows (k slots each) at joints, weights.
int BlockJoints(const int32_t* joints, const float* weights, int k) {
  int seen[64];
  int count = 0;
  for (int e = 0; e < 8 * k; ++e) {
    if (weights[e] == 0.f) continue;
    const int j = joints[e];
    bool known = false;
    for (int x = 0; x < count; ++x) known |= seen[x] == j;
    if (!known) seen[count++] = j;
  }
  return count;
}

// Whether DqsFloat8 pays on blocks averaging `mean` distinct joints (among their used slots): a
// block with d of them costs DqsFloat8 about a fixed part plus one pass per joint, and DqsFloatVec
// about as much as 2k such passes (deformers_bench and skinning_bench); the lanes are taken up to
// 1.5 k.
bool LanesPay(double mean, int k) { return 2 * mean <= 3 * k; }

// LanesPay judged on up to 16 blocks of 8 vertices spread over the mesh.
bool BlocksShareJoints(const int32_t* joints, const float* weights, int k, int n8) {
  const int blocks = n8 / 8;
  if (blocks == 0) return false;
  const int samples = std::min(blocks, 16);
  int distinct = 0;
  for (int s = 0; s < samples; ++s) {
    const std::ptrdiff_t first =
        8 * k * static_cast<std::ptrdiff_t>(static_cast<int64_t>(s) * blocks / samples);
    distinct += BlockJoints(joints + first, weights + first, k);
  }
  return LanesPay(static_cast<double>(distinct) / samples, k);
}

// DqsFloat8 on the first n8 vertices (a multiple of 8), DqsFloatVec on the other n − n8.
template <int K, bool kNormals, bool kStretch>
void DqsFloatBlocksThenRest(const float* V, int n, int n8, const int32_t* joints, const float* weights,
                            const float* Q8, const float* S9, float* U, const float* N, float* NU) {
  const std::ptrdiff_t o = 3 * static_cast<std::ptrdiff_t>(n8);
  const std::ptrdiff_t row = K * static_cast<std::ptrdiff_t>(n8);
  DqsFloat8<K, kNormals, kStretch>(V, n8, joints, weights, Q8, S9, U, N, NU);
  DqsFloatVec<K, kNormals, kStretch>(V + o, n - n8, joints + row, weights + row, Q8, S9, U + o,
                                     kNormals ? N + o : nullptr, kNormals ? NU + o : nullptr);
}

// The blocks of 8 vertices on lanes where they share their joints (BlocksShareJoints), the
// per-vertex kernel on the rest (all of it otherwise, and the n mod 8 last vertices).
template <int K, bool kNormals, bool kStretch>
void DqsFloatLanes(const float* V, int n, const int32_t* joints, const float* weights,
                   const float* Q8, const float* S9, float* U, const float* N, float* NU) {
  const int n8 = BlocksShareJoints(joints, weights, K, n - n % 8) ? n - n % 8 : 0;
  DqsFloatBlocksThenRest<K, kNormals, kStretch>(V, n, n8, joints, weights, Q8, S9, U, N, NU);
}

// DqsFloatLanes over a DqsLaneOrder (SkinInOrder's chunks): blocks of 8 to DqsFloat8 (the order
// was kept only where they pay), each chunk's last n mod 8 rows to DqsFloatVec.
template <int K, bool kNormals, bool kStretch>
void DqsFloatOrdered(const float* V, const DqsLaneOrder& lanes, const float* Q8, const float* S9, float* U,
                     const float* N, float* NU) {
  SkinInOrder<kNormals>(lanes.order.data(), static_cast<int>(lanes.order.size()), V, N, U, NU,
                        [&](int r0, int m, const float* v, const float* nv, float* u, float* nu) {
                          const std::ptrdiff_t row = K * static_cast<std::ptrdiff_t>(r0);
                          DqsFloatBlocksThenRest<K, kNormals, kStretch>(v, m, m - m % 8, lanes.joints.data() + row,
                                                                        lanes.weights.data() + row, Q8, S9, u, nv, nu);
                        });
}

template <bool kNormals, bool kStretch>
void DqsFloatOrderedK(const float* V, const DqsLaneOrder& lanes, const float* Q8, const float* S9, float* U,
                      const float* N, float* NU) {
  if (lanes.k == 8) {
    DqsFloatOrdered<8, kNormals, kStretch>(V, lanes, Q8, S9, U, N, NU);
  } else {
    DqsFloatOrdered<4, kNormals, kStretch>(V, lanes, Q8, S9, U, N, NU);
  }
}

// Mean distinct joints per full block of 8 rows.
double MeanBlockJoints(const int32_t* joints, const float* weights, int k, int n) {
  const int blocks = n / 8;
  int64_t distinct = 0;
  for (int b = 0; b < blocks; ++b) {
    const std::ptrdiff_t first = 8 * k * static_cast<std::ptrdiff_t>(b);
    distinct += BlockJoints(joints + first, weights + first, k);
  }
  return blocks > 0 ? static_cast<double>(distinct) / blocks : 0.0;
}

#endif  // SKINNING_VECTOR_EXT

template <bool kNormals, bool kStretch>
void DqsFloatDispatchK(const float* V, int n, const int32_t* joints, const float* weights, int k,
                       const float* Q8, const float* S9, float* U, const float* N, float* NU) {
#ifdef SKINNING_VECTOR_EXT
  if (k == 8) return DqsFloatLanes<8, kNormals, kStretch>(V, n, joints, weights, Q8, S9, U, N, NU);
#endif
  if (k == 4) {
#ifdef SKINNING_VECTOR_EXT
    DqsFloatLanes<4, kNormals, kStretch>(V, n, joints, weights, Q8, S9, U, N, NU);
#else
    DqsFloatKernel<4, kNormals, kStretch>(V, n, joints, weights, k, Q8, S9, U, N, NU);
#endif
  } else {
    DqsFloatKernel<0, kNormals, kStretch>(V, n, joints, weights, k, Q8, S9, U, N, NU);
  }
}

// Calls f(normals, stretch, Q8, S9) with the kernels' two flags as std::bool_constant values (the
// float data's stretch present, `normals` asked), so that each entry point instantiates its four
// kernels from one call.
template <typename F>
void WithKernelFlags(const DqsTransformsFloat& prepared, bool normals, F&& f) {
  const float* Q8 = prepared.q8.data();
  const float* S9 = prepared.stretch.empty() ? nullptr : prepared.stretch.data();
  if (S9 != nullptr) {
    if (normals) {
      f(std::true_type{}, std::true_type{}, Q8, S9);
    } else {
      f(std::false_type{}, std::true_type{}, Q8, S9);
    }
  } else {
    if (normals) {
      f(std::true_type{}, std::false_type{}, Q8, S9);
    } else {
      f(std::false_type{}, std::false_type{}, Q8, S9);
    }
  }
}

}  // namespace

DqsTransforms PrepareDqs(const std::vector<Eigen::Affine3d>& T) {
  DqsTransforms D;
  const size_t m = T.size();
  D.real.resize(m);
  D.dual.resize(m);
  D.stretch.assign(m, Eigen::Matrix3d::Identity());
  for (size_t j = 0; j < m; ++j) {
    const Eigen::Matrix3d A = T[j].linear();
    Eigen::Matrix3d R;
    // Rigid: AᵀA = S² = I within float rounding (kFloatRigidTolerance, so |S − I| ≲ half of it),
    // proper; the rotation is A's nearest and the stretch left is dropped.
    if (const std::optional<Eigen::Matrix3d> rotation = RotationWithinRounding(A)) {
      R = *rotation;
    } else {
      // Polar decomposition A = R S through the SVD A = U Σ Vᵀ: R = U Vᵀ, S = Rᵀ A = V Σ Vᵀ
      // (symmetrized against rounding). A reflection (det A < 0) keeps R proper by flipping
      // U's last column, which leaves the negative factor in S.
      Eigen::JacobiSVD<Eigen::Matrix3d> svd(A, Eigen::ComputeFullU | Eigen::ComputeFullV);
      Eigen::Matrix3d Us = svd.matrixU();
      const Eigen::Matrix3d& Vs = svd.matrixV();
      if ((Us * Vs.transpose()).determinant() < 0) Us.col(2) *= -1;
      R = Us * Vs.transpose();
      const Eigen::Matrix3d RtA = R.transpose() * A;
      D.stretch[j] = 0.5 * (RtA + RtA.transpose());
      D.any_stretch = true;
    }
    const Eigen::Quaterniond r = Eigen::Quaterniond(R).normalized();
    const DualQuaterniond q = DualQuaterniond::FromRigid(r, T[j].translation());
    D.real[j] = q.real;
    D.dual[j] = q.dual;
  }
  return D;
}

void Dqs(const RowMatrixX3d& V, const SparseWeights& W, const DqsTransforms& prepared,
         RowMatrixX3d* U, const RowMatrixX3d* N, RowMatrixX3d* NU) {
  const Eigen::Index n = V.rows();
  const bool normals = N != nullptr && NU != nullptr && N->rows() > 0;
  U->resize(n, 3);
  if (normals) NU->resize(n, 3);
  const int k = W.k();
  std::vector<int> joint(k);
  std::vector<double> weight(k);
  for (Eigen::Index i = 0; i < n; ++i) {
    int count = 0;
    for (int c = 0; c < k; ++c) {
      if (W.weights(i, c) == 0) continue;
      joint[count] = W.joints(i, c);
      weight[count] = W.weights(i, c);
      ++count;
    }
    DqsVertex(prepared, joint.data(), weight.data(), count, V.row(i).data(),
              normals ? N->row(i).data() : nullptr, U->row(i).data(),
              normals ? NU->row(i).data() : nullptr);
  }
}

void Dqs(const RowMatrixX3d& V, const SparseWeights& W, const std::vector<Eigen::Affine3d>& T,
         RowMatrixX3d* U, const RowMatrixX3d* N, RowMatrixX3d* NU) {
  Dqs(V, W, PrepareDqs(T), U, N, NU);
}

void Dqs(const RowMatrixX3d& V, const Eigen::MatrixXd& W, const std::vector<Eigen::Affine3d>& T,
         RowMatrixX3d* U) {
  const DqsTransforms D = PrepareDqs(T);
  const Eigen::Index n = V.rows();
  U->resize(n, 3);
  const int m = static_cast<int>(W.cols());
  std::vector<int> joint(m);
  std::vector<double> weight(m);
  for (Eigen::Index i = 0; i < n; ++i) {
    int count = 0;
    for (int j = 0; j < m; ++j) {
      if (W(i, j) == 0) continue;
      joint[count] = j;
      weight[count] = W(i, j);
      ++count;
    }
    DqsVertex(D, joint.data(), weight.data(), count, V.row(i).data(), nullptr, U->row(i).data(),
              nullptr);
  }
}

DqsTransformsFloat PrepareDqsFloat(const std::vector<Eigen::Affine3d>& T) {
  const DqsTransforms D = PrepareDqs(T);
  DqsTransformsFloat F;
  F.q8.resize(8 * T.size());
  for (size_t j = 0; j < T.size(); ++j) {
    for (int l = 0; l < 4; ++l) {
      F.q8[8 * j + l] = static_cast<float>(D.real[j].coeffs()(l));
      F.q8[8 * j + 4 + l] = static_cast<float>(D.dual[j].coeffs()(l));
    }
  }
  if (D.any_stretch) {
    F.stretch.resize(9 * T.size());
    for (size_t j = 0; j < T.size(); ++j)
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c)
          F.stretch[9 * j + 3 * r + c] = static_cast<float>(D.stretch[j](r, c));
  }
  return F;
}

void DqsFloat(const float* V, int n, const int32_t* joints, const float* weights, int k,
              const DqsTransformsFloat& prepared, float* U, const float* N, float* NU) {
  WithKernelFlags(prepared, N != nullptr && NU != nullptr, [&](auto normals, auto stretch, const float* Q8,
                                                                const float* S9) {
    constexpr bool kNormals = decltype(normals)::value;
    DqsFloatDispatchK<kNormals, decltype(stretch)::value>(V, n, joints, weights, k, Q8, S9, U, kNormals ? N : nullptr,
                                                          kNormals ? NU : nullptr);
  });
}

DqsLaneOrder PrepareDqsLaneOrder(const SparseWeights& W) {
  DqsLaneOrder lanes;
#ifdef SKINNING_VECTOR_EXT
  const int n = W.rows(), k = W.k();
  if ((k != 4 && k != 8) || n < 64) return lanes;
  const int32_t* joints = W.joints.data();
  const float* weights = W.weights.data();
  // Each row's slots sorted by joint, unused ones (weight 0) last, and the row's key: its sorted
  // joints packed 16 bits each (0xFFFF for an unused slot), the first the most significant, so
  // that keys compare as the joint sets do (lexicographically): one sort of (key, row) pairs.
  // The whole preparation takes 0.4 s (k = 4) and 0.6 s (k = 8) per million rows on 2 cores,
  // mostly allocation. A rig with 65,535 joints or more gets no order.
  constexpr int32_t kUnused = 0xFFFF;
  using Key = unsigned __int128;
  std::vector<std::pair<Key, int32_t>> keyed(n);
  std::vector<uint8_t> slot(static_cast<size_t>(n) * k);
  for (int i = 0; i < n; ++i) {
    const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(k) * i;
    uint8_t* s = slot.data() + row;
    int32_t key[8];
    for (int c = 0; c < k; ++c) {
      if (weights[row + c] != 0.f && (joints[row + c] < 0 || joints[row + c] >= kUnused)) return lanes;
      key[c] = weights[row + c] != 0.f ? joints[row + c] : kUnused;
      s[c] = static_cast<uint8_t>(c);
    }
    for (int c = 1; c < k; ++c)  // insertion sort by (joint, slot)
      for (int d = c; d > 0 && key[s[d]] < key[s[d - 1]]; --d) std::swap(s[d], s[d - 1]);
    Key packed = 0;
    for (int c = 0; c < k; ++c) packed = (packed << 16) | static_cast<uint32_t>(key[s[c]]);
    keyed[i] = {packed, i};
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<int32_t> order(n);
  for (int r = 0; r < n; ++r) order[r] = keyed[r].second;
  std::vector<int32_t> J(static_cast<size_t>(n) * k);
  std::vector<float> Wt(static_cast<size_t>(n) * k);
  for (int r = 0; r < n; ++r) {
    const std::ptrdiff_t from = static_cast<std::ptrdiff_t>(k) * order[r], to = static_cast<std::ptrdiff_t>(k) * r;
    for (int c = 0; c < k; ++c) {
      const int s = slot[from + c];
      J[to + c] = joints[from + s];
      Wt[to + c] = weights[from + s];
    }
  }
  const double file = MeanBlockJoints(joints, weights, k, n);
  const double ordered = MeanBlockJoints(J.data(), Wt.data(), k, n);
  if (!LanesPay(ordered, k) || file <= 1.1 * ordered) return lanes;
  lanes.k = k;
  lanes.order = std::move(order);
  lanes.joints = std::move(J);
  lanes.weights = std::move(Wt);
#endif
  return lanes;
}

void DqsFloat(const float* V, const DqsLaneOrder& lanes, const DqsTransformsFloat& prepared, float* U,
              const float* N, float* NU) {
#ifdef SKINNING_VECTOR_EXT
  WithKernelFlags(prepared, N != nullptr && NU != nullptr, [&](auto normals, auto stretch, const float* Q8,
                                                                const float* S9) {
    constexpr bool kNormals = decltype(normals)::value;
    DqsFloatOrderedK<kNormals, decltype(stretch)::value>(V, lanes, Q8, S9, U, kNormals ? N : nullptr,
                                                         kNormals ? NU : nullptr);
  });
#endif
}

const DqsLaneOrder& LazyDqsLaneOrder::Get(const SparseWeights& W, size_t* prepared_bytes,
                                          const std::function<size_t(const DqsLaneOrder&)>& also) const {
  size_t prepared = 0;
  std::call_once(once_, [&] {
    order_ = PrepareDqsLaneOrder(W);
    prepared = order_.bytes();
    if (also) prepared += also(order_);
  });
  if (prepared_bytes != nullptr) *prepared_bytes = prepared;
  return order_;
}

}  // namespace skinning
