// Energy-minimizing weights (Kavan & Sorkine 2012, Sec. 3.2) and the gold-standard elastic solve
// on a voxel grid of ~40k nodes: a two-bone cylinder (length 2, radius 0.5, bones as in
// tests/support/fixtures.h's MakeCylinderRig), elbow at x = 1. Prints one table: nodes, swing and
// twist time and iterations for the elbow, s+t per joint (the paper's Table 1: 12–24 s), and the
// gold-standard solve of a 90° bend.
//
//   ./build/bench/emw_bench [resolution=55] [threads=2] [gold_standard=1]
//
// Resolution 55 gives 40,890 nodes.
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <Eigen/Geometry>

#include "core/geometry/mesh.h"
#include "core/geometry/volume_domain.h"
#include "core/rig/bones.h"
#include "core/rig/joint_frames.h"
#include "core/rig/skeleton.h"
#include "core/solve/elastic.h"
#include "core/weights/emw.h"
#include "core/weights/geodesic_weights.h"
#include "core/weights/handles.h"

namespace skinning {
namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A closed cylinder along +x (copy of the test fixture's construction).
Mesh Cylinder(int rings, int segments, double length, double radius) {
  Mesh mesh;
  const int nv = rings * segments + 2;
  mesh.V.resize(nv, 3);
  for (int r = 0; r < rings; ++r) {
    const double x = length * r / (rings - 1);
    for (int s = 0; s < segments; ++s) {
      const double a = 2 * M_PI * s / segments;
      mesh.V.row(r * segments + s) << x, radius * std::cos(a), radius * std::sin(a);
    }
  }
  const int c0 = rings * segments, c1 = c0 + 1;
  mesh.V.row(c0) << 0, 0, 0;
  mesh.V.row(c1) << length, 0, 0;
  std::vector<Eigen::Vector3i> faces;
  for (int r = 0; r + 1 < rings; ++r)
    for (int s = 0; s < segments; ++s) {
      const int a = r * segments + s, b = r * segments + (s + 1) % segments;
      faces.emplace_back(a, b, b + segments);
      faces.emplace_back(a, b + segments, a + segments);
    }
  for (int s = 0; s < segments; ++s) {
    const int a = s, b = (s + 1) % segments, off = (rings - 1) * segments;
    faces.emplace_back(c0, b, a);
    faces.emplace_back(c1, off + a, off + b);
  }
  mesh.F.resize(static_cast<int>(faces.size()), 3);
  for (int f = 0; f < static_cast<int>(faces.size()); ++f) mesh.F.row(f) = faces[f].transpose();
  return mesh;
}

Skeleton TwoBones(double length) {
  Skeleton sk;
  const double mid = length / 2;
  sk.joints.resize(2);
  sk.joints[0].name = "root";
  sk.joints[0].tail = Eigen::Vector3d(mid, 0, 0);
  sk.joints[1].name = "elbow";
  sk.joints[1].parent = 0;
  sk.joints[1].rest.translation = Eigen::Vector3d(mid, 0, 0);
  sk.joints[1].inverse_bind.translation() = Eigen::Vector3d(-mid, 0, 0);
  sk.joints[1].tail = Eigen::Vector3d(0.95 * length, 0, 0);
  return sk;
}

int Run(int resolution, int threads, bool gold_standard) {
  const Mesh mesh = Cylinder(81, 48, 2.0, 0.5);
  const Skeleton skeleton = TwoBones(2.0);
  auto t = Clock::now();
  VoxelGridOptions vo;
  vo.resolution = resolution;
  absl::StatusOr<VolumeDomain> domain = BuildVoxelDomain(mesh, vo);
  if (!domain.ok()) {
    std::fprintf(stderr, "%s\n", domain.status().ToString().c_str());
    return 1;
  }
  const std::vector<JointHandle> handles = *JointHandles(skeleton);
  const std::vector<std::vector<int>> bones = *RasterizeRigidBones(*domain, handles);
  const std::vector<JointFrame> frames = JointFrames(skeleton, handles);
  const double voxel_s = Since(t);
  t = Clock::now();
  const ElasticEnergy energy = *BuildElasticEnergy(*domain);
  const double energy_s = Since(t);

  EmwOptions options;
  options.threads = threads;
  EmwReport swing, twist;
  const std::clock_t cpu0 = std::clock();
  const auto wall0 = Clock::now();
  absl::StatusOr<EmwSwingTwist> st =
      EnergyMinimizingSwingTwistWeights(energy, frames[1], bones[1], bones[0], options, &swing, &twist);
  const double emw_wall = Since(wall0);
  const double emw_cpu = static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC;
  if (!st.ok()) {
    std::fprintf(stderr, "EMW failed\n");
    return 1;
  }

  std::printf("two-bone cylinder (length 2, radius 0.5), voxel resolution %d, %d threads\n", resolution, threads);
  std::printf("nodes %d, cells %d; voxelize+rasterize %.3f s, elastic energy %.3f s\n", domain->num_nodes(),
              static_cast<int>(domain->elements.rows()), voxel_s, energy_s);
  std::printf("%-22s %9s %11s %6s %-10s %s\n", "stage", "seconds", "factorize", "iters", "stop", "weights / energy");
  std::printf("%-22s %9.3f %11.3f %6d %-10s [%.4f, %.4f]  E %.5g -> %.5g\n", "EMW swing (4 samples)", swing.seconds,
              swing.factorize_seconds, swing.iterations, swing.stop_reason.c_str(), swing.min_weight,
              swing.max_weight, swing.initial_energy, swing.energy.back());
  std::printf("%-22s %9.3f %11.3f %6d %-10s [%.4f, %.4f]  E %.5g -> %.5g\n", "EMW twist (2 samples)", twist.seconds,
              twist.factorize_seconds, twist.iterations, twist.stop_reason.c_str(), twist.min_weight,
              twist.max_weight, twist.initial_energy, twist.energy.back());
  std::printf("%-22s %9.3f %11.3f\n", "  of which analyze", swing.analyze_seconds + twist.analyze_seconds,
              swing.factorize_seconds + twist.factorize_seconds);
  std::printf("%-22s %9.3f   wall (CPU %.3f s over all threads; goal <= 2 s; paper Table 1: 12-24 s)\n",
              "EMW s+t per joint", emw_wall, emw_cpu);
  std::fflush(stdout);
  if (!gold_standard) return 0;
  t = Clock::now();
  absl::StatusOr<std::shared_ptr<const ElasticModel>> model =
      ElasticModel::Create(*domain, bones, *GeodesicVoxelWeights(*domain, bones));
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
    return 1;
  }
  const double create_s = Since(t);
  std::vector<Eigen::Affine3d> T(2, Eigen::Affine3d::Identity());
  const Eigen::Vector3d elbow(1, 0, 0);
  T[1] = Eigen::Translation3d(elbow) * Eigen::AngleAxisd(M_PI / 2, Eigen::Vector3d::UnitZ()) *
         Eigen::Translation3d(-elbow);
  ElasticOptions eo;
  eo.threads = threads;
  ElasticReport gold;
  absl::StatusOr<RowMatrixX3d> X = (*model)->Solve(T, nullptr, eo, &gold);
  if (!X.ok()) {
    std::fprintf(stderr, "%s\n", X.status().ToString().c_str());
    return 1;
  }

  std::printf("%-22s %9.3f %11s %6s\n", "gold model create", create_s, "", "");
  std::printf("%-22s %9.3f %11s %6d %-10s E %.5g -> %.5g\n", "gold solve 90deg bend", gold.seconds, "",
              gold.iterations, gold.stop_reason.c_str(), gold.initial_energy, gold.energy.back());
  return 0;
}

}  // namespace
}  // namespace skinning

int main(int argc, char** argv) {
  const int resolution = argc > 1 ? std::atoi(argv[1]) : 55;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  const bool gold = argc > 3 ? std::atoi(argv[3]) != 0 : true;
  return skinning::Run(resolution, threads, gold);
}
