// An independent glTF 2.0 skinning reference for tests.
//
// Computes skinned vertex positions straight from a file's raw accessors following the glTF 2.0
// specification (animation sampling, node hierarchy, joint matrices, linear blend skinning).
// It deliberately shares no code with core/ (only tinygltf for JSON/buffer parsing, Eigen in
// double precision and the standard library), so acceptance tests can compare the service's
// output against it.
#ifndef SKINNING_TESTS_SUPPORT_GLTF_REFERENCE_H_
#define SKINNING_TESTS_SUPPORT_GLTF_REFERENCE_H_

#include <Eigen/Core>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace skinning::testing::gltf_reference {

struct SkinnedPositions {
  // Raw POSITION values of the primitives, in the contract's order: every triangle primitive
  // (mode 4, 5 or 6) of every node with a mesh, in increasing node index, then primitive order,
  // vertices concatenated (a mesh instanced by several nodes once per node). A node with a skin
  // is skinned with it; one without is placed by its world matrix, as the spec draws it.
  std::vector<Eigen::Vector3d> rest;
  // The same vertices skinned with the file's own node transforms (no animation): where they
  // are in the bind pose.
  std::vector<Eigen::Vector3d> bind;
  // The same vertices posed with each node's own skin at the sampled time.
  std::vector<Eigen::Vector3d> posed;
  // The mesh nodes in order and the index of each one's first vertex.
  std::vector<int> nodes;
  std::vector<int> first_vertex;
};

// How the joint matrices are blended: the spec's linear blend skinning, or dual quaternion
// skinning (Kavan et al. 2008; every joint matrix must then be rigid).
enum class Blend { kLinear, kDualQuaternion };

struct KeyTimes {
  double start = 0.0;        // smallest input time over the animation's channels
  double end = 0.0;          // largest input time over the animation's channels
  std::vector<double> keys;  // every distinct input time, sorted ascending
};

// All distinct key times of animations[animation] (inputs of the samplers its channels use).
absl::StatusOr<KeyTimes> AnimationKeyTimes(const std::string& path, int animation);

// Loads `path` (.glb if the file starts with the magic "glTF", otherwise .gltf JSON), samples
// animations[animation] at time t (seconds; each channel clamps t to its own key range) and
// skins every skinned vertex with its node's skin. animation < 0 means "no animation": every
// node keeps its own transform (the rest pose of the file). The mesh node's transform is
// ignored, as the spec requires for skinned meshes. Errors (missing skin, bad accessors,
// out-of-range joint indices, zero weight sums, a non-rigid joint matrix for DQS, ...) are
// returned as a Status, never a crash.
// Morph targets are applied before skinning with `morph_weights` (one per target of every mesh
// that has them) when given, else the animation's "weights" channel of the node sampled at t
// over the node's weights, else its mesh's, else 0; `rest` then holds the morphed positions.
absl::StatusOr<SkinnedPositions> SkinAtTime(const std::string& path, int animation, double t,
                                            Blend blend = Blend::kLinear,
                                            const std::vector<double>* morph_weights = nullptr);

}  // namespace skinning::testing::gltf_reference

#endif  // SKINNING_TESTS_SUPPORT_GLTF_REFERENCE_H_
