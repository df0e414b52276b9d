#include "server/convert/gltf_import.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_format.h"
#include "server/convert/convert.h"

namespace skinning {
namespace {

const char* Plural(size_t n) { return n == 1 ? "" : "s"; }

}  // namespace

GltfSizeLimits UploadLimits(const RigLimits& limits) {
  GltfSizeLimits out;
  out.max_vertices = limits.max_vertices;
  out.max_triangles = limits.max_triangles;
  out.max_morph_targets = limits.max_joints;
  out.max_morph_deltas = int64_t{1} << 25;
  out.max_animation_values = int64_t{1} << 26;
  out.max_decompressed_bytes = int64_t{1} << 30;
  out.max_json_values = int64_t{1} << 20;
  out.max_struct_bytes = int64_t{64} << 20;
  return out;
}

GltfImport ImportGltf(GltfCharacter g) {
  GltfImport out;
  out.rig.name = g.name;
  if (g.parts.size() > 1) out.rig.mesh_parts = g.MeshParts();
  const int skins = g.NumSkins();
  const size_t nodes = g.parts.size();
  out.rig.mesh = std::move(g.mesh);
  out.rig.morph_targets = std::move(g.morph_targets);
  out.rig.skeleton = std::move(g.skeleton);
  out.rig.sparse_weights = std::move(g.weights);
  out.animations = std::move(g.animations);
  out.summary = absl::StrFormat("%d skin%s, %d mesh node%s, %d morph target%s, %d animation%s", skins,
                                Plural(skins), nodes, Plural(nodes), out.rig.morph_targets.size(),
                                Plural(out.rig.morph_targets.size()), out.animations.size(),
                                Plural(out.animations.size()));
  return out;
}

std::vector<v1::AnimationClip> SampleClips(const std::vector<Animation>& animations, const Rig& rig,
                                           double frames_per_second, int max_frames) {
  std::vector<double> defaults;
  for (const MorphTarget& target : rig.morph_targets) defaults.push_back(target.default_weight);
  std::vector<v1::AnimationClip> clips;
  for (size_t a = 0; a < animations.size(); ++a) {
    const Animation& anim = animations[a];
    const double length = std::max(0.0, anim.end - anim.start);
    double fps = frames_per_second;
    if (max_frames > 1 && length * fps + 1 > max_frames) fps = (max_frames - 1) / length;
    const int frames = std::max(1, std::min(max_frames, static_cast<int>(std::floor(length * fps + 1e-9)) + 1));
    v1::AnimationClip& clip = clips.emplace_back();
    clip.set_name(anim.name.empty() ? absl::StrFormat("animation%d", a) : anim.name);
    clip.set_frames_per_second(static_cast<float>(fps));
    clip.set_start(static_cast<float>(anim.start));
    for (int f = 0; f < frames; ++f) {
      const double t = anim.start + f / fps;
      v1::Pose* pose = clip.add_poses();
      *pose = PoseToProto(Pose{SampleAnimation(rig.skeleton, anim, t)});
      if (!anim.morph_channels.empty())
        for (double w : SampleMorphWeights(anim, t, defaults)) pose->add_morph_weights(static_cast<float>(w));
    }
  }
  return clips;
}

}  // namespace skinning
