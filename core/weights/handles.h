// Handle rasterization: the volume-domain nodes each joint's weight or bone is pinned to.
#ifndef SKINNING_CORE_WEIGHTS_HANDLES_H_
#define SKINNING_CORE_WEIGHTS_HANDLES_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/geometry/volume_domain.h"
#include "core/rig/bones.h"

namespace skinning {

// The domain nodes each joint's weight is pinned to (1 on its own, 0 on the others'): nodes
// within `radius` of one of the joint's segments, where radius is PointReach(domain): half a cell
// diagonal for voxels (√3/2 · spacing) and 1e-6 of the bounding-box diagonal for tets (nodes on
// the bone). A node within reach of several joints goes to the nearest (ties: lower joint index).
// Non-deforming joints get no nodes. FAILED_PRECONDITION names a deforming joint that reaches no
// node ("skeleton.joints[4] (hand) lies outside the mesh"). A JointHandle carries no name, so
// the message is "skeleton.joints[4] lies outside the mesh (no domain node within 0.01 of its
// bone)". The result is indexed like `handles`. Nearest-wins never starves a joint that does
// reach nodes: a leaf joint's point handle sits at the end of its parent's bone, so every node
// near it is at least as near that bone; such a joint instead takes the one node nearest to it
// (from a joint that keeps at least one other). FAILED_PRECONDITION also when that is impossible
// ("skeleton.joints[4] shares every domain node ... (raise the resolution)").
absl::StatusOr<std::vector<std::vector<int>>> RasterizeHandles(
    const VolumeDomain& domain, const std::vector<JointHandle>& handles);

// libigl's boundary conditions where bones meet (BBW): the nodes within PointReach(domain) of a
// point where bones of several deforming joints start or end (a shared joint; bones of positive
// length only, not leaf point handles) are listed for every one of those joints, so that BBW
// pins them to 1/k for each of the k. `pinned` is RasterizeHandles' result, changed in place;
// returns the number of nodes that are now shared.
absl::StatusOr<int> SplitSharedJoints(const VolumeDomain& domain, const std::vector<JointHandle>& handles,
                                      std::vector<std::vector<int>>* pinned);

// The nodes rigidly attached to each joint's bones for the elastic methods (the gold standard and
// the energy-minimizing weights; Kavan & Sorkine 2012: "voxels intersecting a bone are rigidly
// attached to the bone"): like RasterizeHandles, with the reach widened to a full cell diagonal
// (√3 · spacing) for voxels — every corner of every cell a bone passes through — and to the
// median edge length for tets. The bone is then a rigid rod at least one cell thick, so a twist
// about its own axis is carried into the material (a single line of nodes on the axis would not
// turn at all).
absl::StatusOr<std::vector<std::vector<int>>> RasterizeRigidBones(
    const VolumeDomain& domain, const std::vector<JointHandle>& handles);

}  // namespace skinning

#endif  // SKINNING_CORE_WEIGHTS_HANDLES_H_
