#include "core/skinning/swing_twist.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

#include "core/math/svd3.h"
#include "core/rig/swing_twist.h"
#include "core/rig/transform.h"
#include "core/skinning/kernel_common.h"
#include "core/skinning/simd4.h"
#include "core/skinning/simd8.h"

namespace skinning {

namespace {

// One joint's deformer for the current frame, in double (see the header for the symbols).
struct DeformerFrame {
  bool deformer = false;
  Eigen::Affine3d Mj;  // rigid joints: their skinning transform
  // Deformer joints.
  Eigen::Matrix3d C;       // axes
  Eigen::Vector3d c;       // centre
  Eigen::Affine3d Mp;      // parent's skinning transform
  Eigen::Matrix3d Qswing;  // swing in the joint frame
  double theta = 0.0;      // twist angle about the frame's z
  Eigen::Matrix3d G;       // E(x) = G x + g
  Eigen::Vector3d g;
  bool remainder = false;
};

std::vector<DeformerFrame> PrepareDeformers(const std::vector<JointFrame>& frames,
                                            const std::vector<Eigen::Affine3d>& M) {
  std::vector<DeformerFrame> out(frames.size());
  for (size_t j = 0; j < frames.size(); ++j) {
    const JointFrame& f = frames[j];
    DeformerFrame& d = out[j];
    d.Mj = M[j];
    if (!f.deformer || f.parent < 0) continue;
    d.deformer = true;
    d.C = f.axes;
    d.c = f.center;
    d.Mp = M[f.parent];
    const Eigen::Affine3d delta = d.Mp.inverse(Eigen::Affine) * M[j];
    const Eigen::Matrix3d A = delta.linear();
    const std::optional<Eigen::Matrix3d> rounded = RotationWithinRounding(A);
    const bool rotation = rounded.has_value();
    const Eigen::Matrix3d Rot = rotation ? *rounded : NearestRotation(A);
    // E(x) = Δx − c − Rot(x − c) = (A − Rot) x + (t_Δ − c + Rot c). A remainder within the
    // float rounding of rig data (core/rig/transform.h: a linear part that is a rotation within
    // kFloatRigidTolerance, a translation within that fraction of the lengths it comes from) is
    // dropped, so that real characters take the kernels' paths without it.
    d.G = A - Rot;
    d.g = delta.translation() - d.c + Rot * d.c;
    const double length = delta.translation().cwiseAbs().maxCoeff() + d.c.cwiseAbs().maxCoeff();
    d.remainder = !rotation || d.g.cwiseAbs().maxCoeff() > kFloatRigidTolerance * length;
    const Eigen::Matrix3d Q = d.C.transpose() * Rot * d.C;
    Eigen::Quaterniond swing;
    SwingTwistSplit(Eigen::Quaterniond(Q), Eigen::Vector3d::UnitZ(), &swing, &d.theta);
    d.Qswing = swing.toRotationMatrix();
  }
  return out;
}

Eigen::Vector3d ApplyDeformer(const DeformerFrame& d, const Eigen::Vector3d& p, double s,
                              double t) {
  if (!d.deformer) return d.Mj * p;
  const Eigen::Vector3d x = d.C.transpose() * (p - d.c);
  const Eigen::Vector3d r = Eigen::AngleAxisd(t * d.theta, Eigen::Vector3d::UnitZ()) * x;
  const Eigen::Vector3d gamma = (1.0 - s) * r + s * (d.Qswing * r);
  Eigen::Vector3d local = d.c + d.C * gamma;
  if (d.remainder) local += s * (d.G * p + d.g);
  return d.Mp * local;
}

// Float parameter layout per joint (kStride floats).
enum : int {
  kKind = 0,        // 0: rigid (U = M_j p), 1: deformer
  kRemainder = 1,   // 1 when the deformer has an affine remainder
  kTheta = 2,       // twist angle θ
  kRigid34 = 4,     // rigid: 3x4 row-major M_j
  kY34 = 4,         // deformer: y = Cᵀ(p − c) as a 3x4 row-major map
  kB0 = 16,         // L_p C, 3x3 row-major
  kDswing = 25,     // L_p C Q_swing − L_p C
  kA0 = 34,         // M_p c
  kHC = 37,         // L_p G C
  kE0 = 46,         // L_p (G c + g)
  kEnd = 49,
};
static_assert(kEnd <= SwingTwistFrameFloat::kStride);


inline void Apply33(const float* __restrict m, float x, float y, float z, float* __restrict u) {
  u[0] = m[0] * x + m[1] * y + m[2] * z;
  u[1] = m[3] * x + m[4] * y + m[5] * z;
  u[2] = m[6] * x + m[7] * y + m[8] * z;
}

// out = (B0 + s D) r
inline void ApplyBlend33(const float* __restrict b0, const float* __restrict d, float s, float x,
                         float y, float z, float* __restrict u) {
  float b[9];
  for (int l = 0; l < 9; ++l) b[l] = b0[l] + s * d[l];
  Apply33(b, x, y, z, u);
}

// One slot's deformer output at bind-space (px, py, pz).
template <bool kRemainderTerms>
inline void DeformSlot(const float* __restrict P, float px, float py, float pz, float s, float t,
                       float* __restrict o) {
  const float* __restrict Y = P + kY34;
  if (P[kKind] == 0.f) {
    o[0] = Y[0] * px + Y[1] * py + Y[2] * pz + Y[3];
    o[1] = Y[4] * px + Y[5] * py + Y[6] * pz + Y[7];
    o[2] = Y[8] * px + Y[9] * py + Y[10] * pz + Y[11];
    return;
  }
  const float y0 = Y[0] * px + Y[1] * py + Y[2] * pz + Y[3];
  const float y1 = Y[4] * px + Y[5] * py + Y[6] * pz + Y[7];
  const float y2 = Y[8] * px + Y[9] * py + Y[10] * pz + Y[11];
  float sn, cs;
  FastSinCos(t * P[kTheta], &sn, &cs);
  const float r0 = cs * y0 - sn * y1;
  const float r1 = sn * y0 + cs * y1;
  float u[3];
  ApplyBlend33(P + kB0, P + kDswing, s, r0, r1, y2, u);
  o[0] = P[kA0] + u[0];
  o[1] = P[kA0 + 1] + u[1];
  o[2] = P[kA0 + 2] + u[2];
  if constexpr (kRemainderTerms) {
    if (P[kRemainder] != 0.f) {
      float h[3];
      Apply33(P + kHC, y0, y1, y2, h);
      o[0] += s * (h[0] + P[kE0]);
      o[1] += s * (h[1] + P[kE0 + 1]);
      o[2] += s * (h[2] + P[kE0 + 2]);
    }
  }
}

template <int K, bool kRemainderTerms>
void SwingTwistKernel(const float* __restrict V, int n, const int32_t* __restrict joints,
                      const float* __restrict weights, const float* __restrict swing,
                      const float* __restrict twist, int k_runtime, const float* __restrict params,
                      float* __restrict U) {
  constexpr int kS = SwingTwistFrameFloat::kStride;
  BlendSlots<K>(n, k_runtime, weights, U, [&](std::ptrdiff_t rc, std::ptrdiff_t o, float* d) {
    DeformSlot<kRemainderTerms>(params + kS * static_cast<std::ptrdiff_t>(joints[rc]), V[o], V[o + 1], V[o + 2],
                                swing[rc], twist[rc], d);
  });
}

#ifdef SKINNING_VECTOR_EXT
// ---- 8-lane kernel ------------------------------------------------------------------------------
//
// Lanes are 8 consecutive vertices. Per block, the distinct joints of the block's non-zero slots
// are collected (usually 1–3 for smooth weights), each with per-lane weight, s and t (0 where a
// lane does not use it); each distinct joint's deformer then runs once on all 8 lanes with its
// parameters broadcast. GCC vector extensions (no intrinsics); an AVX2+FMA clone on x86-64.

using namespace simd8;  // F8, I8 and the 8-lane helpers (simd8.h)

// Accumulates w · deformer(p; s, t) of the joint with parameters P into (ax, ay, az).
// kUnitTwist: every |t| ≤ 1, so the twist angle t·θ is within [−π, π] (θ is) and needs no
// range reduction.
template <bool kRemainderTerms, bool kUnitTwist = false>
SKINNING_LANES_INLINE void DeformAccumulate8(const float* __restrict P, F8 px, F8 py, F8 pz, F8 w, F8 s, F8 t,
                                             F8* ax, F8* ay, F8* az) {
  const float* __restrict Y = P + kY34;
  const F8 y0 = px * Y[0] + py * Y[1] + pz * Y[2] + Y[3];
  const F8 y1 = px * Y[4] + py * Y[5] + pz * Y[6] + Y[7];
  const F8 y2 = px * Y[8] + py * Y[9] + pz * Y[10] + Y[11];
  if (P[kKind] == 0.f) {  // rigid: y is M_j p
    *ax += w * y0;
    *ay += w * y1;
    *az += w * y2;
    return;
  }
  F8 sn, cs;
  if constexpr (kUnitTwist) {
    SinCos8Reduced(t * P[kTheta], &sn, &cs);
  } else {
    SinCos8(t * P[kTheta], &sn, &cs);
  }
  const F8 r0 = cs * y0 - sn * y1;
  const F8 r1 = sn * y0 + cs * y1;
  const float* __restrict B = P + kB0;
  const float* __restrict D = P + kDswing;
  const F8 o0 = P[kA0] + (r0 * B[0] + r1 * B[1] + y2 * B[2]);
  const F8 o1 = P[kA0 + 1] + (r0 * B[3] + r1 * B[4] + y2 * B[5]);
  const F8 o2 = P[kA0 + 2] + (r0 * B[6] + r1 * B[7] + y2 * B[8]);
  F8 d0 = r0 * D[0] + r1 * D[1] + y2 * D[2];
  F8 d1 = r0 * D[3] + r1 * D[4] + y2 * D[5];
  F8 d2 = r0 * D[6] + r1 * D[7] + y2 * D[8];
  if constexpr (kRemainderTerms) {
    if (P[kRemainder] != 0.f) {
      const float* __restrict H = P + kHC;
      d0 += y0 * H[0] + y1 * H[1] + y2 * H[2] + P[kE0];
      d1 += y0 * H[3] + y1 * H[4] + y2 * H[5] + P[kE0 + 1];
      d2 += y0 * H[6] + y1 * H[7] + y2 * H[8] + P[kE0 + 2];
    }
  }
  const F8 ws = w * s;
  *ax += w * o0 + ws * d0;
  *ay += w * o1 + ws * d1;
  *az += w * o2 + ws * d2;
}

// Packed weights (SwingTwistWeights::lanes): per block of 8 vertices, each distinct joint's
// deformer once, on lane vectors of its per-vertex weight, swing and twist.
template <bool kRemainderTerms, bool kUnitTwist>
SKINNING_HOT_CLONES void SwingTwistKernel8Grouped(const float* __restrict V, int blocks,
                                                  const int32_t* __restrict offsets,
                                                  const int32_t* __restrict lane_joints,
                                                  const float* __restrict lanes,
                                                  const float* __restrict params, float* __restrict U) {
  constexpr int kS = SwingTwistFrameFloat::kStride;
  const F8 zero = {};
  for (int b = 0; b < blocks; ++b) {
    const std::ptrdiff_t i0 = 8 * static_cast<std::ptrdiff_t>(b);
    F8 px, py, pz;
    Deinterleave8(V + 3 * i0, &px, &py, &pz);
    F8 ax = zero, ay = zero, az = zero;
    for (int e = offsets[b]; e < offsets[b + 1]; ++e) {
      const float* __restrict L = lanes + 24 * static_cast<std::ptrdiff_t>(e);
      DeformAccumulate8<kRemainderTerms, kUnitTwist>(params + kS * static_cast<std::ptrdiff_t>(lane_joints[e]), px,
                                                     py, pz, Load8(L), Load8(L + 8), Load8(L + 16), &ax, &ay, &az);
    }
    Interleave8(ax, ay, az, U + 3 * i0);
  }
}

constexpr int kMaxSlots = 16;

template <bool kRemainderTerms>
SKINNING_HOT_CLONES void SwingTwistKernel8(const float* __restrict V, int n8,
                                           const int32_t* __restrict joints,
                                           const float* __restrict weights,
                                           const float* __restrict swing,
                                           const float* __restrict twist, int k,
                                           const float* __restrict params, float* __restrict U) {
  constexpr int kS = SwingTwistFrameFloat::kStride;
  int uniq[8 * kMaxSlots];
  alignas(32) float uw[8 * kMaxSlots][8], us[8 * kMaxSlots][8], ut[8 * kMaxSlots][8];
  for (int i0 = 0; i0 < n8; i0 += 8) {
    alignas(32) float pxa[8], pya[8], pza[8];
    for (int l = 0; l < 8; ++l) {
      const std::ptrdiff_t o = 3 * static_cast<std::ptrdiff_t>(i0 + l);
      pxa[l] = V[o];
      pya[l] = V[o + 1];
      pza[l] = V[o + 2];
    }
    int nu = 0;
    for (int l = 0; l < 8; ++l) {
      const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(i0 + l) * k;
      for (int c = 0; c < k; ++c) {
        const float w = weights[row + c];
        if (w == 0.f) continue;
        const int j = joints[row + c];
        int u = 0;
        while (u < nu && uniq[u] != j) ++u;
        if (u == nu) {
          uniq[nu++] = j;
          for (int q = 0; q < 8; ++q) uw[u][q] = us[u][q] = ut[u][q] = 0.f;
        }
        uw[u][l] += w;
        us[u][l] = swing[row + c];
        ut[u][l] = twist[row + c];
      }
    }
    const F8 px = Load8(pxa), py = Load8(pya), pz = Load8(pza);
    F8 ax = {}, ay = {}, az = {};
    for (int u = 0; u < nu; ++u)
      DeformAccumulate8<kRemainderTerms>(params + kS * static_cast<std::ptrdiff_t>(uniq[u]), px, py, pz,
                                         Load8(uw[u]), Load8(us[u]), Load8(ut[u]), &ax, &ay, &az);
    for (int l = 0; l < 8; ++l) {
      const std::ptrdiff_t o = 3 * static_cast<std::ptrdiff_t>(i0 + l);
      U[o] = ax[l];
      U[o + 1] = ay[l];
      U[o + 2] = az[l];
    }
  }
}
#endif  // SKINNING_VECTOR_EXT

}  // namespace

void SwingTwist(const RowMatrixX3d& V, const Eigen::MatrixXd& D, const Eigen::MatrixXd& S,
                const Eigen::MatrixXd& T, const std::vector<JointFrame>& frames,
                const std::vector<Eigen::Affine3d>& M, RowMatrixX3d* U) {
  const std::vector<DeformerFrame> def = PrepareDeformers(frames, M);
  const Eigen::Index n = V.rows();
  U->resize(n, 3);
  for (Eigen::Index i = 0; i < n; ++i) {
    const Eigen::Vector3d p = V.row(i).transpose();
    Eigen::Vector3d u = Eigen::Vector3d::Zero();
    for (Eigen::Index j = 0; j < D.cols(); ++j) {
      const double d = D(i, j);
      if (d == 0) continue;
      u += d * ApplyDeformer(def[j], p, S(i, j), T(i, j));
    }
    U->row(i) = u.transpose();
  }
}

SwingTwistWeights MakeSwingTwistWeights(const Eigen::MatrixXd& D, const Eigen::MatrixXd& S,
                                        const Eigen::MatrixXd& T, int k) {
  SwingTwistWeights W;
  W.deformer = TopK(D, k);
  const int n = W.deformer.rows();
  W.swing = RowMatrixXf::Zero(n, k);
  W.twist = RowMatrixXf::Zero(n, k);
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c < k; ++c) {
      if (W.deformer.weights(i, c) == 0.f) continue;
      const int j = W.deformer.joints(i, c);
      W.swing(i, c) = static_cast<float>(S(i, j));
      W.twist(i, c) = static_cast<float>(T(i, j));
    }
  }
  PackSwingTwistWeights(&W);
  return W;
}

void PackSwingTwistWeights(SwingTwistWeights* W) {
  W->lane_offsets.clear();
  W->lane_joints.clear();
  W->lanes.clear();
  W->unit_twist = false;
  const int k = W->deformer.k();
  if (k > 16) return;
  const int blocks = W->deformer.rows() / 8;
  W->lane_offsets.reserve(static_cast<size_t>(blocks) + 1);
  W->lane_offsets.push_back(0);
  bool unit_twist = true;
  for (int b = 0; b < blocks; ++b) {
    const int first = static_cast<int>(W->lane_joints.size());
    for (int l = 0; l < 8; ++l) {
      const int i = 8 * b + l;
      for (int c = 0; c < k; ++c) {
        const float w = W->deformer.weights(i, c);
        if (w == 0.f) continue;
        const int32_t j = W->deformer.joints(i, c);
        int e = first;
        while (e < static_cast<int>(W->lane_joints.size()) && W->lane_joints[e] != j) ++e;
        if (e == static_cast<int>(W->lane_joints.size())) {
          W->lane_joints.push_back(j);
          W->lanes.resize(W->lanes.size() + 24, 0.f);
        }
        float* L = W->lanes.data() + 24 * static_cast<size_t>(e);
        L[l] += w;  // a joint listed twice in one row (not made by TopK) adds up
        L[8 + l] = W->swing(i, c);
        L[16 + l] = W->twist(i, c);
        unit_twist = unit_twist && std::abs(L[16 + l]) <= 1.f;
      }
    }
    W->lane_offsets.push_back(static_cast<int32_t>(W->lane_joints.size()));
  }
  W->unit_twist = unit_twist;
}

SwingTwistFrameFloat PrepareSwingTwistFloat(const std::vector<JointFrame>& frames,
                                            const std::vector<Eigen::Affine3d>& M) {
  const std::vector<DeformerFrame> def = PrepareDeformers(frames, M);
  SwingTwistFrameFloat F;
  F.num_joints = static_cast<int>(def.size());
  F.params.assign(def.size() * SwingTwistFrameFloat::kStride, 0.f);
  for (size_t j = 0; j < def.size(); ++j) {
    const DeformerFrame& d = def[j];
    float* P = F.params.data() + j * SwingTwistFrameFloat::kStride;
    if (!d.deformer) {
      P[kKind] = 0.f;
      PutRowMajor(Eigen::Matrix<double, 3, 4>(d.Mj.matrix().topRows<3>()), P + kRigid34);
      continue;
    }
    P[kKind] = 1.f;
    P[kTheta] = static_cast<float>(d.theta);
    Eigen::Matrix<double, 3, 4> Y;
    Y.leftCols<3>() = d.C.transpose();
    Y.col(3) = -d.C.transpose() * d.c;
    PutRowMajor(Y, P + kY34);
    const Eigen::Matrix3d Lp = d.Mp.linear();
    const Eigen::Matrix3d B0 = Lp * d.C;
    PutRowMajor(B0, P + kB0);
    PutRowMajor(Eigen::Matrix3d(B0 * d.Qswing - B0), P + kDswing);
    PutRowMajor(Eigen::Vector3d(d.Mp * d.c), P + kA0);
    if (d.remainder) {
      P[kRemainder] = 1.f;
      F.any_remainder = true;
      PutRowMajor(Eigen::Matrix3d(Lp * d.G * d.C), P + kHC);
      PutRowMajor(Eigen::Vector3d(Lp * (d.G * d.c + d.g)), P + kE0);
    }
  }
  return F;
}

void SwingTwistFloat(const float* V, int n, const SwingTwistWeights& W,
                     const SwingTwistFrameFloat& frame, float* U) {
  const int k = W.deformer.k();
  const int32_t* J = W.deformer.joints.data();
  const float* w = W.deformer.weights.data();
  const float* s = W.swing.data();
  const float* t = W.twist.data();
  const float* P = frame.params.data();
#ifdef SKINNING_VECTOR_EXT
  if (k <= kMaxSlots) {
    const int n8 = n - n % 8;
    const int blocks = W.deformer.rows() / 8;
    const bool packed = n == W.deformer.rows() && W.lane_offsets.size() == static_cast<size_t>(blocks) + 1 &&
                        W.lane_joints.size() == static_cast<size_t>(W.lane_offsets.back()) &&
                        W.lanes.size() == 24 * W.lane_joints.size();
    if (packed) {
      const int32_t* O = W.lane_offsets.data();
      const int32_t* LJ = W.lane_joints.data();
      const float* L = W.lanes.data();
      if (frame.any_remainder && W.unit_twist)
        SwingTwistKernel8Grouped<true, true>(V, blocks, O, LJ, L, P, U);
      else if (frame.any_remainder)
        SwingTwistKernel8Grouped<true, false>(V, blocks, O, LJ, L, P, U);
      else if (W.unit_twist)
        SwingTwistKernel8Grouped<false, true>(V, blocks, O, LJ, L, P, U);
      else
        SwingTwistKernel8Grouped<false, false>(V, blocks, O, LJ, L, P, U);
    } else if (frame.any_remainder) {
      SwingTwistKernel8<true>(V, n8, J, w, s, t, k, P, U);
    } else {
      SwingTwistKernel8<false>(V, n8, J, w, s, t, k, P, U);
    }
    // The last n % 8 vertices by the scalar kernel.
    const std::ptrdiff_t o = n8, ok = static_cast<std::ptrdiff_t>(n8) * k;
    if (frame.any_remainder)
      SwingTwistKernel<0, true>(V + 3 * o, n - n8, J + ok, w + ok, s + ok, t + ok, k, P, U + 3 * o);
    else
      SwingTwistKernel<0, false>(V + 3 * o, n - n8, J + ok, w + ok, s + ok, t + ok, k, P, U + 3 * o);
    return;
  }
#endif
  if (k == 4) {
    if (frame.any_remainder)
      SwingTwistKernel<4, true>(V, n, J, w, s, t, k, P, U);
    else
      SwingTwistKernel<4, false>(V, n, J, w, s, t, k, P, U);
  } else {
    if (frame.any_remainder)
      SwingTwistKernel<0, true>(V, n, J, w, s, t, k, P, U);
    else
      SwingTwistKernel<0, false>(V, n, J, w, s, t, k, P, U);
  }
}

}  // namespace skinning
