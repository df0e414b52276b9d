// glTF 2.0 skinned characters: read (meshes, node hierarchy, skins, animations) and write.
#ifndef SKINNING_CORE_IO_GLTF_H_
#define SKINNING_CORE_IO_GLTF_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/geometry/mesh.h"
#include "core/rig/skeleton.h"
#include "core/rig/transform.h"
#include "core/skinning/weights.h"

namespace skinning {

enum class AnimationPath { kTranslation, kRotation, kScale };
enum class Interpolation { kStep, kLinear, kCubicSpline };

struct AnimationChannel {
  int joint = -1;  // skeleton joint index
  AnimationPath path = AnimationPath::kRotation;
  Interpolation interpolation = Interpolation::kLinear;
  std::vector<double> times;  // #keys input times in seconds, strictly increasing
  // Output values, 3 per key for translation/scale, 4 (x, y, z, w) for rotation. For
  // kCubicSpline each key holds in-tangent, value, out-tangent (3× as many numbers).
  std::vector<double> values;
};

struct Animation {
  std::string name;
  double start = 0.0;  // smallest key time over all channels
  double end = 0.0;    // largest key time over all channels
  std::vector<AnimationChannel> channels;
};

// Local transforms of every joint at time t (seconds): each joint's rest transform, with the
// animated properties replaced by the sampled channels. Outside a channel's key range the first
// or last value holds. STEP holds the previous key; LINEAR lerps translation and scale and
// slerps rotation along the shorter arc; CUBICSPLINE is the glTF Hermite spline (tangents
// scaled by the key interval), with the rotation normalized.
std::vector<Transform> SampleAnimation(const Skeleton& skeleton, const Animation& animation,
                                       double t);

struct GltfCharacter {
  std::string name;   // the skinned mesh's name, or the file stem
  // Every triangle primitive (mode 4, or 5/6 converted to triangles) of every node that uses
  // skins[0], concatenated in increasing node index, then primitive order.
  Mesh mesh;
  Skeleton skeleton;  // skin joints first (in skins[0].joints order), then their non-joint
                      // ancestors, so glTF joint index j is skeleton joint j
  int num_skin_joints = 0;
  SparseWeights weights;           // from JOINTS_0/WEIGHTS_0 (+ _1: k = 8), rows renormalized
  std::vector<int> node_of_joint;  // glTF node index of each skeleton joint
  std::vector<Animation> animations;
};

// Reads .gltf (with external or data-URI buffers) or .glb, decided by the file's magic. Uses the
// first skin and every mesh node that references it; images are not decoded. Validates every
// accessor against its buffer view and buffer (a truncated or corrupt file is an error naming
// the accessor, never a crash). Mesh node transforms are ignored, as the glTF spec requires for
// skinned meshes.
absl::StatusOr<GltfCharacter> ReadGltf(const std::string& path);

// Writes a skinned glTF: mesh (positions, normals when present, indices), a node per joint with
// its rest transform, a skin with inverse bind matrices, JOINTS_0/WEIGHTS_0 (and _1 when k > 4)
// and the given animations. `.glb` paths are written binary, `.gltf` with an embedded buffer.
absl::Status WriteSkinnedGltf(const std::string& path, const Mesh& mesh, const Skeleton& skeleton,
                              const SparseWeights& weights,
                              const std::vector<Animation>& animations = {});

// Writes a static (already posed) mesh: positions, normals when present, indices.
absl::Status WritePosedGltf(const std::string& path, const Mesh& mesh);

}  // namespace skinning

#endif  // SKINNING_CORE_IO_GLTF_H_
