// A glTF character as the service registers it: the rig (every skin, mesh node, morph target),
// the file's animations, and the animations sampled as poses for PoseClip. Shared by skinctl
// (files on the client) and CreateRig (a file's bytes in the request).
#ifndef SKINNING_SERVER_CONVERT_GLTF_IMPORT_H_
#define SKINNING_SERVER_CONVERT_GLTF_IMPORT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/io/gltf.h"
#include "core/rig/animation.h"
#include "server/convert/convert.h"
#include "server/convert/rig.h"
#include "skinning/v1/rig_service.pb.h"

namespace skinning {

struct GltfImport {
  Rig rig;  // named after the character (GltfCharacter::name); not validated yet
  std::vector<Animation> animations;
  // "2 skins, 3 mesh nodes, 1 morph target, 1 animation", then with skipped static meshes
  // "; left out: 1 static mesh, nodes[5] ("Ground")"
  std::string summary;
  std::vector<std::string> skipped_static_meshes;  // GltfCharacter::skipped_static_meshes
  std::string scene;                               // GltfCharacter::scene
};

GltfImport ImportGltf(GltfCharacter character);

// The inverse, as `skinctl get --out_file` writes it: a stored rig (RIG_VIEW_FULL) as a skinned
// glTF (.glb or .gltf by the path's extension) of its mesh parts, skeleton, morph targets and
// sparse weights (dense weights as their top 4), with `clips` (GetAnimations; ClipAnimations).
// Registering the file gives the rig back under the same name, and the clips within float
// rounding. INVALID_ARGUMENT for a rig or a clip that does not read; FAILED_PRECONDITION for a
// rig without weights; the writer's error for a file that cannot be written.
absl::Status ExportRigGltf(const v1::Rig& rig, const std::string& path,
                           const std::vector<v1::AnimationClip>& clips = {});

// Sampled clips (SampleClips, GetAnimations) as keyframed animations of `rig`: a LINEAR key per
// frame, at start + f / frames_per_second, of each joint's translation, rotation and scale that
// some frame sets to other than the joint's rest value, and of every morph target's weight when
// some frame sets them (a frame that does not: the defaults). A frame without joints, the bind
// pose, keys every joint at its BindPoseLocals transform. INVALID_ARGUMENT naming the clip and frame for
// a pose the rig does not take (PoseFromProto) or a wrong morph weight count.
absl::StatusOr<std::vector<Animation>> ClipAnimations(const std::vector<v1::AnimationClip>& clips, const Rig& rig);

// What every sampled clip needs, beside poses the rig takes (PoseFromProto): INVALID_ARGUMENT naming
// `where` ("animations[2]") unless it has poses, a finite frames_per_second above 0 and a finite
// start, and each pose has no morph weights or one finite weight for each of `num_targets`.
absl::Status CheckClip(const v1::AnimationClip& clip, int num_targets, const std::string& where);

// What CreateRig holds an uploaded file to before reading it (ReadGltfBytes): the rig limits
// (vertices, triangles, morph targets up to the joint limit), 2^25 morph target vertices (a
// face rig of 100k vertices and 300 shapes; 0.8 GiB of position deltas as the reader's
// doubles, as much again with normal deltas), at most 2^26 animation key
// times and values (512 MiB as the reader's doubles; a long motion capture of 100 joints, 10
// minutes at 30 frames/s, reads about 27M) and 1 GiB decompressed from meshopt views and Draco
// primitives (a character at the vertex and triangle limits, float attributes and 2^26 float
// animation values, is about 0.4 GiB).
GltfSizeLimits UploadLimits(const RigLimits& limits);

// How many frames at `frames_per_second` a clip of `length` seconds holds, the first at its start:
// one more than the whole frame intervals in it, counting an interval that falls short of the end
// by less than 1e-3 of a frame (key times are floats: a clip written a frame at a time, from a start
// that a float does not hold, ends a few 1e-7 s early, and lost its last frame).
int FramesIn(double length, double frames_per_second);

// Each animation sampled at `frames_per_second` from its start to its end (both included; at
// most `max_frames` frames, the rate lowered to fit): every joint's local transform, and the
// morph weights when the animation moves them (the rig's defaults elsewhere). When the clips
// would take more than `max_bytes` (binary protobuf; 0 = no bound), every animation's rate is
// lowered by one factor so that they fit; RESOURCE_EXHAUSTED when not even one frame of each
// does. (A 12 kB file of 5 long animations on 100 joints took 1.9 GB to sample, and its answer
// was too large to send.)
absl::StatusOr<std::vector<v1::AnimationClip>> SampleClips(const std::vector<Animation>& animations,
                                                           const Rig& rig, double frames_per_second, int max_frames,
                                                           size_t max_bytes);

}  // namespace skinning

#endif  // SKINNING_SERVER_CONVERT_GLTF_IMPORT_H_
