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
  // A free variable is clamped when it leaves [0, 1] by more than this; the result is within
  // [0, 1] up to this tolerance before the final clamp and normalization.
  double bound_tolerance = 1e-10;
  // Solve handles on this many threads (0 = hardware concurrency).
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
  double max_violation_before_clamp = 0.0;  // largest bound violation after the last iteration
  double seconds = 0.0;
  // Nodes whose clamped weights were all zero, so that the division by their sum was undefined;
  // they get their clamped unconstrained biharmonic weights (which sum to 1 before clamping, so
  // some are positive) divided by their sum instead. Expected to stay 0.
  int zero_sum_nodes = 0;

  // "2 factorizations, at most 7 active-set iterations per handle, 1.23 s"
  std::string BriefReport() const;
};

// For each handle h (handle_nodes[h] = its pinned nodes, non-empty), minimizes the bi-Laplacian
// energy ½ wᵀ Q w with Q = K M⁻¹ K (K, M from the domain) subject to 0 ≤ w ≤ 1, w = 1 on h's
// nodes (1/k on a node k handles share) and 0 on every other handle's nodes — an exact bound-constrained QP solve (active set on
// CHOLMOD factorizations) — then divides each node's weights by their sum (partition of unity).
// Returns #N by #handles. Handles with empty node lists get a zero column.
//
//   domain        K (#N by #N), mass (#N) and nodes (#N rows) are read; other fields are unused.
//   handle_nodes  #handles lists of node indices in [0, #N). A node listed by k handles (a joint
//                 shared by k bones: SplitSharedJoints) is pinned to 1/k for each of them and 0
//                 for the others, as libigl's boundary conditions split such nodes.
//
// Method: a primal-dual active-set method (Hintermüller, Ito & Kunisch 2002) per handle, warm
// started from the unconstrained biharmonic solution; it stops only when the active sets repeat,
// which certifies the KKT conditions (so the result is the exact constrained minimizer, up to
// bound_tolerance). Should the sets cycle, a monotone primal active-set method with a feasible
// line search takes over. One fill-reducing ordering and one factorization give all handles'
// unconstrained solutions; each iteration then factorizes only the free-variable block in that
// ordering (see bbw.cc). With threads > 1 and OpenBLAS as the BLAS, OpenBLAS is pinned to one
// thread while the handles are solved (restored afterwards).
//
// Errors: INVALID_ARGUMENT for sizes that disagree in the domain, non-positive masses, a node
// index out of range, or no handle with nodes; FAILED_PRECONDITION when
// the reduced system is singular (a connected part of the domain without handle nodes) or a
// handle does not converge within max_iterations; CANCELLED when cancelled. Progress: stage
// "bbw", fraction = handles done / handles.
absl::StatusOr<Eigen::MatrixXd> BoundedBiharmonicWeights(
    const VolumeDomain& domain, const std::vector<std::vector<int>>& handle_nodes,
    const BbwOptions& options = {}, BbwReport* report = nullptr, const Progress& progress = {});

}  // namespace skinning

#endif  // SKINNING_CORE_WEIGHTS_BBW_H_
