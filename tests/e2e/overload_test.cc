// Limits and overload through the real server binary: a full bake queue or gRPC thread pool
// answers RESOURCE_EXHAUSTED, the rig cache keeps the server's memory bounded over many rigs, a call's
// deadline stops its work, and size limits refuse what is too big.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/client.h"
#include "core/util/process_stats.h"
#include "server/convert/convert.h"
#include "skinning/v1/bake_service.grpc.pb.h"
#include "tests/support/data.h"
#include "tests/support/fixtures.h"
#include "tests/support/grid_glb.h"
#include "tests/support/http_client.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::HttpGet;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::MakeTubeForBaking;
using ::skinning::testing::MakeTwoBoneTube;
using ::skinning::testing::ServerProcess;
using ::testing::HasSubstr;

constexpr int64_t kMiB = int64_t{1} << 20;

// Calls `call` until it answers OK or 10 s pass, waiting 20 ms after each RESOURCE_EXHAUSTED (a
// limit the server frees a moment after the room is made); any other error fails the test and
// ends the wait. Returns the last answer.
absl::Status RetryWhileExhausted(const std::function<absl::Status()>& call) {
  absl::Status last;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    last = call();
    if (last.ok()) break;
    if (!absl::IsResourceExhausted(last)) {
      ADD_FAILURE() << last;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (std::chrono::steady_clock::now() < until);
  return last;
}

ClientOptions Options(const ServerProcess& server, std::chrono::milliseconds deadline = std::chrono::seconds(60)) {
  ClientOptions o;
  o.target = server.address();
  o.deadline = deadline;
  o.max_attempts = 1;
  return o;
}

// The elbow bent by `degrees` about z.
v1::Pose BentPose(const Rig& rig, double degrees) {
  Pose pose = RestPose(rig.skeleton);
  pose.local[1].rotation = Eigen::AngleAxisd(degrees * M_PI / 180, Eigen::Vector3d::UnitZ());
  return PoseToProto(pose);
}

// The value of the unlabelled series `name` (or the one with exactly `labels`, e.g.
// {method="lbs"}) in a scrape of the server's /metrics; nullopt when absent.
std::optional<double> Scrape(ServerProcess& server, const std::string& name, const std::string& labels = "") {
  auto response = HttpGet("127.0.0.1", server.metrics_port(), "/metrics");
  if (!response.ok() || response->status != 200) return std::nullopt;
  const std::string prefix = name + labels + " ";
  for (absl::string_view line : absl::StrSplit(response->body, '\n')) {
    if (!absl::StartsWith(line, prefix)) continue;
    double value = 0;
    if (absl::SimpleAtod(line.substr(prefix.size()), &value)) return value;
  }
  return std::nullopt;
}

v1::BakeOptions Bbw(int resolution) {
  v1::BakeOptions o;
  o.mutable_bbw();
  o.mutable_domain()->set_voxel_resolution(resolution);
  return o;
}

// Open sessions hold no server thread (the gRPC callback API): 1,000 idle pose sessions, each
// answered once, with the sync pool capped at 64 threads (which could hold only 64 of them were
// each a sync call), while unary calls still run; the next session past --max_sessions is refused
// with RESOURCE_EXHAUSTED, and closing one makes room.
TEST(Overload, ThousandIdleSessionsHoldNoThreadEachAndTheSessionLimitRefusesTheNext) {
  constexpr int kSessions = 1000;
  ServerProcess server(MakeTempDir("store"), {"--threads=64", "--max_sessions=1000"});
  Client client(Options(server));
  const Rig rig = MakeTwoBoneTube();
  auto reg = client.CreateRig(RigToProto(rig));
  ASSERT_TRUE(reg.ok()) << reg.status();
  v1::PoseOutputs outputs;
  outputs.set_transforms(true);
  // A first session, closed: the step pool's threads exist from here on.
  {
    auto session = client.StartPoseSession(reg->rig().name(), v1::DEFORMER_UNSPECIFIED, outputs);
    ASSERT_TRUE(session.ok()) << session.status();
    ASSERT_TRUE((*session)->Step(BentPose(rig, 10)).ok());
    ASSERT_TRUE((*session)->Close().ok());
  }
  const int threads_before = ThreadCount(server.pid());
  ASSERT_GT(threads_before, 0);
  std::vector<std::unique_ptr<PoseSession>> sessions;
  for (int i = 0; i < kSessions; ++i) {
    auto session = client.StartPoseSession(reg->rig().name(), v1::DEFORMER_UNSPECIFIED, outputs);
    ASSERT_TRUE(session.ok()) << "session " << i << ": " << session.status();
    auto frame = (*session)->Step(BentPose(rig, i % 90));
    ASSERT_TRUE(frame.ok()) << "session " << i << ": " << frame.status();
    ASSERT_EQ(frame->transforms_size(), 12 * rig.skeleton.size());
    sessions.push_back(*std::move(session));
  }
  const int threads_open = ThreadCount(server.pid());
  std::printf("server threads: %d before, %d with %d idle sessions open\n", threads_before, threads_open, kSessions);
  EXPECT_LT(threads_open - threads_before, 32) << "open sessions hold threads";
  // Unary calls and the open sessions still answer.
  v1::PoseRequest req;
  req.set_rig(reg->rig().name());
  *req.mutable_pose() = BentPose(rig, 45);
  req.mutable_outputs()->set_vertices(true);
  auto posed = client.Pose(req);
  ASSERT_TRUE(posed.ok()) << posed.status();
  for (int i : {0, kSessions / 2, kSessions - 1}) {
    auto frame = sessions[i]->Step(BentPose(rig, 45));
    ASSERT_TRUE(frame.ok()) << "session " << i << ": " << frame.status();
  }
  // One past the limit.
  auto extra = client.StartPoseSession(reg->rig().name(), v1::DEFORMER_UNSPECIFIED, outputs);
  ASSERT_TRUE(extra.ok()) << extra.status();
  auto refused = (*extra)->Step(BentPose(rig, 20));
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(refused.status())) << refused.status();
  EXPECT_THAT(refused.status().message(), HasSubstr("--max_sessions"));
  // Closing one makes room (the server counts it out once the stream has ended on its side).
  ASSERT_TRUE(sessions.back()->Close().ok());
  sessions.pop_back();
  const absl::Status last = RetryWhileExhausted([&]() -> absl::Status {
    auto again = client.StartPoseSession(reg->rig().name(), v1::DEFORMER_UNSPECIFIED, outputs);
    if (!again.ok()) {
      ADD_FAILURE() << "starting the session: " << again.status();
      return again.status();
    }
    return (*again)->Step(BentPose(rig, 20)).status();
  });
  EXPECT_TRUE(last.ok()) << "no room after closing a session: " << last;
  for (auto& s : sessions) ASSERT_TRUE(s->Close().ok());
  EXPECT_EQ(server.Stop(SIGTERM), 0) << server.Output();
}

// Connections are file descriptors: the server takes the hard open-file limit at start (a soft
// limit of 1024 ran out under a thousand browser sessions, and gRPC's listener stops accepting
// for good after EMFILE), here from a soft limit of 256 under a hard one of 4096.
TEST(Overload, TheServerTakesTheHardOpenFileLimit) {
  ServerProcess server(MakeTempDir("store"), {}, {"/usr/bin/prlimit", "--nofile=256:4096", "--"});
  std::ifstream limits("/proc/" + std::to_string(server.pid()) + "/limits");
  std::string line, soft, hard;
  while (std::getline(limits, line))
    if (absl::StartsWith(line, "Max open files")) {
      std::istringstream fields(line.substr(14));
      fields >> soft >> hard;
    }
  EXPECT_EQ(soft, "4096") << "soft limit; hard " << hard;
  EXPECT_EQ(hard, "4096");
  Client client(Options(server));
  EXPECT_TRUE(client.CreateRig(RigToProto(MakeTwoBoneTube())).ok());
}

// One worker and a queue of two: the running bake and two queued ones are accepted, every
// further distinct bake is refused at once with RESOURCE_EXHAUSTED (nothing unbounded waits).
TEST(Overload, MoreBakesThanPoolAndQueueGetResourceExhausted) {
  const std::string store = MakeTempDir("store");
  ServerProcess server(store, {"--bake_workers=1", "--bake_queue=2"});
  Client client(Options(server));
  auto reg = client.CreateRig(RigToProto(MakeTubeForBaking()));
  ASSERT_TRUE(reg.ok()) << reg.status();

  auto running = client.StartBake(reg->rig().name(), Bbw(200));  // far longer than this test
  ASSERT_TRUE(running.ok()) << running.status();
  // The worker takes it off the queue.
  for (int i = 0; i < 200; ++i) {
    auto s = client.GetBake(running->bake().name());
    ASSERT_TRUE(s.ok()) << s.status();
    if (s->metadata().state() == v1::BAKE_STATE_RUNNING) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto status = client.GetBake(running->bake().name());
  ASSERT_TRUE(status.ok());
  ASSERT_EQ(status->metadata().state(), v1::BAKE_STATE_RUNNING);

  std::vector<std::string> accepted = {running->bake().name()};
  for (int resolution : {40, 44}) {
    auto queued = client.StartBake(reg->rig().name(), Bbw(resolution));
    ASSERT_TRUE(queued.ok()) << "resolution " << resolution << ": " << queued.status();
    EXPECT_EQ(queued->bake().metadata().state(), v1::BAKE_STATE_QUEUED);
    EXPECT_EQ(queued->bake().metadata().queue_position(), static_cast<int>(accepted.size()) - 1);
    accepted.push_back(queued->bake().name());
  }
  for (int resolution : {48, 52, 56, 60}) {
    const auto t0 = std::chrono::steady_clock::now();
    auto refused = client.StartBake(reg->rig().name(), Bbw(resolution));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_FALSE(refused.ok()) << "resolution " << resolution << " was accepted";
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
    EXPECT_THAT(std::string(refused.status().message()), HasSubstr("bake queue is full (1 of 1 workers busy, 2 waiting, at most 2"));
    EXPECT_LT(seconds, 1.0) << "refused at once, not after waiting";
  }
  // A bake already queued is found, not refused.
  auto again = client.StartBake(reg->rig().name(), Bbw(40));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->created());
  EXPECT_EQ(again->bake().name(), accepted[1]);

  for (const std::string& name : accepted) {
    auto cancelled = client.CancelBake(name);
    ASSERT_TRUE(cancelled.ok()) << cancelled.status();
    EXPECT_EQ(cancelled->metadata().state(), v1::BAKE_STATE_CANCELLED) << name;
  }
  // The queue has room again; and nothing was stored.
  auto after = client.StartBake(reg->rig().name(), Bbw(48));
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_TRUE(client.CancelBake(after->bake().name()).ok());
  int stored = 0;
  if (std::filesystem::exists(store + "/bakes"))
    for (const auto& entry : std::filesystem::directory_iterator(store + "/bakes")) stored += entry.path().extension() == ".pb";
  EXPECT_EQ(stored, 0);
}

// --threads caps the synchronous calls in flight: WatchBake streams on a bake that runs longer
// than the test each hold a gRPC thread, so with --threads=4 a few of them fill the pool; then a
// unary call on the sync API is refused at once with RESOURCE_EXHAUSTED (from gRPC, which cannot
// start a thread to wait for the next call), while Pose, on the callback API, still answers.
// Cancelling the watches gives the threads back and the same call answers again.
TEST(Overload, WatchesFillingTheThreadPoolGetTheNextSyncCallRefused) {
  constexpr int kThreads = 4;
  ServerProcess server(MakeTempDir("store"),
                       {"--threads=" + std::to_string(kThreads), "--min_pollers=1", "--max_pollers=1"});
  Client client(Options(server));
  auto reg = client.CreateRig(RigToProto(MakeTubeForBaking()));
  ASSERT_TRUE(reg.ok()) << reg.status();
  auto running = client.StartBake(reg->rig().name(), Bbw(200));  // far longer than this test
  ASSERT_TRUE(running.ok()) << running.status();
  const std::string bake = running->bake().name();

  auto channel = grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials());
  auto stub = v1::BakeService::NewStub(channel);
  struct Watch {
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReader<v1::Bake>> reader;
  };
  std::vector<std::unique_ptr<Watch>> watches;
  // Opens watches until one is refused: each one that answers its first message holds a thread.
  grpc::Status refused_watch;
  auto fill = [&] {
    refused_watch = grpc::Status::OK;
    for (int i = 0; i < 2 * kThreads && refused_watch.ok(); ++i) {
      auto w = std::make_unique<Watch>();
      w->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
      v1::WatchBakeRequest req;
      req.set_name(bake);
      w->reader = stub->WatchBake(&w->context, req);
      v1::Bake first;
      if (w->reader->Read(&first)) {
        EXPECT_EQ(first.name(), bake);
        watches.push_back(std::move(w));
      } else {
        refused_watch = w->reader->Finish();
      }
    }
  };
  fill();
  std::printf("--threads=%d: %zu watches held, the next one: %s\n", kThreads, watches.size(),
              refused_watch.ok() ? "answered" : refused_watch.error_message().c_str());
  ASSERT_FALSE(refused_watch.ok()) << 2 * kThreads << " watches held with --threads=" << kThreads;
  EXPECT_EQ(refused_watch.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << refused_watch.error_message();
  EXPECT_GE(static_cast<int>(watches.size()), 1);
  EXPECT_LE(static_cast<int>(watches.size()), kThreads);

  // A unary call on the sync API is refused at once too. Right after a refusal gRPC may have a
  // thread free for a moment (CI saw GetBake answered once): then the pool is filled again and the
  // call tried again, at most 5 times.
  absl::StatusOr<v1::Bake> get;
  double seconds = 0;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    get = client.GetBake(bake);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!get.ok()) break;
    std::printf("GetBake answered with %zu watches held; filling the pool again\n", watches.size());
    fill();
  }
  ASSERT_FALSE(get.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(get.status())) << get.status();
  EXPECT_LT(seconds, 5.0) << "refused at once, not after waiting";
  // Pose holds no sync thread.
  v1::PoseRequest pose;
  pose.set_rig(reg->rig().name());
  *pose.mutable_pose() = PoseToProto(RestPose(MakeTubeForBaking().skeleton));
  pose.mutable_outputs()->set_transforms(true);
  auto posed = client.Pose(pose);
  EXPECT_TRUE(posed.ok()) << posed.status();

  // The watches end; their threads come back.
  for (auto& w : watches) w->context.TryCancel();
  for (auto& w : watches) {
    v1::Bake more;
    while (w->reader->Read(&more)) {
    }
    EXPECT_EQ(w->reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  const absl::Status last = RetryWhileExhausted([&] { return client.GetBake(bake).status(); });
  EXPECT_TRUE(last.ok()) << "still refused after the watches ended: " << last;
  ASSERT_TRUE(client.CancelBake(bake).ok());
  EXPECT_EQ(server.Stop(SIGTERM), 0) << server.Output();
}

// 200 distinct ~20k-vertex rigs (about 2.6 MB each prepared) through a server with a 16 MiB rig
// cache: the cache evicts, stays within its cap, and the process's resident memory levels off
// instead of growing with the number of rigs (it would grow by ~500 MB if every rig stayed).
TEST(Overload, MemoryStaysBoundedOverManyRigs) {
  ServerProcess server(MakeTempDir("store"), {"--cache_mb=16", "--metrics_address=127.0.0.1:0"});
  Client client(Options(server));
  constexpr int kRigs = 200, kSettled = 50;
  int64_t rss_settled = 0, rss_peak_after = 0;
  std::vector<int64_t> samples;
  for (int i = 0; i < kRigs; ++i) {
    const Rig rig = MakeTwoBoneTube(201, 100, 2.0 + 0.001 * i);  // 20,100 vertices
    auto reg = client.CreateRig(RigToProto(rig));
    ASSERT_TRUE(reg.ok()) << "rig " << i << ": " << reg.status();
    ASSERT_TRUE(reg->created()) << "rig " << i << " is distinct";
    v1::PoseRequest req;
    req.set_rig(reg->rig().name());
    *req.mutable_pose() = BentPose(rig, 30);
    req.mutable_outputs()->set_vertices(true);
    auto posed = client.Pose(req);
    ASSERT_TRUE(posed.ok()) << "rig " << i << ": " << posed.status();
    ASSERT_EQ(posed->vertices_size(), 3 * 20100);
    const int64_t rss = ResidentBytes(server.pid());
    ASSERT_GT(rss, 0);
    if ((i + 1) % 10 == 0) samples.push_back(rss);
    if (i + 1 == kSettled) rss_settled = rss;
    if (i + 1 > kSettled) rss_peak_after = std::max(rss_peak_after, rss);
  }
  std::printf("server VmRSS every 10 rigs (MiB):");
  for (int64_t s : samples) std::printf(" %lld", static_cast<long long>(s / kMiB));
  std::printf("\n");
  // Cache cap (16) plus slack for allocator reuse and gRPC buffers.
  EXPECT_LT(rss_peak_after, rss_settled + 64 * kMiB)
      << "after " << kSettled << " rigs: " << rss_settled / kMiB << " MiB, peak afterwards " << rss_peak_after / kMiB;

  const std::optional<double> cache_bytes = Scrape(server, "skinning_rig_cache_bytes");
  const std::optional<double> evictions = Scrape(server, "skinning_rig_cache_evictions_total");
  ASSERT_TRUE(cache_bytes.has_value() && evictions.has_value()) << server.Output();
  EXPECT_LE(*cache_bytes, 16.0 * kMiB);
  EXPECT_GT(*cache_bytes, 0);
  EXPECT_GE(*evictions, kRigs - 16.0 * kMiB / (2 * kMiB)) << "each rig is over 2 MiB, so at most 8 stay";
}

// A PoseClip whose work would take far longer than its deadline: the client gets
// DEADLINE_EXCEEDED at the deadline, the server stops posing frames soon after (its frame counter
// stops well short of the clip) and answers the next call.
TEST(Overload, DeadlinePassedStopsAClip) {
  ServerProcess server(MakeTempDir("store"), {"--metrics_address=127.0.0.1:0"});
  Client client(Options(server));
  // A rig stored without normals, asked for transforms and normals: each frame is skinned in full
  // (into a scratch buffer) but only the two transforms come back, so the answer stays small
  // however many frames are posed.
  const Rig rig = MakeTwoBoneTube(201, 100);
  v1::Rig proto = RigToProto(rig);
  proto.mutable_mesh()->clear_normals();
  auto reg = client.CreateRig(proto);
  ASSERT_TRUE(reg.ok()) << reg.status();
  auto clip = [&](int frames) {
    v1::PoseClipRequest req;
    req.set_rig(reg->rig().name());
    req.set_deformer(v1::DEFORMER_DQS);
    req.mutable_outputs()->set_transforms(true);
    req.mutable_outputs()->set_normals(true);
    for (int f = 0; f < frames; ++f) *req.add_poses() = BentPose(rig, f % 90);
    return req;
  };
  // How long a frame takes here.
  const auto c0 = std::chrono::steady_clock::now();
  auto calibration = client.PoseClip(clip(200));
  ASSERT_TRUE(calibration.ok()) << calibration.status();
  const double frame_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count() / 200;
  const std::optional<double> frames_before = Scrape(server, "skinning_frame_seconds_count", "{method=\"dqs\"}");
  ASSERT_TRUE(frames_before.has_value()) << server.Output();

  constexpr int kFrames = 10000;  // the server's default clip limit
  const auto deadline = std::chrono::milliseconds(std::max<int64_t>(50, static_cast<int64_t>(0.1 * kFrames * frame_s * 1e3)));
  Client hurried(Options(server, deadline));
  const v1::PoseClipRequest long_clip = clip(kFrames);
  const auto t0 = std::chrono::steady_clock::now();
  auto late = hurried.PoseClip(long_clip);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded) << late.status();
  EXPECT_LT(waited, deadline.count() / 1e3 + 1.0);

  // The server stops within a frame or so of the deadline: a little after it, the frame count
  // no longer moves, and it is far short of the whole clip.
  std::this_thread::sleep_for(deadline + std::chrono::milliseconds(300));
  const std::optional<double> settled = Scrape(server, "skinning_frame_seconds_count", "{method=\"dqs\"}");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::optional<double> later = Scrape(server, "skinning_frame_seconds_count", "{method=\"dqs\"}");
  ASSERT_TRUE(settled.has_value() && later.has_value());
  const double posed = *settled - *frames_before;
  std::printf("frame %.0f us, deadline %lld ms: the server posed %.0f of %d frames\n", 1e6 * frame_s,
              static_cast<long long>(deadline.count()), posed, kFrames);
  EXPECT_EQ(*later, *settled) << "the server was still posing frames of the abandoned clip";
  EXPECT_LT(posed, 0.5 * kFrames);

  v1::PoseRequest next;
  next.set_rig(reg->rig().name());
  *next.mutable_pose() = BentPose(rig, 45);
  next.mutable_outputs()->set_transforms(true);
  auto served = client.Pose(next);
  ASSERT_TRUE(served.ok()) << served.status();
  EXPECT_EQ(served->transforms_size(), 24);
}

// --max_message_mb is covered by ServerEndToEnd (BadInputTest.RejectsRequestOverTheSizeLimit);
// here the rig size and clip length limits, which answer RESOURCE_EXHAUSTED naming the limit.
TEST(Overload, RigOverMaxVerticesAndClipOverMaxFramesAreResourceExhausted) {
  ServerProcess server(MakeTempDir("store"), {"--max_vertices=1000", "--max_clip_frames=10"});
  Client client(Options(server));
  const Rig small = MakeTwoBoneTube(21, 16);  // 336 vertices
  auto ok = client.CreateRig(RigToProto(small));
  ASSERT_TRUE(ok.ok()) << ok.status();
  auto big = client.CreateRig(RigToProto(MakeTwoBoneTube(101, 16)));  // 1616 vertices
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted) << big.status();
  EXPECT_THAT(std::string(big.status().message()), HasSubstr("1616 vertices exceed the server limit of 1000"));

  v1::PoseClipRequest clip;
  clip.set_rig(ok->rig().name());
  for (int f = 0; f < 11; ++f) *clip.add_poses() = BentPose(small, f);
  auto refused = client.PoseClip(clip);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("11 frames exceed the server limit of 10"));
  clip.mutable_poses()->RemoveLast();
  EXPECT_TRUE(client.PoseClip(clip).ok());
}

// A glTF upload is held to the same limits from the counts its accessors declare, before any of
// it is decompressed or read: CesiumMan declares 3,273 vertices, RiggedSimple fits.
TEST(Overload, GltfOverMaxVerticesIsRefusedFromItsDeclaredCounts) {
  const std::string cesium = testing::DataPath("gltf/CesiumMan/CesiumMan.glb");
  const std::string simple = testing::DataPath("gltf/RiggedSimple/RiggedSimple.glb");
  SKINNING_REQUIRE_DATA(cesium);
  SKINNING_REQUIRE_DATA(simple);
  ServerProcess server(MakeTempDir("store"), {"--max_vertices=1000"});
  Client client(Options(server));
  auto big = client.CreateRigFromGltf(testing::FileBytes(cesium));
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted) << big.status();
  EXPECT_THAT(std::string(big.status().message()),
              HasSubstr("gltf: the meshes declare 3273 vertices (POSITION elements over every mesh node), more than "
                        "the limit of 1000"));
  auto fits = client.CreateRigFromGltf(testing::FileBytes(simple));
  EXPECT_TRUE(fits.ok()) << fits.status();
}

// An upload whose JSON nests 100,000 arrays (a 200 kB .gltf) is INVALID_ARGUMENT before it is
// parsed: parsing recursed once per level, overflowed the stack and took the server down. The
// same server then still takes the file without them.
TEST(Overload, GltfNestedTooDeepIsRefusedAndTheServerStaysUp) {
  const std::string quad = testing::FileBytes(std::string(SKINNING_SOURCE_DIR) + "/tests/fuzz/seeds/gltf/quad.gltf");
  const size_t end = quad.find_last_of('}');
  ASSERT_NE(end, std::string::npos);
  const std::string deep = quad.substr(0, end) + ",\"extras\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  ServerProcess server(MakeTempDir("store"), {});
  Client client(Options(server));
  auto refused = client.CreateRigFromGltf(deep);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("its JSON nests arrays and objects deeper than 64 levels"));
  auto fits = client.CreateRigFromGltf(quad);
  EXPECT_TRUE(fits.ok()) << fits.status();
}

// What an upload's reader never uses is not parsed (here 300,000 empty materials, beside an image
// that is not base64, which shows it; and 300,000 unknown members of the root, whose removal
// gltf_test checks on the text; 1M empty materials took 2.4 GB parsed before, 1M unknown members
// 165 MB), and the structs its objects would take are held to
// 64 MiB (200,000 more empty nodes, 91 MB of structs, are RESOURCE_EXHAUSTED): the first two
// uploads store the same content-addressed rig as the plain quad, the third is refused naming the
// limit, and the server goes on.
TEST(Overload, GltfUnusedPartsAreNotParsedAndObjectsAreBounded) {
  const std::string quad = testing::FileBytes(std::string(SKINNING_SOURCE_DIR) + "/tests/fuzz/seeds/gltf/quad.gltf");
  const size_t end = quad.find_last_of('}');
  ASSERT_NE(end, std::string::npos);
  auto with = [&](const std::string& member, int n, const std::string& more = "") {
    std::string items;
    items.reserve(3 * n);
    for (int i = 0; i < n; ++i) items += i == 0 ? "{}" : ",{}";
    return quad.substr(0, end) + ",\"" + member + "\":[" + items + "]" + more + "}";
  };
  ServerProcess server(MakeTempDir("store"), {});
  Client client(Options(server));
  auto plain = client.CreateRigFromGltf(quad);
  ASSERT_TRUE(plain.ok()) << plain.status();
  // With an image that is not base64, which the parser refuses when it reads images.
  auto materials =
      client.CreateRigFromGltf(with("materials", 300000, ",\"images\":[{\"uri\":\"data:image/png;base64,%%\"}]"));
  ASSERT_TRUE(materials.ok()) << materials.status();
  EXPECT_EQ(materials->rig().name(), plain->rig().name());
  EXPECT_FALSE(materials->created()) << "the same rig as the plain quad";
  // 300,000 members the parser does not look up, beside the quad's own.
  std::string unknown;
  for (int i = 0; i < 300000; ++i) unknown += absl::StrCat(",\"u", i, "\":{}");
  auto members = client.CreateRigFromGltf(quad.substr(0, end) + unknown + "}");
  ASSERT_TRUE(members.ok()) << members.status();
  EXPECT_EQ(members->rig().name(), plain->rig().name());
  // A second `nodes` member: counted with the quad's own 3 (the parser reads both).
  auto nodes = client.CreateRigFromGltf(with("nodes", 200000));
  ASSERT_FALSE(nodes.ok());
  EXPECT_EQ(nodes.status().code(), absl::StatusCode::kResourceExhausted) << nodes.status();
  EXPECT_THAT(std::string(nodes.status().message()), HasSubstr("(200003 nodes, and others)"));
  EXPECT_THAT(std::string(nodes.status().message()), HasSubstr("more than the limit of 67108864"));
  auto again = client.CreateRigFromGltf(quad);
  EXPECT_TRUE(again.ok()) << again.status();
}

// glTF uploads are read a few at a time (--max_gltf_reads; reading a 44 MB .glb of 1M vertices
// peaked at 450 MB in the server), with a bounded wait (--gltf_read_queue): with one reader and
// no queue, six uploads of a 250,000-vertex grid sent at once overlap, so some are refused with
// RESOURCE_EXHAUSTED naming the flags while the others store the rig; the metrics, scraped every
// 10 ms meanwhile, never show more than one upload being read, nor one waiting; then one more
// upload is taken.
TEST(Overload, GltfUploadsAreReadAFewAtATime) {
  const std::string grid = testing::GridGlb(500);
  ServerProcess server(MakeTempDir("store"),
                       {"--max_gltf_reads=1", "--gltf_read_queue=0", "--metrics_address=127.0.0.1:0"});
  ASSERT_EQ(Scrape(server, "skinning_gltf_uploads_reading"), 0.0);
  std::vector<absl::StatusOr<v1::CreateRigResponse>> results(6, absl::UnknownError("not run"));
  std::atomic<bool> sent{false};
  double most_reading = 0, most_waiting = 0;
  std::thread watcher([&] {
    while (!sent) {
      most_reading = std::max(most_reading, Scrape(server, "skinning_gltf_uploads_reading").value_or(-1));
      most_waiting = std::max(most_waiting, Scrape(server, "skinning_gltf_uploads_waiting").value_or(-1));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  {
    std::vector<std::thread> senders;
    for (size_t k = 0; k < results.size(); ++k) {
      senders.emplace_back([&, k] {
        Client client(Options(server));
        results[k] = client.CreateRigFromGltf(grid);
      });
    }
    for (std::thread& t : senders) t.join();
  }
  sent = true;
  watcher.join();
  EXPECT_EQ(most_reading, 1.0) << "at most one upload read at once, and one seen";
  EXPECT_EQ(most_waiting, 0.0);
  EXPECT_EQ(Scrape(server, "skinning_gltf_uploads_reading"), 0.0);
  int stored = 0, refused = 0;
  std::string rig;
  for (const auto& r : results) {
    if (r.ok()) {
      ++stored;
      if (rig.empty()) rig = r->rig().name();
      EXPECT_EQ(r->rig().name(), rig);
    } else {
      ++refused;
      EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
      EXPECT_EQ(r.status().message(),
                "CreateRig: glTF uploads: this replica reads 1 at once and 0 are waiting, its limits (--max_gltf_reads, "
                "--gltf_read_queue); retry later");
    }
  }
  EXPECT_GE(stored, 1);
  EXPECT_GE(refused, 1) << "six uploads sent at once did not overlap";
  Client client(Options(server));
  auto again = client.CreateRigFromGltf(grid);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->rig().name(), rig);
  EXPECT_EQ(again->rig().vertex_count(), 250000);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
