// Endpoint weights for stretchable, twistable bones (Jacobson & Sorkine 2011, Sec. 4, Eq. 7–8):
// per vertex and bone, e ∈ [0, 1] says where along the bone (0 at its start a, 1 at its end b)
// the vertex moves with; it spreads a bone's stretch and twist smoothly along it.
#ifndef SKINNING_CORE_WEIGHTS_ENDPOINT_WEIGHTS_H_
#define SKINNING_CORE_WEIGHTS_ENDPOINT_WEIGHTS_H_

#include <Eigen/Core>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/geometry/mesh.h"
#include "core/geometry/volume_domain.h"
#include "core/rig/skeleton.h"
#include "core/util/progress.h"
#include "core/weights/bake_report.h"
#include "core/weights/bbw.h"

namespace skinning {

enum class EndpointMethod { kJointBbw, kProjection };
const char* EndpointMethodName(EndpointMethod method);  // "endpoint_joint_bbw", "endpoint_projection"

struct EndpointBakeOptions {
  EndpointMethod method = EndpointMethod::kJointBbw;
  DomainOptions domain;  // kJointBbw only
  BbwOptions bbw;        // kJointBbw only

  // INVALID_ARGUMENT naming the first bad field and its value.
  absl::Status Validate() const;
};

struct EndpointBakeResult {
  // #V by #J: column j = e of joint j's bone (StbsBones), in [0, 1]; 0 for joints without one.
  Eigen::MatrixXd endpoint;
  BakeReport report;  // method "endpoint_joint_bbw" or "endpoint_projection"
  // kJointBbw only: the volume the weights were computed on and e on its nodes (#N by #J), for
  // measuring deformations of the volume itself (bench/quality).
  VolumeDomain domain;
  Eigen::MatrixXd node_endpoint;
};

// kJointBbw: point BBW (RasterizeHandles with point handles, BoundedBiharmonicWeights) at every
// deforming joint (JointPointHandles) plus one extra point per bone end b that is not a joint
// position; e_i = ½((1 − j_a) + j_b) (Eq. 7), with j_a, j_b the point weights of the bone's
// ends, mapped to the vertices by domain.to_mesh. kProjection: Eq. 8,
// e = (p − a)·(b − a) / |b − a|² clamped to [0, 1], no domain. Validates mesh and skeleton like
// Bake (INVALID_ARGUMENT, FAILED_PRECONDITION for a skeleton outside the mesh);
// CANCELLED when cancelled. Progress stages "voxelize", "bbw".
absl::StatusOr<EndpointBakeResult> BakeEndpointWeights(const Mesh& mesh, const Skeleton& skeleton,
                                                       const EndpointBakeOptions& options,
                                                       const Progress& progress = {});

}  // namespace skinning

#endif  // SKINNING_CORE_WEIGHTS_ENDPOINT_WEIGHTS_H_
