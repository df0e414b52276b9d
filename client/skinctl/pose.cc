// skinctl pose: poses a rig through the server (one PoseClip call per deformer) and writes the
// posed meshes. Frames come from a pose file, animation times or a frame rate, or the rest pose.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/skinctl/commands.h"
#include "client/skinctl/common.h"
#include "client/skinctl/flags.h"
#include "core/io/gltf.h"
#include "core/io/obj.h"
#include "core/rig/pose.h"
#include "core/util/status_macros.h"
#include "server/convert/convert.h"
#include "server/convert/gltf_import.h"

namespace skinning {
namespace {

namespace fs = std::filesystem;

constexpr char kDeformers[] =
    "lbs, dqs, stbs_lbs, stbs_dqs, swing_twist, elastic, psd_lbs, psd_dqs, psd_support_lbs, psd_support_dqs";

absl::StatusOr<std::vector<double>> AnimationTimes(const Animation& anim) {
  std::vector<double> times;
  if (const std::string list = absl::GetFlag(FLAGS_times); !list.empty()) {
    for (absl::string_view part : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
      double t;
      if (!absl::SimpleAtod(part, &t) || !std::isfinite(t))
        return absl::InvalidArgumentError(absl::StrCat("--times: '", part, "' is not a number"));
      times.push_back(t);
    }
  } else if (const double fps = absl::GetFlag(FLAGS_fps); fps > 0) {
    const int frames = FramesIn(anim.end - anim.start, fps);
    for (int f = 0; f < frames; ++f) times.push_back(anim.start + f / fps);
  }
  return times;
}

// --method: "lbs" is the default deformer (DEFORMER_UNSPECIFIED); the others are DEFORMER_<NAME>.
absl::StatusOr<std::vector<std::pair<std::string, v1::Deformer>>> ParseDeformers() {
  std::vector<std::pair<std::string, v1::Deformer>> deformers;
  for (absl::string_view m : absl::StrSplit(absl::GetFlag(FLAGS_method), ',', absl::SkipWhitespace())) {
    v1::Deformer parsed = v1::DEFORMER_UNSPECIFIED;
    if (m != "lbs" && (!v1::Deformer_Parse(absl::AsciiStrToUpper(absl::StrCat("DEFORMER_", m)), &parsed) ||
                       parsed == v1::DEFORMER_UNSPECIFIED))
      return absl::InvalidArgumentError(absl::StrCat("--method: unknown method '", m, "' (", kDeformers, ")"));
    deformers.emplace_back(std::string(m), parsed);
  }
  return deformers;
}

// Bone stretch (--stretch) and twist (--twist) for STBS, the same for every frame.
absl::Status ParseStretchAndTwist(const Skeleton& skeleton, std::vector<float>* stretch, std::vector<float>* twist) {
  // A joint's name, or its index. (SimpleAtoi writes 0 when it fails, so its result is read only
  // when it succeeds: a misspelt name used to stretch joint 0.)
  auto joint_index = [&](absl::string_view name, const char* flag) -> absl::StatusOr<int> {
    if (const int j = skeleton.Find(std::string(name)); j >= 0) return j;
    if (int j = 0; absl::SimpleAtoi(name, &j) && j >= 0 && j < skeleton.size()) return j;
    return absl::InvalidArgumentError(absl::StrCat(flag, ": unknown joint '", name,
                                                   "': give a joint's name or its index, 0 to ", skeleton.size() - 1));
  };
  for (absl::string_view item : absl::StrSplit(absl::GetFlag(FLAGS_stretch), ',', absl::SkipWhitespace())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    ASSIGN_OR_RETURN(const int j, joint_index(kv.first, "--stretch"));
    double scale;
    if (!absl::SimpleAtod(kv.second, &scale))
      return absl::InvalidArgumentError(absl::StrCat("--stretch: '", item, "' is not JOINT=SCALE"));
    if (stretch->empty()) stretch->assign(skeleton.size(), 1.0f);
    (*stretch)[j] = static_cast<float>(scale);
  }
  for (absl::string_view item : absl::StrSplit(absl::GetFlag(FLAGS_twist), ',', absl::SkipWhitespace())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    ASSIGN_OR_RETURN(const int j, joint_index(kv.first, "--twist"));
    std::pair<std::string, std::string> ab = absl::StrSplit(kv.second, absl::MaxSplits(':', 1));
    double a, b;
    if (!absl::SimpleAtod(ab.first, &a) || !absl::SimpleAtod(ab.second, &b))
      return absl::InvalidArgumentError(absl::StrCat("--twist: '", item, "' is not JOINT=START:END (degrees)"));
    if (twist->empty()) twist->assign(2 * skeleton.size(), 0.0f);
    (*twist)[2 * j] = static_cast<float>(a * M_PI / 180);
    (*twist)[2 * j + 1] = static_cast<float>(b * M_PI / 180);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CommandPose(const Args&) {
  ASSIGN_OR_RETURN(std::unique_ptr<Client> client, MakeClient());
  // The rig: from local files (registered first), or by name from the server.
  std::optional<Character> local;
  std::string rig_name = RigNameArg(absl::GetFlag(FLAGS_rig));
  if (!absl::GetFlag(FLAGS_gltf).empty() || !absl::GetFlag(FLAGS_obj).empty()) {
    ASSIGN_OR_RETURN(local, LoadCharacter());
  }
  Rig rig;
  if (rig_name.empty()) {
    if (!local) return absl::InvalidArgumentError("pose needs --rig=rigs/{rig} or a character (--gltf or --obj/--tgf)");
    ASSIGN_OR_RETURN(rig_name, RegisterCharacter(*client, *local));
    rig = local->rig;
  } else {
    ASSIGN_OR_RETURN(rig, FetchRig(*client, rig_name));
    if (local && local->rig.skeleton.size() != rig.skeleton.size())
      return absl::InvalidArgumentError(absl::StrFormat("rig %s has %d joints but %s has %d", rig_name,
                                                        rig.skeleton.size(), absl::GetFlag(FLAGS_gltf),
                                                        local->rig.skeleton.size()));
  }

  // The frames: from one source. --fps at most 1,000 (a million frames of a 1 s clip wrote
  // nothing, past the clip limit), and given, above 0 (0 and below posed the rest pose).
  const bool fps_given = absl::GetFlag(FLAGS_fps) != 0;
  if (fps_given && !(absl::GetFlag(FLAGS_fps) > 0 && absl::GetFlag(FLAGS_fps) <= 1000))
    return absl::InvalidArgumentError(absl::StrFormat("--fps=%g: give a frame rate above 0, at most 1000",
                                                      absl::GetFlag(FLAGS_fps)));
  const int sources = !absl::GetFlag(FLAGS_pose).empty() + !absl::GetFlag(FLAGS_times).empty() + fps_given;
  if (sources > 1) return absl::InvalidArgumentError("give one of --pose, --times and --fps");
  std::vector<std::pair<std::string, Pose>> frames;
  std::vector<v1::Pose> frame_morphs;  // per frame: its morph weights only (none: the defaults)
  if (const std::string pose_file = absl::GetFlag(FLAGS_pose); !pose_file.empty()) {
    ASSIGN_OR_RETURN(Pose p, ReadPoseFile(pose_file, rig.skeleton));
    frames.emplace_back(fs::path(pose_file).stem().string(), std::move(p));
    RETURN_IF_ERROR(ReadPoseFileMorphWeights(pose_file, &frame_morphs.emplace_back()));
  } else if (!absl::GetFlag(FLAGS_times).empty() || absl::GetFlag(FLAGS_fps) > 0) {
    // The file's animations, else those stored with the --rig.
    std::vector<Animation> animations;
    const char* whose = "the file has";
    if (local) {
      animations = local->animations;
    } else {
      ASSIGN_OR_RETURN(const std::vector<v1::AnimationClip> clips, client->GetAnimations(rig_name));
      ASSIGN_OR_RETURN(animations, ClipAnimations(clips, rig));
      whose = "the rig has stored";
    }
    if (animations.empty())
      return absl::InvalidArgumentError(absl::StrCat("--times/--fps need an animation: a glTF file's (--gltf) or one "
                                                     "stored with the --rig (", whose, " none)"));
    const int a = absl::GetFlag(FLAGS_animation);
    if (a < 0 || a >= static_cast<int>(animations.size()))
      return absl::InvalidArgumentError(
          absl::StrFormat("--animation=%d: %s %d animations", a, whose, animations.size()));
    ASSIGN_OR_RETURN(std::vector<double> times, AnimationTimes(animations[a]));
    std::vector<double> defaults;
    for (const MorphTarget& target : rig.morph_targets) defaults.push_back(target.default_weight);
    const Animation& animation = animations[a];
    for (double t : times) {
      frames.emplace_back(absl::StrFormat("t%.3f", t), Pose{SampleAnimation(rig.skeleton, animation, t)});
      v1::Pose& morph = frame_morphs.emplace_back();
      if (!animation.morph_channels.empty()) {
        for (double w : SampleMorphWeights(animation, t, defaults)) morph.add_morph_weights(static_cast<float>(w));
      }
    }
  } else {
    frames.emplace_back("rest", RestPose(rig.skeleton));
  }

  ASSIGN_OR_RETURN(const auto deformers, ParseDeformers());
  std::vector<float> stretch, twist;
  RETURN_IF_ERROR(ParseStretchAndTwist(rig.skeleton, &stretch, &twist));
  std::vector<std::string> formats = absl::StrSplit(absl::GetFlag(FLAGS_format), ',', absl::SkipWhitespace());
  for (const std::string& f : formats)
    if (f != "glb" && f != "gltf" && f != "obj")
      return absl::InvalidArgumentError(absl::StrCat("--format: unknown format '", f, "' (glb, gltf or obj)"));

  const fs::path out_dir = absl::GetFlag(FLAGS_out);
  RETURN_IF_ERROR(MakeOutputDir(out_dir.string()));
  const std::string stem = OutputStem(rig, rig_name);

  for (const auto& [deformer_name, deformer] : deformers) {
    v1::PoseClipRequest req;
    req.set_rig(rig_name);
    req.set_bake(absl::GetFlag(FLAGS_bake));
    req.set_deformer(deformer);
    req.mutable_outputs()->set_vertices(true);
    req.mutable_outputs()->set_normals(rig.mesh.N.rows() > 0);
    for (size_t f = 0; f < frames.size(); ++f) {
      const auto& frame = frames[f];
      v1::Pose* p = req.add_poses();
      *p = PoseToProto(frame.second);
      if (f < frame_morphs.size()) p->MergeFrom(frame_morphs[f]);
      for (float v : stretch) p->add_bone_stretch(v);
      for (float v : twist) p->add_bone_twist(v);
    }
    ASSIGN_OR_RETURN(v1::PoseClipResponse clip, client->PoseClip(req));
    for (size_t f = 0; f < frames.size(); ++f) {
      const v1::PosedFrame& posed = clip.frames(static_cast<int>(f));
      const Mesh mesh = PosedMesh(rig.mesh, posed.vertices(), posed.normals());
      for (const std::string& format : formats) {
        const fs::path path = out_dir / absl::StrCat(stem, "-", deformer_name, "-", frames[f].first, ".", format);
        RETURN_IF_ERROR(format == "obj" ? WriteObj(path.string(), mesh, rig.mesh_parts)
                                        : WritePosedGltf(path.string(), mesh, rig.mesh_parts));
        std::printf("%s\n", path.string().c_str());
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace skinning
