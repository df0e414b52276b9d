// Per-frame skinning throughput: LBS and DQS, float32 fast paths (k = 4 and k = 8 influences)
// and the double reference path, one thread, on a generated 320 x 320 grid (102,400 vertices)
// with 20 joints and random top-k normalized weights. items/s is vertices/s; "influences/s" is
// vertices/s times k (the same figure at k = 4 and 8 means the cost is linear in k); and LBS and
// DQS on two real characters (BM_CharacterFloat).
//
//   ./build/bench/skinning_bench --benchmark_min_time=0.5
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "core/io/dmat.h"
#include "core/io/gltf.h"
#include "core/io/obj.h"
#include "core/skinning/dqs.h"
#include "core/skinning/lbs.h"
#include "core/skinning/weights.h"

namespace skinning {
namespace {

constexpr int kGrid = 320;
constexpr int kJoints = 20;
constexpr int kInfluences = 4;

struct Rig {
  int n = 0;
  RowMatrixX3d V, N;                     // #V by 3 positions and unit normals (double)
  std::vector<float> Vf, Nf;             // n*3 float copies
  SparseWeights W;                       // #V by 4
  SparseWeights W8;                      // #V by 8
  std::vector<Eigen::Affine3d> rigid;    // #J random rigid transforms
  std::vector<Eigen::Affine3d> stretch;  // as rigid, with non-uniform scale on every 4th joint
};

// A gently waved grid over [0, 1]² with per-vertex normals of the height field.
const Rig& GetRig() {
  static const Rig* rig = [] {
    auto* r = new Rig;
    r->n = kGrid * kGrid;
    r->V.resize(r->n, 3);
    r->N.resize(r->n, 3);
    for (int a = 0; a < kGrid; ++a) {
      for (int b = 0; b < kGrid; ++b) {
        const int i = a * kGrid + b;
        const double x = a / (kGrid - 1.0), y = b / (kGrid - 1.0);
        const double z = 0.05 * std::sin(6 * x) * std::cos(5 * y);
        r->V.row(i) << x, y, z;
        const Eigen::Vector3d g(-0.3 * std::cos(6 * x) * std::cos(5 * y),
                                0.25 * std::sin(6 * x) * std::sin(5 * y), 1.0);
        r->N.row(i) = g.normalized().transpose();
      }
    }
    r->Vf.assign(r->V.data(), r->V.data() + 3 * r->n);
    r->Nf.assign(r->N.data(), r->N.data() + 3 * r->n);

    std::mt19937 gen(7);
    std::uniform_real_distribution<double> u01(0.0, 1.0);
    Eigen::MatrixXd D(r->n, kJoints);
    for (int i = 0; i < r->n; ++i)
      for (int j = 0; j < kJoints; ++j) D(i, j) = u01(gen);
    r->W = TopK(D, kInfluences);
    r->W8 = TopK(D, 8);

    for (int j = 0; j < kJoints; ++j) {
      const Eigen::Vector3d axis =
          Eigen::Vector3d(u01(gen) - 0.5, u01(gen) - 0.5, u01(gen) - 0.5).normalized();
      Eigen::Affine3d T = Eigen::Affine3d::Identity();
      T.translate(Eigen::Vector3d(u01(gen), u01(gen), u01(gen)));
      T.rotate(Eigen::AngleAxisd(3.0 * u01(gen), axis));
      r->rigid.push_back(T);
      if (j % 4 == 0) T.scale(Eigen::Vector3d(1.0, 1.3, 0.8));
      r->stretch.push_back(T);
    }
    return r;
  }();
  return *rig;
}

void BM_LbsFloat(benchmark::State& state) {
  const Rig& r = GetRig();
  const bool normals = state.range(0) != 0;
  const int k = static_cast<int>(state.range(1));
  const SparseWeights& W = k == 8 ? r.W8 : r.W;
  const std::vector<float> T34 = ToRowMajor34(r.rigid);
  std::vector<float> U(3 * r.n), NU(3 * r.n);
  for (auto _ : state) {
    LbsFloat(r.Vf.data(), r.n, W.joints.data(), W.weights.data(), k, T34.data(),
             U.data(), normals ? r.Nf.data() : nullptr, normals ? NU.data() : nullptr);
    benchmark::DoNotOptimize(U.data());
    benchmark::DoNotOptimize(NU.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * r.n);
  state.counters["influences/s"] = benchmark::Counter(static_cast<double>(state.iterations()) * r.n * k,
                                                      benchmark::Counter::kIsRate);
}
BENCHMARK(BM_LbsFloat)->ArgNames({"normals", "k"})->ArgsProduct({{0, 1}, {4, 8}})->Unit(benchmark::kMicrosecond);

// Includes PrepareDqsFloat (20 polar decompositions), as a frame would.
void DqsFloatBench(benchmark::State& state, const std::vector<Eigen::Affine3d>& T) {
  const Rig& r = GetRig();
  const bool normals = state.range(0) != 0;
  const int k = static_cast<int>(state.range(1));
  const SparseWeights& W = k == 8 ? r.W8 : r.W;
  std::vector<float> U(3 * r.n), NU(3 * r.n);
  for (auto _ : state) {
    const DqsTransformsFloat prepared = PrepareDqsFloat(T);
    DqsFloat(r.Vf.data(), r.n, W.joints.data(), W.weights.data(), k, prepared,
             U.data(), normals ? r.Nf.data() : nullptr, normals ? NU.data() : nullptr);
    benchmark::DoNotOptimize(U.data());
    benchmark::DoNotOptimize(NU.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * r.n);
  state.counters["influences/s"] = benchmark::Counter(static_cast<double>(state.iterations()) * r.n * k,
                                                      benchmark::Counter::kIsRate);
}
void BM_DqsFloat(benchmark::State& state) { DqsFloatBench(state, GetRig().rigid); }
BENCHMARK(BM_DqsFloat)->ArgNames({"normals", "k"})->ArgsProduct({{0, 1}, {4, 8}})->Unit(benchmark::kMicrosecond);
void BM_DqsFloatStretch(benchmark::State& state) { DqsFloatBench(state, GetRig().stretch); }
BENCHMARK(BM_DqsFloatStretch)->ArgNames({"normals", "k"})->ArgsProduct({{0, 1}, {4, 8}})->Unit(benchmark::kMicrosecond);

// Real characters (shared data): CesiumMan with the file's own weights in the file's vertex and
// slot order (as the service poses a glTF rig), and the libigl arm with its weights' top 4; random
// rigid transforms per joint. The 8-lane DQS kernel takes blocks of 8 vertices that share their
// joints, so the meshes' vertex order decides how much of it they get. Skipped, with the reason,
// when the data is missing (outside CI).
struct Character {
  std::string error;
  std::vector<float> V;
  SparseWeights W;
  std::vector<Eigen::Affine3d> T;
  int n() const { return static_cast<int>(V.size() / 3); }
};

const Character& GetCharacter(int which) {
  static Character* cache[2] = {nullptr, nullptr};
  Character*& c = cache[which];
  if (c != nullptr) return *c;
  c = new Character;
  const std::string data = SKINNING_DATA_DIR;
  RowMatrixX3d V;
  int joints = 0;
  if (which == 0) {
    auto g = ReadGltf(data + "/gltf/CesiumMan/CesiumMan.glb");
    if (!g.ok()) {
      c->error = std::string(g.status().message());
      return *c;
    }
    V = g->mesh.V;
    c->W = g->weights;
    joints = g->skeleton.size();
  } else {
    auto m = ReadObj(data + "/libigl/arm/arm.obj");
    auto w = ReadDmat(data + "/libigl/arm/arm-weights.dmat");
    if (!m.ok() || !w.ok()) {
      c->error = std::string((!m.ok() ? m.status() : w.status()).message());
      return *c;
    }
    V = m->V;
    c->W = TopK(*w, std::min<int>(kInfluences, static_cast<int>(w->cols())));
    joints = static_cast<int>(w->cols());
  }
  c->V.assign(V.data(), V.data() + V.size());
  std::mt19937 gen(11);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  for (int j = 0; j < joints; ++j) {
    const Eigen::Vector3d axis =
        Eigen::Vector3d(u01(gen) - 0.5, u01(gen) - 0.5, u01(gen) - 0.5).normalized();
    Eigen::Affine3d T = Eigen::Affine3d::Identity();
    T.translate(Eigen::Vector3d(u01(gen), u01(gen), u01(gen)));
    T.rotate(Eigen::AngleAxisd(u01(gen), axis));
    c->T.push_back(T);
  }
  return *c;
}

// range(0): 0 CesiumMan, 1 the arm; range(1): 0 LBS, 1 DQS (PrepareDqsFloat included), 2 DQS
// through the vertex order the server prepares per rig and bake (PrepareDqsLaneOrder; CesiumMan
// only: the arm's blocks all share their joints in file order, so it keeps that order).
void BM_CharacterFloat(benchmark::State& state) {
  const Character& c = GetCharacter(static_cast<int>(state.range(0)));
  if (!c.error.empty()) {
    state.SkipWithError(c.error.c_str());
    return;
  }
  const int mode = static_cast<int>(state.range(1));
  const int k = c.W.k();
  const std::vector<float> T34 = ToRowMajor34(c.T);
  std::vector<float> U(c.V.size());
  const DqsLaneOrder lanes = mode == 2 ? PrepareDqsLaneOrder(c.W) : DqsLaneOrder();
  if (mode == 2 && lanes.empty()) {
    state.SkipWithError("PrepareDqsLaneOrder keeps the file order for this character");
    return;
  }
  for (auto _ : state) {
    if (mode == 2) {
      const DqsTransformsFloat prepared = PrepareDqsFloat(c.T);
      DqsFloat(c.V.data(), lanes, prepared, U.data());
    } else if (mode == 1) {
      const DqsTransformsFloat prepared = PrepareDqsFloat(c.T);
      DqsFloat(c.V.data(), c.n(), c.W.joints.data(), c.W.weights.data(), k, prepared, U.data());
    } else {
      LbsFloat(c.V.data(), c.n(), c.W.joints.data(), c.W.weights.data(), k, T34.data(), U.data());
    }
    benchmark::DoNotOptimize(U.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * c.n());
}
BENCHMARK(BM_CharacterFloat)->ArgNames({"character", "dqs"})->ArgsProduct({{0, 1}, {0, 1}})->Args({0, 2})->Unit(benchmark::kMicrosecond);

// The double reference paths (sparse weights), for comparison.
void BM_LbsDouble(benchmark::State& state) {
  const Rig& r = GetRig();
  RowMatrixX3d U;
  for (auto _ : state) {
    Lbs(r.V, r.W, r.rigid, &U);
    benchmark::DoNotOptimize(U.data());
  }
  state.SetItemsProcessed(state.iterations() * r.n);
}
BENCHMARK(BM_LbsDouble)->Unit(benchmark::kMicrosecond);

void BM_DqsDouble(benchmark::State& state) {
  const Rig& r = GetRig();
  RowMatrixX3d U;
  for (auto _ : state) {
    Dqs(r.V, r.W, r.rigid, &U);
    benchmark::DoNotOptimize(U.data());
  }
  state.SetItemsProcessed(state.iterations() * r.n);
}
BENCHMARK(BM_DqsDouble)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace skinning
