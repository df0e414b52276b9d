// The geometric elastic energy of Chao et al. 2010 on a volume domain, in the edge form of Kavan
// & Sorkine 2012 (Eq. 1-2), and the "gold standard" full nonlinear minimizer with pinned bone
// nodes (local/global iterations, Sorkine & Alexa 2007).
#ifndef SKINNING_CORE_SOLVE_ELASTIC_H_
#define SKINNING_CORE_SOLVE_ELASTIC_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <Eigen/Geometry>
#include <Eigen/SparseCore>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/geometry/mesh.h"
#include "core/geometry/volume_domain.h"
#include "core/util/progress.h"

namespace skinning {

// For each element e (voxel: its 12 cube edges; tet: its 6 edges) with weight
// ω_e = vol_e / Σ_{edges of e} |d̃|²  (d̃ = x̃_a − x̃_b the rest edge vector; uniform on a regular
// grid, so minimizers equal the paper's uniform model):
//   E(X) = Σ_e ω_e Σ_{(a,b) ∈ edges(e)} ½ |(x_a − x_b) − R_e (x̃_a − x̃_b)|²,
//   R_e = argmax_{R ∈ SO(3)} tr(Rᵀ S_e),  S_e = Σ_{edges} ω_e (x_a − x_b)(x̃_a − x̃_b)ᵀ.
// Expanded: E(X) = ½ tr(Xᵀ L X) − Σ_e tr(R_eᵀ S_e(X)) + c0 with the scalar (#N by #N) graph
// Laplacian L = Σ_e ω_e B_e B_eᵀ (B_e the oriented edge incidence of element e) and the
// rest-pose term c0 = ½ Σ_e ω_e Σ |d̃|² = ½ Σ_e vol_e. E ≥ 0, E = 0 exactly for rigid motions of
// the rest nodes.

struct ElasticEnergy {
  RowMatrixX3d rest;  // #N by 3 rest node positions x̃ (bind space)
  // The elements' nodes: #elements by 8 (voxel corners, x-fastest) or by 4 (tet vertices).
  Eigen::Matrix<int32_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> elements;
  // Every element's edges, element-major: element e owns rows
  // [e · edges_per_element, (e + 1) · edges_per_element) of `edges` (node a, node b) and of
  // `rest_edges` (d̃ = x̃_a − x̃_b). 12 per voxel, 6 per tet.
  int edges_per_element = 0;
  Eigen::Matrix<int32_t, Eigen::Dynamic, 2, Eigen::RowMajor> edges;  // #elements·epe by 2
  RowMatrixX3d rest_edges;                                           // #elements·epe by 3
  // Row e · npe + k (npe = elements.cols()): q = ω_e Σ_{edges (a,b) of e} (±d̃), + where the
  // element's k-th node n is a, − where it is b. Then S_e(X) = Σ_k x_{n_k} q_kᵀ and the global
  // step's right-hand side gains R_e q_k at node n_k.
  RowMatrixX3d corner_vectors;  // #elements·npe by 3
  Eigen::VectorXd weight;       // #elements ω_e = vol_e / Σ_edges |d̃|² (> 0)
  Eigen::VectorXd volume;       // #elements vol_e (= tr S_e(x̃))
  // #N by #N scalar Laplacian Σ_e ω_e B_e B_eᵀ: symmetric, positive semi-definite, rows sum to 0.
  Eigen::SparseMatrix<double> L;
  int num_nodes() const { return static_cast<int>(rest.rows()); }
  int num_elements() const { return static_cast<int>(weight.size()); }
};

// Builds the energy of a domain (voxel grid: elements are #cells by 8 corners; tet mesh: #T by
// 4). INVALID_ARGUMENT for a domain without elements, an element of an unexpected width, a node
// index out of range, or a degenerate element (all edges of zero length).
absl::StatusOr<ElasticEnergy> BuildElasticEnergy(const VolumeDomain& domain);

// E(X) with the best rotation of every element (exact nearest rotations, svd3.h).
//   X  #N by 3 node positions (same numbering as energy.rest). Requires X.rows() == #N.
double ElasticEnergyValue(const ElasticEnergy& energy, const RowMatrixX3d& X);

struct ElasticOptions {
  int max_iterations = 500;
  double relative_tolerance = 1e-6;  // stop when E_prev − E ≤ tol · max(E_prev, E_floor)
  // E_floor = ½ floor_strain² Σ_e vol_e, the energy of a uniform strain of floor_strain (every
  // edge stretched by 1 + floor_strain). Near the rest pose E tends to 0, and 1e-6 of it asks for
  // far more precision than in a bent pose: on RiggedFigure's animation (bench/emw_bench) frames
  // below a 1 % strain's energy took as many iterations as bent ones, and with the floor they
  // stop at a node error under the bent frames' (README "The gold standard's solver"). 0 = the
  // relative rule alone.
  double floor_strain = 0.01;
  int threads = 0;                   // 0 = AvailableCpus() (affinity, cgroup quota)
  // Anderson acceleration of the local/global iterations with this many past iterates (Peng et
  // al. 2018; 0 = plain local/global). An accelerated step is kept only when it lowers E, else
  // the plain step is taken, so E stays non-increasing. bench/emw_bench measures the default.
  // Newton's method (exact Hessian, CG preconditioned by the L_ff factorization) was measured
  // and not kept: slower than Anderson from warm and cold starts (README "The gold standard's
  // solver" has the figures).
  int anderson_history = 5;
  // With `initial` (or `starts`) given to Solve: the default start competes too, and the lowest
  // energy once the pinned nodes are placed is taken (a session's last frame is usually nearer
  // the new minimizer; after a jump in the pose the default start may be).
  bool keep_lower_start = false;
  // > 0: the first of the given starts is taken, without trying the others or the default start
  // (a local step each), when its energy is at most this. Sessions pass Prediction::enough, so
  // that a frame of a smooth motion costs one local step before its iterations instead of three.
  double first_start_enough = 0.0;
  // κ ≥ 0: adds κ · Σ_e ½ ω_e Σ_edges |d − V_e d̃|² to E, V_e the matrix of determinant 1 nearest
  // (Frobenius) to the element's best-fit deformation gradient F_e — the volume constraint of
  // Projective Dynamics (Bouaziz et al. 2014) as a penalty. 0 (the default) is the gold standard
  // of DESIGN.md (ARAP: Poisson ratio 0, so a bent limb thins); κ ≈ 10 gives a nearly
  // incompressible solid, closer to real tissue (a bent elbow bulges). Local step: the target of
  // each element becomes (R_e + κ V_e) / (1 + κ); the global step is unchanged; E (the combined
  // energy) is still non-increasing. Voxel domains only (their cells are cubes, so V_e is the exact
  // minimizer); INVALID_ARGUMENT on a tet domain when κ > 0. Energy() stays the ARAP energy.
  double volume_weight = 0.0;
  // Where joint j's pinned node at bind position x̃ goes; empty = T[j]·x̃ (rigid bones). Set it
  // for bones that are not rigid, e.g. stretched bones (bench/quality: each bone node moves with
  // the STBS stretch at its projection onto the bone).
  std::function<Eigen::Vector3d(int joint, const Eigen::Vector3d& rest)> pin_map;

  // INVALID_ARGUMENT naming the first bad field and its value.
  absl::Status Validate() const;
};

struct ElasticReport {
  int iterations = 0;
  std::vector<double> energy;  // after each iteration (non-increasing)
  double seconds = 0.0;
  std::string stop_reason;     // "converged" or "max_iterations"
  double initial_energy = 0.0;  // E of the start, before the first iteration
  int anderson_rejected = 0;    // accelerated steps refused by the energy check (plain step taken)
  // The start taken: an index into `starts` (0 for `initial`), or −1 for the default start (none
  // given, or keep_lower_start chose it over the given ones).
  int start_index = -1;
  int starts_tried = 0;  // starts whose energy was computed (1 when the first was enough)
  // With options.volume_weight > 0, `energy` and `initial_energy` are the combined energy.

  // "87 iterations (converged), energy 0.0312 → 0.00451, 1.2 s"
  std::string BriefReport() const;
};

// The gold-standard model: owns the domain, the pinned nodes and the CHOLMOD factorization of
// L_ff (the free-free block of L). Solve() is const and may be called from several threads (calls
// are serialized on the factorization's workspace).
class ElasticModel {
 public:
  //   handle_nodes   per joint, its pinned nodes (e.g. the rigid bone nodes of
  //                  core/weights/handles.h; empty lists allowed for non-deforming joints; at
  //                  least one node overall)
  //   start_weights  #N by #joints weights for the default start of Solve (DefaultStart): the
  //                  DQS blend of the joints' transforms with these weights (BuildElasticModel
  //                  passes geodesic voxel weights from handle_nodes)
  // INVALID_ARGUMENT for a node index out of range, a node listed twice, no pinned node, start
  // weights of the wrong shape or not finite, or a domain without elements; FAILED_PRECONDITION
  // when a connected part of the domain has no pinned node (L_ff singular). CANCELLED when
  // cancelled. Progress stages "elastic energy", "factorize".
  static absl::StatusOr<std::shared_ptr<const ElasticModel>> Create(
      VolumeDomain domain, std::vector<std::vector<int>> handle_nodes,
      Eigen::MatrixXd start_weights, const Progress& progress = {});

  ~ElasticModel();
  ElasticModel(const ElasticModel&) = delete;
  ElasticModel& operator=(const ElasticModel&) = delete;

  // Node positions (#N by 3) minimizing E with every node of joint j's list at T[j]·x̃.
  //   T        #joints skinning transforms (bind space), as SkinningTransforms gives them.
  //   initial  #N by 3 start, or nullptr for the default start: the DQS blend (dqs.h) of the
  //            joints' transforms with the start weights given to Create, exact on the pinned
  //            nodes (with geodesic voxel weights it is smooth and free of inverted elements for
  //            180° twists).
  // Local/global iterations (Sorkine & Alexa 2007): local = exact best rotation per element
  // (svd3.h, parallel over elements on options.threads), global = the prefactored L_ff solve
  // for 3 right-hand sides. Each iteration does not increase E. Stops when the decrease is
  // ≤ relative_tolerance · max(E_prev, E_floor) (options.floor_strain; "converged", also when E
  // reaches 0) or after max_iterations.
  // INVALID_ARGUMENT for a wrong T count, a non-finite transform, a wrong initial shape or bad
  // options; CANCELLED when progress cancels (checked every iteration). Progress stage
  // "elastic solve", fraction = iterations / max_iterations.
  absl::StatusOr<RowMatrixX3d> Solve(const std::vector<Eigen::Affine3d>& T, const RowMatrixX3d* initial,
                                     const ElasticOptions& options, ElasticReport* report = nullptr,
                                     const Progress& progress = {}) const;
  // The same from whichever of `starts` (each #N by 3, pinned nodes placed first) has the lowest
  // energy, and the default start too with options.keep_lower_start (or when `starts` is empty).
  // Each start's energy comes from the local step the first iteration needs anyway, so choosing
  // costs one local step per extra start. report->start_index says which was taken.
  absl::StatusOr<RowMatrixX3d> Solve(const std::vector<Eigen::Affine3d>& T,
                                     const std::vector<const RowMatrixX3d*>& starts, const ElasticOptions& options,
                                     ElasticReport* report = nullptr, const Progress& progress = {}) const;
  // The default start of Solve (see there) for transforms T (#joints); the pinned nodes are set
  // exactly. INVALID_ARGUMENT for a wrong T count.
  absl::StatusOr<RowMatrixX3d> DefaultStart(const std::vector<Eigen::Affine3d>& T) const;

  // A start for the next frame of a session from the last one's solution X_prev (solved for
  // T_prev): X_prev moved by the DQS blend, with the start weights, of each joint's change
  // T[j] · T_prev[j]⁻¹ (rigid where one joint dominates, so a bend carries the elastic solution
  // along instead of leaving it behind the moved pins). INVALID_ARGUMENT for wrong counts or shapes.
  absl::StatusOr<RowMatrixX3d> CarryForward(const RowMatrixX3d& X_prev, const std::vector<Eigen::Affine3d>& T_prev,
                                            const std::vector<Eigen::Affine3d>& T) const;

  // What a session or clip keeps of its last frame for the next one's start (NextStart).
  struct FrameHistory {
    std::vector<Eigen::Affine3d> T;  // the last frame's transforms
    RowMatrixX3d X;                  // its solution
    // The frame before's transforms and the last solution's departure from the start carried
    // forward from it (X − CarryForward(X_before, T_before, T)); empty after a first frame.
    std::vector<Eigen::Affine3d> T_before;
    RowMatrixX3d correction;
    double energy = 0.0;  // E(X) as its solve reported it; 0 when not known
  };
  struct Prediction {
    RowMatrixX3d start;    // the start for the new frame
    RowMatrixX3d carried;  // CarryForward(last.X, last.T, T): the new frame's history needs it
    double continuation = 0.0;  // s below; 0 when the history has no correction
    bool predicted = false;     // start is a prediction (s ≠ 0; else it is `carried`)
    // The starts to give Solve: {&start, &carried} after a prediction, else {&carried}.
    std::vector<const RowMatrixX3d*> Starts() const;
    // For ElasticOptions::first_start_enough: 1.25 × the last frame's energy (0 when the history
    // does not know it). In a smooth motion the energy changes by a few percent a frame, so a
    // start below this bound is as near the minimizer as a warm start gets, and the other starts
    // are not tried; after a jump of the pose it is above, and every start competes.
    double enough = 0.0;
  };
  // The next frame's start from the last frame: X carried forward (CarryForward) plus the last
  // correction carried along with it, scaled by s, the new joint motion's projection onto the
  // last one (per joint the change T·T_last⁻¹ as rotation vector and translation over the
  // domain's diagonal; s = ⟨Δ_new, Δ_last⟩ / |Δ_last|², clamped to [−1, 2]). A motion that goes on
  // at the same pace (s = 1) starts the new frame from a second-order prediction instead of the
  // first-order carried start: in bench/emw_bench a 1° step of a 90° bend takes 3 iterations
  // instead of 8. A reversal (s = −1) undoes the correction; a motion across the last (s = 0) is
  // the plain carried start. Solve from {start, carried} (the multi-start Solve) so that the
  // prediction is taken only when its energy is the lower: where the path of minimizers turns,
  // the last correction can point the wrong way. Extrapolating the last two corrections (the
  // quadratic through them) was measured and not kept: nearer the minimizer only for 1° steps
  // (README "The gold standard's solver"). INVALID_ARGUMENT for wrong counts or shapes.
  absl::StatusOr<Prediction> NextStart(const FrameHistory& last, const std::vector<Eigen::Affine3d>& T) const;
  // The history after solving frame T to X from `prediction` (made from `last`); `energy` is
  // E(X), the solve's report.energy.back() (0 when not known).
  static FrameHistory NextHistory(const FrameHistory& last, const Prediction& prediction,
                                  std::vector<Eigen::Affine3d> T, RowMatrixX3d X, double energy = 0.0);

  double Energy(const RowMatrixX3d& X) const;        // ElasticEnergyValue on this domain
  RowMatrixX3d ToMesh(const RowMatrixX3d& X) const;  // domain.to_mesh * X  (#V by 3)
  const VolumeDomain& domain() const;
  const std::vector<std::vector<int>>& handle_nodes() const;
  const ElasticEnergy& energy() const;

  struct Impl;

 private:
  ElasticModel();
  std::unique_ptr<Impl> impl_;
};

}  // namespace skinning

#endif  // SKINNING_CORE_SOLVE_ELASTIC_H_
