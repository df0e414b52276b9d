// Pose round-trip latency over loopback: a real server (in this process, on 127.0.0.1) and the
// real client library. Prints p50/p99 for a ~10k-vertex, 20-joint character returning vertices
// versus transforms only, one call at a time.
//
//   ./build/bench/pose_latency [--calls=N] [--vertices=N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/bench_rigs.h"
#include "bench/bench_stats.h"
#include "client/client.h"
#include "server/convert/convert.h"
#include "server/server.h"

namespace skinning {
namespace {

int Run(int calls, int vertices) {
  const std::string store = std::filesystem::temp_directory_path() / ("pose-latency-" + std::to_string(getpid()));
  ServerOptions options;
  options.address = "127.0.0.1:0";
  options.store_dir = store;
  auto server = SkinningServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", std::string(server.status().message()).c_str());
    return 1;
  }
  ClientOptions co;
  co.target = "127.0.0.1:" + std::to_string((*server)->port());
  Client client(co);
  const int segments = 100, rings = std::max(2, vertices / segments), joints = 20;
  const Rig rig = MakeChainTube(rings, segments, joints);
  auto reg = client.CreateRig(RigToProto(rig));
  if (!reg.ok()) {
    std::fprintf(stderr, "%s\n", std::string(reg.status().message()).c_str());
    return 1;
  }
  std::printf("Pose round trip over loopback, one call at a time: %d vertices, %d joints, %d calls each\n",
              rings * segments, joints, calls);
  std::printf("%-28s %10s %10s %10s %12s\n", "output", "p50 (us)", "p99 (us)", "mean (us)", "calls/s");
  for (int mode = 0; mode < 3; ++mode) {
    v1::PoseRequest req;
    req.set_rig(reg->rig().name());
    req.set_deformer(mode == 2 ? v1::DEFORMER_DQS : v1::DEFORMER_UNSPECIFIED);
    if (mode == 0) req.mutable_outputs()->set_transforms(true);
    else req.mutable_outputs()->set_vertices(true);
    std::vector<double> us;
    us.reserve(calls);
    for (int c = 0; c < calls + calls / 10; ++c) {
      Pose pose = RestPose(rig.skeleton);
      for (int j = 1; j < joints; ++j)
        pose.local[j].rotation = Eigen::AngleAxisd(0.3 * std::sin(0.01 * c + j), Eigen::Vector3d::UnitZ());
      *req.mutable_pose() = PoseToProto(pose);
      const auto t0 = std::chrono::steady_clock::now();
      auto posed = client.Pose(req);
      const auto t1 = std::chrono::steady_clock::now();
      if (!posed.ok()) {
        std::fprintf(stderr, "%s\n", std::string(posed.status().message()).c_str());
        return 1;
      }
      if (c >= calls / 10) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());  // after warm-up
    }
    double mean = 0;
    for (double u : us) mean += u;
    mean /= us.size();
    const char* name = mode == 0 ? "transforms only (LBS)" : mode == 1 ? "vertices (LBS)" : "vertices (DQS)";
    std::printf("%-28s %10.1f %10.1f %10.1f %12.0f\n", name, Percentile(us, 0.5), Percentile(us, 0.99), mean, 1e6 / mean);
  }
  (*server)->Shutdown(std::chrono::milliseconds(100));
  server->reset();
  std::filesystem::remove_all(store);
  return 0;
}

}  // namespace
}  // namespace skinning

int main(int argc, char** argv) {
  int calls = 2000, vertices = 10000;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--calls=", 8) == 0) calls = std::atoi(argv[i] + 8);
    else if (std::strncmp(argv[i], "--vertices=", 11) == 0) vertices = std::atoi(argv[i] + 11);
    else {
      std::fprintf(stderr, "usage: pose_latency [--calls=N] [--vertices=N]\n");
      return 2;
    }
  }
  return skinning::Run(calls, vertices);
}
