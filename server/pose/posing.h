// The per-frame work shared by Pose, PoseClip and PoseSession.
#ifndef SKINNING_SERVER_POSE_POSING_H_
#define SKINNING_SERVER_POSE_POSING_H_

#include <vector>

#include "absl/status/status.h"
#include "core/geometry/mesh.h"
#include "server/bake/bake_jobs.h"
#include "server/store/rig_store.h"
#include "skinning/v1/skinning.pb.h"

namespace skinning {

class PsdModel;  // core/skinning/psd.h

// What one frame is posed with.
struct PoseContext {
  const LoadedRig* rig = nullptr;          // required
  const SparseWeights* weights = nullptr;  // the rig's own or the bake's; nullptr when none
  const LoadedBake* bake = nullptr;        // the request's bake_id, or nullptr
  const PsdModel* psd = nullptr;           // METHOD_PSD_*: the rig's pose-space model
};

// Poses `ctx.rig` with `ctx.weights` (the rig's own, or a bake's; nullptr when it has none) and fills
// `out` with what `outputs` asks (vertices only when nothing is asked). INVALID_ARGUMENT for a
// bad pose or method (messages start with `field`), FAILED_PRECONDITION when vertices are asked
// and there are no weights.
absl::Status PoseFrame(const PoseContext& ctx, const v1::Pose& pose,
                       v1::Method method, const v1::PoseOutputs& outputs, v1::PosedFrame* out,
                       const char* field = "pose");

// Pieces of a frame's output, shared by PoseFrame and PosePsdFrame (psd_posing.h):
// out->transforms = T34 (row-major 3×4 per joint, ToRowMajor34).
void SetTransforms(const std::vector<float>& T34, v1::PosedFrame* out);
// Where the frame's 3n posed positions go: out->vertices (resized to 3n) when they are returned,
// else *scratch.
float* PositionsOutput(int n, bool returned, v1::PosedFrame* out, std::vector<float>* scratch);
// NU[0..3n) = the per-vertex normals (PerVertexNormals) of the surface F with positions U[0..3n).
void NormalsOfPositions(const float* U, int n, const RowMatrixX3i& F, float* NU);

}  // namespace skinning

#endif  // SKINNING_SERVER_POSE_POSING_H_
