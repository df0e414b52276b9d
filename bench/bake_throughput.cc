// Bake throughput through the shared Redis queue: a real redis-server, one `api` skinning-server
// and 1, 2, ... `worker` servers on this machine; --bakes different rigs (closed chain tubes of
// different lengths) submitted at once through the api, then waited for. Prints, per worker
// count: bakes per minute (first submit to last end) and the queue-to-start latency (each
// bake's start_time − create_time) p50 / p99 over all of them (most wait behind the others) and
// for the first one (an empty queue, idle workers), all from the bakes' own metadata.
//
//   ./build/bench/bake_throughput [--workers=1,2] [--bakes=12] [--resolution=64] [--method=bbw]
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/bench_rigs.h"
#include "bench/bench_stats.h"
#include "bench/spawned_server.h"
#include "client/client.h"
#include "google/protobuf/util/time_util.h"
#include "server/convert/convert.h"

ABSL_FLAG(std::string, server_binary, SKINNING_SERVER_BINARY, "the skinning-server binary");
ABSL_FLAG(std::string, redis_server, "/usr/bin/redis-server", "the redis-server binary");
ABSL_FLAG(std::string, workers, "1,2", "worker process counts to run, comma-separated");
ABSL_FLAG(int, bakes, 12, "bakes submitted at once per run (different rigs)");
ABSL_FLAG(int, resolution, 64, "voxel resolution of the bakes");
ABSL_FLAG(std::string, method, "bbw", "bbw, bone_heat or geodesic_voxel");

namespace skinning {
namespace {

using google::protobuf::util::TimeUtil;

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// redis-server on a free loopback port, no persistence, killed when destroyed.
class Redis {
 public:
  explicit Redis(const std::string& binary) : port_(FreePort()) {
    pid_ = fork();
    if (pid_ == 0) {
      const int null = open("/dev/null", O_WRONLY);
      dup2(null, STDOUT_FILENO);
      dup2(null, STDERR_FILENO);
      const std::string port = std::to_string(port_);
      execl(binary.c_str(), binary.c_str(), "--port", port.c_str(), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning", static_cast<char*>(nullptr));
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  ~Redis() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  int port_;
  pid_t pid_ = -1;
};

v1::BakeOptions Options() {
  v1::BakeOptions o;
  const std::string m = absl::GetFlag(FLAGS_method);
  if (m == "bone_heat") o.mutable_bone_heat();
  else if (m == "geodesic_voxel") o.mutable_geodesic_voxel();
  else o.mutable_bbw();
  o.mutable_domain()->set_voxel_resolution(absl::GetFlag(FLAGS_resolution));
  return o;
}

int Run(int workers) {
  Redis redis(absl::GetFlag(FLAGS_redis_server));
  const std::string binary = absl::GetFlag(FLAGS_server_binary);
  const std::string redis_flag = "--redis=" + redis.address();
  SpawnedServer api;
  if (absl::Status s = api.Start(binary, {redis_flag, "--role=api"}); !s.ok()) {
    std::fprintf(stderr, "bake_throughput: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  std::vector<std::unique_ptr<SpawnedServer>> pool;
  for (int w = 0; w < workers; ++w) {
    pool.push_back(std::make_unique<SpawnedServer>());
    if (absl::Status s = pool.back()->Start(binary, {redis_flag, "--role=worker", "--bake_workers=1"}); !s.ok()) {
      std::fprintf(stderr, "bake_throughput: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  ClientOptions o;
  o.target = api.address();
  o.deadline = std::chrono::seconds(600);
  Client client(o);
  const int n = absl::GetFlag(FLAGS_bakes);
  std::vector<std::string> rigs;
  for (int i = 0; i < n; ++i) {
    absl::StatusOr<v1::CreateRigResponse> r = client.CreateRig(RigToProto(MakeClosedChainTube(21, 24, 4, 1.0 + 0.01 * i)));
    if (!r.ok()) {
      std::fprintf(stderr, "bake_throughput: %s\n", r.status().ToString().c_str());
      return 1;
    }
    rigs.push_back(r->rig().name());
  }
  std::vector<std::string> names;
  for (const std::string& rig : rigs) {
    absl::StatusOr<v1::StartBakeResponse> s = client.StartBake(rig, Options());
    if (!s.ok()) {
      std::fprintf(stderr, "bake_throughput: %s\n", s.status().ToString().c_str());
      return 1;
    }
    names.push_back(s->bake().name());
  }
  std::vector<double> waits;
  double idle_pickup = 0;  // the first bake's wait: the queue was empty and the workers idle
  int64_t first_create = INT64_MAX, last_end = 0;
  int failed = 0;
  for (const std::string& name : names) {
    absl::StatusOr<v1::Bake> done = client.WatchBake(name, [](const v1::Bake&) { return true; });
    if (!done.ok() || done->metadata().state() != v1::BAKE_STATE_SUCCEEDED) {
      ++failed;
      continue;
    }
    const auto& m = done->metadata();
    const int64_t create = TimeUtil::TimestampToNanoseconds(m.create_time());
    const int64_t start = TimeUtil::TimestampToNanoseconds(m.start_time());
    const int64_t end = TimeUtil::TimestampToNanoseconds(m.end_time());
    first_create = std::min(first_create, create);
    last_end = std::max(last_end, end);
    waits.push_back((start - create) * 1e-6);
    if (&name == &names.front()) idle_pickup = waits.back();
  }
  const double seconds = (last_end - first_create) * 1e-9;
  std::printf("%7d %7d %7d %10.1f %12.1f %12.1f %12.1f %12.1f\n", workers, n, failed, seconds,
              seconds > 0 ? 60.0 * (n - failed) / seconds : 0.0, idle_pickup, Percentile(waits, 0.5),
              Percentile(waits, 0.99));
  std::fflush(stdout);
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace skinning

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  std::printf("bake throughput through the Redis queue: %s, resolution %d, %u hardware threads shared by everything\n",
              absl::GetFlag(FLAGS_method).c_str(), absl::GetFlag(FLAGS_resolution), std::thread::hardware_concurrency());
  std::printf("%7s %7s %7s %10s %12s %12s %12s %12s\n", "workers", "bakes", "failed", "seconds", "bakes/min",
              "idle pickup", "wait p50 ms", "wait p99 ms");
  int rc = 0;
  for (const std::string& w : std::vector<std::string>(absl::StrSplit(absl::GetFlag(FLAGS_workers), ',')))
    rc |= skinning::Run(std::stoi(w));
  return rc;
}
