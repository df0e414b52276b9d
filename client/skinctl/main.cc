// skinctl: register, list, inspect, delete, bake and pose rigs on a skinning server. One file
// per command (commands.h); this file holds the usage text and the dispatch.
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "client/skinctl/commands.h"

namespace skinning {
namespace {

constexpr char kUsage[] = R"(skinctl: talk to a skinning server.

Usage: skinctl [--server=host:port] [--token=T] [--tls_ca=CA.pem [--tls_cert=C.pem --tls_key=K.pem]]
               COMMAND [flags]

Security: --token (or $SKINNING_TOKEN) is sent as a bearer token on every call; --tls_ca turns
TLS on (trusting that CA), --tls_cert/--tls_key add a client certificate (mutual TLS).

Resources are named rigs/{rig} (RIG; a bare rig id is accepted too), rigs/{rig}/bakes/{bake}
(BAKE) and rigs/{rig}/examples/{example}, as skinctl prints them.

Commands:
  register  --gltf=FILE | --obj=FILE --tgf=FILE [--dmat=FILE]  [--name=NAME]
            Registers a rig (idempotent) and prints its name, rigs/{rig}.
  list      Lists the stored rigs.
  get RIG [--out_file=FILE.glb]
            Prints a rig's summary; with --out_file also writes it as a skinned glTF.
  delete RIG Deletes a rig.
  bake      (--rig=RIG | --gltf=FILE | --obj=.. --tgf=..)
            [--bake_method=bbw|bone_heat|geodesic_voxel|fast_model|swing_twist|endpoint|elastic_model]
            [--resolution=N] [--influences=K] [--tet=FILE.mesh] [--falloff=F] [--dionne_falloff=A] [--out=DIR] [--nowait]
            [--weights_bake=BAKE] [--endpoint_method=joint_bbw|projection]
            Bakes on the server with progress, then writes DIR/<rig>-<method>.dmat (dense
            #V x #joints: bone weights; swing_twist: the deformer weights d, plus -swing.dmat and
            -twist.dmat; endpoint: plus -endpoint.dmat) and DIR/<rig>-<method>.glb (skinned, top-K).
            fast_model and elastic_model bakes print their name (use them with solve / pose).
  solve     --bake=FAST_BAKE --constraints=FILE.json [--iterations=15] [--out=DIR]
            [--format=glb,obj]
            Solves the free handles with fast automatic skinning transformations, prints the
            transforms as JSON and writes the posed mesh.
  bake-status BAKE       Prints a bake's state.
  cancel BAKE            Cancels a queued or running bake.
  pose      (--rig=RIG | --gltf=FILE | --obj=.. --tgf=.. --dmat=..) [--bake=BAKE]
            [--pose=FILE | --times=T1,T2,.. | --fps=F] [--animation=N]
            [--method=lbs,dqs,...] [--stretch=J=S,..] [--twist=J=A:B,..] [--out=DIR] [--format=glb,obj]
            Poses the rig through the server (one PoseClip call per method) and writes the posed
            meshes. With no pose, time or rate it poses the rest pose. stbs_lbs/stbs_dqs need an
            endpoint bake (--bake), swing_twist a swing_twist bake, elastic an elastic_model bake.
  example add --rig=RIG --pose=FILE --mesh=FILE.obj|.off [--name=NAME]
            Adds a pose space deformation example: the sculpted mesh (the rig's vertices, same
            order) at the pose (the formats of pose --pose). Prints its name and the count.
  example list --rig=RIG     Lists the rig's examples.
  example remove --rig=RIG EXAMPLE   Removes one (its name or id).
)";

absl::Status Run(const Args& args) {
  if (args.size() < 2) {
    std::cerr << kUsage;
    return absl::InvalidArgumentError("no command given");
  }
  const std::string command = args[1];
  if (command == "register") return CommandRegister(args);
  if (command == "list") return CommandList(args);
  if (command == "get") return CommandGet(args);
  if (command == "delete") return CommandDelete(args);
  if (command == "pose") return CommandPose(args);
  if (command == "bake") return CommandBake(args);
  if (command == "bake-status" || command == "cancel") return CommandBakeStatus(args);
  if (command == "solve") return CommandSolve(args);
  if (command == "example") return CommandExample(args);
  std::cerr << kUsage;
  return absl::InvalidArgumentError(absl::StrCat("unknown command '", command, "'"));
}

}  // namespace
}  // namespace skinning

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(skinning::kUsage);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  absl::Status s = skinning::Run(args);
  if (!s.ok()) {
    std::cerr << "skinctl: " << absl::StatusCodeToString(s.code()) << ": " << s.message() << std::endl;
    return 2;
  }
  return 0;
}
