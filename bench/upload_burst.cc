// A burst of glTF uploads at once against the real server binary: the server's peak memory
// (VmHWM) and the burst's wall time with each --max_gltf_reads, and how many uploads were stored
// or refused. The file is a flat skinned grid (tests/support/grid_glb.h), sent by gRPC
// (CreateRig with the file's bytes) from one client thread per upload.
//
//   ./build/bench/upload_burst [--side=1000] [--uploads=8] [--reads=0,4,2,1] [--queue=-1]
//
// side 1000 is 1M vertices, 44 MB. --queue=-1 lets every upload wait (--gltf_read_queue =
// uploads), so all are stored; --queue=0 refuses what finds every reader busy.
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/spawned_server.h"
#include "client/client.h"
#include "core/util/process_stats.h"
#include "tests/support/grid_glb.h"

ABSL_FLAG(int, side, 1000, "the grid has side × side vertices");
ABSL_FLAG(int, uploads, 8, "uploads sent at once");
ABSL_FLAG(std::string, reads, "0,4,2,1", "--max_gltf_reads values to run (0 = no limit)");
ABSL_FLAG(int, queue, -1, "--gltf_read_queue (-1 = as many as the uploads)");

namespace skinning {
namespace {

int RunBursts() {
  const int uploads = absl::GetFlag(FLAGS_uploads);
  const int queue = absl::GetFlag(FLAGS_queue) < 0 ? uploads : absl::GetFlag(FLAGS_queue);
  const std::string grid = testing::GridGlb(absl::GetFlag(FLAGS_side));
  std::printf("%d uploads at once of a %d-vertex grid (%.1f MB), --gltf_read_queue=%d\n", uploads,
              absl::GetFlag(FLAGS_side) * absl::GetFlag(FLAGS_side), grid.size() / 1e6, queue);
  std::printf("%-16s %14s %10s %8s %8s\n", "max_gltf_reads", "peak RSS MB", "wall s", "stored", "refused");
  int failed = 0;  // uploads that neither were stored nor refused for the limit
  for (const std::string& r : std::vector<std::string>(absl::StrSplit(absl::GetFlag(FLAGS_reads), ','))) {
    int reads = 0;
    if (!absl::SimpleAtoi(r, &reads)) return 2;
    SpawnedServer server;
    if (absl::Status s = server.Start(SKINNING_SERVER_BINARY, {absl::StrCat("--max_gltf_reads=", reads),
                                                               absl::StrCat("--gltf_read_queue=", queue)});
        !s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    std::vector<absl::Status> results(uploads);
    const auto t0 = std::chrono::steady_clock::now();
    {
      std::vector<std::thread> senders;
      for (int k = 0; k < uploads; ++k) {
        senders.emplace_back([&, k] {
          ClientOptions o;
          o.target = absl::StrCat("127.0.0.1:", server.port());
          o.deadline = std::chrono::seconds(600);
          Client client(o);
          results[k] = client.CreateRigFromGltf(grid).status();
        });
      }
      for (std::thread& t : senders) t.join();
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int stored = 0, refused = 0;
    for (const absl::Status& s : results) {
      if (s.ok()) {
        ++stored;
      } else if (absl::IsResourceExhausted(s)) {
        ++refused;
      } else {
        std::fprintf(stderr, "upload failed: %s\n", s.ToString().c_str());
        ++failed;
      }
    }
    std::printf("%-16s %14.0f %10.2f %8d %8d\n", reads == 0 ? "0 (no limit)" : r.c_str(),
                PeakResidentBytes(server.pid()) / 1048576.0, wall, stored, refused);
    std::fflush(stdout);
  }
  return failed > 0 ? 1 : 0;
}

}  // namespace
}  // namespace skinning

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return skinning::RunBursts();
}
