// Pose space deformation: quality against a synthetic elastic-like elbow bend, and per-frame
// cost against plain LBS on the same mesh.
//
//   ./build/bench/psd_bench                      # quality table, then the timings
//   ./build/bench/psd_bench --benchmark_min_time=0.5
//
// The arm: a capped cylinder along +x (length 2, radius 0.25, 401 rings × 160 segments = 64,162
// vertices), joint 0 at the origin, joint 1 "elbow" at (1, 0, 0) with tail (1.9, 0, 0); smooth
// analytic weights (smoothstep over x ∈ [0.8, 1.2], k = 2). The truth is the sweep + inner-bulge
// bend of tests/support/psd_fixtures.h (copied here: the bench does not link tests/support).
// Quality: examples at 0°, 45°, 90°, 135°; held-out poses 30°, 60°(+5° twist), 110°(−5° twist),
// 120°(+10° twist); RMS distance to the truth in % of the bounding-box diagonal.
// Timing: 8 examples (0°…140° every 20°); DeformFloat vs LbsFloat (the same weights, k = 2).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "core/rig/pose.h"
#include "core/skinning/dqs.h"
#include "core/skinning/lbs.h"
#include "core/skinning/psd.h"

namespace skinning {
namespace {

constexpr double kDeg = M_PI / 180;

struct Arm {
  Mesh mesh;
  Skeleton skeleton;
  SparseWeights W;
};

Arm MakeArm(int rings, int segments) {
  Arm arm;
  const double length = 2.0, radius = 0.25;
  const int nv = rings * segments + 2;
  arm.mesh.V.resize(nv, 3);
  for (int r = 0; r < rings; ++r)
    for (int s = 0; s < segments; ++s) {
      const double a = 2 * M_PI * s / segments;
      arm.mesh.V.row(r * segments + s) << length * r / (rings - 1), radius * std::cos(a),
          radius * std::sin(a);
    }
  const int c0 = rings * segments, c1 = c0 + 1;
  arm.mesh.V.row(c0) << 0, 0, 0;
  arm.mesh.V.row(c1) << length, 0, 0;
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
  arm.mesh.F.resize(static_cast<int>(faces.size()), 3);
  for (size_t f = 0; f < faces.size(); ++f) arm.mesh.F.row(f) = faces[f].transpose();
  arm.skeleton.joints.resize(2);
  arm.skeleton.joints[0].name = "root";
  arm.skeleton.joints[0].tail = Eigen::Vector3d(1, 0, 0);
  arm.skeleton.joints[1].name = "elbow";
  arm.skeleton.joints[1].parent = 0;
  arm.skeleton.joints[1].rest.translation = Eigen::Vector3d(1, 0, 0);
  arm.skeleton.joints[1].inverse_bind.translation() = Eigen::Vector3d(-1, 0, 0);
  arm.skeleton.joints[1].tail = Eigen::Vector3d(1.9, 0, 0);
  arm.W.joints.resize(nv, 2);
  arm.W.weights.resize(nv, 2);
  for (int i = 0; i < nv; ++i) {
    const double u = std::clamp((arm.mesh.V(i, 0) - 0.8) / 0.4, 0.0, 1.0);
    const double w1 = u * u * (3 - 2 * u);
    arm.W.joints(i, 0) = 0;
    arm.W.joints(i, 1) = 1;
    arm.W.weights(i, 0) = static_cast<float>(1 - w1);
    arm.W.weights(i, 1) = static_cast<float>(w1);
  }
  return arm;
}

Pose ElbowPose(const Skeleton& skeleton, double bend, double twist = 0) {
  Pose pose = RestPose(skeleton);
  pose.local[1].rotation = pose.local[1].rotation *
                           Eigen::AngleAxisd(bend, Eigen::Vector3d::UnitY()) *
                           Eigen::AngleAxisd(twist, Eigen::Vector3d::UnitX());
  return pose;
}

// Copy of testing::ElbowTruth (tests/support/psd_fixtures.cc) with its default options.
RowMatrixX3d ElbowTruth(const RowMatrixX3d& V, double theta, double twist) {
  const double c = 1.0, b = 0.35, a = c - b, radius = 0.25, bulge = 0.3;
  RowMatrixX3d U(V.rows(), 3);
  for (Eigen::Index i = 0; i < V.rows(); ++i) {
    const double x = V(i, 0);
    const double t = std::clamp((x - a) / (2 * b), 0.0, 1.0);
    const double phi = theta * t;
    Eigen::Vector3d centre;
    if (x <= a) {
      centre = Eigen::Vector3d(x, 0, 0);
    } else if (x >= a + 2 * b) {
      centre = Eigen::Vector3d(c, 0, 0) +
               (x - c) * Eigen::Vector3d(std::cos(theta), 0, -std::sin(theta));
    } else if (std::abs(theta) < 1e-9) {
      centre = Eigen::Vector3d(x, 0, 0);
    } else {
      const double R = b / std::tan(theta / 2);
      centre = Eigen::Vector3d(a + R * std::sin(phi), 0, -R * (1 - std::cos(phi)));
    }
    Eigen::Vector3d offset(0, V(i, 1), V(i, 2));
    offset = Eigen::AngleAxisd(twist * t, Eigen::Vector3d::UnitX()) * offset;
    const double inner = std::max(0.0, -(theta >= 0 ? 1.0 : -1.0) * offset.z() / radius);
    const double s = std::sin(M_PI * t);
    offset *= 1.0 + bulge * std::abs(std::sin(theta)) * s * s * inner;
    U.row(i) = (centre + Eigen::AngleAxisd(phi, Eigen::Vector3d::UnitY()) * offset).transpose();
  }
  return U;
}

std::vector<PsdExample> Examples(const Arm& arm, const std::vector<double>& bends_deg) {
  std::vector<PsdExample> out;
  for (double deg : bends_deg) {
    PsdExample ex;
    ex.name = "bend-" + std::to_string(static_cast<int>(deg));
    ex.pose = ElbowPose(arm.skeleton, deg * kDeg);
    ex.V = ElbowTruth(arm.mesh.V, deg * kDeg, 0);
    out.push_back(std::move(ex));
  }
  return out;
}

double Rms(const RowMatrixX3d& A, const RowMatrixX3d& B) {
  return std::sqrt((A - B).rowwise().squaredNorm().mean());
}

const Arm& GetArm() {
  static const Arm* arm = new Arm(MakeArm(401, 160));
  return *arm;
}

void PrintQualityTable() {
  const Arm& arm = GetArm();
  const double diag = BoundingBoxDiagonal(arm.mesh.V);
  const auto examples = Examples(arm, {0, 45, 90, 135});
  const std::vector<std::pair<double, double>> held = {{30, 0}, {60, 5}, {110, -5}, {120, 10}};
  auto order = TopologicalOrder(arm.skeleton);
  std::printf("PSD quality on the %d-vertex arm: RMS distance to the truth, %% of the bbox diagonal\n",
              static_cast<int>(arm.mesh.V.rows()));
  std::printf("examples at 0/45/90/135 deg; support-joint voxel grid resolution 64\n");
  std::printf("%-22s", "method");
  for (const auto& [b, t] : held) std::printf("  %5.0f/%-+4.0f", b, t);
  std::printf("  %8s  %10s  %8s\n", "mean", "repro_err", "build_s");
  for (PsdBase base : {PsdBase::kLbs, PsdBase::kDqs}) {
    const char* bname = base == PsdBase::kLbs ? "LBS" : "DQS";
    // Plain skinning.
    std::printf("%-22s", bname);
    double mean = 0;
    for (const auto& [b, t] : held) {
      const Pose pose = ElbowPose(arm.skeleton, b * kDeg, t * kDeg);
      const auto T = SkinningTransforms(arm.skeleton, *order, pose);
      RowMatrixX3d U;
      if (base == PsdBase::kLbs)
        Lbs(arm.mesh.V, arm.W, *T, &U);
      else
        Dqs(arm.mesh.V, arm.W, *T, &U);
      const double e = 100 * Rms(U, ElbowTruth(arm.mesh.V, b * kDeg, t * kDeg)) / diag;
      mean += e / held.size();
      std::printf("  %10.4f", e);
    }
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
      for (const auto& [b, t] : held) {
        RowMatrixX3d U;
        (void)(*model)->Deform(ElbowPose(arm.skeleton, b * kDeg, t * kDeg), &U);
        const double e = 100 * Rms(U, ElbowTruth(arm.mesh.V, b * kDeg, t * kDeg)) / diag;
        mean += e / held.size();
        std::printf("  %10.4f", e);
      }
      std::printf("  %8.4f  %10.2e  %8.2f\n", mean, report.max_reproduction_error / diag,
                  report.seconds);
      if (support) {
        std::printf("    slides:");
        for (const auto& s : report.support_slide) std::printf(" %.3f", s[0]);
        std::printf("   (%s)\n", report.detail.c_str());
      }
    }
  }
  std::fflush(stdout);
}

std::shared_ptr<const PsdModel> TimingModel(PsdBase base, bool support) {
  const Arm& arm = GetArm();
  PsdOptions o;
  o.base = base;
  o.support_joints = support;
  auto model = PsdModel::Build(arm.mesh, arm.skeleton, arm.W,
                               Examples(arm, {0, 20, 40, 60, 80, 100, 120, 140}), o);
  return model.ok() ? *model : nullptr;
}

void BM_LbsFloat(benchmark::State& state) {
  const Arm& arm = GetArm();
  const int n = static_cast<int>(arm.mesh.V.rows());
  std::vector<float> V(arm.mesh.V.data(), arm.mesh.V.data() + 3 * n), U(3 * n);
  auto order = TopologicalOrder(arm.skeleton);
  const Pose pose = ElbowPose(arm.skeleton, 70 * kDeg, 5 * kDeg);
  for (auto _ : state) {
    // Per frame as the server does it: transforms from the pose, then the kernel.
    const auto T = SkinningTransforms(arm.skeleton, *order, pose);
    const std::vector<float> T34 = ToRowMajor34(*T);
    LbsFloat(V.data(), n, arm.W.joints.data(), arm.W.weights.data(), arm.W.k(), T34.data(),
             U.data());
    benchmark::DoNotOptimize(U.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
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

void BM_DqsFloat(benchmark::State& state) {
  const Arm& arm = GetArm();
  const int n = static_cast<int>(arm.mesh.V.rows());
  std::vector<float> V(arm.mesh.V.data(), arm.mesh.V.data() + 3 * n), U(3 * n);
  auto order = TopologicalOrder(arm.skeleton);
  const Pose pose = ElbowPose(arm.skeleton, 70 * kDeg, 5 * kDeg);
  for (auto _ : state) {
    const auto T = SkinningTransforms(arm.skeleton, *order, pose);
    const DqsTransformsFloat prepared = PrepareDqsFloat(*T);
    DqsFloat(V.data(), n, arm.W.joints.data(), arm.W.weights.data(), arm.W.k(), prepared,
             U.data());
    benchmark::DoNotOptimize(U.data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_DqsFloat)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace skinning

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  skinning::PrintQualityTable();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
