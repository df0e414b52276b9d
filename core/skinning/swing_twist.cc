#include "core/skinning/swing_twist.h"

#include <algorithm>
#include <cstddef>

#include "core/rig/swing_twist.h"
#include "core/solve/svd3.h"

namespace skinning {

namespace {

// A linear part counts as a rotation when |AᵀA − I| ≤ this (max-abs entry) and det A > 0.
constexpr double kRigidTolerance = 1e-9;

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

bool IsRotation(const Eigen::Matrix3d& A) {
  return (A.transpose() * A - Eigen::Matrix3d::Identity()).cwiseAbs().maxCoeff() <=
             kRigidTolerance &&
         A.determinant() > 0;
}

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
    const Eigen::Matrix3d Rot = IsRotation(A) ? A : NearestRotation(A);
    // E(x) = Δx − c − Rot(x − c) = (A − Rot) x + (t_Δ − c + Rot c).
    d.G = A - Rot;
    d.g = delta.translation() - d.c + Rot * d.c;
    d.remainder = d.G.cwiseAbs().maxCoeff() > 1e-12 || d.g.cwiseAbs().maxCoeff() > 1e-12;
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

template <typename Mat>
void Put(const Mat& m, float* out) {  // row-major
  for (int r = 0; r < m.rows(); ++r)
    for (int c = 0; c < m.cols(); ++c) out[r * m.cols() + c] = static_cast<float>(m(r, c));
}

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
  const int k = K > 0 ? K : k_runtime;
  constexpr int kS = SwingTwistFrameFloat::kStride;
  for (int i = 0; i < n; ++i) {
    const std::ptrdiff_t o = 3 * static_cast<std::ptrdiff_t>(i);
    const std::ptrdiff_t row = static_cast<std::ptrdiff_t>(i) * k;
    const float px = V[o], py = V[o + 1], pz = V[o + 2];
    float ax = 0.f, ay = 0.f, az = 0.f;
    for (int c = 0; c < k; ++c) {
      const float w = weights[row + c];
      if (w == 0.f) continue;
      float d[3];
      DeformSlot<kRemainderTerms>(params + kS * static_cast<std::ptrdiff_t>(joints[row + c]), px,
                                  py, pz, swing[row + c], twist[row + c], d);
      ax += w * d[0];
      ay += w * d[1];
      az += w * d[2];
    }
    U[o] = ax;
    U[o + 1] = ay;
    U[o + 2] = az;
  }
}

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
  return W;
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
      Put(Eigen::Matrix<double, 3, 4>(d.Mj.matrix().topRows<3>()), P + kRigid34);
      continue;
    }
    P[kKind] = 1.f;
    P[kTheta] = static_cast<float>(d.theta);
    Eigen::Matrix<double, 3, 4> Y;
    Y.leftCols<3>() = d.C.transpose();
    Y.col(3) = -d.C.transpose() * d.c;
    Put(Y, P + kY34);
    const Eigen::Matrix3d Lp = d.Mp.linear();
    const Eigen::Matrix3d B0 = Lp * d.C;
    Put(B0, P + kB0);
    Put(Eigen::Matrix3d(B0 * d.Qswing - B0), P + kDswing);
    Put(Eigen::Vector3d(d.Mp * d.c), P + kA0);
    if (d.remainder) {
      P[kRemainder] = 1.f;
      F.any_remainder = true;
      Put(Eigen::Matrix3d(Lp * d.G * d.C), P + kHC);
      Put(Eigen::Vector3d(Lp * (d.G * d.c + d.g)), P + kE0);
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
