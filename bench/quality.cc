// Quality of every pose method against the gold standard (full corotational elastic
// minimization with the bones' voxels fixed), in one table from one run:
//   volume change %   (closed meshes; the enclosed volume of the posed surface vs the rest)
//   energy / gold     (the elastic energy of the method's deformation of the voxel nodes, over the
//                      gold standard's minimum; 1 is the best possible)
//   RMS % diag        (distance of the posed mesh vertices to the gold standard's)
// Shapes: a generated cylinder and box with a two-bone skeleton (90° bend, 90° twist, both, 2×
// stretch of the first bone) and, from ../shared/data, the libigl arm and CesiumMan at strong
// poses. LBS and DQS use BBW weights; STBS uses them with joint-BBW endpoint weights (Eq. 7);
// without stretch or twist STBS is its base method (the same rows);
// swing/twist uses its energy-minimizing weights and point-BBW deformer weights. All weights are
// computed on the same voxel grid as the gold standard, so node-level deformations (for the
// energy) and mesh-level ones (for RMS and volume) come from the same functions. In the stretch
// case the gold standard's bone 0 is a stretched rod; LBS and DQS get the stretch as a joint
// scale (which also scales everything beyond the bone).
//
// Usage: ./build/bench/quality [--resolution=N] [--shapes=cylinder,box,arm,cesiumman]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/geometry/mesh.h"
#include "core/geometry/volume_domain.h"
#include "core/io/gltf.h"
#include "core/io/obj.h"
#include "core/io/tgf.h"
#include "core/math/svd3.h"
#include "core/rig/bones.h"
#include "core/rig/joint_frames.h"
#include "core/rig/pose.h"
#include "core/skinning/dqs.h"
#include "core/skinning/lbs.h"
#include "core/skinning/stbs.h"
#include "core/skinning/swing_twist.h"
#include "core/solve/elastic.h"
#include "core/util/blas_kernels.h"
#include "core/weights/bbw.h"
#include "core/weights/endpoint_weights.h"
#include "core/weights/handles.h"
#include "core/weights/swing_twist_bake.h"
#include "tests/support/fixtures.h"

namespace skinning {
namespace {

struct Scene {
  std::string name;
  Rig rig;
  bool closed = true;
  std::vector<int> order;
  std::vector<JointHandle> handles;
  std::vector<StbsBone> bones;
  std::shared_ptr<const ElasticModel> gold;
  Eigen::MatrixXd W, Wn;  // BBW: mesh, nodes
  Eigen::MatrixXd E, En;  // endpoint weights: mesh, nodes
  SwingTwistBakeResult st;
};

struct Case {
  std::string name;
  Pose pose;
  BoneStretchTwist stretch;  // STBS, swing/twist and the gold standard
  Pose lbs_pose;             // LBS and DQS (a stretch is a joint scale for them)
};

void Die(const absl::Status& s, const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", what.c_str(), std::string(s.message()).c_str());
  std::exit(1);
}

std::unique_ptr<Scene> Prepare(std::string name, Rig rig, bool closed, int resolution) {
  auto s = std::make_unique<Scene>();
  s->name = std::move(name);
  s->rig = std::move(rig);
  s->closed = closed;
  s->order = *TopologicalOrder(s->rig.skeleton);
  s->handles = *JointHandles(s->rig.skeleton);
  s->bones = StbsBones(s->handles);
  VoxelGridOptions voxel;
  voxel.resolution = resolution;
  auto gold = BuildElasticModel(s->rig.mesh, s->rig.skeleton, DomainOptions{voxel, std::nullopt});
  if (!gold.ok()) Die(gold.status(), s->name + ": elastic model");
  s->gold = *gold;
  const VolumeDomain& domain = s->gold->domain();
  // BBW pinned on the same bone nodes as the gold standard, so every method keeps the bones
  // rigid where the gold standard does (otherwise a method could undercut its energy by bending
  // the bones).
  auto bone_nodes = RasterizeRigidBones(domain, s->handles);
  if (!bone_nodes.ok()) Die(bone_nodes.status(), s->name + ": handles");
  auto Wn = BoundedBiharmonicWeights(domain, *bone_nodes);
  if (!Wn.ok()) Die(Wn.status(), s->name + ": BBW");
  s->Wn = *Wn;
  s->W = domain.to_mesh * s->Wn;
  EndpointBakeOptions endpoint;
  endpoint.domain.voxel = voxel;
  auto e = BakeEndpointWeights(s->rig.mesh, s->rig.skeleton, endpoint);
  if (!e.ok()) Die(e.status(), s->name + ": endpoint weights");
  if (e->domain.num_nodes() != domain.num_nodes()) {
    std::fprintf(stderr, "%s: the endpoint bake's grid differs from the gold standard's\n", s->name.c_str());
    std::exit(1);
  }
  s->E = e->endpoint;
  s->En = e->node_endpoint;
  SwingTwistBakeOptions options;
  options.domain.voxel = voxel;
  auto st = BakeSwingTwist(s->rig.mesh, s->rig.skeleton, options);
  if (!st.ok()) Die(st.status(), s->name + ": swing/twist bake");
  s->st = *std::move(st);
  if (s->st.domain.num_nodes() != domain.num_nodes()) {
    std::fprintf(stderr, "%s: the swing/twist bake's grid differs from the gold standard's\n", s->name.c_str());
    std::exit(1);
  }
  return s;
}

// Rotates joint j of `pose` (bind-pose locals) by `angle` about the bind-space `axis`.
void RotateJoint(const Skeleton& skeleton, int j, const Eigen::Vector3d& axis, double angle, Pose* pose) {
  const Eigen::Matrix3d Rw = NearestRotation(Eigen::Matrix3d(skeleton.joints[j].inverse_bind.inverse().linear()));
  pose->local[j].rotation = pose->local[j].rotation * Eigen::Quaterniond(Eigen::AngleAxisd(angle, Rw.transpose() * axis.normalized()));
}

Eigen::Vector3d Perpendicular(const Eigen::Vector3d& z) {
  Eigen::Vector3d a = z.cross(Eigen::Vector3d::UnitZ());
  if (a.norm() < 0.3) a = z.cross(Eigen::Vector3d::UnitX());
  return a.normalized();
}

std::vector<Case> Cases(const Scene& s, const std::vector<std::pair<std::string, int>>& joints, bool stretch) {
  const std::vector<JointFrame> frames = JointFrames(s.rig.skeleton, s.handles);
  const Pose bind{BindPoseLocals(s.rig.skeleton)};
  std::vector<Case> cases;
  for (const auto& [label, j] : joints) {
    const Eigen::Vector3d z = frames[j].axes.col(2), x = Perpendicular(z);
    Case bend{label + " bend 90", bind, {}, bind};
    RotateJoint(s.rig.skeleton, j, x, M_PI / 2, &bend.pose);
    bend.lbs_pose = bend.pose;
    cases.push_back(bend);
    Case twist{label + " twist 90", bind, {}, bind};
    RotateJoint(s.rig.skeleton, j, z, M_PI / 2, &twist.pose);
    twist.lbs_pose = twist.pose;
    cases.push_back(twist);
    if (stretch) {
      Case both{label + " bend+twist", bend.pose, {}, bind};
      RotateJoint(s.rig.skeleton, j, z, M_PI / 2, &both.pose);
      both.lbs_pose = both.pose;
      cases.push_back(both);
    }
  }
  if (stretch) {  // the first bone twice as long (generated shapes: bone 0 along x)
    Case c{"bone 0 stretch 2x", bind, {}, bind};
    c.stretch.stretch.assign(s.rig.skeleton.size(), 1.0);
    c.stretch.stretch[0] = 2.0;
    c.lbs_pose.local[0].scale = Eigen::Vector3d(2, 1, 1);
    cases.push_back(c);
  }
  return cases;
}

void Run(const Scene& s, const std::vector<Case>& cases) {
  const RowMatrixX3d& V = s.rig.mesh.V;
  const RowMatrixX3i& F = s.rig.mesh.F;
  const RowMatrixX3d& N = s.gold->domain().nodes;
  const double v0 = SignedVolume(V, F), diag = BoundingBoxDiagonal(V);
  for (const Case& c : cases) {
    auto T = StretchedSkinningTransforms(s.rig.skeleton, s.order, c.pose, s.bones, c.stretch);
    auto Tl = SkinningTransforms(s.rig.skeleton, s.order, c.lbs_pose);
    if (!T.ok() || !Tl.ok()) Die(T.ok() ? Tl.status() : T.status(), c.name);
    ElasticReport report;
    ElasticOptions elastic;
    if (!c.stretch.stretch.empty()) {
      // A stretched bone is a stretched rod: each of its nodes moves with the stretch at its
      // projection onto the bone (the descendants' transforms already carry the offset).
      elastic.pin_map = [&](int j, const Eigen::Vector3d& x) -> Eigen::Vector3d {
        const StbsBone& b = s.bones[j];
        if (!b.valid || c.stretch.stretch[j] == 1.0) return (*T)[j] * x;
        const Eigen::Vector3d d = b.b - b.a;
        const double t = std::clamp((x - b.a).dot(d) / d.squaredNorm(), 0.0, 1.0);
        return (*T)[j] * (x + t * (c.stretch.stretch[j] - 1.0) * d);
      };
    }
    auto X = s.gold->Solve(*T, nullptr, elastic, &report);
    if (!X.ok()) Die(X.status(), c.name + ": gold standard");
    const RowMatrixX3d gold = s.gold->ToMesh(*X);
    const double e_gold = s.gold->Energy(*X);
    struct Method {
      const char* name;
      std::function<void(const RowMatrixX3d&, bool nodes, RowMatrixX3d*)> run;
    };
    const std::vector<Method> methods = {
        {"LBS", [&](const RowMatrixX3d& P, bool n, RowMatrixX3d* U) { Lbs(P, n ? s.Wn : s.W, *Tl, U); }},
        {"DQS", [&](const RowMatrixX3d& P, bool n, RowMatrixX3d* U) { Dqs(P, n ? s.Wn : s.W, *Tl, U); }},
        {"STBS/LBS", [&](const RowMatrixX3d& P, bool n, RowMatrixX3d* U) {
           StbsLbs(P, n ? s.Wn : s.W, n ? s.En : s.E, s.bones, *T, c.stretch, U);
         }},
        {"STBS/DQS", [&](const RowMatrixX3d& P, bool n, RowMatrixX3d* U) {
           StbsDqs(P, n ? s.Wn : s.W, n ? s.En : s.E, s.bones, *T, c.stretch, U);
         }},
        {"swing/twist", [&](const RowMatrixX3d& P, bool n, RowMatrixX3d* U) {
           if (n) SwingTwist(P, s.st.node_deformer, s.st.node_swing, s.st.node_twist, s.st.frames, *T, U);
           else SwingTwist(P, s.st.deformer, s.st.swing, s.st.twist, s.st.frames, *T, U);
         }},
    };
    auto row = [&](const char* method, const RowMatrixX3d& U, double energy_ratio) {
      const double rms = 100.0 * std::sqrt((U - gold).rowwise().squaredNorm().mean()) / diag;
      if (s.closed)
        std::printf("%-10s %-26s %-12s %+10.2f %12.3f %12.3f\n", s.name.c_str(), c.name.c_str(), method,
                    100.0 * (SignedVolume(U, F) / v0 - 1), energy_ratio, rms);
      else
        std::printf("%-10s %-26s %-12s %10s %12.3f %12.3f\n", s.name.c_str(), c.name.c_str(), method, "-",
                    energy_ratio, rms);
    };
    for (const Method& m : methods) {
      RowMatrixX3d U, Xm;
      m.run(V, false, &U);
      m.run(N, true, &Xm);
      row(m.name, U, s.gold->Energy(Xm) / e_gold);
    }
    row("gold", gold, 1.0);
    std::printf("%-10s %-26s (gold standard: %s)\n", "", "", report.BriefReport().c_str());
  }
}

}  // namespace
}  // namespace skinning

int main(int argc, char** argv) {
  skinning::UseFastestBlasKernels(argv);  // may re-execute with faster OpenBLAS kernels
  using namespace skinning;
  int resolution = 32;
  std::string shapes = "cylinder,box,arm,cesiumman";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--resolution=", 13) == 0) resolution = std::atoi(argv[i] + 13);
    else if (std::strncmp(argv[i], "--shapes=", 9) == 0) shapes = argv[i] + 9;
    else {
      std::fprintf(stderr, "usage: quality [--resolution=N] [--shapes=cylinder,box,arm,cesiumman]\n");
      return 2;
    }
  }
  auto want = [&](const char* s) { return shapes.find(s) != std::string::npos; };
  std::printf("Pose-method quality against the gold standard (voxel resolution %d)\n", resolution);
  std::printf("%-10s %-26s %-12s %10s %12s %12s\n", "shape", "pose", "method", "volume %", "energy/gold",
              "RMS % diag");
  const std::filesystem::path data = SKINNING_DATA_DIR;
  if (want("cylinder")) {
    auto s = Prepare("cylinder", testing::MakeCylinderRig(), true, resolution);
    Run(*s, Cases(*s, {{"elbow", 1}}, true));
  }
  if (want("box")) {
    auto s = Prepare("box", testing::MakeBoxRig(), true, resolution);
    Run(*s, Cases(*s, {{"elbow", 1}}, true));
  }
  if (want("arm") && std::filesystem::exists(data / "libigl/arm/arm.obj")) {
    Rig rig;
    rig.mesh = *ReadObj((data / "libigl/arm/arm.obj").string());
    rig.skeleton = *SkeletonFromBones(*ReadTgf((data / "libigl/arm/arm.tgf").string()));
    auto s = Prepare("arm", std::move(rig), false, 2 * resolution);
    Run(*s, Cases(*s, {{"elbow", 2}}, false));
  }
  if (want("cesiumman") && std::filesystem::exists(data / "gltf/CesiumMan/CesiumMan.glb")) {
    auto g = ReadGltf((data / "gltf/CesiumMan/CesiumMan.glb").string());
    if (!g.ok()) Die(g.status(), "CesiumMan");
    Rig rig;
    rig.mesh = g->mesh;
    rig.skeleton = g->skeleton;
    const int elbow = rig.skeleton.Find("Skeleton_arm_joint_R__2_"), knee = rig.skeleton.Find("leg_joint_L_2");
    auto s = Prepare("CesiumMan", std::move(rig), false, 2 * resolution);
    Run(*s, Cases(*s, {{"elbow R", elbow}, {"knee L", knee}}, false));
  }
  return 0;
}
