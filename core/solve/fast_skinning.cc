// Fast automatic skinning transformations (Jacobson, Baran, Kavan, Popović, Sorkine 2012).
//
// Notation (paper Sec. 3): n energy nodes (mesh vertices for kSurface, domain nodes for
// kVolumetric), m original handles, m' = m + extra handles, r rotation clusters. T is the
// 4m' by 3 stack of the transposed handle transforms (block j = rows 4j..4j+3 = T_jᵀ), M the
// n by 4m' LBS matrix (M(i, 4j+c) = w_ij · (v_i, 1)_c), so V' = M T (Eq. 2).
//
// Energy (Eq. 4) as a sum over elements e with a local stiffness Ke (n_e by n_e, symmetric, rows
// summing to 0) and a rotation R_k of the element's owner's cluster k:
//   E_e = ½ tr(Dᵀ Ke D),  D = X'_e − X_e R_kᵀ  (rows x'_a − R_k x_a)
//       = ½ Σ_{a<b} (−Ke_ab) ‖(x'_a − x'_b) − R_k (x_a − x_b)‖²,
// i.e. Eq. 4 with c_ab = −Ke_ab. Expanding gives Eq. 11: E = ½ tr(V'ᵀ L V') − tr(R K V') + c0
// with L = Σ_e Ke (scattered), K_k = Σ_{e in k} X_eᵀ Ke S_e (3 by n) and c0 = ½ tr(Xᵀ L X)
// (rotations drop out of the constant). So E ≥ 0 and E = 0 at the rest pose.
//   kSurface: spokes and rims (Chao et al. 2010): one edge set per vertex i made of the edges
//     of all triangles around i, c = ½ cot of the angle opposite the edge in that triangle.
//     Element = triangle, Ke = the triangle's cotangent stiffness, owned by each of its three
//     corners (so L = 3 × the cotangent stiffness).
//   kVolumetric: one edge set per element of the domain: tets (Ke = linear FE stiffness, i.e.
//     the cotangent weights of tets) or voxel cells (Ke = trilinear Q1 stiffness, c = −Ke_ab,
//     some negative), so E_e = ½ ∫_e ‖∇x' − R‖² — the per-element ARAP energy.
//
// All precomputation happens in a normalized frame (v̂ = (v − center) / scale, scale = the
// bounding-box diagonal) so that the small per-frame matrices are well scaled for float.
#include "core/solve/fast_skinning.h"

#include <Eigen/CholmodSupport>
#include <Eigen/Dense>
#include <Eigen/SparseCore>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "core/math/svd3.h"
#include "core/skinning/simd4.h"  // SKINNING_HOT_CLONES
#include "core/skinning/weights.h"
#include "core/util/status_macros.h"

namespace skinning {

// The per-character precomputation (all in the normalized frame).
struct FastModel {
  int m = 0;      // original handles
  int extra = 0;  // extra handles
  int r = 0;      // rotation clusters
  FastEnergy energy = FastEnergy::kSurface;
  Eigen::Vector3d center = Eigen::Vector3d::Zero();  // v̂ = (v − center) / scale
  double scale = 1.0;
  double energy_scale = 1.0;  // normalized energy × energy_scale = energy in input units
  double c0 = 0.0;            // ½ tr(Xᵀ L X), normalized
  Eigen::MatrixXd weights;    // #V by m' mesh weights (rows sum to one)
  Eigen::MatrixXd L;          // 4m' by 4m': L̃ = Mᵀ L M
  Eigen::MatrixXd K;          // 3r by 4m': K̃ = K M (row block k = cluster k)
  std::vector<uint8_t> inert;  // m': handle has no weight anywhere (its transform is moot)
  // 4m' by q: directions of T that move no node and no vertex (null(M), e.g. an extra weight
  // whose support is planar), each purely linear about its handle's weighted centroid. The
  // solver gives them a zero component (a gauge), which keeps translation covariance.
  Eigen::MatrixXd null_dirs;
  Eigen::MatrixXd seeds;       // extra × m: extra-weight seeds in weight space
  Eigen::VectorXd radii;       // extra: support radius 2 d_i(s_i) in weight space
  int total() const { return m + extra; }
};

namespace {

using Clock = std::chrono::steady_clock;
using MatrixXfc = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic>;  // column-major

// The rotation nearest to S (3x3), det +1 — the local step's only nonlinear piece.
inline Eigen::Matrix3f ClosestRotation3f(const Eigen::Matrix3f& S) { return NearestRotation(S); }
inline Eigen::Matrix3d ClosestRotation3d(const Eigen::Matrix3d& S) { return NearestRotation(S); }

// Ascent steps on f(R) = tr(Rᵀ A) over SO(3) from the rotation *q: ω = Σ_c r_c × a_c / |Σ_c r_c·a_c|
// (r_c, a_c the columns), q ← normalize((1, ω/2) q). Returns the better of the start and the
// result (never a worse rotation), and stores it in *q.
// At most this many steps; a cluster stops as soon as its update is below ~1e-4 rad, so settled
// clusters cost one step.
constexpr int kRotationSteps = 4;
constexpr float kRotationStepTolerance = 2.5e-7f;  // |ω/2|², i.e. |ω| ≈ 1e-3
inline Eigen::Matrix3f WarmRotationAscent(const Eigen::Matrix3f& A, Eigen::Quaternionf* q) {
  const Eigen::Matrix3f start = q->toRotationMatrix();
  const float f_start = (start.transpose() * A).trace();
  Eigen::Quaternionf cur = *q;
  Eigen::Matrix3f R = start;
  for (int step = 0; step < kRotationSteps; ++step) {
    const Eigen::Vector3f omega =
        R.col(0).cross(A.col(0)) + R.col(1).cross(A.col(1)) + R.col(2).cross(A.col(2));
    const float denom = std::abs(R.col(0).dot(A.col(0)) + R.col(1).dot(A.col(1)) + R.col(2).dot(A.col(2))) + 1e-20f;
    const Eigen::Vector3f half = (0.5f / denom) * omega;
    const float h2 = half.squaredNorm();
    if (h2 < 1e-14f) break;
    cur = (Eigen::Quaternionf(1.f, half.x(), half.y(), half.z()) * cur).normalized();
    R = cur.toRotationMatrix();
    if (h2 < kRotationStepTolerance) break;
  }
  if ((R.transpose() * A).trace() >= f_start) {
    *q = cur;
    return R;
  }
  return start;
}

// ---------------------------------------------------------------------------------------------
// Per-frame kernels. C (rows by 3, column-major) (+)= A (rows by cols, column-major) ·
// B (cols by 3, column-major, leading dimension ldb). Plain loops the compiler vectorizes; an
// AVX2+FMA clone is picked at load time.
SKINNING_HOT_CLONES void MulN3(const float* __restrict A, int rows, int cols,
                               const float* __restrict B, int ldb, float* __restrict C,
                               bool accumulate) {
  float* __restrict c0 = C;
  float* __restrict c1 = C + rows;
  float* __restrict c2 = C + 2 * rows;
  if (!accumulate) {
    for (int i = 0; i < 3 * rows; ++i) C[i] = 0.0f;
  }
  for (int k = 0; k < cols; ++k) {
    const float b0 = B[k], b1 = B[ldb + k], b2 = B[2 * ldb + k];
    const float* __restrict a = A + static_cast<size_t>(k) * rows;
    for (int i = 0; i < rows; ++i) {
      const float x = a[i];
      c0[i] += x * b0;
      c1[i] += x * b1;
      c2[i] += x * b2;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Element stiffness matrices (normalized frame).

// Triangle cotangent stiffness: Ke_ab = −½ cot(angle opposite edge ab), diagonal = −Σ row.
Eigen::Matrix3d TriangleStiffness(const Eigen::Vector3d& p0, const Eigen::Vector3d& p1,
                                  const Eigen::Vector3d& p2) {
  const Eigen::Vector3d p[3] = {p0, p1, p2};
  Eigen::Matrix3d ke = Eigen::Matrix3d::Zero();
  const double area2 = (p1 - p0).cross(p2 - p0).norm();
  if (!(area2 > 0.0)) return ke;
  for (int c = 0; c < 3; ++c) {
    const int a = (c + 1) % 3, b = (c + 2) % 3;
    const Eigen::Vector3d u = p[a] - p[c], v = p[b] - p[c];
    const double cot = u.dot(v) / area2;  // |u × v| = 2·area
    ke(a, b) -= 0.5 * cot;
    ke(b, a) -= 0.5 * cot;
    ke(a, a) += 0.5 * cot;
    ke(b, b) += 0.5 * cot;
  }
  return ke;
}

// Linear tetrahedron stiffness ∫ ∇φ_a · ∇φ_b (zero for a degenerate tet).
Eigen::Matrix4d TetStiffness(const Eigen::Vector3d& p0, const Eigen::Vector3d& p1,
                             const Eigen::Vector3d& p2, const Eigen::Vector3d& p3) {
  Eigen::Matrix3d D;
  D.col(0) = p1 - p0;
  D.col(1) = p2 - p0;
  D.col(2) = p3 - p0;
  const double det = D.determinant();
  const double longest = std::max({D.col(0).norm(), D.col(1).norm(), D.col(2).norm(),
                                   (p2 - p1).norm(), (p3 - p1).norm(), (p3 - p2).norm()});
  if (!(std::abs(det) > 1e-12 * longest * longest * longest)) return Eigen::Matrix4d::Zero();
  const Eigen::Matrix3d inv = D.inverse();  // rows: gradients of barycentric 1..3
  Eigen::Matrix<double, 4, 3> G;
  G.bottomRows<3>() = inv;
  G.row(0) = -inv.colwise().sum();
  return (std::abs(det) / 6.0) * G * G.transpose();
}

// Trilinear (Q1) stiffness of a cube of side h, corners x-fastest, by 2×2×2 Gauss quadrature
// (exact for this integrand). Scales as h.
Eigen::Matrix<double, 8, 8> VoxelStiffness(double h) {
  const double g[2] = {0.5 - 0.5 / std::sqrt(3.0), 0.5 + 0.5 / std::sqrt(3.0)};
  Eigen::Matrix<double, 8, 8> ke = Eigen::Matrix<double, 8, 8>::Zero();
  for (int q = 0; q < 8; ++q) {
    const double xi[3] = {g[q & 1], g[(q >> 1) & 1], g[(q >> 2) & 1]};
    Eigen::Matrix<double, 8, 3> grad;  // unit cube gradients
    for (int a = 0; a < 8; ++a) {
      const int c[3] = {a & 1, (a >> 1) & 1, (a >> 2) & 1};
      double f[3], df[3];
      for (int d = 0; d < 3; ++d) {
        f[d] = c[d] ? xi[d] : 1.0 - xi[d];
        df[d] = c[d] ? 1.0 : -1.0;
      }
      grad(a, 0) = df[0] * f[1] * f[2];
      grad(a, 1) = f[0] * df[1] * f[2];
      grad(a, 2) = f[0] * f[1] * df[2];
    }
    ke += 0.125 * grad * grad.transpose();  // weight 1/8 per point on the unit cube
  }
  return h * ke;  // ∇ scales as 1/h, volume as h³
}

// ---------------------------------------------------------------------------------------------
// Extra weights (paper Sec. 3.3).

// The cubic B-spline basis B: [0, 1] → [0, 1], B(0) = 1, B(1) = 0, C²: the uniform cubic
// B-spline centred at 0 (support [−2, 2]) at u = 2t, divided by its peak 2/3.
double CubicBSpline(double t) {
  const double u = 2.0 * std::abs(t);
  if (u >= 2.0) return 0.0;
  const double n = u < 1.0 ? (4.0 - 6.0 * u * u + 3.0 * u * u * u) / 6.0
                           : (2.0 - u) * (2.0 - u) * (2.0 - u) / 6.0;
  return 1.5 * n;
}

// ½ min_k ‖x − e_k‖ for a weight vector x (e_k the unit simplex corners).
double HalfCornerDistance(const Eigen::Ref<const Eigen::RowVectorXd>& x) {
  const double d2 = x.squaredNorm() - 2.0 * x.maxCoeff() + 1.0;
  return 0.5 * std::sqrt(std::max(0.0, d2));
}

// Optimized farthest points (Eq. 16–17) among candidate weight vectors (rows of C): p seeds,
// each at the candidate maximizing min(distance to the other seeds, ½ distance to the
// corners). Greedy initialization, then sweeps moving one seed at a time until none moves.
void PlaceSeeds(const Eigen::MatrixXd& C, int p, Eigen::MatrixXd* seeds, Eigen::VectorXd* radii) {
  const int nc = static_cast<int>(C.rows());
  Eigen::VectorXd corner(nc);
  for (int x = 0; x < nc; ++x) corner(x) = HalfCornerDistance(C.row(x));
  Eigen::MatrixXd D(nc, p);  // D(x, i) = ‖C_x − s_i‖
  std::vector<int> at(p, -1);
  auto column = [&](int i, int x0) {
    for (int x = 0; x < nc; ++x) D(x, i) = (C.row(x) - C.row(x0)).norm();
  };
  // Greedy: seed i at the argmax of min(corner, distance to seeds 0..i−1).
  Eigen::VectorXd nearest = corner;
  for (int i = 0; i < p; ++i) {
    int best = 0;
    for (int x = 1; x < nc; ++x) {
      if (nearest(x) > nearest(best)) best = x;
    }
    at[i] = best;
    column(i, best);
    nearest = nearest.cwiseMin(D.col(i));
  }
  // Sweeps (the smallest pairwise distance never decreases, so this terminates).
  for (int sweep = 0; sweep < 100; ++sweep) {
    bool moved = false;
    for (int i = 0; i < p; ++i) {
      int best = at[i];
      double best_d = -1.0;
      for (int x = 0; x < nc; ++x) {
        double d = corner(x);
        for (int j = 0; j < p; ++j) {
          if (j != i) d = std::min(d, D(x, j));
        }
        if (d > best_d + 1e-14) {
          best_d = d;
          best = x;
        }
      }
      if (best != at[i]) {
        // Move only on a strict improvement, so ties never oscillate.
        double cur = corner(at[i]);
        for (int j = 0; j < p; ++j) {
          if (j != i) cur = std::min(cur, D(at[i], j));
        }
        if (best_d > cur + 1e-14) {
          at[i] = best;
          column(i, best);
          moved = true;
        }
      }
    }
    if (!moved) break;
  }
  seeds->resize(p, C.cols());
  radii->resize(p);
  for (int i = 0; i < p; ++i) {
    seeds->row(i) = C.row(at[i]);
    double d = corner(at[i]);
    for (int j = 0; j < p; ++j) {
      if (j != i) d = std::min(d, D(at[i], j));
    }
    (*radii)(i) = 2.0 * d;
  }
}

// [W E] / (1 + Σ E): the original weights W (n by m, rows sum to one) with the extra weights
// E_i = B(‖w − s_i‖ / radius_i) appended, zero wherever an original weight is one, and all
// divided by the row sum to keep a partition of unity.
Eigen::MatrixXd AppendExtraWeights(const Eigen::MatrixXd& W, const Eigen::MatrixXd& seeds,
                                   const Eigen::VectorXd& radii) {
  const int n = static_cast<int>(W.rows()), m = static_cast<int>(W.cols());
  const int p = static_cast<int>(seeds.rows());
  Eigen::MatrixXd out(n, m + p);
  for (int i = 0; i < n; ++i) {
    double sum = 1.0;
    const bool at_corner = W.row(i).maxCoeff() >= 1.0 - 1e-9;
    for (int s = 0; s < p; ++s) {
      double e = 0.0;
      if (!at_corner && radii(s) > 0.0) {
        e = CubicBSpline((W.row(i) - seeds.row(s)).norm() / radii(s));
      }
      out(i, m + s) = e;
      sum += e;
    }
    out.row(i).head(m) = W.row(i);
    out.row(i) /= sum;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// k-means in weight space: Lloyd iterations from k-means++ seeds drawn with mt19937(seed) (its
// output sequence is fixed by the standard, so the result is deterministic). With k ≥ #points
// every point is its own cluster. Empty clusters are dropped; returns the cluster per point and
// sets *k_out to the number of clusters.
std::vector<int> KMeans(const Eigen::MatrixXd& X, int k, int iterations, unsigned seed,
                        int* k_out) {
  const int n = static_cast<int>(X.rows()), dim = static_cast<int>(X.cols());
  std::vector<int> label(n, 0);
  if (k >= n) {
    for (int i = 0; i < n; ++i) label[i] = i;
    *k_out = n;
    return label;
  }
  std::mt19937 rng(seed);
  auto uniform = [&rng]() { return static_cast<double>(rng()) / 4294967296.0; };
  // Row-major copy for cache-friendly distance loops.
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> P = X;
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> centers(k, dim);
  Eigen::VectorXd d2(n);
  centers.row(0) = P.row(std::min(n - 1, static_cast<int>(uniform() * n)));
  for (int i = 0; i < n; ++i) d2(i) = (P.row(i) - centers.row(0)).squaredNorm();
  int kc = 1;
  for (; kc < k; ++kc) {
    const double total = d2.sum();
    if (!(total > 0.0)) break;  // fewer distinct points than k
    double target = uniform() * total;
    int pick = n - 1;
    for (int i = 0; i < n; ++i) {
      target -= d2(i);
      if (target < 0.0) {
        pick = i;
        break;
      }
    }
    if (d2(pick) <= 0.0) {  // rounding landed on a covered point: take the farthest instead
      d2.maxCoeff(&pick);
    }
    centers.row(kc) = P.row(pick);
    for (int i = 0; i < n; ++i) d2(i) = std::min(d2(i), (P.row(i) - centers.row(kc)).squaredNorm());
  }
  k = kc;
  std::vector<int> count(k);
  for (int it = 0; it < std::max(1, iterations); ++it) {
    bool changed = it == 0;
    for (int i = 0; i < n; ++i) {
      int best = 0;
      double best_d = std::numeric_limits<double>::infinity();
      for (int c = 0; c < k; ++c) {
        const double d = (P.row(i) - centers.row(c)).squaredNorm();
        if (d < best_d) {
          best_d = d;
          best = c;
        }
      }
      if (label[i] != best) changed = true;
      label[i] = best;
    }
    if (!changed) break;
    centers.setZero();
    std::fill(count.begin(), count.end(), 0);
    for (int i = 0; i < n; ++i) {
      centers.row(label[i]) += P.row(i);
      ++count[label[i]];
    }
    for (int c = 0; c < k; ++c) {
      if (count[c] > 0) centers.row(c) /= count[c];
    }
  }
  // Compact (drop empty clusters).
  std::vector<int> remap(k, -1);
  int used = 0;
  for (int i = 0; i < n; ++i) {
    if (remap[label[i]] < 0) remap[label[i]] = used++;
    label[i] = remap[label[i]];
  }
  *k_out = used;
  return label;
}

// ---------------------------------------------------------------------------------------------
// Mesh weights → domain node weights: the least-squares fit through the domain's interpolation
// P = to_mesh, regularized by the Dirichlet energy (which extends the weights harmonically to
// nodes far from the surface):
//   (PᵀP + λ K + ε diag(mass)) W_N = Pᵀ W,  λ = 1e-3 · tr(PᵀP) / tr(K),  ε = 1e-10 · tr(PᵀP)/Σmass,
// then clamped to ≥ 0 and rows renormalized to sum to one.
absl::StatusOr<Eigen::MatrixXd> FitNodeWeights(const VolumeDomain& domain,
                                               const Eigen::MatrixXd& W) {
  const Eigen::SparseMatrix<double> P = domain.to_mesh;
  Eigen::SparseMatrix<double> A = Eigen::SparseMatrix<double>(P.transpose()) * P;
  double tr_ptp = 0.0, tr_k = 0.0;
  for (int i = 0; i < A.rows(); ++i) tr_ptp += A.coeff(i, i);
  for (int i = 0; i < domain.K.rows(); ++i) tr_k += domain.K.coeff(i, i);
  const double lambda = tr_k > 0 ? 1e-3 * tr_ptp / tr_k : 0.0;
  const double eps = 1e-10 * tr_ptp / std::max(1e-300, domain.mass.sum());
  Eigen::SparseMatrix<double> mass(A.rows(), A.cols());
  mass.reserve(Eigen::VectorXi::Constant(A.cols(), 1));
  for (int i = 0; i < A.rows(); ++i) mass.insert(i, i) = eps * domain.mass(i);
  A = A + lambda * domain.K + mass;
  Eigen::CholmodSupernodalLLT<Eigen::SparseMatrix<double>> solver;
  solver.compute(A);
  if (solver.info() != Eigen::Success) {
    return absl::FailedPreconditionError(
        "fast skinning: the weight fit on the volume domain is singular");
  }
  Eigen::MatrixXd rhs = P.transpose() * W;
  Eigen::MatrixXd WN = solver.solve(rhs);
  if (solver.info() != Eigen::Success) {
    return absl::FailedPreconditionError("fast skinning: the weight fit on the volume domain failed");
  }
  WN = WN.cwiseMax(0.0);
  for (int i = 0; i < WN.rows(); ++i) {
    const double s = WN.row(i).sum();
    if (s > 0) {
      WN.row(i) /= s;
    } else {
      WN.row(i).setConstant(1.0 / WN.cols());
    }
  }
  return WN;
}

// The LBS matrix M (n by 4m') of normalized positions X and weights W (n by m').
Eigen::MatrixXd LbsMatrix(const RowMatrixX3d& X, const Eigen::MatrixXd& W) {
  const int n = static_cast<int>(X.rows()), mm = static_cast<int>(W.cols());
  Eigen::MatrixXd M(n, 4 * mm);
  for (int j = 0; j < mm; ++j) {
    for (int c = 0; c < 3; ++c) M.col(4 * j + c) = W.col(j).cwiseProduct(X.col(c));
    M.col(4 * j + 3) = W.col(j);
  }
  return M;
}

// Element list for the reduction: node indices, stiffness, and the owner ids whose edge sets
// use it (one owner = one rotation edge set).
struct ElementSet {
  int nodes_per_element = 0;
  std::vector<int32_t> nodes;    // #E × nodes_per_element
  std::vector<double> stiffness;  // #E × npe × npe (column-major per element)
  int owners_per_element = 0;
  std::vector<int32_t> owners;  // #E × owners_per_element
  int num_elements() const {
    return nodes_per_element ? static_cast<int>(nodes.size()) / nodes_per_element : 0;
  }
};

// Normalized-frame affine ↔ stacked block (4 by 3, block = T̂ᵀ).
inline void ToNormalizedBlock(const Affine34& T, const Eigen::Vector3d& center, double scale,
                              double* block, int ld) {
  // T̂ = [A | (A c + t − c) / s]; block(a, b) = T̂(b, a), stored column-major with leading dim ld.
  const Eigen::Matrix3d A = T.leftCols<3>();
  const Eigen::Vector3d t = (A * center + T.col(3) - center) / scale;
  for (int b = 0; b < 3; ++b) {
    for (int a = 0; a < 3; ++a) block[b * ld + a] = A(b, a);
    block[b * ld + 3] = t(b);
  }
}
inline Affine34 FromNormalizedBlock(const double* block, int ld, const Eigen::Vector3d& center,
                                    double scale) {
  Affine34 T;
  Eigen::Vector3d t;
  for (int b = 0; b < 3; ++b) {
    for (int a = 0; a < 3; ++a) T(b, a) = block[b * ld + a];
    t(b) = block[b * ld + 3];
  }
  const Eigen::Matrix3d A = T.leftCols<3>();
  T.col(3) = scale * t + center - A * center;
  return T;
}

// Normalized energy of a normalized stacked Tn (4m' by 3) with optimal rotations.
double NormalizedEnergy(const FastModel& model, const Eigen::MatrixXd& Tn) {
  const double quad = 0.5 * (Tn.transpose() * model.L * Tn).trace();
  const Eigen::MatrixXd S = model.K * Tn;  // 3r by 3
  double lin = 0.0;
  for (int k = 0; k < model.r; ++k) {
    const Eigen::Matrix3d Sk = S.middleRows<3>(3 * k);
    // max over rotations of tr(R Sk) is attained at R = nearest rotation to Skᵀ.
    lin += (ClosestRotation3d(Sk.transpose()) * Sk).trace();
  }
  return quad - lin + model.c0;
}

// ---------------------------------------------------------------------------------------------
// Serialization helpers.
constexpr char kMagic[8] = {'S', 'K', 'F', 'A', 'S', 'T', 'M', '1'};
constexpr uint32_t kVersion = 1;

template <typename T>
void Put(std::string* out, const T& v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(T));
}
void PutDoubles(std::string* out, const double* p, size_t count) {
  out->append(reinterpret_cast<const char*>(p), count * sizeof(double));
}

class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  template <typename T>
  bool Get(T* v) {
    if (s_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(v, s_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool GetDoubles(double* p, size_t count) {
    if (count > (s_.size() - pos_) / sizeof(double)) return false;
    std::memcpy(p, s_.data() + pos_, count * sizeof(double));
    pos_ += count * sizeof(double);
    return true;
  }
  size_t remaining() const { return s_.size() - pos_; }

 private:
  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

// =============================================================================================
// Precomputation.

std::string FastReport::BriefReport() const {
  return absl::StrFormat("%d handles, %d extra handles, %d rotation clusters", handles,
                         extra_handles, clusters);
}

absl::StatusOr<FastModelPtr> PrecomputeFast(const Mesh& mesh, const Eigen::MatrixXd& W,
                                            const FastOptions& options, FastReport* report,
                                            const Progress& progress) {
  const auto start = Clock::now();
  RETURN_IF_ERROR(ValidateMesh(mesh));
  const int n = static_cast<int>(mesh.V.rows());
  const int m = static_cast<int>(W.cols());
  if (n == 0 || mesh.F.rows() == 0) return absl::InvalidArgumentError("mesh: no triangles");
  if (W.rows() != n || m < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "weights: %d by %d, expected %d rows (one per vertex) and at least one column",
        W.rows(), W.cols(), n));
  }
  RETURN_IF_ERROR(ValidateWeights(W, n, m));
  if (options.clusters < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("options.clusters = %d is negative", options.clusters));
  }
  if (options.extra_weights < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("options.extra_weights = %d is negative", options.extra_weights));
  }
  if (options.kmeans_iterations < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "options.kmeans_iterations = %d must be at least 1", options.kmeans_iterations));
  }

  auto model = std::make_shared<FastModel>();
  model->m = m;
  model->energy = options.energy;
  // Normalized frame.
  const Eigen::Vector3d lo = mesh.V.colwise().minCoeff(), hi = mesh.V.colwise().maxCoeff();
  model->center = 0.5 * (lo + hi);
  model->scale = (hi - lo).norm();
  if (!(model->scale > 0)) return absl::InvalidArgumentError("mesh: all vertices coincide");
  const double s = model->scale;

  // Extra weights (Sec. 3.3). Candidates: the vertices' weight vectors (at most 20000, a fixed
  // deterministic subsample beyond that).
  progress.Report("fast: extra weights", 0.0);
  Eigen::MatrixXd Wm = W;
  for (int i = 0; i < n; ++i) Wm.row(i) /= Wm.row(i).sum();  // exact partition of unity
  if (options.extra_weights > 0) {
    Eigen::MatrixXd candidates;
    const int kMaxCandidates = 20000;
    if (n <= kMaxCandidates) {
      candidates = Wm;
    } else {
      std::mt19937 rng(options.seed);
      std::vector<int> idx(n);
      for (int i = 0; i < n; ++i) idx[i] = i;
      for (int i = 0; i < kMaxCandidates; ++i) {  // partial Fisher–Yates
        const int j = i + static_cast<int>(rng() % static_cast<uint32_t>(n - i));
        std::swap(idx[i], idx[j]);
      }
      candidates.resize(kMaxCandidates, m);
      for (int i = 0; i < kMaxCandidates; ++i) candidates.row(i) = Wm.row(idx[i]);
    }
    PlaceSeeds(candidates, options.extra_weights, &model->seeds, &model->radii);
    model->extra = options.extra_weights;
    model->weights = AppendExtraWeights(Wm, model->seeds, model->radii);
  } else {
    model->seeds.resize(0, m);
    model->radii.resize(0);
    model->weights = Wm;
  }
  const int mm = model->total();
  RETURN_IF_ERROR(progress.CheckCancelled());

  // Energy nodes, node weights and elements.
  RowMatrixX3d X;          // nodes, normalized
  Eigen::MatrixXd WN;      // node weights (n_nodes by m')
  ElementSet el;
  progress.Report("fast: domain", 0.1);
  if (options.energy == FastEnergy::kSurface) {
    X = (mesh.V.rowwise() - model->center.transpose()) / s;
    WN = model->weights;
    const int nf = static_cast<int>(mesh.F.rows());
    el.nodes_per_element = 3;
    el.owners_per_element = 3;
    el.nodes.resize(3 * nf);
    el.owners.resize(3 * nf);
    el.stiffness.resize(9 * nf);
    for (int f = 0; f < nf; ++f) {
      for (int c = 0; c < 3; ++c) el.nodes[3 * f + c] = el.owners[3 * f + c] = mesh.F(f, c);
      const Eigen::Matrix3d ke =
          TriangleStiffness(X.row(mesh.F(f, 0)), X.row(mesh.F(f, 1)), X.row(mesh.F(f, 2)));
      std::memcpy(&el.stiffness[9 * f], ke.data(), 9 * sizeof(double));
    }
    model->energy_scale = s * s;  // cot stiffness is scale invariant, positions scale by s
  } else {
    DomainReport domain_report;
    ASSIGN_OR_RETURN(VolumeDomain domain,
                     BuildDomain(mesh, options.domain, &domain_report, progress.Sub(0.1, 0.3)));
    if (report != nullptr) report->domain = std::move(domain_report);
    RETURN_IF_ERROR(progress.CheckCancelled());
    ASSIGN_OR_RETURN(auto fit, FitNodeWeights(domain, Wm));
    WN = model->extra > 0 ? AppendExtraWeights(fit, model->seeds, model->radii) : fit;
    X = (domain.nodes.rowwise() - model->center.transpose()) / s;
    const int ne = static_cast<int>(domain.elements.rows());
    const int npe = static_cast<int>(domain.elements.cols());
    el.nodes_per_element = npe;
    el.owners_per_element = 1;
    el.nodes.resize(static_cast<size_t>(ne) * npe);
    el.owners.resize(ne);
    el.stiffness.resize(static_cast<size_t>(ne) * npe * npe);
    Eigen::Matrix<double, 8, 8> kvox;
    if (domain.kind == VolumeDomain::Kind::kVoxelGrid) kvox = VoxelStiffness(domain.spacing / s);
    for (int e = 0; e < ne; ++e) {
      for (int a = 0; a < npe; ++a) el.nodes[static_cast<size_t>(e) * npe + a] = domain.elements(e, a);
      el.owners[e] = e;
      double* dst = &el.stiffness[static_cast<size_t>(e) * npe * npe];
      if (domain.kind == VolumeDomain::Kind::kVoxelGrid) {
        std::memcpy(dst, kvox.data(), 64 * sizeof(double));
      } else {
        const Eigen::Matrix4d ke =
            TetStiffness(X.row(domain.elements(e, 0)), X.row(domain.elements(e, 1)),
                         X.row(domain.elements(e, 2)), X.row(domain.elements(e, 3)));
        std::memcpy(dst, ke.data(), 16 * sizeof(double));
      }
    }
    model->energy_scale = s * s * s;  // volume stiffness scales as s, positions as s
  }
  const int num_nodes = static_cast<int>(X.rows());
  const int ne = el.num_elements();
  const int npe = el.nodes_per_element;
  RETURN_IF_ERROR(progress.CheckCancelled());

  // Rotation clusters: k-means of the owners' weight vectors (vertices for kSurface; element
  // means of the node weights for kVolumetric), all m' columns.
  progress.Report("fast: clusters", 0.4);
  const int num_owners = options.energy == FastEnergy::kSurface ? n : ne;
  Eigen::MatrixXd owner_w(num_owners, mm);
  if (options.energy == FastEnergy::kSurface) {
    owner_w = WN;
  } else {
    owner_w.setZero();
    for (int e = 0; e < ne; ++e) {
      for (int a = 0; a < npe; ++a) owner_w.row(e) += WN.row(el.nodes[static_cast<size_t>(e) * npe + a]);
    }
    owner_w /= npe;
  }
  const int r_wanted = options.clusters > 0 ? options.clusters : 2 * mm;
  int r = 0;
  const std::vector<int> cluster =
      KMeans(owner_w, r_wanted, options.kmeans_iterations, options.seed, &r);
  model->r = r;
  RETURN_IF_ERROR(progress.CheckCancelled());

  // Reduction: L̃ = Mᵀ L M, K̃ = K M, c0.
  progress.Report("fast: reduce", 0.6);
  const Eigen::MatrixXd M = LbsMatrix(X, WN);  // num_nodes by 4m'
  std::vector<Eigen::Triplet<double>> trip;
  trip.reserve(static_cast<size_t>(ne) * npe * npe);
  model->K = Eigen::MatrixXd::Zero(3 * r, 4 * mm);
  double c0 = 0.0;
  Eigen::MatrixXd Xe(npe, 3), Me(npe, 4 * mm);
  for (int e = 0; e < ne; ++e) {
    const int32_t* nodes = &el.nodes[static_cast<size_t>(e) * npe];
    const Eigen::Map<const Eigen::MatrixXd> ke(&el.stiffness[static_cast<size_t>(e) * npe * npe],
                                               npe, npe);
    const double mult = el.owners_per_element;
    for (int a = 0; a < npe; ++a) {
      Xe.row(a) = X.row(nodes[a]);
      Me.row(a) = M.row(nodes[a]);
      for (int b = 0; b < npe; ++b) {
        if (ke(a, b) != 0.0) trip.emplace_back(nodes[a], nodes[b], mult * ke(a, b));
      }
    }
    const Eigen::MatrixXd XtK = Xe.transpose() * ke;  // 3 by npe
    c0 += 0.5 * mult * (XtK * Xe).trace();
    const Eigen::MatrixXd Pe = XtK * Me;  // 3 by 4m'
    for (int o = 0; o < el.owners_per_element; ++o) {
      const int k = cluster[el.owners[static_cast<size_t>(e) * el.owners_per_element + o]];
      model->K.middleRows(3 * k, 3) += Pe;
    }
    if ((e & 4095) == 0) {
      RETURN_IF_ERROR(progress.CheckCancelled());
    }
  }
  Eigen::SparseMatrix<double> L(num_nodes, num_nodes);
  L.setFromTriplets(trip.begin(), trip.end());
  trip.clear();
  trip.shrink_to_fit();
  const Eigen::MatrixXd LM = L * M;
  model->L = M.transpose() * LM;
  model->L = 0.5 * (model->L + model->L.transpose()).eval();
  model->c0 = c0;
  // Inert handles: no weight on any energy node and no mesh vertex.
  model->inert.assign(mm, 0);
  for (int j = 0; j < mm; ++j) {
    model->inert[j] = WN.col(j).maxCoeff() <= 0.0 && model->weights.col(j).maxCoeff() <= 0.0;
  }
  {
    // null(M) over the active (non-inert) handles, in per-handle centred coordinates.
    std::vector<int> active;
    for (int j = 0; j < mm; ++j) {
      if (!model->inert[j]) active.push_back(j);
    }
    const int na = static_cast<int>(active.size());
    Eigen::MatrixXd gram = Eigen::MatrixXd::Zero(4 * na, 4 * na);
    Eigen::MatrixXd centroid(na, 3);
    auto accumulate = [&](const RowMatrixX3d& P, const Eigen::MatrixXd& Wp, bool first) {
      Eigen::MatrixXd Mc(P.rows(), 4 * na);
      for (int a = 0; a < na; ++a) {
        const int j = active[a];
        if (first) {
          const double wsum = Wp.col(j).sum();
          centroid.row(a) = wsum > 0 ? (Wp.col(j).transpose() * P) / wsum
                                     : Eigen::RowVector3d::Zero().eval();
        }
        for (int c = 0; c < 3; ++c) {
          Mc.col(4 * a + c) =
              Wp.col(j).cwiseProduct((P.col(c).array() - centroid(a, c)).matrix());
        }
        Mc.col(4 * a + 3) = Wp.col(j);
      }
      gram.noalias() += Mc.transpose() * Mc;
    };
    accumulate(X, WN, true);
    if (options.energy != FastEnergy::kSurface) {
      const RowMatrixX3d Vn = (mesh.V.rowwise() - model->center.transpose()) / s;
      accumulate(Vn, model->weights, false);
    }
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(gram);
    const Eigen::VectorXd& lambda = eig.eigenvalues();  // increasing
    const double cut = 1e-10 * std::max(lambda.maxCoeff(), 1e-300);
    int q = 0;
    while (q < lambda.size() && lambda(q) <= cut) ++q;
    model->null_dirs = Eigen::MatrixXd::Zero(4 * mm, q);
    for (int k = 0; k < q; ++k) {
      const Eigen::VectorXd z = eig.eigenvectors().col(k);
      for (int a = 0; a < na; ++a) {
        const int j = active[a];
        // Back to the global frame: linear rows += centroid · (translation row).
        for (int c = 0; c < 3; ++c) {
          model->null_dirs(4 * j + c, k) = z(4 * a + c) + centroid(a, c) * z(4 * a + 3);
        }
        model->null_dirs(4 * j + 3, k) = z(4 * a + 3);
      }
    }
  }
  progress.Report("fast: reduce", 1.0);

  if (report != nullptr) {
    report->handles = m;
    report->extra_handles = model->extra;
    report->clusters = r;
    report->seconds = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return FastModelPtr(std::move(model));
}

int FastModelHandles(const FastModel& model) { return model.m; }
int FastModelTotalHandles(const FastModel& model) { return model.total(); }
int FastModelClusters(const FastModel& model) { return model.r; }
const Eigen::MatrixXd& FastModelWeights(const FastModel& model) { return model.weights; }

// =============================================================================================
// Serialization: magic (8 bytes), version (u32), then little-endian fields:
//   i32 m, extra, r, energy, n (mesh vertices); f64 center[3], scale, energy_scale, c0;
//   f64 weights (n × m', column-major), L̃ (4m' × 4m'), K̃ (3r × 4m'); u8 inert[m'];
//   f64 seeds (extra × m), radii[extra]; i32 q; f64 null directions (4m' × q).

std::string SerializeFastModel(const FastModel& model) {
  std::string out(kMagic, sizeof(kMagic));
  Put(&out, kVersion);
  Put(&out, static_cast<int32_t>(model.m));
  Put(&out, static_cast<int32_t>(model.extra));
  Put(&out, static_cast<int32_t>(model.r));
  Put(&out, static_cast<int32_t>(model.energy));
  Put(&out, static_cast<int32_t>(model.weights.rows()));
  PutDoubles(&out, model.center.data(), 3);
  Put(&out, model.scale);
  Put(&out, model.energy_scale);
  Put(&out, model.c0);
  PutDoubles(&out, model.weights.data(), model.weights.size());
  PutDoubles(&out, model.L.data(), model.L.size());
  PutDoubles(&out, model.K.data(), model.K.size());
  out.append(reinterpret_cast<const char*>(model.inert.data()), model.inert.size());
  PutDoubles(&out, model.seeds.data(), model.seeds.size());
  PutDoubles(&out, model.radii.data(), model.radii.size());
  Put(&out, static_cast<int32_t>(model.null_dirs.cols()));
  PutDoubles(&out, model.null_dirs.data(), model.null_dirs.size());
  return out;
}

absl::StatusOr<FastModelPtr> ParseFastModel(const std::string& bytes) {
  auto corrupt = [](const std::string& why) {
    return absl::DataLossError("fast skinning model: " + why);
  };
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return corrupt("bad magic (not a serialized fast skinning model)");
  }
  Reader in(bytes);
  char magic[sizeof(kMagic)];
  for (char& c : magic) in.Get(&c);
  uint32_t version = 0;
  if (!in.Get(&version)) return corrupt("truncated header");
  if (version != kVersion) {
    return corrupt(absl::StrFormat("version %u is not supported (expected %u)", version, kVersion));
  }
  int32_t m = 0, extra = 0, r = 0, energy = 0, n = 0;
  if (!in.Get(&m) || !in.Get(&extra) || !in.Get(&r) || !in.Get(&energy) || !in.Get(&n)) {
    return corrupt("truncated header");
  }
  if (m < 1 || extra < 0 || r < 1 || n < 1 || (energy != 0 && energy != 1) || m > (1 << 16) ||
      extra > (1 << 16)) {
    return corrupt(absl::StrFormat("bad sizes m=%d extra=%d r=%d n=%d energy=%d", m, extra, r, n,
                                   energy));
  }
  auto model = std::make_shared<FastModel>();
  model->m = m;
  model->extra = extra;
  model->r = r;
  model->energy = static_cast<FastEnergy>(energy);
  const int64_t mm = m + extra;
  // Exact expected size before allocating anything large.
  const uint64_t doubles = 3 + 3 + static_cast<uint64_t>(n) * mm + 16 * mm * mm +
                           static_cast<uint64_t>(12) * r * mm + static_cast<uint64_t>(extra) * m +
                           extra;
  const uint64_t fixed = doubles * sizeof(double) + static_cast<uint64_t>(mm) + 4;
  if (in.remaining() < fixed) {
    return corrupt(absl::StrFormat("payload is %d bytes, expected at least %d", in.remaining(),
                                   fixed));
  }
  const uint64_t null_bytes = in.remaining() - fixed;
  if (null_bytes % (sizeof(double) * 4 * mm) != 0) {
    return corrupt(absl::StrFormat("payload size %d does not match the header", in.remaining()));
  }
  const uint64_t expected = fixed + null_bytes;
  if (in.remaining() != expected) {
    return corrupt(absl::StrFormat("payload is %d bytes, expected %d", in.remaining(), expected));
  }
  in.GetDoubles(model->center.data(), 3);
  in.Get(&model->scale);
  in.Get(&model->energy_scale);
  in.Get(&model->c0);
  model->weights.resize(n, mm);
  in.GetDoubles(model->weights.data(), model->weights.size());
  model->L.resize(4 * mm, 4 * mm);
  in.GetDoubles(model->L.data(), model->L.size());
  model->K.resize(3 * r, 4 * mm);
  in.GetDoubles(model->K.data(), model->K.size());
  model->inert.resize(mm);
  for (auto& b : model->inert) in.Get(&b);
  model->seeds.resize(extra, m);
  in.GetDoubles(model->seeds.data(), model->seeds.size());
  model->radii.resize(extra);
  in.GetDoubles(model->radii.data(), model->radii.size());
  int32_t q = -1;
  in.Get(&q);
  if (q < 0 || static_cast<uint64_t>(q) * sizeof(double) * 4 * mm != null_bytes) {
    return corrupt(absl::StrFormat("null-direction count %d does not match the payload", q));
  }
  model->null_dirs.resize(4 * mm, q);
  in.GetDoubles(model->null_dirs.data(), model->null_dirs.size());
  if (!(model->scale > 0) || !std::isfinite(model->scale) || !model->center.allFinite() ||
      !std::isfinite(model->energy_scale) || !std::isfinite(model->c0) ||
      !model->weights.allFinite() || !model->L.allFinite() || !model->K.allFinite() ||
      !model->null_dirs.allFinite() || !model->seeds.allFinite() || !model->radii.allFinite()) {
    return corrupt("non-finite or non-positive values");
  }
  for (uint8_t b : model->inert) {
    if (b > 1) return corrupt("bad inert flag");
  }
  return FastModelPtr(std::move(model));
}

// =============================================================================================
// Solver.

struct FastSolver::State {
  FastModelPtr model;
  bool ready = false;
  std::vector<HandleConstraint> constraints;  // the current set
  int n4 = 0;                                 // 4m'
  int r3 = 0;                                 // 3r
  // Constraint rows of M_eq (normalized): handle, component (0..3 for kFull, −1 for kPosition),
  // and for kPosition the point (p̂, 1).
  struct Row {
    int handle;
    int component;
    Eigen::Vector4d a;
  };
  std::vector<Row> rows;
  bool combined = false;  // iterate S = G Rᵀ + S_c (3r by 3r) instead of T then S
  MatrixXfc G;            // 3r by 3r: K̃ Γ (combined only)
  MatrixXfc gamma;        // 4m' by 3r: Γ_solve (rows of kFull handles zero)
  MatrixXfc kt;           // 3r by 4m': K̃
  MatrixXfc phi;          // 4m' by c: Φ_solve
  MatrixXfc kphi;         // 3r by c: K̃ Φ
  MatrixXfc t0;           // 4m' by 3: constant part (inert handles pulled to identity)
  MatrixXfc kt0;          // 3r by 3: K̃ t0
  // Per-frame buffers (allocated in SetConstraints).
  Eigen::MatrixXd tn;  // 4m' by 3 normalized T (double)
  MatrixXfc p;         // c by 3 targets (normalized)
  MatrixXfc tf;        // 4m' by 3
  MatrixXfc tc;        // 4m' by 3: Φ P + t0
  MatrixXfc sc;        // 3r by 3: K̃ (Φ P + t0)
  MatrixXfc s;         // 3r by 3
  MatrixXfc rt;        // 3r by 3: stacked R_kᵀ
  // Warm start of the local step: each cluster's last rotation (as R_kᵀ, a unit quaternion),
  // kept across iterations and frames. Until the first exact local step they are not valid.
  std::vector<Eigen::Quaternionf> warm;
  bool warm_valid = false;
};

FastSolver::FastSolver(FastModelPtr model) : state_(std::make_unique<State>()) {
  state_->model = std::move(model);
}
FastSolver::~FastSolver() = default;
FastSolver::FastSolver(FastSolver&&) noexcept = default;
FastSolver& FastSolver::operator=(FastSolver&&) noexcept = default;

absl::Status FastSolver::SetConstraints(const std::vector<HandleConstraint>& constraints) {
  State& st = *state_;
  if (st.model == nullptr) return absl::FailedPreconditionError("FastSolver: no model");
  const FastModel& model = *st.model;
  const int m = model.m, mm = model.total();
  if (static_cast<int>(constraints.size()) != m) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "constraints: %d given, expected one per original handle (%d)", constraints.size(), m));
  }
  for (int j = 0; j < m; ++j) {
    if (!constraints[j].point.allFinite()) {
      return absl::InvalidArgumentError(absl::StrFormat("constraints[%d].point is not finite", j));
    }
  }
  if (st.ready && st.constraints.size() == constraints.size()) {
    bool same = true;
    for (int j = 0; j < m && same; ++j) {
      same = st.constraints[j].kind == constraints[j].kind &&
             (constraints[j].kind != HandleConstraint::Kind::kPosition ||
              st.constraints[j].point == constraints[j].point);
    }
    if (same) return absl::OkStatus();
  }
  st.ready = false;
  const int n4 = 4 * mm, r3 = 3 * model.r;
  st.rows.clear();
  for (int j = 0; j < m; ++j) {
    if (constraints[j].kind == HandleConstraint::Kind::kFull) {
      for (int c = 0; c < 4; ++c) st.rows.push_back({j, c, Eigen::Vector4d::Unit(c)});
    } else if (constraints[j].kind == HandleConstraint::Kind::kPosition) {
      Eigen::Vector4d a;
      a.head<3>() = (constraints[j].point - model.center) / model.scale;
      a(3) = 1.0;
      st.rows.push_back({j, -1, a});
    }
  }
  const int c = static_cast<int>(st.rows.size());
  if (c == 0) {
    return absl::InvalidArgumentError(
        "constraints: all handles are free, so nothing pins the translation");
  }
  // KKT system (Eq. 15): [L̃ M_eqᵀ; M_eq 0].
  const int N = n4 + c;
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(N, N);
  A.topLeftCorner(n4, n4) = model.L;
  Eigen::MatrixXd B = Eigen::MatrixXd::Zero(n4, 3);  // right-hand side of the inert pull
  std::vector<uint8_t> full(mm, 0);
  for (int j = 0; j < m; ++j) full[j] = constraints[j].kind == HandleConstraint::Kind::kFull;
  for (int j = 0; j < mm; ++j) {
    if (model.inert[j] && !full[j]) {
      // ½‖T_j − I‖²: the handle moves nothing, so only this decides it.
      A.block<4, 4>(4 * j, 4 * j) += Eigen::Matrix4d::Identity();
      B.block<3, 3>(4 * j, 0) = Eigen::Matrix3d::Identity();
    }
  }
  if (model.null_dirs.cols() > 0) {
    // Gauge for directions that move nothing: μ ‖Zᵀ T‖² (μ of the order of L̃'s diagonal).
    const double mu = std::max(model.L.trace() / n4, 1e-12);
    A.topLeftCorner(n4, n4).noalias() += mu * model.null_dirs * model.null_dirs.transpose();
  }
  for (int i = 0; i < c; ++i) {
    const auto& row = st.rows[i];
    A.block<1, 4>(n4 + i, 4 * row.handle) = row.a.transpose();
    A.block<4, 1>(4 * row.handle, n4 + i) = row.a;
  }
  Eigen::FullPivLU<Eigen::MatrixXd> lu(A);
  lu.setThreshold(1e-11);
  if (!lu.isInvertible()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "constraints do not determine the handle transforms (KKT rank %d of %d): e.g. too few "
        "constraints to pin the translation, or handles whose weights are linearly dependent",
        lu.rank(), N));
  }
  Eigen::MatrixXd rhs = Eigen::MatrixXd::Zero(N, r3 + c + 3);
  rhs.topLeftCorner(n4, r3) = model.K.transpose();
  rhs.block(n4, r3, c, c).setIdentity();
  rhs.topRightCorner(n4, 3) = B;
  const Eigen::MatrixXd sol = lu.solve(rhs);
  Eigen::MatrixXd gamma = sol.topLeftCorner(n4, r3);
  Eigen::MatrixXd phi = sol.block(0, r3, n4, c);
  Eigen::MatrixXd t0 = sol.topRightCorner(n4, 3);
  for (int j = 0; j < m; ++j) {
    if (full[j]) {  // exactly determined by the targets
      gamma.middleRows<4>(4 * j).setZero();
      t0.middleRows<4>(4 * j).setZero();
    }
  }
  st.n4 = n4;
  st.r3 = r3;
  st.combined = r3 <= 2 * n4;  // (3r)² ≤ 2 · 3r · 4m' multiply-adds per iteration
  st.gamma = gamma.cast<float>();
  st.kt = model.K.cast<float>();
  st.phi = phi.cast<float>();
  st.kphi = (model.K * phi).cast<float>();
  st.t0 = t0.cast<float>();
  st.kt0 = (model.K * t0).cast<float>();
  if (st.combined) {
    st.G = (model.K * gamma).cast<float>();
  } else {
    st.G.resize(0, 0);
  }
  st.tn.resize(n4, 3);
  st.p.resize(c, 3);
  st.tf.resize(n4, 3);
  st.tc.resize(n4, 3);
  st.sc.resize(r3, 3);
  st.s.resize(r3, 3);
  st.rt.resize(r3, 3);
  if (static_cast<int>(st.warm.size()) != model.r) {
    st.warm.assign(model.r, Eigen::Quaternionf::Identity());
    st.warm_valid = false;
  }
  st.constraints = constraints;
  st.ready = true;
  return absl::OkStatus();
}

absl::Status FastSolver::Solve(const std::vector<Affine34>& targets, std::vector<Affine34>* T,
                               int iterations, FastSolveReport* report, bool record_energy) {
  State& st = *state_;
  if (!st.ready) return absl::FailedPreconditionError("FastSolver::Solve before SetConstraints");
  const FastModel& model = *st.model;
  const int m = model.m, mm = model.total();
  if (static_cast<int>(targets.size()) != m) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "targets: %d given, expected one per original handle (%d)", targets.size(), m));
  }
  if (T == nullptr) return absl::InvalidArgumentError("T is null");
  if (iterations < 0) {
    return absl::InvalidArgumentError(absl::StrFormat("iterations = %d is negative", iterations));
  }
  if (T->empty()) {
    T->assign(mm, Affine34::Identity());  // first use only
  } else if (static_cast<int>(T->size()) != mm) {
    return absl::InvalidArgumentError(
        absl::StrFormat("T: %d transforms, expected %d (handles + extra handles)", T->size(), mm));
  }
  const Eigen::Vector3d& center = model.center;
  const double scale = model.scale;
  const int n4 = st.n4, r3 = st.r3, c = static_cast<int>(st.rows.size());

  // Targets (normalized) → P_eq.
  for (int i = 0; i < c; ++i) {
    const auto& row = st.rows[i];
    const Affine34& tg = targets[row.handle];
    if (row.component >= 0) {
      double block[12];
      ToNormalizedBlock(tg, center, scale, block, 4);
      for (int b = 0; b < 3; ++b) st.p(i, b) = static_cast<float>(block[b * 4 + row.component]);
    } else {
      const Eigen::Vector3d x = (tg.col(3) - center) / scale;
      for (int b = 0; b < 3; ++b) st.p(i, b) = static_cast<float>(x(b));
    }
  }
  // Per-frame constants: T_c = Φ P + t0, S_c = K̃ T_c.
  std::memcpy(st.tc.data(), st.t0.data(), sizeof(float) * n4 * 3);
  MulN3(st.phi.data(), n4, c, st.p.data(), c, st.tc.data(), true);
  std::memcpy(st.sc.data(), st.kt0.data(), sizeof(float) * r3 * 3);
  MulN3(st.kphi.data(), r3, c, st.p.data(), c, st.sc.data(), true);

  // Warm start: S = K̃ T.
  for (int j = 0; j < mm; ++j) {
    ToNormalizedBlock((*T)[j], center, scale, st.tn.data() + 4 * j, n4);
  }
  st.tf = st.tn.cast<float>();  // fixed size: no allocation
  MulN3(st.kt.data(), r3, n4, st.tf.data(), n4, st.s.data(), false);

  // Writes the snapped, denormalized result of tf into *T.
  auto emit = [&]() {
    for (int i = 0; i < n4 * 3; ++i) st.tn.data()[i] = st.tf.data()[i];
    for (int j = 0; j < m; ++j) {
      const auto kind = st.constraints[j].kind;
      if (kind == HandleConstraint::Kind::kFull) {
        ToNormalizedBlock(targets[j], center, scale, st.tn.data() + 4 * j, n4);
      } else if (kind == HandleConstraint::Kind::kPosition) {
        // Exact constraint: shift the translation by the (float-rounding) residual.
        Eigen::Vector4d a;
        a.head<3>() = (st.constraints[j].point - center) / scale;
        a(3) = 1.0;
        const Eigen::Vector3d x = (targets[j].col(3) - center) / scale;
        for (int b = 0; b < 3; ++b) {
          double y = 0.0;
          for (int q = 0; q < 4; ++q) y += st.tn(4 * j + q, b) * a(q);
          st.tn(4 * j + 3, b) += x(b) - y;
        }
      }
    }
    for (int j = 0; j < mm; ++j) {
      (*T)[j] = FromNormalizedBlock(st.tn.data() + 4 * j, n4, center, scale);
    }
  };
  const bool recording = report != nullptr && record_energy;
  if (report != nullptr) {
    report->iterations = iterations;
    report->energy.clear();
    if (recording) report->energy.reserve(iterations);
  }
  for (int it = 0; it < iterations; ++it) {
    // Local step: R_kᵀ = the rotation nearest to S_k, i.e. the maximizer of tr(Rᵀ S_k) over
    // SO(3). The first local step of a solver is exact (SVD); after that each cluster starts from
    // its previous rotation and takes kRotationSteps ascent steps on tr(Rᵀ S_k) (Müller et al.
    // 2016, "A robust method to extract the rotational part of deformations"), keeping the
    // previous rotation if the steps did not improve it — so the local step never increases the
    // energy, and the outer iterations keep converging to the exact local/global fixed point.
    if (!st.warm_valid) {
      for (int k = 0; k < model.r; ++k) {
        Eigen::Matrix3f sk;
        for (int b = 0; b < 3; ++b) {
          for (int a = 0; a < 3; ++a) sk(a, b) = st.s(3 * k + a, b);
        }
        const Eigen::Matrix3f rk_t = ClosestRotation3f(sk);
        st.warm[k] = Eigen::Quaternionf(rk_t).normalized();
        for (int b = 0; b < 3; ++b) {
          for (int a = 0; a < 3; ++a) st.rt(3 * k + a, b) = rk_t(a, b);
        }
      }
      st.warm_valid = true;
    } else {
      for (int k = 0; k < model.r; ++k) {
        Eigen::Matrix3f sk;
        for (int b = 0; b < 3; ++b) {
          for (int a = 0; a < 3; ++a) sk(a, b) = st.s(3 * k + a, b);
        }
        const Eigen::Matrix3f rk_t = WarmRotationAscent(sk, &st.warm[k]);
        for (int b = 0; b < 3; ++b) {
          for (int a = 0; a < 3; ++a) st.rt(3 * k + a, b) = rk_t(a, b);
        }
      }
    }
    // Global step: T = Γ Rᵀ + T_c, then S = K̃ T (or directly S = K̃Γ Rᵀ + S_c).
    const bool last = it + 1 == iterations;
    if (st.combined) {
      if (!last) {
        std::memcpy(st.s.data(), st.sc.data(), sizeof(float) * r3 * 3);
        MulN3(st.G.data(), r3, r3, st.rt.data(), r3, st.s.data(), true);
      }
      if (last || recording) {
        std::memcpy(st.tf.data(), st.tc.data(), sizeof(float) * n4 * 3);
        MulN3(st.gamma.data(), n4, r3, st.rt.data(), r3, st.tf.data(), true);
      }
    } else {
      std::memcpy(st.tf.data(), st.tc.data(), sizeof(float) * n4 * 3);
      MulN3(st.gamma.data(), n4, r3, st.rt.data(), r3, st.tf.data(), true);
      if (!last) MulN3(st.kt.data(), r3, n4, st.tf.data(), n4, st.s.data(), false);
    }
    if (recording) {
      emit();
      report->energy.push_back(Energy(*T));
    }
  }
  if (iterations > 0 && !recording) {
    emit();
  } else if (iterations == 0) {
    emit();  // tf holds the warm start: only the constraints are imposed
  }
  return absl::OkStatus();
}

double FastSolver::Energy(const std::vector<Affine34>& T) const {
  const FastModel& model = *state_->model;
  const int mm = model.total();
  if (static_cast<int>(T.size()) != mm) return std::numeric_limits<double>::quiet_NaN();
  Eigen::MatrixXd tn(4 * mm, 3);
  for (int j = 0; j < mm; ++j) {
    ToNormalizedBlock(T[j], model.center, model.scale, tn.data() + 4 * j, 4 * mm);
  }
  return NormalizedEnergy(model, tn) * model.energy_scale;
}

}  // namespace skinning
