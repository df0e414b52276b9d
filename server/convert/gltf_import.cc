#include "server/convert/gltf_import.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/rig/pose.h"
#include "core/skinning/weights.h"
#include "core/util/status_macros.h"
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
  out.max_joints = limits.max_joints;
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
  out.skipped_static_meshes = std::move(g.skipped_static_meshes);
  if (!out.skipped_static_meshes.empty())
    absl::StrAppend(&out.summary, absl::StrFormat("; left out: %d static mesh%s, ", out.skipped_static_meshes.size(),
                                                  out.skipped_static_meshes.size() == 1 ? "" : "es"),
                    absl::StrJoin(out.skipped_static_meshes, ", "));
  out.scene = std::move(g.scene);
  if (!out.scene.empty()) absl::StrAppend(&out.summary, "; read ", out.scene);
  return out;
}

absl::Status ExportRigGltf(const v1::Rig& proto, const std::string& path,
                           const std::vector<v1::AnimationClip>& clips) {
  ASSIGN_OR_RETURN(Rig rig, RigFromProto(proto, kStoredRigLimits));
  if (!rig.has_weights())
    return absl::FailedPreconditionError(absl::StrCat("rig ", proto.name(), " has no weights to export"));
  ASSIGN_OR_RETURN(const std::vector<Animation> animations, ClipAnimations(clips, rig));
  const SparseWeights W = rig.sparse_weights ? *rig.sparse_weights : TopK(*rig.dense_weights, 4);
  return WriteSkinnedGltf(path, rig.mesh, rig.skeleton, W, animations, rig.mesh_parts, rig.morph_targets);
}

absl::StatusOr<std::vector<Animation>> ClipAnimations(const std::vector<v1::AnimationClip>& clips, const Rig& rig) {
  const int nj = rig.skeleton.size(), nt = static_cast<int>(rig.morph_targets.size());
  std::vector<Animation> animations;
  for (size_t c = 0; c < clips.size(); ++c) {
    const v1::AnimationClip& clip = clips[c];
    const int nf = clip.poses_size();
    RETURN_IF_ERROR(CheckClip(clip, nt, absl::StrFormat("animations[%d]", c)));
    Animation& a = animations.emplace_back();
    a.name = clip.name();
    std::vector<double> times(nf);
    for (int f = 0; f < nf; ++f) times[f] = clip.start() + f / static_cast<double>(clip.frames_per_second());
    a.start = times.front();
    a.end = times.back();
    // Every frame's local transforms (PoseLocals: the bind pose's for a frame without joints).
    std::vector<std::vector<Transform>> local(nf);
    bool morphs = false;
    for (int f = 0; f < nf; ++f) {
      const std::string where = absl::StrFormat("animations[%d].poses[%d]", c, f);
      ASSIGN_OR_RETURN(const Pose pose, PoseFromProto(clip.poses(f), rig.skeleton, where.c_str()));
      local[f] = PoseLocals(rig.skeleton, pose);
      morphs = morphs || clip.poses(f).morph_weights_size() != 0;
    }
    for (int j = 0; j < nj; ++j) {
      const Transform& rest = rig.skeleton.joints[j].rest;
      auto key = [&](AnimationPath path, auto&& values_of) {
        AnimationChannel ch;
        ch.joint = j;
        ch.path = path;
        ch.interpolation = Interpolation::kLinear;
        ch.times = times;
        const std::vector<double> at_rest = values_of(rest);
        bool moves = false;
        for (int f = 0; f < nf; ++f) {
          const std::vector<double> v = values_of(local[f][j]);
          moves = moves || v != at_rest;
          ch.values.insert(ch.values.end(), v.begin(), v.end());
        }
        if (moves) a.channels.push_back(std::move(ch));
      };
      key(AnimationPath::kTranslation, [](const Transform& t) {
        return std::vector<double>{t.translation.x(), t.translation.y(), t.translation.z()};
      });
      key(AnimationPath::kRotation, [](const Transform& t) {
        return std::vector<double>{t.rotation.x(), t.rotation.y(), t.rotation.z(), t.rotation.w()};
      });
      key(AnimationPath::kScale,
          [](const Transform& t) { return std::vector<double>{t.scale.x(), t.scale.y(), t.scale.z()}; });
    }
    if (morphs && nt > 0) {
      MorphWeightChannel& m = a.morph_channels.emplace_back();
      m.first_target = 0;
      m.count = nt;
      m.interpolation = Interpolation::kLinear;
      m.times = times;
      for (int f = 0; f < nf; ++f)
        for (int t = 0; t < nt; ++t)
          m.values.push_back(clip.poses(f).morph_weights_size() != 0 ? clip.poses(f).morph_weights(t)
                                                                     : rig.morph_targets[t].default_weight);
    }
  }
  return animations;
}

absl::Status CheckClip(const v1::AnimationClip& clip, int num_targets, const std::string& where) {
  if (!std::isfinite(clip.frames_per_second()) || clip.frames_per_second() <= 0)
    return absl::InvalidArgumentError(absl::StrFormat("%s.frames_per_second = %g; a rate is finite and above 0",
                                                      where, clip.frames_per_second()));
  if (!std::isfinite(clip.start())) return absl::InvalidArgumentError(absl::StrCat(where, ".start is not finite"));
  if (clip.poses().empty()) return absl::InvalidArgumentError(absl::StrCat(where, ".poses is empty"));
  for (int f = 0; f < clip.poses_size(); ++f) {
    const v1::Pose& pose = clip.poses(f);
    if (pose.morph_weights_size() != 0 && pose.morph_weights_size() != num_targets)
      return absl::InvalidArgumentError(
          absl::StrFormat("%s.poses[%d].morph_weights has %d values; the rig has %d morph targets (give none or one "
                          "each)", where, f, pose.morph_weights_size(), num_targets));
    for (int t = 0; t < pose.morph_weights_size(); ++t)
      if (!std::isfinite(pose.morph_weights(t)))
        return absl::InvalidArgumentError(absl::StrFormat("%s.poses[%d].morph_weights[%d] is not finite", where, f, t));
  }
  return absl::OkStatus();
}

int FramesIn(double length, double frames_per_second) {
  return static_cast<int>(std::floor(length * frames_per_second + 1e-3)) + 1;
}

absl::StatusOr<std::vector<v1::AnimationClip>> SampleClips(const std::vector<Animation>& animations,
                                                           const Rig& rig, double frames_per_second, int max_frames,
                                                           size_t max_bytes) {
  std::vector<double> defaults;
  for (const MorphTarget& target : rig.morph_targets) defaults.push_back(target.default_weight);
  // Each animation's length and rate: frames_per_second, lowered to fit max_frames.
  std::vector<double> length(animations.size()), rate(animations.size());
  auto frames_at = [&](size_t a, double fps) {
    return std::max(1, std::min(max_frames, FramesIn(length[a], fps)));
  };
  double total_frames = 0;
  for (size_t a = 0; a < animations.size(); ++a) {
    length[a] = std::max(0.0, animations[a].end - animations[a].start);
    rate[a] = frames_per_second;
    if (max_frames > 1 && length[a] * rate[a] + 1 > max_frames) rate[a] = (max_frames - 1) / length[a];
    total_frames += frames_at(a, rate[a]);
  }
  // The clips' size, from the largest a frame can be (every joint moved, turned and scaled):
  // when every frame of every animation would not fit max_bytes, every rate is lowered by one
  // factor so that they do (a clip says its rate).
  if (!animations.empty() && max_bytes > 0) {
    Transform moved;
    moved.translation = Eigen::Vector3d(1, 2, 3);
    moved.rotation = Eigen::Quaterniond(0.5, 0.5, 0.5, 0.5);
    moved.scale = Eigen::Vector3d(2, 3, 4);
    v1::Pose probe = PoseToProto(Pose{std::vector<Transform>(rig.skeleton.joints.size(), moved)});
    for (size_t t = 0; t < defaults.size(); ++t) probe.add_morph_weights(1.0f);
    const double frame_bytes = static_cast<double>(probe.ByteSizeLong()) + 8;
    const double fit = static_cast<double>(max_bytes) / frame_bytes;
    if (fit < static_cast<double>(animations.size()))
      return absl::ResourceExhaustedError(absl::StrFormat(
          "the file's %d animations of %d joints take %.0f bytes a frame; even one frame each exceeds the %d bytes "
          "an answer may give them (--max_message_mb)",
          animations.size(), rig.skeleton.joints.size(), frame_bytes, max_bytes));
    if (total_frames > fit) {
      const double scale = fit / total_frames;
      for (size_t a = 0; a < animations.size(); ++a) rate[a] *= scale;
    }
  }
  std::vector<v1::AnimationClip> clips;
  for (size_t a = 0; a < animations.size(); ++a) {
    const Animation& anim = animations[a];
    const double fps = rate[a];
    const int frames = frames_at(a, fps);
    v1::AnimationClip& clip = clips.emplace_back();
    clip.set_name(anim.name.empty() ? absl::StrFormat("animation%d", a) : anim.name);
    clip.set_frames_per_second(static_cast<float>(fps));
    clip.set_start(static_cast<float>(anim.start));
    for (int f = 0; f < frames; ++f) {
      const double t = anim.start + f / fps;
      Pose sampled{SampleAnimation(rig.skeleton, anim, t)};
      // A scale key of 0 (the usual way to hide a part) becomes twice the smallest scale a pose
      // takes (twice: it still is after rounding to float), so that every frame goes back to
      // PoseClip as it is (it was refused there).
      constexpr double kHidden = 2 * kMinPoseScale;
      for (Transform& joint : sampled.local)
        for (int c = 0; c < 3; ++c)
          if (std::abs(joint.scale(c)) < kHidden) joint.scale(c) = std::signbit(joint.scale(c)) ? -kHidden : kHidden;
      v1::Pose* pose = clip.add_poses();
      *pose = PoseToProto(sampled);
      if (!anim.morph_channels.empty())
        for (double w : SampleMorphWeights(anim, t, defaults)) pose->add_morph_weights(static_cast<float>(w));
    }
  }
  return clips;
}

}  // namespace skinning
