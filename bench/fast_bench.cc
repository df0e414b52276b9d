// Fast automatic skinning transformations on CesiumMan (19 skin joints as handles, r = 34
// rotation clusters, spokes-and-rims energy): full precomputation, a switch between constraint
// sets used lately (the model's operator cache) and to a new one (KKT solution operators, also
// with 256 extra weights), one local/global iteration and a 15-iteration frame. The constraints are
// the paper's shape-aware IK: root joint fully constrained, the left hand's joint position
// dragged, every other handle free.
//
//   ./build/bench/fast_bench
#include <benchmark/benchmark.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include <Eigen/Geometry>

#include "core/io/gltf.h"
#include "core/math/svd3.h"
#include "core/rig/skeleton.h"
#include "core/skinning/weights.h"
#include "core/solve/fast_skinning.h"
#include "core/util/blas_kernels.h"

// Heap allocations, to show that a frame allocates nothing. Not inlined: GCC would otherwise pair
// an inlined malloc or free with the other operator and warn -Wmismatched-new-delete.
static std::atomic<long> g_allocations{0};
__attribute__((noinline)) void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
__attribute__((noinline)) void operator delete(void* p) noexcept { std::free(p); }
__attribute__((noinline)) void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace skinning {
namespace {

constexpr int kClusters = 34;

struct Scene {
  bool ok = false;
  std::string error;
  GltfCharacter ch;
  Eigen::MatrixXd W;
  int root = 0, hand = -1;
  Eigen::Vector3d hand_p = Eigen::Vector3d::Zero();
  FastModelPtr model;
  FastReport report;
};

const Scene& GetScene() {
  static const Scene* scene = [] {
    auto* s = new Scene;
    auto ch = ReadGltf(std::string(SKINNING_DATA_DIR) + "/gltf/CesiumMan/CesiumMan.glb");
    if (!ch.ok()) {
      s->error = std::string(ch.status().message());
      return s;
    }
    s->ch = *std::move(ch);
    const int m = s->ch.num_skin_joints;
    s->W = ToDense(s->ch.weights, m);
    for (int j = 0; j < m; ++j) {
      if (s->ch.skeleton.joints[j].name == "Skeleton_arm_joint_L__2_") s->hand = j;
    }
    if (s->hand < 0) {
      s->error = "no joint Skeleton_arm_joint_L__2_";
      return s;
    }
    s->hand_p = BindPosition(s->ch.skeleton, s->hand);
    FastOptions options;
    options.clusters = kClusters;
    auto model = PrecomputeFast(s->ch.mesh, s->W, options, &s->report);
    if (!model.ok()) {
      s->error = std::string(model.status().message());
      return s;
    }
    s->model = *model;
    s->ok = true;
    return s;
  }();
  return *scene;
}

std::vector<HandleConstraint> IkConstraints(const Scene& s, bool hand_full = false) {
  std::vector<HandleConstraint> c(s.ch.num_skin_joints);
  c[s.root].kind = HandleConstraint::Kind::kFull;
  c[s.hand] = {hand_full ? HandleConstraint::Kind::kFull : HandleConstraint::Kind::kPosition,
               s.hand_p};
  return c;
}

// Hand target moving on a small circle (frame k of 64).
std::vector<Affine34> Targets(const Scene& s, int k) {
  std::vector<Affine34> t(s.ch.num_skin_joints, Affine34::Identity());
  const double a = 2.0 * M_PI * (k % 64) / 64.0;
  t[s.hand].col(3) = s.hand_p + 0.06 * Eigen::Vector3d(std::cos(a) - 1.0, std::sin(a), 0.0);
  return t;
}

void BM_FastPrecompute(benchmark::State& state) {
  const Scene& s = GetScene();
  if (!s.ok) return state.SkipWithError(s.error.c_str());
  FastOptions options;
  options.clusters = kClusters;
  for (auto _ : state) {
    auto model = PrecomputeFast(s.ch.mesh, s.W, options);
    benchmark::DoNotOptimize(model);
  }
  state.counters["vertices"] = s.ch.mesh.V.rows();
  state.counters["handles"] = s.ch.num_skin_joints;
  state.counters["clusters"] = FastModelClusters(*s.model);
}
BENCHMARK(BM_FastPrecompute)->Unit(benchmark::kMillisecond)->Iterations(5);

// Alternates two constraint sets (hand position ↔ hand full): both were used lately, so the
// model's operator cache answers (before the cache, each switch solved the KKT system: 408 µs).
void BM_FastSwitchConstraints(benchmark::State& state) {
  const Scene& s = GetScene();
  if (!s.ok) return state.SkipWithError(s.error.c_str());
  FastSolver solver(s.model);
  const auto a = IkConstraints(s, false), b = IkConstraints(s, true);
  bool flip = false;
  for (auto _ : state) {
    benchmark::DoNotOptimize(solver.SetConstraints(flip ? a : b));
    flip = !flip;
  }
}
BENCHMARK(BM_FastSwitchConstraints)->Unit(benchmark::kMicrosecond);

// A constraint set never used before (the hand's point moves a little each time): the KKT
// solution operators are built.
void NewConstraintSets(benchmark::State& state, const FastModelPtr& model) {
  const Scene& s = GetScene();
  FastSolver solver(model);
  auto c = IkConstraints(s, false);
  int k = 0;
  for (auto _ : state) {
    c[s.hand].point = s.hand_p + Eigen::Vector3d(1e-4 * ++k, 0, 0);
    benchmark::DoNotOptimize(solver.SetConstraints(c));
  }
  state.counters["unknowns"] = 4 * FastModelTotalHandles(*model);
  state.counters["r"] = FastModelClusters(*model);
}
void BM_FastNewConstraintSet(benchmark::State& state) {
  const Scene& s = GetScene();
  if (!s.ok) return state.SkipWithError(s.error.c_str());
  NewConstraintSets(state, s.model);
}
BENCHMARK(BM_FastNewConstraintSet)->Unit(benchmark::kMicrosecond);

// The same with the most extra weights a bake may ask for (FastModelOptions.extra_weight_count
// 256; clusters 2 × (19 + 256)): 4 × 275 + c unknowns and 1,650 right-hand sides (before: 1.31 s,
// full-pivoting LU and the K̃ Γ product in double).
void BM_FastNewConstraintSetExtra256(benchmark::State& state) {
  const Scene& s = GetScene();
  if (!s.ok) return state.SkipWithError(s.error.c_str());
  static const FastModelPtr model = [&] {
    FastOptions options;
    options.extra_weights = 256;
    absl::StatusOr<FastModelPtr> m = PrecomputeFast(s.ch.mesh, s.W, options);
    return m.ok() ? *m : nullptr;
  }();
  if (model == nullptr) return state.SkipWithError("precompute with 256 extra weights");
  NewConstraintSets(state, model);
}
BENCHMARK(BM_FastNewConstraintSetExtra256)->Unit(benchmark::kMillisecond)->Iterations(3);

void SolveBench(benchmark::State& state, int iterations) {
  const Scene& s = GetScene();
  if (!s.ok) return state.SkipWithError(s.error.c_str());
  FastSolver solver(s.model);
  if (!solver.SetConstraints(IkConstraints(s)).ok()) return state.SkipWithError("constraints");
  std::vector<std::vector<Affine34>> targets;
  for (int k = 0; k < 64; ++k) targets.push_back(Targets(s, k));
  std::vector<Affine34> T;
  if (!solver.Solve(targets[0], &T, 15).ok()) return state.SkipWithError("solve");
  int k = 0;
  long allocations = 0;
  for (auto _ : state) {
    const long before = g_allocations.load(std::memory_order_relaxed);
    benchmark::DoNotOptimize(solver.Solve(targets[k], &T, iterations));
    allocations += g_allocations.load(std::memory_order_relaxed) - before;
    k = (k + 1) & 63;
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());  // frames (solves) per second
  state.counters["allocs/solve"] =
      benchmark::Counter(static_cast<double>(allocations) / state.iterations());
  state.counters["r"] = FastModelClusters(*s.model);
}
void BM_FastIteration(benchmark::State& state) { SolveBench(state, 1); }
void BM_FastFrame15(benchmark::State& state) { SolveBench(state, 15); }
BENCHMARK(BM_FastIteration)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FastFrame15)->Unit(benchmark::kMicrosecond);

// The local step's share: r nearest rotations (3x3 float SVDs) per iteration.
void BM_NearestRotations34(benchmark::State& state) {
  std::vector<Eigen::Matrix3f> S(kClusters);
  for (int k = 0; k < kClusters; ++k) {
    S[k] = Eigen::Matrix3f::Identity() * 2.0f + 0.3f * Eigen::Matrix3f::Random();
  }
  for (auto _ : state) {
    for (int k = 0; k < kClusters; ++k) {
      Eigen::Matrix3f R = NearestRotation(S[k]);
      benchmark::DoNotOptimize(R);
    }
  }
  state.SetItemsProcessed(state.iterations() * kClusters);
}
BENCHMARK(BM_NearestRotations34)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace skinning

int main(int argc, char** argv) {
  skinning::UseFastestBlasKernels(argv);  // may re-execute with faster OpenBLAS kernels
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
