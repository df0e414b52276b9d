// Energy-minimizing weights (Kavan & Sorkine 2012, Sec. 3.2) and the gold-standard elastic solve
// on a voxel grid of ~40k nodes: a two-bone cylinder (length 2, radius 0.5, bones as in
// tests/support/fixtures.h's MakeCylinderRig), elbow at x = 1. Prints one table: nodes, swing and
// twist time and iterations for the elbow, s+t per joint (the paper's Table 1: 12–24 s), and the
// gold-standard solve of a 90° bend.
//
//   ./build/bench/emw_bench [resolution=55] [threads=2] [gold_standard=1]
//
// Resolution 55 gives 40,890 nodes.
//
//   ./build/bench/emw_bench --animation=CesiumMan [--resolution=64] [--threads=2] [--frames=0]
//
// A session of the gold standard over a real character's animation (../shared/data/gltf/NAME,
// its first animation sampled at 30 frames/s; --frames > 0 takes only that many): the model the
// server's elastic_model bake builds (BuildElasticModel at the given voxel resolution), then
// every frame solved as the server's elastic deformer solves a session's frame (NextStart, then
// Solve from the lower-energy of its starts) and from the default start (cold). Prints each
// frame's largest joint step, both solves' iterations and times, and the share of the cold
// solve a session frame takes, with its median and 90th percentile overall and by step size.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <Eigen/Geometry>

#include "bench/bench_stats.h"
#include "core/geometry/mesh.h"
#include "core/geometry/volume_domain.h"
#include "core/io/gltf.h"
#include "core/rig/animation.h"
#include "core/rig/bones.h"
#include "core/rig/joint_frames.h"
#include "core/rig/pose.h"
#include "core/rig/skeleton.h"
#include "core/solve/elastic.h"
#include "core/util/blas_kernels.h"
#include "core/weights/emw.h"
#include "core/weights/geodesic_weights.h"
#include "core/weights/handles.h"
#include "core/weights/swing_twist_bake.h"

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
  // The bone transforms of the elbow bent by `degrees` about z.
  auto bend = [](double degrees) {
    const Eigen::Vector3d elbow(1, 0, 0);
    std::vector<Eigen::Affine3d> B(2, Eigen::Affine3d::Identity());
    B[1] = Eigen::Translation3d(elbow) * Eigen::AngleAxisd(degrees * M_PI / 180, Eigen::Vector3d::UnitZ()) *
           Eigen::Translation3d(-elbow);
    return B;
  };
  const std::vector<Eigen::Affine3d> T = bend(90);
  auto solve_options = [&](int history, double tolerance) {
    ElasticOptions eo;
    eo.threads = threads;
    eo.anderson_history = history;
    eo.relative_tolerance = tolerance;
    eo.max_iterations = 5000;
    return eo;
  };
  auto solve = [&](const std::vector<Eigen::Affine3d>& pose, const RowMatrixX3d* initial, int history,
                   double tolerance, ElasticReport* rep) -> absl::StatusOr<RowMatrixX3d> {
    return (*model)->Solve(pose, initial, solve_options(history, tolerance), rep);
  };
  const double tol = ElasticOptions().relative_tolerance;
  const int history = std::getenv("EMW_HISTORY") ? std::atoi(std::getenv("EMW_HISTORY")) : ElasticOptions().anderson_history;
  ElasticReport plain, accelerated, reference;
  absl::StatusOr<RowMatrixX3d> X_plain = solve(T, nullptr, 0, tol, &plain);
  absl::StatusOr<RowMatrixX3d> X = solve(T, nullptr, history, tol, &accelerated);
  absl::StatusOr<RowMatrixX3d> X_ref = solve(T, nullptr, history, 1e-11, &reference);
  if (!X_plain.ok() || !X.ok() || !X_ref.ok()) {
    std::fprintf(stderr, "gold standard solve failed\n");
    return 1;
  }
  // The first accelerated iteration whose energy is within 1e-6 of the plain solve's final one.
  const double e_plain = plain.energy.back();
  int reach = -1;
  for (size_t k = 0; k < accelerated.energy.size() && reach < 0; ++k)
    if (accelerated.energy[k] <= e_plain * (1 + 1e-6)) reach = static_cast<int>(k) + 1;
  ElasticReport to_plain;
  if (reach > 0) {
    ElasticOptions eo;
    eo.threads = threads;
    eo.max_iterations = reach;
    eo.relative_tolerance = 0;
    (void)(*model)->Solve(T, nullptr, eo, &to_plain);
  }

  const double e_star = reference.energy.back();
  auto row = [&](const char* name, const ElasticReport& r, bool bend90 = true) {
    std::printf("%-34s %7.3f s %5d it %-14s E %.9g -> %.9g", name, r.seconds, r.iterations, r.stop_reason.c_str(),
                r.initial_energy, r.energy.back());
    if (bend90) std::printf(" (%+.2e rel. to the reference)", (r.energy.back() - e_star) / e_star);
    std::printf("\n");
  };
  std::printf("%-30s %8.3f s\n", "gold model create", create_s);
  row("90deg bend, plain", plain);
  row("90deg bend, Anderson", accelerated);
  if (reach > 0) {
    row("90deg bend, Anderson to plain E", to_plain);
    std::printf("  Anderson reaches the plain solve's final energy (within 1e-6) in %d iterations, %.3f s: "
                "%.0f%% of the iterations, %.0f%% of the time\n",
                reach, to_plain.seconds, 100.0 * reach / plain.iterations, 100.0 * to_plain.seconds / plain.seconds);
  }
  std::printf("  Anderson to its own tolerance: %.0f%% of the iterations, %.0f%% of the time; final energies differ "
              "by %.2e relative\n",
              100.0 * accelerated.iterations / plain.iterations, 100.0 * accelerated.seconds / plain.seconds,
              (accelerated.energy.back() - e_plain) / e_plain);
  std::printf("%-30s %8.3f s %6d it\n", "reference (tol 1e-11)", reference.seconds, reference.iterations);
  // The next frame of a session: the bend went from 90° − step to 90° and goes on to 90° + step,
  // solved from the default start (cold), from the last solution as it is, from it carried
  // forward by the joints' change (ElasticModel::CarryForward) and from the prediction along the
  // motion the server's sessions and clips use (ElasticModel::NextStart, then Solve from the
  // lower-energy of the prediction and the carried start; its time includes both). Final
  // energies are given relative to a reference solve of the new pose (tolerance 1e-11).
  std::printf("%-20s %14s %14s %14s %14s %9s %9s   %s\n", "next frame (90deg+)", "cold s / it", "last s / it",
              "carried s / it", "predict s / it", "carried %", "predict %", "final E rel. to reference: cold carried predict");
  for (double step : {1.0, 2.0, 5.0, 10.0}) {
    const std::vector<Eigen::Affine3d> T0 = bend(90 - step), T2 = bend(90 + step);
    ElasticReport before, cold, warm, carried, predicted, ref;
    // The session's history: the frame before solved cold, then the 90° frame (X, solved above).
    absl::StatusOr<RowMatrixX3d> X0 = solve(T0, nullptr, history, tol, &before);
    if (!X0.ok()) return 1;
    const ElasticModel::FrameHistory first{T0, *X0, {}, {}, before.energy.back()};
    absl::StatusOr<ElasticModel::Prediction> at90 = (*model)->NextStart(first, T);
    if (!at90.ok()) return 1;
    const ElasticModel::FrameHistory last = ElasticModel::NextHistory(first, *at90, T, *X, accelerated.energy.back());
    // The session's frame: NextStart, then Solve from the lower-energy of its starts (both timed).
    const auto t_predict = Clock::now();
    absl::StatusOr<ElasticModel::Prediction> next = (*model)->NextStart(last, T2);
    ElasticOptions session = solve_options(history, tol);
    session.keep_lower_start = true;  // as the server's elastic deformer
    if (next.ok()) session.first_start_enough = next->enough;
    const bool predicted_ok = next.ok() && (*model)->Solve(T2, next->Starts(), session, &predicted).ok();
    const double predicted_seconds = Since(t_predict);
    if (!predicted_ok || !solve(T2, nullptr, history, tol, &cold).ok() || !solve(T2, &*X, history, tol, &warm).ok() ||
        !solve(T2, &next->carried, history, tol, &carried).ok() || !solve(T2, nullptr, history, 1e-11, &ref).ok()) {
      std::fprintf(stderr, "next-frame solve failed\n");
      return 1;
    }
    const double e_ref = ref.energy.back();
    auto rel = [&](const ElasticReport& r) { return (r.energy.back() - e_ref) / e_ref; };
    char name[64];
    predicted.seconds = predicted_seconds;  // with NextStart and the choice of start
    const char* kept = predicted.start_index < 0                                      ? " (default kept)"
                       : next->Starts()[predicted.start_index] == &next->carried ? " (carried kept)"
                                                                                     : "";
    std::snprintf(name, sizeof name, "  step %g deg%s", step, kept);
    std::printf("%-20s %7.3f / %4d %7.3f / %4d %7.3f / %4d %7.3f / %4d %8.0f%% %8.0f%%   %+.1e %+.1e %+.1e\n", name,
                cold.seconds, cold.iterations, warm.seconds, warm.iterations, carried.seconds, carried.iterations,
                predicted.seconds, predicted.iterations, 100.0 * carried.seconds / cold.seconds,
                100.0 * predicted.seconds / cold.seconds, rel(cold), rel(carried), rel(predicted));
  }
  return 0;
}

int RunAnimation(const std::string& name, int resolution, int threads, int max_frames) {
  const std::string path = std::string(SKINNING_DATA_DIR) + "/gltf/" + name + "/" + name + ".glb";
  absl::StatusOr<GltfCharacter> g = ReadGltf(path);
  if (!g.ok()) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), g.status().ToString().c_str());
    return 1;
  }
  if (g->animations.empty()) {
    std::fprintf(stderr, "%s has no animation\n", path.c_str());
    return 1;
  }
  const Skeleton& skeleton = g->skeleton;
  absl::StatusOr<std::vector<int>> order = TopologicalOrder(skeleton);
  if (!order.ok()) return 1;
  DomainOptions domain;
  domain.voxel.resolution = resolution;
  auto t = Clock::now();
  absl::StatusOr<std::shared_ptr<const ElasticModel>> model = BuildElasticModel(g->mesh, skeleton, domain);
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
    return 1;
  }
  const double build_s = Since(t);
  const Animation& anim = g->animations[0];
  int frames = std::max(2, static_cast<int>(std::ceil((anim.end - anim.start) * 30)) + 1);
  if (max_frames > 0) frames = std::min(frames, max_frames);
  std::vector<std::vector<Eigen::Affine3d>> T(frames);
  for (int f = 0; f < frames; ++f) {
    const double time = anim.start + f / 30.0;
    absl::StatusOr<std::vector<Eigen::Affine3d>> tf =
        SkinningTransforms(skeleton, *order, Pose{SampleAnimation(skeleton, anim, std::min(time, anim.end))});
    if (!tf.ok()) return 1;
    T[f] = *tf;
  }
  std::printf("%s, animation \"%s\" at 30 frames/s: %d frames; %d nodes (voxel resolution %d), model built in %.2f s, "
              "%d threads\n",
              name.c_str(), anim.name.empty() ? "(unnamed)" : anim.name.c_str(), frames, (*model)->domain().num_nodes(),
              resolution, build_s, threads);
  ElasticOptions cold_options;
  cold_options.threads = threads;
  ElasticOptions session_options = cold_options;
  session_options.keep_lower_start = true;  // as the server's elastic deformer
  // Frame 0 opens the session (a cold solve, as a session's first frame is).
  ElasticReport first;
  absl::StatusOr<RowMatrixX3d> X0 = (*model)->Solve(T[0], nullptr, cold_options, &first);
  if (!X0.ok()) return 1;
  ElasticModel::FrameHistory history{T[0], *X0, {}, {}, first.energy.back()};
  std::printf("%5s %9s %16s %16s %8s %s\n", "frame", "step deg", "cold s / it", "session s / it", "share",
              "final E, session rel. to cold");
  std::vector<double> shares, iteration_shares, steps;
  double cold_total = 0, session_total = 0;
  for (int f = 1; f < frames; ++f) {
    // The largest rotation of any joint's skinning transform from the last frame.
    double step = 0;
    for (int j = 0; j < skeleton.size(); ++j) {
      const Eigen::Matrix3d R = T[f][j].linear() * T[f - 1][j].linear().inverse();
      step = std::max(step, Eigen::AngleAxisd(Eigen::Quaterniond(R).normalized()).angle() * 180 / M_PI);
    }
    ElasticReport cold, session;
    const auto t_session = Clock::now();
    absl::StatusOr<ElasticModel::Prediction> next = (*model)->NextStart(history, T[f]);
    if (!next.ok()) return 1;
    session_options.first_start_enough = next->enough;  // as the server's elastic deformer
    absl::StatusOr<RowMatrixX3d> X = (*model)->Solve(T[f], next->Starts(), session_options, &session);
    const double session_s = Since(t_session);
    if (!X.ok() || !(*model)->Solve(T[f], nullptr, cold_options, &cold).ok()) {
      std::fprintf(stderr, "frame %d: solve failed\n", f);
      return 1;
    }
    history = ElasticModel::NextHistory(history, *next, T[f], *X, session.energy.back());
    const double share = session_s / cold.seconds;
    shares.push_back(share);
    iteration_shares.push_back(static_cast<double>(session.iterations) / std::max(1, cold.iterations));
    steps.push_back(step);
    cold_total += cold.seconds;
    session_total += session_s;
    std::printf("%5d %9.2f %8.3f / %4d %8.3f / %4d %7.0f%% %+.1e\n", f, step, cold.seconds, cold.iterations, session_s,
                session.iterations, 100 * share, (session.energy.back() - cold.energy.back()) / cold.energy.back());
  }
  std::printf("session frames: time share of the cold solve median %.0f%%, 90th percentile %.0f%%; iterations median "
              "%.0f%%; all frames %.2f s against %.2f s cold (%.0f%%)\n",
              100 * Percentile(shares, 0.5), 100 * Percentile(shares, 0.9), 100 * Percentile(iteration_shares, 0.5),
              session_total, cold_total, 100 * session_total / cold_total);
  const double edges[] = {0, 2, 5, 10, 1e9};
  for (int b = 0; b < 4; ++b) {
    std::vector<double> in;
    for (size_t i = 0; i < steps.size(); ++i)
      if (steps[i] > edges[b] && steps[i] <= edges[b + 1]) in.push_back(shares[i]);
    if (in.empty()) continue;
    std::printf("  largest joint step in (%g, %g] deg: %zu frames, share median %.0f%%, 90th percentile %.0f%%\n",
                edges[b], edges[b + 1] > 1e8 ? 180.0 : edges[b + 1], in.size(), 100 * Percentile(in, 0.5),
                100 * Percentile(in, 0.9));
  }
  return 0;
}

}  // namespace
}  // namespace skinning

int main(int argc, char** argv) {
  skinning::UseFastestBlasKernels(argv);  // may re-execute with faster OpenBLAS kernels
  if (argc > 1 && std::strncmp(argv[1], "--animation=", 12) == 0) {
    int resolution = skinning::VoxelGridOptions().resolution, threads = 2, frames = 0;
    for (int i = 2; i < argc; ++i) {
      if (std::strncmp(argv[i], "--resolution=", 13) == 0) resolution = std::atoi(argv[i] + 13);
      else if (std::strncmp(argv[i], "--threads=", 10) == 0) threads = std::atoi(argv[i] + 10);
      else if (std::strncmp(argv[i], "--frames=", 9) == 0) frames = std::atoi(argv[i] + 9);
      else {
        std::fprintf(stderr, "unknown argument %s (--resolution=R --threads=N --frames=F)\n", argv[i]);
        return 2;
      }
    }
    return skinning::RunAnimation(argv[1] + 12, resolution, threads, frames);
  }
  const int resolution = argc > 1 ? std::atoi(argv[1]) : 55;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  const bool gold = argc > 3 ? std::atoi(argv[3]) != 0 : true;
  return skinning::Run(resolution, threads, gold);
}
