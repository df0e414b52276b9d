// Per-frame skinning throughput: LBS and DQS, float32 fast paths (k = 4 and k = 8 influences)
// and the double reference path, one thread, on a generated 320 x 320 grid (102,400 vertices)
// with 20 joints and random top-k normalized weights. items/s is vertices/s; "influences/s" is
// vertices/s times k (the same figure at k = 4 and 8 means the cost is linear in k).
//
//   ./build/bench/skinning_bench --benchmark_min_time=0.5
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

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
