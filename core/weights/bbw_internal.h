// Pieces of the bounded biharmonic weights solve exposed for tests; not part of the service API.
#ifndef SKINNING_CORE_WEIGHTS_BBW_INTERNAL_H_
#define SKINNING_CORE_WEIGHTS_BBW_INTERNAL_H_

#include <Eigen/Core>
#include <vector>

#include "absl/status/statusor.h"
#include "core/geometry/volume_domain.h"
#include "core/weights/bbw.h"

namespace skinning {
namespace internal {

// The unconstrained biharmonic weights that warm-start BoundedBiharmonicWeights: for each
// handle h, the minimizer of ½ wᵀ Q w (Q = Kᵀ M⁻¹ K) with w = 1 on h's nodes and 0 on the other
// handles' nodes and no bounds, not normalized. #N by #handles; empty handles get a zero column.
// Same validation and errors as BoundedBiharmonicWeights.
absl::StatusOr<Eigen::MatrixXd> UnconstrainedBiharmonicWeights(
    const VolumeDomain& domain, const std::vector<std::vector<int>>& handle_nodes);

// BoundedBiharmonicWeights with the monotone primal active-set method only (the fallback for
// when the primal-dual sets cycle), started from the clamped unconstrained weights. Each
// iteration fixes one bound or frees one, so this needs a larger max_iterations.
absl::StatusOr<Eigen::MatrixXd> BoundedBiharmonicWeightsMonotone(
    const VolumeDomain& domain, const std::vector<std::vector<int>>& handle_nodes,
    const BbwOptions& options, BbwReport* report = nullptr);

}  // namespace internal
}  // namespace skinning

#endif  // SKINNING_CORE_WEIGHTS_BBW_INTERNAL_H_
