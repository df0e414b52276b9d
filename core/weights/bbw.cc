// Bounded biharmonic weights: one bound-constrained QP per handle, solved exactly by a
// primal-dual active-set method on CHOLMOD factorizations.
//
// The handle nodes (all handles together: the Dirichlet set D) are the same for every handle,
// only their values differ. Eliminating them leaves, for handle h, over the free nodes F:
//
//   minimize ½ xᵀ A x − b_hᵀ x   subject to 0 ≤ x ≤ 1,   A = Q_FF,  b_h = −Q_FD e_h(D).
//
// Factorization reuse:
//   * A's lower triangle is assembled once, and CHOLMOD chooses its fill-reducing ordering once
//     (METIS/AMD, the expensive part of the analysis).
//   * The unconstrained solutions of all handles come from ONE numeric factorization of A with
//     #handles right-hand sides; they start ADMM. A start given by the caller (a coarser grid's
//     solution) replaces both, and A is then only analysed.
//   * An active-set iteration factorizes only the free-variable block A_II, in the global
//     ordering restricted to I (CHOLMOD_GIVEN: the symbolic step is then a cheap elimination-tree
//     pass, no ordering search). On a 22k-node character this has about half the flops of
//     factorizing all of A with the bound variables' rows turned into identity rows (the
//     bound variables, often a third of the nodes, drop out of the separators), which more than
//     pays for the symbolic pass.
//   * Later iterations mostly change a few dozen variables: within max_update_columns of the
//     last factorized free set, an iteration solves by bordering that factorization (a dense
//     Schur complement of the changed variables; UpdateSolve) instead of factorizing.
//   * The primal-dual active-set method changes any number of variables per iteration (all
//     violated bounds are added, all wrong-signed multipliers released at once).
//   * Handles are distributed over threads, each with its own cholmod_common and factor.
#include "core/weights/bbw.h"


#include <Eigen/CholmodSupport>
#include <Eigen/SparseCore>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "core/util/option_checks.h"
#include "core/util/parallel.h"
#include "core/util/status_macros.h"
#include "core/util/timing.h"
#include "core/weights/bbw_internal.h"

namespace skinning {
namespace {

using SpMat = Eigen::SparseMatrix<double, Eigen::ColMajor, int>;

// The per-handle QPs after eliminating the handle nodes.
struct ReducedProblem {
  int num_nodes = 0;
  int num_handles = 0;
  // #N: every handle pinning each node (empty for a free node). A node pinned by k handles (a
  // joint shared by k bones) has the value 1/k for each of them (libigl's boundary conditions).
  std::vector<std::vector<int>> pinned_by;
  std::vector<int> free_nodes;  // #F: the free nodes, ascending
  SpMat lower;                  // #F by #F lower triangle of A = Q_FF (the factorized pattern)
  SpMat full;                   // #F by #F, A with both triangles (for products)
  Eigen::VectorXd diagonal;     // #F, diag(A)
  Eigen::MatrixXd rhs;          // #F by #handles, b_h = −Q_FD e_h(D)
  std::vector<int> order;       // #F, the fill-reducing order chosen for A
};

absl::Status ValidateDomain(const VolumeDomain& domain) {
  const int n = domain.num_nodes();
  if (n == 0) return absl::InvalidArgumentError("domain.nodes: the domain has no nodes");
  if (domain.K.rows() != n || domain.K.cols() != n) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "domain.K is %d by %d but the domain has %d nodes", domain.K.rows(), domain.K.cols(), n));
  }
  if (domain.mass.size() != n) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "domain.mass has %d entries but the domain has %d nodes", domain.mass.size(), n));
  }
  for (int i = 0; i < n; ++i) {
    if (!(domain.mass(i) > 0.0) || !std::isfinite(domain.mass(i))) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "domain.mass[%d] is %g; lumped masses must be positive and finite", i, domain.mass(i)));
    }
  }
  for (int k = 0; k < domain.K.outerSize(); ++k) {
    for (Eigen::SparseMatrix<double>::InnerIterator it(domain.K, k); it; ++it) {
      if (!std::isfinite(it.value())) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "domain.K(%d, %d) is %g; entries must be finite", it.row(), it.col(), it.value()));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateHandles(const std::vector<std::vector<int>>& handle_nodes, int n,
                             std::vector<std::vector<int>>* pinned_by) {
  pinned_by->assign(n, {});
  bool any = false;
  for (int h = 0; h < static_cast<int>(handle_nodes.size()); ++h) {
    for (int k = 0; k < static_cast<int>(handle_nodes[h].size()); ++k) {
      const int node = handle_nodes[h][k];
      if (node < 0 || node >= n) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "handle_nodes[%d][%d]: node %d is out of range (%d nodes)", h, k, node, n));
      }
      std::vector<int>& by = (*pinned_by)[node];
      if (std::find(by.begin(), by.end(), h) == by.end()) by.push_back(h);
      any = true;
    }
  }
  if (!any) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "handle_nodes: all %d handles are empty; at least one needs nodes", handle_nodes.size()));
  }
  return absl::OkStatus();
}

absl::StatusOr<ReducedProblem> BuildProblem(const VolumeDomain& domain,
                                            const std::vector<std::vector<int>>& handle_nodes) {
  RETURN_IF_ERROR(ValidateDomain(domain));
  ReducedProblem p;
  p.num_nodes = domain.num_nodes();
  p.num_handles = static_cast<int>(handle_nodes.size());
  RETURN_IF_ERROR(ValidateHandles(handle_nodes, p.num_nodes, &p.pinned_by));

  // Q = Kᵀ M⁻¹ K (= K M⁻¹ K for the symmetric stiffness).
  SpMat K = domain.K;
  K.makeCompressed();
  const Eigen::VectorXd inverse_mass = domain.mass.cwiseInverse();
  const SpMat kt_minv = SpMat(K.transpose()) * inverse_mass.asDiagonal();
  const SpMat Q = kt_minv * K;

  // Every node must be connected to a handle node through K, else its part of the problem has
  // no unique minimizer.
  std::vector<uint8_t> reached(p.num_nodes, 0);
  std::vector<int> queue;
  for (int i = 0; i < p.num_nodes; ++i) {
    if (!p.pinned_by[i].empty()) reached[i] = 1, queue.push_back(i);
  }
  for (size_t q = 0; q < queue.size(); ++q) {
    for (SpMat::InnerIterator it(K, queue[q]); it; ++it) {
      if (!reached[it.row()] && it.value() != 0.0) {
        reached[it.row()] = 1;
        queue.push_back(static_cast<int>(it.row()));
      }
    }
  }
  if (static_cast<int>(queue.size()) < p.num_nodes) {
    const int first =
        static_cast<int>(std::find(reached.begin(), reached.end(), 0) - reached.begin());
    return absl::FailedPreconditionError(absl::StrFormat(
        "bbw: %d of %d domain nodes (first: node %d) lie in connected parts of the domain that "
        "contain no handle node; their weights are undefined",
        p.num_nodes - static_cast<int>(queue.size()), p.num_nodes, first));
  }

  std::vector<int> free_index(p.num_nodes, -1);
  for (int i = 0; i < p.num_nodes; ++i) {
    if (p.pinned_by[i].empty()) {
      free_index[i] = static_cast<int>(p.free_nodes.size());
      p.free_nodes.push_back(i);
    }
  }
  const int nf = static_cast<int>(p.free_nodes.size());
  p.rhs = Eigen::MatrixXd::Zero(nf, p.num_handles);
  // Columns and rows keep their order under the free renumbering, so the lower triangle of
  // Q_FF is written directly in compressed form; the diagonal is stored even when zero.
  std::vector<int> outer(nf + 1, 0), inner;
  std::vector<double> values;
  inner.reserve(Q.nonZeros() / 2 + nf);
  values.reserve(Q.nonZeros() / 2 + nf);
  for (int c = 0; c < p.num_nodes; ++c) {
    const int fc = free_index[c];
    if (fc >= 0) {
      outer[fc] = static_cast<int>(inner.size());
      bool has_diagonal = false;
      for (SpMat::InnerIterator it(Q, c); it; ++it) {
        const int r = static_cast<int>(it.row());
        if (r < c || free_index[r] < 0) continue;
        if (r == c) has_diagonal = true;
        if (r > c && !has_diagonal) {
          inner.push_back(fc);
          values.push_back(0.0);
          has_diagonal = true;
        }
        inner.push_back(free_index[r]);
        values.push_back(it.value());
      }
      if (!has_diagonal) {
        inner.push_back(fc);
        values.push_back(0.0);
      }
    } else {
      // A handle node's column: its value is 1/k for each of the k handles pinning it, 0 for the
      // others.
      const double value = 1.0 / static_cast<double>(p.pinned_by[c].size());
      for (SpMat::InnerIterator it(Q, c); it; ++it) {
        const int fr = free_index[it.row()];
        if (fr < 0) continue;
        for (int h : p.pinned_by[c]) p.rhs(fr, h) -= value * it.value();
      }
    }
  }
  outer[nf] = static_cast<int>(inner.size());
  p.lower = Eigen::Map<const SpMat>(nf, nf, static_cast<int>(inner.size()), outer.data(),
                                    inner.data(), values.data());
  p.full = p.lower.selfadjointView<Eigen::Lower>();
  p.diagonal = p.lower.diagonal();
  return p;
}

// A cholmod_sparse view of a compressed lower triangle (no copy).
cholmod_sparse ViewLower(SpMat& m) {
  cholmod_sparse a{};
  a.nrow = m.rows();
  a.ncol = m.cols();
  a.nzmax = m.nonZeros();
  a.p = m.outerIndexPtr();
  a.i = m.innerIndexPtr();
  a.x = m.valuePtr();
  a.stype = -1;
  a.itype = CHOLMOD_INT;
  a.xtype = CHOLMOD_REAL;
  a.dtype = CHOLMOD_DOUBLE;
  a.sorted = 1;
  a.packed = 1;
  return a;
}

// A Cholesky factor with its own cholmod_common, so that each thread owns one.
// Analysis and factorization take seconds at fine resolutions and cannot check for
// cancellation themselves: given a `stop`, they run on a helper thread (RunUnlessStopped) on a
// copy of the matrix, and when stop() turns true they return CANCELLED at once, leaving the
// helper to finish with the factor's state (it holds a reference) and this Factor unusable.
class Factor {
 public:
  Factor() : state_(std::make_shared<State>()) {}
  Factor(const Factor&) = delete;
  Factor& operator=(const Factor&) = delete;

  // The symbolic analysis (fill-reducing ordering, supernodes) of `lower`'s pattern.
  static absl::StatusOr<std::unique_ptr<Factor>> Analyze(SpMat& lower, const std::function<bool()>& stop) {
    auto f = std::make_unique<Factor>();
    RETURN_IF_ERROR(f->Run(lower, stop, [](State& st, SpMat& m) {
      cholmod_sparse a = ViewLower(m);
      st.factor = cholmod_analyze(&a, &st.common);
    }));
    if (f->state_->factor == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("bbw: CHOLMOD analysis failed (status %d, %d free nodes)",
                          f->state_->common.status, lower.rows()));
    }
    return f;
  }

  // Replaces this factor by the symbolic analysis of `lower` in the given fill-reducing order
  // (cheap: no ordering search).
  absl::Status AnalyzeGiven(SpMat& lower, std::vector<int>& perm) {
    State& st = *state_;
    if (st.factor != nullptr) cholmod_free_factor(&st.factor, &st.common);
    st.common.nmethods = 1;
    st.common.method[0].ordering = CHOLMOD_GIVEN;
    cholmod_sparse a = ViewLower(lower);
    st.factor = cholmod_analyze_p(&a, perm.data(), nullptr, 0, &st.common);
    if (st.factor == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("bbw: CHOLMOD analysis failed (status %d)", st.common.status));
    }
    return absl::OkStatus();
  }
  // The fill-reducing permutation of the analysed pattern.
  std::vector<int> Permutation() const {
    const int* perm = static_cast<const int*>(state_->factor->Perm);
    return std::vector<int>(perm, perm + state_->factor->n);
  }
  // Numeric factorization of a matrix with the analysed pattern.
  absl::Status Factorize(SpMat& lower, const std::function<bool()>& stop) {
    RETURN_IF_ERROR(Run(lower, stop, [](State& st, SpMat& m) {
      cholmod_sparse a = ViewLower(m);
      st.factorized = cholmod_factorize(&a, st.factor, &st.common);
    }));
    const State& st = *state_;
    if (!st.factorized || st.common.status < CHOLMOD_OK) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("bbw: CHOLMOD factorization failed (status %d)", st.common.status));
    }
    if (st.common.status == CHOLMOD_NOT_POSDEF || st.factor->minor < st.factor->n) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "bbw: the biharmonic system is singular at free variable %d of %d; every connected "
          "part of the domain needs handle nodes",
          static_cast<int>(st.factor->minor), static_cast<int>(st.factor->n)));
    }
    return absl::OkStatus();
  }

  // x = A⁻¹ b for the last factorized A; b is n by k.
  void Solve(Eigen::MatrixXd& b, Eigen::MatrixXd* x) { SolveWith(&state_->common, b, x); }

  // Solve with another thread's cholmod_common: several threads may solve with one factor at
  // once, each with its own common (the factor is only read).
  void SolveWith(cholmod_common* common, Eigen::MatrixXd& b, Eigen::MatrixXd* x) {
    cholmod_dense bd{};
    bd.nrow = b.rows();
    bd.ncol = b.cols();
    bd.nzmax = b.size();
    bd.d = b.rows();
    bd.x = b.data();
    bd.xtype = CHOLMOD_REAL;
    bd.dtype = CHOLMOD_DOUBLE;
    cholmod_dense* xd = cholmod_solve(CHOLMOD_A, state_->factor, &bd, common);
    x->resize(b.rows(), b.cols());
    std::copy(static_cast<const double*>(xd->x), static_cast<const double*>(xd->x) + b.size(),
              x->data());
    cholmod_free_dense(&xd, common);
  }

 private:
  struct State {
    State() {
      cholmod_start(&common);
      common.print = 0;
    }
    ~State() {
      if (factor != nullptr) cholmod_free_factor(&factor, &common);
      cholmod_finish(&common);
    }
    cholmod_common common;
    cholmod_factor* factor = nullptr;
    int factorized = 0;  // cholmod_factorize's return value
  };

  // op(state, lower) here, or with a stop on a helper thread with a copy of `lower`; CANCELLED
  // (and this Factor unusable) when stopped first.
  absl::Status Run(SpMat& lower, const std::function<bool()>& stop,
                   const std::function<void(State&, SpMat&)>& op) {
    if (!stop) {
      op(*state_, lower);
      return absl::OkStatus();
    }
    if (stop()) return absl::CancelledError("cancelled");
    auto matrix = std::make_shared<SpMat>(lower);
    std::shared_ptr<State> state = state_;
    if (RunUnlessStopped([state, matrix, op] { op(*state, *matrix); }, stop)) return absl::OkStatus();
    state_ = nullptr;
    return absl::CancelledError("cancelled");
  }

  std::shared_ptr<State> state_;
};

// `stop` for a factorization of `lower` large enough to take a noticeable time (then it runs on
// a helper thread that a cancel abandons, see Factor), else none: small ones run here.
std::function<bool()> StopFor(const SpMat& lower, const std::function<bool()>& stop) {
  constexpr int64_t kNonZeros = 200000;  // ≈ 10k free nodes of the 3D bi-Laplacian
  return lower.nonZeros() >= kNonZeros ? stop : nullptr;
}

enum Bound : uint8_t { kFree = 0, kLower = 1, kUpper = 2 };

uint64_t HashBounds(const std::vector<uint8_t>& state) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (uint8_t s : state) {
    h ^= s;
    h *= 1099511628211ull;
  }
  return h;
}

struct HandleResult {
  int iterations = 0;
  double max_violation = 0.0;
};

// Solves the per-handle QPs on one thread with one factor.
class HandleSolver {
 public:
  HandleSolver(const ReducedProblem& problem, const BbwOptions& options,
               std::atomic<int>* factorizations, std::atomic<int>* updates, std::function<bool()> stop,
               bool monotone_only)
      : p_(problem),
        monotone_only_(monotone_only),
        options_(options),
        factorizations_(factorizations),
        updates_(updates),
        stop_(std::move(stop)) {}

  // x (in: the unconstrained minimizer, unused when `guess` is given; out: the constrained one)
  // for handle h. `guess`, when given, is an estimate of the constrained minimizer (the ADMM
  // warm start or the caller's start): its entries at 0 and 1 are the first active sets.
  absl::Status Solve(int h, Eigen::VectorXd* x, HandleResult* result,
                     const Eigen::VectorXd* guess) {
    const int nf = static_cast<int>(x->size());
    const double tol = options_.bound_tolerance;
    const Eigen::VectorXd b = p_.rhs.col(h);
    // No bordering of the factorization the last handle left: which handles a thread solved
    // before depends on the scheduling, and the bordered and factorized solves differ in their
    // last bits, so a handle's weights would too (a bake run twice came out different).
    reference_size_ = 0;
    columns_.clear();
    column_of_.clear();
    std::vector<uint8_t> state(nf, kFree);
    int iterations = 0;
    bool converged;
    if (guess != nullptr && !monotone_only_) {
      for (int i = 0; i < nf; ++i) {
        if ((*guess)(i) <= 0.0) state[i] = kLower;
        if ((*guess)(i) >= 1.0) state[i] = kUpper;
      }
      converged = false;
    } else {
      converged = !AddViolatedBounds(*x, &state);
    }
    std::unordered_set<uint64_t> seen = {HashBounds(state)};
    bool cycling = !converged && monotone_only_;

    // Primal-dual active set: x solves the problem with the current bounds fixed; then every
    // free variable outside [0, 1] is fixed at the violated bound and every fixed variable
    // whose multiplier μ = (A x − b)ᵢ has the wrong sign (μ < 0 at the lower bound, μ > 0 at
    // the upper) is freed. Unchanged sets mean x is feasible and the multipliers have the right
    // signs: the KKT conditions of the convex QP hold, x is its minimizer.
    while (!converged && !cycling) {
      if (iterations >= options_.max_iterations) return NotConverged(h);
      if (stop_()) return absl::CancelledError("cancelled");
      RETURN_IF_ERROR(SubspaceSolve(b, state, x));
      ++iterations;
      const Eigen::VectorXd mu = p_.full * *x - b;
      bool changed = AddViolatedBounds(*x, &state);
      for (int i = 0; i < nf; ++i) {
        const double release = tol * p_.diagonal(i);
        if ((state[i] == kLower && mu(i) < -release) || (state[i] == kUpper && mu(i) > release)) {
          state[i] = kFree;
          changed = true;
        }
      }
      converged = !changed;
      if (!converged) cycling = !seen.insert(HashBounds(state)).second;
    }

    if (cycling) {
      // Primal-dual active set may cycle for matrices that are not M-matrices (the
      // bi-Laplacian is not one). A monotone primal active-set method finishes: from a
      // feasible point, step towards the minimizer over the current free set, stop at the
      // first bound hit (fix it), and at a subspace minimizer free the single worst
      // multiplier. The energy decreases strictly, so no set repeats.
      for (int i = 0; i < nf; ++i) {
        double& xi = (*x)(i);
        if (xi <= 0.0)
          xi = 0.0, state[i] = kLower;
        else if (xi >= 1.0)
          xi = 1.0, state[i] = kUpper;
        else
          state[i] = kFree;
      }
      Eigen::VectorXd target(nf);
      while (true) {
        if (iterations >= options_.max_iterations) return NotConverged(h);
        if (stop_()) return absl::CancelledError("cancelled");
        RETURN_IF_ERROR(SubspaceSolve(b, state, &target));
        ++iterations;
        double alpha = 1.0;
        int blocking = -1;
        for (int i = 0; i < nf; ++i) {
          if (state[i] != kFree) continue;
          const double d = target(i) - (*x)(i);
          double a = 1.0;
          if (target(i) < 0.0) a = std::max(0.0, -(*x)(i) / d);
          if (target(i) > 1.0) a = std::max(0.0, (1.0 - (*x)(i)) / d);
          if (a < alpha) alpha = a, blocking = i;
        }
        if (blocking >= 0) {
          *x += alpha * (target - *x);
          (*x)(blocking) = target(blocking) < 0.0 ? 0.0 : 1.0;
          state[blocking] = target(blocking) < 0.0 ? kLower : kUpper;
          continue;
        }
        *x = target;
        const Eigen::VectorXd mu = p_.full * *x - b;
        int worst = -1;
        double worst_value = tol;
        for (int i = 0; i < nf; ++i) {
          double wrong = 0.0;
          if (state[i] == kLower) wrong = -mu(i) / p_.diagonal(i);
          if (state[i] == kUpper) wrong = mu(i) / p_.diagonal(i);
          if (wrong > worst_value) worst_value = wrong, worst = i;
        }
        if (worst < 0) break;
        state[worst] = kFree;
      }
    }

    result->iterations = iterations;
    result->max_violation = 0.0;
    for (int i = 0; i < nf; ++i) {
      result->max_violation = std::max({result->max_violation, -(*x)(i), (*x)(i)-1.0});
    }
    return absl::OkStatus();
  }

 private:
  // Fixes free variables outside [0, 1] (by more than the tolerance) at the violated bound.
  bool AddViolatedBounds(const Eigen::VectorXd& x, std::vector<uint8_t>* state) const {
    const double tol = options_.bound_tolerance;
    bool changed = false;
    for (int i = 0; i < static_cast<int>(x.size()); ++i) {
      if ((*state)[i] != kFree) continue;
      if (x(i) < -tol) {
        (*state)[i] = kLower;
        changed = true;
      } else if (x(i) > 1.0 + tol) {
        (*state)[i] = kUpper;
        changed = true;
      }
    }
    return changed;
  }

  // x = the minimizer of ½ xᵀ A x − bᵀ x with the bound variables fixed at their bounds:
  // A_II x_I = b_I − A_IU 1 (the lower bounds are 0). Either from a new factorization of A_II in
  // the global order (which becomes the reference set J), or, when I differs from J in at most
  // options_.max_update_columns variables, from J's factorization by bordering (UpdateSolve).
  absl::Status SubspaceSolve(const Eigen::VectorXd& b, const std::vector<uint8_t>& state,
                             Eigen::VectorXd* x) {
    const int nf = static_cast<int>(b.size());
    Eigen::VectorXd fixed = Eigen::VectorXd::Zero(nf);
    bool any_upper = false;
    int ni = 0;
    for (int i = 0; i < nf; ++i) {
      if (state[i] == kUpper) fixed(i) = 1.0, any_upper = true;
      ni += state[i] == kFree;
    }
    *x = fixed;
    if (ni == 0) return absl::OkStatus();
    Eigen::VectorXd full_rhs = b;
    if (any_upper) full_rhs -= p_.full * fixed;
    const int max_columns = options_.max_update_columns;
    if (reference_size_ > 0 && max_columns > 0) {
      std::vector<int> changed;  // N (free, not in J) and R (bound, in J), ascending
      for (int i = 0; i < nf && static_cast<int>(changed.size()) <= max_columns; ++i) {
        if ((state[i] == kFree) != (reference_local_[i] >= 0)) changed.push_back(i);
      }
      if (static_cast<int>(changed.size()) <= max_columns && UpdateSolve(full_rhs, state, changed, x)) {
        updates_->fetch_add(1);
        return absl::OkStatus();
      }
    }

    // I becomes the reference set: unusable until it is factorized.
    reference_size_ = 0;
    columns_.clear();
    column_of_.clear();
    std::vector<int>& local = reference_local_;
    local.assign(nf, -1);
    for (int i = 0, next = 0; i < nf; ++i) {
      if (state[i] == kFree) local[i] = next++;
    }
    // A_II's lower triangle: rows and columns keep their order, so it is written directly.
    const int* outer = p_.lower.outerIndexPtr();
    const int* inner = p_.lower.innerIndexPtr();
    const double* values = p_.lower.valuePtr();
    std::vector<int> sub_outer(ni + 1, 0), sub_inner;
    std::vector<double> sub_values;
    sub_inner.reserve(p_.lower.nonZeros());
    sub_values.reserve(p_.lower.nonZeros());
    for (int c = 0; c < nf; ++c) {
      if (local[c] < 0) continue;
      sub_outer[local[c]] = static_cast<int>(sub_inner.size());
      for (int k = outer[c]; k < outer[c + 1]; ++k) {
        if (local[inner[k]] < 0) continue;
        sub_inner.push_back(local[inner[k]]);
        sub_values.push_back(values[k]);
      }
    }
    sub_outer[ni] = static_cast<int>(sub_inner.size());
    SpMat sub = Eigen::Map<const SpMat>(ni, ni, sub_outer[ni], sub_outer.data(), sub_inner.data(),
                                        sub_values.data());
    std::vector<int> order;
    order.reserve(ni);
    for (int k : p_.order) {
      if (local[k] >= 0) order.push_back(local[k]);
    }
    RETURN_IF_ERROR(factor_.AnalyzeGiven(sub, order));
    RETURN_IF_ERROR(factor_.Factorize(sub, StopFor(sub, stop_)));
    factorizations_->fetch_add(1);
    reference_size_ = ni;

    Eigen::MatrixXd rhs(ni, 1);
    for (int i = 0; i < nf; ++i) {
      if (local[i] >= 0) rhs(local[i], 0) = full_rhs(i);
    }
    Eigen::MatrixXd solution;
    factor_.Solve(rhs, &solution);
    for (int i = 0; i < nf; ++i) {
      if (local[i] >= 0) (*x)(i) = solution(local[i], 0);
    }
    return absl::OkStatus();
  }

  // The subspace solve for free set I from the factorization F of A_JJ (J the reference set),
  // where I = (J \ R) ∪ N and `changed` = N ∪ R. On K = J ∪ N with x_R held at 0 by multipliers
  // λ (x_R's bound values are already in `rhs`, which is b − A·fixed):
  //   [A_JJ A_JN E_R] [x_J]   [rhs_J]
  //   [A_NJ A_NN 0  ] [x_N] = [rhs_N]
  //   [E_Rᵀ 0    0  ] [λ  ]   [0    ]
  // With C = [A_JN E_R] and Z = F⁻¹ C, y = (x_N, λ) solves the small dense system
  //   (D − Cᵀ Z) y = (rhs_N, 0) − Cᵀ F⁻¹ rhs_J,   D = [A_NN 0; 0 0],
  // and x_J = F⁻¹ rhs_J − Z y (Schur complement of the bordered system). Z's columns depend only
  // on J, so they are kept for the following iterations (one triangular solve per new column,
  // all new ones in one multi-right-hand-side solve). The result is accepted only when the
  // residual of A_II x_I = rhs_I is at rounding level (relative 1e-9); otherwise false, and the
  // caller factorizes A_II.
  bool UpdateSolve(const Eigen::VectorXd& rhs, const std::vector<uint8_t>& state,
                   const std::vector<int>& changed, Eigen::VectorXd* x) {
    const int nf = static_cast<int>(rhs.size());
    const int nj = reference_size_;
    const std::vector<int>& local = reference_local_;
    const int k = static_cast<int>(changed.size());
    // The new columns of C, and rhs_J, in one solve. Columns of variables that have left N ∪ R
    // stay cached; the cache is emptied when it would outgrow twice the bound.
    if (columns_.size() + k > 2 * static_cast<size_t>(options_.max_update_columns)) {
      columns_.clear();
      column_of_.clear();
    }
    std::vector<int> missing;
    for (int v : changed) {
      if (column_of_.find(v) == column_of_.end()) missing.push_back(v);
    }
    Eigen::MatrixXd block = Eigen::MatrixXd::Zero(nj, static_cast<Eigen::Index>(missing.size()) + 1);
    for (int i = 0; i < nf; ++i) {
      if (local[i] >= 0) block(local[i], 0) = rhs(i);
    }
    for (size_t m = 0; m < missing.size(); ++m) {
      const int v = missing[m];
      if (local[v] >= 0) {
        block(local[v], m + 1) = 1.0;  // R: E_R's column
      } else {
        for (SpMat::InnerIterator it(p_.full, v); it; ++it) {  // N: A_Jv
          if (local[it.row()] >= 0) block(local[it.row()], m + 1) = it.value();
        }
      }
    }
    Eigen::MatrixXd solved;
    factor_.Solve(block, &solved);
    const Eigen::VectorXd z0 = solved.col(0);
    for (size_t m = 0; m < missing.size(); ++m) {
      column_of_[missing[m]] = static_cast<int>(columns_.size());
      columns_.push_back(solved.col(m + 1));
    }
    std::vector<const Eigen::VectorXd*> z(k);  // Z's column of each changed variable
    for (int c = 0; c < k; ++c) z[c] = &columns_[column_of_.at(changed[c])];
    // Cᵀ w for a column w over J, entry a of `changed`.
    auto c_dot = [&](int v, const Eigen::VectorXd& w) {
      if (local[v] >= 0) return w(local[v]);
      double sum = 0.0;
      for (SpMat::InnerIterator it(p_.full, v); it; ++it) {
        if (local[it.row()] >= 0) sum += it.value() * w(local[it.row()]);
      }
      return sum;
    };
    Eigen::MatrixXd S(k, k);
    Eigen::VectorXd y_rhs(k);
    for (int a = 0; a < k; ++a) {
      const int va = changed[a];
      const bool a_new = local[va] < 0;
      y_rhs(a) = (a_new ? rhs(va) : 0.0) - c_dot(va, z0);
      for (int c = 0; c < k; ++c) {
        const int vc = changed[c];
        double d = 0.0;
        if (a_new && local[vc] < 0) d = p_.full.coeff(va, vc);
        S(a, c) = d - c_dot(va, *z[c]);
      }
    }
    const Eigen::VectorXd y = S.fullPivLu().solve(y_rhs);
    Eigen::VectorXd xj = z0;
    for (int c = 0; c < k; ++c) xj -= y(c) * *z[c];
    Eigen::VectorXd candidate = *x;  // the bound values
    for (int i = 0; i < nf; ++i) {
      if (state[i] == kFree && local[i] >= 0) candidate(i) = xj(local[i]);
    }
    for (int a = 0; a < k; ++a) {
      if (local[changed[a]] < 0) candidate(changed[a]) = y(a);
    }
    if (!candidate.allFinite()) return false;
    // The residual over I, against the size of its terms.
    Eigen::VectorXd free_part = Eigen::VectorXd::Zero(nf);
    for (int i = 0; i < nf; ++i) {
      if (state[i] == kFree) free_part(i) = candidate(i);
    }
    const Eigen::VectorXd product = p_.full * free_part;
    double residual = 0.0, scale = 0.0;
    for (int i = 0; i < nf; ++i) {
      if (state[i] != kFree) continue;
      residual = std::max(residual, std::abs(rhs(i) - product(i)));
      scale = std::max({scale, std::abs(rhs(i)), p_.diagonal(i) * std::abs(candidate(i))});
    }
    if (!(residual <= 1e-9 * scale)) return false;
    *x = std::move(candidate);
    return true;
  }

  absl::Status NotConverged(int h) const {
    return absl::FailedPreconditionError(absl::StrFormat(
        "bbw: handle %d did not converge in %d active-set iterations (BbwOptions.max_iterations)",
        h, options_.max_iterations));
  }

  const ReducedProblem& p_;
  const bool monotone_only_;
  Factor factor_;
  // The reference set J that factor_ holds A_JJ of: each free variable's index in J (−1 outside),
  // and |J| (0: no usable factorization). columns_[column_of_[v]] = F⁻¹ C_v (UpdateSolve).
  std::vector<int> reference_local_;
  int reference_size_ = 0;
  std::vector<Eigen::VectorXd> columns_;
  std::unordered_map<int, int> column_of_;
  const BbwOptions& options_;
  std::atomic<int>* factorizations_;
  std::atomic<int>* updates_;
  std::function<bool()> stop_;
};

// Chooses A's fill-reducing order (into p->order), which every later factorization reuses; the
// returned factor holds that analysis of A.
absl::StatusOr<std::unique_ptr<Factor>> AnalyzeA(ReducedProblem* p, const std::function<bool()>& stop) {
  ASSIGN_OR_RETURN(std::unique_ptr<Factor> factor, Factor::Analyze(p->lower, StopFor(p->lower, stop)));
  p->order = factor->Permutation();
  return factor;
}

// Factorizes A with `factor` (an analysis of A) and solves for the unconstrained minimizers of
// all handles (#F by #handles).
absl::Status SolveUnconstrained(ReducedProblem* p, Factor* factor, Eigen::MatrixXd* x,
                                std::atomic<int>* factorizations, const std::function<bool()>& stop) {
  RETURN_IF_ERROR(factor->Factorize(p->lower, StopFor(p->lower, stop)));
  factorizations->fetch_add(1);
  Eigen::MatrixXd b = p->rhs;
  factor->Solve(b, x);
  return absl::OkStatus();
}

// The warm start: a fixed number of ADMM iterations (Boyd et al. 2011, §5.2, with
// over-relaxation 1.6) on every handle's box-constrained QP, splitting x = z with z in the box:
//
//   (A + ρI) x = b + ρ (z − u),   x̂ = 1.6 x − 0.6 z,   z = clamp(x̂ + u, 0, 1),   u += x̂ − z.
//
// All handles share ONE factorization of A + ρI, so an iteration costs a triangular solve per
// handle, not a factorization; the handles' columns are split over the threads (each with its
// own cholmod_common, the factor only read). ADMM converges slowly to high accuracy, but its z
// soon has nearly the right active sets, and the active-set solves that start from them need
// few factorizations to reach the KKT conditions (libigl hand on its tet mesh: 733
// factorizations from the unconstrained start, 114 from 60 ADMM iterations).
// ρ = rho_factor · √(λ_min λ_max) of A: √(λ_min λ_max) is the choice that Ghadimi et al. (2015)
// derive for quadratic programs; the factor is measured (see BbwOptions). λ_max by power
// iteration on A, λ_min by inverse iteration with the unconstrained factorization; a dozen
// iterations each, as ρ needs only its order of magnitude.
// z: #F by #handles, in [0, 1].
absl::Status AdmmWarmStart(ReducedProblem* p, Factor* unconstrained_factor,
                           const Eigen::MatrixXd& unconstrained, const BbwOptions& options,
                           int threads, const std::function<bool()>& stop, Eigen::MatrixXd* z,
                           std::atomic<int>* factorizations, double* rho_used) {
  const int nf = static_cast<int>(p->free_nodes.size());
  Eigen::VectorXd v = Eigen::VectorXd::Ones(nf).normalized();
  double lambda_max = 0.0;
  for (int k = 0; k < 12; ++k) {
    const Eigen::VectorXd w = p->full * v;
    lambda_max = w.norm();
    v = w / lambda_max;
  }
  Eigen::MatrixXd q = Eigen::MatrixXd::Ones(nf, 1) / std::sqrt(static_cast<double>(nf));
  double lambda_min = 0.0;
  for (int k = 0; k < 12; ++k) {
    if (stop()) return absl::CancelledError("cancelled");
    Eigen::MatrixXd w;
    unconstrained_factor->Solve(q, &w);
    const double norm = w.norm();
    lambda_min = 1.0 / norm;
    q = w / norm;
  }
  const double rho = options.admm_rho_factor * std::sqrt(lambda_min * lambda_max);
  *rho_used = rho;

  SpMat shifted = p->lower;
  for (int c = 0; c < nf; ++c) {
    // The diagonal is the first stored entry of each column (BuildProblem always stores it).
    shifted.valuePtr()[shifted.outerIndexPtr()[c]] += rho;
  }
  Factor factor;
  RETURN_IF_ERROR(factor.AnalyzeGiven(shifted, p->order));
  RETURN_IF_ERROR(factor.Factorize(shifted, StopFor(shifted, stop)));
  factorizations->fetch_add(1);

  *z = unconstrained.cwiseMax(0.0).cwiseMin(1.0);
  const int num_handles = p->num_handles;
  threads = std::max(1, std::min(threads, num_handles));
  std::atomic<bool> cancelled{false};
  auto run = [&](int first, int count) {
    if (threads > 1) DisableOpenMpOnThisThread();
    cholmod_common common;
    cholmod_start(&common);
    common.print = 0;
    constexpr double kRelaxation = 1.6;
    auto zb = z->middleCols(first, count);
    const auto b = p->rhs.middleCols(first, count);
    Eigen::MatrixXd u = Eigen::MatrixXd::Zero(nf, count);
    Eigen::MatrixXd rhs, x, relaxed;
    for (int k = 0; k < options.admm_iterations; ++k) {
      if (stop() || cancelled) {
        cancelled = true;
        break;
      }
      rhs = b + rho * (zb - u);
      factor.SolveWith(&common, rhs, &x);
      relaxed = kRelaxation * x + (1.0 - kRelaxation) * zb;
      zb = (relaxed + u).cwiseMax(0.0).cwiseMin(1.0);
      u += relaxed - zb;
    }
    cholmod_finish(&common);
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    const int first = num_handles * t / threads;
    const int count = num_handles * (t + 1) / threads - first;
    pool.emplace_back(run, first, count);  // not on this thread: it keeps its OpenMP setting
  }
  for (std::thread& t : pool) t.join();
  if (cancelled) return absl::CancelledError("cancelled");
  return absl::OkStatus();
}

// Scatters per-handle free-node solutions into #N by #handles, with 1/k (k handles pinning the
// node) or 0 on the handle nodes.
Eigen::MatrixXd Scatter(const ReducedProblem& p, const Eigen::MatrixXd& free_values) {
  Eigen::MatrixXd W = Eigen::MatrixXd::Zero(p.num_nodes, p.num_handles);
  for (int k = 0; k < static_cast<int>(p.free_nodes.size()); ++k) {
    W.row(p.free_nodes[k]) = free_values.row(k);
  }
  for (int i = 0; i < p.num_nodes; ++i) {
    for (int h : p.pinned_by[i]) W(i, h) = 1.0 / static_cast<double>(p.pinned_by[i].size());
  }
  return W;
}

absl::StatusOr<Eigen::MatrixXd> Solve(const VolumeDomain& domain,
                                      const std::vector<std::vector<int>>& handle_nodes,
                                      const BbwOptions& options, BbwReport* report,
                                      const Progress& progress, bool monotone_only,
                                      const Eigen::MatrixXd* given_start = nullptr);

}  // namespace

namespace internal {

absl::StatusOr<Eigen::MatrixXd> BoundedBiharmonicWeightsMonotone(
    const VolumeDomain& domain, const std::vector<std::vector<int>>& handle_nodes,
    const BbwOptions& options, BbwReport* report) {
  return Solve(domain, handle_nodes, options, report, Progress(), /*monotone_only=*/true);
}

absl::StatusOr<Eigen::MatrixXd> UnconstrainedBiharmonicWeights(
    const VolumeDomain& domain, const std::vector<std::vector<int>>& handle_nodes) {
  ASSIGN_OR_RETURN(ReducedProblem problem, BuildProblem(domain, handle_nodes));
  const ReducedProblem& p = problem;
  Eigen::MatrixXd x = Eigen::MatrixXd::Zero(p.free_nodes.size(), p.num_handles);
  if (!p.free_nodes.empty()) {
    std::atomic<int> factorizations{0};
    ASSIGN_OR_RETURN(std::unique_ptr<Factor> factor, AnalyzeA(&problem, nullptr));
    RETURN_IF_ERROR(SolveUnconstrained(&problem, factor.get(), &x, &factorizations, nullptr));
  }
  return Scatter(p, x);
}

}  // namespace internal

absl::Status BbwOptions::Validate() const {
  RETURN_IF_ERROR(CheckAtLeast("options.bbw.max_iterations", max_iterations, 0));
  RETURN_IF_ERROR(CheckNonNegative("options.bbw.bound_tolerance", bound_tolerance));
  RETURN_IF_ERROR(CheckAtLeast("options.bbw.admm_iterations", admm_iterations, 0));
  RETURN_IF_ERROR(CheckAtLeast("options.bbw.max_update_columns", max_update_columns, 0));
  RETURN_IF_ERROR(CheckAtLeast("options.bbw.coarsest_resolution", coarsest_resolution, 0));
  RETURN_IF_ERROR(CheckPositive("options.bbw.admm_rho_factor", admm_rho_factor));
  return CheckAtLeast("options.bbw.threads", threads, 0);
}

std::string BbwReport::BriefReport() const {
  int max_iterations = 0, total = 0;
  for (int it : iterations) {
    max_iterations = std::max(max_iterations, it);
    total += it;
  }
  std::string admm;
  if (given_start) {
    admm = "active sets from the given start, ";
  } else if (admm_iterations > 0) {
    admm = absl::StrFormat("%d ADMM warm-start iterations (rho %.3g, %.3g s), ", admm_iterations,
                           admm_rho, admm_seconds);
  }
  return absl::StrFormat(
      "%s%d factorizations, %d updates, %d active-set iterations in all, at most %d per handle, %.3g s",
      admm, factorizations, updates, total, max_iterations, seconds);
}

absl::StatusOr<Eigen::MatrixXd> BoundedBiharmonicWeights(
    const VolumeDomain& domain, const std::vector<std::vector<int>>& handle_nodes,
    const BbwOptions& options, BbwReport* report, const Progress& progress, const Eigen::MatrixXd* start) {
  if (start != nullptr &&
      (start->rows() != domain.num_nodes() || start->cols() != static_cast<Eigen::Index>(handle_nodes.size())))
    return absl::InvalidArgumentError(absl::StrFormat("the start is %d by %d; expected %d by %d (nodes by handles)",
                                                      start->rows(), start->cols(), domain.num_nodes(),
                                                      handle_nodes.size()));
  return Solve(domain, handle_nodes, options, report, progress, /*monotone_only=*/false, start);
}

namespace {

absl::StatusOr<Eigen::MatrixXd> Solve(const VolumeDomain& domain,
                                      const std::vector<std::vector<int>>& handle_nodes,
                                      const BbwOptions& options, BbwReport* report,
                                      const Progress& progress, bool monotone_only,
                                      const Eigen::MatrixXd* given_start) {
  const auto start = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(options.Validate());
  ASSIGN_OR_RETURN(ReducedProblem problem, BuildProblem(domain, handle_nodes));
  ReducedProblem& p = problem;
  const int nf = static_cast<int>(p.free_nodes.size());
  const int num_handles = p.num_handles;
  progress.Report("bbw", 0.0);
  if (progress.Cancelled()) return absl::CancelledError("cancelled");

  BbwReport r;
  r.iterations.assign(num_handles, 0);
  std::vector<int> todo;  // handles with nodes
  for (int h = 0; h < num_handles; ++h) {
    if (!handle_nodes[h].empty()) todo.push_back(h);
  }
  Eigen::MatrixXd x = Eigen::MatrixXd::Zero(nf, num_handles);
  // The unconstrained minimizers start the active sets and ADMM. A given start replaces both, so
  // then they are solved for only should the zero-sum fallback below need them.
  Eigen::MatrixXd unconstrained = x;
  const bool use_start = given_start != nullptr && !monotone_only;
  std::atomic<int> factorizations{0}, updates{0};
  const std::function<bool()> cancelled = [&progress] { return progress.Cancelled(); };

  if (nf > 0) {
    ASSIGN_OR_RETURN(std::unique_ptr<Factor> unconstrained_factor, AnalyzeA(&p, cancelled));
    if (!use_start) {
      RETURN_IF_ERROR(SolveUnconstrained(&p, unconstrained_factor.get(), &unconstrained, &factorizations, cancelled));
    }
    if (progress.Cancelled()) return absl::CancelledError("cancelled");
    int threads = ResolveThreads(options.threads);
    threads = std::max(1, std::min<int>(threads, static_cast<int>(todo.size())));
    const SingleThreadedBlas single_threaded_blas(threads > 1);
    Eigen::MatrixXd guess;
    if (use_start) {
      guess.resize(nf, num_handles);
      for (int k = 0; k < nf; ++k) guess.row(k) = given_start->row(p.free_nodes[k]);
      r.given_start = true;
    } else if (options.admm_iterations > 0 && !monotone_only) {
      const auto admm_start = std::chrono::steady_clock::now();
      RETURN_IF_ERROR(AdmmWarmStart(&p, unconstrained_factor.get(), unconstrained, options,
                                    threads, cancelled, &guess,
                                    &factorizations, &r.admm_rho));
      r.admm_iterations = options.admm_iterations;
      r.admm_seconds = SecondsSince(admm_start);
    }
    unconstrained_factor.reset();

    std::atomic<bool> stop{false};
    auto should_stop = [&stop, &progress] { return stop.load() || progress.Cancelled(); };
    std::vector<std::unique_ptr<HandleSolver>> solvers;
    for (int t = 0; t < threads; ++t) {
      solvers.push_back(
          std::make_unique<HandleSolver>(p, options, &factorizations, &updates, should_stop, monotone_only));
    }

    // Workers take handles in turn; this thread relays progress and watches for cancellation,
    // so the callback only ever runs on the caller's thread.
    std::mutex mu;
    std::condition_variable cv;
    int done = 0, finished_workers = 0;
    absl::Status first_error;
    std::atomic<int> next{0};
    std::vector<HandleResult> results(num_handles);
    auto work = [&](HandleSolver* solver) {
      if (threads > 1) DisableOpenMpOnThisThread();
      while (!should_stop()) {
        const int k = next.fetch_add(1);
        if (k >= static_cast<int>(todo.size())) break;
        const int h = todo[k];
        Eigen::VectorXd xh = unconstrained.col(h);
        Eigen::VectorXd gh;
        if (guess.size() > 0) gh = guess.col(h);
        absl::Status hs = solver->Solve(h, &xh, &results[h], guess.size() > 0 ? &gh : nullptr);
        std::lock_guard<std::mutex> lock(mu);
        if (hs.ok()) {
          x.col(h) = xh;
          ++done;
        } else if (first_error.ok()) {
          first_error = hs;
          stop = true;
        }
        cv.notify_all();
      }
      std::lock_guard<std::mutex> lock(mu);
      ++finished_workers;
      cv.notify_all();
    };
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(work, solvers[t].get());
    int reported = -1;
    while (true) {
      int now_done, now_finished;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait_for(lock, std::chrono::milliseconds(50));
        now_done = done;
        now_finished = finished_workers;
      }
      if (progress.Cancelled()) stop = true;
      if (now_done != reported) {
        reported = now_done;
        const int empty = num_handles - static_cast<int>(todo.size());
        progress.Report("bbw", static_cast<double>(now_done + empty) / num_handles);
      }
      if (now_finished == threads) break;
    }
    for (std::thread& t : pool) t.join();
    if (progress.Cancelled()) return absl::CancelledError("cancelled");
    RETURN_IF_ERROR(first_error);
    for (int h : todo) {
      r.iterations[h] = results[h].iterations;
      r.max_violation_before_clamp =
          std::max(r.max_violation_before_clamp, results[h].max_violation);
    }
  }

  Eigen::MatrixXd W = Scatter(p, x);
  if (options.normalize) {
    W = W.cwiseMax(0.0).cwiseMin(1.0);
    Eigen::MatrixXd fallback;  // the clamped unconstrained weights, built when first needed
    for (int i = 0; i < p.num_nodes; ++i) {
      double sum = W.row(i).sum();
      if (!(sum > 0.0)) {
        if (fallback.size() == 0) {
          if (use_start && nf > 0) {  // not solved above
            Factor factor;
            RETURN_IF_ERROR(factor.AnalyzeGiven(p.lower, p.order));
            RETURN_IF_ERROR(SolveUnconstrained(&p, &factor, &unconstrained, &factorizations, cancelled));
          }
          fallback = Scatter(p, unconstrained).cwiseMax(0.0).cwiseMin(1.0);
        }
        W.row(i) = fallback.row(i);
        sum = W.row(i).sum();
        ++r.zero_sum_nodes;
        if (!(sum > 0.0)) {
          return absl::InternalError(absl::StrFormat("bbw: node %d has no positive weight", i));
        }
      }
      W.row(i) /= sum;
    }
  }
  r.factorizations = factorizations.load();
  r.updates = updates.load();
  r.seconds = SecondsSince(start);
  progress.Report("bbw", 1.0);
  if (report != nullptr) *report = std::move(r);
  return W;
}

}  // namespace

}  // namespace skinning
