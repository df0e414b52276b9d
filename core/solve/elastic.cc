// The geometric elastic energy (Chao et al. 2010; Kavan & Sorkine 2012 Eq. 1-2) and its full
// local/global minimizer with pinned nodes (the "gold standard").
//
// Local step: per element, R_e = NearestRotation(S_e), S_e = Σ_k x_{n_k} q_kᵀ (corner vectors,
// see elastic.h). Global step: ∂E/∂X = L X − b with b_{n_k} += R_e q_k, so the free nodes solve
// L_ff X_f = b_f − L_fc X_c (one prefactored CHOLMOD Cholesky, 3 right-hand sides). Both steps
// minimize E(X, {R_e}) exactly in their block, so E is non-increasing. With a volume weight κ the
// local step also finds V_e (the nearest determinant-1 matrix) and the element's target becomes
// (R_e + κ V_e) / (1 + κ): the same argument holds for the combined energy.
#include "core/solve/elastic.h"

#include <Eigen/CholmodSupport>
#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <mutex>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "core/math/svd3.h"
#include "core/skinning/dqs.h"
#include "core/util/option_checks.h"
#include "core/util/parallel.h"
#include "core/util/status_macros.h"
#include "core/util/timing.h"

namespace skinning {

namespace {

using Clock = std::chrono::steady_clock;

// The 12 edges of a voxel cell in the x-fastest corner order (corner c = x + 2y + 4z).
constexpr int kVoxelEdges[12][2] = {{0, 1}, {2, 3}, {4, 5}, {6, 7}, {0, 2}, {1, 3},
                                    {4, 6}, {5, 7}, {0, 4}, {1, 5}, {2, 6}, {3, 7}};
constexpr int kTetEdges[6][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};

// The singular values s nearest to sigma (sorted, decreasing; sigma(2) may be negative for a
// reflection) with s0·s1·s2 = 1: Newton's method on the Lagrange conditions s − σ = λ ∇(s0 s1 s2),
// s0 s1 s2 = 1, started at σ with the smallest value clamped positive. Converges in a few steps
// for the strains of a posed limb; 20 steps at most.
Eigen::Vector3d NearestUnitProduct(const Eigen::Vector3d& sigma) {
  Eigen::Vector3d s = sigma;
  s(2) = std::max(s(2), 1e-3 * std::max(s(0), 1e-12));
  double lambda = 0.0;
  for (int it = 0; it < 20; ++it) {
    const Eigen::Vector3d g(s(1) * s(2), s(0) * s(2), s(0) * s(1));
    Eigen::Matrix3d H;
    H << 0, s(2), s(1), s(2), 0, s(0), s(1), s(0), 0;
    Eigen::Matrix4d J = Eigen::Matrix4d::Zero();
    J.topLeftCorner<3, 3>() = Eigen::Matrix3d::Identity() - lambda * H;
    J.topRightCorner<3, 1>() = -g;
    J.bottomLeftCorner<1, 3>() = g.transpose();
    Eigen::Vector4d r;
    r.head<3>() = s - sigma - lambda * g;
    r(3) = s.prod() - 1.0;
    if (r.norm() < 1e-14) break;
    const Eigen::Vector4d step = J.partialPivLu().solve(-r);
    s += step.head<3>();
    lambda += step(3);
  }
  return s;
}

// The energy of element e at X with its exact best targets. Without a volume term (kappa = 0):
// ½ ω Σ |d − R d̃|² with R the nearest rotation, and *target = R. With kappa > 0 (cube cells):
// plus kappa · ½ ω Σ |d − V d̃|², V the determinant-1 matrix nearest to F = 3 S / vol, and
// *target = (R + kappa V) / (1 + kappa), the matrix whose global step minimizes both terms.
double ElementEnergy(const ElasticEnergy& en, const RowMatrixX3d& X, int e, double kappa, Eigen::Matrix3d* target) {
  const int npe = static_cast<int>(en.elements.cols());
  Eigen::Matrix3d S = Eigen::Matrix3d::Zero();
  for (int k = 0; k < npe; ++k) {
    S.noalias() += X.row(en.elements(e, k)).transpose() * en.corner_vectors.row(e * npe + k);
  }
  const int epe = en.edges_per_element;
  auto edge_sum = [&](const Eigen::Matrix3d& A) {
    double sum = 0.0;
    for (int k = 0; k < epe; ++k) {
      const int r = e * epe + k;
      const Eigen::Vector3d d = (X.row(en.edges(r, 0)) - X.row(en.edges(r, 1))).transpose();
      sum += (d - A * en.rest_edges.row(r).transpose()).squaredNorm();
    }
    return 0.5 * en.weight(e) * sum;
  };
  if (kappa <= 0.0) {
    const Eigen::Matrix3d R = NearestRotation(S);
    if (target) *target = R;
    return edge_sum(R);
  }
  Eigen::Matrix3d U, V;
  Eigen::Vector3d sigma;
  Svd3(Eigen::Matrix3d(3.0 / en.volume(e) * S), &U, &sigma, &V);
  const Eigen::Matrix3d R = U * V.transpose();
  const Eigen::Matrix3d Vol = U * NearestUnitProduct(sigma).asDiagonal() * V.transpose();
  if (target) *target = (R + kappa * Vol) / (1.0 + kappa);
  return edge_sum(R) + kappa * edge_sum(Vol);
}

}  // namespace

absl::Status ElasticOptions::Validate() const {
  RETURN_IF_ERROR(CheckIterationLimits("options", max_iterations, relative_tolerance));
  RETURN_IF_ERROR(CheckAtLeast("options.threads", threads, 0));
  RETURN_IF_ERROR(CheckAtLeast("options.anderson_history", anderson_history, 0));
  RETURN_IF_ERROR(CheckNonNegative("options.first_start_enough", first_start_enough));
  RETURN_IF_ERROR(CheckNonNegative("options.floor_strain", floor_strain));
  return CheckNonNegative("options.volume_weight", volume_weight);
}

std::string ElasticReport::BriefReport() const {
  return absl::StrFormat("%d iterations (%s), energy %.6g → %.6g, %.3g s", iterations, stop_reason,
                         initial_energy, energy.empty() ? initial_energy : energy.back(), seconds);
}

absl::StatusOr<ElasticEnergy> BuildElasticEnergy(const VolumeDomain& domain) {
  const int n = domain.num_nodes();
  const int m = static_cast<int>(domain.elements.rows());
  const int npe = static_cast<int>(domain.elements.cols());
  if (m == 0 || n == 0) return absl::InvalidArgumentError("domain.elements: the domain has no elements");
  if (npe != 8 && npe != 4) {
    return absl::InvalidArgumentError(
        absl::StrFormat("domain.elements has %d columns; expected 8 (voxel cells) or 4 (tets)", npe));
  }
  ElasticEnergy en;
  en.rest = domain.nodes;
  en.elements = domain.elements;
  const int epe = npe == 8 ? 12 : 6;
  auto local_edge = [npe](int k, int side) { return npe == 8 ? kVoxelEdges[k][side] : kTetEdges[k][side]; };
  en.edges_per_element = epe;
  en.edges.resize(static_cast<int64_t>(m) * epe, 2);
  en.rest_edges.resize(static_cast<int64_t>(m) * epe, 3);
  en.corner_vectors = RowMatrixX3d::Zero(static_cast<int64_t>(m) * npe, 3);
  en.weight.resize(m);
  en.volume.resize(m);
  std::vector<Eigen::Triplet<double>> trip;
  trip.reserve(static_cast<size_t>(m) * epe * 4);
  for (int e = 0; e < m; ++e) {
    for (int k = 0; k < npe; ++k) {
      const int node = domain.elements(e, k);
      if (node < 0 || node >= n) {
        return absl::InvalidArgumentError(
            absl::StrFormat("domain.elements[%d][%d] = %d is out of range (%d nodes)", e, k, node, n));
      }
    }
    auto corner = [&](int k) -> Eigen::Vector3d { return domain.nodes.row(domain.elements(e, k)).transpose(); };
    double vol = 0.0;
    if (npe == 8) {
      vol = std::abs((corner(1) - corner(0)).dot((corner(2) - corner(0)).cross(corner(4) - corner(0))));
    } else {
      vol = std::abs((corner(1) - corner(0)).dot((corner(2) - corner(0)).cross(corner(3) - corner(0)))) / 6.0;
    }
    double sum_sq = 0.0;
    for (int k = 0; k < epe; ++k) {
      const int la = local_edge(k, 0), lb = local_edge(k, 1);
      const int r = e * epe + k;
      en.edges(r, 0) = domain.elements(e, la);
      en.edges(r, 1) = domain.elements(e, lb);
      en.rest_edges.row(r) = (corner(la) - corner(lb)).transpose();
      sum_sq += en.rest_edges.row(r).squaredNorm();
    }
    if (!(sum_sq > 0) || !(vol > 0) || !std::isfinite(vol)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("domain.elements[%d] is degenerate (volume %g, Σ|edge|² %g)", e, vol, sum_sq));
    }
    const double w = vol / sum_sq;
    en.weight(e) = w;
    en.volume(e) = vol;
    for (int k = 0; k < epe; ++k) {
      const int la = local_edge(k, 0), lb = local_edge(k, 1);
      const int r = e * epe + k;
      en.corner_vectors.row(e * npe + la) += w * en.rest_edges.row(r);
      en.corner_vectors.row(e * npe + lb) -= w * en.rest_edges.row(r);
      const int a = en.edges(r, 0), b = en.edges(r, 1);
      trip.emplace_back(a, a, w);
      trip.emplace_back(b, b, w);
      trip.emplace_back(a, b, -w);
      trip.emplace_back(b, a, -w);
    }
  }
  en.L.resize(n, n);
  en.L.setFromTriplets(trip.begin(), trip.end());
  en.L.makeCompressed();
  return en;
}

double ElasticEnergyValue(const ElasticEnergy& energy, const RowMatrixX3d& X) {
  const int m = energy.num_elements();
  std::vector<double> partial(8, 0.0);
  ParallelChunks(m, std::min(8, ResolveThreads(0)), [&](int b, int e, int t) {
    double s = 0.0;
    for (int i = b; i < e; ++i) s += ElementEnergy(energy, X, i, 0.0, nullptr);
    partial[t] = s;
  });
  double sum = 0.0;
  for (double p : partial) sum += p;
  return sum;
}

// ---------------------------------------------------------------------------------------------

struct ElasticModel::Impl {
  VolumeDomain domain;
  std::vector<std::vector<int>> handle_nodes;
  ElasticEnergy energy;
  std::vector<int> free_index;   // #N: index among the free nodes, or -1 when pinned
  std::vector<int> pinned_index; // #N: index among the pinned nodes, or -1 when free
  std::vector<int> free_nodes;
  std::vector<int> pinned_nodes;   // in order of pinned_index
  std::vector<int> pinned_joint;   // joint of each pinned node
  Eigen::SparseMatrix<double> L_fc;  // #free by #pinned
  Eigen::MatrixXd start_weights;     // #N by #joints weights of the default start
  mutable std::mutex solver_mutex;
  mutable Eigen::CholmodSupernodalLLT<Eigen::SparseMatrix<double>> solver;  // of L_ff
};

ElasticModel::ElasticModel() : impl_(std::make_unique<Impl>()) {}
ElasticModel::~ElasticModel() = default;

absl::StatusOr<std::shared_ptr<const ElasticModel>> ElasticModel::Create(
    VolumeDomain domain, std::vector<std::vector<int>> handle_nodes, Eigen::MatrixXd start_weights,
    const Progress& progress) {
  progress.Report("elastic energy", 0.0);
  ASSIGN_OR_RETURN(ElasticEnergy energy, BuildElasticEnergy(domain));
  const int n = domain.num_nodes();
  std::shared_ptr<ElasticModel> model(new ElasticModel());
  Impl& im = *model->impl_;
  im.free_index.assign(n, -1);
  im.pinned_index.assign(n, -1);
  for (int j = 0; j < static_cast<int>(handle_nodes.size()); ++j) {
    for (int i = 0; i < static_cast<int>(handle_nodes[j].size()); ++i) {
      const int v = handle_nodes[j][i];
      if (v < 0 || v >= n) {
        return absl::InvalidArgumentError(
            absl::StrFormat("handle_nodes[%d][%d] = %d is out of range (%d nodes)", j, i, v, n));
      }
      if (im.pinned_index[v] >= 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "handle_nodes[%d][%d] = %d is already pinned to joint %d", j, i, v, im.pinned_joint[im.pinned_index[v]]));
      }
      im.pinned_index[v] = static_cast<int>(im.pinned_nodes.size());
      im.pinned_nodes.push_back(v);
      im.pinned_joint.push_back(j);
    }
  }
  if (im.pinned_nodes.empty()) return absl::InvalidArgumentError("handle_nodes: no pinned node at all");
  if (start_weights.rows() != n ||
      start_weights.cols() != static_cast<Eigen::Index>(handle_nodes.size())) {
    return absl::InvalidArgumentError(
        absl::StrFormat("start_weights is %d by %d; expected %d by %d (nodes by joints)",
                        start_weights.rows(), start_weights.cols(), n, handle_nodes.size()));
  }
  if (!start_weights.allFinite())
    return absl::InvalidArgumentError("start_weights has a non-finite entry");
  RETURN_IF_ERROR(progress.CheckCancelled());
  // Every connected part (through element edges, i.e. L's pattern) needs a pinned node.
  {
    std::vector<uint8_t> seen(n, 0);
    std::vector<int> stack(im.pinned_nodes.begin(), im.pinned_nodes.end());
    for (int v : stack) seen[v] = 1;
    while (!stack.empty()) {
      const int v = stack.back();
      stack.pop_back();
      for (Eigen::SparseMatrix<double>::InnerIterator it(energy.L, v); it; ++it) {
        if (!seen[it.row()]) {
          seen[it.row()] = 1;
          stack.push_back(static_cast<int>(it.row()));
        }
      }
    }
    int unreached = 0, first = -1;
    for (int v = 0; v < n; ++v) {
      if (!seen[v]) {
        ++unreached;
        if (first < 0) first = v;
      }
    }
    if (unreached > 0) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "elastic model: %d domain nodes (e.g. node %d at (%g, %g, %g)) lie in a connected part without "
          "pinned bone nodes, so their positions are undetermined",
          unreached, first, domain.nodes(first, 0), domain.nodes(first, 1), domain.nodes(first, 2)));
    }
  }
  for (int v = 0; v < n; ++v) {
    if (im.pinned_index[v] < 0) {
      im.free_index[v] = static_cast<int>(im.free_nodes.size());
      im.free_nodes.push_back(v);
    }
  }
  const int nf = static_cast<int>(im.free_nodes.size());
  const int np = static_cast<int>(im.pinned_nodes.size());
  std::vector<Eigen::Triplet<double>> tff, tfc;
  for (int c = 0; c < n; ++c) {
    for (Eigen::SparseMatrix<double>::InnerIterator it(energy.L, c); it; ++it) {
      const int r = static_cast<int>(it.row());
      if (im.free_index[r] < 0) continue;
      if (im.free_index[c] >= 0) {
        tff.emplace_back(im.free_index[r], im.free_index[c], it.value());
      } else {
        tfc.emplace_back(im.free_index[r], im.pinned_index[c], it.value());
      }
    }
  }
  Eigen::SparseMatrix<double> L_ff(nf, nf);
  L_ff.setFromTriplets(tff.begin(), tff.end());
  im.L_fc.resize(nf, np);
  im.L_fc.setFromTriplets(tfc.begin(), tfc.end());
  progress.Report("factorize", 0.3);
  if (nf > 0) {
    im.solver.compute(L_ff);
    if (im.solver.info() != Eigen::Success) {
      return absl::FailedPreconditionError("elastic model: the free-node Laplacian L_ff is not positive definite");
    }
  }
  RETURN_IF_ERROR(progress.CheckCancelled());
  im.start_weights = std::move(start_weights);
  im.energy = std::move(energy);
  im.domain = std::move(domain);
  im.handle_nodes = std::move(handle_nodes);
  progress.Report("factorize", 1.0);
  return std::shared_ptr<const ElasticModel>(std::move(model));
}

absl::StatusOr<RowMatrixX3d> ElasticModel::DefaultStart(const std::vector<Eigen::Affine3d>& T) const {
  const Impl& im = *impl_;
  if (T.size() != im.handle_nodes.size()) {
    return absl::InvalidArgumentError(absl::StrFormat("T has %d transforms; the model has %d joints",
                                                      T.size(), im.handle_nodes.size()));
  }
  RowMatrixX3d X;
  Dqs(im.domain.nodes, im.start_weights, T, &X);
  for (size_t p = 0; p < im.pinned_nodes.size(); ++p) {
    const int v = im.pinned_nodes[p];
    X.row(v) = (T[im.pinned_joint[p]] * im.domain.nodes.row(v).transpose()).transpose();
  }
  return X;
}

absl::StatusOr<RowMatrixX3d> ElasticModel::CarryForward(const RowMatrixX3d& X_prev,
                                                        const std::vector<Eigen::Affine3d>& T_prev,
                                                        const std::vector<Eigen::Affine3d>& T) const {
  const Impl& im = *impl_;
  if (T.size() != im.handle_nodes.size() || T_prev.size() != T.size()) {
    return absl::InvalidArgumentError(absl::StrFormat("T has %d and T_prev %d transforms; the model has %d joints",
                                                      T.size(), T_prev.size(), im.handle_nodes.size()));
  }
  if (X_prev.rows() != im.domain.num_nodes())
    return absl::InvalidArgumentError(
        absl::StrFormat("X_prev has %d rows; the domain has %d nodes", X_prev.rows(), im.domain.num_nodes()));
  std::vector<Eigen::Affine3d> change(T.size());
  for (size_t j = 0; j < T.size(); ++j) change[j] = T[j] * T_prev[j].inverse();
  RowMatrixX3d X;
  Dqs(X_prev, im.start_weights, change, &X);
  return X;
}

namespace {

// Per joint the change A·B⁻¹ as (rotation vector, translation / length): 6 numbers per joint.
Eigen::VectorXd JointMotion(const std::vector<Eigen::Affine3d>& A, const std::vector<Eigen::Affine3d>& B,
                            double length) {
  Eigen::VectorXd m(6 * A.size());
  for (size_t j = 0; j < A.size(); ++j) {
    const Eigen::Affine3d change = A[j] * B[j].inverse();
    const Eigen::AngleAxisd aa(Eigen::Matrix3d(change.linear()));
    m.segment<3>(6 * j) = aa.angle() * aa.axis();
    m.segment<3>(6 * j + 3) = change.translation() / length;
  }
  return m;
}

}  // namespace

absl::StatusOr<ElasticModel::Prediction> ElasticModel::NextStart(const FrameHistory& last,
                                                                 const std::vector<Eigen::Affine3d>& T) const {
  Prediction p;
  ASSIGN_OR_RETURN(p.carried, CarryForward(last.X, last.T, T));
  p.enough = last.energy > 0.0 ? 1.25 * last.energy : 0.0;
  p.start = p.carried;
  if (last.correction.size() == 0) return p;
  if (last.T_before.size() != T.size() || last.correction.rows() != last.X.rows() || last.correction.cols() != 3)
    return absl::InvalidArgumentError(absl::StrFormat(
        "the history's T_before has %d transforms and its correction %d rows; %d and %d expected",
        last.T_before.size(), last.correction.rows(), T.size(), last.X.rows()));
  const RowMatrixX3d& nodes = impl_->domain.nodes;
  const double length = std::max((nodes.colwise().maxCoeff() - nodes.colwise().minCoeff()).norm(), 1e-12);
  const Eigen::VectorXd was = JointMotion(last.T, last.T_before, length);
  const Eigen::VectorXd now = JointMotion(T, last.T, length);
  const double norm2 = was.squaredNorm();
  if (!(norm2 > 1e-24) || !now.allFinite()) return p;
  p.continuation = std::clamp(now.dot(was) / norm2, -1.0, 2.0);
  if (p.continuation == 0.0) return p;
  // DQS moves each node by its own blended rigid motion, so carrying X + s·C is carrying X plus
  // the blended rotations applied to s·C.
  const RowMatrixX3d shifted = last.X + p.continuation * last.correction;
  ASSIGN_OR_RETURN(p.start, CarryForward(shifted, last.T, T));
  p.predicted = true;
  return p;
}

std::vector<const RowMatrixX3d*> ElasticModel::Prediction::Starts() const {
  if (predicted) return {&start, &carried};
  return {&carried};
}

ElasticModel::FrameHistory ElasticModel::NextHistory(const FrameHistory& last, const Prediction& prediction,
                                                     std::vector<Eigen::Affine3d> T, RowMatrixX3d X,
                                                     double energy) {
  FrameHistory h;
  h.energy = energy;
  h.correction = X - prediction.carried;
  h.T = std::move(T);
  h.X = std::move(X);
  h.T_before = last.T;
  return h;
}

absl::StatusOr<RowMatrixX3d> ElasticModel::Solve(const std::vector<Eigen::Affine3d>& T, const RowMatrixX3d* initial,
                                                 const ElasticOptions& options, ElasticReport* report,
                                                 const Progress& progress) const {
  std::vector<const RowMatrixX3d*> starts;
  if (initial != nullptr) starts.push_back(initial);
  return Solve(T, starts, options, report, progress);
}

absl::StatusOr<RowMatrixX3d> ElasticModel::Solve(const std::vector<Eigen::Affine3d>& T,
                                                 const std::vector<const RowMatrixX3d*>& starts,
                                                 const ElasticOptions& options, ElasticReport* report,
                                                 const Progress& progress) const {
  const auto t0 = Clock::now();
  RETURN_IF_ERROR(options.Validate());
  const Impl& im = *impl_;
  const int n = im.domain.num_nodes();
  if (T.size() != im.handle_nodes.size()) {
    return absl::InvalidArgumentError(absl::StrFormat("T has %d transforms; the model has %d joints",
                                                      T.size(), im.handle_nodes.size()));
  }
  for (size_t j = 0; j < T.size(); ++j) {
    if (!T[j].matrix().allFinite()) {
      return absl::InvalidArgumentError(absl::StrFormat("T[%d] has a non-finite entry", j));
    }
  }
  if (options.volume_weight > 0) {
    // The volume term's projection is exact only where Σ d̃ d̃ᵀ is isotropic: cube cells.
    const ElasticEnergy& en = im.energy;
    bool cubes = en.elements.cols() == 8;
    for (int k = 0; cubes && k < en.edges_per_element; ++k) {
      cubes = std::abs(en.rest_edges.row(k).norm() - en.rest_edges.row(0).norm()) <= 1e-9 * en.rest_edges.row(0).norm();
    }
    if (!cubes) {
      return absl::InvalidArgumentError(
          "options.volume_weight > 0 needs a voxel domain of cube cells; this domain has other elements");
    }
  }
  for (size_t k = 0; k < starts.size(); ++k) {
    // "initial" for the one-start Solve, whose callers name it so.
    const std::string what = starts.size() == 1 ? "initial" : absl::StrFormat("starts[%d]", k);
    if (starts[k] == nullptr) return absl::InvalidArgumentError(what + " is null");
    if (starts[k]->rows() != n) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s has %d rows; the domain has %d nodes", what, starts[k]->rows(), n));
    }
    if (!starts[k]->allFinite()) return absl::InvalidArgumentError(what + " has a non-finite coordinate");
  }
  const int np = static_cast<int>(im.pinned_nodes.size());
  const int nf = static_cast<int>(im.free_nodes.size());
  Eigen::MatrixXd Xc(np, 3);
  for (int p = 0; p < np; ++p) {
    const int v = im.pinned_nodes[p];
    const Eigen::Vector3d rest = im.domain.nodes.row(v).transpose();
    Xc.row(p) = (options.pin_map ? options.pin_map(im.pinned_joint[p], rest) : T[im.pinned_joint[p]] * rest).transpose();
  }
  const Eigen::MatrixXd rhs_pinned = -(im.L_fc * Xc);  // #free by 3

  RowMatrixX3d X;  // the iterate (first each candidate start, then the chosen one)
  const ElasticEnergy& en = im.energy;
  const int m = en.num_elements();
  const int npe = static_cast<int>(en.elements.cols());
  const int threads = std::min(ResolveThreads(options.threads), 16);
  const SingleThreadedBlas single_threaded_blas(threads > 1);  // the local steps run on `threads`
  std::vector<RowMatrixX3d> b_parts(threads);
  std::vector<double> e_parts(threads);
  // Local step at X: the rotations' contributions to b and E(X) (exact rotations).
  auto local = [&](Eigen::MatrixXd* b) -> double {
    ParallelChunks(m, threads, [&](int begin, int end, int t) {
      RowMatrixX3d& bt = b_parts[t];
      bt.setZero(n, 3);
      double s = 0.0;
      Eigen::Matrix3d R;
      for (int e = begin; e < end; ++e) {
        s += ElementEnergy(en, X, e, options.volume_weight, &R);
        for (int k = 0; k < npe; ++k) {
          bt.row(en.elements(e, k)).noalias() += (R * en.corner_vectors.row(e * npe + k).transpose()).transpose();
        }
      }
      e_parts[t] = s;
    });
    double E = 0.0;
    RowMatrixX3d sum = RowMatrixX3d::Zero(n, 3);
    for (int t = 0; t < threads; ++t) {
      if (b_parts[t].rows() == n) sum += b_parts[t];
      E += e_parts[t];
      e_parts[t] = 0.0;
      b_parts[t].resize(0, 3);
    }
    b->resize(nf, 3);
    for (int f = 0; f < nf; ++f) b->row(f) = sum.row(im.free_nodes[f]);
    return E;
  };

  ElasticReport rep;
  // The start: the lowest energy among the given starts (and the default start), each with its
  // pinned nodes placed; X, b and E_prev are the chosen start's.
  Eigen::MatrixXd b;
  double E_prev = 0.0;
  const int candidates = static_cast<int>(starts.size()) + ((starts.empty() || options.keep_lower_start) ? 1 : 0);
  for (int k = 0; k < candidates; ++k) {
    const bool is_default = k == static_cast<int>(starts.size());
    RowMatrixX3d Xk;
    if (is_default) {
      ASSIGN_OR_RETURN(Xk, DefaultStart(T));
    } else {
      Xk = *starts[k];
    }
    for (int p = 0; p < np; ++p) Xk.row(im.pinned_nodes[p]) = Xc.row(p);
    std::swap(X, Xk);  // local() reads X
    Eigen::MatrixXd bk;
    const double Ek = local(&bk);
    rep.starts_tried = k + 1;
    if (k == 0 || Ek < E_prev) {
      E_prev = Ek;
      b = std::move(bk);
      rep.start_index = is_default ? -1 : k;
    } else {
      std::swap(X, Xk);  // keep the better start in X
    }
    if (k == 0 && !is_default && options.first_start_enough > 0.0 && Ek <= options.first_start_enough) break;
  }
  rep.initial_energy = E_prev;
  rep.stop_reason = "max_iterations";
  const double energy_floor = 0.5 * options.floor_strain * options.floor_strain * en.volume.sum();

  // Anderson acceleration (Peng et al. 2018, "Anderson Acceleration for Geometry Optimization
  // and Physics Simulation", Sec. 4) of the fixed-point map G(x) = global(local(x)) on the free
  // nodes x: with the residual f = G(x) − x and the last m differences ΔF, ΔG of accepted
  // iterates, x⁺ = G(x) − ΔG θ, θ = argmin |f − ΔF θ|. Safeguard: x⁺ is kept only when its
  // energy (the next local step's) is below the current one; otherwise the plain step G(x)
  // is taken (E non-increasing, as without acceleration) and the history restarts.
  const int m_aa = options.anderson_history;
  const int dim = 3 * nf;
  Eigen::MatrixXd dF, dG;  // dim by m_aa, columns used circularly
  Eigen::MatrixXd gram = Eigen::MatrixXd::Zero(std::max(m_aa, 1), std::max(m_aa, 1));
  if (m_aa > 0 && nf > 0) {
    dF.resize(dim, m_aa);
    dG.resize(dim, m_aa);
  }
  Eigen::VectorXd x_cur(dim), f_prev, g_prev;
  int history = 0, next_col = 0;
  // Convergence is judged on plain steps only: an accelerated step may lower E by little while
  // the iterate is still far from the fixed point (stagnation), so a small accelerated decrease
  // is followed by a plain step (and a fresh history) before stopping.
  bool force_plain = false;
  bool accelerated = false;
  auto free_positions = [&](Eigen::VectorXd* out) {
    out->resize(dim);
    for (int f = 0; f < nf; ++f) out->segment<3>(3 * f) = X.row(im.free_nodes[f]).transpose();
  };
  auto set_free = [&](const Eigen::VectorXd& v) {
    for (int f = 0; f < nf; ++f) X.row(im.free_nodes[f]) = v.segment<3>(3 * f).transpose();
  };
  if (m_aa > 0 && nf > 0) free_positions(&x_cur);

  for (int it = 0; it < options.max_iterations; ++it) {
    RETURN_IF_ERROR(progress.CheckCancelled());
    double E = E_prev;
    if (nf > 0) {
      Eigen::MatrixXd rhs = b + rhs_pinned;
      Eigen::MatrixXd Xf;
      {
        std::lock_guard<std::mutex> lock(im.solver_mutex);
        Xf = im.solver.solve(rhs);
      }
      if (m_aa == 0) {
        for (int f = 0; f < nf; ++f) X.row(im.free_nodes[f]) = Xf.row(f);
        E = local(&b);
      } else {
        Eigen::VectorXd g(dim);
        for (int f = 0; f < nf; ++f) g.segment<3>(3 * f) = Xf.row(f).transpose();
        Eigen::VectorXd fk = g - x_cur;
        if (f_prev.size() == dim) {
          dF.col(next_col) = fk - f_prev;
          dG.col(next_col) = g - g_prev;
          history = std::min(history + 1, m_aa);
          // The Gram matrix ΔFᵀΔF, updated in the new column's row and column only.
          for (int j = 0; j < history; ++j) gram(next_col, j) = gram(j, next_col) = dF.col(next_col).dot(dF.col(j));
          next_col = (next_col + 1) % m_aa;
        }
        f_prev = fk;
        g_prev = g;
        accelerated = false;
        if (history > 0 && !force_plain) {
          // θ from the normal equations of the small least-squares problem, with a tiny
          // Tikhonov term for nearly dependent columns.
          const auto F = dF.leftCols(history);
          Eigen::MatrixXd A = gram.topLeftCorner(history, history);
          A.diagonal().array() += 1e-10 * std::max(A.diagonal().maxCoeff(), 1e-300);
          const Eigen::VectorXd theta = A.ldlt().solve(F.transpose() * fk);
          Eigen::VectorXd candidate = g - dG.leftCols(history) * theta;
          if (candidate.allFinite()) {
            set_free(candidate);
            const double E_candidate = local(&b);
            if (E_candidate < E_prev) {
              x_cur = std::move(candidate);
              E = E_candidate;
              accelerated = true;
            } else {
              ++rep.anderson_rejected;
            }
          }
        }
        if (!accelerated) {
          set_free(g);
          E = local(&b);
          x_cur = std::move(g);
          if (history > 0) {
            history = 0;
            next_col = 0;
            f_prev.resize(0);  // restart the history at this point
          }
        }
      }
    } else {
      E = local(&b);
    }
    rep.energy.push_back(E);
    rep.iterations = it + 1;
    progress.Report("elastic solve", static_cast<double>(it + 1) / std::max(1, options.max_iterations));
    bool done = E_prev - E <= options.relative_tolerance * std::max(E_prev, energy_floor);
    force_plain = false;
    if (done && accelerated) {
      done = false;
      force_plain = true;
    }
    E_prev = E;
    if (done) {
      rep.stop_reason = "converged";
      break;
    }
  }
  rep.seconds = SecondsSince(t0);
  if (report) *report = std::move(rep);
  return X;
}

double ElasticModel::Energy(const RowMatrixX3d& X) const { return ElasticEnergyValue(impl_->energy, X); }
RowMatrixX3d ElasticModel::ToMesh(const RowMatrixX3d& X) const { return impl_->domain.to_mesh * X; }
const VolumeDomain& ElasticModel::domain() const { return impl_->domain; }
const std::vector<std::vector<int>>& ElasticModel::handle_nodes() const { return impl_->handle_nodes; }
const ElasticEnergy& ElasticModel::energy() const { return impl_->energy; }

}  // namespace skinning
