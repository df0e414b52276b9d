// Soak: a mixed load against one real server for a set time, printing the server's resident
// memory, open file descriptors and threads every 10 s (from /proc), then the slope of each
// after the warm-up. A slope that does not flatten is a leak to find.
//
//   ./build/bench/soak --minutes=15 --warmup_s=300   # 10 minutes measured after 5 of warm-up
//   ./build/bench/soak --minutes=1 --warmup_s=20
//
// The load, one client thread each, as fast as the server answers: Pose (LBS, DQS, PSD in turn),
// PoseClip of 16 frames, pose sessions of 50 frames (opened and closed again and again), FAST
// (unary Solve and sessions of 20 frames), bakes (bone heat with a new coefficient each time,
// so each is computed and stored; watched to the end) and example edits (create, pose with PSD,
// delete). The server runs with small caches (--cache_mb=64 --bake_cache_mb=16
// --psd_cache_mb=32) so that they fill during the warm-up instead of through the whole run.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/bench_rigs.h"
#include "bench/spawned_server.h"
#include "client/client.h"
#include "core/rig/pose.h"
#include "core/util/process_stats.h"
#include "server/convert/convert.h"

ABSL_FLAG(double, minutes, 10, "how long the load runs");
ABSL_FLAG(double, warmup_s, 60, "seconds left out of the slopes (caches filling, pools growing)");
ABSL_FLAG(double, interval_s, 10, "seconds between samples");
ABSL_FLAG(std::string, only, "", "run one part of the load: pose, clip, session, fast, bake or examples (to find a leak)");
ABSL_FLAG(std::string, server_binary, SKINNING_SERVER_BINARY, "the skinning-server binary to start");

namespace skinning {
namespace {

struct Sample {
  double t = 0;
  double rss_mb = 0;
  int fds = 0;
  int threads = 0;
  long calls = 0, errors = 0;
};

Sample Measure(pid_t pid) {
  Sample s;
  const int64_t rss = ResidentBytes(pid);
  s.rss_mb = rss < 0 ? -1 : static_cast<double>(rss) / 1048576.0;
  s.threads = ThreadCount(pid);
  s.fds = OpenDescriptorCount(pid);
  return s;
}

// Least-squares slope of get(sample) against t (per minute).
template <typename Get>
double SlopePerMinute(const std::vector<Sample>& samples, Get get) {
  const size_t n = samples.size();
  if (n < 2) return 0;
  double st = 0, sy = 0, stt = 0, sty = 0;
  for (const Sample& s : samples) {
    const double y = get(s);
    st += s.t;
    sy += y;
    stt += s.t * s.t;
    sty += s.t * y;
  }
  const double denominator = n * stt - st * st;
  return denominator > 0 ? 60.0 * (n * sty - st * sy) / denominator : 0;
}

v1::Pose Bend(const Rig& rig, double radians, int joint) {
  Pose pose = RestPose(rig.skeleton);
  for (int j = 1; j < rig.skeleton.size(); ++j)
    pose.local[j].rotation = Eigen::AngleAxisd(j == joint ? radians : 0.3 * radians, Eigen::Vector3d::UnitZ());
  return PoseToProto(pose);
}

int Run() {
  SpawnedServer server;
  if (absl::Status s = server.Start(absl::GetFlag(FLAGS_server_binary), {"--cache_mb=64", "--bake_cache_mb=16", "--psd_cache_mb=32"});
      !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  ClientOptions options;
  options.target = server.address();
  options.deadline = std::chrono::seconds(60);
  Client setup(options);
  const Rig rig = MakeChainTube(40, 50, 8);  // 2,000 vertices, 8 joints
  Rig bare = MakeClosedChainTube(24, 16, 4);
  bare.sparse_weights.reset();
  bare.dense_weights.reset();
  auto created = setup.CreateRig(RigToProto(rig));
  auto created_bare = setup.CreateRig(RigToProto(bare));
  if (!created.ok() || !created_bare.ok()) {
    std::fprintf(stderr, "register: %s %s\n", created.status().ToString().c_str(),
                 created_bare.status().ToString().c_str());
    return 1;
  }
  const std::string rig_name = created->rig().name(), bare_name = created_bare->rig().name();
  v1::BakeOptions fast_options;
  fast_options.mutable_fast_model();
  auto fast_started = setup.StartBake(rig_name, fast_options);
  if (!fast_started.ok()) return std::fprintf(stderr, "%s\n", fast_started.status().ToString().c_str()), 1;
  auto fast_done = setup.WatchBake(fast_started->bake().name(), [](const v1::Bake&) { return true; });
  if (!fast_done.ok() || fast_done->metadata().state() != v1::BAKE_STATE_SUCCEEDED)
    return std::fprintf(stderr, "the FAST model bake did not succeed\n"), 1;
  const std::string fast_bake = fast_done->name();
  // Two examples that stay (so PSD always has a model), and edits on top of them.
  for (int e = 0; e < 2; ++e) {
    v1::CreateExampleRequest req;
    req.set_parent(rig_name);
    req.set_example_id(absl::StrCat("keep-", e));
    *req.mutable_example()->mutable_pose() = Bend(rig, 0.5 + 0.4 * e, 4);
    for (int i = 0; i < rig.mesh.V.rows(); ++i)
      for (int a = 0; a < 3; ++a) req.mutable_example()->add_positions(static_cast<float>(rig.mesh.V(i, a)));
    if (auto r = setup.CreateExample(req); !r.ok()) return std::fprintf(stderr, "%s\n", r.status().ToString().c_str()), 1;
  }

  std::atomic<bool> stop{false};
  std::atomic<long> calls{0}, errors{0};
  auto count = [&](const absl::Status& s) {
    ++calls;
    if (!s.ok()) {
      if (errors++ < 10) std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
    }
  };
  std::vector<std::thread> load;
  const std::string only = absl::GetFlag(FLAGS_only);
  auto wanted = [&](const char* kind) { return only.empty() || only == kind; };
  if (wanted("pose")) load.emplace_back([&] {  // Pose with LBS, DQS and PSD in turn
    Client c(options);
    const v1::Deformer deformers[] = {v1::DEFORMER_UNSPECIFIED, v1::DEFORMER_DQS, v1::DEFORMER_PSD_LBS};
    for (int i = 0; !stop; ++i) {
      v1::PoseRequest req;
      req.set_rig(rig_name);
      *req.mutable_pose() = Bend(rig, 0.01 * (i % 100), 1 + i % 7);
      req.set_deformer(deformers[i % 3]);
      req.mutable_outputs()->set_vertices(true);
      count(c.Pose(req).status());
    }
  });
  if (wanted("clip")) load.emplace_back([&] {  // PoseClip, 16 frames
    Client c(options);
    for (int i = 0; !stop; ++i) {
      v1::PoseClipRequest req;
      req.set_rig(rig_name);
      for (int f = 0; f < 16; ++f) *req.add_poses() = Bend(rig, 0.05 * f, 1 + (i + f) % 7);
      req.mutable_outputs()->set_vertices(true);
      count(c.PoseClip(req).status());
    }
  });
  if (wanted("session")) load.emplace_back([&] {  // pose sessions of 50 frames
    Client c(options);
    for (int i = 0; !stop; ++i) {
      v1::PoseOutputs outputs;
      outputs.set_vertices(true);
      auto session = c.StartPoseSession(rig_name, i % 2 ? v1::DEFORMER_DQS : v1::DEFORMER_UNSPECIFIED, outputs);
      if (!session.ok()) {
        count(session.status());
        continue;
      }
      for (int f = 0; f < 50 && !stop; ++f) count((*session)->Step(Bend(rig, 0.02 * f, 1 + f % 7)).status());
      count((*session)->Close());
    }
  });
  if (wanted("fast")) load.emplace_back([&] {  // FAST: a Solve, then a session of 20 frames
    Client c(options);
    for (int i = 0; !stop; ++i) {
      v1::SolveRequest req;
      req.set_bake(fast_bake);
      v1::HandleConstraint* h = req.add_constraints();
      h->set_joint(7);
      h->set_kind(v1::HandleConstraint::KIND_POSITION);
      for (float x : {8.75f, 0.5f + 0.01f * (i % 50), 0.0f}) h->add_target(x);
      count(c.Solve(req).status());
      auto session = c.StartSolveSession(fast_bake);
      if (!session.ok()) {
        count(session.status());
        continue;
      }
      for (int f = 0; f < 20 && !stop; ++f) {
        v1::SolveSessionRequest frame;
        *frame.mutable_constraints() = req.constraints();
        frame.mutable_constraints(0)->set_target(1, 0.5f + 0.05f * f);
        count((*session)->Step(frame).status());
      }
      count((*session)->Close());
    }
  });
  if (wanted("bake")) load.emplace_back([&] {  // bakes: a new one each time, watched to the end
    Client c(options);
    for (int i = 0; !stop; ++i) {
      v1::BakeOptions o;
      o.mutable_bone_heat()->set_heat_coefficient(1.0 + 0.001 * i);
      auto started = c.StartBake(bare_name, o);
      if (!started.ok()) {
        count(started.status());
        continue;
      }
      auto done = c.WatchBake(started->bake().name(), [](const v1::Bake&) { return true; });
      count(done.status());
      if (done.ok() && done->metadata().state() == v1::BAKE_STATE_SUCCEEDED)
        count(c.GetWeights(done->name()).status());
    }
  });
  if (wanted("examples")) load.emplace_back([&] {  // example edits: create, pose with PSD, delete
    Client c(options);
    for (int i = 0; !stop; ++i) {
      v1::CreateExampleRequest req;
      req.set_parent(rig_name);
      req.set_example_id(absl::StrCat("edit-", i % 4));
      *req.mutable_example()->mutable_pose() = Bend(rig, 1.2 + 0.01 * (i % 4), 2);
      for (int v = 0; v < rig.mesh.V.rows(); ++v)
        for (int a = 0; a < 3; ++a)
          req.mutable_example()->add_positions(static_cast<float>(rig.mesh.V(v, a) * (1.0 + 0.001 * (i % 7))));
      auto made = c.CreateExample(req);
      count(made.status());
      v1::PoseRequest pose;
      pose.set_rig(rig_name);
      *pose.mutable_pose() = Bend(rig, 1.1, 2);
      pose.set_deformer(v1::DEFORMER_PSD_DQS);
      pose.mutable_outputs()->set_vertices(true);
      count(c.Pose(pose).status());
      if (made.ok()) count(c.DeleteExample(made->example().name()));
    }
  });

  const double total_s = 60 * absl::GetFlag(FLAGS_minutes), interval = absl::GetFlag(FLAGS_interval_s);
  const auto start = std::chrono::steady_clock::now();
  std::vector<Sample> samples;
  std::printf("%8s %10s %6s %8s %12s %8s\n", "t (s)", "RSS (MiB)", "fds", "threads", "calls/s", "errors");
  long last_calls = 0;
  for (int k = 0;; ++k) {
    const auto at = start + std::chrono::milliseconds(static_cast<int64_t>(1000 * interval * k));
    std::this_thread::sleep_until(at);
    Sample s = Measure(server.pid());
    s.t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    s.calls = calls;
    s.errors = errors;
    samples.push_back(s);
    std::printf("%8.0f %10.1f %6d %8d %12.0f %8ld\n", s.t, s.rss_mb, s.fds, s.threads,
                k ? (s.calls - last_calls) / interval : 0.0, s.errors);
    std::fflush(stdout);
    last_calls = s.calls;
    if (s.t >= total_s) break;
  }
  stop = true;
  for (std::thread& t : load) t.join();

  std::vector<Sample> after;
  for (const Sample& s : samples)
    if (s.t >= absl::GetFlag(FLAGS_warmup_s)) after.push_back(s);
  if (after.size() < 3) {
    std::printf("too few samples after the warm-up for slopes\n");
    return 0;
  }
  const auto rss_of = [](const Sample& s) { return s.rss_mb; };
  const auto fds_of = [](const Sample& s) { return double(s.fds); };
  const auto threads_of = [](const Sample& s) { return double(s.threads); };
  auto range = [&](auto get) {
    double lo = 1e300, hi = -1e300;
    for (const Sample& s : after) lo = std::min(lo, get(s)), hi = std::max(hi, get(s));
    return std::pair<double, double>(lo, hi);
  };
  const double rss = SlopePerMinute(after, rss_of), fds = SlopePerMinute(after, fds_of),
               threads = SlopePerMinute(after, threads_of);
  const auto [rss_lo, rss_hi] = range(rss_of);
  const auto [fd_lo, fd_hi] = range(fds_of);
  const auto [th_lo, th_hi] = range(threads_of);
  std::printf("\nafter %.0f s of warm-up (%zu samples): %ld calls, %ld errors\n", absl::GetFlag(FLAGS_warmup_s),
              after.size(), samples.back().calls, samples.back().errors);
  // The same slopes over each half of the window: a leak keeps its slope, a cache or an
  // allocator settling flattens (second half near zero).
  const size_t mid = after.size() / 2;
  const std::vector<Sample> first(after.begin(), after.begin() + mid + 1), second(after.begin() + mid, after.end());
  auto halves = [&](auto get) {
    return absl::StrFormat("(halves %+.2f, %+.2f)", SlopePerMinute(first, get), SlopePerMinute(second, get));
  };
  std::printf("  RSS      %7.1f … %7.1f MiB, slope %+.2f MiB/min %s\n", rss_lo, rss_hi, rss, halves(rss_of).c_str());
  std::printf("  fds      %7.0f … %7.0f,     slope %+.2f /min     %s\n", fd_lo, fd_hi, fds, halves(fds_of).c_str());
  std::printf("  threads  %7.0f … %7.0f,     slope %+.2f /min     %s\n", th_lo, th_hi, threads,
              halves(threads_of).c_str());
  return 0;
}

}  // namespace
}  // namespace skinning

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return skinning::Run();
}
