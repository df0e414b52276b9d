// One entry point for every bake: automatic bone weights (bone heat, geodesic voxel, BBW), the
// FAST reduced model, swing/twist weights, endpoint weights and the elastic gold-standard model.
#ifndef SKINNING_CORE_WEIGHTS_BAKE_H_
#define SKINNING_CORE_WEIGHTS_BAKE_H_

#include <memory>
#include <vector>

#include <Eigen/Core>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/geometry/mesh.h"
#include "core/geometry/volume_domain.h"
#include "core/rig/skeleton.h"
#include "core/skinning/weights.h"
#include "core/solve/elastic.h"
#include "core/solve/fast_skinning.h"
#include "core/util/progress.h"
#include "core/weights/bake_report.h"
#include "core/weights/bbw.h"
#include "core/weights/bone_heat.h"
#include "core/weights/emw.h"
#include "core/weights/endpoint_weights.h"
#include "core/weights/geodesic_weights.h"

namespace skinning {

enum class BakeMethod {
  kBoneHeat,
  kGeodesicVoxel,
  kBbw,
  kFastModel,
  kSwingTwist,
  kEndpoint,
  kElasticModel
};
// "bone_heat", "geodesic_voxel", "bbw", "fast_model", "swing_twist", "endpoint", "elastic_model"
const char* BakeMethodName(BakeMethod method);

struct BakeOptions {
  BakeMethod method = BakeMethod::kBbw;
  // Influences kept per vertex in the sparse result (top k, renormalized); every method but
  // kFastModel (which keeps every non-zero) and kElasticModel (no weights).
  int influences = 4;
  static constexpr int kMaxInfluences = 16;
  // The volume of the volumetric methods: BBW, geodesic voxel, swing/twist, joint-BBW endpoint
  // weights, the volumetric FAST energy and the elastic model. A voxel grid unless a tet mesh is
  // given.
  DomainOptions domain;
  BoneHeatOptions bone_heat;        // kBoneHeat
  GeodesicWeightsOptions geodesic;  // kGeodesicVoxel
  BbwOptions bbw;  // kBbw; the deformer weights of kSwingTwist; kEndpoint's joint BBW
  EmwOptions emw;  // kSwingTwist: the swing and twist weights
  EndpointMethod endpoint_method = EndpointMethod::kJointBbw;  // kEndpoint
  FastOptions fast;  // kFastModel (fast.domain is replaced by `domain`)
  // kFastModel and kEndpoint: #V by #J bone weights (rows sum to 1) they build on. FAST's handles
  // are the joints with a positive weight somewhere.
  Eigen::MatrixXd source_weights;
  // Joints to treat as non-deforming besides the skeleton's own (Joint::deforms): they get no
  // weight and need not lie inside the mesh. The server lists the joints that a character's own
  // weights never use (an exported file's `_rootJoint` or `Armature` root).
  std::vector<int> non_deforming_joints;

  // INVALID_ARGUMENT naming the field: influences out of [1, kMaxInfluences] (where used), a tet
  // mesh for a surface method, bad domain options for a volumetric one, missing or non-finite
  // source weights for kFastModel / kEndpoint.
  absl::Status Validate() const;
};

// Plain data; which fields a method fills is said per field.
struct BakeResult {
  BakeReport report;  // every method
  // kBoneHeat, kGeodesicVoxel, kBbw: #V by #J bone weights, rows sum to 1, 0 for non-deforming
  // joints. kEndpoint: the source weights. kSwingTwist: the deformer weights d (#V by #J, rows
  // sum to 1). kFastModel: the model's #V by (m + extra) weights (FastModelWeights). kElasticModel:
  // empty.
  Eigen::MatrixXd weights;
  // `weights` as sparse weights: the top options.influences per vertex, renormalized (kFastModel:
  // every non-zero, ExactSparse). Empty for kElasticModel.
  SparseWeights sparse;
  Eigen::MatrixXd swing, twist;         // kSwingTwist: #V by #J swing and twist weights s, t
  Eigen::MatrixXd endpoint;             // kEndpoint: #V by #J endpoint weights e
  FastModelPtr fast_model;              // kFastModel
  std::vector<int> fast_handle_joints;  // kFastModel: the joint of each of the m handles
  std::shared_ptr<const ElasticModel> elastic_model;  // kElasticModel
};

// The smallest bounding-box diagonal bone_heat, geodesic_voxel and bbw take (INVALID_ARGUMENT
// below it): their weights are the same from there up (checked to 1e30).
inline constexpr double kMinBakeDiagonal = 1e-6;

// Validates the options, the mesh and the skeleton, then runs options.method: bone heat on the
// surface; geodesic voxel or BBW weights on the domain's nodes pinned by RasterizeHandles, mapped
// to the vertices (clamped to [0, 1], rows renormalized); BakeSwingTwist; BakeEndpointWeights;
// PrecomputeFast on the source weights' handle columns; or BuildElasticModel. INVALID_ARGUMENT for
// bad options or input (a zero-length bone, a degenerate mesh, a resolution over the limit,
// source weights of the wrong shape), FAILED_PRECONDITION for a skeleton outside the mesh,
// CANCELLED when cancelled. Except for the FAST and elastic models, the bake runs on the welded
// mesh (Weld: copies of one point become one vertex) and every copy gets its point's results.
absl::StatusOr<BakeResult> Bake(const Mesh& mesh, const Skeleton& skeleton,
                                const BakeOptions& options, const Progress& progress = {});

}  // namespace skinning

#endif  // SKINNING_CORE_WEIGHTS_BAKE_H_
