// skinctl solve: fast automatic skinning transformations on a fast_model bake. Reads handle
// constraints from JSON, prints the solved transforms as JSON and writes the posed mesh.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/skinctl/commands.h"
#include "client/skinctl/common.h"
#include "client/skinctl/flags.h"
#include "core/io/gltf.h"
#include "core/io/obj.h"
#include "core/util/status_macros.h"

namespace skinning {
namespace {

namespace fs = std::filesystem;

// {"constraints": [{"joint": NAME or INDEX, "transform": [12 numbers, 3x4 row-major]} or
//                  {"joint": ..., "position": [x, y, z], "point": [x, y, z] (optional)}]}
// A constraint with neither leaves the handle free.
absl::StatusOr<v1::SolveRequest> ReadConstraintsFile(const std::string& path, const Skeleton& skeleton) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("constraints") || !doc["constraints"].is_array())
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected a JSON object with a \"constraints\" array"));
  v1::SolveRequest req;
  int i = 0;
  for (const auto& entry : doc["constraints"]) {
    const std::string where = absl::StrFormat("%s: constraints[%d]", path, i++);
    if (!entry.is_object() || !entry.contains("joint"))
      return absl::InvalidArgumentError(absl::StrCat(where, ": needs \"joint\" (a name or an index)"));
    int j = -1;
    if (entry["joint"].is_string()) j = skeleton.Find(entry["joint"].get<std::string>());
    else if (entry["joint"].is_number_integer()) j = entry["joint"].get<int>();
    if (j < 0 || j >= skeleton.size())
      return absl::InvalidArgumentError(absl::StrCat(where, ": unknown joint ", entry["joint"].dump()));
    auto numbers = [&](const char* key, size_t n, google::protobuf::RepeatedField<float>* out) -> absl::Status {
      const auto& a = entry[key];
      if (!a.is_array() || a.size() != n)
        return absl::InvalidArgumentError(absl::StrFormat("%s.%s must be an array of %d numbers", where, key, n));
      for (const auto& v : a) {
        if (!v.is_number()) return absl::InvalidArgumentError(absl::StrFormat("%s.%s holds a non-number", where, key));
        out->Add(v.get<float>());
      }
      return absl::OkStatus();
    };
    v1::HandleConstraint* c = req.add_constraints();
    c->set_joint(j);
    if (entry.contains("transform")) {
      c->set_kind(v1::HandleConstraint::KIND_TRANSFORM);
      RETURN_IF_ERROR(numbers("transform", 12, c->mutable_target()));
    } else if (entry.contains("position")) {
      c->set_kind(v1::HandleConstraint::KIND_POSITION);
      RETURN_IF_ERROR(numbers("position", 3, c->mutable_target()));
      if (entry.contains("point")) RETURN_IF_ERROR(numbers("point", 3, c->mutable_point()));
    }
  }
  return req;
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
