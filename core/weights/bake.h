// One entry point for every automatic-weights method: builds the domain the method needs,
// pins handles, runs the method, maps the result to the mesh vertices, keeps the top k.
#ifndef SKINNING_CORE_WEIGHTS_BAKE_H_
#define SKINNING_CORE_WEIGHTS_BAKE_H_

#include <optional>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "absl/status/statusor.h"
#include "core/geometry/mesh.h"
#include "core/geometry/volume_domain.h"
#include "core/rig/skeleton.h"
#include "core/skinning/weights.h"
#include "core/util/progress.h"
#include "core/weights/bbw.h"
#include "core/weights/bone_heat.h"
#include "core/weights/geodesic_weights.h"

namespace skinning {

enum class BakeMethod { kBoneHeat, kGeodesicVoxel, kBbw };
const char* BakeMethodName(BakeMethod method);  // "bone_heat", "geodesic_voxel", "bbw"

// A user-given tetrahedral domain (e.g. MEDIT .mesh): TV #TV by 3, TT #T by 4.
struct TetDomainInput {
  RowMatrixX3d TV;
  RowMatrixX4i TT;
};

struct BakeOptions {
  BakeMethod method = BakeMethod::kBbw;
  // Influences kept per vertex in the sparse result (top k, renormalized).
  int influences = 4;
  static constexpr int kMaxInfluences = 16;
  // Volumetric methods (BBW, geodesic voxel) run on a voxel grid unless a tet mesh is given.
  VoxelGridOptions voxel;
  std::optional<TetDomainInput> tet_mesh;
  BbwOptions bbw;
  GeodesicWeightsOptions geodesic;
  BoneHeatOptions bone_heat;
};

struct BakeReport {
  std::string method;
  std::string domain;  // "surface", "voxel grid 64 (41,231 nodes)", "tet mesh (7,234 nodes)"
  int domain_nodes = 0;
  double domain_seconds = 0.0;
  double solve_seconds = 0.0;
  double total_seconds = 0.0;
  std::string detail;  // the method's own report in one line
};

struct BakeResult {
  Eigen::MatrixXd dense;  // #V by #joints, rows sum to 1, 0 for non-deforming joints
  SparseWeights sparse;   // top-k of dense, renormalized
  BakeReport report;
};

// Validates the rig's mesh and skeleton, then bakes. INVALID_ARGUMENT for bad options or input
// (a zero-length bone, a mesh with no inside, a resolution over the limit),
// FAILED_PRECONDITION for a skeleton outside the mesh, CANCELLED when cancelled.
absl::StatusOr<BakeResult> BakeWeights(const Mesh& mesh, const Skeleton& skeleton,
                                       const BakeOptions& options, const Progress& progress = {});

}  // namespace skinning

#endif  // SKINNING_CORE_WEIGHTS_BAKE_H_
