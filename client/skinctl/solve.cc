// skinctl solve: fast automatic skinning transformations on a fast_model bake. Reads handle
// constraints from JSON, prints the solved transforms as JSON and writes the posed mesh.
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/skinctl/commands.h"
#include "client/skinctl/common.h"
#include "client/skinctl/flags.h"
#include "client/skinctl/inputs.h"
#include "core/io/gltf.h"
#include "core/io/obj.h"
#include "core/io/text_io.h"
#include "core/util/status_macros.h"

namespace skinning {
namespace {

namespace fs = std::filesystem;

// The FAST constraints of a JSON file (ParseConstraintsJson).
absl::StatusOr<v1::SolveRequest> ReadConstraintsFile(const std::string& path, const Skeleton& skeleton) {
  ASSIGN_OR_RETURN(const std::string text, io_internal::ReadFileToString(path));
  return ParseConstraintsJson(text, skeleton, path);
}

}  // namespace

absl::Status CommandSolve(const Args&) {
  ASSIGN_OR_RETURN(std::unique_ptr<Client> client, MakeClient());
  const std::string bake_name = absl::GetFlag(FLAGS_bake);
  if (bake_name.empty())
    return absl::InvalidArgumentError("solve needs --bake=rigs/{rig}/bakes/{bake} (a fast_model bake)");
  // The rig is the bake's parent: rigs/{rig}/bakes/{bake}.
  const size_t slash = bake_name.find("/bakes/");
  if (slash == std::string::npos)
    return absl::InvalidArgumentError(absl::StrCat("--bake: '", bake_name, "' is not a bake name (rigs/{rig}/bakes/{bake})"));
  const std::string rig_name = bake_name.substr(0, slash);
  ASSIGN_OR_RETURN(v1::Bake bake, client->GetBake(bake_name));  // NOT_FOUND before reading the constraints
  ASSIGN_OR_RETURN(Rig rig, FetchRig(*client, rig_name));
  if (absl::GetFlag(FLAGS_constraints).empty()) return absl::InvalidArgumentError("solve needs --constraints=FILE.json");
  ASSIGN_OR_RETURN(v1::SolveRequest req, ReadConstraintsFile(absl::GetFlag(FLAGS_constraints), rig.skeleton));
  req.set_bake(bake.name());
  if (absl::GetFlag(FLAGS_iterations) < 1) return absl::InvalidArgumentError("--iterations must be at least 1");
  req.set_iteration_count(absl::GetFlag(FLAGS_iterations));
  req.mutable_outputs()->set_vertices(true);
  ASSIGN_OR_RETURN(v1::FastSolution solved, client->Solve(req));
  nlohmann::json out;
  out["energy"] = solved.energy();
  out["transforms"] = nlohmann::json::array();
  for (int h = 0; h < solved.transforms_size() / 12; ++h) {
    nlohmann::json t;
    if (h < solved.handle_joints_size()) {
      const int j = solved.handle_joints(h);
      t["joint"] = j;
      t["name"] = rig.skeleton.joints[j].name;
    } else {
      t["extra_handle"] = h - solved.handle_joints_size();
    }
    std::vector<float> m(solved.transforms().begin() + 12 * h, solved.transforms().begin() + 12 * h + 12);
    t["transform"] = m;
    out["transforms"].push_back(t);
  }
  std::printf("%s\n", out.dump(2).c_str());
  const fs::path out_dir = absl::GetFlag(FLAGS_out);
  RETURN_IF_ERROR(MakeOutputDir(out_dir.string()));
  const Mesh mesh = PosedMesh(rig.mesh, solved.vertices(), {});
  const std::string stem = OutputStem(rig, rig_name);
  for (absl::string_view format : absl::StrSplit(absl::GetFlag(FLAGS_format), ',', absl::SkipWhitespace())) {
    const fs::path path = out_dir / absl::StrCat(stem, "-fast.", format);
    RETURN_IF_ERROR(format == "obj" ? WriteObj(path.string(), mesh, rig.mesh_parts)
                                    : WritePosedGltf(path.string(), mesh, rig.mesh_parts));
    std::fprintf(stderr, "wrote %s\n", path.string().c_str());
  }
  return absl::OkStatus();
}

}  // namespace skinning
