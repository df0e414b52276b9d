// Algorithm 1 of Kavan & Sorkine 2012: per joint, deformer weights d (point-based BBW) and the
// swing and twist energy-minimizing weights s, t on one volume domain; and the gold-standard
// elastic model on the same domain and bone-node rasterization.
#ifndef SKINNING_CORE_WEIGHTS_SWING_TWIST_BAKE_H_
#define SKINNING_CORE_WEIGHTS_SWING_TWIST_BAKE_H_

#include <memory>
#include <vector>

#include <Eigen/Core>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/geometry/mesh.h"
#include "core/geometry/volume_domain.h"
#include "core/rig/joint_frames.h"
#include "core/rig/skeleton.h"
#include "core/solve/elastic.h"
#include "core/util/progress.h"
#include "core/weights/bake_report.h"
#include "core/weights/bbw.h"
#include "core/weights/emw.h"

namespace skinning {

struct SwingTwistBakeOptions {
  DomainOptions domain;  // default: voxel grid of resolution 64
  EmwOptions emw;
  BbwOptions bbw;  // for the deformer weights

  // INVALID_ARGUMENT naming the first bad field and its value.
  absl::Status Validate() const;
};

struct SwingTwistBakeResult {
  Eigen::MatrixXd deformer, swing, twist;  // #V by #J mesh weights: d (rows sum to 1, point BBW at
                                           // the joints), s, t per joint (columns of joints without
                                           // a deformer (JointFrame::deformer false) are 0)
  VolumeDomain domain;
  Eigen::MatrixXd node_deformer, node_swing, node_twist;  // #N by #J, the same on the domain nodes
  std::vector<JointFrame> frames;
  std::vector<EmwReport> swing_reports, twist_reports;  // #J (default-constructed for non-deformers)
  BakeReport report;  // method "swing_twist"; detail: e.g. "per joint s+t 1.2 s; weights in [-0.003, 1.002]"
};

// Validates mesh and skeleton like Bake; domain = BuildDomain(mesh, options.domain);
// bone handles = RasterizeHandles(domain, JointHandles(skeleton)); d = BoundedBiharmonicWeights
// on the point handles RasterizeHandles(domain, JointPointHandles(skeleton)) (rows sum to 1, in
// [0, 1]); for each joint with a deformer: moving = bone nodes of the joints in its subtree
// (InSubtree), fixed = bone nodes of all other joints; s, t = EnergyMinimizingWeight (swing,
// twist); mesh weights = domain.to_mesh · node weights (s, t unclamped). Progress stages
// "voxelize", "deformer weights", "swing/twist weights" with a fraction; CANCELLED honoured
// between and inside solves. INVALID_ARGUMENT for bad input (as Bake), FAILED_PRECONDITION
// for a skeleton outside the mesh.
absl::StatusOr<SwingTwistBakeResult> BakeSwingTwist(const Mesh& mesh, const Skeleton& skeleton,
                                                    const SwingTwistBakeOptions& options,
                                                    const Progress& progress = {});

// The gold-standard model: the same domain and bone-node rasterization as BakeSwingTwist, then
// ElasticModel::Create with geodesic voxel weights from the bone nodes as its start weights.
// Fills `report` (method "elastic_model") when given. Errors as BakeSwingTwist's.
absl::StatusOr<std::shared_ptr<const ElasticModel>> BuildElasticModel(
    const Mesh& mesh, const Skeleton& skeleton, const DomainOptions& domain,
    BakeReport* report = nullptr, const Progress& progress = {});

}  // namespace skinning

#endif  // SKINNING_CORE_WEIGHTS_SWING_TWIST_BAKE_H_
