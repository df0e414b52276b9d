// Fast automatic skinning transformations (Jacobson, Baran, Kavan, Popović, Sorkine 2012):
// reduced ARAP in the LBS subspace, precomputed per character, solved per frame.
#ifndef SKINNING_CORE_SOLVE_FAST_SKINNING_H_
#define SKINNING_CORE_SOLVE_FAST_SKINNING_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/geometry/mesh.h"
#include "core/geometry/volume_domain.h"
#include "core/util/progress.h"

namespace skinning {

// A precomputation per character (PrecomputeFast: a bake artifact), a small precomputation per
// constraint set (FastSolver::SetConstraints), and a per-frame local/global solve that returns
// the handle transforms (FastSolver::Solve).

enum class FastEnergy {
  kSurface,     // spokes and rims on the surface mesh, cotangent weights (paper Fig. 5d)
  kVolumetric,  // on the voxel grid (or a given tet mesh) interpolated from the mesh weights
};

struct FastOptions {
  FastEnergy energy = FastEnergy::kSurface;
  int clusters = 0;       // rotation clusters r (k-means in weight space); 0 = 2 × handles
                          // (m + extra); r ≥ #edge sets gives every edge set its own rotation
  int extra_weights = 0;  // extra weights: cubic B-splines around farthest-point seeds in weight
                          // space, zero where an original weight is one (paper Sec. 3.3)
  int kmeans_iterations = 100;
  unsigned seed = 1;      // k-means and farthest-point seeding are deterministic in it
  DomainOptions domain;   // kVolumetric: the voxel grid, or a given tet mesh

  // INVALID_ARGUMENT naming the first bad field and its value.
  absl::Status Validate() const;
};

struct FastReport {
  int handles = 0;        // m, the original handles
  int extra_handles = 0;  // added by extra_weights
  int clusters = 0;       // r
  double seconds = 0.0;
  DomainReport domain;  // kVolumetric only

  // "3 handles, 2 extra handles, 10 rotation clusters"
  std::string BriefReport() const;
};

// The per-character precomputation: everything the solver needs, independent of the
// constraints. Immutable; shared between sessions. Serializable (versioned bytes).
struct FastModel;
using FastModelPtr = std::shared_ptr<const FastModel>;

// W: #V by m weights of the original handles (rows sum to one). Fails with INVALID_ARGUMENT on
// shape mismatches, CANCELLED when cancelled.
absl::StatusOr<FastModelPtr> PrecomputeFast(const Mesh& mesh, const Eigen::MatrixXd& W,
                                            const FastOptions& options = {},
                                            FastReport* report = nullptr,
                                            const Progress& progress = {});

int FastModelHandles(const FastModel& model);       // m (original handles)
int FastModelTotalHandles(const FastModel& model);  // m + extra handles
int FastModelClusters(const FastModel& model);
// Constraint sets whose solution operators the model keeps for its solvers (FastSolver::
// SetConstraints): at most 4, and beyond the newest at most 64 MiB of them.
int FastModelCachedConstraintSets(const FastModel& model);
// The most memory those operators (and K̃ in float, which they share) have taken at once since the
// model was made: grows as new sets come, never falls (a bound for a cache's accounting).
size_t FastModelOperatorBytes(const FastModel& model);
// #V by (m + extra) weights of the model (for LBS of the result).
const Eigen::MatrixXd& FastModelWeights(const FastModel& model);

std::string SerializeFastModel(const FastModel& model);
absl::StatusOr<FastModelPtr> ParseFastModel(const std::string& bytes);  // DATA_LOSS when corrupt

using Affine34 = Eigen::Matrix<double, 3, 4>;

struct HandleConstraint {
  enum class Kind { kFree, kPosition, kFull };
  Kind kind = Kind::kFree;
  // kPosition: the rest-space point whose deformed position is prescribed (e.g. a joint).
  // Implemented as T_j (point, 1) = target: only handle j's transform carries the point (not
  // the blended LBS row of a mesh vertex), so a joint follows its own bone exactly.
  Eigen::Vector3d point = Eigen::Vector3d::Zero();
};

struct FastSolveReport {
  std::vector<double> energy;  // reduced energy after each iteration (when asked)
  int iterations = 0;

  // "15 iterations, energy 0.0123" (the energy when recorded)
  std::string BriefReport() const;
};

// Owns the per-constraint-set precomputation and the warm start; one per session. Per frame no
// allocation happens.
class FastSolver {
 public:
  explicit FastSolver(FastModelPtr model);
  ~FastSolver();
  FastSolver(FastSolver&&) noexcept;
  FastSolver& operator=(FastSolver&&) noexcept;

  // One constraint per original handle (extra handles are always free). Recomputes the KKT
  // solution operators only when the set differs from the current one. INVALID_ARGUMENT for a
  // wrong count or an infeasible set (e.g. no constraint at all pins the translation).
  absl::Status SetConstraints(const std::vector<HandleConstraint>& constraints);

  // One frame. targets[j]: for kFull the 3x4 transform, for kPosition column 3 holds the
  // target position (other columns ignored), for kFree ignored; size m. T: in the warm start,
  // out the result, m + extra transforms (3x4; set to identities on first use if empty).
  // `iterations` local/global steps (default 15). Fills report->energy when `report` is given
  // and record_energy is true.
  absl::Status Solve(const std::vector<Affine34>& targets, std::vector<Affine34>* T,
                     int iterations = 15, FastSolveReport* report = nullptr,
                     bool record_energy = false);

  // The reduced energy of T under the current constraint set (for tests and reports).
  double Energy(const std::vector<Affine34>& T) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace skinning

#endif  // SKINNING_CORE_SOLVE_FAST_SKINNING_H_
