// The FAST model's data and the precomputation steps its files share. Internal to core/solve
// (fast_precompute.cc, fast_clusters.cc, fast_extra_weights.cc, fast_model_io.cc,
// fast_solver.cc); the API is fast_skinning.h.
#ifndef SKINNING_CORE_SOLVE_FAST_MODEL_H_
#define SKINNING_CORE_SOLVE_FAST_MODEL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include <Eigen/Core>

#include "core/solve/fast_skinning.h"

namespace skinning {
namespace fast_internal {
// The solution operators of the constraint sets solvers on one model used last (fast_solver.cc).
struct OperatorCache;
std::shared_ptr<OperatorCache> NewOperatorCache();
}  // namespace fast_internal

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
  // Filled by FastSolver::SetConstraints and shared by every solver on the model (sessions and
  // calls): a constraint set used lately costs no KKT solve. Created with the model.
  std::shared_ptr<fast_internal::OperatorCache> operators = fast_internal::NewOperatorCache();
  int total() const { return m + extra; }
};

namespace fast_internal {

// k-means in weight space: Lloyd iterations from k-means++ seeds drawn with mt19937(seed) (its
// output sequence is fixed by the standard, so the result is deterministic). With k ≥ #points
// every point is its own cluster. Empty clusters are dropped; returns the cluster per point and
// sets *k_out to the number of clusters.
std::vector<int> KMeans(const Eigen::MatrixXd& X, int k, int iterations, unsigned seed,
                        int* k_out);

// Extra weights (paper Sec. 3.3).
// Optimized farthest points (Eq. 16–17) among candidate weight vectors (rows of C): p seeds,
// each at the candidate maximizing min(distance to the other seeds, ½ distance to the
// corners). Greedy initialization, then sweeps moving one seed at a time until none moves.
void PlaceSeeds(const Eigen::MatrixXd& C, int p, Eigen::MatrixXd* seeds, Eigen::VectorXd* radii);

// [W E] / (1 + Σ E): the original weights W (n by m, rows sum to one) with the extra weights
// E_i = B(‖w − s_i‖ / radius_i) appended, zero wherever an original weight is one, and all
// divided by the row sum to keep a partition of unity.
Eigen::MatrixXd AppendExtraWeights(const Eigen::MatrixXd& W, const Eigen::MatrixXd& seeds,
                                   const Eigen::VectorXd& radii);

}  // namespace fast_internal
}  // namespace skinning

#endif  // SKINNING_CORE_SOLVE_FAST_MODEL_H_
