// glTF 2.0 skinned characters: read (meshes, node hierarchy, skins, animations; gltf_read.cc)
// and write (gltf_write.cc). Animations are sampled with core/rig/animation.h.
#ifndef SKINNING_CORE_IO_GLTF_H_
#define SKINNING_CORE_IO_GLTF_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/geometry/mesh.h"
#include "core/rig/animation.h"
#include "core/rig/skeleton.h"
#include "core/skinning/weights.h"

namespace skinning {

struct GltfCharacter {
  std::string name;   // the first skinned mesh's name, or the file stem
  // Every triangle primitive (mode 4, or 5/6 converted to triangles) of every node with a mesh
  // and a skin, concatenated in increasing node index, then primitive order (a mesh instanced by
  // several nodes is there once per node). A skin that binds joints an earlier skin also binds
  // by one extra transform D_s (IBM_s = IBM · D_s) has its nodes' vertices (and normals) taken
  // through D_s, so that the rig's inverse binds pose them as the spec does.
  Mesh mesh;
  // The joints of every skin (skins in order, each skin's joints in order, a node listed by
  // several skins once), then their non-joint ancestors, then the nodes that animated props move
  // with and those between them and their skin joint. With one skin, glTF joint index j is
  // skeleton joint j.
  Skeleton skeleton;
  int num_skin_joints = 0;  // joints listed by some skin (the first num_skin_joints)
  // Where each skinned mesh node's vertices are in `mesh`, in node order.
  struct Part {
    int node = -1;
    std::string name;  // the node's name (may be empty)
    int skin = 0;  // −1: a prop (a mesh without a skin below a joint), weighted 1 to that joint
    int first_vertex = 0;
    int num_vertices = 0;
  };
  std::vector<Part> parts;  // one per mesh node read (a mesh instanced by n nodes: n parts)
  int NumSkins() const;     // skins the parts use
  // Morph targets of the skinned nodes' meshes (POSITION and NORMAL deltas, in rig space), one
  // set per node whose mesh has them; names from mesh.extras.targetNames ("target<i>" without),
  // prefixed "<node name>/" when several nodes have targets; defaults from node.weights, else
  // mesh.weights, else 0.
  std::vector<MorphTarget> morph_targets;
  std::vector<int> morph_target_node;  // the glTF node of each morph target
  // `parts` as mesh parts (named after the node, or "node<i>"), for ValidateMeshParts and the
  // writers.
  std::vector<MeshPart> MeshParts() const;
  SparseWeights weights;           // from JOINTS_n/WEIGHTS_n (k = 4 per set), rows renormalized
  std::vector<int> node_of_joint;  // glTF node index of each skeleton joint
  std::vector<Animation> animations;
  // With GltfReadOptions::skip_static_meshes: the static meshes left out, in node order, as
  // `nodes[5] ("Ground")` (the name when the node has one).
  std::vector<std::string> skipped_static_meshes;
  // With several scenes, the one read (GltfReadOptions::scene), as `scenes[1] ("Main") of 3`;
  // empty with one scene or none.
  std::string scene;
};

// What ReadGltf may leave out of a file, when asked to; by default it refuses it.
struct GltfReadOptions {
  // Triangle meshes without a skin that hang below no skin joint (a ground plane, a pedestal,
  // scenery exported with the character) are left out and named in
  // GltfCharacter::skipped_static_meshes, instead of refusing the file.
  bool skip_static_meshes = false;
  // With several scenes, the one to read: its nodes (those its `nodes` reach through `children`),
  // the skins their meshes use and the animations that move them; the other scenes' are left out.
  // −1: the file's default scene (its `scene`, else scenes[0]). An index the file does not have
  // is INVALID_ARGUMENT.
  int scene = -1;
};

// Sizes ReadGltfBytes refuses before anything is decoded or read (RESOURCE_EXHAUSTED naming the
// count and the limit), from the counts the file's accessors declare; 0 = no limit. A mesh
// instanced by n nodes counts n times, as it is read. The server passes its rig limits, so that a
// small file declaring (or decompressing to) a huge mesh is refused before it is allocated.
struct GltfSizeLimits {
  int64_t max_vertices = 0;       // POSITION elements
  int64_t max_triangles = 0;      // indices / 3, or POSITION elements / 3 without indices
  int64_t max_morph_targets = 0;  // morph targets
  // Morph target vertices: each target's count times its primitive's vertices (targets may share
  // one large accessor, each read in full).
  int64_t max_morph_deltas = 0;
  // Numbers the animation channels read: each channel's key times and values (its sampler's
  // input count plus output count × components). Channels may share one large accessor, so
  // without a bound a small file could make the reader decode it once per channel.
  int64_t max_animation_values = 0;
  // Bytes that compressed data (EXT_meshopt_compression views, KHR_draco_mesh_compression
  // primitives) may decode to, in all.
  int64_t max_decompressed_bytes = 0;
  // Values in the file's JSON (the top one, array elements and object members' values), counted
  // before it is parsed: each one costs 200 to 400 bytes parsed. Whatever the limits, the
  // JSON may not nest arrays and objects deeper than 64 levels (INVALID_ARGUMENT).
  int64_t max_json_values = 0;
  // Bytes of the parser's structs for the JSON's nodes, accessors, meshes, mesh primitives and
  // morph targets, skins, animations and their channels and samplers, buffers, buffer views and
  // scenes (each 300 to 460 bytes, whatever it holds), counted before it is parsed: 1M empty
  // nodes in a 3 MB file took 600 MB.
  int64_t max_struct_bytes = 0;
  // Joints: the distinct nodes the skins list, counted before the skeleton is built (a 4 MB
  // file of one 140k-joint chain took 15 s, and an animated 3,000-joint one 646 MB of sampled
  // clips, before the rig's joint limit refused them).
  int64_t max_joints = 0;
};

// Reads .gltf (with external or data-URI buffers) or .glb, decided by the file's magic. Uses all
// skins and every mesh node that has one; what it never uses (members the parser does not look
// up, materials, textures, images, samplers and cameras among them; extras but a mesh's
// targetNames; other extensions) is removed before the JSON is parsed (gltf_json_scan.h). What
// is not supported yet is INVALID_ARGUMENT naming it, never dropped: required extensions other than
// KHR_mesh_quantization, EXT_meshopt_compression, KHR_draco_mesh_compression and
// KHR_animation_pointer (whose channels of a node's transform or weights are read as core ones),
// but those of materials, textures, lights and metadata, which are read past; triangle meshes
// without a skin that hang below no skin joint (left out instead with options.skip_static_meshes; those below a
// joint are props: weighted 1 to it, they move rigidly with it, or with the nearest node between
// them that an animation moves, which becomes a joint), and skins that bind a shared joint
// differently other than by one transform for the whole skin. Of a file with several scenes, one
// is read (GltfReadOptions::scene; its skinned meshes' skins, and skins no mesh uses), and
// GltfCharacter::scene says which.
// KHR_mesh_quantization is read (integer positions, normals and morph deltas, where the file
// declares it; normals renormalized; the mesh moved out of the integer grid into the rest pose's
// world space when every skin joint's rest skinning transform is one similarity), EXT_meshopt_compression (the views decoded first) and
// KHR_draco_mesh_compression (each primitive's Draco mesh decoded first).
// Sparse accessors (morph targets often use them) are read as the spec says: the base view, or
// zeros without one, with the listed elements replaced. Morph targets are read (morph_targets),
// and animation channels on their weights (morph_channels). Validates every accessor against its
// buffer view and buffer (a truncated or corrupt file is an error naming the accessor, never a
// crash). Mesh node transforms are ignored, as the glTF spec requires for skinned meshes.
absl::StatusOr<GltfCharacter> ReadGltf(const std::string& path, const GltfReadOptions& options = {});

// ReadGltf of a file's bytes (a request's): .glb, or .gltf whose buffers are embedded (data:
// URIs). Nothing is read from the filesystem: a file that refers to an external buffer is
// INVALID_ARGUMENT naming it. `label` prefixes every message ("gltf: accessors[3] ..."); a
// character whose file names no mesh is called "character".
absl::StatusOr<GltfCharacter> ReadGltfBytes(absl::string_view bytes, const std::string& label,
                                            const GltfSizeLimits& limits = {}, const GltfReadOptions& options = {});

// Writes a skinned glTF: mesh (positions, normals when present, indices), a node per joint with
// its rest transform (node j = joint j), a skin with inverse bind matrices whose joints are every
// joint but the chain of unweighted non-deforming joints at the top of a one-root skeleton (an
// "Armature" node stays a plain node), JOINTS_n/WEIGHTS_n for n < ⌈k / 4⌉ (k influences per vertex)
// and the given animations. With `parts` (ValidateMeshParts), one mesh and one mesh node per
// part, named after it, each with the one skin. `.glb` paths are written binary, `.gltf` with
// an embedded buffer. Morph targets (ValidateMorphTargets) go to every part where one moves a
// vertex (every target to a single part), with their position deltas (and normal deltas where
// the mesh has normals), default weights as the mesh's `weights` and names as its
// extras.targetNames; read back, a target that moves several parts is one per part, named
// "<part>/<target>" as ReadGltf names targets of several nodes.
absl::Status WriteSkinnedGltf(const std::string& path, const Mesh& mesh, const Skeleton& skeleton,
                              const SparseWeights& weights,
                              const std::vector<Animation>& animations = {},
                              const std::vector<MeshPart>& parts = {},
                              const std::vector<MorphTarget>& morph_targets = {});

// Writes a static (already posed) mesh: positions, normals when present, indices; one mesh and
// node per part when `parts` are given.
absl::Status WritePosedGltf(const std::string& path, const Mesh& mesh,
                            const std::vector<MeshPart>& parts = {});

}  // namespace skinning

#endif  // SKINNING_CORE_IO_GLTF_H_
