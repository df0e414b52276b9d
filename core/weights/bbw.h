// Bounded biharmonic weights (Jacobson, Baran, Popović, Sorkine 2011).
#ifndef SKINNING_CORE_WEIGHTS_BBW_H_
#define SKINNING_CORE_WEIGHTS_BBW_H_

#include <Eigen/Core>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/geometry/volume_domain.h"
#include "core/util/progress.h"

namespace skinning {

struct BbwOptions {
  // Active-set iterations per handle before giving up (FAILED_PRECONDITION then).
  int max_iterations = 100;
  // The KKT tolerance ε, in weight units. The solve stops when every free weight is within
  // [−ε, 1 + ε] (the primal bounds) and every weight held at a bound has a multiplier of the
  // right sign up to ε · Aᵢᵢ (the weight would move by less than ε if released alone): the
  // KKT conditions of the QP to ε. The bi-Laplacian's condition number (about 1e8 on the
  // sample characters) limits a double-precision solve's own accuracy to about 1e-8, so a much
  // smaller ε spends active-set iterations chasing rounding noise at weights of 1e-9 (libigl
  // hand on its tet mesh: 733 factorizations at 1e-10, 379 at 1e-6 from the same start; the
  // weights differ by at most 6e-4).
  double bound_tolerance = 1e-6;
  // ADMM iterations on all handles at once (one factorization of A + ρI shared by every
  // handle) whose result gives the first active sets of the per-handle active-set solves; 0
  // starts those from the clamped unconstrained solution instead. The result satisfies the same
  // KKT tolerance either way; the warm start only saves factorizations. With the bordered
  // updates (max_update_columns) 20 was measured too (bench/bake_bench, resolutions 48–128):
  // RiggedFigure and CesiumMan took 20 % less time, but the libigl hand needed more
  // factorizations (its tet mesh 61 instead of 40, 2.5 s instead of 1.9 s; voxels at 96, 94 s
  // instead of 77 s), so 60 stays. Nor does a stop "when the estimate settles" work: counted
  // per iteration (entries of z that move between 0, (0, 1) and 1), the estimate never settles
  // within 60 iterations. At the 60th, 460–1,240 entries of a thread's 10 handles still moved on
  // the hand (tet mesh and voxels) and RiggedFigure, up to 216 in one handle, slowly falling from
  // 26,000–83,000 at the first.
  int admm_iterations = 60;
  // ADMM's penalty ρ = admm_rho_factor · √(λ_min λ_max(A)). The factor was measured: over
  // 0.003–0.1 on the libigl hand (tet mesh) and RiggedFigure (voxels, 64), 0.03 needed the
  // fewest factorizations for the time.
  double admm_rho_factor = 0.03;
  // An active-set iteration whose free set differs from the last factorized one in at most this
  // many variables solves by bordering that factorization (a triangular solve per changed
  // variable, kept for the next iterations) instead of factorizing again; 0 always factorizes.
  // The result is the same up to rounding (checked by its residual; a factorization follows
  // when the check fails). Measured with bench/bake_bench over 32–256: 128 needed the least
  // time on the libigl hand (tet mesh and voxels) and RiggedFigure.
  int max_update_columns = 128;
  // On a voxel grid (the bakes, through BbwCoarseStart): the first active sets come from the
  // solution on the grid of half the resolution, itself started the same way while its half is at
  // least this resolution; with 0, or above half the resolution, they come from ADMM alone. The
  // coarse solve costs a fraction of the fine one and replaces ADMM, whose iterations each cost a
  // triangular solve per handle on the fine grid; the weights are the same QP minimizers to the
  // KKT tolerance. Measured with bench/bake_bench --bbw_coarsest (README "BBW time against
  // resolution").
  int coarsest_resolution = 32;
  // Solve handles on this many threads (0 = the CPUs this process may use, AvailableCpus).
  int threads = 0;
  // false: skip the clamp and the partition-of-unity division and return each handle's QP
  // minimizer as solved (free entries within [0, 1] up to bound_tolerance) — for inspecting the
  // per-handle problems (KKT checks in tests); the service always normalizes.
  bool normalize = true;

  // INVALID_ARGUMENT naming the first bad field and its value.
  absl::Status Validate() const;
};

struct BbwReport {
  std::vector<int> iterations;  // active-set iterations per handle
  int factorizations = 0;
  int updates = 0;  // active-set iterations solved by bordering a factorization (max_update_columns)
  double max_violation_before_clamp = 0.0;  // largest bound violation after the last iteration
  double seconds = 0.0;
  int admm_iterations = 0;     // warm-start ADMM iterations run
  double admm_rho = 0.0;       // its penalty ρ
  double admm_seconds = 0.0;   // its time
  bool given_start = false;    // the first active sets came from the caller's start (no ADMM)
  // Nodes whose clamped weights were all zero, so that the division by their sum was undefined;
  // they get their clamped unconstrained biharmonic weights (which sum to 1 before clamping, so
  // some are positive) divided by their sum instead. Expected to stay 0.
  int zero_sum_nodes = 0;

  // "60 ADMM warm-start iterations (rho 69.4, 0.45 s), 40 factorizations, 74 updates, 112
  // active-set iterations in all, at most 21 per handle, 1.67 s"
  std::string BriefReport() const;
};

// For each handle h (handle_nodes[h] = its pinned nodes, non-empty), minimizes the bi-Laplacian
// energy ½ wᵀ Q w with Q = K M⁻¹ K (K, M from the domain) subject to 0 ≤ w ≤ 1, w = 1 on h's
// nodes (1/k on a node k handles share) and 0 on every other handle's nodes — a
// bound-constrained QP solved to its KKT conditions within options.bound_tolerance (active set
// on CHOLMOD factorizations) — then divides each node's weights by their sum (partition of
// unity).
// Returns #N by #handles. Handles with empty node lists get a zero column.
//
//   domain        K (#N by #N), mass (#N) and nodes (#N rows) are read; other fields are unused.
//   handle_nodes  #handles lists of node indices in [0, #N). A node listed by k handles (a joint
//                 shared by k bones: SplitSharedJoints) is pinned to 1/k for each of them and 0
//                 for the others, as libigl's boundary conditions split such nodes.
//   start         optional #N by #handles estimate of the per-handle minimizers (e.g. a coarser
//                 grid's, BbwCoarseStart): entries ≤ 0 and ≥ 1 give the first active sets in
//                 place of the ADMM estimate, anything else (NaN too) starts free. The result
//                 satisfies the same KKT tolerance whatever the start; a good start saves time.
//
// Method: one fill-reducing ordering of A (the free-node block of Q); the given start, or else
// one factorization of A (all handles' unconstrained solutions) and options.admm_iterations of
// ADMM on all handles at once, with one more factorization (of A + ρI) shared by every handle,
// estimate the active sets; then
// a primal-dual active-set method (Hintermüller, Ito & Kunisch 2002) per handle starts from
// those sets and stops when they repeat, which certifies the KKT conditions to
// bound_tolerance. Should the sets cycle, a monotone primal active-set method with a feasible
// line search takes over. Each active-set iteration factorizes only the free-variable block in
// the global ordering, or, when its free set is within options.max_update_columns changed
// variables of the last factorized one, borders that factorization (see bbw.cc). Handles and ADMM columns are spread over `threads`; each
// worker thread runs CHOLMOD without its OpenMP loops and, with threads > 1 and OpenBLAS as
// the BLAS, OpenBLAS is pinned to one thread while they run (restored afterwards).
//
// Errors: INVALID_ARGUMENT for sizes that disagree in the domain, non-positive masses, a node
// index out of range, or no handle with nodes; FAILED_PRECONDITION when
// the reduced system is singular (a connected part of the domain without handle nodes) or a
// handle does not converge within max_iterations; CANCELLED when cancelled. Progress: stage
// "bbw", fraction = handles done / handles.
absl::StatusOr<Eigen::MatrixXd> BoundedBiharmonicWeights(
    const VolumeDomain& domain, const std::vector<std::vector<int>>& handle_nodes,
    const BbwOptions& options = {}, BbwReport* report = nullptr, const Progress& progress = {},
    const Eigen::MatrixXd* start = nullptr);

}  // namespace skinning

#endif  // SKINNING_CORE_WEIGHTS_BBW_H_
