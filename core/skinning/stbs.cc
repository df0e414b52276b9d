#include "core/skinning/stbs.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "absl/strings/str_format.h"
#include "core/skinning/kernel_common.h"
#include "core/skinning/dqs.h"
#include "core/skinning/lbs.h"
#include "core/skinning/simd4.h"
#include "core/skinning/simd8.h"
#include "core/skinning/swing_twist.h"
#include "core/util/status_macros.h"

namespace skinning {

namespace {

using Matrix34d = Eigen::Matrix<double, 3, 4>;

double Stretch(const BoneStretchTwist& st, int j) {
  return st.stretch.empty() ? 1.0 : st.stretch[j];
}
double TwistA(const BoneStretchTwist& st, int j) {
  return st.twist_a.empty() ? 0.0 : st.twist_a[j];
}
double TwistB(const BoneStretchTwist& st, int j) {
  return st.twist_b.empty() ? 0.0 : st.twist_b[j];
}

// The bone deformation G_j (rigid) at endpoint weight e: x ↦ a + K(e)(e s + x − a). The identity
// exactly when K = I and s = 0 (so that λ = 1, θ = 0 reproduces plain skinning bit for bit).
Eigen::Affine3d BoneMotion(const StbsBone& bone, const BoneStretchTwist& st, int j, double e) {
  Eigen::Affine3d G = Eigen::Affine3d::Identity();
  if (!bone.valid) return G;
  const double lambda = Stretch(st, j);
  const double phi = (1.0 - e) * TwistA(st, j) + e * TwistB(st, j);
  if (lambda == 1.0 && phi == 0.0) return G;
  const Eigen::Vector3d d = bone.b - bone.a;
  const Eigen::Vector3d s = (lambda - 1.0) * d;
  const Eigen::Matrix3d K = Eigen::AngleAxisd(phi, d.normalized()).toRotationMatrix();
  G.linear() = K;
  G.translation() = bone.a + K * (e * s - bone.a);
  return G;
}

// Float parameter layout per joint (StbsFrameFloat::kStride floats).
enum : int {
  kKind = 0,     // 0: plain (U = T p), 1: stretched or twisted bone
  kThetaA = 1,   // θ_a
  kThetaB = 2,   // θ_b
  kHalfInPi = 3, // 1 when |θ_a|, |θ_b| ≤ 2π: the half angle of every e in [0, 1] is in [−π, π]
  kT34 = 4,      // T, 3x4 row-major
  kA = 16,       // a
  kU = 19,       // unit bone axis u
  kP1 = 22,      // L (I − u uᵀ), row-major
  kP2 = 31,      // L [u]×
  kLu = 40,      // L u
  kC0 = 43,      // L a + t
  kC1 = 46,      // L s
  kQ = 49,       // rotation quaternion of T (xyzw)
  kDual = 53,    // plain joints: dual part of T's dual quaternion (xyzw)
  kP1a = 53,     // bone joints: P1 a
  kP2a = 56,     // P2 a
  kD0 = 59,      // c0 − (u·a) L u
  kS9 = 62,      // T's symmetric stretch, row-major (identity when rigid)
  kQu = 71,      // bone joints: q_T ⊗ (u, 0) (xyzw)
  kFullInPi = 75,  // 1 when |θ_a|, |θ_b| ≤ π: the angle of every e in [0, 1] is in [−π, π]
  kEnd = 76,
};
static_assert(kEnd <= StbsFrameFloat::kStride);


inline void Mul33(const float* __restrict m, const float* __restrict v, float* __restrict u) {
  u[0] = m[0] * v[0] + m[1] * v[1] + m[2] * v[2];
  u[1] = m[3] * v[0] + m[4] * v[1] + m[5] * v[2];
  u[2] = m[6] * v[0] + m[7] * v[1] + m[8] * v[2];
}

// Slot output for LBS: T G(p).
inline void StbsLbsSlot(const float* __restrict P, const float* __restrict p, float e,
                        float* __restrict o) {
  const float* __restrict T = P + kT34;
  if (P[kKind] == 0.f) {
    o[0] = T[0] * p[0] + T[1] * p[1] + T[2] * p[2] + T[3];
    o[1] = T[4] * p[0] + T[5] * p[1] + T[6] * p[2] + T[7];
    o[2] = T[8] * p[0] + T[9] * p[1] + T[10] * p[2] + T[11];
    return;
  }
  // T G(p) = (L a + t) + e L s + L K (p − a),  L K q = (L u)(u·q) + cos P1 q + sin P2 q.
  float sn, cs;
  FastSinCos(P[kThetaA] + e * (P[kThetaB] - P[kThetaA]), &sn, &cs);
  const float q[3] = {p[0] - P[kA], p[1] - P[kA + 1], p[2] - P[kA + 2]};
  const float uq = P[kU] * q[0] + P[kU + 1] * q[1] + P[kU + 2] * q[2];
  float p1[3], p2[3];
  Mul33(P + kP1, q, p1);
  Mul33(P + kP2, q, p2);
  for (int r = 0; r < 3; ++r)
    o[r] = P[kC0 + r] + e * P[kC1 + r] + uq * P[kLu + r] + cs * p1[r] + sn * p2[r];
}

// sin and cos of every lane: one float, or eight. On lanes, `in_pi` (the joint's kHalfInPi or
// kFullInPi) skips the reduction to [−π, π] (a third of the sine and cosine's operations).
inline void SinCosLanes(float x, float, float* s, float* c) { FastSinCos(x, s, c); }
#ifdef SKINNING_VECTOR_EXT
SKINNING_LANES_INLINE void SinCosLanes(simd8::F8 x, float in_pi, simd8::F8* s, simd8::F8* c) {
  if (in_pi != 0.f) {
    simd8::SinCos8Reduced(x, s, c);
  } else {
    simd8::SinCos8(x, s, c);
  }
}
#endif

// Slot's dual quaternion for DQS (real xyzw, dual xyzw) at endpoint weights e, for one vertex
// (T = float) or eight (T = F8); with kStretch (one vertex only), its stretch Kᵀ S K too.
template <typename T, bool kStretch = false>
SKINNING_LANES_INLINE void StbsDq(const float* __restrict P, T e, T* __restrict dq, float* __restrict S = nullptr) {
  static_assert(!kStretch || std::is_same_v<T, float>, "the stretch is computed one vertex at a time");
  const float* __restrict q = P + kQ;
  if (P[kKind] == 0.f) {
    for (int l = 0; l < 4; ++l) dq[l] = T{} + q[l];
    for (int l = 0; l < 4; ++l) dq[4 + l] = T{} + P[kDual + l];
    if constexpr (kStretch)
      for (int l = 0; l < 9; ++l) S[l] = P[kS9 + l];
    return;
  }
  T sh, ch;
  SinCosLanes(0.5f * (P[kThetaA] + e * (P[kThetaB] - P[kThetaA])), P[kHalfInPi], &sh, &ch);
  const T cs = (ch - sh) * (ch + sh), sn = 2.f * sh * ch;
  // real = q_T ⊗ q_K, q_K = (sh u, ch): linear in (sh, ch), ch q_T + sh (q_T ⊗ (u, 0)).
  const float* __restrict qu = P + kQu;
  const T rx = ch * q[0] + sh * qu[0];
  const T ry = ch * q[1] + sh * qu[1];
  const T rz = ch * q[2] + sh * qu[2];
  const T rw = ch * q[3] + sh * qu[3];
  // Translation of T G: T(a + e s − K a) = d0 + e c1 − cos P1 a − sin P2 a.
  T t[3];
  for (int r = 0; r < 3; ++r)
    t[r] = (P[kD0 + r] + e * P[kC1 + r]) - cs * P[kP1a + r] - sn * P[kP2a + r];
  dq[0] = rx;
  dq[1] = ry;
  dq[2] = rz;
  dq[3] = rw;
  // dual = ½ (t, 0) ⊗ real
  dq[4] = 0.5f * (t[0] * rw + t[1] * rz - t[2] * ry);
  dq[5] = 0.5f * (t[1] * rw + t[2] * rx - t[0] * rz);
  dq[6] = 0.5f * (t[0] * ry - t[1] * rx + t[2] * rw);
  dq[7] = -0.5f * (t[0] * rx + t[1] * ry + t[2] * rz);
  if constexpr (kStretch) {
    // Kᵀ S K with K = cos I + sin [u]× + (1 − cos) u uᵀ.
    const float ux = P[kU], uy = P[kU + 1], uz = P[kU + 2];
    const float c1 = 1.f - cs;
    const float K[9] = {cs + c1 * ux * ux,      c1 * ux * uy - sn * uz, c1 * ux * uz + sn * uy,
                        c1 * uy * ux + sn * uz, cs + c1 * uy * uy,      c1 * uy * uz - sn * ux,
                        c1 * uz * ux - sn * uy, c1 * uz * uy + sn * ux, cs + c1 * uz * uz};
    const float* __restrict S0 = P + kS9;
    float SK[9];
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c)
        SK[3 * r + c] = S0[3 * r] * K[c] + S0[3 * r + 1] * K[3 + c] + S0[3 * r + 2] * K[6 + c];
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c)
        S[3 * r + c] = K[r] * SK[c] + K[3 + r] * SK[3 + c] + K[6 + r] * SK[6 + c];
  }
}

template <bool kStretch>
void StbsDqsKernel(const float* __restrict V, int n, const int32_t* __restrict joints,
                   const float* __restrict weights, const float* __restrict endpoint, int k,
                   const float* __restrict params, float* __restrict U) {
  constexpr int kS = StbsFrameFloat::kStride;
  for (int i = 0; i < n; ++i) {
    const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(i) * k;
    const std::ptrdiff_t o = 3 * static_cast<std::ptrdiff_t>(i);
    int pivot = 0;
    for (int c = 1; c < k; ++c)
      if (weights[row + c] > weights[row + pivot]) pivot = c;
    float b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    float Sb[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    float rp[4] = {0, 0, 0, 0};
    float weight_sum = 0.f;
    bool have_pivot = false;
    // The pivot first, so the others can be flipped to its hemisphere.
    for (int step = 0; step < k; ++step) {
      const int c = step == 0 ? pivot : (step <= pivot ? step - 1 : step);
      const float w = weights[row + c];
      if (w == 0.f) continue;
      float dq[8], S[9];
      StbsDq<float, kStretch>(params + kS * static_cast<std::ptrdiff_t>(joints[row + c]),
                           endpoint[row + c], dq, S);
      if (!have_pivot) {
        for (int l = 0; l < 4; ++l) rp[l] = dq[l];
        have_pivot = true;
      }
      const float d = dq[0] * rp[0] + dq[1] * rp[1] + dq[2] * rp[2] + dq[3] * rp[3];
      const float ws = d < 0.f ? -w : w;
      for (int l = 0; l < 8; ++l) b[l] += ws * dq[l];
      if constexpr (kStretch)
        for (int l = 0; l < 9; ++l) Sb[l] += w * S[l];
      weight_sum += w;
    }
    float p[3] = {V[o], V[o + 1], V[o + 2]};
    if constexpr (kStretch) {
      const float inv = weight_sum > 0.f ? 1.f / weight_sum : 0.f;
      for (int l = 0; l < 9; ++l) Sb[l] *= inv;
      float sp[3];
      Mul33(Sb, p, sp);
      p[0] = sp[0];
      p[1] = sp[1];
      p[2] = sp[2];
    }
    // u = p + f (w a + v × a − ew v),  a = v × p + e,  f = 2 / |b0|² (as dqs.cc).
    const float vx = b[0], vy = b[1], vz = b[2], qw = b[3];
    const float ex = b[4], ey = b[5], ez = b[6], ew = b[7];
    const float n2 = vx * vx + vy * vy + vz * vz + qw * qw;
    const float f = n2 > 0.f ? 2.f / n2 : 0.f;
    const float ax = vy * p[2] - vz * p[1] + ex;
    const float ay = vz * p[0] - vx * p[2] + ey;
    const float az = vx * p[1] - vy * p[0] + ez;
    U[o] = p[0] + f * (qw * ax + (vy * az - vz * ay) - ew * vx);
    U[o + 1] = p[1] + f * (qw * ay + (vz * ax - vx * az) - ew * vy);
    U[o + 2] = p[2] + f * (qw * az + (vx * ay - vy * ax) - ew * vz);
  }
}

void StbsLbsKernel(const float* __restrict V, int n, const int32_t* __restrict joints,
                   const float* __restrict weights, const float* __restrict endpoint, int k,
                   const float* __restrict params, float* __restrict U) {
  constexpr int kS = StbsFrameFloat::kStride;
  BlendSlots<0>(n, k, weights, U, [&](std::ptrdiff_t rc, std::ptrdiff_t o, float* d) {
    StbsLbsSlot(params + kS * static_cast<std::ptrdiff_t>(joints[rc]), V + o, endpoint[rc], d);
  });
}

#ifdef SKINNING_VECTOR_EXT
// ---- 8-lane kernels (k == 4) -------------------------------------------------------------------
//
// With the simd8.h helpers of swing_twist.cc's kernels: lanes are 8 consecutive vertices, the
// 4 slots are transposed into lane vectors, and per slot each distinct joint among the lanes
// runs once with its parameters broadcast and the weight masked.

using namespace simd8;  // F8, I8 and the 8-lane helpers (simd8.h)


// Accumulates w · T G(p) (Eq. 5) of the joint with parameters P.
SKINNING_LANES_INLINE void StbsLbsAccumulate8(const float* __restrict P, F8 px, F8 py, F8 pz, F8 w, F8 e,
                                              F8* ax, F8* ay, F8* az) {
  const float* __restrict T = P + kT34;
  if (P[kKind] == 0.f) {
    *ax += w * (px * T[0] + py * T[1] + pz * T[2] + T[3]);
    *ay += w * (px * T[4] + py * T[5] + pz * T[6] + T[7]);
    *az += w * (px * T[8] + py * T[9] + pz * T[10] + T[11]);
    return;
  }
  F8 sn, cs;
  SinCosLanes(P[kThetaA] + e * (P[kThetaB] - P[kThetaA]), P[kFullInPi], &sn, &cs);
  const F8 qx = px - P[kA], qy = py - P[kA + 1], qz = pz - P[kA + 2];
  const F8 uq = qx * P[kU] + qy * P[kU + 1] + qz * P[kU + 2];
  const float* __restrict P1 = P + kP1;
  const float* __restrict P2 = P + kP2;
  F8 o[3];
  for (int r = 0; r < 3; ++r) {
    const F8 p1 = qx * P1[3 * r] + qy * P1[3 * r + 1] + qz * P1[3 * r + 2];
    const F8 p2 = qx * P2[3 * r] + qy * P2[3 * r + 1] + qz * P2[3 * r + 2];
    o[r] = (P[kC0 + r] + e * P[kC1 + r]) + uq * P[kLu + r] + cs * p1 + sn * p2;
  }
  *ax += w * o[0];
  *ay += w * o[1];
  *az += w * o[2];
}

// The dual quaternions (StbsDq) of one slot's joints on 8 lanes; false (dq untouched) when no
// lane uses the slot. A slot whose lanes all hold one joint (the usual case) is computed once for
// all lanes; otherwise once per distinct joint among the used lanes, selected into them (the
// lanes whose weight is 0 get 0). Either way a lane of weight 0 adds nothing to the blend.
SKINNING_LANES_INLINE bool StbsSlotDq8(const float* __restrict params, I8 J, F8 W, F8 E,
                                       F8 dq[8]) {
  constexpr int kS = StbsFrameFloat::kStride;
  const F8 zero = {};
  I8 pending = W != zero;
  if (!AnyLane(pending)) return false;
  if (const int32_t j = J[0]; !AnyLane(J != j)) {
    StbsDq<F8>(params + kS * static_cast<std::ptrdiff_t>(j), E, dq);
    return true;
  }
  for (int l = 0; l < 8; ++l) dq[l] = zero;
  while (AnyLane(pending)) {
    I8 mine;
    const int32_t j = TakeLaneGroup(J, &pending, &mine);
    F8 d[8];
    StbsDq<F8>(params + kS * static_cast<std::ptrdiff_t>(j), E, d);
    for (int l = 0; l < 8; ++l) dq[l] = Select(mine, d[l], dq[l]);
  }
  return true;
}

template <bool kDqs>
SKINNING_HOT_CLONES void StbsKernel8K4(const float* __restrict V, int n8,
                                       const int32_t* __restrict joints,
                                       const float* __restrict weights,
                                       const float* __restrict endpoint,
                                       const float* __restrict params, float* __restrict U) {
  constexpr int kS = StbsFrameFloat::kStride;
  const F8 zero = {};
  for (int i0 = 0; i0 < n8; i0 += 8) {
    const std::ptrdiff_t row = 4 * static_cast<std::ptrdiff_t>(i0);
    F8 W[4], E[4];
    I8 J[4];
    Transpose8x4(weights + row, W);
    Transpose8x4(joints + row, J);
    Transpose8x4(endpoint + row, E);
    F8 px, py, pz;
    Deinterleave8(V + 3 * static_cast<std::ptrdiff_t>(i0), &px, &py, &pz);
    if constexpr (!kDqs) {
      F8 ax = zero, ay = zero, az = zero;
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        I8 pending = W[c] != zero;
        while (AnyLane(pending)) {
          I8 mine;
          const int32_t j = TakeLaneGroup(J[c], &pending, &mine);
          const F8 w = reinterpret_cast<F8>(reinterpret_cast<I8>(W[c]) & mine);
          StbsLbsAccumulate8(params + kS * static_cast<std::ptrdiff_t>(j), px, py, pz, w, E[c],
                             &ax, &ay, &az);
        }
      }
      Interleave8(ax, ay, az, U + 3 * static_cast<std::ptrdiff_t>(i0));
    } else {
      // Per slot, the dual quaternion of each lane's joint (StbsSlotDq8); then the pivot (largest
      // weight, first on ties) per lane, antipodality against it, the blend, and the rigid
      // motion (dqs.cc).
      F8 dq[4][8];
      bool active[4];
      for (int c = 0; c < 4; ++c) {
        active[c] = StbsSlotDq8(params, J[c], W[c], E[c], dq[c]);
        if (!active[c])
          for (int l = 0; l < 8; ++l) dq[c][l] = zero;
      }
      F8 best = W[0];
      F8 rp[4] = {dq[0][0], dq[0][1], dq[0][2], dq[0][3]};
      for (int c = 1; c < 4; ++c) {
        if (!active[c]) continue;  // an unused slot's weight is never the largest
        const I8 gt = W[c] > best;
        best = Select(gt, W[c], best);
        for (int l = 0; l < 4; ++l) rp[l] = Select(gt, dq[c][l], rp[l]);
      }
      F8 b[8];
      for (int l = 0; l < 8; ++l) b[l] = zero;
      const I8 sign_bit = I8{} + INT32_MIN;
      for (int c = 0; c < 4; ++c) {
        if (!active[c]) continue;
        const F8 d = dq[c][0] * rp[0] + dq[c][1] * rp[1] + dq[c][2] * rp[2] + dq[c][3] * rp[3];
        const F8 ws = reinterpret_cast<F8>(reinterpret_cast<I8>(W[c]) ^ ((d < zero) & sign_bit));
        for (int l = 0; l < 8; ++l) b[l] += ws * dq[c][l];
      }
      F8 ux, uy, uz;
      BlendedDqApply8(b, BlendedDqScale8(b), px, py, pz, &ux, &uy, &uz);
      Interleave8(ux, uy, uz, U + 3 * static_cast<std::ptrdiff_t>(i0));
    }
  }
}
#endif  // SKINNING_VECTOR_EXT

}  // namespace

std::vector<StbsBone> StbsBones(const std::vector<JointHandle>& handles) {
  std::vector<StbsBone> bones(handles.size());
  for (size_t j = 0; j < handles.size(); ++j) {
    const JointHandle& h = handles[j];
    if (!h.deforms || h.segments.size() != 1 || h.segments[0].IsPoint()) continue;
    bones[j].valid = true;
    bones[j].a = h.segments[0].a;
    bones[j].b = h.segments[0].b;
  }
  return bones;
}

absl::Status ValidateStretchTwist(const Skeleton& skeleton, const std::vector<StbsBone>& bones,
                                  const BoneStretchTwist& st, const char* field) {
  const int m = skeleton.size();
  if (static_cast<int>(bones.size()) != m)
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %d bones for %d joints", field, bones.size(), m));
  if (!st.stretch.empty() && static_cast<int>(st.stretch.size()) != m)
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s.bone_stretch has %d entries, the skeleton has %d joints", field, st.stretch.size(), m));
  if (!st.twist_a.empty() && static_cast<int>(st.twist_a.size()) != m)
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s.bone_twist has %d start angles, the skeleton has %d joints", field, st.twist_a.size(), m));
  if (!st.twist_b.empty() && static_cast<int>(st.twist_b.size()) != m)
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s.bone_twist has %d end angles, the skeleton has %d joints", field, st.twist_b.size(), m));
  auto no_bone = [&](const char* name, int index, double value, int j) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s.%s[%d] = %g: joint %d (%s) has no single bone (it is a leaf without a tail, has "
                        "several children, or its bone has zero length)",
                        field, name, index, value, j, skeleton.joints[j].name));
  };
  for (int j = 0; j < m; ++j) {
    if (!st.stretch.empty()) {
      const double v = st.stretch[j];
      if (!std::isfinite(v))
        return absl::InvalidArgumentError(
            absl::StrFormat("%s.bone_stretch[%d] = %g is not finite", field, j, v));
      if (v <= 0)
        return absl::InvalidArgumentError(
            absl::StrFormat("%s.bone_stretch[%d] = %g must be positive", field, j, v));
      if (v > kMaxBoneStretch || v < 1 / kMaxBoneStretch)
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s.bone_stretch[%d] = %g is outside [%g, %g]", field, j, v, 1 / kMaxBoneStretch, kMaxBoneStretch));
      if (v != 1.0 && !bones[j].valid) return no_bone("bone_stretch", j, v, j);
    }
    for (int end = 0; end < 2; ++end) {
      const std::vector<double>& tw = end == 0 ? st.twist_a : st.twist_b;
      if (tw.empty()) continue;
      const double v = tw[j];
      if (!std::isfinite(v))
        return absl::InvalidArgumentError(
            absl::StrFormat("%s.bone_twist[%d] = %g is not finite", field, 2 * j + end, v));
      // The kernels' sine and cosine reduce angles below 100,000 rad (FastSinCos).
      if (std::abs(v) > kMaxBoneTwist)
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s.bone_twist[%d] = %g rad is outside [-%g, %g] (%g turns)", field, 2 * j + end, v, kMaxBoneTwist,
            kMaxBoneTwist, kMaxBoneTwist / (2 * M_PI)));
      if (v != 0.0 && !bones[j].valid) return no_bone("bone_twist", 2 * j + end, v, j);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Eigen::Affine3d>> StretchedSkinningTransforms(
    const Skeleton& skeleton, const std::vector<int>& order, const Pose& pose,
    const std::vector<StbsBone>& bones, const BoneStretchTwist& st) {
  RETURN_IF_ERROR(ValidatePose(skeleton, pose));
  RETURN_IF_ERROR(ValidateStretchTwist(skeleton, bones, st));
  bool any_stretch = false;
  for (double l : st.stretch) any_stretch |= l != 1.0;
  if (!any_stretch) return SkinningTransforms(skeleton, order, pose);
  const std::vector<Transform> local = PoseLocals(skeleton, pose);
  const int m = skeleton.size();
  std::vector<Eigen::Affine3d> world(m, Eigen::Affine3d::Identity());
  for (int j : order) {
    const int p = skeleton.joints[j].parent;
    const Eigen::Affine3d L = local[j].ToAffine();
    if (p < 0) {
      world[j] = L;
      continue;
    }
    Eigen::Affine3d Wp = world[p];
    if (bones[p].valid && Stretch(st, p) != 1.0) {
      const Eigen::Vector3d delta = (Stretch(st, p) - 1.0) *
                                    (skeleton.joints[p].inverse_bind.linear() * (bones[p].b - bones[p].a));
      Wp = Wp * Eigen::Translation3d(delta);
    }
    world[j] = Wp * L;
  }
  for (int j = 0; j < m; ++j) world[j] = world[j] * skeleton.joints[j].inverse_bind;
  return world;
}

void StbsLbs(const RowMatrixX3d& V, const Eigen::MatrixXd& W, const Eigen::MatrixXd& E,
             const std::vector<StbsBone>& bones, const std::vector<Eigen::Affine3d>& T,
             const BoneStretchTwist& st, RowMatrixX3d* U) {
  // M = Σ w_j T_j G_j, applied to p (the same arithmetic as Lbs when every G_j = I).
  BlendDense(V, W, [&](Eigen::Index i, Eigen::Index j) -> Matrix34d {
    const Eigen::Affine3d G = BoneMotion(bones[j], st, static_cast<int>(j), E(i, j));
    if (G.matrix() == Eigen::Matrix4d::Identity()) return T[j].matrix().topRows<3>();
    return (T[j] * G).matrix().topRows<3>();
  }, U);
}

void StbsDqs(const RowMatrixX3d& V, const Eigen::MatrixXd& W, const Eigen::MatrixXd& E,
             const std::vector<StbsBone>& bones, const std::vector<Eigen::Affine3d>& T,
             const BoneStretchTwist& st, RowMatrixX3d* U) {
  const Eigen::Index n = V.rows();
  U->resize(n, 3);
  std::vector<Eigen::Affine3d> phi;
  for (Eigen::Index i = 0; i < n; ++i) {
    phi.clear();
    std::vector<double> w;
    for (Eigen::Index j = 0; j < W.cols(); ++j) {
      if (W(i, j) == 0) continue;
      phi.push_back(T[j] * BoneMotion(bones[j], st, static_cast<int>(j), E(i, j)));
      w.push_back(W(i, j));
    }
    Eigen::MatrixXd wi(1, static_cast<Eigen::Index>(w.size()));
    for (size_t c = 0; c < w.size(); ++c) wi(0, static_cast<Eigen::Index>(c)) = w[c];
    RowMatrixX3d vi = V.row(i);
    RowMatrixX3d ui;
    Dqs(vi, wi, phi, &ui);
    U->row(i) = ui.row(0);
  }
}

StbsFrameFloat PrepareStbsFloat(const std::vector<StbsBone>& bones,
                                const std::vector<Eigen::Affine3d>& T, const BoneStretchTwist& st) {
  StbsFrameFloat F;
  const int m = static_cast<int>(T.size());
  F.num_joints = m;
  F.params.assign(static_cast<size_t>(m) * StbsFrameFloat::kStride, 0.f);
  const DqsTransforms D = PrepareDqs(T);
  F.any_stretch = D.any_stretch;
  for (int j = 0; j < m; ++j) {
    float* P = F.params.data() + static_cast<size_t>(j) * StbsFrameFloat::kStride;
    PutRowMajor(Matrix34d(T[j].matrix().topRows<3>()), P + kT34);
    PutRowMajor(Eigen::Vector4d(D.real[j].coeffs()), P + kQ);
    PutRowMajor(D.stretch[j], P + kS9);
    const bool bone = j < static_cast<int>(bones.size()) && bones[j].valid &&
                      (Stretch(st, j) != 1.0 || TwistA(st, j) != 0.0 || TwistB(st, j) != 0.0);
    if (!bone) {
      PutRowMajor(Eigen::Vector4d(D.dual[j].coeffs()), P + kDual);
      continue;
    }
    P[kKind] = 1.f;
    P[kThetaA] = static_cast<float>(TwistA(st, j));
    P[kThetaB] = static_cast<float>(TwistB(st, j));
    const float largest = std::max(std::abs(P[kThetaA]), std::abs(P[kThetaB]));
    constexpr float kPi = 3.14159265358979f;
    P[kHalfInPi] = largest <= 2.f * kPi ? 1.f : 0.f;
    P[kFullInPi] = largest <= kPi ? 1.f : 0.f;
    const Eigen::Vector3d a = bones[j].a;
    const Eigen::Vector3d d = bones[j].b - a;
    const Eigen::Vector3d u = d.normalized();
    const Eigen::Vector3d s = (Stretch(st, j) - 1.0) * d;
    const Eigen::Matrix3d L = T[j].linear();
    Eigen::Matrix3d ux;
    ux << 0, -u.z(), u.y(), u.z(), 0, -u.x(), -u.y(), u.x(), 0;
    const Eigen::Matrix3d P1 = L * (Eigen::Matrix3d::Identity() - u * u.transpose());
    const Eigen::Matrix3d P2 = L * ux;
    const Eigen::Vector3d c0 = L * a + T[j].translation();
    PutRowMajor(a, P + kA);
    PutRowMajor(u, P + kU);
    PutRowMajor(P1, P + kP1);
    PutRowMajor(P2, P + kP2);
    PutRowMajor(Eigen::Vector3d(L * u), P + kLu);
    PutRowMajor(c0, P + kC0);
    PutRowMajor(Eigen::Vector3d(L * s), P + kC1);
    PutRowMajor(Eigen::Vector3d(P1 * a), P + kP1a);
    PutRowMajor(Eigen::Vector3d(P2 * a), P + kP2a);
    PutRowMajor(Eigen::Vector3d(c0 - u.dot(a) * (L * u)), P + kD0);
    const Eigen::Quaterniond qu = D.real[j] * Eigen::Quaterniond(0.0, u.x(), u.y(), u.z());
    PutRowMajor(Eigen::Vector4d(qu.coeffs()), P + kQu);
  }
  return F;
}

void StbsFloat(const float* V, int n, const SparseWeights& W, const RowMatrixXf& endpoint,
               const StbsFrameFloat& frame, bool dqs, float* U) {
  const int k = W.k();
#ifdef SKINNING_VECTOR_EXT
  if (k == 4 && !(dqs && frame.any_stretch)) {
    const int n8 = n - n % 8;
    if (dqs)
      StbsKernel8K4<true>(V, n8, W.joints.data(), W.weights.data(), endpoint.data(),
                          frame.params.data(), U);
    else
      StbsKernel8K4<false>(V, n8, W.joints.data(), W.weights.data(), endpoint.data(),
                           frame.params.data(), U);
    // The last n % 8 vertices by the scalar kernels.
    const std::ptrdiff_t o = n8, ok = 4 * static_cast<std::ptrdiff_t>(n8);
    if (dqs)
      StbsDqsKernel<false>(V + 3 * o, n - n8, W.joints.data() + ok, W.weights.data() + ok,
                           endpoint.data() + ok, k, frame.params.data(), U + 3 * o);
    else
      StbsLbsKernel(V + 3 * o, n - n8, W.joints.data() + ok, W.weights.data() + ok,
                    endpoint.data() + ok, k, frame.params.data(), U + 3 * o);
    return;
  }
#endif
  if (!dqs) {
    StbsLbsKernel(V, n, W.joints.data(), W.weights.data(), endpoint.data(), k,
                  frame.params.data(), U);
  } else if (frame.any_stretch) {
    StbsDqsKernel<true>(V, n, W.joints.data(), W.weights.data(), endpoint.data(), k,
                        frame.params.data(), U);
  } else {
    StbsDqsKernel<false>(V, n, W.joints.data(), W.weights.data(), endpoint.data(), k,
                         frame.params.data(), U);
  }
}

bool StbsFloat(const float* V, const DqsLaneOrder& lanes, const RowMatrixXf& endpoint_lanes,
               const StbsFrameFloat& frame, bool dqs, float* U) {
#ifdef SKINNING_VECTOR_EXT
  const int n = static_cast<int>(lanes.order.size());
  if (lanes.empty() || lanes.k != 4 || (dqs && frame.any_stretch) || endpoint_lanes.rows() != n ||
      endpoint_lanes.cols() != 4)
    return false;
  const float* params = frame.params.data();
  SkinInOrder<false>(lanes.order.data(), n, V, nullptr, U, nullptr, [&](int r0, int m, const float* v, const float*,
                                                                         float* u, float*) {
    const int m8 = m - m % 8;
    const std::ptrdiff_t row = 4 * static_cast<std::ptrdiff_t>(r0);
    const int32_t* J = lanes.joints.data() + row;
    const float* Wt = lanes.weights.data() + row;
    const float* E = endpoint_lanes.data() + row;
    if (dqs)
      StbsKernel8K4<true>(v, m8, J, Wt, E, params, u);
    else
      StbsKernel8K4<false>(v, m8, J, Wt, E, params, u);
    if (m8 < m) {
      const std::ptrdiff_t t = 4 * static_cast<std::ptrdiff_t>(m8);
      if (dqs)
        StbsDqsKernel<false>(v + 3 * m8, m - m8, J + t, Wt + t, E + t, 4, params, u + 3 * m8);
      else
        StbsLbsKernel(v + 3 * m8, m - m8, J + t, Wt + t, E + t, 4, params, u + 3 * m8);
    }
  });
  return true;
#else
  (void)V, (void)lanes, (void)endpoint_lanes, (void)frame, (void)dqs, (void)U;
  return false;
#endif
}

RowMatrixXf LaneEndpointWeights(const SparseWeights& W, const RowMatrixXf& endpoint, const DqsLaneOrder& lanes) {
  const int n = static_cast<int>(lanes.order.size()), k = lanes.k;
  RowMatrixXf out = RowMatrixXf::Zero(n, k);
  for (int r = 0; r < n; ++r) {
    const int i = lanes.order[r];
    for (int c = 0; c < k; ++c) {
      const std::ptrdiff_t at = static_cast<std::ptrdiff_t>(k) * r + c;
      if (lanes.weights[at] == 0.f) continue;
      // The order keeps each row's (joint, weight) pairs and only moves them between slots.
      for (int s = 0; s < W.k(); ++s)
        if (W.joints(i, s) == lanes.joints[at] && W.weights(i, s) != 0.f) {
          out(r, c) = endpoint(i, s);
          break;
        }
    }
  }
  return out;
}

RowMatrixXf AlignEndpointWeights(const SparseWeights& W, const Eigen::MatrixXd& E) {
  RowMatrixXf out = RowMatrixXf::Zero(W.rows(), W.k());
  for (int i = 0; i < W.rows(); ++i)
    for (int c = 0; c < W.k(); ++c)
      if (W.weights(i, c) != 0.f) out(i, c) = static_cast<float>(E(i, W.joints(i, c)));
  return out;
}

}  // namespace skinning
