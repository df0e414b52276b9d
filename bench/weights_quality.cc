// How close baked weights come to a character's own (reference) weights where it matters: the
// posed mesh. For each character with reference weights and each method, LBS with the baked
// weights against LBS with the reference weights over many poses; RMS and max distance in % of
// the bounding-box diagonal. Rigid nearest-bone binding (computed here) is the floor no method
// should be below.
//
//   ./build/bench/weights_quality [--resolution=64] [--falloff=12] [--heat=4] [--heat_mode=default|paper|normals|blender] [--methods=nearest_bone,bone_heat,geodesic_voxel,bbw]
//                                 [--characters=arm,RiggedSimple,RiggedFigure,CesiumMan,SimpleSkin] [--blender=blender]
//                                 [--per_joint]  (also the error of the animation and of each joint's bends)
//
// With --blender, Blender's bone heat ("parent with automatic weights", run headless by
// bench/blender_bone_heat.py on the same mesh and a bone per joint) is a row of its own.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "core/geometry/weld.h"
#include "core/io/dmat.h"
#include "core/io/gltf.h"
#include "core/io/obj.h"
#include "core/io/tgf.h"
#include "core/rig/animation.h"
#include "core/rig/bones.h"
#include "core/rig/pose.h"
#include "core/skinning/lbs.h"
#include "core/skinning/weights.h"
#include "core/util/blas_kernels.h"
#include "core/weights/bake.h"

namespace skinning {
namespace {

std::string DataPath(const std::string& relative) { return std::string(SKINNING_DATA_DIR) + "/" + relative; }

struct Character {
  std::string name;
  Mesh mesh;
  Skeleton skeleton;
  Eigen::MatrixXd reference;  // #V by #J
  std::vector<Pose> poses;
  std::vector<int> bent;  // per pose: the joint Bends bent, or -1 (an animation frame)
  std::string poses_note;
};

// Every deforming joint bent by ±30°, ±60° and ±90° about two axes perpendicular to its bone (and
// twisted ±45° about it): the arm has no animation.
std::vector<Pose> Bends(const Skeleton& skeleton, std::vector<int>* bent) {
  std::vector<Pose> poses;
  absl::StatusOr<std::vector<JointHandle>> handles = JointHandles(skeleton);
  for (int j = 0; j < skeleton.size(); ++j) {
    Eigen::Vector3d along = Eigen::Vector3d::UnitX();
    if (handles.ok() && !(*handles)[j].segments.empty()) {
      const Segment& s = (*handles)[j].segments[0];
      if ((s.b - s.a).norm() > 0) along = (s.b - s.a).normalized();
    }
    const Eigen::Vector3d u = along.unitOrthogonal(), v = along.cross(u);
    // The bend is in bind space; the local rotation of the joint is its rest rotation composed
    // with the bend expressed in the joint's own frame.
    const Eigen::Matrix3d to_local = skeleton.joints[j].inverse_bind.linear();
    for (const Eigen::Vector3d& axis : {u, v})
      for (double deg : {-90.0, -60.0, -30.0, 30.0, 60.0, 90.0}) {
        Pose p = RestPose(skeleton);
        const Eigen::Vector3d a = (to_local * axis).normalized();
        p.local[j].rotation = p.local[j].rotation * Eigen::Quaterniond(Eigen::AngleAxisd(deg * M_PI / 180, a));
        poses.push_back(p);
        bent->push_back(j);
      }
    for (double deg : {-45.0, 45.0}) {
      Pose p = RestPose(skeleton);
      const Eigen::Vector3d a = (to_local * along).normalized();
      p.local[j].rotation = p.local[j].rotation * Eigen::Quaterniond(Eigen::AngleAxisd(deg * M_PI / 180, a));
      poses.push_back(p);
      bent->push_back(j);
    }
  }
  return poses;
}

bool LoadArm(Character* c) {
  auto mesh = ReadObj(DataPath("libigl/arm/arm.obj"));
  auto graph = ReadTgf(DataPath("libigl/arm/arm.tgf"));
  auto W = ReadDmat(DataPath("libigl/arm/arm-weights.dmat"));
  if (!mesh.ok() || !graph.ok() || !W.ok()) return false;
  c->name = "arm";
  c->mesh = *mesh;
  c->skeleton = *SkeletonFromBones(*graph);
  c->reference = *W;
  c->poses = Bends(c->skeleton, &c->bent);
  c->poses_note = std::to_string(c->poses.size()) + " bends";
  return true;
}

bool LoadGltf(const std::string& name, Character* c) {
  const std::string file = name == "RiggedSimple" || name == "RiggedFigure" || name == "CesiumMan"
                               ? DataPath("gltf/" + name + "/" + name + ".glb")
                           : name == "SimpleSkin" ? DataPath("gltf/SimpleSkin/SimpleSkin.gltf")
                                                  : "";
  if (file.empty()) return false;
  auto g = ReadGltf(file);
  if (!g.ok()) return false;
  c->name = name;
  c->mesh = g->mesh;
  c->skeleton = g->skeleton;
  c->reference = ToDense(g->weights, g->skeleton.size());
  // The animation at 30 frames per second, then the bends.
  for (const Animation& anim : g->animations) {
    const int frames = std::max(2, static_cast<int>(std::ceil((anim.end - anim.start) * 30)) + 1);
    for (int f = 0; f < frames; ++f) {
      c->poses.push_back(Pose{SampleAnimation(c->skeleton, anim, anim.start + (anim.end - anim.start) * f / (frames - 1))});
      c->bent.push_back(-1);
    }
  }
  const size_t animated = c->poses.size();
  for (Pose& p : Bends(c->skeleton, &c->bent)) c->poses.push_back(std::move(p));
  c->poses_note = std::to_string(animated) + " animation frames + " + std::to_string(c->poses.size() - animated) + " bends";
  return true;
}

// The joints the reference never weights (as the server treats them).
std::vector<int> Unweighted(const Eigen::MatrixXd& W) {
  std::vector<int> out;
  for (Eigen::Index j = 0; j < W.cols(); ++j)
    if (W.col(j).maxCoeff() <= 0) out.push_back(static_cast<int>(j));
  return out;
}

// Rigid binding: each vertex to the nearest bone of a weighted joint.
Eigen::MatrixXd NearestBone(const Character& c) {
  const std::vector<int> unweighted = Unweighted(c.reference);
  absl::StatusOr<std::vector<JointHandle>> handles = JointHandles(c.skeleton);
  Eigen::MatrixXd W = Eigen::MatrixXd::Zero(c.mesh.V.rows(), c.skeleton.size());
  for (Eigen::Index i = 0; i < c.mesh.V.rows(); ++i) {
    const Eigen::Vector3d p = c.mesh.V.row(i).transpose();
    int best = -1;
    double best_d = std::numeric_limits<double>::infinity();
    for (const JointHandle& h : *handles) {
      if (!h.deforms || std::count(unweighted.begin(), unweighted.end(), h.joint)) continue;
      for (const Segment& s : h.segments) {
        const double d = DistanceToSegment(p, s);
        if (d < best_d) best_d = d, best = h.joint;
      }
    }
    if (best >= 0) W(i, best) = 1;
  }
  return W;
}

// One Blender bone per joint: from the joint to its tail, or to the mean of its children, or
// (a leaf) on along its parent's direction for half the parent's length.
struct BlenderBone {
  Eigen::Vector3d head, tail;
};

std::vector<BlenderBone> BlenderBones(const Skeleton& skeleton, double diag) {
  const int n = skeleton.size();
  std::vector<BlenderBone> bones(n);
  std::vector<std::vector<int>> children(n);
  for (int j = 0; j < n; ++j)
    if (skeleton.joints[j].parent >= 0) children[skeleton.joints[j].parent].push_back(j);
  for (int j = 0; j < n; ++j) bones[j].head = BindPosition(skeleton, j);
  for (int j = 0; j < n; ++j) {
    const Eigen::Vector3d head = bones[j].head;
    Eigen::Vector3d tail = head;
    if (skeleton.joints[j].tail) {
      tail = *skeleton.joints[j].tail;
    } else if (!children[j].empty()) {
      tail = Eigen::Vector3d::Zero();
      for (int c : children[j]) tail += bones[c].head;
      tail /= static_cast<double>(children[j].size());
      if ((tail - head).norm() < 1e-6 * diag) tail = bones[children[j][0]].head;
    }
    if ((tail - head).norm() < 1e-6 * diag) {
      const int p = skeleton.joints[j].parent;
      const Eigen::Vector3d dir = p >= 0 ? Eigen::Vector3d(head - bones[p].head) : Eigen::Vector3d::Zero();
      tail = dir.norm() > 1e-6 * diag ? Eigen::Vector3d(head + 0.5 * dir) : Eigen::Vector3d(head + Eigen::Vector3d(0, 0.05 * diag, 0));
    }
    bones[j].tail = tail;
  }
  return bones;
}

// Blender's bone heat weights for the character (#V by #J), or an error message. Blender gets the
// welded mesh (as a rigger would "merge by distance" first; its heat solve needs the surface
// connected), and every copy of a point its weights.
absl::StatusOr<Eigen::MatrixXd> BlenderBoneHeat(const Character& original, const std::string& blender) {
  const WeldedMesh welded = Weld(original.mesh);
  Character c = original;
  c.mesh = welded.mesh;
  const double diag = (c.mesh.V.colwise().maxCoeff() - c.mesh.V.colwise().minCoeff()).norm();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("weights-quality-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string in = (dir / "in.txt").string(), out = (dir / "out.txt").string(), log = (dir / "blender.log").string();
  const std::vector<int> unweighted = Unweighted(c.reference);
  const std::vector<BlenderBone> bones = BlenderBones(c.skeleton, diag);
  {
    std::ofstream f(in);
    f.precision(17);
    f << c.mesh.V.rows() << " " << c.mesh.F.rows() << " " << c.skeleton.size() << "\n";
    for (Eigen::Index i = 0; i < c.mesh.V.rows(); ++i) f << c.mesh.V(i, 0) << " " << c.mesh.V(i, 1) << " " << c.mesh.V(i, 2) << "\n";
    for (Eigen::Index t = 0; t < c.mesh.F.rows(); ++t) f << c.mesh.F(t, 0) << " " << c.mesh.F(t, 1) << " " << c.mesh.F(t, 2) << "\n";
    for (int j = 0; j < c.skeleton.size(); ++j) {
      const bool deform = c.skeleton.joints[j].deforms && !std::count(unweighted.begin(), unweighted.end(), j);
      f << "j" << j << " " << c.skeleton.joints[j].parent << " " << bones[j].head.transpose() << " "
        << bones[j].tail.transpose() << " " << (deform ? 1 : 0) << "\n";
    }
  }
  const std::string command = blender + " --background --factory-startup --python-exit-code 1 --python " +
                              std::string(SKINNING_BENCH_DIR) + "/blender_bone_heat.py -- " + in + " " + out +
                              " > " + log + " 2>&1";
  if (std::system(command.c_str()) != 0) {
    std::ifstream l(log);
    std::string text((std::istreambuf_iterator<char>(l)), std::istreambuf_iterator<char>());
    return absl::InternalError("blender failed: " + text.substr(text.size() > 600 ? text.size() - 600 : 0));
  }
  std::ifstream f(out);
  Eigen::MatrixXd W(c.mesh.V.rows(), c.skeleton.size());
  for (Eigen::Index i = 0; i < W.rows(); ++i)
    for (Eigen::Index j = 0; j < W.cols(); ++j)
      if (!(f >> W(i, j))) return absl::DataLossError("short blender output");
  std::filesystem::remove_all(dir);
  // Rows normalized; a vertex Blender left without weight (no group) stays zero and shows in
  // the error as it would in Blender (unmoved).
  for (Eigen::Index i = 0; i < W.rows(); ++i) {
    const double s = W.row(i).sum();
    if (s > 0) W.row(i) /= s;
  }
  return Unweld(W, welded.of);
}

struct Error {
  double rms = 0, max = 0;  // % of the diagonal
  // By group of poses: [0] the animation frames, [1 + j] the bends of joint j.
  std::vector<double> group_rms, group_max;
};

Error PosedError(const Character& c, const SparseWeights& baked) {
  const double diag = (c.mesh.V.colwise().maxCoeff() - c.mesh.V.colwise().minCoeff()).norm();
  const SparseWeights reference = TopK(c.reference, std::max(1, static_cast<int>(c.reference.cols())));
  const std::vector<int> order = *TopologicalOrder(c.skeleton);
  double sum_sq = 0, worst = 0;
  long count = 0;
  const size_t groups = c.skeleton.size() + 1;
  std::vector<double> group_sq(groups, 0), group_max(groups, 0);
  std::vector<long> group_count(groups, 0);
  for (size_t k = 0; k < c.poses.size(); ++k) {
    const Pose& pose = c.poses[k];
    const std::vector<Eigen::Affine3d> T = *SkinningTransforms(c.skeleton, order, pose);
    RowMatrixX3d want, got;
    Lbs(c.mesh.V, reference, T, &want);
    Lbs(c.mesh.V, baked, T, &got);
    const Eigen::VectorXd d = (want - got).rowwise().norm();
    sum_sq += d.squaredNorm();
    worst = std::max(worst, d.maxCoeff());
    count += d.size();
    const size_t g = static_cast<size_t>(c.bent[k] + 1);
    group_sq[g] += d.squaredNorm();
    group_max[g] = std::max(group_max[g], d.maxCoeff());
    group_count[g] += d.size();
  }
  Error e{100 * std::sqrt(sum_sq / count) / diag, 100 * worst / diag, {}, {}};
  for (size_t g = 0; g < groups; ++g) {
    e.group_rms.push_back(group_count[g] ? 100 * std::sqrt(group_sq[g] / group_count[g]) / diag : -1);
    e.group_max.push_back(100 * group_max[g] / diag);
  }
  return e;
}

int Run(int argc, char** argv) {
  int resolution = 64;
  double falloff = 0;  // 0: the default
  double heat = 0;     // bone heat's c; 0: the default
  double dionne = -1;  // geodesic voxel with Dionne & de Lasa's weight function and this α; < 0: off
  int smoothing = 0;   // geodesic voxel's smoothing passes
  std::string blender;  // the Blender binary, for its bone heat row
  bool per_joint = false;  // also the error of the animation and of each joint's bends
  // Bone heat's variant: "default" (the library's), "paper" (the nearest visible bone, c = 1),
  // "normals" (default + Blender's normal-weighted distance), "blender" (normals + its 1e-4 ties).
  std::string heat_mode = "default";
  std::vector<std::string> methods = {"nearest_bone", "bone_heat", "geodesic_voxel", "bbw"};
  std::vector<std::string> names = {"arm", "RiggedSimple", "RiggedFigure", "CesiumMan", "SimpleSkin"};
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg.rfind("--resolution=", 0) == 0) resolution = std::atoi(arg.c_str() + 13);
    else if (arg.rfind("--falloff=", 0) == 0) falloff = std::atof(arg.c_str() + 10);
    else if (arg.rfind("--heat=", 0) == 0) heat = std::atof(arg.c_str() + 7);
    else if (arg.rfind("--dionne_falloff=", 0) == 0) dionne = std::atof(arg.c_str() + 17);
    else if (arg.rfind("--smoothing=", 0) == 0) smoothing = std::atoi(arg.c_str() + 12);
    else if (arg.rfind("--blender=", 0) == 0) blender = arg.substr(10);
    else if (arg == "--per_joint") per_joint = true;
    else if (arg.rfind("--heat_mode=", 0) == 0) heat_mode = arg.substr(12);
    else if (arg.rfind("--methods=", 0) == 0) methods = absl::StrSplit(arg.substr(10), ',');
    else if (arg.rfind("--characters=", 0) == 0) names = absl::StrSplit(arg.substr(13), ',');
    else {
      std::fprintf(stderr, "usage: weights_quality [--resolution=N] [--falloff=F] [--heat=C] [--dionne_falloff=A] [--smoothing=N] [--heat_mode=M] [--methods=a,b] [--characters=a,b] [--blender=BIN] [--per_joint]\n");
      return 2;
    }
  }
  std::printf("Posed distance to the reference weights (LBS both), %% of the bounding-box diagonal; voxel "
              "resolution %d, k = 4\n",
              resolution);
  std::printf("%-14s %-15s %8s %8s %9s  %s\n", "character", "method", "RMS %", "max %", "bake s", "poses");
  for (const std::string& name : names) {
    Character c;
    if (!(name == "arm" ? LoadArm(&c) : LoadGltf(name, &c))) {
      std::printf("%-14s (missing data)\n", name.c_str());
      continue;
    }
    std::vector<std::string> rows = methods;
    if (!blender.empty()) rows.push_back("blender_heat");
    for (const std::string& method : rows) {
      SparseWeights W;
      double seconds = 0;
      if (method == "nearest_bone") {
        W = TopK(NearestBone(c), 4);
      } else if (method == "blender_heat") {
        const auto t0 = std::chrono::steady_clock::now();
        absl::StatusOr<Eigen::MatrixXd> B = BlenderBoneHeat(c, blender);
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (!B.ok()) {
          std::printf("%-14s %-15s failed: %s\n", c.name.c_str(), method.c_str(), std::string(B.status().message()).c_str());
          continue;
        }
        W = TopK(*B, 4);
      } else {
        BakeOptions options;
        if (method == "bone_heat") options.method = BakeMethod::kBoneHeat;
        else if (method == "geodesic_voxel") options.method = BakeMethod::kGeodesicVoxel;
        else if (method == "bbw") options.method = BakeMethod::kBbw;
        else {
          std::fprintf(stderr, "unknown method %s\n", method.c_str());
          return 2;
        }
        options.domain.voxel.resolution = resolution;
        if (falloff > 0) options.geodesic.falloff = falloff;
        options.geodesic.dionne_falloff = dionne;
        options.geodesic.smoothing = smoothing;
        if (heat > 0) options.bone_heat.heat_coefficient = heat;
        if (heat_mode == "paper") {
          options.bone_heat.nearest_must_be_visible = false;
          if (heat <= 0) options.bone_heat.heat_coefficient = 1.0;
        }
        if (heat_mode == "blender" || heat_mode == "normals") options.bone_heat.normal_weighted_distance = true;
        if (heat_mode == "blender") options.bone_heat.tie_tolerance = 1e-4;
        options.non_deforming_joints = Unweighted(c.reference);
        const auto t0 = std::chrono::steady_clock::now();
        absl::StatusOr<BakeResult> baked = Bake(c.mesh, c.skeleton, options, {});
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (!baked.ok()) {
          std::printf("%-14s %-15s failed: %s\n", c.name.c_str(), method.c_str(),
                      std::string(baked.status().message()).c_str());
          continue;
        }
        W = baked->sparse;
      }
      const Error e = PosedError(c, W);
      std::printf("%-14s %-15s %8.3f %8.3f %9.2f  %s\n", c.name.c_str(), method.c_str(), e.rms, e.max, seconds,
                  c.poses_note.c_str());
      if (per_joint) {
        for (size_t g = 0; g < e.group_rms.size(); ++g) {
          if (e.group_rms[g] < 0) continue;
          const std::string what = g == 0 ? std::string("animation") : "bend " + c.skeleton.joints[g - 1].name;
          std::printf("%-14s %-15s %8.3f %8.3f   %s\n", "", "", e.group_rms[g], e.group_max[g], what.c_str());
        }
      }
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace skinning

int main(int argc, char** argv) {
  skinning::UseFastestBlasKernels(argv);  // may re-execute with faster OpenBLAS kernels
  return skinning::Run(argc, argv);
}
