// Morph targets added by a test to a real character: a copy of a skinned glTF whose first mesh
// gains two targets, so that morphing can be checked on real data against the glTF reference.
#ifndef SKINNING_TESTS_SUPPORT_MORPH_GLTF_H_
#define SKINNING_TESTS_SUPPORT_MORPH_GLTF_H_

#include <string>

#include "absl/status/status.h"

namespace skinning::testing {

// Reads `in` (.glb), gives every primitive of meshes[0] two morph targets and writes `out`
// (.glb): "bulge" moves each vertex along its NORMAL by 2 % of the bounding-box diagonal (with
// NORMAL deltas that tilt the normals), "lean" moves the vertices above the middle height (y)
// along +x by up to 10 % of the diagonal, growing with the height above the middle (the lower
// half does not move). mesh.weights = [0.5, 0] and extras.targetNames name them.
// animations[0] gains a LINEAR "weights" channel on the mesh node: (0.5, 0) at its first input
// time, (1, 0.6) half way, (0, 1) at its last.
//
// kSparse stores the same numbers in sparse accessors, as exporters often do: each POSITION
// delta lists only its nonzero elements over no buffer view (zeros), and bulge's NORMAL deltas
// are a buffer view with the even elements zeroed plus a sparse list that restores them.
enum class MorphEncoding { kDense, kSparse };
absl::Status WriteWithMorphTargets(const std::string& in, const std::string& out,
                                   MorphEncoding encoding = MorphEncoding::kDense);

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_MORPH_GLTF_H_
