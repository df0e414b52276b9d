// skinctl bake: starts a bake on the server, follows its progress and writes its weights (dense
// .dmat and a skinned glTF with the top-k). Model bakes (fast_model, elastic_model) print their
// name for solve / pose.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "client/skinctl/commands.h"
#include "client/skinctl/common.h"
#include "client/skinctl/flags.h"
#include "core/io/dmat.h"
#include "core/io/gltf.h"
#include "core/io/medit.h"
#include "core/skinning/weights.h"
#include "core/util/status_macros.h"
#include "server/convert/gltf_import.h"

namespace skinning {
namespace {

namespace fs = std::filesystem;

// The options the flags describe.
absl::StatusOr<v1::BakeOptions> BakeOptionsFromFlags() {
  v1::BakeOptions options;
  const std::string method = absl::GetFlag(FLAGS_bake_method);
  if (method == "bbw") options.mutable_bbw();
  else if (method == "bone_heat") options.mutable_bone_heat();
  else if (method == "geodesic_voxel" || method == "geodesic") options.mutable_geodesic_voxel();
  else if (method == "fast_model") options.mutable_fast_model();
  else if (method == "swing_twist") options.mutable_swing_twist();
  else if (method == "endpoint") options.mutable_endpoint();
  else if (method == "elastic_model" || method == "elastic") options.mutable_elastic_model();
  else
    return absl::InvalidArgumentError(absl::StrCat("--bake_method: unknown method '", method,
                                                   "' (bbw, bone_heat, geodesic_voxel, fast_model, swing_twist, "
                                                   "endpoint, elastic_model)"));
  if (const std::string w = absl::GetFlag(FLAGS_weights_bake); !w.empty()) {
    if (options.has_fast_model()) options.mutable_fast_model()->set_weights_bake(w);
    else if (options.has_endpoint()) options.mutable_endpoint()->set_weights_bake(w);
    else return absl::InvalidArgumentError("--weights_bake is for --bake_method=fast_model or endpoint");
  }
  if (options.has_endpoint()) {
    const std::string em = absl::GetFlag(FLAGS_endpoint_method);
    if (em == "projection") options.mutable_endpoint()->set_method(v1::ENDPOINT_METHOD_PROJECTION);
    else if (em != "joint_bbw")
      return absl::InvalidArgumentError(absl::StrCat("--endpoint_method: '", em, "' (joint_bbw or projection)"));
  }
  if (absl::GetFlag(FLAGS_influences) < 1) return absl::InvalidArgumentError("--influences must be at least 1");
  if (!options.has_elastic_model()) options.set_influence_count(absl::GetFlag(FLAGS_influences));
  if (absl::GetFlag(FLAGS_resolution) < 0) return absl::InvalidArgumentError("--resolution must not be negative (0: the server's default, 64)");
  options.mutable_domain()->set_voxel_resolution(absl::GetFlag(FLAGS_resolution));
  if (const double falloff = absl::GetFlag(FLAGS_falloff); falloff != 0) {
    if (!options.has_geodesic_voxel()) return absl::InvalidArgumentError("--falloff is for --bake_method=geodesic_voxel");
    options.mutable_geodesic_voxel()->set_falloff(falloff);
  }
  if (const double alpha = absl::GetFlag(FLAGS_dionne_falloff); alpha >= 0) {
    if (!options.has_geodesic_voxel())
      return absl::InvalidArgumentError("--dionne_falloff is for --bake_method=geodesic_voxel");
    options.mutable_geodesic_voxel()->set_dionne_falloff(alpha);  // the server checks the range
  }
  if (const int passes = absl::GetFlag(FLAGS_smoothing); passes != 0) {
    if (!options.has_geodesic_voxel()) return absl::InvalidArgumentError("--smoothing is for --bake_method=geodesic_voxel");
    options.mutable_geodesic_voxel()->set_smoothing(passes);  // the server checks the range
  }
  if (const std::string tet = absl::GetFlag(FLAGS_tet); !tet.empty()) {
    ASSIGN_OR_RETURN(TetMesh tets, ReadMedit(tet));
    v1::TetMesh* t = options.mutable_domain()->mutable_tet_mesh();
    for (int i = 0; i < tets.V.size(); ++i) t->add_positions(static_cast<float>(tets.V.data()[i]));
    for (int i = 0; i < tets.T.size(); ++i) t->add_tets(static_cast<int32_t>(tets.T.data()[i]));
  }
  return options;
}

// #V by #joints from dense weights answered for `what`.
absl::StatusOr<Eigen::MatrixXd> DenseMatrix(const v1::DenseWeights& d, int nv, int nj, const char* what) {
  if (d.joint_count() != nj || d.values_size() != nv * nj)
    return absl::DataLossError(absl::StrCat("the bake's ", what, " do not match the rig"));
  Eigen::MatrixXd W(nv, nj);
  for (int i = 0; i < nv; ++i)
    for (int j = 0; j < nj; ++j) W(i, j) = d.values(i * nj + j);
  return W;
}

// Writes the finished bake's weights into --out and prints the files; the .glb carries
// `animations` (those of the --gltf file the rig came from, or stored with the --rig).
absl::Status WriteResults(Client& client, const std::string& rig_name, const v1::Bake& bake,
                          const std::vector<Animation>& animations) {
  ASSIGN_OR_RETURN(v1::GetWeightsResponse dense, client.GetWeights(bake.name(), v1::WEIGHTS_FORMAT_DENSE));
  ASSIGN_OR_RETURN(Rig rig, FetchRig(client, rig_name));
  const int nv = static_cast<int>(rig.mesh.V.rows()), nj = rig.skeleton.size();
  ASSIGN_OR_RETURN(Eigen::MatrixXd W, DenseMatrix(dense.weights().dense(), nv, nj, "weights"));
  const fs::path out_dir = absl::GetFlag(FLAGS_out);
  RETURN_IF_ERROR(MakeOutputDir(out_dir.string()));
  const std::string stem = absl::StrCat(OutputStem(rig, rig_name), "-",
                                        bake.response().report().method());
  const std::string dmat = (out_dir / (stem + ".dmat")).string(), glb = (out_dir / (stem + ".glb")).string();
  RETURN_IF_ERROR(WriteDmat(dmat, W, /*ascii=*/true));
  // Swing/twist and endpoint bakes: their extra per-joint weights beside the main ones.
  std::vector<std::string> extra_files;
  for (const auto& [suffix, extra] : {std::pair<const char*, const v1::DenseWeights*>{"swing", &dense.swing()},
                                      {"twist", &dense.twist()}, {"endpoint", &dense.endpoint()}}) {
    if (extra->values_size() == 0) continue;
    ASSIGN_OR_RETURN(Eigen::MatrixXd X, DenseMatrix(*extra, nv, nj, absl::StrCat(suffix, " weights").c_str()));
    extra_files.push_back((out_dir / absl::StrCat(stem, "-", suffix, ".dmat")).string());
    RETURN_IF_ERROR(WriteDmat(extra_files.back(), X, /*ascii=*/true));
  }
  RETURN_IF_ERROR(WriteSkinnedGltf(glb, rig.mesh, rig.skeleton,
                                   TopK(W, std::min(bake.options().influence_count(), nj)), animations,
                                   rig.mesh_parts, rig.morph_targets));
  PrintBake(bake);
  std::printf("%s\n%s\n", dmat.c_str(), glb.c_str());
  for (const std::string& f : extra_files) std::printf("%s\n", f.c_str());
  return absl::OkStatus();
}

}  // namespace

absl::Status CommandBake(const Args&) {
  ASSIGN_OR_RETURN(std::unique_ptr<Client> client, MakeClient());
  std::string rig_name = RigNameArg(absl::GetFlag(FLAGS_rig));
  std::vector<Animation> animations;  // the file's, else those stored with the rig
  if (rig_name.empty()) {
    ASSIGN_OR_RETURN(Character c, LoadCharacter());
    ASSIGN_OR_RETURN(rig_name, RegisterCharacter(*client, c));
    animations = std::move(c.animations);
  } else if (absl::GetFlag(FLAGS_wait)) {  // the results' .glb carries them
    ASSIGN_OR_RETURN(const std::vector<v1::AnimationClip> clips, client->GetAnimations(rig_name));
    ASSIGN_OR_RETURN(const Rig rig, FetchRig(*client, rig_name));
    ASSIGN_OR_RETURN(animations, ClipAnimations(clips, rig));
  }
  ASSIGN_OR_RETURN(v1::BakeOptions options, BakeOptionsFromFlags());
  // The folder the results go to, before the bake: not after minutes of it.
  if (absl::GetFlag(FLAGS_wait)) RETURN_IF_ERROR(MakeOutputDir(absl::GetFlag(FLAGS_out)));
  ASSIGN_OR_RETURN(v1::StartBakeResponse started, client->StartBake(rig_name, options));
  std::fprintf(stderr, "%s %s (%s)\n", started.created() ? "started bake" : "found bake", started.bake().name().c_str(),
               BakeStateName(started.bake().metadata().state()).c_str());
  if (!absl::GetFlag(FLAGS_wait)) {
    std::printf("%s\n", started.bake().name().c_str());
    return absl::OkStatus();
  }
  ProgressPrinter printer;
  ASSIGN_OR_RETURN(v1::Bake last,
                   client->WatchBake(started.bake().name(), [&](const v1::Bake& b) { return printer.Update(b); }));
  if (last.metadata().state() == v1::BAKE_STATE_CANCELLED)
    return absl::CancelledError(absl::StrCat("bake ", last.name(), " was cancelled"));
  if (last.has_error())
    return absl::Status(static_cast<absl::StatusCode>(last.error().code()),
                        absl::StrCat("bake ", last.name(), " failed: ", last.error().message()));
  if (!last.has_response()) return absl::UnknownError(absl::StrCat("bake ", last.name(), " ended without a result"));
  if (last.options().has_fast_model() || last.options().has_elastic_model()) {  // solve / pose with it
    PrintBake(last);
    std::printf("%s\n", last.name().c_str());
    return absl::OkStatus();
  }
  return WriteResults(*client, rig_name, last, animations);
}

}  // namespace skinning
