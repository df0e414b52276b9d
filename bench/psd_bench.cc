// Pose space deformation: quality against a synthetic elastic-like elbow bend, and per-frame
// cost against plain LBS on the same mesh.
//
//   ./build/bench/psd_bench                      # quality table, then the timings
//   ./build/bench/psd_bench --benchmark_min_time=0.5
//   ./build/bench/psd_bench --volume_sweep      # only quality, gold standard at κ = 10/30/300/1000
//
// The arm: a capped cylinder along +x (length 2, radius 0.25, 401 rings × 160 segments = 64,162
// vertices), joint 0 at the origin, joint 1 "elbow" at (1, 0, 0) with tail (1.9, 0, 0); smooth
// analytic weights (smoothstep over x ∈ [0.8, 1.2], k = 2). The truth is the sweep + inner-bulge
// bend of tests/support/psd_fixtures.h; a second table takes the elastic gold standard
// (core/solve/elastic.h, ARAP: Poisson ratio 0, the bent elbow thins) as the truth: examples made
// by physics; a third the same solver with a volume term of weight 100 (nearly incompressible:
// the bent elbow keeps its volume to about 1% and bulges). The gold solves print their iteration
// counts and volume change on stderr (about 1 min in all for the third table).
// Quality: examples at 0°, 45°, 90°, 135°; held-out poses 30°, 60°(+5° twist), 110°(−5° twist),
// 120°(+10° twist); RMS distance to the truth in % of the bounding-box diagonal.
// Timing: 8 examples (0°…140° every 20°); DeformFloat vs LbsFloat (the same weights, k = 2).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "absl/strings/str_format.h"

#include "core/math/svd3.h"
#include "core/rig/pose.h"
#include "core/skinning/dqs.h"
#include "core/skinning/lbs.h"
#include "core/skinning/psd.h"
#include "core/skinning/support_joints.h"
#include "core/solve/elastic.h"
#include "core/util/blas_kernels.h"
#include "core/weights/swing_twist_bake.h"
#include "tests/support/psd_fixtures.h"

namespace skinning {
namespace {

constexpr double kDeg = M_PI / 180;

// The arm of tests/support/psd_fixtures.h, with its weights.
struct Arm {
  Mesh mesh;
  Skeleton skeleton;
  SparseWeights W;
};

const Arm& GetArm() {
  static const Arm* arm = [] {
    Rig rig = testing::MakePsdArm(401, 160);
    return new Arm{rig.mesh, rig.skeleton, *rig.sparse_weights};
  }();
  return *arm;
}

using testing::ElbowPose;
using Rms = double (*)(const RowMatrixX3d&, const RowMatrixX3d&);
constexpr Rms kRms = testing::RmsDistance;

// The truth at an elbow pose: the synthetic sweep + bulge, or the elastic gold standard.
using Truth = std::function<RowMatrixX3d(double bend_deg, double twist_deg)>;

Truth SyntheticTruth() {
  return [](double b, double t) { return testing::ElbowTruth(GetArm().mesh.V, b * kDeg, t * kDeg); };
}

// The gold standard of the elastic deformers (core/solve/elastic.h) on a voxel grid of the arm,
// the bones' voxels fixed by the pose: examples "sculpted" by physics. Solutions are cached.
Truth GoldTruth(int resolution, double volume_weight = 0.0) {
  const Arm& arm = GetArm();
  VoxelGridOptions voxel;
  voxel.resolution = resolution;
  auto model = BuildElasticModel(arm.mesh, arm.skeleton, DomainOptions{voxel, std::nullopt});
  if (!model.ok()) {
    std::fprintf(stderr, "gold standard: %s\n", std::string(model.status().message()).c_str());
    std::exit(1);
  }
  auto cache = std::make_shared<std::map<std::pair<double, double>, RowMatrixX3d>>();
  std::shared_ptr<const ElasticModel> gold = *model;
  return [gold, cache, volume_weight](double b, double t) {
    auto it = cache->find({b, t});
    if (it != cache->end()) return it->second;
    const Arm& arm = GetArm();
    const auto order = TopologicalOrder(arm.skeleton);
    const auto T = SkinningTransforms(arm.skeleton, *order, ElbowPose(arm.skeleton, b * kDeg, t * kDeg));
    ElasticOptions options;
    options.volume_weight = volume_weight;
    // A stiff volume term slows the local/global iterations (about 700-1300 at κ = 100 here,
    // up to about 4700 at κ = 1000).
    if (volume_weight > 0) options.max_iterations = 20000;
    ElasticReport rep;
    auto X = gold->Solve(*T, nullptr, options, &rep);
    if (X.ok()) {
      std::fprintf(stderr, "  gold standard %g/%+g deg, volume weight %g: %d iterations (%s), %.1f s, volume %+.2f%%\n", b, t,
                   volume_weight, rep.iterations, rep.stop_reason.c_str(), rep.seconds,
                   100 * (SignedVolume(gold->ToMesh(*X), GetArm().mesh.F) / SignedVolume(GetArm().mesh.V, GetArm().mesh.F) - 1));
    }
    if (!X.ok()) {
      std::fprintf(stderr, "gold standard solve: %s\n", std::string(X.status().message()).c_str());
      std::exit(1);
    }
    return (*cache)[{b, t}] = gold->ToMesh(*X);
  };
}

std::vector<PsdExample> Examples(const Truth& truth, const std::vector<double>& bends_deg) {
  std::vector<PsdExample> examples;
  for (double b : bends_deg)
    examples.push_back(PsdExample{"bend-" + std::to_string(static_cast<int>(b)),
                                  ElbowPose(GetArm().skeleton, b * kDeg), truth(b, 0)});
  return examples;
}

// How much a support joint can do for the base skinning at each example, before PSD: RMS of
// (1 − w_i)·base_i + w_i·T·v_i against the example (w the model's support weights) for T the
// optimized slide's support transform, and for T the best rigid transform of all (weighted
// Kabsch: min Σ w_i² |T v_i − (example_i − (1 − w_i) base_i) / w_i|²), an upper bound for any
// rule that moves one rigid support joint.
void PrintSupportHeadroom(const std::vector<PsdExample>& examples, PsdBase base, const PsdModel& model,
                          const PsdReport& report, double diag) {
  const Arm& arm = GetArm();
  const Eigen::MatrixXd& WS = model.support_weights();
  if (WS.cols() != 1) return;
  auto order = TopologicalOrder(arm.skeleton);
  const int n = static_cast<int>(arm.mesh.V.rows());
  std::printf("    support joint alone at the examples, RMS %% of diagonal (base / optimized slide / best rigid T):");
  for (size_t k = 0; k < examples.size(); ++k) {
    const auto T = *SkinningTransforms(arm.skeleton, *order, examples[k].pose);
    const auto found = FindSupportJoints(arm.skeleton, {PoseLocals(arm.skeleton, examples[k].pose)});
    if (found.empty()) continue;  // the rest example
    RowMatrixX3d B;
    if (base == PsdBase::kLbs)
      Lbs(arm.mesh.V, arm.W, T, &B);
    else
      Dqs(arm.mesh.V, arm.W, T, &B);
    auto rms_with = [&](const Eigen::Affine3d& A) {
      double e = 0;
      for (int i = 0; i < n; ++i) {
        const double w = WS(i, 0);
        const Eigen::Vector3d u = (1 - w) * B.row(i).transpose() + w * (A * arm.mesh.V.row(i).transpose());
        e += (u - examples[k].V.row(i).transpose()).squaredNorm();
      }
      return 100 * std::sqrt(e / n) / diag;
    };
    const Eigen::Affine3d slide = SupportJointTransform(found[0], T, report.support_slide[k][0]);
    double sw = 0;
    Eigen::Vector3d cv = Eigen::Vector3d::Zero(), cq = Eigen::Vector3d::Zero();
    std::vector<Eigen::Vector3d> q(n);
    for (int i = 0; i < n; ++i) {
      const double w = WS(i, 0);
      if (w < 1e-9) continue;
      q[i] = (examples[k].V.row(i).transpose() - (1 - w) * B.row(i).transpose()) / w;
      sw += w * w;
      cv += w * w * arm.mesh.V.row(i).transpose();
      cq += w * w * q[i];
    }
    cv /= sw;
    cq /= sw;
    Eigen::Matrix3d H = Eigen::Matrix3d::Zero();
    for (int i = 0; i < n; ++i)
      if (WS(i, 0) >= 1e-9) H += WS(i, 0) * WS(i, 0) * (arm.mesh.V.row(i).transpose() - cv) * (q[i] - cq).transpose();
    Eigen::Affine3d best = Eigen::Affine3d::Identity();
    best.linear() = NearestRotation(Eigen::Matrix3d(H.transpose()));  // Kabsch: the rotation taking rest to target
    best.translation() = cq - best.linear() * cv;
    std::printf("  %s %.3f/%.3f/%.3f", examples[k].name.c_str(), 100 * kRms(B, examples[k].V) / diag,
                rms_with(slide), rms_with(best));
  }
  std::printf("\n");
}

void PrintQualityTable(const char* truth_name, const Truth& truth) {
  const Arm& arm = GetArm();
  const double diag = BoundingBoxDiagonal(arm.mesh.V);
  const auto examples = Examples(truth, {0, 45, 90, 135});
  const std::vector<std::pair<double, double>> held = {{30, 0}, {60, 5}, {110, -5}, {120, 10}};
  auto order = TopologicalOrder(arm.skeleton);
  std::printf("\nPSD quality on the %d-vertex arm, truth = %s: RMS distance to the truth, %% of the bbox diagonal\n",
              static_cast<int>(arm.mesh.V.rows()), truth_name);
  std::printf("examples at 0/45/90/135 deg; support-joint voxel grid resolution 64\n");
  std::printf("%-22s", "method");
  for (const auto& [b, t] : held) std::printf("  %5.0f/%-+4.0f", b, t);
  std::printf("  %8s  %10s  %8s\n", "mean", "repro_err", "build_s");
  for (PsdBase base : {PsdBase::kLbs, PsdBase::kDqs}) {
    const char* bname = base == PsdBase::kLbs ? "LBS" : "DQS";
    // Per held-out pose and the mean (last): base, PSD, PSD + support.
    std::vector<std::vector<double>> err(3, std::vector<double>(held.size() + 1, 0.0));
    // Plain skinning.
    std::printf("%-22s", bname);
    double mean = 0;
    for (size_t h = 0; h < held.size(); ++h) {
      const auto& [b, t] = held[h];
      const Pose pose = ElbowPose(arm.skeleton, b * kDeg, t * kDeg);
      const auto T = SkinningTransforms(arm.skeleton, *order, pose);
      RowMatrixX3d U;
      if (base == PsdBase::kLbs)
        Lbs(arm.mesh.V, arm.W, *T, &U);
      else
        Dqs(arm.mesh.V, arm.W, *T, &U);
      err[0][h] = 100 * kRms(U, truth(b, t)) / diag;
      mean += err[0][h] / held.size();
      std::printf("  %10.4f", err[0][h]);
    }
    err[0][held.size()] = mean;
    std::printf("  %8.4f\n", mean);
    for (bool support : {false, true}) {
      PsdOptions o;
      o.base = base;
      o.support_joints = support;
      PsdReport report;
      auto model = PsdModel::Build(arm.mesh, arm.skeleton, arm.W, examples, o, &report);
      if (!model.ok()) {
        std::printf("build failed: %s\n", std::string(model.status().message()).c_str());
        continue;
      }
      std::printf("%-22s", (std::string("PSD") + (support ? "+support" : "") + " (" + bname + ")").c_str());
      mean = 0;
      for (size_t h = 0; h < held.size(); ++h) {
        const auto& [b, t] = held[h];
        RowMatrixX3d U;
        (void)(*model)->Deform(ElbowPose(arm.skeleton, b * kDeg, t * kDeg), &U);
        const double e = 100 * kRms(U, truth(b, t)) / diag;
        mean += e / held.size();
        err[support ? 2 : 1][h] = e;
        std::printf("  %10.4f", e);
      }
      err[support ? 2 : 1][held.size()] = mean;
      std::printf("  %8.4f  %10.2e  %8.2f\n", mean, report.max_reproduction_error / diag,
                  report.seconds);
      if (support) {
        std::printf("    slides:");
        for (const auto& s : report.support_slide) std::printf(" %.3f", s[0]);
        std::printf("   (%s)\n", report.detail.c_str());
        PrintSupportHeadroom(examples, base, **model, report, diag);
      }
    }
    // Issue 7's item 2: support closer than plain PSD, and both closer than the base skinning.
    int poses_holding = 0;
    for (size_t h = 0; h < held.size(); ++h) poses_holding += err[2][h] < err[1][h] && err[1][h] < err[0][h];
    const size_t m = held.size();
    std::printf("    PSD+support < PSD < %s: at %d of %d held-out poses; in the mean: %s\n", bname, poses_holding,
                static_cast<int>(m), err[2][m] < err[1][m] && err[1][m] < err[0][m] ? "yes" : "no");
  }
  std::fflush(stdout);
}

std::shared_ptr<const PsdModel> TimingModel(PsdBase base, bool support) {
  const Arm& arm = GetArm();
  PsdOptions o;
  o.base = base;
  o.support_joints = support;
  auto model = PsdModel::Build(arm.mesh, arm.skeleton, arm.W,
                               Examples(SyntheticTruth(), {0, 20, 40, 60, 80, 100, 120, 140}), o);
  return model.ok() ? *model : nullptr;
}

// Plain skinning per frame as the server does it: transforms from the pose, then the kernel.
void BaseFloatLoop(benchmark::State& state, PsdBase base) {
  const Arm& arm = GetArm();
  const int n = static_cast<int>(arm.mesh.V.rows());
  std::vector<float> V(arm.mesh.V.data(), arm.mesh.V.data() + 3 * n), U(3 * n);
  auto order = TopologicalOrder(arm.skeleton);
  const Pose pose = ElbowPose(arm.skeleton, 70 * kDeg, 5 * kDeg);
  for (auto _ : state) {
    const auto T = SkinningTransforms(arm.skeleton, *order, pose);
    if (base == PsdBase::kLbs) {
      const std::vector<float> T34 = ToRowMajor34(*T);
      LbsFloat(V.data(), n, arm.W.joints.data(), arm.W.weights.data(), arm.W.k(), T34.data(), U.data());
    } else {
      const DqsTransformsFloat prepared = PrepareDqsFloat(*T);
      DqsFloat(V.data(), n, arm.W.joints.data(), arm.W.weights.data(), arm.W.k(), prepared, U.data());
    }
    benchmark::DoNotOptimize(U.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}

void BM_LbsFloat(benchmark::State& state) { BaseFloatLoop(state, PsdBase::kLbs); }
BENCHMARK(BM_LbsFloat)->Unit(benchmark::kMicrosecond);

void BM_PsdDeformFloat(benchmark::State& state) {
  const PsdBase base = state.range(0) ? PsdBase::kDqs : PsdBase::kLbs;
  const bool support = state.range(1) != 0;
  static std::shared_ptr<const PsdModel> models[2][2];
  auto& model = models[state.range(0)][state.range(1)];
  if (!model) model = TimingModel(base, support);
  if (!model) {
    state.SkipWithError("build failed");
    return;
  }
  const int n = model->num_vertices();
  std::vector<float> U(3 * n);
  const Pose pose = ElbowPose(GetArm().skeleton, 70 * kDeg, 5 * kDeg);
  for (auto _ : state) {
    (void)model->DeformFloat(pose, U.data());
    benchmark::DoNotOptimize(U.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.SetLabel(std::string(base == PsdBase::kLbs ? "lbs" : "dqs") + (support ? "+support" : "") +
                 ", 8 examples");
}
BENCHMARK(BM_PsdDeformFloat)
    ->Args({0, 0})
    ->Args({0, 1})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Unit(benchmark::kMicrosecond);

void BM_DqsFloat(benchmark::State& state) { BaseFloatLoop(state, PsdBase::kDqs); }
BENCHMARK(BM_DqsFloat)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace skinning

int main(int argc, char** argv) {
  skinning::UseFastestBlasKernels(argv);  // may re-execute with faster OpenBLAS kernels
  // --volume_sweep: only the quality tables against the gold standard at more volume weights
  // (Poisson ratio ν = κ / (2κ + 3) in the small-strain limit), about 10 min of gold solves.
  bool volume_sweep = false;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--volume_sweep") {
      volume_sweep = true;
      for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
      --argc;
      break;
    }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (volume_sweep) {
    for (double kappa : {10.0, 30.0, 300.0, 1000.0}) {
      const std::string name = absl::StrFormat(
          "the gold standard with volume weight %g (Poisson ratio %.4f), voxel resolution 48, bones fixed", kappa,
          kappa / (2 * kappa + 3));
      skinning::PrintQualityTable(name.c_str(), skinning::GoldTruth(48, kappa));
    }
    return 0;
  }
  skinning::PrintQualityTable("the synthetic sweep + inner bulge (tests/support/psd_fixtures.h)",
                               skinning::SyntheticTruth());
  skinning::PrintQualityTable("the elastic gold standard (voxel resolution 48, bones fixed)",
                               skinning::GoldTruth(48));
  skinning::PrintQualityTable(
      "the nearly incompressible gold standard (volume weight 100, voxel resolution 48, bones fixed)",
      skinning::GoldTruth(48, 100.0));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
