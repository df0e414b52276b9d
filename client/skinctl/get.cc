// skinctl get RIG [--out_file=FILE.glb]: a rig's summary; with --out_file also the stored rig as a
// skinned glTF, with the animations stored with it.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/skinctl/commands.h"
#include "client/skinctl/common.h"
#include "client/skinctl/flags.h"
#include "core/util/status_macros.h"
#include "server/convert/gltf_import.h"

namespace skinning {

absl::Status CommandGet(const Args& args) {
  if (args.size() < 3) return absl::InvalidArgumentError("get needs a rig name (rigs/{rig})");
  const std::string name = RigNameArg(args[2]);
  ASSIGN_OR_RETURN(std::unique_ptr<Client> client, MakeClient());
  const std::string out = absl::GetFlag(FLAGS_out_file);
  if (!out.empty() && !absl::EndsWithIgnoreCase(out, ".glb") && !absl::EndsWithIgnoreCase(out, ".gltf"))
    return absl::InvalidArgumentError(
        absl::StrCat("--out_file=", out, ": a skinned glTF is written, name it .glb or .gltf"));
  ASSIGN_OR_RETURN(v1::Rig got, client->GetRig(name, out.empty() ? v1::RIG_VIEW_UNSPECIFIED : v1::RIG_VIEW_FULL));
  PrintRig(got);
  if (out.empty()) return absl::OkStatus();
  // The stored rig as a skinned glTF (sparse weights, k = 4 unless the rig has more) and its
  // stored animations.
  if (const std::string dir = std::filesystem::path(out).parent_path().string(); !dir.empty())
    RETURN_IF_ERROR(MakeOutputDir(dir));  // as --out does
  ASSIGN_OR_RETURN(const std::vector<v1::AnimationClip> clips, client->GetAnimations(got.name()));
  RETURN_IF_ERROR(ExportRigGltf(got, out, clips));
  for (const v1::AnimationClip& clip : clips)
    std::fprintf(stderr, "animation '%s': %d frames at %g frames/s\n", clip.name().c_str(), clip.poses_size(),
                 clip.frames_per_second());
  std::printf("%s\n", out.c_str());
  return absl::OkStatus();
}

}  // namespace skinning
