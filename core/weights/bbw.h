// Bounded biharmonic weights (Jacobson, Baran, Popović, Sorkine 2011).
#ifndef SKINNING_CORE_WEIGHTS_BBW_H_
#define SKINNING_CORE_WEIGHTS_BBW_H_

#include <vector>

#include <Eigen/Core>

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
};

struct BbwReport {
  std::vector<int> iterations;  // active-set iterations per handle
  int factorizations = 0;
  double max_violation_before_clamp = 0.0;  // largest bound violation after the last iteration
  double seconds = 0.0;
};

// For each handle h (handle_nodes[h] = its pinned nodes, non-empty), minimizes the bi-Laplacian
// energy ½ wᵀ Q w with Q = K M⁻¹ K (K, M from the domain) subject to 0 ≤ w ≤ 1, w = 1 on h's
// nodes and 0 on every other handle's nodes — an exact bound-constrained QP solve (active set on
// CHOLMOD factorizations) — then divides each node's weights by their sum (partition of unity).
// Returns #N by #handles. Handles with empty node lists get a zero column.
absl::StatusOr<Eigen::MatrixXd> BoundedBiharmonicWeights(
    const VolumeDomain& domain, const std::vector<std::vector<int>>& handle_nodes,
    const BbwOptions& options = {}, BbwReport* report = nullptr, const Progress& progress = {});

}  // namespace skinning

#endif  // SKINNING_CORE_WEIGHTS_BBW_H_
