// Energy-minimizing weights (Kavan & Sorkine 2012, Sec. 3.2, Eq. 3): the LBS weight of one
// joint's rotating part that minimizes the elastic energy (core/solve/elastic.h) summed over
// sample rotations of the joint.
#ifndef SKINNING_CORE_WEIGHTS_EMW_H_
#define SKINNING_CORE_WEIGHTS_EMW_H_

#include <cmath>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/rig/joint_frames.h"
#include "core/solve/elastic.h"
#include "core/util/progress.h"

namespace skinning {

struct EmwOptions {
  int max_iterations = 30;
  double relative_tolerance = 1e-5;  // stop when the decrease ≤ tol · energy
  double sample_angle = M_PI / 2;    // radians
  int threads = 0;                   // local-step threads, 0 = AvailableCpus()

  // INVALID_ARGUMENT naming the first bad field and its value.
  absl::Status Validate() const;
};

struct EmwReport {
  // The objective after each iteration's global step, non-increasing: Ẽ(w) of Eq. 3 evaluated
  // with the iteration's rotations (an upper bound of Ẽ(w) that is tight at convergence) plus
  // a tiny Dirichlet regularizer ½ μ wᵀ L w (μ = 1e-8 · tr(Y) / tr(L); it only decides the
  // weight of nodes no sample moves, e.g. on the twist axis).
  std::vector<double> energy;
  int iterations = 0;
  double seconds = 0.0;
  double min_weight = 0.0, max_weight = 0.0;  // extremes of the solution (no clamping applied)
  std::string stop_reason;                    // "converged", "max_iterations"
  double initial_energy = 0.0;  // the objective at the start (distance-ratio w, exact rotations)
  double factorize_seconds = 0.0;  // symbolic analysis + numeric factorization of Y_ff
  double analyze_seconds = 0.0;    // of which the symbolic analysis (fill-reducing ordering)

  // "12 iterations (converged), weights in [-0.0031, 1.002], 0.41 s"
  std::string BriefReport() const;
};

enum class EmwKind { kSwing, kTwist };

// #N weights w of the rotating part (the fixed part's weight is 1 − w: partition of unity).
//   energy  the elastic energy of the domain (BuildElasticEnergy)
//   frame   the joint's frame: center c and axes C (z along the child bone), bind space
//   kind    kSwing: samples Rx(±a), Ry(±a); kTwist: Rz(±a) — in the joint frame, about c:
//           S_i x = c + C R Cᵀ (x − c), a = options.sample_angle
//   moving  node indices where w = 1 (the rotating subtree's bone nodes)
//   fixed   node indices where w = 0 (every other joint's bone nodes)
// Minimizes Ẽ(w) = Σ_i E(v_i(w)), v_i(w) = x̃ + diag(w)(S_i x̃ − x̃), by local/global block
// descent: local = per element and sample the best rotation, warm started from the previous
// one and never worse than it (quaternion ascent on tr(Rᵀ S), parallel over elements); global =
// ONE prefactored CHOLMOD system Y_ff (Y = Σ_i D_iᵀ (L⊗I3) D_i, the sparsity of L) per call.
// The start is w = d_fixed / (d_fixed + d_moving) with graph distances over the element edges
// to the two node sets (a smooth 0→1 transition at the joint). The result is not clamped.
// INVALID_ARGUMENT for empty/overlapping/out-of-range node lists, a non-finite frame, or bad
// options; FAILED_PRECONDITION when Y_ff is singular (a domain part without constrained nodes);
// CANCELLED when cancelled (checked every iteration). Progress stage "emw", fraction =
// iterations / max_iterations.
absl::StatusOr<Eigen::VectorXd> EnergyMinimizingWeight(const ElasticEnergy& energy, const JointFrame& frame,
                                                       EmwKind kind, const std::vector<int>& moving,
                                                       const std::vector<int>& fixed,
                                                       const EmwOptions& options = {},
                                                       EmwReport* report = nullptr,
                                                       const Progress& progress = {});

// Both kinds for one joint (as two EnergyMinimizingWeight calls) sharing one symbolic analysis
// (fill-reducing ordering) of Y_ff, whose pattern depends only on the free nodes. Progress: the
// swing solve in [0, 0.6), the twist solve in [0.6, 1].
struct EmwSwingTwist {
  Eigen::VectorXd swing, twist;  // #N each
};
absl::StatusOr<EmwSwingTwist> EnergyMinimizingSwingTwistWeights(
    const ElasticEnergy& energy, const JointFrame& frame, const std::vector<int>& moving,
    const std::vector<int>& fixed, const EmwOptions& options = {}, EmwReport* swing_report = nullptr,
    EmwReport* twist_report = nullptr, const Progress& progress = {});

// The sample rotations of `kind` (bind space, about frame.center): 4 for swing, 2 for twist,
// each as an affine map x ↦ c + C R Cᵀ (x − c).
std::vector<Eigen::Affine3d> EmwSamples(const JointFrame& frame, EmwKind kind, double angle);

}  // namespace skinning

#endif  // SKINNING_CORE_WEIGHTS_EMW_H_
