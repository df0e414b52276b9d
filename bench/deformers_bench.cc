// Per-frame throughput of the elasticity-inspired deformers against LBS and DQS, one thread,
// float32 kernels, k = 4 slots per vertex, on a generated cylinder along x (length 2, radius
// 0.25; 400 rings of 256 vertices = 102,400 vertices) with a chain of J joints (range arg:
// J = 2, the brief's two-joint arm, or J = 8) and smooth synthetic weights (quadratic hats around
// the joints, up to 3 non-zero per vertex for J = 8, up to 2 for J = 2). Every pose rotates
// every joint about itself (forward kinematics; the root also
// translates); STBS stretches and twists every bone (projection endpoint weights). items/s is
// vertices/s; the counter "vs_lbs" is the mean CPU time per frame (per-frame preparation
// included) relative to the best LbsFloat CPU time on the same mesh and joints (measured at
// start-up, same process). BM_CharacterFloat does the same on a real character (below).
//
//   ./build/bench/deformers_bench --benchmark_min_time=0.5
#include <algorithm>
#include <cmath>
#include <ctime>
#include <cstdint>
#include <map>
#include <string>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include "core/io/gltf.h"
#include "core/rig/bones.h"
#include "core/rig/joint_frames.h"
#include "core/rig/pose.h"
#include "core/rig/skeleton.h"
#include "core/skinning/dqs.h"
#include "core/skinning/lbs.h"
#include "core/skinning/stbs.h"
#include "core/skinning/swing_twist.h"
#include "core/skinning/weights.h"

namespace skinning {
namespace {

constexpr int kRings = 400;
constexpr int kSegments = 256;
constexpr int kK = 4;
constexpr double kLength = 2.0;

struct Setup {
  std::string error;  // the character's file could not be read (GetCharacter)
  DqsLaneOrder lanes;           // the character: W's DQS vertex order (as the server prepares it)
  RowMatrixXf endpoint_lanes;   // and the endpoint weights in it
  int n = 0;
  std::vector<float> V;
  SparseWeights W;  // bone / deformer weights, top 4
  SwingTwistWeights st_weights;
  RowMatrixXf endpoint;
  std::vector<JointFrame> frames;
  std::vector<StbsBone> bones;
  std::vector<Eigen::Affine3d> M;
  BoneStretchTwist stretch_twist;
};

const Setup& GetSetup(int joints) {
  static std::map<int, Setup*> cache;
  Setup*& s = cache[joints];
  if (s != nullptr) return *s;
  s = new Setup;
  s->n = kRings * kSegments;
  RowMatrixX3d V(s->n, 3);
  for (int r = 0; r < kRings; ++r)
    for (int c = 0; c < kSegments; ++c) {
      const double a = 2 * M_PI * c / kSegments;
      V.row(r * kSegments + c) << kLength * r / (kRings - 1), 0.25 * std::cos(a), 0.25 * std::sin(a);
    }
  s->V.assign(V.data(), V.data() + 3 * s->n);

  // A chain of joints along x, each bone ending at the next joint (the last at 0.95 length).
  Skeleton sk;
  const double h = kLength / joints;
  for (int j = 0; j < joints; ++j) {
    Joint jt;
    jt.name = "j" + std::to_string(j);
    jt.parent = j - 1;
    jt.rest.translation = Eigen::Vector3d(j == 0 ? 0.0 : h, 0, 0);
    jt.inverse_bind = Eigen::Translation3d(-Eigen::Vector3d(j * h, 0, 0));
    if (j == joints - 1) jt.tail = Eigen::Vector3d(0.95 * kLength, 0, 0);
    sk.joints.push_back(jt);
  }
  const std::vector<JointHandle> handles = *JointHandles(sk);
  s->frames = JointFrames(sk, handles);
  s->bones = StbsBones(handles);

  // Quadratic hats around the bones' middles (width 1.5 h), normalized.
  Eigen::MatrixXd D(s->n, joints), S(s->n, joints), T(s->n, joints), E(s->n, joints);
  for (int i = 0; i < s->n; ++i) {
    const double x = V(i, 0);
    double sum = 0;
    for (int j = 0; j < joints; ++j) {
      const double t = 1.0 - std::abs(x - (j + 0.5) * h) / (1.5 * h);
      D(i, j) = t > 0 ? t * t : 0.0;
      sum += D(i, j);
      S(i, j) = 0.5 + 0.4 * std::sin(3 * x + j);
      T(i, j) = 0.5 + 0.4 * std::cos(2 * x + j);
      const StbsBone& b = s->bones[j];
      const Eigen::Vector3d d = b.b - b.a;
      E(i, j) = std::clamp((V.row(i).transpose() - b.a).dot(d) / d.squaredNorm(), 0.0, 1.0);
    }
    D.row(i) /= sum;
  }
  s->W = TopK(D, kK);
  s->st_weights = MakeSwingTwistWeights(D, S, T, kK);
  s->endpoint = AlignEndpointWeights(s->W, E);

  std::mt19937 gen(11);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  // A forward-kinematics pose: every joint rotated about itself, the root also translated.
  Pose pose = RestPose(sk);
  pose.local[0].translation += 0.1 * Eigen::Vector3d(u(gen), u(gen), u(gen));
  for (int j = 0; j < joints; ++j) {
    pose.local[j].rotation =
        Eigen::AngleAxisd(1.5 * u(gen), Eigen::Vector3d(u(gen), u(gen), u(gen)).normalized());
    s->stretch_twist.stretch.push_back(1.0 + 0.3 * u(gen));
    s->stretch_twist.twist_a.push_back(u(gen));
    s->stretch_twist.twist_b.push_back(2.0 * u(gen));
  }
  s->M = *SkinningTransforms(sk, *TopologicalOrder(sk), pose);
  return *s;
}

// This thread's CPU time (the dev VM is shared, so wall time overstates a busy moment).
double ThreadSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

// CPU seconds per LbsFloat frame for this setup (best of 30).
double LbsSeconds(int joints) {
  static std::map<int, double> cache;
  auto it = cache.find(joints);
  if (it != cache.end()) return it->second;
  const Setup& s = GetSetup(joints);
  const std::vector<float> T34 = ToRowMajor34(s.M);
  std::vector<float> U(3 * s.n);
  double best = 1e300;
  for (int rep = 0; rep < 30; ++rep) {
    const double t0 = ThreadSeconds();
    LbsFloat(s.V.data(), s.n, s.W.joints.data(), s.W.weights.data(), kK, T34.data(), U.data());
    benchmark::DoNotOptimize(U.data());
    best = std::min(best, ThreadSeconds() - t0);
  }
  return cache[joints] = best;
}

template <typename Fn>
void Run(benchmark::State& state, const Setup& s, Fn frame) {
  const double lbs = LbsSeconds(static_cast<int>(state.range(0)));
  double total = 0;
  int64_t frames = 0;
  for (auto _ : state) {
    const double t0 = ThreadSeconds();
    frame();
    total += ThreadSeconds() - t0;
    ++frames;
  }
  state.SetItemsProcessed(frames * s.n);
  state.counters["vs_lbs"] = frames > 0 ? (total / frames) / lbs : 0.0;
}

void BM_LbsFloat(benchmark::State& state) {
  const Setup& s = GetSetup(static_cast<int>(state.range(0)));
  std::vector<float> U(3 * s.n);
  Run(state, s, [&] {
    const std::vector<float> T34 = ToRowMajor34(s.M);
    LbsFloat(s.V.data(), s.n, s.W.joints.data(), s.W.weights.data(), kK, T34.data(), U.data());
    benchmark::DoNotOptimize(U.data());
  });
}

void BM_DqsFloat(benchmark::State& state) {
  const Setup& s = GetSetup(static_cast<int>(state.range(0)));
  std::vector<float> U(3 * s.n);
  Run(state, s, [&] {
    const DqsTransformsFloat P = PrepareDqsFloat(s.M);
    DqsFloat(s.V.data(), s.n, s.W.joints.data(), s.W.weights.data(), kK, P, U.data());
    benchmark::DoNotOptimize(U.data());
  });
}

void BM_SwingTwistFloat(benchmark::State& state) {
  const Setup& s = GetSetup(static_cast<int>(state.range(0)));
  std::vector<float> U(3 * s.n);
  Run(state, s, [&] {
    const SwingTwistFrameFloat P = PrepareSwingTwistFloat(s.frames, s.M);
    SwingTwistFloat(s.V.data(), s.n, s.st_weights, P, U.data());
    benchmark::DoNotOptimize(U.data());
  });
}

void BM_StbsFloat(benchmark::State& state) {
  const Setup& s = GetSetup(static_cast<int>(state.range(0)));
  const bool dqs = state.range(1) != 0;
  std::vector<float> U(3 * s.n);
  Run(state, s, [&] {
    const StbsFrameFloat P = PrepareStbsFloat(s.bones, s.M, s.stretch_twist);
    StbsFloat(s.V.data(), s.n, s.W, s.endpoint, P, dqs, U.data());
    benchmark::DoNotOptimize(U.data());
  });
}

BENCHMARK(BM_LbsFloat)->ArgName("joints")->Arg(2)->Arg(8)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SwingTwistFloat)->ArgName("joints")->Arg(2)->Arg(8)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StbsFloat)
    ->ArgNames({"joints", "dqs"})
    ->Args({2, 0})->Args({8, 0})->Args({2, 1})->Args({8, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DqsFloat)->ArgName("joints")->Arg(2)->Arg(8)->Unit(benchmark::kMicrosecond);

// ---- a real character ------------------------------------------------------------------------
// CesiumMan (shared data, 3,273 vertices, 19 deforming joints) with its own skeleton, inverse bind
// matrices and weights (k = 4, the file's vertex order), every joint turned up to 0.8 rad about a
// random axis by forward kinematics: its skinning transforms carry the float32 rounding of the
// file's matrices, as the server's do. Deformer weights are the file's, swing and twist weights
// and endpoint weights each vertex's position along its joint's bone; STBS stretches no bone and
// twists every bone. range(0): 0 LBS, 1 DQS, 2 swing/twist, 3 STBS over LBS, 4 STBS over DQS,
// 5 and 6 the same through the weights' DQS vertex order (the server's path; LaneEndpointWeights).
// Counters: the median frame's CPU time (per-frame preparation included) over the median LBS frame
// (vs_lbs) and the median DQS frame (vs_dqs, DQS-based ones), timed alternately in the same loop.
// Skipped, with the reason, when the data is missing (outside CI).
const Setup& GetCharacter() {
  static Setup* s = nullptr;
  if (s != nullptr) return *s;
  s = new Setup;
  absl::StatusOr<GltfCharacter> g = ReadGltf(std::string(SKINNING_DATA_DIR) + "/gltf/CesiumMan/CesiumMan.glb");
  if (!g.ok()) {
    s->error = std::string(g.status().message());
    return *s;
  }
  const Skeleton& sk = g->skeleton;
  const int joints = sk.size();
  s->n = g->mesh.V.rows();
  s->V.assign(g->mesh.V.data(), g->mesh.V.data() + 3 * s->n);
  s->W = g->weights;
  const std::vector<JointHandle> handles = *JointHandles(sk);
  s->frames = JointFrames(sk, handles);
  s->bones = StbsBones(handles);
  Eigen::MatrixXd D = Eigen::MatrixXd::Zero(s->n, joints), E = Eigen::MatrixXd::Zero(s->n, joints);
  for (int i = 0; i < s->n; ++i)
    for (int c = 0; c < s->W.k(); ++c) {
      const int j = s->W.joints(i, c);
      D(i, j) += s->W.weights(i, c);
      const StbsBone& b = s->bones[j];
      const Eigen::Vector3d d = b.b - b.a;
      if (b.valid && d.squaredNorm() > 0)
        E(i, j) = std::clamp((g->mesh.V.row(i).transpose() - b.a).dot(d) / d.squaredNorm(), 0.0, 1.0);
    }
  s->st_weights = MakeSwingTwistWeights(D, E, E, kK);
  s->endpoint = AlignEndpointWeights(s->W, E);
  s->lanes = PrepareDqsLaneOrder(s->W);
  s->endpoint_lanes = LaneEndpointWeights(s->W, s->endpoint, s->lanes);
  std::mt19937 gen(11);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Pose pose = RestPose(sk);
  for (int j = 0; j < joints; ++j) {
    pose.local[j].rotation = Eigen::AngleAxisd(0.8 * u(gen), Eigen::Vector3d(u(gen), u(gen), u(gen)).normalized());
    s->stretch_twist.stretch.push_back(1.0);
    s->stretch_twist.twist_a.push_back(0.5 * u(gen));
    s->stretch_twist.twist_b.push_back(u(gen));
  }
  s->M = *SkinningTransforms(sk, *TopologicalOrder(sk), pose);
  return *s;
}

// One frame of deformer `kind` (as range(0) above) on the character into U.
void CharacterFrame(const Setup& s, int kind, float* U) {
  switch (kind) {
    case 0: {
      const std::vector<float> T34 = ToRowMajor34(s.M);
      LbsFloat(s.V.data(), s.n, s.W.joints.data(), s.W.weights.data(), s.W.k(), T34.data(), U);
      break;
    }
    case 1:
      DqsFloat(s.V.data(), s.n, s.W.joints.data(), s.W.weights.data(), s.W.k(), PrepareDqsFloat(s.M), U);
      break;
    case 2:
      SwingTwistFloat(s.V.data(), s.n, s.st_weights, PrepareSwingTwistFloat(s.frames, s.M), U);
      break;
    case 3:
    case 4:
      StbsFloat(s.V.data(), s.n, s.W, s.endpoint, PrepareStbsFloat(s.bones, s.M, s.stretch_twist), kind == 4, U);
      break;
    default:  // through the vertex order (the server's path where the order pays, as here)
      StbsFloat(s.V.data(), s.lanes, s.endpoint_lanes, PrepareStbsFloat(s.bones, s.M, s.stretch_twist), kind == 6, U);
  }
}

double Median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// Each iteration times one frame of the deformer and, right before it, one LBS frame (and one DQS
// frame for the DQS-based ones), so that the ratios compare frames of the same moment: a frame
// takes tens of µs, and this machine's speed drifts over seconds. Time is the deformer's frame.
void BM_CharacterFloat(benchmark::State& state) {
  const Setup& s = GetCharacter();
  if (!s.error.empty()) {
    state.SkipWithError(s.error.c_str());
    return;
  }
  const int kind = static_cast<int>(state.range(0));
  if (kind >= 5 && s.lanes.empty()) {
    state.SkipWithError("PrepareDqsLaneOrder keeps the file order for this character");
    return;
  }
  const bool on_dqs = kind == 1 || kind == 4 || kind == 6;
  std::vector<float> U(3 * s.n);
  std::vector<double> times, lbs, dqs;
  auto timed = [&](int k) {
    const double t0 = ThreadSeconds();
    CharacterFrame(s, k, U.data());
    benchmark::DoNotOptimize(U.data());
    return ThreadSeconds() - t0;
  };
  for (auto _ : state) {
    lbs.push_back(timed(0));
    if (on_dqs) dqs.push_back(timed(1));
    times.push_back(timed(kind));
    state.SetIterationTime(times.back());
  }
  state.SetItemsProcessed(static_cast<int64_t>(times.size()) * s.n);
  if (times.empty()) return;
  const double median = Median(times);
  state.counters["vs_lbs"] = median / Median(std::move(lbs));
  if (on_dqs) state.counters["vs_dqs"] = median / Median(std::move(dqs));
}
BENCHMARK(BM_CharacterFloat)->ArgName("deformer")->DenseRange(0, 6)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace skinning
