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
#include <random>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "core/skinning/weights.h"
#include "core/solve/fast_model.h"
#include "core/util/option_checks.h"
#include "core/util/status_macros.h"
#include "core/util/timing.h"

namespace skinning {
namespace {

using Clock = std::chrono::steady_clock;
using fast_internal::AppendExtraWeights;
using fast_internal::KMeans;
using fast_internal::PlaceSeeds;

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

}  // namespace

absl::Status FastOptions::Validate() const {
  if (energy != FastEnergy::kSurface && energy != FastEnergy::kVolumetric)
    return absl::InvalidArgumentError(
        absl::StrFormat("options.fast.energy = %d is not a FAST energy", static_cast<int>(energy)));
  RETURN_IF_ERROR(CheckAtLeast("options.fast.clusters", clusters, 0));
  RETURN_IF_ERROR(CheckAtLeast("options.fast.extra_weights", extra_weights, 0));
  RETURN_IF_ERROR(CheckAtLeast("options.fast.kmeans_iterations", kmeans_iterations, 1));
  if (energy == FastEnergy::kVolumetric) return domain.Validate();
  return absl::OkStatus();
}

std::string FastReport::BriefReport() const {
  return absl::StrFormat("%d handles, %d extra handles, %d rotation clusters", handles,
                         extra_handles, clusters);
}

absl::StatusOr<FastModelPtr> PrecomputeFast(const Mesh& mesh, const Eigen::MatrixXd& W,
                                            const FastOptions& options, FastReport* report,
                                            const Progress& progress) {
  const auto start = Clock::now();
  RETURN_IF_ERROR(options.Validate());
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
    report->seconds = SecondsSince(start);
  }
  return FastModelPtr(std::move(model));
}

int FastModelHandles(const FastModel& model) { return model.m; }
int FastModelTotalHandles(const FastModel& model) { return model.total(); }
int FastModelClusters(const FastModel& model) { return model.r; }
const Eigen::MatrixXd& FastModelWeights(const FastModel& model) { return model.weights; }

}  // namespace skinning
