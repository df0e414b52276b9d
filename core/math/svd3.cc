// 3x3 SVD by one-sided Jacobi: rotations from the right orthogonalize the columns of A (each
// is the Jacobi rotation of the Gram matrix AᵀA, with its entries taken from the current
// columns) and accumulate in a quaternion (V); then the columns of A·V are sorted by norm and a
// Givens QR of A·V gives U and, on the diagonal of R, sigma (R's last entry carries det A's
// sign). The quaternion Jacobi and approximate Givens angles follow McAdams, Selle, Tamstorf,
// Teran, Sifakis 2011, "Computing the singular value decomposition of 3x3 matrices with minimal
// branching and elementary floating point operations"; the Gram entries from the columns
// (Hestenes) keep the small singular values accurate, which forming AᵀA once does not.
//
// float: a fixed two sweeps of approximate two-sided Jacobi on AᵀA (McAdams: one reciprocal
// square root per rotation) to get close, then two sweeps of exact one-sided rotations. double:
// exact one-sided rotations until the columns are orthogonal to rounding. Both scale A by a power
// of two first (exact), so no square overflows or underflows for any finite input.
#include "core/math/svd3.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define SKINNING_SVD3_SSE_RSQRT 1
#endif

namespace skinning {
namespace {

// float: sweeps (three rotations each) of approximate two-sided Jacobi on the Gram matrix AᵀA
// (cheap: one reciprocal square root per rotation), then of exact one-sided Jacobi on the
// columns of A·V (accurate for small singular values). Two and two give a worst relative
// reconstruction error of about 3e-6 over 200k random and ill-conditioned (σ down to 1e-8)
// inputs; one-sided only needs four sweeps for the same (about 25% slower).
constexpr int kGramSweeps = 2;
constexpr int kFloatSweeps = 2;
// Upper bound on the double sweeps; the iteration stops as soon as it has converged (usually
// after four or five).
constexpr int kMaxDoubleSweeps = 12;

// Approximate Givens: tan(θ/2) ≈ b / (2 (a - d)) unless that would overshoot, then θ = π/4.
constexpr float kGamma = 5.828427124746190f;  // 3 + 2√2 = cot²(π/8)
constexpr float kCosPi8 = 0.9238795325112867f;
constexpr float kSinPi8 = 0.3826834323650898f;
// Squared magnitudes below this are treated as zero in float (above FLT_MIN, so the hardware
// reciprocal square root never sees a denormal). A is scaled so its largest entry is in [1, 2).
constexpr float kTinyFloat = 1e-36f;

inline float Rsqrt(float x) {
#ifdef SKINNING_SVD3_SSE_RSQRT
  // 12-bit estimate and one Newton step: about 23 bits.
  const float y = _mm_cvtss_f32(_mm_rsqrt_ss(_mm_set_ss(x)));
  return y * (1.5f - 0.5f * x * y * y);
#else
  return 1.0f / std::sqrt(x);
#endif
}
inline double Rsqrt(double x) { return 1.0 / std::sqrt(x); }

// Power-of-two scale (and its inverse) that brings max_abs into [1, 2); exact multiplications.
// The exponent is clamped so both stay normal numbers.
inline void PowerOfTwoScale(float max_abs, float* scale, float* inverse) {
  uint32_t bits;
  std::memcpy(&bits, &max_abs, sizeof(bits));
  const int e = static_cast<int>((bits >> 23) & 0xffu);
  const int s = std::clamp(254 - e, 2, 252);
  const uint32_t scale_bits = static_cast<uint32_t>(s) << 23;
  const uint32_t inverse_bits = static_cast<uint32_t>(254 - s) << 23;
  std::memcpy(scale, &scale_bits, sizeof(bits));
  std::memcpy(inverse, &inverse_bits, sizeof(bits));
}
inline void PowerOfTwoScale(double max_abs, double* scale, double* inverse) {
  uint64_t bits;
  std::memcpy(&bits, &max_abs, sizeof(bits));
  const int e = static_cast<int>((bits >> 52) & 0x7ffu);
  const int s = std::clamp(2046 - e, 2, 2044);
  const uint64_t scale_bits = static_cast<uint64_t>(s) << 52;
  const uint64_t inverse_bits = static_cast<uint64_t>(2046 - s) << 52;
  std::memcpy(scale, &scale_bits, sizeof(bits));
  std::memcpy(inverse, &inverse_bits, sizeof(bits));
}

// Half-angle (ch, sh) = (cos θ/2, sin θ/2) (possibly both negated, and in float only unit to
// about 1e-7) of the rotation [c -s; s c] in the (p, q) plane that (nearly) zeroes the
// off-diagonal b of the symmetric block [a b; b d]. float: approximate (tan(θ/2) from the
// first-order formula, or θ = π/4 when that would overshoot); double: exact.
// Approximate: tan(θ/2) from the first-order formula b / (2 (a - d)), or θ = π/4 when that
// would overshoot (McAdams et al.). One reciprocal square root, no branch; cubic convergence
// near the diagonal, slow far from it.
inline void ApproximateHalfAngle(float a, float b, float d, float* ch, float* sh) {
  const float ch0 = 2.0f * (a - d);
  const float ch2 = ch0 * ch0;
  const float sh2 = b * b;
  const bool small = (kGamma * sh2 < ch2) & (ch2 > kTinyFloat);
  const float w = Rsqrt(small ? ch2 + sh2 : 1.0f);
  *ch = small ? w * ch0 : kCosPi8;
  *sh = small ? w * b : kSinPi8;
}
// Exact: with δ = |a - d| and r = √(δ² + 4b²), tan 2θ = 2b / (a - d) gives
// (cos θ/2, sin θ/2) ∝ (δ + r + √(2r (r + δ)), ±2b). Two square roots and one reciprocal one.
inline void HalfAngle(float a, float b, float d, float* ch, float* sh) {
  const float delta = std::abs(a - d);
  const float r = std::sqrt(delta * delta + 4.0f * b * b);
  const float chu = (delta + r) + std::sqrt(2.0f * r * (r + delta));
  const float shu = a - d < 0.0f ? -2.0f * b : 2.0f * b;
  const float n2 = chu * chu + shu * shu;
  const bool ok = n2 > kTinyFloat;
  const float w = Rsqrt(ok ? n2 : 1.0f);
  *ch = ok ? w * chu : 1.0f;
  *sh = ok ? w * shu : 0.0f;
}
inline void HalfAngle(double a, double b, double d, double* ch, double* sh) {
  if (b == 0.0) {
    *ch = 1.0;
    *sh = 0.0;
    return;
  }
  // tan 2θ = 2b / (a - d); t = tan θ, the root with |θ| ≤ π/4. For |kappa| > 1e154 the square
  // overflows to infinity and t becomes 0, which is right to rounding.
  const double kappa = (a - d) / (2.0 * b);
  const double t = std::copysign(1.0, kappa) / (std::abs(kappa) + std::sqrt(1.0 + kappa * kappa));
  const double c = 1.0 / std::sqrt(1.0 + t * t);
  const double s = t * c;
  *ch = std::sqrt(0.5 * (1.0 + c));  // c ≥ 1/√2, so ch ≥ cos(π/8)
  *sh = s / (2.0 * *ch);
}

// Quaternion accumulation: quat ← quat ⊗ (ch, sh e_r); v × e_r has v_q in component p and
// -v_p in component q. quat = {x, y, z, w}.
template <int p, int q, int r, typename T>
inline void Accumulate(T ch, T sh, T quat[4]) {
  const T x_p = quat[p], x_q = quat[q], x_r = quat[r], w = quat[3];
  quat[p] = ch * x_p + sh * x_q;
  quat[q] = ch * x_q - sh * x_p;
  quat[r] = ch * x_r + sh * w;
  quat[3] = ch * w - sh * x_r;
}

// One two-sided approximate Jacobi rotation of the symmetric s (both halves kept) in the
// (p, q) plane: s ← Gᵀ s G with G = [c -s; s c] in rows/columns p, q (a rotation about axis r,
// (p, q, r) a cyclic permutation of (0, 1, 2)).
template <int p, int q, int r>
inline void GramRotate(float s[3][3], float quat[4]) {
  const float a = s[p][p], b = s[p][q], d = s[q][q];
  const float e = s[p][r], f = s[q][r];
  float ch, sh;
  ApproximateHalfAngle(a, b, d, &ch, &sh);
  const float c = ch * ch - sh * sh;
  const float sn = 2.0f * ch * sh;
  const float cc = c * c, ss = sn * sn, cs = c * sn;
  s[p][p] = cc * a + 2.0f * cs * b + ss * d;
  s[q][q] = ss * a - 2.0f * cs * b + cc * d;
  s[p][q] = s[q][p] = (cc - ss) * b + cs * (d - a);
  s[p][r] = s[r][p] = c * e + sn * f;
  s[q][r] = s[r][q] = c * f - sn * e;
  Accumulate<p, q, r>(ch, sh, quat);
}

// One one-sided Jacobi (Hestenes) rotation in the (p, q) plane, (p, q, r) a cyclic permutation
// of (0, 1, 2) so that the rotation is about axis r: columns p, q of b ← (b_p, b_q) · G, which
// is the two-sided Jacobi step on the Gram matrix bᵀb with its entries computed from the
// columns (accurate relative to the columns' own norms, so small singular values keep their
// relative accuracy — unlike forming AᵀA once). quat ← quat ⊗ g (quat = {x, y, z, w}).
template <int p, int q, int r, typename T>
inline void JacobiRotate(T b[3][3], T quat[4]) {
  const T a = b[0][p] * b[0][p] + b[1][p] * b[1][p] + b[2][p] * b[2][p];
  const T d = b[0][q] * b[0][q] + b[1][q] * b[1][q] + b[2][q] * b[2][q];
  const T o = b[0][p] * b[0][q] + b[1][p] * b[1][q] + b[2][p] * b[2][q];
  T ch, sh;
  HalfAngle(a, o, d, &ch, &sh);
  const T c = ch * ch - sh * sh;
  const T sn = 2 * ch * sh;
  for (int k = 0; k < 3; ++k) {
    const T bp = b[k][p], bq = b[k][q];
    b[k][p] = c * bp + sn * bq;
    b[k][q] = c * bq - sn * bp;
  }
  Accumulate<p, q, r>(ch, sh, quat);
}

template <typename T>
inline void Sweep(T b[3][3], T quat[4]) {
  JacobiRotate<0, 1, 2>(b, quat);
  JacobiRotate<1, 2, 0>(b, quat);
  JacobiRotate<2, 0, 1>(b, quat);
}

// V = matrix(quat / |quat|).
template <typename T>
inline void QuaternionToMatrix(const T quat[4], T v[3][3]) {
  const T n = Rsqrt(quat[0] * quat[0] + quat[1] * quat[1] + quat[2] * quat[2] + quat[3] * quat[3]);
  const T x = quat[0] * n, y = quat[1] * n, z = quat[2] * n, w = quat[3] * n;
  const T xx = x * x, yy = y * y, zz = z * z, xy = x * y, xz = x * z, yz = y * z;
  const T wx = w * x, wy = w * y, wz = w * z;
  v[0][0] = 1 - 2 * (yy + zz);
  v[0][1] = 2 * (xy - wz);
  v[0][2] = 2 * (xz + wy);
  v[1][0] = 2 * (xy + wz);
  v[1][1] = 1 - 2 * (xx + zz);
  v[1][2] = 2 * (yz - wx);
  v[2][0] = 2 * (xz - wy);
  v[2][1] = 2 * (yz + wx);
  v[2][2] = 1 - 2 * (xx + yy);
}

// m ← m · v.
template <typename T>
inline void MultiplyRight(T m[3][3], const T v[3][3]) {
  for (int i = 0; i < 3; ++i) {
    const T m0 = m[i][0], m1 = m[i][1], m2 = m[i][2];
    for (int j = 0; j < 3; ++j) m[i][j] = m0 * v[0][j] + m1 * v[1][j] + m2 * v[2][j];
  }
}

inline void Orthogonalize(float b[3][3], float quat[4]) {
  if (kGramSweeps > 0) {
    float s[3][3];
    for (int i = 0; i < 3; ++i) {
      for (int j = i; j < 3; ++j) {
        s[i][j] = s[j][i] = b[0][i] * b[0][j] + b[1][i] * b[1][j] + b[2][i] * b[2][j];
      }
    }
    for (int sweep = 0; sweep < kGramSweeps; ++sweep) {
      GramRotate<0, 1, 2>(s, quat);
      GramRotate<1, 2, 0>(s, quat);
      GramRotate<2, 0, 1>(s, quat);
    }
    float v[3][3];
    QuaternionToMatrix(quat, v);
    MultiplyRight(b, v);
  }
  for (int sweep = 0; sweep < kFloatSweeps; ++sweep) Sweep(b, quat);
}
// Until every pair of columns is orthogonal to rounding relative to the columns' norms.
inline void Orthogonalize(double b[3][3], double quat[4]) {
  for (int sweep = 0; sweep < kMaxDoubleSweeps; ++sweep) {
    double norm2[3], worst = 0.0;
    for (int j = 0; j < 3; ++j)
      norm2[j] = b[0][j] * b[0][j] + b[1][j] * b[1][j] + b[2][j] * b[2][j];
    for (int i = 0; i < 3; ++i) {
      const int j = (i + 1) % 3;
      const double o = b[0][i] * b[0][j] + b[1][i] * b[1][j] + b[2][i] * b[2][j];
      worst = std::max(worst, o * o - 1e-32 * norm2[i] * norm2[j]);
    }
    if (worst <= 0.0) break;  // |b_i · b_j| ≤ 1e-16 |b_i| |b_j| for all pairs
    Sweep(b, quat);
  }
}

// Givens (c, s) with c a + s b = √(a² + b²) ≥ 0 and -s a + c b = 0. When both are (nearly)
// zero: a rotation by 0 or π, so the diagonal entry ends up non-negative anyway.
inline void Givens(float a, float b, float* c, float* s) {
  const float r2 = a * a + b * b;
  const bool ok = r2 > kTinyFloat;
  const float w = Rsqrt(ok ? r2 : 1.0f);
  *c = ok ? w * a : (a < 0.0f ? -1.0f : 1.0f);
  *s = ok ? w * b : 0.0f;
}
inline void Givens(double a, double b, double* c, double* s) {
  const double r2 = a * a + b * b;
  const bool ok = r2 > 0.0;
  const double w = ok ? 1.0 / std::sqrt(r2) : 1.0;
  *c = ok ? w * a : (a < 0.0 ? -1.0 : 1.0);
  *s = ok ? w * b : 0.0;
}

// Rows i, j of m ← [c s; -s c] · rows i, j (left multiplication by Gᵀ), from column k on.
template <typename T>
inline void RotateRows(T m[3][3], int i, int j, T c, T s, int k) {
  for (; k < 3; ++k) {
    const T mi = m[i][k], mj = m[j][k];
    m[i][k] = c * mi + s * mj;
    m[j][k] = c * mj - s * mi;
  }
}
// Columns i, j of m ← columns i, j · [c -s; s c] (right multiplication by G).
template <typename T>
inline void RotateColumns(T m[3][3], int i, int j, T c, T s) {
  for (int k = 0; k < 3; ++k) {
    const T mi = m[k][i], mj = m[k][j];
    m[k][i] = c * mi + s * mj;
    m[k][j] = c * mj - s * mi;
  }
}

// Swaps columns i and j of b and v when column j of b is longer, negating one of them so that
// det v stays +1 (and b = A v still holds).
template <typename T>
inline void SortPair(T b[3][3], T v[3][3], T norm2[3], int i, int j) {
  const bool swap = norm2[i] < norm2[j];
  for (int k = 0; k < 3; ++k) {
    const T bi = b[k][i], bj = b[k][j], vi = v[k][i], vj = v[k][j];
    b[k][i] = swap ? bj : bi;
    b[k][j] = swap ? -bi : bj;
    v[k][i] = swap ? vj : vi;
    v[k][j] = swap ? -vi : vj;
  }
  const T ni = norm2[i], nj = norm2[j];
  norm2[i] = swap ? nj : ni;
  norm2[j] = swap ? ni : nj;
}

// The whole decomposition in plain arrays: A = U diag(sigma) Vᵀ.
template <typename T, typename Matrix3>
inline void Svd3Core(const Matrix3& A, T u[3][3], T sigma[3], T v[3][3]) {
  T max_abs = 0;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) max_abs = std::max(max_abs, std::abs(A(i, j)));
  }
  T scale, inverse;
  PowerOfTwoScale(max_abs, &scale, &inverse);
  T a[3][3];
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) a[i][j] = scale * A(i, j);
  }

  // Orthogonalize the columns of a copy of A by rotations from the right; they accumulate in V.
  T b[3][3];
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) b[i][j] = a[i][j];
  }
  T quat[4] = {0, 0, 0, 1};
  Orthogonalize(b, quat);

  QuaternionToMatrix(quat, v);

  // B = A V afresh from the normalized V (the rotated copy drifted with the float rotations'
  // rounding), columns sorted by decreasing norm.
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) b[i][j] = a[i][0] * v[0][j] + a[i][1] * v[1][j] + a[i][2] * v[2][j];
  }
  T norm2[3];
  for (int j = 0; j < 3; ++j) norm2[j] = b[0][j] * b[0][j] + b[1][j] * b[1][j] + b[2][j] * b[2][j];
  SortPair(b, v, norm2, 0, 1);
  SortPair(b, v, norm2, 0, 2);
  SortPair(b, v, norm2, 1, 2);

  // B = U R by Givens: zero (1,0), (2,0), then (2,1). U = G1 G2 G3.
  T c, sn;
  Givens(b[0][0], b[1][0], &c, &sn);
  RotateRows(b, 0, 1, c, sn, 0);
  u[0][0] = c, u[0][1] = -sn, u[0][2] = 0;
  u[1][0] = sn, u[1][1] = c, u[1][2] = 0;
  u[2][0] = 0, u[2][1] = 0, u[2][2] = 1;
  Givens(b[0][0], b[2][0], &c, &sn);
  RotateRows(b, 0, 2, c, sn, 0);
  RotateColumns(u, 0, 2, c, sn);
  Givens(b[1][1], b[2][1], &c, &sn);
  RotateRows(b, 1, 2, c, sn, 1);
  RotateColumns(u, 1, 2, c, sn);

  sigma[0] = b[0][0] * inverse;
  sigma[1] = b[1][1] * inverse;
  sigma[2] = b[2][2] * inverse;
}

template <typename T, typename Matrix3, typename Vector3>
inline void Svd3Impl(const Matrix3& A, Matrix3* U, Vector3* sigma, Matrix3* V) {
  T u[3][3], s[3], v[3][3];
  Svd3Core<T>(A, u, s, v);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      if (U != nullptr) (*U)(i, j) = u[i][j];
      if (V != nullptr) (*V)(i, j) = v[i][j];
    }
    if (sigma != nullptr) (*sigma)(i) = s[i];
  }
}

template <typename T, typename Matrix3>
inline Matrix3 NearestRotationImpl(const Matrix3& A) {
  T u[3][3], s[3], v[3][3];
  Svd3Core<T>(A, u, s, v);
  Matrix3 R;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) R(i, j) = u[i][0] * v[j][0] + u[i][1] * v[j][1] + u[i][2] * v[j][2];
  }
  return R;
}

// The polar factor of A by Higham's scaled Newton iteration X ← ½ (ζ X + X⁻ᵀ / ζ), ζ =
// (|X⁻¹|_F / |X|_F)^½ while the steps are large: quadratic convergence, so a step that changes X
// by δ ≤ 1e-8 (max-abs; X is then a rotation within δ) leaves an error of about δ²/2, at rounding.
// Only for det A > 0 and a Frobenius condition number |A|_F |A⁻¹|_F ≤ 100 (the inverse through
// cofactors then costs at most two digits); false otherwise, and when 10 steps did not converge,
// so that the SVD takes those (reflections, near-singular and non-finite input).
bool PolarNewton(const Eigen::Matrix3d& A, Eigen::Matrix3d* R) {
  Eigen::Matrix3d X = A;
  double change = 1.0;
  for (int step = 0; step < 10; ++step) {
    const Eigen::Matrix3d C = Cofactor(X);  // X⁻ᵀ = C / det X
    const double det = X.row(0).dot(C.row(0));
    if (!(det > 0.0)) return false;
    const Eigen::Matrix3d Y = C / det;
    double zeta = 1.0;
    if (change > 1e-3) {
      const double x2 = X.squaredNorm(), y2 = Y.squaredNorm();
      if (step == 0 && !(x2 * y2 <= 1e4)) return false;
      zeta = std::sqrt(std::sqrt(y2 / x2));
    }
    const Eigen::Matrix3d next = 0.5 * (zeta * X + Y / zeta);
    change = (next - X).cwiseAbs().maxCoeff();
    X = next;
    if (change <= 1e-8) {
      *R = X;
      return true;
    }
  }
  return false;
}

}  // namespace

void Svd3(const Eigen::Matrix3d& A, Eigen::Matrix3d* U, Eigen::Vector3d* sigma,
          Eigen::Matrix3d* V) {
  Svd3Impl<double>(A, U, sigma, V);
}

void Svd3(const Eigen::Matrix3f& A, Eigen::Matrix3f* U, Eigen::Vector3f* sigma,
          Eigen::Matrix3f* V) {
  Svd3Impl<float>(A, U, sigma, V);
}

Eigen::Matrix3d NearestRotation(const Eigen::Matrix3d& A) {
  Eigen::Matrix3d R;
  if (PolarNewton(A, &R)) return R;
  return NearestRotationImpl<double>(A);
}

Eigen::Matrix3f NearestRotation(const Eigen::Matrix3f& A) { return NearestRotationImpl<float>(A); }

}  // namespace skinning
