#include "client/skinctl/common.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "client/skinctl/flags.h"
#include "client/skinctl/inputs.h"
#include "core/io/dmat.h"
#include "core/io/gltf.h"
#include "core/io/mesh_file.h"
#include "core/io/tgf.h"
#include "core/io/text_io.h"
#include "core/rig/pose.h"
#include "core/util/status_macros.h"
#include "server/convert/convert.h"
#include "server/convert/gltf_import.h"

namespace skinning {

namespace fs = std::filesystem;

absl::StatusOr<Character> LoadCharacter() {
  Character c;
  const std::string gltf = absl::GetFlag(FLAGS_gltf);
  const std::string obj = absl::GetFlag(FLAGS_obj);
  if (!gltf.empty() && !obj.empty()) return absl::InvalidArgumentError("give --gltf or --obj (with --tgf), not both");
  if (!gltf.empty()) {
    GltfReadOptions read_options;
    read_options.skip_static_meshes = absl::GetFlag(FLAGS_skip_static_meshes);
    read_options.scene = absl::GetFlag(FLAGS_scene);
    if (read_options.scene < -1)
      return absl::InvalidArgumentError(absl::StrFormat("--scene=%d: a scene index is 0 or more", read_options.scene));
    absl::StatusOr<GltfCharacter> g = ReadGltf(gltf, read_options);
    if (!g.ok()) return g.status();  // its message starts with the file's path
    GltfImport imported = ImportGltf(*std::move(g));
    c.rig = std::move(imported.rig);
    c.rig.name = fs::path(gltf).stem().string();
    c.animations = std::move(imported.animations);
    c.source_summary = std::move(imported.summary);
  } else if (absl::GetFlag(FLAGS_skip_static_meshes)) {
    return absl::InvalidArgumentError("--skip_static_meshes goes with --gltf");
  } else if (absl::GetFlag(FLAGS_scene) != -1) {
    return absl::InvalidArgumentError("--scene goes with --gltf");
  } else if (!obj.empty()) {
    const std::string tgf = absl::GetFlag(FLAGS_tgf);
    if (tgf.empty()) return absl::InvalidArgumentError("--obj needs --tgf (the skeleton)");
    // By extension: .obj, .off, or a MEDIT .mesh (its triangles over all its vertices, so that a
    // libigl .dmat of the tet mesh's vertices fits). Any other is refused, naming it: the OBJ
    // reader skipped every line of an .off file and the rig then had "no vertices".
    ASSIGN_OR_RETURN(Mesh mesh, ReadMeshFile(obj));
    ASSIGN_OR_RETURN(const TgfGraph graph, ReadTgf(tgf));
    absl::StatusOr<Skeleton> skeleton = SkeletonFromBones(graph);
    if (!skeleton.ok()) return absl::Status(skeleton.status().code(), absl::StrCat(tgf, ": ", skeleton.status().message()));
    c.rig.name = fs::path(obj).stem().string();
    c.rig.mesh = std::move(mesh);
    c.rig.skeleton = *std::move(skeleton);
    if (const std::string dmat = absl::GetFlag(FLAGS_dmat); !dmat.empty()) {
      ASSIGN_OR_RETURN(Eigen::MatrixXd W, ReadDmat(dmat));
      if (W.rows() != c.rig.mesh.V.rows() || W.cols() != c.rig.skeleton.size())
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s is %d by %d, expected %d vertices by %d bones", dmat, W.rows(), W.cols(),
            c.rig.mesh.V.rows(), c.rig.skeleton.size()));
      c.rig.dense_weights = std::move(W);
    }
  } else {
    return absl::InvalidArgumentError("give a character: --gltf=FILE, or --obj=FILE --tgf=FILE [--dmat=FILE]");
  }
  if (const std::string name = absl::GetFlag(FLAGS_name); !name.empty()) c.rig.name = name;
  RETURN_IF_ERROR(ValidateRig(c.rig));
  return c;
}

absl::StatusOr<std::unique_ptr<Client>> MakeClient() {
  ClientOptions options;
  options.target = absl::GetFlag(FLAGS_server);
  options.deadline = std::chrono::milliseconds(absl::GetFlag(FLAGS_deadline_ms));
  options.token = absl::GetFlag(FLAGS_token);
  if (const char* env = std::getenv("SKINNING_TOKEN"); options.token.empty() && env != nullptr)
    options.token = env;
  const std::string ca = absl::GetFlag(FLAGS_tls_ca), cert = absl::GetFlag(FLAGS_tls_cert),
                    key = absl::GetFlag(FLAGS_tls_key);
  if (!ca.empty() || !cert.empty() || !key.empty()) {
    ASSIGN_OR_RETURN(options.credentials, TlsChannelCredentials(ca, cert, key));
  }
  return std::make_unique<Client>(options);
}

std::string RigNameArg(const std::string& arg) {
  return absl::StartsWith(arg, "rig-") ? absl::StrCat("rigs/", arg) : arg;
}

absl::StatusOr<std::string> RegisterCharacter(Client& client, const Character& c) {
  // The file's animations, sampled as CreateRig samples an uploaded file's (30 frames/s, at most
  // 10,000 frames, 16 MiB: a quarter of the server's default message limit), are stored with the
  // rig. A server that holds less (RESOURCE_EXHAUSTED) gets the rig alone, with a note.
  const v1::Rig rig = RigToProto(c.rig);
  ASSIGN_OR_RETURN(const std::vector<v1::AnimationClip> clips,
                   SampleClips(c.animations, c.rig, 30, 10000, size_t{16} << 20));
  absl::StatusOr<v1::CreateRigResponse> created = client.CreateRig(rig, clips);
  if (!clips.empty() && absl::IsResourceExhausted(created.status()) &&
      absl::StrContains(created.status().message(), "animations")) {
    std::cerr << "note: the server stores no animations this large (" << created.status().message()
              << "); registering the rig without them\n";
    created = client.CreateRig(rig);
  }
  ASSIGN_OR_RETURN(const v1::CreateRigResponse r, std::move(created));
  std::cerr << (r.created() ? "registered " : "already stored ") << r.rig().name() << " ("
            << r.rig().vertex_count() << " vertices, " << r.rig().joint_count() << " joints"
            << (c.source_summary.empty() ? "" : "; from the file: " + c.source_summary) << ")\n";
  // A rig is named by its content: the same file again is the stored rig, with its first name.
  if (!r.created() && r.rig().display_name() != c.rig.name)
    std::cerr << "note: it keeps its name '" << r.rig().display_name() << "'; '" << c.rig.name
              << "' is not applied (the same content is the same rig)\n";
  return r.rig().name();
}

absl::StatusOr<Rig> FetchRig(Client& client, const std::string& name) {
  ASSIGN_OR_RETURN(const v1::Rig got, client.GetRig(name, v1::RIG_VIEW_FULL));
  return RigFromProto(got, kStoredRigLimits);
}

void PrintRig(const v1::Rig& rig) {
  std::printf("%s  %-20s %7d vertices %7d triangles %4d joints  weights: %s\n", rig.name().c_str(),
              rig.display_name().c_str(), rig.vertex_count(), rig.triangle_count(), rig.joint_count(),
              rig.influence_count() > 0 ? absl::StrCat(rig.influence_count(), " per vertex").c_str() : "none");
}

absl::Status ReadPoseFileMorphWeights(const std::string& path, v1::Pose* pose) {
  if (fs::path(path).extension() == ".dmat") return absl::OkStatus();
  ASSIGN_OR_RETURN(const std::string text, io_internal::ReadFileToString(path));
  return ParsePoseJsonMorphWeights(text, path, pose);
}

absl::StatusOr<Pose> ReadPoseFile(const std::string& path, const Skeleton& skeleton) {
  Pose pose = RestPose(skeleton);
  if (fs::path(path).extension() == ".dmat") {
    ASSIGN_OR_RETURN(const Eigen::MatrixXd M, ReadDmat(path));
    if (M.size() != 4 * skeleton.size())
      return absl::InvalidArgumentError(absl::StrFormat("%s has %d numbers, expected 4 per joint (%d)", path,
                                                        M.size(), 4 * skeleton.size()));
    // libigl stores the quaternions consecutively (x, y, z, w per joint) whatever the shape.
    const Eigen::MatrixXd flat = M.rows() == 1 || M.cols() == 1 ? M : Eigen::MatrixXd(M.transpose());
    for (int j = 0; j < skeleton.size(); ++j) {
      const double* q = flat.data() + 4 * j;
      Eigen::Quaterniond dq(q[3], q[0], q[1], q[2]);
      if (std::abs(dq.norm() - 1.0) > 1e-3)
        return absl::InvalidArgumentError(absl::StrFormat("%s: quaternion %d has norm %g", path, j, dq.norm()));
      pose.local[j].rotation = (skeleton.joints[j].rest.rotation * dq.normalized()).normalized();
    }
    return pose;
  }
  ASSIGN_OR_RETURN(const std::string text, io_internal::ReadFileToString(path));
  return ParsePoseJson(text, skeleton, path);
}

std::string BakeStateName(v1::BakeState state) {
  return absl::AsciiStrToLower(absl::StripPrefix(v1::BakeState_Name(state), "BAKE_STATE_"));
}

double Seconds(const google::protobuf::Duration& d) { return d.seconds() + 1e-9 * d.nanos(); }

void PrintBake(const v1::Bake& bake) {
  const v1::BakeMetadata& m = bake.metadata();
  std::printf("%s  %s  %s %.0f%%  %.1f s", bake.name().c_str(), BakeStateName(m.state()).c_str(), m.stage().c_str(),
              100 * m.progress_fraction(), Seconds(m.elapsed()));
  if (bake.has_error())
    std::printf("  error: %s: %s",
                absl::StatusCodeToString(static_cast<absl::StatusCode>(bake.error().code())).c_str(),
                bake.error().message().c_str());
  if (bake.has_response()) {
    const v1::BakeReport& r = bake.response().report();
    std::printf("\n  %s on %s: %s", r.method().c_str(), r.domain().c_str(), r.detail().c_str());
  }
  std::printf("\n");
}

ProgressPrinter::ProgressPrinter() : tty_(isatty(STDERR_FILENO)) {}

bool ProgressPrinter::Update(const v1::Bake& bake) {
  const v1::BakeMetadata& m = bake.metadata();
  if (tty_) {
    const int width = 30, filled = static_cast<int>(m.progress_fraction() * width + 0.5);
    std::string bar(filled, '#');
    bar.resize(width, '.');
    const std::string eta = m.has_estimated_remaining()
                                ? absl::StrFormat(", ~%.0f s left", Seconds(m.estimated_remaining()))
                                : "";
    std::fprintf(stderr, "\r[%s] %3.0f%% %-9s %-28.28s %6.1f s%s   ", bar.c_str(), 100 * m.progress_fraction(),
                 BakeStateName(m.state()).c_str(), m.stage().c_str(), Seconds(m.elapsed()), eta.c_str());
    if (bake.done()) std::fprintf(stderr, "\n");
  } else if (m.stage() != last_stage_ || m.progress_fraction() >= last_fraction_ + 0.05 || bake.done()) {
    std::fprintf(stderr, "bake %s: %s %s %.0f%% (%.1f s)\n", bake.name().c_str(), BakeStateName(m.state()).c_str(),
                 m.stage().c_str(), 100 * m.progress_fraction(), Seconds(m.elapsed()));
    last_stage_ = m.stage();
    last_fraction_ = m.progress_fraction();
  }
  return true;
}

std::string OutputStem(const Rig& rig, const std::string& rig_name) {
  std::string stem;
  for (char c : rig.name.substr(0, 64)) {
    const bool plain = absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    stem += plain ? c : '_';
  }
  stem.erase(0, stem.find_first_not_of('.'));
  if (stem.empty() || stem.find_first_not_of('_') == std::string::npos) return rig_name.substr(rig_name.find('/') + 1);
  return stem;
}

absl::Status MakeOutputDir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat("cannot create ", dir, ": ", ec.message()));
  return absl::OkStatus();
}

Mesh PosedMesh(const Mesh& rest, const google::protobuf::RepeatedField<float>& vertices,
               const google::protobuf::RepeatedField<float>& normals) {
  Mesh mesh;
  mesh.F = rest.F;
  const int nv = vertices.size() / 3;
  mesh.V.resize(nv, 3);
  for (int i = 0; i < 3 * nv; ++i) mesh.V.data()[i] = vertices.Get(i);
  if (normals.size() == 3 * nv && nv > 0) {
    mesh.N.resize(nv, 3);
    for (int i = 0; i < 3 * nv; ++i) mesh.N.data()[i] = normals.Get(i);
  }
  return mesh;
}

}  // namespace skinning
