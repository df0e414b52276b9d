// skinctl: register, list, inspect, delete, bake and pose rigs on a skinning server. One file
// per command (commands.h); this file holds the usage text and the dispatch.

#include <algorithm>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "client/skinctl/commands.h"
#include "core/util/status_macros.h"
#include "server/convert/program_build.h"

namespace skinning {
namespace {

constexpr char kUsage[] = R"(skinctl: talk to a skinning server.

Usage: skinctl [--server=host:port] [--deadline_ms=60000] [--token=T]
               [--tls_ca=CA.pem [--tls_cert=C.pem --tls_key=K.pem]] COMMAND [flags]

Security: --token (or $SKINNING_TOKEN) is sent as a bearer token on every call; --tls_ca turns
TLS on (trusting that CA), --tls_cert/--tls_key add a client certificate (mutual TLS).

Resources are named rigs/{rig} (RIG; a bare rig id is accepted too), rigs/{rig}/bakes/{bake}
(BAKE) and rigs/{rig}/examples/{example}, as skinctl prints them.

Commands:
  register  --gltf=FILE [--skip_static_meshes] [--scene=N] | --obj=FILE --tgf=FILE [--dmat=FILE]  [--name=NAME]
            Registers a rig (idempotent) and prints its name, rigs/{rig}. --obj takes .obj, .off
            or a MEDIT .mesh (its triangles over all its vertices). A glTF file with meshes that
            no skin or joint moves (a ground plane, scenery) is refused unless
            --skip_static_meshes leaves them out (the summary names them). Of a file with several
            scenes the default one is read, or --scene=N (the summary says which). A glTF
            file's animations are stored with the rig (bake and pose of a file store them too).
  list      Lists the stored rigs.
  get RIG [--out_file=FILE.glb]
            Prints a rig's summary; with --out_file also writes it as a skinned glTF, with the
            animations stored with it.
  delete RIG Deletes a rig.
  bake      (--rig=RIG | --gltf=FILE | --obj=.. --tgf=.. [--dmat=FILE] [--name=NAME])
            [--bake_method=bbw|bone_heat|geodesic_voxel|fast_model|swing_twist|endpoint|elastic_model]
            [--resolution=N] [--influences=K] [--tet=FILE.mesh] [--falloff=F] [--dionne_falloff=A] [--smoothing=N] [--out=DIR] [--nowait]
            [--weights_bake=BAKE] [--endpoint_method=joint_bbw|projection]
            Bakes on the server with progress, then writes DIR/<rig>-<method>.dmat (dense
            #V x #joints: bone weights; swing_twist: the deformer weights d, plus -swing.dmat and
            -twist.dmat; endpoint: plus -endpoint.dmat) and DIR/<rig>-<method>.glb (skinned, top-K;
            with the file's animations, or with those stored with the --rig).
            fast_model and elastic_model bakes print their name (use them with solve / pose).
  solve     --bake=FAST_BAKE --constraints=FILE.json [--iterations=15] [--out=DIR]
            [--format=glb,obj]
            Solves the free handles with fast automatic skinning transformations, prints the
            transforms as JSON and writes the posed mesh.
  bake-status BAKE       Prints a bake's state.
  cancel BAKE            Cancels a queued or running bake.
  pose      (--rig=RIG | --gltf=FILE | --obj=.. --tgf=.. [--dmat=..]) [--bake=BAKE]
            [--pose=FILE | --times=T1,T2,.. | --fps=F] [--animation=N]
            [--method=lbs,dqs,...] [--stretch=J=S,..] [--twist=J=A:B,..] [--out=DIR] [--format=glb,gltf,obj]
            Poses the rig through the server (one PoseClip call per method) and writes the posed
            meshes (--out: skinning-out by default; --format: glb,obj by default). With no pose, time or rate it poses the rest pose. stbs_lbs/stbs_dqs need an
            endpoint bake (--bake), swing_twist a swing_twist bake, elastic an elastic_model bake.
            --times and --fps sample the file's animation --animation, or one stored with the --rig.
  example add --rig=RIG --pose=FILE --mesh=FILE.obj|.off [--name=NAME]
            Adds a pose space deformation example: the sculpted mesh (the rig's vertices, same
            order) at the pose (the formats of pose --pose). Prints its name and the count.
  example list --rig=RIG     Lists the rig's examples.
  example remove --rig=RIG EXAMPLE   Removes one (its name or id).
  help      Prints this.
)";

// The flags each command reads, beside the connection flags every command takes. A flag given on
// the command line that the command does not read is an error: it was silently ignored (bake
// --method=bone_heat baked bbw: --method is pose's).
constexpr const char* kCharacterFlags[] = {"gltf", "skip_static_meshes", "scene", "obj", "tgf", "dmat", "name"};
const std::map<std::string, std::vector<std::string>>& CommandFlags() {
  static const auto* const flags = [] {
    auto* m = new std::map<std::string, std::vector<std::string>>{
        {"register", {}},
        {"list", {}},
        {"get", {"out_file"}},
        {"delete", {}},
        {"bake", {"rig", "bake_method", "resolution", "influences", "tet", "falloff", "dionne_falloff", "smoothing", "out", "wait",
                  "weights_bake", "endpoint_method"}},
        {"bake-status", {}},
        {"cancel", {}},
        {"solve", {"bake", "constraints", "iterations", "out", "format"}},
        {"pose", {"rig", "bake", "pose", "times", "fps", "animation", "method", "stretch", "twist", "out", "format"}},
        {"example", {"rig", "pose", "mesh", "name"}},
    };
    for (const char* command : {"register", "bake", "pose"})
      for (const char* flag : kCharacterFlags) (*m)[command].push_back(flag);
    return m;
  }();
  return *flags;
}

// The names of the flags on the command line (--name=value, --name value, -name, --noname for a
// bool), up to a "--".
std::vector<std::string> FlagsGiven(int argc, char** argv) {
  std::vector<std::string> names;
  for (int i = 1; i < argc; ++i) {
    absl::string_view a = argv[i];
    if (a.empty() || a[0] != '-') continue;
    a.remove_prefix(a.size() > 1 && a[1] == '-' ? 2 : 1);
    if (a.empty()) break;  // "--": no flags after it
    std::string name(a.substr(0, a.find('=')));
    if (absl::FindCommandLineFlag(name) == nullptr && absl::StartsWith(name, "no")) name = name.substr(2);
    names.push_back(name);
  }
  return names;
}

absl::Status CheckFlagsOf(const std::string& command, const std::vector<std::string>& given) {
  const auto it = CommandFlags().find(command);
  if (it == CommandFlags().end()) return absl::OkStatus();  // an unknown command is reported below
  static const std::set<std::string> kEveryCommand = {"server",  "deadline_ms", "token",
                                                      "tls_ca",  "tls_cert",    "tls_key"};
  for (const std::string& n : given) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(n);
    if (flag == nullptr || flag->Filename().find("skinctl") == std::string::npos) continue;  // absl's own
    if (kEveryCommand.count(n) || std::count(it->second.begin(), it->second.end(), n)) continue;
    std::string hint;
    if (command == "bake" && n == "method") hint = " (did you mean --bake_method?)";
    if (command == "pose" && n == "bake_method") hint = " (pose methods are --method; --bake names a bake)";
    std::vector<std::string> takes;
    for (const std::string& f : it->second) takes.push_back("--" + f);
    return absl::InvalidArgumentError(absl::StrCat("--", n, " is not a flag of ", command, hint, "; ", command,
                                                   " takes ", takes.empty() ? "none" : absl::StrJoin(takes, " "),
                                                   " (see skinctl --help)"));
  }
  return absl::OkStatus();
}

absl::Status Run(const Args& args, const std::vector<std::string>& flags_given) {
  if (args.size() < 2) {
    std::cerr << kUsage;
    return absl::InvalidArgumentError("no command given");
  }
  const std::string command = args[1];
  if (command == "help" && args.size() == 2) {  // asked for: the usage on stdout, exit 0
    std::cout << kUsage;
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(CheckFlagsOf(command, flags_given));
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
  // "skinctl 0.1.0 (Release build; gRPC …, protobuf …, Eigen …, CHOLMOD …)".
  absl::FlagsUsageConfig usage_config;
  usage_config.version_string = [] {
    return absl::StrCat("skinctl ", skinning::DescribeProgramBuild(), "\n");
  };
  absl::SetFlagsUsageConfig(usage_config);
  const std::vector<std::string> flags_given = skinning::FlagsGiven(argc, argv);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  absl::Status s = skinning::Run(args, flags_given);
  if (!s.ok()) {
    std::cerr << "skinctl: " << absl::StatusCodeToString(s.code()) << ": " << s.message() << std::endl;
    return 2;
  }
  return 0;
}
