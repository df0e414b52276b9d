// The FAST per-frame solve: per constraint set the KKT solution operators, per frame
// local (cluster rotations) / global (handle transforms) iterations in float.
#include "core/solve/fast_skinning.h"

#include <Eigen/Dense>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <list>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "core/math/rotation_ascent.h"
#include "core/math/svd3.h"
#include "core/skinning/simd4.h"  // SKINNING_HOT_CLONES
#include "core/solve/fast_model.h"

namespace skinning {
namespace {

using MatrixXfc = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic>;  // column-major

// The rotation nearest to S (3x3), det +1 — the local step's only nonlinear piece.
inline Eigen::Matrix3f ClosestRotation3f(const Eigen::Matrix3f& S) { return NearestRotation(S); }
inline Eigen::Matrix3d ClosestRotation3d(const Eigen::Matrix3d& S) { return NearestRotation(S); }

// The local step warm-starts each cluster's rotation (core/math/rotation_ascent.h): at most this
// many ascent steps; a cluster stops as soon as its update is below ~1e-3 rad, so settled
// clusters cost one step.
constexpr int kRotationSteps = 4;
constexpr float kRotationStepNegligible = 1e-14f;
constexpr float kRotationStepTolerance = 2.5e-7f;  // |ω/2|², i.e. |ω| ≈ 1e-3

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

// Normalized energy of a normalized stacked Tn (4m' by 3) with optimal rotations. The energy does
// not change when every handle moves by one translation (the weights sum to 1 at every vertex),
// so it is evaluated with the handles' mean translation taken off: far from the origin the
// quadratic and linear terms would otherwise be huge and cancel (at 1e8 the energy came out
// negative).
double NormalizedEnergy(const FastModel& model, Eigen::MatrixXd Tn) {
  const int mm = static_cast<int>(Tn.rows() / 4);
  Eigen::RowVector3d mean = Eigen::RowVector3d::Zero();
  for (int j = 0; j < mm; ++j) mean += Tn.row(4 * j + 3);
  mean /= std::max(mm, 1);
  for (int j = 0; j < mm; ++j) Tn.row(4 * j + 3) -= mean;
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

}  // namespace

std::string FastSolveReport::BriefReport() const {
  if (energy.empty()) return absl::StrFormat("%d iterations", iterations);
  return absl::StrFormat("%d iterations, energy %.6g", iterations, energy.back());
}

namespace fast_internal {

// Constraint rows of M_eq (normalized): handle, component (0..3 for kFull, −1 for kPosition),
// and for kPosition the point (p̂, 1).
struct ConstraintRow {
  int handle;
  int component;
  Eigen::Vector4d a;
};

// What one constraint set makes of a model: the KKT solution operators (Eq. 15). Read-only once
// built, shared by every solver on the model that uses the set.
struct ConstraintOperators {
  int n4 = 0;  // 4m'
  int r3 = 0;  // 3r
  std::vector<ConstraintRow> rows;
  bool combined = false;  // iterate S = G Rᵀ + S_c (3r by 3r) instead of T then S
  MatrixXfc G;            // 3r by 3r: K̃ Γ (combined only)
  MatrixXfc gamma;        // 4m' by 3r: Γ_solve (rows of kFull handles zero)
  MatrixXfc phi;          // 4m' by c: Φ_solve
  MatrixXfc kphi;         // 3r by c: K̃ Φ
  MatrixXfc t0;           // 4m' by 3: constant part (inert handles pulled to identity)
  MatrixXfc kt0;          // 3r by 3: K̃ t0
  size_t bytes() const {
    return sizeof(float) * (G.size() + gamma.size() + phi.size() + kphi.size() + t0.size() + kt0.size());
  }
};

// The last constraint sets' operators (most recent first): at most kCachedSets, and beyond the
// newest at most kCachedBytes in all. With 256 extra weights a set's operators take about 20 MB
// and a second to build; by default about 30 kB and 0.3 ms. Operators a solver still uses stay
// alive with it when they leave the cache.
struct OperatorCache {
  static constexpr size_t kCachedSets = 4;
  static constexpr size_t kCachedBytes = size_t{64} << 20;
  std::once_flag kt_once;
  MatrixXfc kt;  // 3r by 4m': K̃ in float, the same for every set
  std::mutex mu;
  std::list<std::pair<std::string, std::shared_ptr<const ConstraintOperators>>> recent;  // guarded by mu
  // The most bytes the cache and kt held at once: written under mu, read without it (after every
  // frame of every session: FastModelOperatorBytes).
  std::atomic<size_t> most_bytes{0};

  // The operators under key, moved to the front; null when not cached.
  std::shared_ptr<const ConstraintOperators> FindLocked(const std::string& key) {
    for (auto it = recent.begin(); it != recent.end(); ++it) {
      if (it->first != key) continue;
      recent.splice(recent.begin(), recent, it);
      return it->second;
    }
    return nullptr;
  }
  std::shared_ptr<const ConstraintOperators> Find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu);
    return FindLocked(key);
  }
  // Adds ops under key (or returns the operators another solver added meanwhile).
  std::shared_ptr<const ConstraintOperators> Add(const std::string& key, std::shared_ptr<const ConstraintOperators> ops) {
    std::lock_guard<std::mutex> lock(mu);
    if (std::shared_ptr<const ConstraintOperators> added = FindLocked(key)) return added;
    recent.emplace_front(key, std::move(ops));
    size_t bytes = 0, kept = 0;
    size_t held = sizeof(float) * static_cast<size_t>(kt.size());  // kt and the sets kept
    for (auto it = recent.begin(); it != recent.end();) {
      bytes += it->second->bytes();
      if (kept > 0 && (kept >= kCachedSets || bytes > kCachedBytes)) {
        it = recent.erase(it);
      } else {
        held += it->second->bytes();
        ++kept;
        ++it;
      }
    }
    if (held > most_bytes.load()) most_bytes.store(held);  // written under mu only
    return recent.front().second;
  }
};

std::shared_ptr<OperatorCache> NewOperatorCache() { return std::make_shared<OperatorCache>(); }

}  // namespace fast_internal

int FastModelCachedConstraintSets(const FastModel& model) {
  if (model.operators == nullptr) return 0;
  std::lock_guard<std::mutex> lock(model.operators->mu);
  return static_cast<int>(model.operators->recent.size());
}

size_t FastModelOperatorBytes(const FastModel& model) {
  return model.operators == nullptr ? 0 : model.operators->most_bytes.load();
}

namespace {

using fast_internal::ConstraintOperators;
using fast_internal::OperatorCache;

// The cache key of a constraint set: per handle its kind, and a position constraint's point.
std::string ConstraintKey(const std::vector<HandleConstraint>& constraints) {
  std::string key;
  for (const HandleConstraint& c : constraints) {
    key.push_back(static_cast<char>(c.kind));
    if (c.kind == HandleConstraint::Kind::kPosition) key.append(reinterpret_cast<const char*>(c.point.data()), sizeof(double) * 3);
  }
  return key;
}

}  // namespace

struct FastSolver::State {
  FastModelPtr model;
  std::shared_ptr<OperatorCache> cache;  // the model's (its own when the model has none)
  bool ready = false;
  std::vector<HandleConstraint> constraints;  // the current set
  std::shared_ptr<const ConstraintOperators> ops;  // the current set's
  // Per-frame buffers (allocated in SetConstraints).
  std::vector<Affine34> near;  // m: the frame's targets moved by −d (Solve)
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
  if (state_->model != nullptr) {
    state_->cache = state_->model->operators != nullptr ? state_->model->operators : fast_internal::NewOperatorCache();
  }
}
FastSolver::~FastSolver() = default;
FastSolver::FastSolver(FastSolver&&) noexcept = default;
FastSolver& FastSolver::operator=(FastSolver&&) noexcept = default;

namespace {

// The operators of constraint set `constraints` on `model` (Eq. 15): the KKT system
// [L̃ M_eqᵀ; M_eq 0] solved for K̃ᵀ, the identity on the constraint rows and the inert pull.
// INVALID_ARGUMENT when the constraints pin nothing or do not determine the transforms.
//   kt  K̃ in float (the cache's), for K̃ Γ.
absl::StatusOr<std::shared_ptr<const ConstraintOperators>> BuildOperators(const FastModel& model, const MatrixXfc& kt,
                                                                          const std::vector<HandleConstraint>& constraints) {
  const int m = model.m, mm = model.total();
  const int n4 = 4 * mm, r3 = 3 * model.r;
  auto ops = std::make_shared<ConstraintOperators>();
  std::vector<fast_internal::ConstraintRow>& rows = ops->rows;
  for (int j = 0; j < m; ++j) {
    if (constraints[j].kind == HandleConstraint::Kind::kFull) {
      for (int c = 0; c < 4; ++c) rows.push_back({j, c, Eigen::Vector4d::Unit(c)});
    } else if (constraints[j].kind == HandleConstraint::Kind::kPosition) {
      Eigen::Vector4d a;
      a.head<3>() = (constraints[j].point - model.center) / model.scale;
      a(3) = 1.0;
      rows.push_back({j, -1, a});
    }
  }
  const int c = static_cast<int>(rows.size());
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
    const auto& row = rows[i];
    A.block<1, 4>(n4 + i, 4 * row.handle) = row.a.transpose();
    A.block<4, 1>(4 * row.handle, n4 + i) = row.a;
  }
  // Partial pivoting, blocked; the rank-revealing full pivoting (unblocked, 20 times slower at
  // 1,100 unknowns) only where the condition estimate says the system may be singular, for the
  // rank the error gives.
  Eigen::PartialPivLU<Eigen::MatrixXd> lu(A);
  if (!(lu.rcond() > 1e-10)) {
    Eigen::FullPivLU<Eigen::MatrixXd> full_lu(A);
    full_lu.setThreshold(1e-11);
    if (!full_lu.isInvertible()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "constraints do not determine the handle transforms (KKT rank %d of %d): e.g. too few "
          "constraints to pin the translation, or handles whose weights are linearly dependent",
          full_lu.rank(), N));
    }
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
  ops->n4 = n4;
  ops->r3 = r3;
  ops->combined = r3 <= 2 * n4;  // (3r)² ≤ 2 · 3r · 4m' multiply-adds per iteration
  ops->gamma = gamma.cast<float>();
  ops->phi = phi.cast<float>();
  ops->kphi = (model.K * phi).cast<float>();
  ops->t0 = t0.cast<float>();
  ops->kt0 = (model.K * t0).cast<float>();
  // K̃ Γ in float, from the float operands the iterations use: half the time of the double
  // product (3 GFlop with 256 extra weights), which was rounded to float anyway.
  if (ops->combined) ops->G.noalias() = kt * ops->gamma;
  return std::shared_ptr<const ConstraintOperators>(std::move(ops));
}

}  // namespace

absl::Status FastSolver::SetConstraints(const std::vector<HandleConstraint>& constraints) {
  State& st = *state_;
  if (st.model == nullptr) return absl::FailedPreconditionError("FastSolver: no model");
  const FastModel& model = *st.model;
  const int m = model.m;
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
  const std::string key = ConstraintKey(constraints);
  std::call_once(st.cache->kt_once, [&] { st.cache->kt = model.K.cast<float>(); });
  std::shared_ptr<const ConstraintOperators> ops = st.cache->Find(key);
  if (ops == nullptr) {
    absl::StatusOr<std::shared_ptr<const ConstraintOperators>> built = BuildOperators(model, st.cache->kt, constraints);
    if (!built.ok()) return built.status();
    ops = st.cache->Add(key, *std::move(built));
  }
  st.ops = ops;
  const int n4 = ops->n4, r3 = ops->r3, c = static_cast<int>(ops->rows.size());
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

absl::Status FastSolver::Solve(const std::vector<Affine34>& targets_in, std::vector<Affine34>* T,
                               int iterations, FastSolveReport* report, bool record_energy) {
  State& st = *state_;
  if (!st.ready) return absl::FailedPreconditionError("FastSolver::Solve before SetConstraints");
  const FastModel& model = *st.model;
  const int m = model.m, mm = model.total();
  if (static_cast<int>(targets_in.size()) != m) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "targets: %d given, expected one per original handle (%d)", targets_in.size(), m));
  }
  if (T == nullptr) return absl::InvalidArgumentError("T is null");
  if (iterations < 0) {
    return absl::InvalidArgumentError(absl::StrFormat("iterations = %d is negative", iterations));
  }
  const bool first_use = T->empty();
  if (first_use) {
    T->assign(mm, Affine34::Identity());  // first use only: the rest pose, moved with the constraints below
  } else if (static_cast<int>(T->size()) != mm) {
    return absl::InvalidArgumentError(
        absl::StrFormat("T: %d transforms, expected %d (handles + extra handles)", T->size(), mm));
  }
  const Eigen::Vector3d& center = model.center;
  const double scale = model.scale;
  const ConstraintOperators& op = *st.ops;
  const MatrixXfc& kt = st.cache->kt;
  const int n4 = op.n4, r3 = op.r3, c = static_cast<int>(op.rows.size());

  // The solve runs in floats, which far from the model (a character walked 1e8 away) would lose
  // the pose to rounding: the result was off by 5 units at 8e7. Translating every constraint
  // translates the result, so the frame is solved with the constraints' mean displacement d taken
  // off (in doubles) and d added back. Inert free handles stay at the identity they are pulled to.
  Eigen::Vector3d d = Eigen::Vector3d::Zero();
  int constrained = 0;
  for (int j = 0; j < m; ++j) {
    const HandleConstraint& hc = st.constraints[j];
    if (hc.kind == HandleConstraint::Kind::kFull) {
      d += targets_in[j].leftCols<3>() * center + targets_in[j].col(3) - center;
    } else if (hc.kind == HandleConstraint::Kind::kPosition) {
      d += targets_in[j].col(3) - hc.point;
    } else {
      continue;
    }
    ++constrained;
  }
  if (constrained > 0) d /= constrained;
  auto pulled_to_identity = [&](int j) {
    return model.inert[j] && (j >= m || st.constraints[j].kind == HandleConstraint::Kind::kFree);
  };
  st.near.resize(m);
  for (int j = 0; j < m; ++j) {
    st.near[j] = targets_in[j];
    st.near[j].col(3) -= d;
  }
  // On first use the start is the rest pose carried by d (the identity here), not the rest pose at
  // the origin: a character first posed far away used to start that far from its constraints.
  for (int j = 0; j < mm; ++j)
    if (!pulled_to_identity(j) && !first_use) (*T)[j].col(3) -= d;
  const std::vector<Affine34>& targets = st.near;

  // Targets (normalized) → P_eq.
  for (int i = 0; i < c; ++i) {
    const auto& row = op.rows[i];
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
  std::memcpy(st.tc.data(), op.t0.data(), sizeof(float) * n4 * 3);
  MulN3(op.phi.data(), n4, c, st.p.data(), c, st.tc.data(), true);
  std::memcpy(st.sc.data(), op.kt0.data(), sizeof(float) * r3 * 3);
  MulN3(op.kphi.data(), r3, c, st.p.data(), c, st.sc.data(), true);

  // Warm start: S = K̃ T.
  for (int j = 0; j < mm; ++j) {
    ToNormalizedBlock((*T)[j], center, scale, st.tn.data() + 4 * j, n4);
  }
  st.tf = st.tn.cast<float>();  // fixed size: no allocation
  MulN3(kt.data(), r3, n4, st.tf.data(), n4, st.s.data(), false);

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
        const Eigen::Matrix3f rk_t =
            WarmRotationAscent(sk, &st.warm[k], kRotationSteps, kRotationStepNegligible, kRotationStepTolerance);
        for (int b = 0; b < 3; ++b) {
          for (int a = 0; a < 3; ++a) st.rt(3 * k + a, b) = rk_t(a, b);
        }
      }
    }
    // Global step: T = Γ Rᵀ + T_c, then S = K̃ T (or directly S = K̃Γ Rᵀ + S_c).
    const bool last = it + 1 == iterations;
    if (op.combined) {
      if (!last) {
        std::memcpy(st.s.data(), st.sc.data(), sizeof(float) * r3 * 3);
        MulN3(op.G.data(), r3, r3, st.rt.data(), r3, st.s.data(), true);
      }
      if (last || recording) {
        std::memcpy(st.tf.data(), st.tc.data(), sizeof(float) * n4 * 3);
        MulN3(op.gamma.data(), n4, r3, st.rt.data(), r3, st.tf.data(), true);
      }
    } else {
      std::memcpy(st.tf.data(), st.tc.data(), sizeof(float) * n4 * 3);
      MulN3(op.gamma.data(), n4, r3, st.rt.data(), r3, st.tf.data(), true);
      if (!last) MulN3(kt.data(), r3, n4, st.tf.data(), n4, st.s.data(), false);
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
  for (int j = 0; j < mm; ++j)
    if (!pulled_to_identity(j)) (*T)[j].col(3) += d;
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
  // A sum of squares: below 0 only by rounding, where quad and lin are far larger than their
  // difference (targets of 1e38).
  const double energy = NormalizedEnergy(model, std::move(tn)) * model.energy_scale;
  return energy < 0 ? 0.0 : energy;  // (NaN stays NaN)
}

}  // namespace skinning
