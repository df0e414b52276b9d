// What several skinctl commands share: the client the flags describe, reading a character and
// a pose from local files, fetching a stored rig, printing rigs and bakes.
#ifndef SKINNING_CLIENT_SKINCTL_COMMON_H_
#define SKINNING_CLIENT_SKINCTL_COMMON_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/client.h"
#include "core/rig/animation.h"
#include "core/rig/pose.h"
#include "core/rig/skeleton.h"
#include "server/convert/rig.h"

namespace skinning {

// A character read from local files (--gltf, or --obj --tgf [--dmat]; --name renames it).
struct Character {
  Rig rig;
  std::vector<Animation> animations;
  // What the file held, for the register line: "from a glTF: 1 skin, 1 mesh node, 0 morph
  // targets" (empty for OBJ + TGF).
  std::string source_summary;
};
absl::StatusOr<Character> LoadCharacter();

// The client the flags describe: --server, --deadline_ms, --token (or $SKINNING_TOKEN), and TLS
// when --tls_ca or --tls_cert is given.
absl::StatusOr<std::unique_ptr<Client>> MakeClient();

// A rig name from the command line: "rigs/{rig}", or a bare rig id "rig-…" for convenience.
std::string RigNameArg(const std::string& arg);

// Creates the rig (idempotent) with the character's animations, reports it on stderr and returns
// its name.
absl::StatusOr<std::string> RegisterCharacter(Client& client, const Character& c);

// The stored rig `name` in full (mesh, skeleton, weights).
absl::StatusOr<Rig> FetchRig(Client& client, const std::string& name);

// One line: name, display name, sizes, weights.
void PrintRig(const v1::Rig& rig);

// Reads a pose file for `skeleton`: .json with {"joints": [{"name"|"index", "rotation": [x,y,z,w],
// "translation": [..], "scale": [..]}]} (absolute local transforms; joints not listed keep their
// rest transform; fields not given keep the rest value), or libigl's .dmat of relative rotations
// (one quaternion x,y,z,w per joint, applied after the rest rotation).
absl::StatusOr<Pose> ReadPoseFile(const std::string& path, const Skeleton& skeleton);
// The morph weights a JSON pose file sets, into `pose`: "morph_weights" as an object by target
// name ({"smile": 0.5}, into named_morph_weights: targets not named keep their default weight)
// or an array by index (into morph_weights: one per target). Nothing when the file sets none
// (or is a .dmat). The server checks names and counts against the rig.
absl::Status ReadPoseFileMorphWeights(const std::string& path, v1::Pose* pose);

// "queued", "running", "succeeded", "failed", "cancelled".
std::string BakeStateName(v1::BakeState state);
// Seconds of a google.protobuf.Duration.
double Seconds(const google::protobuf::Duration& d);
// The bake's name first, then its rig, state, stage and progress; its error or report.
void PrintBake(const v1::Bake& bake);

// A bake's progress on stderr: a bar on a terminal, plain lines (one per 5% or stage) otherwise.
class ProgressPrinter {
 public:
  ProgressPrinter();
  bool Update(const v1::Bake& bake);

 private:
  bool tty_;
  std::string last_stage_;
  double last_fraction_ = -1;
};

// The stem of the files written for a rig: its display name as a file name (characters other
// than letters, digits, '.', '_' and '-' become '_', no leading '.', at most 64 bytes: a name
// such as "../x" never writes outside --out), or else its id (rigs/{rig} → {rig}). Two rigs with
// one display name write the same files.
std::string OutputStem(const Rig& rig, const std::string& rig_name);

// Creates --out (or `dir`) if needed.
absl::Status MakeOutputDir(const std::string& dir);

// A posed mesh: the rig's triangles with the answered vertex positions (and normals if given).
Mesh PosedMesh(const Mesh& rest, const google::protobuf::RepeatedField<float>& vertices,
               const google::protobuf::RepeatedField<float>& normals);

}  // namespace skinning

#endif  // SKINNING_CLIENT_SKINCTL_COMMON_H_
