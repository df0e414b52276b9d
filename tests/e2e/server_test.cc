// End-to-end tests of the real skinning-server binary on a loopback port.
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include "client/client.h"
#include "core/util/blas_kernels.h"
#include "server/convert/convert.h"
#include "tests/support/data.h"
#include "tests/support/fixtures.h"
#include "tests/support/health_check.h"
#include "tests/support/http_client.h"
#include "tests/support/long_fast_frame.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::BakeLongFastModel;
using ::skinning::testing::BinaryPath;
using ::skinning::testing::LongFastFrame;
using ::skinning::testing::LongFastModel;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::MakeTwoBoneTube;
using ::skinning::testing::RunCommand;
using ::skinning::testing::ServerProcess;
using ::skinning::testing::WebSocketClient;
using ::testing::HasSubstr;
using ::testing::Not;

ClientOptions Options(const ServerProcess& server, int deadline_ms = 10000) {
  ClientOptions o;
  o.target = server.address();
  o.deadline = std::chrono::milliseconds(deadline_ms);
  return o;
}

v1::PoseRequest VerticesRequest(const std::string& rig_id, const v1::Pose& pose, v1::Deformer method) {
  v1::PoseRequest req;
  req.set_rig(rig_id);
  *req.mutable_pose() = pose;
  req.set_deformer(method);
  req.mutable_outputs()->set_vertices(true);
  return req;
}

// Elbow of the tube bent by `degrees` about z.
v1::Pose BentPose(const Rig& rig, double degrees) {
  Pose pose = RestPose(rig.skeleton);
  pose.local[1].rotation = Eigen::AngleAxisd(degrees * M_PI / 180, Eigen::Vector3d::UnitZ());
  return PoseToProto(pose);
}

TEST(ServerEndToEnd, RegisteringTwiceGivesTheSameId) {
  ServerProcess server(MakeTempDir("store"));
  Client client(Options(server));
  const Rig rig = MakeTwoBoneTube();
  v1::Rig proto = RigToProto(rig);
  auto first = client.CreateRig(proto);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->created());
  EXPECT_THAT(first->rig().name(), ::testing::MatchesRegex("rigs/rig-[0-9a-f]{32}"));
  proto.set_display_name("another label");  // the display name is not part of the content address
  auto second = client.CreateRig(proto);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->rig().name(), first->rig().name());
  EXPECT_FALSE(second->created());
  // A different mesh is a different rig.
  proto.mutable_mesh()->set_positions(0, proto.mesh().positions(0) + 0.5f);
  auto third = client.CreateRig(proto);
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_NE(third->rig().name(), first->rig().name());
  auto list = client.ListRigs();
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 2u);
}

TEST(ServerEndToEnd, PosesTheSameAfterRestartOnTheSameStore) {
  const std::string store = MakeTempDir("store");
  const Rig rig = MakeTwoBoneTube();
  std::string id;
  v1::PosedFrame before;
  {
    ServerProcess server(store);
    Client client(Options(server));
    auto reg = client.CreateRig(RigToProto(rig));
    ASSERT_TRUE(reg.ok()) << reg.status();
    id = reg->rig().name();
    auto posed = client.Pose(VerticesRequest(id, BentPose(rig, 60), v1::DEFORMER_DQS));
    ASSERT_TRUE(posed.ok()) << posed.status();
    before = *posed;
    EXPECT_EQ(server.Stop(SIGTERM), 0) << server.Output();
  }
  ServerProcess server(store);
  Client client(Options(server));
  auto got = client.GetRig(id, v1::RIG_VIEW_FULL);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->vertex_count(), rig.mesh.V.rows());
  // A view number the API does not know is refused (before, it was served as the default view).
  auto unknown_view = client.GetRig(id, static_cast<v1::RigView>(5));
  EXPECT_EQ(unknown_view.status().code(), absl::StatusCode::kInvalidArgument) << unknown_view.status();
  auto posed = client.Pose(VerticesRequest(id, BentPose(rig, 60), v1::DEFORMER_DQS));
  ASSERT_TRUE(posed.ok()) << posed.status();
  ASSERT_EQ(posed->vertices_size(), before.vertices_size());
  for (int i = 0; i < posed->vertices_size(); ++i) ASSERT_EQ(posed->vertices(i), before.vertices(i)) << i;
  // The elbow moved: a bent pose is not the rest pose.
  EXPECT_GT(std::abs(posed->vertices(3 * (rig.mesh.V.rows() - 1) + 1) - rig.mesh.V(rig.mesh.V.rows() - 1, 1)), 0.1);
}

// Registers `rig` and opens a pose session on it that answers vertices (LBS on its weights).
absl::StatusOr<std::unique_ptr<PoseSession>> OpenVerticesSession(Client& client, const Rig& rig) {
  auto reg = client.CreateRig(RigToProto(rig));
  if (!reg.ok()) return reg.status();
  v1::PoseOutputs outputs;
  outputs.set_vertices(true);
  return client.StartPoseSession(reg->rig().name(), v1::DEFORMER_UNSPECIFIED, outputs);
}

// (With no server to come back, the session's Step tries to open it again for the client's
// deadline, 2 s here, and then ends with the server's answer.)
TEST(ServerEndToEnd, SigtermDuringAStreamingSessionEndsCleanly) {
  ServerProcess server(MakeTempDir("store"));
  Client client(Options(server, 2000));
  const Rig rig = MakeTwoBoneTube();
  auto session = OpenVerticesSession(client, rig);
  ASSERT_TRUE(session.ok()) << session.status();
  for (int f = 0; f < 20; ++f) {
    auto frame = (*session)->Step(BentPose(rig, f));
    ASSERT_TRUE(frame.ok()) << frame.status();
    ASSERT_EQ(frame->vertices_size(), 3 * rig.mesh.V.rows());
  }
  // SIGTERM while the session is open; keep streaming until the server ends the session.
  std::atomic<int> exit_code{-2};
  std::thread stopper([&] { exit_code = server.Stop(SIGTERM, 30); });
  absl::Status ended;
  for (int f = 0; f < 100000; ++f) {
    auto frame = (*session)->Step(BentPose(rig, f % 90));
    if (!frame.ok()) {
      ended = frame.status();
      break;
    }
  }
  stopper.join();
  EXPECT_FALSE(ended.ok()) << "the session should end when the server stops";
  EXPECT_TRUE(absl::IsUnavailable(ended) || absl::IsCancelled(ended)) << ended;
  EXPECT_THAT(std::string(ended.message()), HasSubstr("(reopening the session for the call deadline)"));
  EXPECT_EQ(exit_code.load(), 0) << server.Output();
  EXPECT_THAT(server.Output(), HasSubstr("stopped"));
}

// The threads of process `pid` (their ids) and, for each, whether it blocks `sig`.
std::vector<std::pair<pid_t, bool>> ThreadsBlocking(pid_t pid, int sig) {
  std::vector<std::pair<pid_t, bool>> threads;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    std::ifstream status(task.path() / "status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("SigBlk:", 0) != 0) continue;
      const unsigned long long blocked = std::stoull(line.substr(7), nullptr, 16);
      threads.emplace_back(std::stoi(task.path().filename().string()), (blocked >> (sig - 1)) & 1);
    }
  }
  return threads;
}

// The kernel gives a SIGTERM sent to the process to any thread that does not block it. The server
// blocks it in every thread it starts, but a library may start threads before main (OpenBLAS
// does when it is loaded); a SIGTERM that one of them took ended the server at once (exit 143)
// instead of draining. Here each thread that does not block SIGTERM, or else one of the server's
// own threads, is sent SIGTERM directly.
TEST(ServerEndToEnd, SigtermTakenByAnyThreadStillDrains) {
  ServerProcess server(MakeTempDir("store"));
  Client client(Options(server));
  ASSERT_TRUE(client.CreateRig(RigToProto(MakeTwoBoneTube())).ok());
  const auto threads = ThreadsBlocking(server.pid(), SIGTERM);
  ASSERT_GT(threads.size(), 1u);
  std::vector<pid_t> targets;
  for (const auto& [tid, blocks] : threads)
    if (!blocks) targets.push_back(tid);
  std::cout << targets.size() << " of the server's " << threads.size() << " threads do not block SIGTERM\n";
  for (const auto& [tid, blocks] : threads)
    if (targets.empty() && tid != server.pid()) targets.push_back(tid);
  for (pid_t tid : targets) ASSERT_EQ(syscall(SYS_tgkill, server.pid(), tid, SIGTERM), 0) << tid;
  EXPECT_EQ(server.Stop(0, 30), 0) << server.Output();
  EXPECT_THAT(server.Output(), HasSubstr("Terminated received"));  // strsignal(SIGTERM)
  EXPECT_THAT(server.Output(), HasSubstr("stopped"));
}

// A session busy with a frame when the server stops (its first: a new constraint set and 1,000
// FAST iterations on CesiumMan with 256 extra weights, 1.2 s here) gets the frame's answer and then
// the close frame 4014; the frames queued behind it are refused (the server drains). The front
// door waited for open sessions one second at most, then dropped the socket (1006 in a browser):
// the old code failed this test in 2 of 3 runs here (the frame outlasts that second by ~0.15 s).
TEST(ServerEndToEnd, SigtermWaitsForASessionsLongFrameThenClosesIt) {
  const std::string cesium = ::skinning::testing::DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(cesium);
  ServerProcess server(MakeTempDir("store"), {"--http_address=127.0.0.1:0", "--drain_seconds=30"});
  const int http = server.http_port();
  ASSERT_GT(http, 0) << server.Output();
  const LongFastModel model = BakeLongFastModel(server);
  ASSERT_FALSE(model.bake.empty());
  auto session = WebSocketClient::Open(http, "/skinning.v1.FastService/SolveSession");
  ASSERT_TRUE(session.ok()) << session.status();
  v1::SolveSessionRequest frame = LongFastFrame(model.bake);
  for (int f = 0; f < 4; ++f) {
    frame.set_sequence(f);
    ASSERT_TRUE((*session)->Send(frame.SerializeAsString(), false).ok());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::atomic<int> exit_code{-2};
  const auto t0 = std::chrono::steady_clock::now();
  std::thread stopper([&] { exit_code = server.Stop(SIGTERM, 60); });
  auto answer = (*session)->Receive();
  EXPECT_TRUE(answer.ok()) << "the frame being computed is answered: " << answer.status();
  auto after = (*session)->Receive();
  stopper.join();
  std::cout << "stopped in " << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
            << " s\n";
  EXPECT_EQ(exit_code.load(), 0) << server.Output();
  EXPECT_TRUE(absl::IsNotFound(after.status())) << "closed after one answer: " << after.status();
  EXPECT_EQ((*session)->close_code(), 4014) << after.status();
}

// The plaintext health port (--health_address) reports what the main port does: SERVING, then
// NOT_SERVING as soon as the drain starts, while a long frame is still being computed (so that
// Kubernetes takes the pod out of its Services before it stops).
TEST(ServerEndToEnd, TheHealthPortSaysNotServingWhileTheServerDrains) {
  const std::string cesium = ::skinning::testing::DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(cesium);
  ServerProcess server(MakeTempDir("store"),
                       {"--http_address=127.0.0.1:0", "--health_address=127.0.0.1:0", "--drain_seconds=30"});
  const int http = server.http_port();
  const int health = server.health_port();
  ASSERT_GT(http, 0) << server.Output();
  ASSERT_GT(health, 0) << server.Output();
  const auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(health), grpc::InsecureChannelCredentials());
  std::string bytes;
  ASSERT_TRUE(::skinning::testing::HealthCheck(channel, &bytes).ok());
  EXPECT_EQ(bytes, std::string("\x08\x01", 2));  // SERVING
  const LongFastModel model = BakeLongFastModel(server);
  ASSERT_FALSE(model.bake.empty());
  auto session = WebSocketClient::Open(http, "/skinning.v1.FastService/SolveSession");
  ASSERT_TRUE(session.ok()) << session.status();
  v1::SolveSessionRequest frame = LongFastFrame(model.bake);
  frame.set_sequence(0);
  ASSERT_TRUE((*session)->Send(frame.SerializeAsString(), false).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::atomic<int> exit_code{-2};
  std::thread stopper([&] { exit_code = server.Stop(SIGTERM, 60); });
  // While the frame keeps the drain going (a second or more): NOT_SERVING on the health port,
  // before the port closes with the server.
  bool not_serving = false, closed = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!not_serving && !closed && std::chrono::steady_clock::now() < until) {
    bytes.clear();
    const grpc::Status s = ::skinning::testing::HealthCheck(channel, &bytes);
    not_serving = s.ok() && bytes == std::string("\x08\x02", 2);
    closed = !s.ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  auto answer = (*session)->Receive();
  stopper.join();
  EXPECT_TRUE(not_serving) << "the health port did not say NOT_SERVING while the server drained"
                           << (closed ? " (it closed first)" : "");
  EXPECT_TRUE(answer.ok()) << "the frame being computed is answered: " << answer.status();
  EXPECT_EQ(exit_code.load(), 0) << server.Output();
}

// SIGHUP drains as SIGTERM does (its default action ended the server at once, exit 129, dropping
// the calls in flight): the server has no configuration to reload.
TEST(ServerEndToEnd, SighupDrainsAsSigtermDoes) {
  ServerProcess server(MakeTempDir("store"));
  Client client(Options(server));
  ASSERT_TRUE(client.CreateRig(RigToProto(MakeTwoBoneTube())).ok());
  EXPECT_EQ(server.Stop(SIGHUP, 30), 0) << server.Output();
  EXPECT_THAT(server.Output(), HasSubstr("Hangup received, draining"));  // strsignal(SIGHUP)
  EXPECT_THAT(server.Output(), HasSubstr("stopped"));
}

// Only the main thread takes SIGTERM, SIGINT and SIGHUP (with sigwait); every other thread blocks
// them. OpenBLAS's threads, started when the library is loaded (before main), did not: a SIGTERM
// delivered to one while METIS ordered a matrix for CHOLMOD ran METIS's handler (a longjmp to
// another thread's stack) and the server died of SIGSEGV instead of draining.
TEST(ServerEndToEnd, OnlyTheMainThreadTakesTheShutdownSignals) {
  ServerProcess server(MakeTempDir("store"));
  const std::string tasks = "/proc/" + std::to_string(server.pid()) + "/task";
  int threads = 0;
  for (const auto& entry : std::filesystem::directory_iterator(tasks)) {
    const std::string tid = entry.path().filename().string();
    std::ifstream status(entry.path() / "status");
    std::string line, blocked;
    while (std::getline(status, line))
      if (line.rfind("SigBlk:", 0) == 0) blocked = line.substr(line.find_first_not_of(" \t", 7));
    if (tid == std::to_string(server.pid())) continue;  // main: in sigwait
    ++threads;
    const uint64_t mask = std::stoull(blocked, nullptr, 16);
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
      std::string name = "?";
      std::ifstream(entry.path() / "comm") >> name;
      EXPECT_TRUE(mask & (uint64_t{1} << (sig - 1))) << "thread " << tid << " (" << name << ") takes " << strsignal(sig);
    }
  }
  EXPECT_GT(threads, 4);
  EXPECT_EQ(server.Stop(SIGTERM), 0);
}

// Registers `rig` through `client` and bakes its BBW weights on a 32 grid (a failure is fatal to
// the caller: ASSERT_NO_FATAL_FAILURE); sets the rig's and the bake's names.
void RegisterAndBakeBbw(Client& client, const Rig& rig, std::string* rig_name, std::string* bake_name) {
  auto created = client.CreateRig(RigToProto(rig));
  ASSERT_TRUE(created.ok()) << created.status();
  v1::BakeOptions options;
  options.mutable_bbw();
  options.mutable_domain()->set_voxel_resolution(32);
  auto started = client.StartBake(created->rig().name(), options);
  ASSERT_TRUE(started.ok()) << started.status();
  auto baked = client.WatchBake(started->bake().name(), [](const v1::Bake&) { return true; });
  ASSERT_TRUE(baked.ok()) << baked.status();
  ASSERT_EQ(baked->metadata().state(), v1::BAKE_STATE_SUCCEEDED) << baked->error().message();
  *rig_name = created->rig().name();
  *bake_name = started->bake().name();
}

// Threads follow the CPUs the server may use, not the node's: started on one CPU (taskset, as a
// Kubernetes static CPU policy pins a container), it says so at start and still bakes and poses.
TEST(ServerEndToEnd, PinnedToOneCpuItCountsOneAndServes) {
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  int first = 0;
  while (first < CPU_SETSIZE && !CPU_ISSET(first, &mine)) ++first;
  ServerProcess server(MakeTempDir("store"), {}, {"/usr/bin/taskset", "-c", std::to_string(first)});
  Client client(Options(server, 60000));
  const Rig rig = MakeTwoBoneTube();
  std::string rig_name, bake_name;
  ASSERT_NO_FATAL_FAILURE(RegisterAndBakeBbw(client, rig, &rig_name, &bake_name));
  v1::PoseRequest pose = VerticesRequest(rig_name, BentPose(rig, 30), v1::DEFORMER_UNSPECIFIED);
  pose.set_bake(bake_name);
  auto posed = client.Pose(pose);
  ASSERT_TRUE(posed.ok()) << posed.status();
  EXPECT_EQ(server.Stop(SIGTERM), 0);
  EXPECT_THAT(server.Output(), HasSubstr("skinning-server cpus: 1 (affinity 1 of"));
}

// OpenBLAS falls back to its Prescott (SSE3) kernels on a CPU newer than itself (Debian 12's
// 0.3.21 on a Xeon "Emerald Rapids"), which halves the speed of CHOLMOD's factorizations. Started
// without OPENBLAS_CORETYPE, the server re-executes itself (same process id) on the kernels the
// CPU runs, says which at start, and bakes on them.
TEST(ServerEndToEnd, ItRunsOpenBlasOnTheFastestKernelsTheCpuHas) {
  ServerProcess server(MakeTempDir("store"), {},
                       {"/usr/bin/env", "-u", "OPENBLAS_CORETYPE", "-u", "SKINNING_OPENBLAS_CHOSE"});
  Client client(Options(server, 60000));
  std::string rig_name, bake_name;
  EXPECT_NO_FATAL_FAILURE(RegisterAndBakeBbw(client, MakeTwoBoneTube(), &rig_name, &bake_name));
  EXPECT_EQ(server.Stop(SIGTERM), 0);
  const std::string out = server.Output();
  const std::string marker = "skinning-server blas: ";
  const size_t at = out.find(marker);
  ASSERT_NE(at, std::string::npos) << out;
  const std::string line = out.substr(at + marker.size(), out.find('\n', at) - at - marker.size());
  if (OpenBlasCoreName().empty()) {
    EXPECT_EQ(line, "not OpenBLAS");
    return;
  }
  // "OpenBLAS 0.3.21, SkylakeX kernels (OpenBLAS chose Prescott for this CPU)"
  const size_t comma = line.find(", "), kernels = line.find(" kernels");
  ASSERT_TRUE(comma != std::string::npos && kernels != std::string::npos && kernels > comma) << line;
  const std::string core = line.substr(comma + 2, kernels - comma - 2);
  EXPECT_EQ(BetterOpenBlasCore(core, DetectCpuVectorSupport()), "")
      << "the server runs OpenBLAS's " << core << " kernels on a CPU with AVX2: " << line;
  EXPECT_THAT(line, Not(HasSubstr("OPENBLAS_CORETYPE"))) << "the environment chose for it: " << line;
}

// The version both programs report comes from the project's own records, read here
// independently: CMakeLists.txt's project() line and the build folder's CMakeCache.txt. The
// server says it at start too. (Abseil's default --version said "Debug build (NDEBUG not
// #defined)" for a release build, from how Debian compiled Abseil.)
std::string FileLineValue(const std::string& path, const std::string& prefix) {
  std::istringstream in(testing::FileBytes(path));
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
  return "";
}
TEST(ServerEndToEnd, BothProgramsReportTheProjectVersionAndBuildType) {
  std::string version = FileLineValue(std::string(SKINNING_SOURCE_DIR) + "/CMakeLists.txt", "project(skinning VERSION ");
  version = version.substr(0, version.find(' '));
  ASSERT_FALSE(version.empty()) << "no project(skinning VERSION …) line in CMakeLists.txt";
  const std::string build_type = FileLineValue(std::string(SKINNING_BINARY_DIR) + "/CMakeCache.txt", "CMAKE_BUILD_TYPE:STRING=");
  // "0.1.0 (Release build; gRPC 1.51.1, protobuf …, Eigen …, CHOLMOD …)"
  const std::string expected = version + " (" + (build_type.empty() ? "no build type" : build_type + " build") +
                               "; gRPC " + grpc::Version() + ", protobuf ";
  for (const std::string program : {"server/skinning-server", "client/skinctl"}) {
    const auto result = RunCommand({BinaryPath(program), "--version"});
    EXPECT_EQ(result.exit_code, 0) << program << ": " << result.output;
    const std::string name = program.substr(program.rfind('/') + 1);
    EXPECT_EQ(result.output.rfind(name + " " + expected, 0), 0u) << result.output;
    EXPECT_THAT(result.output, HasSubstr(", Eigen ")) << result.output;
    EXPECT_THAT(result.output, HasSubstr(", CHOLMOD ")) << result.output;
    EXPECT_THAT(result.output, Not(HasSubstr("NDEBUG"))) << result.output;
  }
  ServerProcess server(MakeTempDir("store"));
  EXPECT_EQ(server.Stop(SIGTERM), 0);
  EXPECT_THAT(server.Output(), HasSubstr("skinning-server version: " + expected)) << server.Output();
}

// A connected but idle client must not hold the drain open: the server stops once nothing is in
// flight, not when --drain_seconds runs out. Calls arriving while it drains get UNAVAILABLE.
TEST(ServerEndToEnd, SigtermWithOnlyIdleClientsDoesNotWaitForTheDrainDeadline) {
  ServerProcess server(MakeTempDir("store"), {"--drain_seconds=30"});
  Client client(Options(server));
  ASSERT_TRUE(client.CreateRig(RigToProto(MakeTwoBoneTube())).ok());
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(server.Stop(SIGTERM, 60), 0) << server.Output();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 15.0) << "waited for the 30 s drain deadline with nothing in flight";
}

// WebSocket sessions open at SIGTERM (one that has posed, one that has not sent a frame yet) are
// closed with a close frame, 4014 (UNAVAILABLE, reconnect): they used to be dropped with the
// socket, which a browser reports as 1006 and cannot tell from a network failure. They do not
// hold the drain either.
TEST(ServerEndToEnd, SigtermClosesOpenWebSocketSessionsWithUnavailable) {
  ServerProcess server(MakeTempDir("store"), {"--http_address=127.0.0.1:0", "--drain_seconds=30"});
  const int http = server.http_port();
  ASSERT_GT(http, 0) << server.Output();
  Client client(Options(server));
  const Rig rig = MakeTwoBoneTube();
  auto created = client.CreateRig(RigToProto(rig));
  ASSERT_TRUE(created.ok()) << created.status();
  const std::string target = "/skinning.v1.PoseService/PoseSession";
  auto posed = WebSocketClient::Open(http, target);
  ASSERT_TRUE(posed.ok()) << posed.status();
  v1::PoseSessionRequest first;
  first.set_rig(created->rig().name());
  first.set_sequence(0);
  *first.mutable_pose() = BentPose(rig, 10);
  first.mutable_outputs()->set_vertices(true);
  ASSERT_TRUE((*posed)->Send(first.SerializeAsString(), false).ok());
  auto answer = (*posed)->Receive();
  ASSERT_TRUE(answer.ok()) << answer.status();
  auto unopened = WebSocketClient::Open(http, target);
  ASSERT_TRUE(unopened.ok()) << unopened.status();
  // Each client waits for what comes next while the server stops.
  std::vector<absl::Status> next(2);
  std::vector<std::thread> readers;
  WebSocketClient* clients[] = {posed->get(), unopened->get()};
  for (int i = 0; i < 2; ++i) readers.emplace_back([&, i] { next[i] = clients[i]->Receive().status(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(server.Stop(SIGTERM, 60), 0) << server.Output();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (std::thread& t : readers) t.join();
  EXPECT_LT(seconds, 15.0) << "open WebSocket sessions held the 30 s drain";
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(absl::IsNotFound(next[i])) << "session " << i << ": " << next[i];
    EXPECT_EQ(clients[i]->close_code(), 4014) << "session " << i << ": " << next[i];
    EXPECT_THAT(clients[i]->close_reason(), HasSubstr("shutting down")) << "session " << i;
  }
}

// A session waiting for its client's next frame is not work in flight either: it used to hold the
// drain to its deadline (and then ended anyway). It ends with the shutdown, UNAVAILABLE, so its
// client reconnects elsewhere (here there is nowhere: Step tries to reopen it for the client's
// deadline, 1 s, then ends UNAVAILABLE).
TEST(ServerEndToEnd, SigtermWithAnIdleSessionOpenDoesNotWaitForTheDrainDeadline) {
  ServerProcess server(MakeTempDir("store"), {"--drain_seconds=30"});
  Client client(Options(server, 1000));
  const Rig rig = MakeTwoBoneTube();
  auto session = OpenVerticesSession(client, rig);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->Step(BentPose(rig, 10)).ok());
  auto unopened = OpenVerticesSession(client, rig);  // no frame sent yet
  ASSERT_TRUE(unopened.ok()) << unopened.status();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(server.Stop(SIGTERM, 60), 0) << server.Output();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 10.0) << "waited for the 30 s drain deadline for idle sessions";
  for (auto* s : {session->get(), unopened->get()}) {
    auto after = s->Step(BentPose(rig, 20));
    EXPECT_TRUE(absl::IsUnavailable(after.status())) << after.status();
  }
}

// A client that stops answering (a frozen process here; a phone gone off the network) gives its
// sessions back: the server's keepalive ping goes unanswered and it closes the connection. Before,
// nothing did, and the sessions held their --max_sessions slots until the client was killed.
TEST(ServerEndToEnd, AFrozenClientsSessionIsClosedByKeepaliveAndItsSlotFreed) {
  ServerProcess server(MakeTempDir("store"),
                       {"--max_sessions=1", "--keepalive_seconds=1", "--keepalive_timeout_seconds=1"});
  const Rig rig = MakeTwoBoneTube();
  const v1::Rig rig_proto = RigToProto(rig);
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  // The frozen client: a process of its own (forked before this one uses gRPC) with one session.
  // Run after other tests in one process (a --gtest_filter), wait for their gRPC objects to be
  // torn down (gRPC does it in the background): a child forked meanwhile hung in its first call.
  for (int i = 0; i < 50 && grpc_is_initialized(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Client c(Options(server));
    auto reg = c.CreateRig(rig_proto);
    if (!reg.ok()) _exit(3);
    auto session = c.StartPoseSession(reg->rig().name(), v1::DEFORMER_UNSPECIFIED, v1::PoseOutputs());
    if (!session.ok() || !(*session)->Step(BentPose(rig, 10)).ok()) _exit(4);
    if (write(ready[1], "x", 1) != 1) _exit(5);
    for (;;) pause();
  }
  close(ready[1]);
  pollfd p{ready[0], POLLIN, 0};
  char byte = 0;
  const bool opened = poll(&p, 1, 30000) == 1 && read(ready[0], &byte, 1) == 1;
  close(ready[0]);
  if (!opened) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    FAIL() << "the child did not open its session";
  }
  ASSERT_EQ(kill(child, SIGSTOP), 0);
  Client client(Options(server));
  auto reg = client.CreateRig(rig_proto);
  ASSERT_TRUE(reg.ok()) << reg.status();
  auto try_session = [&] {
    auto s = client.StartPoseSession(reg->rig().name(), v1::DEFORMER_UNSPECIFIED, v1::PoseOutputs());
    if (!s.ok()) return s.status();
    return (*s)->Step(BentPose(rig, 20)).status();
  };
  const absl::Status held = try_session();
  EXPECT_TRUE(absl::IsResourceExhausted(held)) << "the frozen client's session holds the only slot: " << held;
  const auto t0 = std::chrono::steady_clock::now();
  absl::Status now = held;
  while (!now.ok() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    now = try_session();
  }
  const double freed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(now.ok()) << "the slot was still held after " << freed << " s: " << now;
  EXPECT_LT(freed, 10.0) << "keepalive 1 s + timeout 1 s";
}

// Bad input: the right code, a message naming the field and index, and the server still serves.
class BadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(MakeTempDir("store"), std::vector<std::string>{"--max_message_mb=2"});
    client_ = std::make_unique<Client>(Options(*server_));
    rig_ = MakeTwoBoneTube();
    auto reg = client_->CreateRig(RigToProto(rig_));
    ASSERT_TRUE(reg.ok()) << reg.status();
    id_ = reg->rig().name();
  }
  void TearDown() override {
    // Still serving after whatever the test sent.
    auto posed = client_->Pose(VerticesRequest(id_, BentPose(rig_, 30), v1::DEFORMER_UNSPECIFIED));
    EXPECT_TRUE(posed.ok()) << posed.status();
    EXPECT_EQ(server_->Stop(SIGTERM), 0);
  }
  void ExpectRegisterError(const v1::Rig& rig, absl::StatusCode code, const std::string& message) {
    auto r = client_->CreateRig(rig);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), code) << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(message));
  }
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Client> client_;
  Rig rig_;
  std::string id_;
};

TEST_F(BadInputTest, RejectsNanAndInfiniteCoordinates) {
  v1::Rig proto = RigToProto(rig_);
  proto.mutable_mesh()->set_positions(3 * 5 + 1, std::nanf(""));
  ExpectRegisterError(proto, absl::StatusCode::kInvalidArgument, "rig.mesh.vertices[5].y is NaN");
  proto = RigToProto(rig_);
  proto.mutable_mesh()->set_positions(3 * 7 + 2, INFINITY);
  ExpectRegisterError(proto, absl::StatusCode::kInvalidArgument, "rig.mesh.vertices[7].z is infinite");
}

TEST_F(BadInputTest, RejectsOutOfRangeFaceIndex) {
  v1::Rig proto = RigToProto(rig_);
  proto.mutable_mesh()->set_triangles(3 * 4 + 2, 100000);
  ExpectRegisterError(proto, absl::StatusCode::kInvalidArgument, "rig.mesh.triangles[4][2] = 100000 is out of range");
}

TEST_F(BadInputTest, RejectsParentCycleAndSelfParent) {
  v1::Rig proto = RigToProto(rig_);
  proto.mutable_skeleton()->mutable_joints(1)->set_parent(1);
  ExpectRegisterError(proto, absl::StatusCode::kInvalidArgument, "joints[1]: parent 1 is itself");
  proto = RigToProto(rig_);
  proto.mutable_skeleton()->mutable_joints(0)->set_parent(1);  // 0 → 1 → 0
  ExpectRegisterError(proto, absl::StatusCode::kInvalidArgument, "cycle");
  proto = RigToProto(rig_);
  proto.mutable_skeleton()->mutable_joints(1)->set_parent(7);
  ExpectRegisterError(proto, absl::StatusCode::kInvalidArgument, "joints[1]: parent 7 is out of range");
}

TEST_F(BadInputTest, RejectsNegativeWeightsAndRowsThatDoNotSumToOne) {
  v1::Rig proto = RigToProto(rig_);
  auto* w = proto.mutable_weights()->mutable_sparse();
  w->set_weights(2 * 3 + 0, -0.5f);
  w->set_weights(2 * 3 + 1, 1.5f);
  ExpectRegisterError(proto, absl::StatusCode::kInvalidArgument, "rig.weights[3][0]: weight -0.5 is negative");
  proto = RigToProto(rig_);
  proto.mutable_weights()->mutable_sparse()->set_weights(2 * 9 + 0, 0.25f);
  proto.mutable_weights()->mutable_sparse()->set_weights(2 * 9 + 1, 0.25f);
  ExpectRegisterError(proto, absl::StatusCode::kInvalidArgument, "rig.weights[9]: row sums to 0.5, not 1");
}

TEST_F(BadInputTest, RejectsEmptyMesh) {
  v1::Rig proto = RigToProto(rig_);
  proto.mutable_mesh()->Clear();
  proto.clear_weights();
  ExpectRegisterError(proto, absl::StatusCode::kInvalidArgument, "rig.mesh has no vertices");
}

TEST_F(BadInputTest, RejectsUnknownAndMalformedRigIds) {
  auto posed = client_->Pose(VerticesRequest("rigs/rig-00000000000000000000000000000000", v1::Pose(), v1::DEFORMER_UNSPECIFIED));
  ASSERT_FALSE(posed.ok());
  EXPECT_EQ(posed.status().code(), absl::StatusCode::kNotFound) << posed.status();
  EXPECT_THAT(std::string(posed.status().message()), HasSubstr("rig-00000000000000000000000000000000"));
  for (const char* malformed : {"../../etc/passwd", "rigs/../../etc/passwd", "rig-00000000000000000000000000000000"}) {
    auto got = client_->GetRig(malformed);
    ASSERT_FALSE(got.ok()) << malformed;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << got.status();
    EXPECT_THAT(std::string(got.status().message()), HasSubstr("expected rigs/rig-<32 hex digits>")) << malformed;
  }
}

TEST_F(BadInputTest, RejectsRequestOverTheSizeLimit) {
  const Rig big = MakeTwoBoneTube(400, 400);  // 160k vertices: about 3 MB of floats
  auto r = client_->CreateRig(RigToProto(big));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
}

TEST_F(BadInputTest, RejectsPoseWithTheWrongJointCount) {
  v1::Pose pose = BentPose(rig_, 10);
  *pose.add_joints() = pose.joints(0);
  auto posed = client_->Pose(VerticesRequest(id_, pose, v1::DEFORMER_UNSPECIFIED));
  ASSERT_FALSE(posed.ok());
  EXPECT_EQ(posed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(posed.status().message()), HasSubstr("pose.joints has 3 entries, the rig's skeleton has 2"));
  v1::Pose bad = BentPose(rig_, 10);
  bad.mutable_joints(1)->set_rotation(0, NAN);
  posed = client_->Pose(VerticesRequest(id_, bad, v1::DEFORMER_UNSPECIFIED));
  ASSERT_FALSE(posed.ok());
  EXPECT_THAT(std::string(posed.status().message()), HasSubstr("pose.joints[1].rotation"));
}

TEST_F(BadInputTest, PosingARigWithoutWeightsIsAFailedPrecondition) {
  v1::Rig proto = RigToProto(rig_);
  proto.clear_weights();
  auto reg = client_->CreateRig(proto);
  ASSERT_TRUE(reg.ok()) << reg.status();
  auto posed = client_->Pose(VerticesRequest(reg->rig().name(), v1::Pose(), v1::DEFORMER_UNSPECIFIED));
  ASSERT_FALSE(posed.ok());
  EXPECT_EQ(posed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(posed.status().message()), HasSubstr("no skinning weights"));
}

TEST(SkinctlEndToEnd, RejectsTruncatedAndCorruptGltfFiles) {
  const std::string source = ::skinning::testing::DataPath("gltf/RiggedSimple/RiggedSimple.glb");
  SKINNING_REQUIRE_DATA(source);
  ServerProcess server(MakeTempDir("store"));
  const std::string bytes = ::skinning::testing::FileBytes(source);
  const std::string dir = MakeTempDir("gltf");
  const std::string truncated = dir + "/truncated.glb", corrupt = dir + "/corrupt.glb";
  std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  std::string flipped = bytes;
  for (size_t i = 40; i < 200 && i < flipped.size(); i += 7) flipped[i] = '}';
  std::ofstream(corrupt, std::ios::binary) << flipped;
  for (const std::string& file : {truncated, corrupt}) {
    auto result = RunCommand({BinaryPath("client/skinctl"), "--server=" + server.address(), "register",
                              "--gltf=" + file});
    EXPECT_EQ(result.exit_code, 2) << result.output;
    EXPECT_THAT(result.output, HasSubstr("INVALID_ARGUMENT")) << file;
    EXPECT_THAT(result.output, HasSubstr(file));
  }
  // The server never saw a rig and is still fine.
  Client client(Options(server));
  auto list = client.ListRigs();
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_TRUE(list->empty());
}

// Counts that cannot work are refused at start, naming the flag, instead of being changed
// without a word (0 bake workers ran as 1, 0 front-door threads as 1, a negative request timeout
// as 10 s).
TEST(ServerFlagsTest, CountsThatCannotWorkAreRefusedAtStartNamingTheFlag) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"--bake_workers=0", "bake_workers = 0 must be at least 1"},
      {"--bake_queue=-1", "bake_queue = -1 must not be negative"},
      {"--http_threads=0", "http_threads = 0 must be at least 1"},
      {"--http_request_timeout_ms=-5", "http_request_timeout_ms = -5 must not be negative"},
      {"--keepalive_timeout_seconds=0", "keepalive_timeout_seconds = 0 must be at least 1 when it pings"},
  };
  for (const auto& [flag, message] : bad) {
    const auto r = RunCommand({BinaryPath("server/skinning-server"), "--address=127.0.0.1:0",
                                        "--store_dir=" + MakeTempDir("store"), "--http_address=127.0.0.1:0",
                                        "--web_dir=", flag});
    EXPECT_EQ(r.exit_code, 1) << flag << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr(message)) << flag;
  }
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
