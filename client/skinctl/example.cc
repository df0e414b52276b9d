// skinctl example add|list|remove: pose space deformation examples of a stored rig.
#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/skinctl/commands.h"
#include "client/skinctl/common.h"
#include "client/skinctl/flags.h"
#include "core/io/mesh_file.h"
#include "core/util/status_macros.h"
#include "server/convert/convert.h"

namespace skinning {
namespace {

absl::Status AddExample(Client& client, const std::string& rig_name) {
  const std::string pose_file = absl::GetFlag(FLAGS_pose), mesh_file = absl::GetFlag(FLAGS_mesh);
  if (pose_file.empty() || mesh_file.empty())
    return absl::InvalidArgumentError("example add needs --pose=FILE (.json or .dmat) and --mesh=FILE (.obj or .off)");
  ASSIGN_OR_RETURN(Rig rig, FetchRig(client, rig_name));
  ASSIGN_OR_RETURN(Pose pose, ReadPoseFile(pose_file, rig.skeleton));
  ASSIGN_OR_RETURN(Mesh mesh, ReadMeshFile(mesh_file));
  if (mesh.V.rows() != rig.mesh.V.rows())
    return absl::InvalidArgumentError(absl::StrFormat("%s has %d vertices, rig %s has %d (same vertices, same order)",
                                                      mesh_file, mesh.V.rows(), rig_name, rig.mesh.V.rows()));
  v1::CreateExampleRequest req;
  req.set_parent(rig_name);
  req.set_example_id(absl::GetFlag(FLAGS_name));  // empty: the server names it
  v1::Example* e = req.mutable_example();
  *e->mutable_pose() = PoseToProto(pose);
  e->mutable_positions()->Reserve(static_cast<int>(mesh.V.size()));
  for (int i = 0; i < mesh.V.rows(); ++i)
    for (int a = 0; a < 3; ++a) e->add_positions(static_cast<float>(mesh.V(i, a)));
  ASSIGN_OR_RETURN(v1::CreateExampleResponse added, client.CreateExample(req));
  std::printf("%s (%d examples)%s\n", added.example().name().c_str(), added.example_count(),
              added.created() ? "" : ", already stored as given: nothing changed");
  return absl::OkStatus();
}

}  // namespace

absl::Status CommandExample(const Args& args) {
  if (args.size() < 3) return absl::InvalidArgumentError("example needs a subcommand: add, list or remove");
  const std::string sub = args[2];
  const std::string rig_name = RigNameArg(absl::GetFlag(FLAGS_rig));
  if (rig_name.empty()) return absl::InvalidArgumentError(absl::StrCat("example ", sub, " needs --rig=rigs/{rig}"));
  ASSIGN_OR_RETURN(std::unique_ptr<Client> client, MakeClient());
  if (sub == "add") return AddExample(*client, rig_name);
  if (sub == "list") {
    ASSIGN_OR_RETURN(std::vector<v1::Example> examples, client->ListExamples(rig_name));
    for (const v1::Example& e : examples) std::printf("%s\n", e.name().c_str());
    return absl::OkStatus();
  }
  if (sub == "remove") {
    // The example's name, or its id under --rig.
    std::string name = args.size() >= 4 ? args[3] : absl::GetFlag(FLAGS_name);
    if (name.empty()) return absl::InvalidArgumentError("example remove needs the example's name");
    if (!absl::StrContains(name, "/examples/")) name = absl::StrCat(rig_name, "/examples/", name);
    RETURN_IF_ERROR(client->DeleteExample(name));
    ASSIGN_OR_RETURN(std::vector<v1::Example> left, client->ListExamples(rig_name));
    std::printf("removed %s (%zu examples left)\n", name.c_str(), left.size());
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat("example: unknown subcommand '", sub, "' (add, list or remove)"));
}

}  // namespace skinning
