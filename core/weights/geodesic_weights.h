// Geodesic voxel weights (after Dionne & de Lasa 2013, and the volumetric geodesic distance of
// Yamamoto et al.): Dijkstra over the domain's node graph from each handle's nodes, then
// weights from inverse powers of the geodesic distances to the nearest handles, or from the
// paper's own weight function (GeodesicWeightsOptions::dionne_falloff).
#ifndef SKINNING_CORE_WEIGHTS_GEODESIC_WEIGHTS_H_
#define SKINNING_CORE_WEIGHTS_GEODESIC_WEIGHTS_H_

#include <string>
#include <vector>

#include <Eigen/Core>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/geometry/volume_domain.h"
#include "core/util/progress.h"

namespace skinning {

struct GeodesicWeightsOptions {
  // w_ih ∝ (d_ih + ε)^(−falloff) over the `max_influences` nearest handles of node i
  // (ε = half the mean graph edge length keeps handle nodes finite): 2 is inverse squared
  // distance; larger values make sharper transitions. The default, 12, was chosen with
  // bench/weights_quality on the shared characters (posed distance to their own weights): 2
  // blended far too widely (1.1 % RMS on the arm, 1.4 % on CesiumMan; 12: 0.33 % and 0.25 %).
  double falloff = 12.0;
  // Dionne & de Lasa 2013's weight function instead of the power law, when in [0, 1]:
  // w_ih ∝ (1 / ((1 − α) d̂ + α d̂²))², d̂ = (d_ih + ε) / D, D the diagonal of the domain's bounding
  // box and α this value (the "falloff" of Maya's geodesic voxel bind, 0..1): 0 weighs by the
  // inverse square of the normalized distance, 1 by its inverse fourth power. Negative (the
  // default) keeps the power law above, which is sharper and closer to artists' weights on the
  // shared characters (bench/weights_quality; README, "Automatic weights").
  double dionne_falloff = -1.0;
  int max_influences = 4;
  // Smoothing passes over the node graph once the weights are computed, in [0, 100]: each pass
  // moves every node that is not a handle's own node halfway to the mean of its graph neighbours
  // (w_i ← ½ w_i + ½ mean_j w_j, all nodes at once), then keeps its `max_influences` largest
  // weights, scaled to sum to 1. Rows still sum to 1 and handle nodes keep their weights; where
  // nothing is cut, a pass lowers Σ over graph edges |w_i − w_j|². It widens the transitions
  // the sharp falloff makes at the joints by a few cells, locally, where a smaller falloff would
  // widen them everywhere.
  // 0 (the default) leaves the weights as the falloff gives them: on the shared characters
  // smoothing brings the arm and CesiumMan nearer their own weights and RiggedSimple and
  // RiggedFigure farther (bench/weights_quality --smoothing=N; README, "Automatic weights").
  int smoothing = 0;
  static constexpr int kMaxSmoothing = 100;

  // INVALID_ARGUMENT naming the first bad field and its value.
  absl::Status Validate() const;
};

struct GeodesicWeightsReport {
  // The largest geodesic distance from a node to one of its `max_influences` nearest handles
  // (only those distances are computed).
  double max_finite_distance = 0.0;
  int unreachable_nodes = 0;  // nodes no handle reaches (another component of the domain)
  double seconds = 0.0;

  // "0 unreachable nodes, 0.412 s"
  std::string BriefReport() const;
};

// #N by #handles weights: 1 on a handle's own nodes, rows summing to 1. Nodes no handle reaches
// take the weights of the nearest (Euclidean) reached node. Empty handles get a zero column.
//   domain        its nodes (#N by 3) and node graph (graph_offsets/targets/lengths) are used
//   handle_nodes  #handles lists of node indices in [0, #N), the handles' own nodes (as from
//                 RasterizeHandles); a node listed for several handles is split evenly among them
// Distances: one label-setting Dijkstra over (node, handle) pairs from all handles at once, in
// which each node settles only its `max_influences` nearest handles — O(k · #edges · log) work
// for k = max_influences, independent of the number of handles (single-threaded); then
// options.smoothing passes over the graph.
// INVALID_ARGUMENT for a malformed graph, an out-of-range handle node, no handles, every handle
// empty, falloff ≤ 0 or max_influences < 1; CANCELLED when cancelled.
absl::StatusOr<Eigen::MatrixXd> GeodesicVoxelWeights(
    const VolumeDomain& domain, const std::vector<std::vector<int>>& handle_nodes,
    const GeodesicWeightsOptions& options = {}, GeodesicWeightsReport* report = nullptr,
    const Progress& progress = {});

}  // namespace skinning

#endif  // SKINNING_CORE_WEIGHTS_GEODESIC_WEIGHTS_H_
