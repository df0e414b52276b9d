// Nanoseconds per 3x3 nearest rotation / SVD: Svd3 (float and double) against Eigen::JacobiSVD.
// Inputs are near-rotations (what the ARAP local step sees) and, separately, arbitrary
// matrices. Throughput runs over a batch of independent inputs; the latency run chains each
// input on the previous result, as one iteration's dependent work would.
#include <benchmark/benchmark.h>

#include <Eigen/Core>
#include <Eigen/Geometry>
#include <Eigen/SVD>
#include <random>
#include <vector>

#include "core/math/svd3.h"

namespace skinning {
namespace {

constexpr int kBatch = 1024;

enum Inputs { kNearRotations = 0, kArbitrary = 1 };

template <typename T>
std::vector<Eigen::Matrix<T, 3, 3>> MakeInputs(int kind) {
  std::mt19937 gen(42);
  std::normal_distribution<double> n(0.0, 1.0);
  std::vector<Eigen::Matrix<T, 3, 3>> inputs;
  for (int k = 0; k < kBatch; ++k) {
    Eigen::Matrix3d noise;
    for (int i = 0; i < 9; ++i) noise(i) = n(gen);
    Eigen::Matrix3d A = noise;
    if (kind == kNearRotations) {
      const Eigen::Matrix3d R =
          Eigen::Quaterniond(n(gen), n(gen), n(gen), n(gen)).normalized().toRotationMatrix();
      A = R + 0.1 * noise;
    }
    inputs.push_back(A.cast<T>());
  }
  return inputs;
}

template <typename T>
Eigen::Matrix<T, 3, 3> EigenNearestRotation(const Eigen::Matrix<T, 3, 3>& A) {
  using M = Eigen::Matrix<T, 3, 3>;
  Eigen::JacobiSVD<M> svd(A, Eigen::ComputeFullU | Eigen::ComputeFullV);
  M U = svd.matrixU();
  const M& V = svd.matrixV();
  if ((U * V.transpose()).determinant() < T(0)) U.col(2) = -U.col(2);
  return U * V.transpose();
}

template <typename T>
void BM_NearestRotation(benchmark::State& state) {
  const auto inputs = MakeInputs<T>(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    for (const auto& A : inputs) benchmark::DoNotOptimize(NearestRotation(A));
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

template <typename T>
void BM_NearestRotationLatency(benchmark::State& state) {
  const auto inputs = MakeInputs<T>(static_cast<int>(state.range(0)));
  Eigen::Matrix<T, 3, 3> R = Eigen::Matrix<T, 3, 3>::Identity();
  for (auto _ : state) {
    // Each input depends on the previous result (by a negligible amount).
    for (const auto& A : inputs) R = NearestRotation(Eigen::Matrix<T, 3, 3>(A + T(1e-30) * R));
    benchmark::DoNotOptimize(R);
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

template <typename T>
void BM_Svd3(benchmark::State& state) {
  const auto inputs = MakeInputs<T>(static_cast<int>(state.range(0)));
  Eigen::Matrix<T, 3, 3> U, V;
  Eigen::Matrix<T, 3, 1> sigma;
  for (auto _ : state) {
    for (const auto& A : inputs) {
      Svd3(A, &U, &sigma, &V);
      benchmark::DoNotOptimize(U);
      benchmark::DoNotOptimize(sigma);
      benchmark::DoNotOptimize(V);
    }
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

template <typename T>
void BM_EigenJacobiSvdNearestRotation(benchmark::State& state) {
  const auto inputs = MakeInputs<T>(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    for (const auto& A : inputs) benchmark::DoNotOptimize(EigenNearestRotation(A));
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}

// Arg 0: near-rotations, 1: arbitrary matrices.
BENCHMARK(BM_NearestRotation<float>)->Arg(kNearRotations)->Arg(kArbitrary);
BENCHMARK(BM_NearestRotation<double>)->Arg(kNearRotations)->Arg(kArbitrary);
BENCHMARK(BM_NearestRotationLatency<float>)->Arg(kNearRotations);
BENCHMARK(BM_NearestRotationLatency<double>)->Arg(kNearRotations);
BENCHMARK(BM_Svd3<float>)->Arg(kNearRotations)->Arg(kArbitrary);
BENCHMARK(BM_Svd3<double>)->Arg(kNearRotations)->Arg(kArbitrary);
BENCHMARK(BM_EigenJacobiSvdNearestRotation<float>)->Arg(kNearRotations)->Arg(kArbitrary);
BENCHMARK(BM_EigenJacobiSvdNearestRotation<double>)->Arg(kNearRotations)->Arg(kArbitrary);

}  // namespace
}  // namespace skinning
