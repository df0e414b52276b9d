// skinctl: register, list, inspect, delete and pose rigs on a skinning server.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/client.h"
#include "core/io/dmat.h"
#include "core/io/gltf.h"
#include "core/io/medit.h"
#include "core/io/mesh_file.h"
#include "core/io/obj.h"
#include "core/io/tgf.h"
#include "server/convert/convert.h"

ABSL_FLAG(std::string, server, "localhost:50051", "server address (gRPC target)");
ABSL_FLAG(int, deadline_ms, 60000, "deadline per call in milliseconds, retries included");
ABSL_FLAG(std::string, token, "",
          "bearer token for a server with --auth_tokens (default: $SKINNING_TOKEN)");
ABSL_FLAG(std::string, tls_ca, "",
          "connect with TLS, trusting the CA certificate(s) in this PEM file");
ABSL_FLAG(std::string, tls_cert, "",
          "TLS client certificate (PEM) for servers that require one (with --tls_key)");
ABSL_FLAG(std::string, tls_key, "", "private key (PEM) of --tls_cert");
ABSL_FLAG(std::string, gltf, "", "a glTF 2.0 character (.gltf or .glb)");
ABSL_FLAG(std::string, obj, "", "an OBJ mesh (with --tgf)");
ABSL_FLAG(std::string, tgf, "", "a libigl .tgf skeleton: one joint per bone (with --obj)");
ABSL_FLAG(std::string, dmat, "", "a libigl .dmat weight matrix, #vertices by #bones (with --obj)");
ABSL_FLAG(std::string, name, "", "a label for the registered rig (default: the file name); example add/remove: the example's name");
ABSL_FLAG(std::string, rig, "", "the rig id to pose (default: register the given files first)");
ABSL_FLAG(std::string, pose, "", "a pose file: .json (local transforms by joint name or index) or "
                                 ".dmat (one relative rotation quaternion x,y,z,w per joint)");
ABSL_FLAG(std::string, times, "", "comma-separated animation times in seconds, e.g. 0,0.25,0.5");
ABSL_FLAG(double, fps, 0, "sample the whole animation at this frame rate");
ABSL_FLAG(int, animation, 0, "which glTF animation to sample");
ABSL_FLAG(std::string, method, "lbs",
          "pose methods, comma-separated: lbs, dqs, stbs_lbs, stbs_dqs, swing_twist, elastic, psd_lbs, psd_dqs, "
          "psd_support_lbs, psd_support_dqs");
ABSL_FLAG(std::string, stretch, "", "pose (stbs_*): bone length scales, JOINT=SCALE,... (joint name or index)");
ABSL_FLAG(std::string, twist, "",
          "pose (stbs_*): twist angles in degrees at a bone's start and end, JOINT=START:END,...");
ABSL_FLAG(std::string, weights_bake, "", "bake (fast_model, endpoint): the weights bake to build on (default: the rig's own weights)");
ABSL_FLAG(std::string, endpoint_method, "joint_bbw", "bake endpoint: joint_bbw or projection");
ABSL_FLAG(std::string, out, "skinning-out", "output folder for posed meshes");
ABSL_FLAG(std::string, format, "glb,obj", "output formats: any of glb, gltf, obj");
ABSL_FLAG(std::string, bake_method, "bbw",
          "bake: bbw, bone_heat, geodesic_voxel, fast_model, swing_twist, endpoint or elastic_model");
ABSL_FLAG(int, resolution, 0, "bake: voxel cells along the longest side (0 = server default, 64)");
ABSL_FLAG(int, influences, 4, "bake: influences kept per vertex (top k)");
ABSL_FLAG(std::string, tet, "", "bake: a MEDIT .mesh tet mesh to run the volumetric methods on");
ABSL_FLAG(double, falloff, 0, "bake: geodesic falloff exponent (0 = server default, 2)");
ABSL_FLAG(bool, wait, true, "bake: wait for the bake and write its results (--nowait: print the id)");
ABSL_FLAG(std::string, bake, "", "pose: use this bake's weights");
ABSL_FLAG(std::string, constraints, "", "solve: a JSON constraints file (see the README)");
ABSL_FLAG(int, iterations, 15, "solve: local/global iterations");
ABSL_FLAG(std::string, out_file, "", "get: also write the stored rig as a skinned glTF (.glb or .gltf)");
ABSL_FLAG(std::string, mesh, "",
          "example add: the sculpted mesh (.obj or .off) with the rig's vertex count and order");

namespace skinning {
namespace {

namespace fs = std::filesystem;

constexpr char kUsage[] = R"(skinctl: talk to a skinning server.

Usage: skinctl [--server=host:port] [--token=T] [--tls_ca=CA.pem [--tls_cert=C.pem --tls_key=K.pem]]
               COMMAND [flags]

Security: --token (or $SKINNING_TOKEN) is sent as a bearer token on every call; --tls_ca turns
TLS on (trusting that CA), --tls_cert/--tls_key add a client certificate (mutual TLS).

Commands:
  register  --gltf=FILE | --obj=FILE --tgf=FILE [--dmat=FILE]  [--name=NAME]
            Registers a rig (idempotent) and prints its id.
  list      Lists the stored rigs.
  get ID [--out_file=FILE.glb]
            Prints a rig's summary; with --out_file also writes it as a skinned glTF.
  delete ID Deletes a rig.
  bake      (--rig=ID | --gltf=FILE | --obj=.. --tgf=..)
            [--bake_method=bbw|bone_heat|geodesic_voxel|fast_model|swing_twist|endpoint|elastic_model]
            [--resolution=N] [--influences=K] [--tet=FILE.mesh] [--falloff=F] [--out=DIR] [--nowait]
            [--weights_bake=BAKE_ID] [--endpoint_method=joint_bbw|projection]
            Bakes on the server with progress, then writes DIR/<rig>-<method>.dmat (dense
            #V x #joints: bone weights; swing_twist: the deformer weights d, plus -swing.dmat and
            -twist.dmat; endpoint: plus -endpoint.dmat) and DIR/<rig>-<method>.glb (skinned, top-K).
            fast_model and elastic_model bakes print their id (use them with solve / pose).
  solve     --bake=FAST_BAKE_ID --constraints=FILE.json [--iterations=15] [--out=DIR]
            [--format=glb,obj]
            Solves the free handles with fast automatic skinning transformations, prints the
            transforms as JSON and writes the posed mesh.
  bake-status BAKE_ID    Prints a bake's state.
  cancel BAKE_ID         Cancels a queued or running bake.
  pose      (--rig=ID | --gltf=FILE | --obj=.. --tgf=.. --dmat=..) [--bake=BAKE_ID]
            [--pose=FILE | --times=T1,T2,.. | --fps=F] [--animation=N]
            [--method=lbs,dqs,...] [--stretch=J=S,..] [--twist=J=A:B,..] [--out=DIR] [--format=glb,obj]
            Poses the rig through the server (one PoseClip call per method) and writes the posed
            meshes. With no pose, time or rate it poses the rest pose. stbs_lbs/stbs_dqs need an
            endpoint bake (--bake), swing_twist a swing_twist bake, elastic an elastic_model bake.
  example add --rig=ID --pose=FILE --mesh=FILE.obj|.off [--name=NAME]
            Adds a pose space deformation example: the sculpted mesh (the rig's vertices, same
            order) at the pose (the formats of pose --pose). Prints its name and the count.
  example list --rig=ID      Lists the rig's examples.
  example remove --rig=ID NAME   Removes one.
)";

// A character read from local files.
struct Character {
  Rig rig;
  std::vector<Animation> animations;
};

absl::StatusOr<Character> LoadCharacter() {
  Character c;
  const std::string gltf = absl::GetFlag(FLAGS_gltf);
  const std::string obj = absl::GetFlag(FLAGS_obj);
  if (!gltf.empty()) {
    absl::StatusOr<GltfCharacter> g = ReadGltf(gltf);
    if (!g.ok()) return absl::Status(g.status().code(), absl::StrCat(gltf, ": ", g.status().message()));
    c.rig.name = fs::path(gltf).stem().string();
    c.rig.mesh = std::move(g->mesh);
    c.rig.skeleton = std::move(g->skeleton);
    c.rig.sparse_weights = std::move(g->weights);
    c.animations = std::move(g->animations);
  } else if (!obj.empty()) {
    const std::string tgf = absl::GetFlag(FLAGS_tgf);
    if (tgf.empty()) return absl::InvalidArgumentError("--obj needs --tgf (the skeleton)");
    absl::StatusOr<Mesh> mesh = ReadObj(obj);
    if (!mesh.ok()) return mesh.status();
    absl::StatusOr<TgfGraph> graph = ReadTgf(tgf);
    if (!graph.ok()) return graph.status();
    absl::StatusOr<Skeleton> skeleton = SkeletonFromBones(*graph);
    if (!skeleton.ok()) return absl::Status(skeleton.status().code(), absl::StrCat(tgf, ": ", skeleton.status().message()));
    c.rig.name = fs::path(obj).stem().string();
    c.rig.mesh = *std::move(mesh);
    c.rig.skeleton = *std::move(skeleton);
    if (const std::string dmat = absl::GetFlag(FLAGS_dmat); !dmat.empty()) {
      absl::StatusOr<Eigen::MatrixXd> W = ReadDmat(dmat);
      if (!W.ok()) return W.status();
      if (W->rows() != c.rig.mesh.V.rows() || W->cols() != c.rig.skeleton.size())
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s is %d by %d, expected %d vertices by %d bones", dmat, W->rows(), W->cols(),
            c.rig.mesh.V.rows(), c.rig.skeleton.size()));
      c.rig.dense_weights = *std::move(W);
    }
  } else {
    return absl::InvalidArgumentError("give a character: --gltf=FILE, or --obj=FILE --tgf=FILE [--dmat=FILE]");
  }
  if (const std::string name = absl::GetFlag(FLAGS_name); !name.empty()) c.rig.name = name;
  if (auto s = ValidateRig(c.rig); !s.ok()) return s;
  return c;
}

// The client the flags describe: --server, --deadline_ms, --token (or $SKINNING_TOKEN), and TLS
// when --tls_ca or --tls_cert is given.
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
    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> tls =
        TlsChannelCredentials(ca, cert, key);
    if (!tls.ok()) return tls.status();
    options.credentials = *std::move(tls);
  }
  return std::make_unique<Client>(options);
}

absl::StatusOr<std::string> RegisterCharacter(Client& client, const Character& c) {
  absl::StatusOr<v1::RegisterRigResponse> r = client.RegisterRig(RigToProto(c.rig));
  if (!r.ok()) return r.status();
  std::cerr << (r->created() ? "registered " : "already stored ") << r->rig_id() << " ("
            << r->info().vertex_count() << " vertices, " << r->info().joint_count() << " joints)\n";
  return r->rig_id();
}

void PrintInfo(const v1::RigInfo& info) {
  std::printf("%s  %-20s %7u vertices %7u triangles %4u joints  weights: %s\n", info.rig_id().c_str(),
              info.name().c_str(), info.vertex_count(), info.triangle_count(), info.joint_count(),
              info.has_weights() ? absl::StrCat(info.influences_per_vertex(), " per vertex").c_str() : "none");
}

// Reads a pose file for `skeleton`: .json with {"joints": [{"name"|"index", "rotation": [x,y,z,w],
// "translation": [..], "scale": [..]}]} (absolute local transforms; joints not listed keep their
// rest transform; fields not given keep the rest value), or libigl's .dmat of relative rotations
// (one quaternion x,y,z,w per joint, applied after the rest rotation).
absl::StatusOr<Pose> ReadPoseFile(const std::string& path, const Skeleton& skeleton) {
  Pose pose = RestPose(skeleton);
  if (fs::path(path).extension() == ".dmat") {
    absl::StatusOr<Eigen::MatrixXd> M = ReadDmat(path);
    if (!M.ok()) return M.status();
    if (M->size() != 4 * skeleton.size())
      return absl::InvalidArgumentError(absl::StrFormat("%s has %d numbers, expected 4 per joint (%d)", path,
                                                        M->size(), 4 * skeleton.size()));
    // libigl stores the quaternions consecutively (x, y, z, w per joint) whatever the shape.
    Eigen::MatrixXd flat = M->rows() == 1 || M->cols() == 1 ? *M : Eigen::MatrixXd(M->transpose());
    for (int j = 0; j < skeleton.size(); ++j) {
      const double* q = flat.data() + 4 * j;
      Eigen::Quaterniond dq(q[3], q[0], q[1], q[2]);
      if (std::abs(dq.norm() - 1.0) > 1e-3)
        return absl::InvalidArgumentError(absl::StrFormat("%s: quaternion %d has norm %g", path, j, dq.norm()));
      pose.local[j].rotation = (skeleton.joints[j].rest.rotation * dq.normalized()).normalized();
    }
    return pose;
  }
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("joints") || !doc["joints"].is_array())
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected a JSON object with a \"joints\" array"));
  int i = 0;
  for (const auto& entry : doc["joints"]) {
    const std::string where = absl::StrFormat("%s: joints[%d]", path, i++);
    int j = -1;
    if (entry.contains("name") && entry["name"].is_string()) {
      j = skeleton.Find(entry["name"].get<std::string>());
      if (j < 0) return absl::InvalidArgumentError(absl::StrCat(where, ": no joint named '", entry["name"].get<std::string>(), "'"));
    } else if (entry.contains("index") && entry["index"].is_number_integer()) {
      j = entry["index"].get<int>();
      if (j < 0 || j >= skeleton.size())
        return absl::InvalidArgumentError(absl::StrFormat("%s: index %d is out of range (%d joints)", where, j, skeleton.size()));
    } else {
      return absl::InvalidArgumentError(absl::StrCat(where, ": needs \"name\" or \"index\""));
    }
    auto numbers = [&](const char* key, size_t n, double* out) -> absl::Status {
      if (!entry.contains(key)) return absl::OkStatus();
      const auto& a = entry[key];
      if (!a.is_array() || a.size() != n)
        return absl::InvalidArgumentError(absl::StrFormat("%s.%s must be an array of %d numbers", where, key, n));
      for (size_t k = 0; k < n; ++k) {
        if (!a[k].is_number()) return absl::InvalidArgumentError(absl::StrFormat("%s.%s[%d] is not a number", where, key, k));
        out[k] = a[k].get<double>();
      }
      return absl::OkStatus();
    };
    Transform& t = pose.local[j];
    double q[4] = {t.rotation.x(), t.rotation.y(), t.rotation.z(), t.rotation.w()};
    if (auto s = numbers("translation", 3, t.translation.data()); !s.ok()) return s;
    if (auto s = numbers("scale", 3, t.scale.data()); !s.ok()) return s;
    if (auto s = numbers("rotation", 4, q); !s.ok()) return s;
    t.rotation = Eigen::Quaterniond(q[3], q[0], q[1], q[2]);
  }
  if (auto s = ValidatePose(skeleton, pose, path.c_str()); !s.ok()) return s;
  return pose;
}

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
    const int frames = static_cast<int>(std::floor((anim.end - anim.start) * fps + 1e-9)) + 1;
    for (int f = 0; f < frames; ++f) times.push_back(anim.start + f / fps);
  }
  return times;
}

absl::Status CommandPose() {
  absl::StatusOr<std::unique_ptr<Client>> made = MakeClient();
  if (!made.ok()) return made.status();
  std::unique_ptr<Client> client = *std::move(made);
  // The rig: from local files (registered first), or by id from the server.
  std::optional<Character> local;
  std::string rig_id = absl::GetFlag(FLAGS_rig);
  if (!absl::GetFlag(FLAGS_gltf).empty() || !absl::GetFlag(FLAGS_obj).empty()) {
    absl::StatusOr<Character> c = LoadCharacter();
    if (!c.ok()) return c.status();
    local = *std::move(c);
  }
  Rig rig;
  if (rig_id.empty()) {
    if (!local) return absl::InvalidArgumentError("pose needs --rig=ID or a character (--gltf or --obj/--tgf)");
    absl::StatusOr<std::string> id = RegisterCharacter(*client, *local);
    if (!id.ok()) return id.status();
    rig_id = *id;
    rig = local->rig;
  } else {
    absl::StatusOr<v1::GetRigResponse> got = client->GetRig(rig_id, /*include_rig=*/true);
    if (!got.ok()) return got.status();
    absl::StatusOr<Rig> r = RigFromProto(got->rig(), RigLimits{1 << 30, 1 << 30, 1 << 20, 1 << 10});
    if (!r.ok()) return r.status();
    rig = *std::move(r);
    if (local && local->rig.skeleton.size() != rig.skeleton.size())
      return absl::InvalidArgumentError(absl::StrFormat("rig %s has %d joints but %s has %d", rig_id,
                                                        rig.skeleton.size(), absl::GetFlag(FLAGS_gltf),
                                                        local->rig.skeleton.size()));
  }

  // The frames.
  std::vector<std::pair<std::string, Pose>> frames;
  if (const std::string pose_file = absl::GetFlag(FLAGS_pose); !pose_file.empty()) {
    absl::StatusOr<Pose> p = ReadPoseFile(pose_file, rig.skeleton);
    if (!p.ok()) return p.status();
    frames.emplace_back(fs::path(pose_file).stem().string(), *std::move(p));
  } else if (!absl::GetFlag(FLAGS_times).empty() || absl::GetFlag(FLAGS_fps) > 0) {
    if (!local || local->animations.empty())
      return absl::InvalidArgumentError("--times/--fps need a glTF file with an animation (--gltf)");
    const int a = absl::GetFlag(FLAGS_animation);
    if (a < 0 || a >= static_cast<int>(local->animations.size()))
      return absl::InvalidArgumentError(absl::StrFormat("--animation=%d: the file has %d animations", a,
                                                        local->animations.size()));
    absl::StatusOr<std::vector<double>> times = AnimationTimes(local->animations[a]);
    if (!times.ok()) return times.status();
    for (double t : *times)
      frames.emplace_back(absl::StrFormat("t%.3f", t), Pose{SampleAnimation(rig.skeleton, local->animations[a], t)});
  } else {
    frames.emplace_back("rest", RestPose(rig.skeleton));
  }

  std::vector<std::pair<std::string, v1::Method>> methods;
  for (absl::string_view m : absl::StrSplit(absl::GetFlag(FLAGS_method), ',', absl::SkipWhitespace())) {
    v1::Method parsed;
    if (!v1::Method_Parse(absl::AsciiStrToUpper(absl::StrCat("METHOD_", m)), &parsed) ||
        parsed == v1::METHOD_UNSPECIFIED)
      return absl::InvalidArgumentError(absl::StrCat(
          "--method: unknown method '", m,
          "' (lbs, dqs, stbs_lbs, stbs_dqs, swing_twist, elastic, psd_lbs, psd_dqs, psd_support_lbs, psd_support_dqs)"));
    methods.emplace_back(std::string(m), parsed);
  }
  // Bone stretch and twist (STBS), the same for every frame.
  std::vector<float> stretch, twist;
  auto joint_index = [&](absl::string_view name, const char* flag) -> absl::StatusOr<int> {
    int j = rig.skeleton.Find(std::string(name));
    if (j < 0 && absl::SimpleAtoi(name, &j) && (j < 0 || j >= rig.skeleton.size())) j = -1;
    if (j < 0) return absl::InvalidArgumentError(absl::StrCat(flag, ": unknown joint '", name, "'"));
    return j;
  };
  for (absl::string_view item : absl::StrSplit(absl::GetFlag(FLAGS_stretch), ',', absl::SkipWhitespace())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    absl::StatusOr<int> j = joint_index(kv.first, "--stretch");
    if (!j.ok()) return j.status();
    double scale;
    if (!absl::SimpleAtod(kv.second, &scale))
      return absl::InvalidArgumentError(absl::StrCat("--stretch: '", item, "' is not JOINT=SCALE"));
    if (stretch.empty()) stretch.assign(rig.skeleton.size(), 1.0f);
    stretch[*j] = static_cast<float>(scale);
  }
  for (absl::string_view item : absl::StrSplit(absl::GetFlag(FLAGS_twist), ',', absl::SkipWhitespace())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    absl::StatusOr<int> j = joint_index(kv.first, "--twist");
    if (!j.ok()) return j.status();
    std::pair<std::string, std::string> ab = absl::StrSplit(kv.second, absl::MaxSplits(':', 1));
    double a, b;
    if (!absl::SimpleAtod(ab.first, &a) || !absl::SimpleAtod(ab.second, &b))
      return absl::InvalidArgumentError(absl::StrCat("--twist: '", item, "' is not JOINT=START:END (degrees)"));
    if (twist.empty()) twist.assign(2 * rig.skeleton.size(), 0.0f);
    twist[2 * *j] = static_cast<float>(a * M_PI / 180);
    twist[2 * *j + 1] = static_cast<float>(b * M_PI / 180);
  }
  std::vector<std::string> formats = absl::StrSplit(absl::GetFlag(FLAGS_format), ',', absl::SkipWhitespace());
  for (const std::string& f : formats)
    if (f != "glb" && f != "gltf" && f != "obj")
      return absl::InvalidArgumentError(absl::StrCat("--format: unknown format '", f, "' (glb, gltf or obj)"));

  const fs::path out_dir = absl::GetFlag(FLAGS_out);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat("cannot create ", out_dir.string(), ": ", ec.message()));
  const std::string stem = rig.name.empty() ? rig_id : rig.name;

  for (const auto& [method_name, method] : methods) {
    v1::PoseClipRequest req;
    req.set_rig_id(rig_id);
    req.set_bake_id(absl::GetFlag(FLAGS_bake));
    req.set_method(method);
    req.mutable_outputs()->set_vertices(true);
    req.mutable_outputs()->set_normals(rig.mesh.N.rows() > 0);
    for (const auto& frame : frames) {
      v1::Pose* p = req.add_frames();
      *p = PoseToProto(frame.second);
      for (float v : stretch) p->add_bone_stretch(v);
      for (float v : twist) p->add_bone_twist(v);
    }
    absl::StatusOr<v1::PoseClipResponse> clip = client->PoseClip(req);
    if (!clip.ok()) return clip.status();
    for (size_t f = 0; f < frames.size(); ++f) {
      const v1::PosedFrame& posed = clip->frames(static_cast<int>(f));
      Mesh mesh;
      mesh.F = rig.mesh.F;
      const int nv = posed.vertices_size() / 3;
      mesh.V.resize(nv, 3);
      for (int i = 0; i < 3 * nv; ++i) mesh.V.data()[i] = posed.vertices(i);
      if (posed.normals_size() == 3 * nv && nv > 0) {
        mesh.N.resize(nv, 3);
        for (int i = 0; i < 3 * nv; ++i) mesh.N.data()[i] = posed.normals(i);
      }
      for (const std::string& format : formats) {
        const fs::path path = out_dir / absl::StrCat(stem, "-", method_name, "-", frames[f].first, ".", format);
        absl::Status s = format == "obj" ? WriteObj(path.string(), mesh) : WritePosedGltf(path.string(), mesh);
        if (!s.ok()) return s;
        std::printf("%s\n", path.string().c_str());
      }
    }
  }
  return absl::OkStatus();
}

const char* StateName(v1::BakeState s) {
  switch (s) {
    case v1::BAKE_STATE_QUEUED:
      return "queued";
    case v1::BAKE_STATE_RUNNING:
      return "running";
    case v1::BAKE_STATE_DONE:
      return "done";
    case v1::BAKE_STATE_FAILED:
      return "failed";
    case v1::BAKE_STATE_CANCELLED:
      return "cancelled";
    default:
      return "?";
  }
}

void PrintBakeStatus(const v1::BakeStatus& s) {
  std::printf("%s  rig %s  %s  %s %.0f%%  %.1f s", s.bake_id().c_str(), s.rig_id().c_str(), StateName(s.state()),
              s.stage().c_str(), 100 * s.fraction(), s.elapsed_seconds());
  if (s.state() == v1::BAKE_STATE_FAILED) std::printf("  error: %s", s.error_message().c_str());
  if (s.state() == v1::BAKE_STATE_DONE)
    std::printf("\n  %s on %s: %s", s.report().method().c_str(), s.report().domain().c_str(), s.report().detail().c_str());
  std::printf("\n");
}

// A progress bar on a terminal; plain lines (one per 5% or stage change) otherwise.
class ProgressPrinter {
 public:
  ProgressPrinter() : tty_(isatty(STDERR_FILENO)) {}
  bool Update(const v1::BakeStatus& s) {
    if (tty_) {
      const int width = 30, filled = static_cast<int>(s.fraction() * width + 0.5);
      std::string bar(filled, '#');
      bar.resize(width, '.');
      std::string eta = s.remaining_seconds() >= 0 ? absl::StrFormat(", ~%.0f s left", s.remaining_seconds()) : "";
      std::fprintf(stderr, "\r[%s] %3.0f%% %-9s %-28.28s %6.1f s%s   ", bar.c_str(), 100 * s.fraction(),
                   StateName(s.state()), s.stage().c_str(), s.elapsed_seconds(), eta.c_str());
      if (s.state() >= v1::BAKE_STATE_DONE) std::fprintf(stderr, "\n");
    } else if (s.stage() != last_stage_ || s.fraction() >= last_fraction_ + 0.05 || s.state() >= v1::BAKE_STATE_DONE) {
      std::fprintf(stderr, "bake %s: %s %s %.0f%% (%.1f s)\n", s.bake_id().c_str(), StateName(s.state()),
                   s.stage().c_str(), 100 * s.fraction(), s.elapsed_seconds());
      last_stage_ = s.stage();
      last_fraction_ = s.fraction();
    }
    return true;
  }

 private:
  bool tty_;
  std::string last_stage_;
  double last_fraction_ = -1;
};

absl::Status CommandBake() {
  absl::StatusOr<std::unique_ptr<Client>> made = MakeClient();
  if (!made.ok()) return made.status();
  std::unique_ptr<Client> client = *std::move(made);
  std::string rig_id = absl::GetFlag(FLAGS_rig);
  if (rig_id.empty()) {
    absl::StatusOr<Character> c = LoadCharacter();
    if (!c.ok()) return c.status();
    absl::StatusOr<std::string> id = RegisterCharacter(*client, *c);
    if (!id.ok()) return id.status();
    rig_id = *id;
  }
  v1::BakeOptions options;
  const std::string method = absl::GetFlag(FLAGS_bake_method);
  if (method == "bbw") options.set_method(v1::BAKE_METHOD_BBW);
  else if (method == "bone_heat") options.set_method(v1::BAKE_METHOD_BONE_HEAT);
  else if (method == "geodesic_voxel" || method == "geodesic") options.set_method(v1::BAKE_METHOD_GEODESIC_VOXEL);
  else if (method == "fast_model") options.set_method(v1::BAKE_METHOD_FAST_MODEL);
  else if (method == "swing_twist") options.set_method(v1::BAKE_METHOD_SWING_TWIST);
  else if (method == "endpoint") options.set_method(v1::BAKE_METHOD_ENDPOINT);
  else if (method == "elastic_model" || method == "elastic") options.set_method(v1::BAKE_METHOD_ELASTIC_MODEL);
  else
    return absl::InvalidArgumentError(absl::StrCat("--bake_method: unknown method '", method,
                                                   "' (bbw, bone_heat, geodesic_voxel, fast_model, swing_twist, "
                                                   "endpoint, elastic_model)"));
  if (const std::string w = absl::GetFlag(FLAGS_weights_bake); !w.empty()) {
    if (options.method() == v1::BAKE_METHOD_FAST_MODEL) options.mutable_fast()->set_weights_bake_id(w);
    else if (options.method() == v1::BAKE_METHOD_ENDPOINT) options.mutable_endpoint()->set_weights_bake_id(w);
    else return absl::InvalidArgumentError("--weights_bake is for --bake_method=fast_model or endpoint");
  }
  if (options.method() == v1::BAKE_METHOD_ENDPOINT) {
    const std::string em = absl::GetFlag(FLAGS_endpoint_method);
    if (em == "projection") options.mutable_endpoint()->set_method(v1::ENDPOINT_PROJECTION);
    else if (em != "joint_bbw")
      return absl::InvalidArgumentError(absl::StrCat("--endpoint_method: '", em, "' (joint_bbw or projection)"));
  }
  if (absl::GetFlag(FLAGS_influences) < 1) return absl::InvalidArgumentError("--influences must be at least 1");
  if (options.method() != v1::BAKE_METHOD_ELASTIC_MODEL)
    options.set_influences(static_cast<uint32_t>(absl::GetFlag(FLAGS_influences)));
  if (absl::GetFlag(FLAGS_resolution) < 0) return absl::InvalidArgumentError("--resolution must be positive");
  options.set_voxel_resolution(static_cast<uint32_t>(absl::GetFlag(FLAGS_resolution)));
  options.set_geodesic_falloff(absl::GetFlag(FLAGS_falloff));
  if (const std::string tet = absl::GetFlag(FLAGS_tet); !tet.empty()) {
    absl::StatusOr<TetMesh> tets = ReadMedit(tet);
    if (!tets.ok()) return tets.status();
    v1::TetMesh* t = options.mutable_tet_mesh();
    for (int i = 0; i < tets->V.size(); ++i) t->add_positions(static_cast<float>(tets->V.data()[i]));
    for (int i = 0; i < tets->T.size(); ++i) t->add_tets(static_cast<uint32_t>(tets->T.data()[i]));
  }
  absl::StatusOr<v1::BakeStatus> started = client->StartBake(rig_id, options);
  if (!started.ok()) return started.status();
  std::fprintf(stderr, "%s %s (%s)\n", started->reused() ? "found bake" : "started bake", started->bake_id().c_str(),
               StateName(started->state()));
  if (!absl::GetFlag(FLAGS_wait)) {
    std::printf("%s\n", started->bake_id().c_str());
    return absl::OkStatus();
  }
  ProgressPrinter printer;
  absl::StatusOr<v1::BakeStatus> last =
      client->WatchBake(started->bake_id(), [&](const v1::BakeStatus& s) { return printer.Update(s); });
  if (!last.ok()) return last.status();
  if (last->state() == v1::BAKE_STATE_FAILED)
    return absl::Status(static_cast<absl::StatusCode>(last->error_code()), absl::StrCat("bake failed: ", last->error_message()));
  if (last->state() == v1::BAKE_STATE_CANCELLED) return absl::CancelledError(absl::StrCat("bake ", last->bake_id(), " was cancelled"));
  if (last->state() != v1::BAKE_STATE_DONE) return absl::UnknownError("bake ended in an unexpected state");

  if (last->options().method() == v1::BAKE_METHOD_FAST_MODEL ||
      last->options().method() == v1::BAKE_METHOD_ELASTIC_MODEL) {  // nothing to write: solve / pose with it
    PrintBakeStatus(*last);
    std::printf("%s\n", last->bake_id().c_str());
    return absl::OkStatus();
  }
  // Results: dense weights as .dmat, and a skinned glTF with the top-k weights.
  absl::StatusOr<v1::GetWeightsResponse> dense = client->GetWeights(last->bake_id(), /*dense=*/true);
  if (!dense.ok()) return dense.status();
  absl::StatusOr<v1::GetRigResponse> got = client->GetRig(rig_id, /*include_rig=*/true);
  if (!got.ok()) return got.status();
  absl::StatusOr<Rig> rig = RigFromProto(got->rig(), RigLimits{1 << 30, 1 << 30, 1 << 20, 1 << 10});
  if (!rig.ok()) return rig.status();
  const int nv = static_cast<int>(rig->mesh.V.rows()), nj = rig->skeleton.size();
  const v1::DenseWeights& d = dense->weights().dense();
  if (static_cast<int>(d.num_joints()) != nj || d.values_size() != nv * nj)
    return absl::DataLossError("the bake's weights do not match the rig");
  Eigen::MatrixXd W(nv, nj);
  for (int i = 0; i < nv; ++i)
    for (int j = 0; j < nj; ++j) W(i, j) = d.values(i * nj + j);
  const fs::path out_dir = absl::GetFlag(FLAGS_out);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat("cannot create ", out_dir.string(), ": ", ec.message()));
  const std::string stem = absl::StrCat(rig->name.empty() ? rig_id : rig->name, "-", last->report().method());
  const std::string dmat = (out_dir / (stem + ".dmat")).string(), glb = (out_dir / (stem + ".glb")).string();
  if (auto s = WriteDmat(dmat, W, /*ascii=*/true); !s.ok()) return s;
  // Swing/twist and endpoint bakes: their extra per-joint weights beside the main ones.
  std::vector<std::string> extra_files;
  for (const auto& [suffix, extra] : {std::pair<const char*, const v1::DenseWeights*>{"swing", &dense->swing()},
                                      {"twist", &dense->twist()}, {"endpoint", &dense->endpoint()}}) {
    if (extra->values_size() == 0) continue;
    if (static_cast<int>(extra->num_joints()) != nj || extra->values_size() != nv * nj)
      return absl::DataLossError(absl::StrCat("the bake's ", suffix, " weights do not match the rig"));
    Eigen::MatrixXd X(nv, nj);
    for (int i = 0; i < nv; ++i)
      for (int j = 0; j < nj; ++j) X(i, j) = extra->values(i * nj + j);
    extra_files.push_back((out_dir / absl::StrCat(stem, "-", suffix, ".dmat")).string());
    if (auto s = WriteDmat(extra_files.back(), X, /*ascii=*/true); !s.ok()) return s;
  }
  if (auto s = WriteSkinnedGltf(glb, rig->mesh, rig->skeleton, TopK(W, std::min(static_cast<int>(last->options().influences()), nj)));
      !s.ok())
    return s;
  PrintBakeStatus(*last);
  std::printf("%s\n%s\n", dmat.c_str(), glb.c_str());
  for (const std::string& f : extra_files) std::printf("%s\n", f.c_str());
  return absl::OkStatus();
}

// {"constraints": [{"joint": NAME or INDEX, "transform": [12 numbers, 3x4 row-major]} or
//                  {"joint": ..., "position": [x, y, z], "point": [x, y, z] (optional)}]}
absl::StatusOr<v1::FastSolveRequest> ReadConstraintsFile(const std::string& path, const Skeleton& skeleton) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("constraints") || !doc["constraints"].is_array())
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected a JSON object with a \"constraints\" array"));
  v1::FastSolveRequest req;
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
    c->set_handle(static_cast<uint32_t>(j));
    if (entry.contains("transform")) {
      c->set_kind(v1::HandleConstraint::FULL);
      if (auto s = numbers("transform", 12, c->mutable_target()); !s.ok()) return s;
    } else if (entry.contains("position")) {
      c->set_kind(v1::HandleConstraint::POSITION);
      if (auto s = numbers("position", 3, c->mutable_target()); !s.ok()) return s;
      if (entry.contains("point"))
        if (auto s = numbers("point", 3, c->mutable_point()); !s.ok()) return s;
    } else {
      c->set_kind(v1::HandleConstraint::FREE);
    }
  }
  return req;
}

absl::Status CommandSolve() {
  absl::StatusOr<std::unique_ptr<Client>> made = MakeClient();
  if (!made.ok()) return made.status();
  std::unique_ptr<Client> client = *std::move(made);
  const std::string bake_id = absl::GetFlag(FLAGS_bake);
  if (bake_id.empty()) return absl::InvalidArgumentError("solve needs --bake=ID (a BAKE_METHOD_FAST_MODEL bake)");
  absl::StatusOr<v1::BakeStatus> bake = client->GetBake(bake_id);
  if (!bake.ok()) return bake.status();
  absl::StatusOr<v1::GetRigResponse> got = client->GetRig(bake->rig_id(), /*include_rig=*/true);
  if (!got.ok()) return got.status();
  absl::StatusOr<Rig> rig = RigFromProto(got->rig(), RigLimits{1 << 30, 1 << 30, 1 << 20, 1 << 10});
  if (!rig.ok()) return rig.status();
  if (absl::GetFlag(FLAGS_constraints).empty()) return absl::InvalidArgumentError("solve needs --constraints=FILE.json");
  absl::StatusOr<v1::FastSolveRequest> req = ReadConstraintsFile(absl::GetFlag(FLAGS_constraints), rig->skeleton);
  if (!req.ok()) return req.status();
  req->set_bake_id(bake_id);
  if (absl::GetFlag(FLAGS_iterations) < 1) return absl::InvalidArgumentError("--iterations must be at least 1");
  req->set_iterations(static_cast<uint32_t>(absl::GetFlag(FLAGS_iterations)));
  req->mutable_outputs()->set_vertices(true);
  absl::StatusOr<v1::FastSolveResponse> solved = client->FastSolve(*req);
  if (!solved.ok()) return solved.status();
  nlohmann::json out;
  out["energy"] = solved->energy();
  out["transforms"] = nlohmann::json::array();
  for (int h = 0; h < solved->transforms_size() / 12; ++h) {
    nlohmann::json t;
    if (h < solved->handle_joints_size()) {
      const int j = static_cast<int>(solved->handle_joints(h));
      t["joint"] = j;
      t["name"] = rig->skeleton.joints[j].name;
    } else {
      t["extra_handle"] = h - solved->handle_joints_size();
    }
    std::vector<float> m(solved->transforms().begin() + 12 * h, solved->transforms().begin() + 12 * h + 12);
    t["transform"] = m;
    out["transforms"].push_back(t);
  }
  std::printf("%s\n", out.dump(2).c_str());
  const fs::path out_dir = absl::GetFlag(FLAGS_out);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  Mesh mesh;
  mesh.F = rig->mesh.F;
  const int nv = solved->vertices_size() / 3;
  mesh.V.resize(nv, 3);
  for (int i = 0; i < 3 * nv; ++i) mesh.V.data()[i] = solved->vertices(i);
  for (absl::string_view format : absl::StrSplit(absl::GetFlag(FLAGS_format), ',', absl::SkipWhitespace())) {
    const fs::path path = out_dir / absl::StrCat(rig->name.empty() ? bake->rig_id() : rig->name, "-fast.", format);
    absl::Status s = format == "obj" ? WriteObj(path.string(), mesh) : WritePosedGltf(path.string(), mesh);
    if (!s.ok()) return s;
    std::fprintf(stderr, "wrote %s\n", path.string().c_str());
  }
  return absl::OkStatus();
}

// skinctl example add|list|remove: pose space deformation examples of a stored rig.
absl::Status CommandExample(const std::vector<char*>& args) {
  if (args.size() < 3) return absl::InvalidArgumentError("example needs a subcommand: add, list or remove");
  const std::string sub = args[2];
  const std::string rig_id = absl::GetFlag(FLAGS_rig);
  if (rig_id.empty()) return absl::InvalidArgumentError(absl::StrCat("example ", sub, " needs --rig=ID"));
  absl::StatusOr<std::unique_ptr<Client>> made = MakeClient();
  if (!made.ok()) return made.status();
  std::unique_ptr<Client> client = *std::move(made);
  if (sub == "list") {
    absl::StatusOr<std::vector<v1::Example>> examples = client->ListExamples(rig_id);
    if (!examples.ok()) return examples.status();
    for (const v1::Example& e : *examples) std::printf("%s\n", e.name().c_str());
    return absl::OkStatus();
  }
  if (sub == "remove") {
    std::string name = args.size() >= 4 ? args[3] : absl::GetFlag(FLAGS_name);
    if (name.empty()) return absl::InvalidArgumentError("example remove needs the example's name");
    absl::StatusOr<v1::RemoveExampleResponse> removed = client->RemoveExample(rig_id, name);
    if (!removed.ok()) return removed.status();
    std::printf("removed %s (%u examples left)\n", name.c_str(), removed->example_count());
    return absl::OkStatus();
  }
  if (sub != "add") return absl::InvalidArgumentError(absl::StrCat("example: unknown subcommand '", sub, "' (add, list or remove)"));
  const std::string pose_file = absl::GetFlag(FLAGS_pose), mesh_file = absl::GetFlag(FLAGS_mesh);
  if (pose_file.empty() || mesh_file.empty())
    return absl::InvalidArgumentError("example add needs --pose=FILE (.json or .dmat) and --mesh=FILE (.obj or .off)");
  absl::StatusOr<v1::GetRigResponse> got = client->GetRig(rig_id, /*include_rig=*/true);
  if (!got.ok()) return got.status();
  absl::StatusOr<Rig> rig = RigFromProto(got->rig(), RigLimits{1 << 30, 1 << 30, 1 << 20, 1 << 10});
  if (!rig.ok()) return rig.status();
  absl::StatusOr<Pose> pose = ReadPoseFile(pose_file, rig->skeleton);
  if (!pose.ok()) return pose.status();
  absl::StatusOr<Mesh> mesh = ReadMeshFile(mesh_file);
  if (!mesh.ok()) return mesh.status();
  if (mesh->V.rows() != rig->mesh.V.rows())
    return absl::InvalidArgumentError(absl::StrFormat("%s has %d vertices, rig %s has %d (same vertices, same order)",
                                                      mesh_file, mesh->V.rows(), rig_id, rig->mesh.V.rows()));
  v1::AddExampleRequest req;
  req.set_rig_id(rig_id);
  v1::Example* e = req.mutable_example();
  e->set_name(absl::GetFlag(FLAGS_name));
  *e->mutable_pose() = PoseToProto(*pose);
  e->mutable_positions()->Reserve(static_cast<int>(mesh->V.size()));
  for (int i = 0; i < mesh->V.rows(); ++i)
    for (int a = 0; a < 3; ++a) e->add_positions(static_cast<float>(mesh->V(i, a)));
  absl::StatusOr<v1::AddExampleResponse> added = client->AddExample(req);
  if (!added.ok()) return added.status();
  std::printf("%s (%u examples)%s\n", added->name().c_str(), added->example_count(),
              added->created() ? "" : ", already stored as given: nothing changed");
  return absl::OkStatus();
}

absl::Status Run(const std::vector<char*>& args) {
  if (args.size() < 2) {
    std::cerr << kUsage;
    return absl::InvalidArgumentError("no command given");
  }
  const std::string command = args[1];
  if (command == "register") {
    absl::StatusOr<Character> c = LoadCharacter();
    if (!c.ok()) return c.status();
    absl::StatusOr<std::unique_ptr<Client>> made = MakeClient();
    if (!made.ok()) return made.status();
    std::unique_ptr<Client> client = *std::move(made);
    absl::StatusOr<std::string> id = RegisterCharacter(*client, *c);
    if (!id.ok()) return id.status();
    std::printf("%s\n", id->c_str());
    return absl::OkStatus();
  }
  if (command == "list") {
    absl::StatusOr<std::unique_ptr<Client>> client = MakeClient();
    if (!client.ok()) return client.status();
    absl::StatusOr<std::vector<v1::RigInfo>> rigs = (*client)->ListRigs();
    if (!rigs.ok()) return rigs.status();
    for (const auto& info : *rigs) PrintInfo(info);
    return absl::OkStatus();
  }
  if (command == "get" || command == "delete") {
    if (args.size() < 3) return absl::InvalidArgumentError(absl::StrCat(command, " needs a rig id"));
    absl::StatusOr<std::unique_ptr<Client>> made = MakeClient();
    if (!made.ok()) return made.status();
    std::unique_ptr<Client> client = *std::move(made);
    if (command == "delete") {
      if (auto s = client->DeleteRig(args[2]); !s.ok()) return s;
      std::printf("deleted %s\n", args[2]);
      return absl::OkStatus();
    }
    const std::string out = absl::GetFlag(FLAGS_out_file);
    absl::StatusOr<v1::GetRigResponse> got = client->GetRig(args[2], /*include_rig=*/!out.empty());
    if (!got.ok()) return got.status();
    PrintInfo(got->info());
    if (out.empty()) return absl::OkStatus();
    // Export the stored rig as a skinned glTF (sparse weights, k = 4 unless the rig has more).
    absl::StatusOr<Rig> rig = RigFromProto(got->rig(), RigLimits{1 << 30, 1 << 30, 1 << 20, 1 << 10});
    if (!rig.ok()) return rig.status();
    if (!rig->has_weights()) return absl::FailedPreconditionError(absl::StrCat("rig ", args[2], " has no weights to export"));
    const SparseWeights W = rig->sparse_weights ? *rig->sparse_weights : TopK(*rig->dense_weights, 4);
    if (auto s = WriteSkinnedGltf(out, rig->mesh, rig->skeleton, W); !s.ok()) return s;
    std::printf("%s\n", out.c_str());
    return absl::OkStatus();
  }
  if (command == "pose") return CommandPose();
  if (command == "example") return CommandExample(args);
  if (command == "bake") return CommandBake();
  if (command == "solve") return CommandSolve();
  if (command == "bake-status" || command == "cancel") {
    if (args.size() < 3) return absl::InvalidArgumentError(absl::StrCat(command, " needs a bake id"));
    absl::StatusOr<std::unique_ptr<Client>> made = MakeClient();
    if (!made.ok()) return made.status();
    std::unique_ptr<Client> client = *std::move(made);
    absl::StatusOr<v1::BakeStatus> s = command == "cancel" ? client->CancelBake(args[2]) : client->GetBake(args[2]);
    if (!s.ok()) return s.status();
    PrintBakeStatus(*s);
    return absl::OkStatus();
  }
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
