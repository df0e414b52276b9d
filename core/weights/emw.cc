// Energy-minimizing weights (Kavan & Sorkine 2012, Eq. 3).
//
// One unknown per node, w (the rotating transform's LBS weight; the fixed transform gets 1 − w).
// Sample i deforms node n to v_in = x̃_n + w_n u_in, u_in = S_i x̃_n − x̃_n. With the corner
// vectors q of elastic.h (S_e(X) = Σ_k x_{n_k} q_kᵀ), for element e and sample i:
//   S_ie = S0_e + Σ_k w_{n_k} u_{i n_k} q_kᵀ,   S0_e = Σ_k x̃_{n_k} q_kᵀ,
// and the block objective (rotations R_ie fixed) is the quadratic
//   F(w, R) = Σ_i Σ_e Σ_{edges} ½ ω_e |w_a u_ia − w_b u_ib + (I − R_ie) d̃|²
//           = ½ wᵀ Y w + cᵀ w + k0,
//   Y_rc = L_rc Σ_i u_ir · u_ic            (Σ_i D_iᵀ (L⊗I3) D_i: the sparsity of L)
//   c_{n_k} += u_{i n_k} · (I − R_ie) q_k   k0 += tr(S0_e) − tr(R_ieᵀ S0_e).
// (Σ_edges ±(I − R) d̃ ω around node n_k is (I − R) q_k; ½ ω Σ |(I − R) d̃|² = tr S0 − tr(Rᵀ S0).)
// Y gets a tiny Dirichlet term μ L so that nodes no sample moves (u = 0, e.g. on the twist axis)
// take the harmonic interpolation of their neighbours instead of making Y_ff singular.
#include "core/weights/emw.h"

#include <Eigen/CholmodSupport>
#include <Eigen/Geometry>
#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <queue>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "core/math/rotation_ascent.h"
#include "core/math/svd3.h"
#include "core/util/option_checks.h"
#include "core/util/parallel.h"
#include "core/util/status_macros.h"
#include "core/util/timing.h"

namespace skinning {

absl::Status EmwOptions::Validate() const {
  RETURN_IF_ERROR(CheckIterationLimits("options.emw", max_iterations, relative_tolerance));
  if (!(sample_angle > 0 && sample_angle <= M_PI))
    return absl::InvalidArgumentError(
        absl::StrFormat("options.emw.sample_angle = %g must be in (0, π]", sample_angle));
  return CheckAtLeast("options.emw.threads", threads, 0);
}

std::string EmwReport::BriefReport() const {
  return absl::StrFormat("%d iterations (%s), weights in [%.4g, %.4g], %.3g s", iterations, stop_reason,
                         min_weight, max_weight, seconds);
}

namespace {

using Clock = std::chrono::steady_clock;

// Warm-started rotations after the first iteration (core/math/rotation_ascent.h).
constexpr int kRotationSteps = 4;

absl::Status CheckNodes(const std::vector<int>& nodes, const char* field, int n, uint8_t tag,
                        std::vector<uint8_t>* role) {
  if (nodes.empty()) return absl::InvalidArgumentError(absl::StrFormat("%s is empty", field));
  for (size_t i = 0; i < nodes.size(); ++i) {
    const int v = nodes[i];
    if (v < 0 || v >= n) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s[%d] = %d is out of range (%d nodes)", field, i, v, n));
    }
    if ((*role)[v] != 0 && (*role)[v] != tag) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s[%d] = %d is both a moving and a fixed node", field, i, v));
    }
    (*role)[v] = tag;
  }
  return absl::OkStatus();
}

// Dijkstra distances from `sources` over the element edges (rest lengths); +inf when unreached.
std::vector<double> GraphDistances(const ElasticEnergy& energy, const std::vector<int>& sources) {
  const int n = energy.num_nodes();
  std::vector<double> dist(n, std::numeric_limits<double>::infinity());
  using Item = std::pair<double, int>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> queue;
  for (int v : sources) {
    dist[v] = 0.0;
    queue.emplace(0.0, v);
  }
  while (!queue.empty()) {
    const auto [d, v] = queue.top();
    queue.pop();
    if (d > dist[v]) continue;
    for (Eigen::SparseMatrix<double>::InnerIterator it(energy.L, v); it; ++it) {
      const int u = static_cast<int>(it.row());
      if (u == v) continue;
      const double nd = d + (energy.rest.row(u) - energy.rest.row(v)).norm();
      if (nd < dist[u]) {
        dist[u] = nd;
        queue.emplace(nd, u);
      }
    }
  }
  return dist;
}

}  // namespace

std::vector<Eigen::Affine3d> EmwSamples(const JointFrame& frame, EmwKind kind, double angle) {
  std::vector<Eigen::Vector3d> axes;
  if (kind == EmwKind::kSwing) {
    axes = {Eigen::Vector3d::UnitX(), Eigen::Vector3d::UnitY()};
  } else {
    axes = {Eigen::Vector3d::UnitZ()};
  }
  std::vector<Eigen::Affine3d> samples;
  for (const Eigen::Vector3d& axis : axes) {
    for (double sign : {-1.0, 1.0}) {
      const Eigen::Matrix3d R = Eigen::AngleAxisd(sign * angle, axis).toRotationMatrix();
      const Eigen::Matrix3d S = frame.axes * R * frame.axes.transpose();
      Eigen::Affine3d A = Eigen::Affine3d::Identity();
      A.linear() = S;
      A.translation() = frame.center - S * frame.center;
      samples.push_back(A);
    }
  }
  return samples;
}

namespace {

absl::Status ValidateEmw(const ElasticEnergy& energy, const JointFrame& frame,
                   const std::vector<int>& moving, const std::vector<int>& fixed,
                   const EmwOptions& options, std::vector<uint8_t>* role_out) {
  RETURN_IF_ERROR(options.Validate());
  const int n = energy.num_nodes();
  const int m = energy.num_elements();
  if (n == 0 || m == 0) return absl::InvalidArgumentError("energy: the domain has no elements");
  if (!frame.center.allFinite() || !frame.axes.allFinite()) {
    return absl::InvalidArgumentError(absl::StrFormat("frame of joint %d is not finite", frame.joint));
  }
  std::vector<uint8_t>& role = *role_out;
  role.assign(n, 0);  // 1 moving, 2 fixed
  RETURN_IF_ERROR(CheckNodes(moving, "moving", n, 1, &role));
  RETURN_IF_ERROR(CheckNodes(fixed, "fixed", n, 2, &role));
  return absl::OkStatus();
}

using CholmodSolver = Eigen::CholmodSupernodalLLT<Eigen::SparseMatrix<double>>;

// The solve for one kind after validation. `solver` keeps the symbolic analysis of Y_ff across
// calls with the same free nodes (*analyzed tells whether it has one).
absl::StatusOr<Eigen::VectorXd> SolveEmw(const ElasticEnergy& energy, const JointFrame& frame, EmwKind kind,
                                         const std::vector<uint8_t>& role, const std::vector<int>& moving,
                                         const std::vector<int>& fixed, const EmwOptions& options,
                                         EmwReport* report, const Progress& progress, CholmodSolver& solver,
                                         bool* analyzed) {
  const auto t0 = Clock::now();
  const int n = energy.num_nodes();
  const int m = energy.num_elements();
  // Samples and node displacements u_i = S_i x̃ − x̃.
  const std::vector<Eigen::Affine3d> samples = EmwSamples(frame, kind, options.sample_angle);
  const int k = static_cast<int>(samples.size());
  std::vector<RowMatrixX3d> U(k);
  for (int i = 0; i < k; ++i) {
    U[i] = ((energy.rest * samples[i].linear().transpose()).rowwise() + samples[i].translation().transpose()) -
           energy.rest;
  }
  // Y = Σ_i D_iᵀ (L⊗I3) D_i + μ L, the pattern of L.
  Eigen::SparseMatrix<double> Y = energy.L;
  double tr_y = 0.0, tr_l = 0.0;
  for (int c = 0; c < n; ++c) {
    for (Eigen::SparseMatrix<double>::InnerIterator it(Y, c); it; ++it) {
      const int r = static_cast<int>(it.row());
      double dot = 0.0;
      for (int i = 0; i < k; ++i) dot += U[i].row(r).dot(U[i].row(c));
      if (r == c) tr_l += it.value();
      it.valueRef() *= dot;
      if (r == c) tr_y += it.value();
    }
  }
  const double mu = 1e-8 * tr_y / std::max(tr_l, 1e-300);
  Y += mu * energy.L;

  // Free / constrained split.
  std::vector<int> free_index(n, -1), free_nodes;
  Eigen::VectorXd w = Eigen::VectorXd::Zero(n);
  for (int v = 0; v < n; ++v) {
    if (role[v] == 0) {
      free_index[v] = static_cast<int>(free_nodes.size());
      free_nodes.push_back(v);
    } else if (role[v] == 1) {
      w(v) = 1.0;
    }
  }
  const int nf = static_cast<int>(free_nodes.size());
  std::vector<Eigen::Triplet<double>> tff;
  Eigen::VectorXd rhs_c = Eigen::VectorXd::Zero(nf);  // −Y_fc w_c
  for (int c = 0; c < n; ++c) {
    for (Eigen::SparseMatrix<double>::InnerIterator it(Y, c); it; ++it) {
      const int fr = free_index[it.row()];
      if (fr < 0) continue;
      if (free_index[c] >= 0) {
        tff.emplace_back(fr, free_index[c], it.value());
      } else {
        rhs_c(fr) -= it.value() * w(c);
      }
    }
  }
  // The start: w = d_fixed / (d_fixed + d_moving) with graph distances over the element edges
  // (1 on the moving bones' side, a smooth transition at the joint). Starting from the
  // minimizer for identity rotations instead ends in a poor local minimum for twists (w ≈ 0 off
  // the bone axis, which the axis nodes do not prevent since twists hardly move them).
  {
    const std::vector<double> dm = GraphDistances(energy, moving), df = GraphDistances(energy, fixed);
    for (int f = 0; f < nf; ++f) {
      const int v = free_nodes[f];
      const double sum = dm[v] + df[v];
      w(v) = sum > 0 && std::isfinite(sum) ? df[v] / sum : 0.5;
    }
  }
  EmwReport rep;
  const auto tf = Clock::now();
  if (nf > 0) {
    Eigen::SparseMatrix<double> Y_ff(nf, nf);
    Y_ff.setFromTriplets(tff.begin(), tff.end());
    const auto ta = Clock::now();
    if (!*analyzed) {
      solver.analyzePattern(Y_ff);
      *analyzed = true;
    }
    rep.analyze_seconds = SecondsSince(ta);
    solver.factorize(Y_ff);
    if (solver.info() != Eigen::Success) {
      return absl::FailedPreconditionError(
          "energy-minimizing weights: Y_ff is singular (a part of the domain has no moving or fixed node)");
    }
  }
  rep.factorize_seconds = SecondsSince(tf);
  auto global = [&](const Eigen::VectorXd& c) {
    if (nf == 0) return;
    Eigen::VectorXd rhs = rhs_c;
    for (int f = 0; f < nf; ++f) rhs(f) -= c(free_nodes[f]);
    const Eigen::VectorXd wf = solver.solve(rhs);
    for (int f = 0; f < nf; ++f) w(free_nodes[f]) = wf(f);
  };
  RETURN_IF_ERROR(progress.CheckCancelled());

  // Local step state: per element and sample a rotation (warm start after the first step).
  const int npe = static_cast<int>(energy.elements.cols());
  std::vector<Eigen::Matrix3d> S0(m);
  for (int e = 0; e < m; ++e) {
    Eigen::Matrix3d s = Eigen::Matrix3d::Zero();
    for (int j = 0; j < npe; ++j) {
      s.noalias() += energy.rest.row(energy.elements(e, j)).transpose() * energy.corner_vectors.row(e * npe + j);
    }
    S0[e] = s;
  }
  std::vector<Eigen::Quaterniond> rot(static_cast<size_t>(m) * k, Eigen::Quaterniond::Identity());
  const int threads = std::min(ResolveThreads(options.threads), 16);
  const SingleThreadedBlas single_threaded_blas(threads > 1);  // the local steps run on `threads`
  std::vector<Eigen::VectorXd> c_parts(threads);
  std::vector<double> k_parts(threads);
  // Computes the rotations for w (exact on the first call, warm-started ascent after), then c
  // and k0 of F(·, R). Returns k0.
  bool first = true;
  auto local = [&](Eigen::VectorXd* c) -> double {
    ParallelChunks(m, threads, [&](int begin, int end, int t) {
      Eigen::VectorXd& ct = c_parts[t];
      ct.setZero(n);
      double k0 = 0.0;
      Eigen::Matrix3d R;
      for (int e = begin; e < end; ++e) {
        const int* nodes = &energy.elements(e, 0);
        const double* q = &energy.corner_vectors(static_cast<int64_t>(e) * npe, 0);
        for (int i = 0; i < k; ++i) {
          Eigen::Matrix3d S = S0[e];
          for (int j = 0; j < npe; ++j) {
            const int v = nodes[j];
            const double wv = w(v);
            if (wv == 0.0) continue;
            const Eigen::Vector3d u = wv * U[i].row(v).transpose();
            const Eigen::Map<const Eigen::RowVector3d> qj(q + 3 * j);
            S.noalias() += u * qj;
          }
          Eigen::Quaterniond& qr = rot[static_cast<size_t>(e) * k + i];
          if (first) {
            R = NearestRotation(S);
            qr = Eigen::Quaterniond(R).normalized();
            R = qr.toRotationMatrix();
          } else {
            R = WarmRotationAscent(S, &qr, kRotationSteps, 1e-24, 1e-12);
          }
          for (int j = 0; j < npe; ++j) {
            const Eigen::Map<const Eigen::Vector3d> qj(q + 3 * j);
            const Eigen::Vector3d g = qj - R * qj;
            ct(nodes[j]) += U[i].row(nodes[j]).dot(g.transpose());
          }
          k0 += S0[e].trace() - (R.transpose() * S0[e]).trace();
        }
      }
      k_parts[t] = k0;
    });
    first = false;
    c->setZero(n);
    double k0 = 0.0;
    for (int t = 0; t < threads; ++t) {
      if (c_parts[t].size() == n) *c += c_parts[t];
      c_parts[t].resize(0);
      k0 += k_parts[t];
      k_parts[t] = 0.0;
    }
    return k0;
  };
  auto objective = [&](const Eigen::VectorXd& c, double k0) { return 0.5 * w.dot(Y * w) + c.dot(w) + k0; };

  Eigen::VectorXd c;
  double k0 = local(&c);
  double F_prev = objective(c, k0);
  rep.initial_energy = F_prev;
  rep.stop_reason = "max_iterations";
  for (int it = 0; it < options.max_iterations; ++it) {
    RETURN_IF_ERROR(progress.CheckCancelled());
    global(c);
    const double F = objective(c, k0);
    rep.energy.push_back(F);
    rep.iterations = it + 1;
    progress.Report("emw", static_cast<double>(it + 1) / std::max(1, options.max_iterations));
    if (F_prev - F <= options.relative_tolerance * F) {
      rep.stop_reason = "converged";
      break;
    }
    F_prev = F;
    if (it + 1 < options.max_iterations) k0 = local(&c);
  }
  rep.min_weight = w.minCoeff();
  rep.max_weight = w.maxCoeff();
  rep.seconds = SecondsSince(t0);
  if (report) *report = std::move(rep);
  return w;
}

}  // namespace

absl::StatusOr<Eigen::VectorXd> EnergyMinimizingWeight(const ElasticEnergy& energy, const JointFrame& frame,
                                                       EmwKind kind, const std::vector<int>& moving,
                                                       const std::vector<int>& fixed, const EmwOptions& options,
                                                       EmwReport* report, const Progress& progress) {
  std::vector<uint8_t> role;
  RETURN_IF_ERROR(ValidateEmw(energy, frame, moving, fixed, options, &role));
  CholmodSolver solver;
  bool analyzed = false;
  return SolveEmw(energy, frame, kind, role, moving, fixed, options, report, progress, solver, &analyzed);
}

absl::StatusOr<EmwSwingTwist> EnergyMinimizingSwingTwistWeights(
    const ElasticEnergy& energy, const JointFrame& frame, const std::vector<int>& moving,
    const std::vector<int>& fixed, const EmwOptions& options, EmwReport* swing_report, EmwReport* twist_report,
    const Progress& progress) {
  std::vector<uint8_t> role;
  RETURN_IF_ERROR(ValidateEmw(energy, frame, moving, fixed, options, &role));
  CholmodSolver solver;
  bool analyzed = false;
  EmwSwingTwist out;
  ASSIGN_OR_RETURN(out.swing, SolveEmw(energy, frame, EmwKind::kSwing, role, moving, fixed, options,
                                       swing_report, progress.Sub(0.0, 0.6), solver, &analyzed));
  ASSIGN_OR_RETURN(out.twist, SolveEmw(energy, frame, EmwKind::kTwist, role, moving, fixed, options,
                                       twist_report, progress.Sub(0.6, 1.0), solver, &analyzed));
  return out;
}

}  // namespace skinning
