// Bake jobs through the real server: progress, cancel, reuse, restart, bad input.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/client.h"
#include "core/io/dmat.h"
#include "core/io/medit.h"
#include "core/io/tgf.h"
#include "core/weights/bake.h"
#include "server/convert/convert.h"
#include "skinning/internal/v1/store.pb.h"
#include "tests/support/data.h"
#include "tests/support/gltf_validator.h"
#include "tests/support/fixtures.h"
#include "tests/support/http_client.h"
#include "tests/support/server_process.h"
#include "tests/support/stored_file.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::BinaryPath;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::RunCommand;
using ::skinning::testing::ScrapeMetric;
using ::skinning::testing::ServerProcess;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

ClientOptions Options(const ServerProcess& server) {
  ClientOptions o;
  o.target = server.address();
  o.deadline = std::chrono::seconds(60);
  return o;
}

v1::Rig TubeWithoutWeights() { return RigToProto(testing::MakeTubeForBaking()); }

// The stored file of bake `name` (rigs/{rig}/bakes/{bake}): the store keeps bakes by id.
std::string StoredBakePath(const std::string& store, const std::string& name) {
  return store + "/bakes/" + name.substr(name.rfind('/') + 1) + ".pb";
}
bool StoredBakeExists(const std::string& store, const std::string& name) {
  return std::filesystem::exists(StoredBakePath(store, name));
}

// Cancels a running bake (last seen as `running`): CANCELLED within a second, nothing stored.
void ExpectPromptCancel(Client& client, const std::string& store, const v1::Bake& running) {
  const auto t0 = std::chrono::steady_clock::now();
  auto cancelled = client.CancelBake(running.name());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->metadata().state(), v1::BAKE_STATE_CANCELLED);
  EXPECT_TRUE(cancelled->done());
  EXPECT_EQ(cancelled->error().code(), static_cast<int>(absl::StatusCode::kCancelled));
  EXPECT_LT(seconds, 1.0);
  std::printf("cancel took %.3f s (at %.0f%%, stage %s)\n", seconds, 100 * running.metadata().progress_fraction(),
              running.metadata().stage().c_str());
  EXPECT_FALSE(StoredBakeExists(store, running.name()));
}

// BBW options at a voxel resolution.
v1::BakeOptions Bbw(int resolution) {
  v1::BakeOptions options;
  options.mutable_bbw();
  options.mutable_domain()->set_voxel_resolution(resolution);
  return options;
}

// Watches the bake named `name` to its end: the finished bake, or a failure recorded and an
// empty name when it did not succeed.
v1::Bake WatchToSuccess(Client& client, const std::string& name) {
  auto done = client.WatchBake(name, [](const v1::Bake&) { return true; });
  EXPECT_TRUE(done.ok()) << name << ": " << done.status();
  if (!done.ok()) return {};
  EXPECT_EQ(done->metadata().state(), v1::BAKE_STATE_SUCCEEDED) << name << ": " << done->error().message();
  if (done->metadata().state() != v1::BAKE_STATE_SUCCEEDED) return {};
  return *done;
}

// Starts a bake of `rig` and watches it to its end, as WatchToSuccess.
v1::Bake BakeToTheEnd(Client& client, const std::string& rig, const v1::BakeOptions& options) {
  auto started = client.StartBake(rig, options);
  EXPECT_TRUE(started.ok()) << started.status();
  if (!started.ok()) return {};
  return WatchToSuccess(client, started->bake().name());
}

TEST(BakeJobs, ProgressIsMonotonicAndReachesOneThenWeightsAreServed) {
  const std::string store = MakeTempDir("store");
  ServerProcess server(store);
  Client client(Options(server));
  auto reg = client.CreateRig(TubeWithoutWeights());
  ASSERT_TRUE(reg.ok()) << reg.status();
  v1::BakeOptions options = Bbw(48);
  auto started = client.StartBake(reg->rig().name(), options);
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_TRUE(started->created());
  EXPECT_EQ(started->bake().options().influence_count(), 4) << "defaults are filled in";
  std::vector<double> fractions;
  auto last = client.WatchBake(started->bake().name(), [&](const v1::Bake& s) {
    fractions.push_back(s.metadata().progress_fraction());
    return true;
  });
  ASSERT_TRUE(last.ok()) << last.status();
  ASSERT_EQ(last->metadata().state(), v1::BAKE_STATE_SUCCEEDED) << last->error().message();
  EXPECT_TRUE(last->done());
  ASSERT_GE(fractions.size(), 2u);
  for (size_t i = 1; i < fractions.size(); ++i) EXPECT_GE(fractions[i], fractions[i - 1]) << "at update " << i;
  EXPECT_EQ(fractions.back(), 1.0);
  EXPECT_TRUE(StoredBakeExists(store, started->bake().name()));
  EXPECT_THAT(last->response().report().domain(), HasSubstr("voxel grid 48"));

  auto weights = client.GetWeights(started->bake().name());
  ASSERT_TRUE(weights.ok()) << weights.status();
  ASSERT_TRUE(weights->weights().has_sparse());
  const auto& sw = weights->weights().sparse();
  EXPECT_EQ(sw.influence_count(), 2) << "two joints: top-4 keeps both";
  for (int i = 0; i < sw.weights_size() / 2; ++i)
    EXPECT_NEAR(sw.weights(2 * i) + sw.weights(2 * i + 1), 1.0, 1e-6);

  // Posing with the bake's weights: the far end follows the elbow rigidly.
  v1::PoseRequest req;
  req.set_rig(reg->rig().name());
  req.set_bake(started->bake().name());
  auto rig = RigFromProto(TubeWithoutWeights());
  ASSERT_TRUE(rig.ok());
  Pose pose = RestPose(rig->skeleton);
  pose.local[1].rotation = Eigen::AngleAxisd(M_PI / 2, Eigen::Vector3d::UnitZ());
  *req.mutable_pose() = PoseToProto(pose);
  auto posed = client.Pose(req);
  ASSERT_TRUE(posed.ok()) << posed.status();
  const int last_vertex = static_cast<int>(rig->mesh.V.rows()) - 1;  // at x = 2 on the tube's far ring
  const Eigen::Vector3d p(posed->vertices(3 * last_vertex), posed->vertices(3 * last_vertex + 1),
                          posed->vertices(3 * last_vertex + 2));
  const Eigen::Vector3d rest = rig->mesh.V.row(last_vertex);
  const Eigen::Vector3d expected = Eigen::Vector3d(1, 0, 0) + Eigen::AngleAxisd(M_PI / 2, Eigen::Vector3d::UnitZ()) * (rest - Eigen::Vector3d(1, 0, 0));
  EXPECT_LT((p - expected).norm(), 0.02) << p.transpose() << " vs " << expected.transpose();

  // A pose session takes its bake from its first message. A later message naming another bake is
  // refused; it used to be answered OK, posed with the first message's weights.
  auto stub = v1::PoseService::NewStub(grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  auto stream = stub->PoseSession(&context);
  v1::PoseSessionRequest frame;
  frame.set_rig(reg->rig().name());
  frame.set_bake(started->bake().name());
  *frame.mutable_pose() = PoseToProto(pose);
  v1::PoseSessionResponse answer;
  ASSERT_TRUE(stream->Write(frame) && stream->Read(&answer));
  frame.clear_rig();  // naming the same bake again is fine
  ASSERT_TRUE(stream->Write(frame) && stream->Read(&answer));
  const std::string other = started->bake().name().substr(0, started->bake().name().size() - 1) + "0";
  frame.set_bake(other == started->bake().name() ? other.substr(0, other.size() - 1) + "1" : other);
  stream->Write(frame);
  EXPECT_FALSE(stream->Read(&answer));
  const grpc::Status refused = stream->Finish();
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << refused.error_message();
  EXPECT_THAT(refused.error_message(),
              HasSubstr("differs from the session's bake '" + started->bake().name() + "'; the first message chooses"));
}

// A mesh that encloses no volume (the tube flattened into a double-sided strip, as a flat cut-out
// character is) bakes with the volumetric methods on a sheet of its surface cells; it used to be
// refused ("mesh has no inside").
TEST(BakeJobs, AFlatMeshBakesWithTheVolumetricMethodsOnASheetOfItsSurfaceCells) {
  ServerProcess server(MakeTempDir("store"));
  Client client(Options(server));
  Rig flat = *RigFromProto(TubeWithoutWeights());
  flat.mesh.V.col(2).setZero();  // the strip x in [0, 2], |y| <= 0.25; bones 0-1 and 1-1.9 on x
  auto reg = client.CreateRig(RigToProto(flat));
  ASSERT_TRUE(reg.ok()) << reg.status();
  Pose pose = RestPose(flat.skeleton);
  const Eigen::AngleAxisd bend(M_PI / 2, Eigen::Vector3d::UnitZ());  // in the strip's plane
  pose.local[1].rotation = bend;
  for (const bool bbw : {false, true}) {
    SCOPED_TRACE(bbw ? "bbw" : "geodesic_voxel");
    v1::BakeOptions options;
    if (bbw) options.mutable_bbw();
    else options.mutable_geodesic_voxel();
    options.mutable_domain()->set_voxel_resolution(32);
    const v1::Bake done = BakeToTheEnd(client, reg->rig().name(), options);
    ASSERT_FALSE(done.name().empty());
    EXPECT_THAT(done.response().report().domain(), HasSubstr("surface cells only: the mesh encloses no volume"));
    auto weights = client.GetWeights(done.name());
    ASSERT_TRUE(weights.ok()) << weights.status();
    const auto& sw = weights->weights().sparse();
    ASSERT_EQ(sw.influence_count(), 2);
    // Each vertex's weights sum to 1; the root's half is the root's, the far end the elbow's.
    for (int i = 0; i < flat.mesh.V.rows(); ++i) {
      const double sum = sw.weights(2 * i) + sw.weights(2 * i + 1);
      EXPECT_NEAR(sum, 1.0, 1e-6) << "vertex " << i;
      const double elbow = (sw.joints(2 * i) == 1 ? sw.weights(2 * i) : 0.0) +
                           (sw.joints(2 * i + 1) == 1 ? sw.weights(2 * i + 1) : 0.0);
      const double x = flat.mesh.V(i, 0);
      if (x <= 0.5) {
        EXPECT_LT(elbow, 0.05) << "vertex " << i << " at x = " << x;
      }
      if (x >= 1.5) {
        EXPECT_GT(elbow, 0.95) << "vertex " << i << " at x = " << x;
      }
    }
    // Posed: the far end turns with the elbow, and the two layers of the strip stay together.
    v1::PoseRequest req;
    req.set_rig(reg->rig().name());
    req.set_bake(done.name());
    *req.mutable_pose() = PoseToProto(pose);
    auto posed = client.Pose(req);
    ASSERT_TRUE(posed.ok()) << posed.status();
    auto at = [&](int i) {
      return Eigen::Vector3d(posed->vertices(3 * i), posed->vertices(3 * i + 1), posed->vertices(3 * i + 2));
    };
    const int rings = 41, segments = 24;
    for (int r = 0; r < rings; ++r)
      for (int s = 1; s < segments / 2; ++s) {
        // Angles a and −a: one point up to the rounding of sin and cos (1e-16), welded.
        const int i = r * segments + s, copy = r * segments + segments - s;
        EXPECT_LT((at(i) - at(copy)).norm(), 1e-12) << "ring " << r << " tears";
      }
    const int tip = rings * segments - 1;
    const Eigen::Vector3d elbow(1, 0, 0), rest = flat.mesh.V.row(tip);
    EXPECT_LT((at(tip) - (elbow + bend * (rest - elbow))).norm(), 0.02);
  }
}

TEST(BakeJobs, RepeatedStartReturnsTheSameJobOrTheStoredResultWithoutRecomputing) {
  const std::string store = MakeTempDir("store");
  ServerProcess server(store);
  Client client(Options(server));
  auto reg = client.CreateRig(TubeWithoutWeights());
  ASSERT_TRUE(reg.ok());
  v1::BakeOptions options = Bbw(64);
  auto first = client.StartBake(reg->rig().name(), options);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = client.StartBake(reg->rig().name(), options);  // while queued or running
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->bake().name(), first->bake().name());
  EXPECT_FALSE(second->created());
  EXPECT_FALSE(second->bake().done()) << "the first bake has not finished yet";
  const v1::Bake done = WatchToSuccess(client, first->bake().name());
  ASSERT_FALSE(done.name().empty());
  const auto path = StoredBakePath(store, first->bake().name());
  const auto written = std::filesystem::last_write_time(path);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));

  // Options spelled differently but equal after defaults are the same bake.
  v1::BakeOptions same = options;
  same.set_influence_count(4);
  auto third = client.StartBake(reg->rig().name(), same);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->bake().name(), first->bake().name());
  EXPECT_FALSE(third->created());
  EXPECT_EQ(third->bake().metadata().state(), v1::BAKE_STATE_SUCCEEDED);
  EXPECT_EQ(third->bake().response().report().total_duration().nanos(),
            done.response().report().total_duration().nanos());
  EXPECT_EQ(third->bake().response().report().total_duration().seconds(),
            done.response().report().total_duration().seconds());
  EXPECT_EQ(std::filesystem::last_write_time(path), written) << "the stored bake was not rewritten";

  // Different options are a different bake.
  options.mutable_domain()->set_voxel_resolution(32);
  auto other = client.StartBake(reg->rig().name(), options);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->bake().name(), first->bake().name());
}

TEST(BakeJobs, CancelStopsWithinASecondAndStoresNothing) {
  const std::string store = MakeTempDir("store");
  ServerProcess server(store);
  Client client(Options(server));
  auto reg = client.CreateRig(TubeWithoutWeights());
  ASSERT_TRUE(reg.ok());
  v1::BakeOptions options = Bbw(256);  // minutes of work: it will not finish on its own here
  auto started = client.StartBake(reg->rig().name(), options);
  ASSERT_TRUE(started.ok()) << started.status();
  // Let it get going.
  auto running = client.WatchBake(started->bake().name(), [](const v1::Bake& s) {
    return s.metadata().state() != v1::BAKE_STATE_RUNNING || s.metadata().progress_fraction() < 0.01;
  });
  ASSERT_TRUE(running.ok());
  ASSERT_EQ(running->metadata().state(), v1::BAKE_STATE_RUNNING);
  ExpectPromptCancel(client, store, *running);
  auto weights = client.GetWeights(started->bake().name());
  EXPECT_EQ(weights.status().code(), absl::StatusCode::kFailedPrecondition) << weights.status();
  EXPECT_THAT(std::string(weights.status().message()), HasSubstr("CANCELLED"));
}

// Cancel in the middle of the BBW solve (the long stage) of a real character at the default
// resolution: factorizations are not interruptible, so this is where a slow cancel would show.
TEST(BakeJobs, CancelDuringTheSolveStopsWithinASecond) {
  const std::string mesh_path = testing::DataPath("libigl/hand/hand.mesh");
  SKINNING_REQUIRE_DATA(mesh_path);
  auto tets = ReadMedit(mesh_path);
  auto graph = ReadTgf(testing::DataPath("libigl/hand/hand.tgf"));
  ASSERT_TRUE(tets.ok() && graph.ok());
  Rig rig;
  rig.name = "hand";
  rig.mesh.V = tets->V.topRows(tets->F.maxCoeff() + 1);
  rig.mesh.F = tets->F;
  rig.skeleton = *SkeletonFromBones(*graph);
  const std::string store = MakeTempDir("store");
  ServerProcess server(store);
  Client client(Options(server));
  auto reg = client.CreateRig(RigToProto(rig));
  ASSERT_TRUE(reg.ok()) << reg.status();
  auto started = client.StartBake(reg->rig().name(), v1::BakeOptions());  // BBW, resolution 64
  ASSERT_TRUE(started.ok()) << started.status();
  auto solving = client.WatchBake(started->bake().name(), [](const v1::Bake& s) {
    return !(s.metadata().stage() == "bbw" && s.metadata().progress_fraction() > 0.3);
  });
  ASSERT_TRUE(solving.ok());
  ASSERT_EQ(solving->metadata().state(), v1::BAKE_STATE_RUNNING) << "the bake should still be solving";
  ExpectPromptCancel(client, store, *solving);
}

TEST(BakeJobs, StoredWeightsAreServedAfterARestart) {
  const std::string store = MakeTempDir("store");
  std::string rig_name, bake_name;
  v1::GetWeightsResponse before;
  {
    ServerProcess server(store);
    Client client(Options(server));
    auto reg = client.CreateRig(TubeWithoutWeights());
    ASSERT_TRUE(reg.ok());
    rig_name = reg->rig().name();
    v1::BakeOptions options;
    options.mutable_geodesic_voxel();
    options.mutable_domain()->set_voxel_resolution(40);
    auto started = client.StartBake(rig_name, options);
    ASSERT_TRUE(started.ok()) << started.status();
    bake_name = started->bake().name();
    ASSERT_FALSE(WatchToSuccess(client, bake_name).name().empty());
    auto w = client.GetWeights(bake_name, v1::WEIGHTS_FORMAT_DENSE);
    ASSERT_TRUE(w.ok());
    before = *w;
    ASSERT_EQ(server.Stop(SIGTERM), 0);
  }
  ServerProcess server(store);
  Client client(Options(server));
  auto status = client.GetBake(bake_name);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->metadata().state(), v1::BAKE_STATE_SUCCEEDED);
  EXPECT_TRUE(status->done());
  auto after = client.GetWeights(bake_name, v1::WEIGHTS_FORMAT_DENSE);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->weights().dense().values_size(), before.weights().dense().values_size());
  for (int i = 0; i < after->weights().dense().values_size(); ++i)
    ASSERT_EQ(after->weights().dense().values(i), before.weights().dense().values(i));
  v1::PoseRequest req;
  req.set_rig(rig_name);
  req.set_bake(bake_name);
  EXPECT_TRUE(client.Pose(req).ok());
  ASSERT_EQ(server.Stop(SIGTERM), 0);

  // A stored bake damaged where it still parses (one weight changed, so that its row no longer
  // sums to 1): its uses are DATA_LOSS, and StartBake computes it again instead of answering
  // SUCCEEDED from its header for ever; the new one serves the weights of before. (Written back
  // without the store's header, as a store written before the framing holds it: with the header
  // kept, its CRC-32 would catch the change first.)
  {
    internal::v1::StoredBake stored;
    ASSERT_TRUE(stored.ParseFromString(testing::StoredPayload(StoredBakePath(store, bake_name))));
    ASSERT_GT(stored.artifact().weights().values_size(), 0);
    stored.mutable_artifact()->mutable_weights()->set_values(0, stored.artifact().weights().values(0) + 0.25);
    std::ofstream(StoredBakePath(store, bake_name), std::ios::binary | std::ios::trunc) << stored.SerializeAsString();
  }
  ServerProcess damaged(store);
  Client again(Options(damaged));
  auto refused = again.GetWeights(bake_name, v1::WEIGHTS_FORMAT_DENSE);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kDataLoss) << refused.status();
  v1::BakeOptions options;
  options.mutable_geodesic_voxel();
  options.mutable_domain()->set_voxel_resolution(40);
  auto restarted = again.StartBake(rig_name, options);
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  EXPECT_EQ(restarted->bake().name(), bake_name);
  EXPECT_NE(restarted->bake().metadata().state(), v1::BAKE_STATE_SUCCEEDED) << "answered from the damaged header";
  ASSERT_FALSE(WatchToSuccess(again, bake_name).name().empty());
  auto mended = again.GetWeights(bake_name, v1::WEIGHTS_FORMAT_DENSE);
  ASSERT_TRUE(mended.ok()) << mended.status();
  EXPECT_EQ(mended->weights().SerializeAsString(), before.weights().SerializeAsString());
}

// A WatchBake of one bake on its own thread: `running` once it reports RUNNING, `status` and
// `ended` once the watch returns (after Join; the destructor joins too).
class BackgroundWatch {
 public:
  BackgroundWatch(Client& client, const std::string& bake)
      : thread_([this, &client, bake] {
          status = client
                       .WatchBake(bake,
                                  [this](const v1::Bake& b) {
                                    if (b.metadata().state() == v1::BAKE_STATE_RUNNING) running = true;
                                    last = b;
                                    return true;
                                  })
                       .status();
          ended = std::chrono::steady_clock::now();
        }) {}
  ~BackgroundWatch() { Join(); }
  bool WaitRunning() {
    for (int i = 0; i < 400 && !running; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return running;
  }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }

  std::atomic<bool> running{false};
  absl::Status status;
  v1::Bake last;  // the last state the watch saw (read after Join)
  std::chrono::steady_clock::time_point ended;

 private:
  std::thread thread_;  // last: it starts once the members above exist
};

// Registers the tube, starts a resolution-80 BBW bake of it and watches it until it runs (null,
// with a failure recorded, when any step fails). `rig_name`, when given, gets the rig's name.
std::unique_ptr<BackgroundWatch> WatchARunningBake(Client& client, std::string* rig_name = nullptr) {
  auto reg = client.CreateRig(TubeWithoutWeights());
  EXPECT_TRUE(reg.ok()) << reg.status();
  if (!reg.ok()) return nullptr;
  if (rig_name != nullptr) *rig_name = reg->rig().name();
  auto started = client.StartBake(reg->rig().name(), Bbw(80));
  EXPECT_TRUE(started.ok()) << started.status();
  if (!started.ok()) return nullptr;
  auto watch = std::make_unique<BackgroundWatch>(client, started->bake().name());
  EXPECT_TRUE(watch->WaitRunning()) << "the bake did not start";
  return watch;
}

// A rig deleted while its bake runs: the bake ends FAILED saying so, and stores nothing (no call
// could reach it: every call on a bake checks access to its rig). It used to run on and store
// its result.
TEST(BakeJobs, ABakeWhoseRigIsDeletedWhileItRunsEndsFailedAndStoresNothing) {
  const std::string store = MakeTempDir("store");
  ServerProcess server(store);
  Client client(Options(server));
  std::string rig_name;
  const std::unique_ptr<BackgroundWatch> watch = WatchARunningBake(client, &rig_name);
  ASSERT_TRUE(watch && watch->running);
  const auto deleted = std::chrono::steady_clock::now();
  ASSERT_TRUE(client.DeleteRig(rig_name).ok());
  watch->Join();
  std::printf("the bake ended %.1f s after its rig was deleted\n",
              std::chrono::duration<double>(watch->ended - deleted).count());
  ASSERT_TRUE(watch->status.ok()) << watch->status;
  EXPECT_EQ(watch->last.metadata().state(), v1::BAKE_STATE_FAILED) << watch->last.DebugString();
  EXPECT_EQ(watch->last.error().code(), static_cast<int>(absl::StatusCode::kNotFound));
  EXPECT_THAT(watch->last.error().message(),
              HasSubstr("was deleted while its bake ran (by DeleteRig, or the store lost it: register it again)"));
  EXPECT_FALSE(StoredBakeExists(store, watch->last.name()));
}

// The files of the store under `prefix` (a path relative to the store, e.g. "rig-bakes/"),
// temporary files of writes included.
std::vector<std::string> StoredFiles(const std::string& store, const std::string& prefix) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(store)) {
    const std::string key = std::filesystem::relative(entry.path(), store).generic_string();
    if (entry.is_regular_file() && key.rfind(prefix, 0) == 0) files.push_back(key);
  }
  return files;
}

// The keys of the store under `prefix`: its files but the temporary file of a write in progress
// ("<key>.tmp.<writer>"), which a running bake's record rewrite (at most once a second) shows
// for a moment.
std::vector<std::string> StoredKeys(const std::string& store, const std::string& prefix) {
  std::vector<std::string> keys = StoredFiles(store, prefix);
  keys.erase(std::remove_if(keys.begin(), keys.end(),
                            [](const std::string& k) { return k.find(".tmp.") != std::string::npos; }),
             keys.end());
  return keys;
}

// Deleting a rig deletes its stored bakes: before, they stayed in the store where no call could
// reach them, and registering the same rig again (same content, same name) served the old bakes
// without baking.
TEST(BakeJobs, DeletingARigDeletesItsStoredBakes) {
  const std::string store = MakeTempDir("store");
  ServerProcess server(store);
  Client client(Options(server));
  auto reg = client.CreateRig(TubeWithoutWeights());
  ASSERT_TRUE(reg.ok()) << reg.status();
  const std::string rig = reg->rig().name();
  auto other = client.CreateRig(RigToProto(testing::MakeTwoBoneTube()));  // keeps its bake
  ASSERT_TRUE(other.ok()) << other.status();
  auto bake = [&](const std::string& parent, int resolution) -> std::string {
    const std::string name = BakeToTheEnd(client, parent, Bbw(resolution)).name();
    EXPECT_TRUE(name.empty() || StoredBakeExists(store, name));
    return name;
  };
  const std::string coarse = bake(rig, 16), fine = bake(rig, 24), kept = bake(other->rig().name(), 16);
  ASSERT_FALSE(coarse.empty() || fine.empty() || kept.empty());
  EXPECT_EQ(StoredFiles(store, "rig-bakes/").size(), 3u) << "one index entry per stored bake";

  ASSERT_TRUE(client.DeleteRig(rig).ok());
  EXPECT_FALSE(StoredBakeExists(store, coarse));
  EXPECT_FALSE(StoredBakeExists(store, fine));
  EXPECT_TRUE(StoredBakeExists(store, kept)) << "another rig's bake went too";
  EXPECT_THAT(StoredFiles(store, "rig-bakes/"),
              ::testing::ElementsAre(absl::StrCat("rig-bakes/", other->rig().name().substr(5), "/",
                                                  kept.substr(kept.rfind('/') + 1))));
  EXPECT_TRUE(client.GetBake(kept).ok());

  // The same rig registered again has the same name and no bakes: they are computed anew.
  auto again = client.CreateRig(TubeWithoutWeights());
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->rig().name(), rig);
  EXPECT_EQ(client.GetBake(coarse).status().code(), absl::StatusCode::kNotFound) << client.GetBake(coarse).status();
  auto restarted = client.StartBake(rig, Bbw(16));
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  EXPECT_EQ(restarted->bake().name(), coarse);
  EXPECT_TRUE(restarted->created()) << "the deleted rig's bake was served again";
  EXPECT_EQ(server.Stop(SIGTERM), 0);
}

// A store written by servers older than the rig-bakes index: its bakes have no entry (the test
// removes them), and one of them belongs to a rig deleted back then. At start the server indexes
// the others under their rig and deletes the orphan; DeleteRig then takes the indexed bakes too.
// Before, such bakes stayed in the store for good.
TEST(BakeJobs, BakesOfOlderServersAreIndexedAtStartAndGoWithTheirRig) {
  const std::string store = MakeTempDir("store");
  std::string rig, other_rig, gone_rig, kept, orphan;
  {
    ServerProcess server(store);
    Client client(Options(server));
    auto reg = client.CreateRig(TubeWithoutWeights());
    auto other = client.CreateRig(RigToProto(testing::MakeTwoBoneTube()));
    auto gone = client.CreateRig(RigToProto(testing::MakeTwoBoneTube(11)));
    ASSERT_TRUE(reg.ok() && other.ok() && gone.ok());
    rig = reg->rig().name();
    other_rig = other->rig().name();
    gone_rig = gone->rig().name();
    kept = BakeToTheEnd(client, other_rig, Bbw(16)).name();
    const std::string mine = BakeToTheEnd(client, rig, Bbw(16)).name();
    orphan = BakeToTheEnd(client, gone_rig, Bbw(16)).name();
    ASSERT_FALSE(kept.empty() || mine.empty() || orphan.empty());
    // As an older server did it: the rig deleted, its bake left (no index to find it by).
    std::filesystem::remove_all(std::filesystem::path(store) / "rig-bakes");
    ASSERT_TRUE(client.DeleteRig(gone_rig).ok());
    ASSERT_TRUE(StoredBakeExists(store, orphan));
    EXPECT_EQ(server.Stop(SIGTERM), 0);
  }
  ServerProcess server(store);
  Client client(Options(server));
  EXPECT_FALSE(StoredBakeExists(store, orphan)) << "the bake of the rig deleted before the index stayed";
  EXPECT_EQ(StoredFiles(store, "rig-bakes/").size(), 2u);
  ASSERT_TRUE(client.DeleteRig(rig).ok());
  EXPECT_EQ(StoredFiles(store, "bakes/").size(), 1u) << "the deleted rig's older bake stayed";
  EXPECT_TRUE(StoredBakeExists(store, kept));
  EXPECT_TRUE(client.GetBake(kept).ok());
  EXPECT_EQ(server.Stop(SIGTERM), 0);
  EXPECT_THAT(server.Output(), HasSubstr("skinning-server store: bakes of older servers: 2 indexed under their "
                                         "rig, 1 deleted (their rig was deleted), 0 unreadable"));
  // Every bake has its entry now: the next start has nothing to say.
  ServerProcess again(store);
  EXPECT_EQ(again.Stop(SIGTERM), 0);
  EXPECT_THAT(again.Output(), ::testing::Not(HasSubstr("bakes of older servers")));
}

// An open pose session whose rig is deleted ends with NOT_FOUND at its next frame once a second
// has passed (sessions ask the store again at most once a second). It used to go on posing the
// deleted rig from the memory of its first frame, while unary calls already got NOT_FOUND.
TEST(BakeJobs, AnOpenPoseSessionEndsWhenItsRigIsDeleted) {
  const std::string store = MakeTempDir("store");
  ServerProcess server(store);
  Client client(Options(server));
  auto reg = client.CreateRig(TubeWithoutWeights());
  ASSERT_TRUE(reg.ok()) << reg.status();
  const std::string bake = BakeToTheEnd(client, reg->rig().name(), Bbw(16)).name();
  ASSERT_FALSE(bake.empty());

  auto stub = v1::PoseService::NewStub(grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));  // a session left open
  auto stream = stub->PoseSession(&context);
  v1::PoseSessionRequest frame;
  frame.set_rig(reg->rig().name());
  frame.set_bake(bake);
  v1::PoseSessionResponse answer;
  ASSERT_TRUE(stream->Write(frame) && stream->Read(&answer));
  frame.clear_rig();
  frame.clear_bake();
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // a check is due: the rig is there
  ASSERT_TRUE(stream->Write(frame) && stream->Read(&answer)) << "a frame of a stored rig was refused";

  ASSERT_TRUE(client.DeleteRig(reg->rig().name()).ok());
  EXPECT_EQ(client.Pose([&] {
                  v1::PoseRequest req;
                  req.set_rig(reg->rig().name());
                  req.set_bake(bake);
                  return req;
                }())
                .status()
                .code(),
            absl::StatusCode::kNotFound);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  stream->Write(frame);
  EXPECT_FALSE(stream->Read(&answer)) << "the session posed a deleted rig";
  stream->WritesDone();
  const grpc::Status ended = stream->Finish();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::NOT_FOUND) << ended.error_message();
  EXPECT_THAT(ended.error_message(),
              HasSubstr("frame 3: rig '" + reg->rig().name() + "' was deleted while the session was open"));
}

// A watch cut by the server's shutdown: the drain answers UNAVAILABLE, the client's retry lands in
// the last moments of the shutdown where gRPC answers CANCELLED (skinctl bake then ended with a
// bare "CANCELLED" 6 times out of 7), and the retry after that finds no server. The client
// retries the server's CANCELLED too, so the watch ends UNAVAILABLE (what a caller retries
// elsewhere), never CANCELLED.
TEST(BakeJobs, AWatchCutByTheServersShutdownEndsUnavailable) {
  for (int round = 0; round < 3; ++round) {
    ServerProcess server(MakeTempDir("store"));
    ClientOptions o = Options(server);
    o.max_attempts = 4;
    o.initial_backoff = std::chrono::milliseconds(20);
    o.deadline = std::chrono::milliseconds(1500);  // how long the watch tries to reconnect
    Client client(o);
    const std::unique_ptr<BackgroundWatch> watch = WatchARunningBake(client);
    ASSERT_TRUE(watch && watch->running);
    EXPECT_EQ(server.Stop(SIGTERM), 0);
    watch->Join();
    EXPECT_EQ(watch->status.code(), absl::StatusCode::kUnavailable) << "round " << round << ": " << watch->status;
  }
}

// A watch outlives a replica that restarts: the client opens the stream again until it has
// failed for its deadline (it gave up 0.8 s after a crash). A restarted server that lost the
// running bake (its record in the store, bakejobs/, is gone: removed here) makes the watch say so
// instead of a bare NOT_FOUND. The watch finds the restarted server within its backoff (at most
// 200 ms here) and an answer: the client used to sleep between attempts without polling the
// channel, and learned of the server only from gRPC's backup poller, every 5 s.
TEST(BakeJobs, AWatchReconnectsToARestartedServerAndSaysTheBakeIsGone) {
  const std::string store = MakeTempDir("store");
  auto server = std::make_unique<ServerProcess>(store);
  const int port = server->port();
  ClientOptions o = Options(*server);
  o.deadline = std::chrono::seconds(20);
  o.max_backoff = std::chrono::milliseconds(200);
  Client client(o);
  const std::unique_ptr<BackgroundWatch> watch = WatchARunningBake(client);
  ASSERT_TRUE(watch && watch->running);
  EXPECT_EQ(server->Stop(SIGKILL), 128 + SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  std::filesystem::remove_all(std::filesystem::path(store) / "bakejobs");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  server = std::make_unique<ServerProcess>(store, std::vector<std::string>{absl::StrCat("--address=127.0.0.1:", port)});
  ASSERT_EQ(server->port(), port);
  const auto came_back = std::chrono::steady_clock::now();
  watch->Join();
  EXPECT_EQ(watch->status.code(), absl::StatusCode::kNotFound) << watch->status;
  EXPECT_THAT(std::string(watch->status.message()),
              HasSubstr("the bake is gone after the server went away and came back"));
  EXPECT_GE(watch->ended - killed, std::chrono::milliseconds(1500)) << "the watch ended before the server came back";
  EXPECT_LT(watch->ended - came_back, std::chrono::seconds(2))
      << "the watch took " << std::chrono::duration<double>(watch->ended - came_back).count()
      << " s to find the restarted server";
  EXPECT_EQ(server->Stop(SIGTERM), 0);
}

// Waits up to `limit` for `text` in the server's output; whether it came.
bool WaitForOutput(ServerProcess& server, const std::string& text, std::chrono::seconds limit) {
  const auto t0 = std::chrono::steady_clock::now();
  while (server.Output().find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() - t0 >= limit) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return true;
}

// A server on `store` running a BBW bake (resolution 80, a few seconds) of the tube: the bake's
// name, or empty after a failure.
struct ServerWithRunningBake {
  std::unique_ptr<ServerProcess> server;
  std::string bake;
};
ServerWithRunningBake StartServerWithRunningBake(const std::string& store) {
  ServerWithRunningBake r{std::make_unique<ServerProcess>(store), ""};
  Client client(Options(*r.server));
  auto reg = client.CreateRig(TubeWithoutWeights());
  EXPECT_TRUE(reg.ok()) << reg.status();
  if (!reg.ok()) return r;
  auto started = client.StartBake(reg->rig().name(), Bbw(80));
  EXPECT_TRUE(started.ok()) << started.status();
  if (!started.ok()) return r;
  auto got_going = client.WatchBake(started->bake().name(),
                                    [](const v1::Bake& b) { return b.metadata().state() != v1::BAKE_STATE_RUNNING; });
  EXPECT_TRUE(got_going.ok()) << got_going.status();
  if (!got_going.ok() || got_going->metadata().state() != v1::BAKE_STATE_RUNNING) return r;
  r.bake = started->bake().name();
  return r;
}

// Watches the bake named `bake` on `server` (started again there after a restart) to its end,
// through a client that waits up to 120 s: it must succeed and leave no record in `store`
// (bakejobs/).
void ExpectStartedAgainAndSucceeds(ServerProcess& server, const std::string& store, const std::string& bake) {
  ClientOptions o = Options(server);
  o.deadline = std::chrono::seconds(120);
  Client client(o);
  ASSERT_FALSE(WatchToSuccess(client, bake).name().empty());
  EXPECT_TRUE(StoredFiles(store, "bakejobs/").empty()) << "every record goes with its bake's end";
}

// Without --redis, the bakes queued or running when the server stops (SIGTERM or SIGKILL) are
// started again by the server restarted on the same store: each has a record in the store from
// when it is queued until it ends (bakejobs/). One cancelled with CancelBake is not. They used to
// be lost (NOT_FOUND after the restart: start them again).
TEST(BakeJobs, UnfinishedBakesAreStartedAgainAfterARestart) {
  const std::string store = MakeTempDir("store");
  std::string rig, running, queued, cancelled;
  {
    ServerProcess server(store);
    Client client(Options(server));
    auto reg = client.CreateRig(TubeWithoutWeights());
    ASSERT_TRUE(reg.ok()) << reg.status();
    rig = reg->rig().name();
    auto a = client.StartBake(reg->rig().name(), Bbw(80));
    ASSERT_TRUE(a.ok()) << a.status();
    running = a->bake().name();
    auto got_going = client.WatchBake(running, [](const v1::Bake& b) {
      return b.metadata().state() != v1::BAKE_STATE_RUNNING || b.metadata().progress_fraction() < 0.01;
    });
    ASSERT_TRUE(got_going.ok()) << got_going.status();
    ASSERT_EQ(got_going->metadata().state(), v1::BAKE_STATE_RUNNING);
    auto b = client.StartBake(reg->rig().name(), Bbw(40));  // behind it (one worker)
    ASSERT_TRUE(b.ok()) << b.status();
    queued = b->bake().name();
    ASSERT_EQ(b->bake().metadata().state(), v1::BAKE_STATE_QUEUED);
    auto c = client.StartBake(reg->rig().name(), Bbw(72));
    ASSERT_TRUE(c.ok()) << c.status();
    cancelled = c->bake().name();
    ASSERT_TRUE(client.CancelBake(cancelled).ok());
    ASSERT_EQ(server.Stop(SIGTERM), 0);
  }
  {
    ServerProcess server(store);
    EXPECT_THAT(server.Output(), HasSubstr("2 of the last run's unfinished bakes queued again"));
    ClientOptions o = Options(server);
    o.deadline = std::chrono::seconds(120);
    Client client(o);
    for (const std::string& name : {running, queued}) ASSERT_FALSE(WatchToSuccess(client, name).name().empty());
    EXPECT_EQ(client.GetBake(cancelled).status().code(), absl::StatusCode::kNotFound);
    // Killed while running: the same.
    auto d = client.StartBake(rig, Bbw(48));
    ASSERT_TRUE(d.ok()) << d.status();
    running = d->bake().name();
    auto got_going = client.WatchBake(running, [](const v1::Bake& b) { return b.metadata().state() != v1::BAKE_STATE_RUNNING; });
    ASSERT_TRUE(got_going.ok()) << got_going.status();
    ASSERT_EQ(server.Stop(SIGKILL), 128 + SIGKILL);
  }
  ServerProcess server(store);
  EXPECT_THAT(server.Output(), HasSubstr("1 of the last run's unfinished bakes queued again"));
  ExpectStartedAgainAndSucceeds(server, store, running);
  EXPECT_EQ(server.Stop(SIGTERM), 0);
}

// Two servers on one store directory (one machine): a server that starts while another runs a
// bake leaves that bake's record to it, so the bake is not computed twice. Once the first server
// is gone, the second takes the record over within seconds (PendingBakeAdopter) and bakes it.
// The second server used to queue the bake again at its start.
TEST(BakeJobs, AServerStartingOnTheStoreOfARunningServerLeavesItsBakesToIt) {
  const std::string store = MakeTempDir("store");
  auto [first, bake] = StartServerWithRunningBake(store);
  ASSERT_FALSE(bake.empty());
  ServerProcess second(store);
  EXPECT_THAT(second.Output(), HasSubstr(absl::StrCat(bake, " is left to the server that queued it (pid ",
                                                      first->pid(), ", still running)")));
  EXPECT_THAT(second.Output(), HasSubstr("0 of the last run's unfinished bakes queued again"));
  EXPECT_THAT(second.Output(), HasSubstr("1 left to other servers on this store"));
  EXPECT_EQ(StoredKeys(store, "bakejobs/").size(), 1u) << "the record stays with the running bake";
  EXPECT_EQ(first->Stop(SIGKILL), 128 + SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitForOutput(second, "1 of ended servers' unfinished bakes queued again", std::chrono::seconds(30)));
  std::printf("taken over %.1f s after the first server was killed\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count());
  ExpectStartedAgainAndSucceeds(second, store, bake);
  EXPECT_EQ(second.Stop(SIGTERM), 0);
}

// Two servers on one store directory (this machine, no Redis): a bake started on both is
// computed once. The second server's job waits for the first server (its stage names the first's
// pid and the first's stage, its progress is the first's, from the bake's record) and ends
// SUCCEEDED from the store; when the first is killed under a bake, the second takes the bake over
// and computes it. The waiting job holds none of the second server's bake workers: another bake
// started there runs meanwhile. The second server used to compute every such bake again, then
// showed progress 0 until the end of the wait, and the wait held a worker.
TEST(BakeJobs, ABakeStartedOnTwoServersOfOneStoreIsComputedOnce) {
  const std::string store = MakeTempDir("store");
  auto first = std::make_unique<ServerProcess>(store);
  Client one(Options(*first));
  auto reg = one.CreateRig(TubeWithoutWeights());
  ASSERT_TRUE(reg.ok()) << reg.status();
  const std::string rig = reg->rig().name();
  ServerProcess second(store, {"--metrics_address=127.0.0.1:0", "--bake_workers=1"});
  Client two(Options(second));
  const std::string waiting =
      absl::StrCat("waiting for the server on this store that runs it (pid ", first->pid(), ")");
  // Starts `options` on the first server, then (once it runs there) on the second; the name.
  auto start_on_both = [&](const v1::BakeOptions& options) -> std::string {
    auto started = one.StartBake(rig, options);
    EXPECT_TRUE(started.ok()) << started.status();
    if (!started.ok()) return "";
    const std::string name = started->bake().name();
    auto running = one.WatchBake(name, [](const v1::Bake& b) { return b.metadata().state() != v1::BAKE_STATE_RUNNING; });
    EXPECT_TRUE(running.ok() && running->metadata().state() == v1::BAKE_STATE_RUNNING);
    auto again = two.StartBake(rig, options);
    EXPECT_TRUE(again.ok()) << again.status();
    if (!again.ok()) return "";
    EXPECT_EQ(again->bake().name(), name);
    return name;
  };
  // The stages the second server's watch sees, to the end (which must be SUCCEEDED).
  auto stages_on_second = [&](const std::string& name, const std::function<void(const v1::Bake&)>& also) {
    std::vector<std::string> stages;
    auto done = two.WatchBake(name, [&](const v1::Bake& b) {
      if (stages.empty() || stages.back() != b.metadata().stage()) stages.push_back(b.metadata().stage());
      also(b);
      return true;
    });
    EXPECT_TRUE(done.ok()) << done.status();
    if (done.ok()) {
      EXPECT_EQ(done->metadata().state(), v1::BAKE_STATE_SUCCEEDED) << done->error().message();
    }
    return stages;
  };

  const std::string a = start_on_both(Bbw(80));
  ASSERT_FALSE(a.empty());
  // Another bake on the second server alone runs on its one worker while `a` waits.
  v1::BakeOptions other;
  other.mutable_geodesic_voxel();
  other.mutable_domain()->set_voxel_resolution(40);
  auto c = two.StartBake(rig, other);
  ASSERT_TRUE(c.ok()) << c.status();
  auto c_left_the_queue =
      two.WatchBake(c->bake().name(), [](const v1::Bake& b) { return b.metadata().state() == v1::BAKE_STATE_QUEUED; });
  ASSERT_TRUE(c_left_the_queue.ok()) << c_left_the_queue.status();
  auto a_meanwhile = two.GetBake(a);
  ASSERT_TRUE(a_meanwhile.ok()) << a_meanwhile.status();
  EXPECT_FALSE(a_meanwhile->done()) << "the other bake ran only after the wait: " << a_meanwhile->metadata().stage();
  EXPECT_THAT(a_meanwhile->metadata().stage(), StartsWith(waiting));
  ASSERT_FALSE(WatchToSuccess(two, c->bake().name()).name().empty());
  double waiting_progress = 0;  // the most the second server's watch showed while waiting
  const std::vector<std::string> left = stages_on_second(a, [&](const v1::Bake& now) {
    if (absl::StartsWith(now.metadata().stage(), waiting))
      waiting_progress = std::max(waiting_progress, now.metadata().progress_fraction());
  });
  EXPECT_THAT(left, Contains(StartsWith(waiting))) << absl::StrJoin(left, " | ");
  EXPECT_THAT(left, Contains(absl::StrCat(waiting, ": bbw"))) << "the first server's stage";
  EXPECT_GT(waiting_progress, 0.0) << "the first server's progress";
  std::printf("the second server's watch showed up to %.2f of the first's progress while waiting\n",
              waiting_progress);
  EXPECT_THAT(left, Not(Contains("bbw"))) << "computed on the second server too: " << absl::StrJoin(left, " | ");
  ASSERT_FALSE(WatchToSuccess(one, a).name().empty());
  const std::string done = "skinning_bakes_finished_total{method=\"bbw\",state=\"done\"}";
  EXPECT_EQ(ScrapeMetric(second.metrics_port(), done), 0) << "the first server computed it and counts it";
  EXPECT_EQ(ScrapeMetric(second.metrics_port(), "skinning_bakes_running{method=\"bbw\"}"), 0);

  // The first server killed while the second waits for it: the second computes the bake.
  const std::string b = start_on_both(Bbw(72));
  ASSERT_FALSE(b.empty());
  bool killed = false;
  const std::vector<std::string> taken = stages_on_second(b, [&](const v1::Bake& now) {
    if (!killed && absl::StartsWith(now.metadata().stage(), waiting)) {
      killed = true;
      EXPECT_EQ(first->Stop(SIGKILL), 128 + SIGKILL);
    }
  });
  EXPECT_TRUE(killed);
  EXPECT_THAT(taken, Contains(StartsWith(waiting))) << absl::StrJoin(taken, " | ");
  EXPECT_THAT(taken, Contains("bbw")) << absl::StrJoin(taken, " | ");
  EXPECT_EQ(ScrapeMetric(second.metrics_port(), done), 1) << "computed here after the takeover";
  // Every record goes with its bake's end. A rewrite of the record the kill cut short leaves a
  // temporary file: the second server's adopter (every 5 s) removes it when it lists the records.
  const auto ended = std::chrono::steady_clock::now();
  while (!StoredFiles(store, "bakejobs/").empty() && std::chrono::steady_clock::now() - ended < std::chrono::seconds(12))
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_THAT(StoredFiles(store, "bakejobs/"), ::testing::IsEmpty());
  EXPECT_EQ(second.Stop(SIGTERM), 0);
}

// A job waiting for another server of the store (QUEUED, on no worker), cancelled on its server,
// ends CANCELLED there at once; the bake goes on where it runs, and its record stays that
// server's until the bake's end there.
TEST(BakeJobs, CancellingABakeThatWaitsForAnotherServerCancelsTheWaitOnly) {
  const std::string store = MakeTempDir("store");
  auto [first, bake] = StartServerWithRunningBake(store);
  ASSERT_FALSE(bake.empty());
  ServerProcess second(store);
  Client two(Options(second));
  auto again = two.StartBake(bake.substr(0, bake.find("/bakes/")), Bbw(80));
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->bake().name(), bake);
  EXPECT_EQ(again->bake().metadata().state(), v1::BAKE_STATE_QUEUED);
  EXPECT_THAT(again->bake().metadata().stage(),
              StartsWith(absl::StrCat("waiting for the server on this store that runs it (pid ", first->pid(), ")")));
  auto cancelled = two.CancelBake(bake);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->metadata().state(), v1::BAKE_STATE_CANCELLED);
  EXPECT_EQ(StoredKeys(store, "bakejobs/").size(), 1u) << "the first server's record stays";
  Client one(Options(*first));
  ASSERT_FALSE(WatchToSuccess(one, bake).name().empty());
  EXPECT_TRUE(StoredFiles(store, "bakejobs/").empty()) << "gone with the bake's end on the first server";
  EXPECT_EQ(second.Stop(SIGTERM), 0);
}

// A store failure that lasts is printed once by the adopter, not every 5 s, and its end once.
// The failure is real: the store's WriteIf lock file (.write-lock) is replaced by a directory, so
// taking over the ended server's record fails (EISDIR) until it is put back. The adopter printed
// "is not started again now" on every pass.
TEST(BakeJobs, AStoreFailureThatLastsIsPrintedOnceByTheAdopterAndItsEndOnce) {
  const std::string store = MakeTempDir("store");
  auto [first, bake] = StartServerWithRunningBake(store);
  ASSERT_FALSE(bake.empty());
  ServerProcess second(store);
  ASSERT_THAT(second.Output(), HasSubstr("1 left to other servers on this store"));
  const std::filesystem::path lock = std::filesystem::path(store) / ".write-lock";
  std::filesystem::remove(lock);
  std::filesystem::create_directory(lock);
  EXPECT_EQ(first->Stop(SIGKILL), 128 + SIGKILL);
  // At least two passes of the adopter (every 5 s) while the lock cannot be opened.
  std::this_thread::sleep_for(std::chrono::milliseconds(11000));
  const std::string failed = absl::StrCat(bake, " is not started again now: ");
  auto count = [&](const std::string& what) {
    const std::string out = second.Output();
    int n = 0;
    for (size_t at = out.find(what); at != std::string::npos; at = out.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count(failed), 1) << second.Output();
  EXPECT_EQ(StoredKeys(store, "bakejobs/").size(), 1u) << "the record stays while it cannot be taken over";
  std::filesystem::remove(lock);
  ASSERT_TRUE(WaitForOutput(second, "1 of ended servers' unfinished bakes queued again", std::chrono::seconds(30)));
  EXPECT_EQ(count("the store answers again"), 1);
  EXPECT_EQ(count(failed), 1);
  ExpectStartedAgainAndSucceeds(second, store, bake);
  EXPECT_EQ(second.Stop(SIGTERM), 0);
}

// A restarted server whose queue cannot take every unfinished bake (--bake_queue=0, one worker)
// keeps the records it refused: the next start finds them, and a running server tries them again
// every few seconds (PendingBakeAdopter), so the refused bake runs once the worker is free. The
// refusal used to delete the record: the next start found only the bake that ran.
TEST(BakeJobs, UnfinishedBakesAFullQueueRefusesAreKeptAndTriedAgain) {
  const std::string store = MakeTempDir("store");
  {
    ServerProcess server(store);
    Client client(Options(server));
    auto reg = client.CreateRig(TubeWithoutWeights());
    ASSERT_TRUE(reg.ok()) << reg.status();
    for (int resolution : {80, 72}) {  // the first runs, the second waits behind it
      auto started = client.StartBake(reg->rig().name(), Bbw(resolution));
      ASSERT_TRUE(started.ok()) << started.status();
    }
    ASSERT_EQ(server.Stop(SIGTERM), 0);
  }
  ASSERT_EQ(StoredKeys(store, "bakejobs/").size(), 2u);
  for (int start = 0; start < 2; ++start) {
    ServerProcess server(store, {"--bake_queue=0"});
    EXPECT_THAT(server.Output(), HasSubstr("1 of the last run's unfinished bakes queued again")) << "start " << start;
    EXPECT_THAT(server.Output(), HasSubstr("1 left to try again")) << "start " << start;
    if (start == 1) {  // the second start runs on: the refused bake is queued once the first ends
      EXPECT_TRUE(WaitForOutput(server, "1 of ended servers' unfinished bakes queued again", std::chrono::seconds(90)));
      EXPECT_EQ(StoredKeys(store, "bakejobs/").size(), 1u) << "the first bake ended and took its record";
    }
    ASSERT_EQ(server.Stop(SIGTERM), 0);
    if (start == 0) {
      EXPECT_EQ(StoredKeys(store, "bakejobs/").size(), 2u) << "the refused record is kept";
    }
  }
}

class BakeBadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = MakeTempDir("store");
    server_ = std::make_unique<ServerProcess>(store_);
    client_ = std::make_unique<Client>(Options(*server_));
  }
  // Runs a bake of `rig` at resolution 32 expected to fail with `code` and a message holding
  // `message`. Nothing may be stored.
  void ExpectBakeFails(const Rig& rig, absl::StatusCode code, const std::string& message) {
    v1::BakeOptions options;
    options.mutable_domain()->set_voxel_resolution(32);
    auto reg = client_->CreateRig(RigToProto(rig));
    ASSERT_TRUE(reg.ok()) << reg.status();
    auto started = client_->StartBake(reg->rig().name(), options);
    ASSERT_TRUE(started.ok()) << started.status();
    auto last = client_->WatchBake(started->bake().name(), [](const v1::Bake&) { return true; });
    ASSERT_TRUE(last.ok()) << last.status();
    EXPECT_EQ(last->metadata().state(), v1::BAKE_STATE_FAILED);
    EXPECT_TRUE(last->done());
    EXPECT_FALSE(StoredBakeExists(store_, started->bake().name()));
    EXPECT_EQ(last->error().code(), static_cast<int>(code));
    EXPECT_THAT(last->error().message(), HasSubstr(message));
  }
  std::string store_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(BakeBadInputTest, SkeletonOutsideTheMeshFails) {
  Rig rig = *RigFromProto(TubeWithoutWeights());
  for (auto& j : rig.skeleton.joints) {
    j.inverse_bind.translation() += Eigen::Vector3d(0, 0, -10);  // the bind pose moves 10 up
    *j.tail += Eigen::Vector3d(0, 0, 10);
  }
  ExpectBakeFails(rig, absl::StatusCode::kFailedPrecondition, "outside the mesh");
}

TEST_F(BakeBadInputTest, ZeroLengthBoneAndResolutionOverTheLimitAreRefusedAtOnce) {
  Rig rig = *RigFromProto(TubeWithoutWeights());
  rig.skeleton.joints[1].tail = BindPosition(rig.skeleton, 1);
  auto reg = client_->CreateRig(RigToProto(rig));
  ASSERT_TRUE(reg.ok()) << reg.status();
  auto started = client_->StartBake(reg->rig().name(), v1::BakeOptions());
  EXPECT_EQ(started.status().code(), absl::StatusCode::kInvalidArgument) << started.status();
  EXPECT_THAT(std::string(started.status().message()), HasSubstr("skeleton.joints[1]"));
  EXPECT_THAT(std::string(started.status().message()), HasSubstr("zero length"));

  auto good = client_->CreateRig(TubeWithoutWeights());
  v1::BakeOptions options;
  options.mutable_domain()->set_voxel_resolution(100000);
  started = client_->StartBake(good->rig().name(), options);
  EXPECT_EQ(started.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(started.status().message()), HasSubstr("options.domain.voxel_resolution = 100000 is outside the limits"));
  EXPECT_FALSE(std::filesystem::exists(store_ + "/bakes"));
}

TEST_F(BakeBadInputTest, PosingWithAMissingBakeNamesTheBakeToRun) {
  auto reg = client_->CreateRig(TubeWithoutWeights());
  ASSERT_TRUE(reg.ok());
  v1::PoseRequest req;
  req.set_rig(reg->rig().name());
  auto posed = client_->Pose(req);
  EXPECT_EQ(posed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(posed.status().message()), HasSubstr("StartBake"));
  req.set_bake(reg->rig().name() + "/bakes/bake-0123456789abcdef0123456789abcdef");
  posed = client_->Pose(req);
  EXPECT_EQ(posed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(posed.status().message()), HasSubstr("bake-0123456789abcdef0123456789abcdef"));
}

// A character whose own weights leave its root unused (an exported `_rootJoint` outside the
// mesh): the server bakes it as non-deforming with every volumetric method.
TEST(BakeJobs, AnUnweightedRootOutsideTheMeshIsNonDeforming) {
  SKINNING_REQUIRE_DATA(testing::DataPath("gltf/CesiumMan/CesiumMan.glb"));
  absl::StatusOr<Rig> rig = testing::CesiumManWithUnweightedRoot();
  ASSERT_TRUE(rig.ok()) << rig.status();
  ServerProcess server(MakeTempDir("store"));
  Client client(Options(server));
  auto reg = client.CreateRig(RigToProto(*rig));
  ASSERT_TRUE(reg.ok()) << reg.status();
  for (const char* method : {"bbw", "geodesic_voxel", "swing_twist", "endpoint", "elastic_model"}) {
    SCOPED_TRACE(method);
    v1::BakeOptions options = Bbw(32);
    if (std::string(method) == "geodesic_voxel") options.mutable_geodesic_voxel();
    if (std::string(method) == "swing_twist") options.mutable_swing_twist();
    if (std::string(method) == "endpoint") options.mutable_endpoint();
    if (std::string(method) == "elastic_model") options.mutable_elastic_model();
    const v1::Bake done = BakeToTheEnd(client, reg->rig().name(), options);
    ASSERT_FALSE(done.name().empty());
    if (std::string(method) == "elastic_model") continue;  // a model, no weights
    auto w = client.GetWeights(done.name(), v1::WEIGHTS_FORMAT_DENSE);
    ASSERT_TRUE(w.ok()) << w.status();
    const v1::DenseWeights& d = w->weights().dense();
    ASSERT_EQ(d.joint_count(), rig->skeleton.size());
    double root = 0, total = 0;
    for (int i = 0; i < d.values_size(); ++i) {
      total += d.values(i);
      if (i % d.joint_count() == 0) root += std::abs(d.values(i));
    }
    EXPECT_EQ(root, 0.0) << "the unweighted root got weight";
    EXPECT_NEAR(total, static_cast<double>(rig->mesh.V.rows()), 1e-6 * rig->mesh.V.rows());
  }
}

TEST(SkinctlBake, WritesDmatAndSkinnedGltfWithPlainProgressLines) {
  const std::string store = MakeTempDir("store");
  ServerProcess server(store);
  const std::string obj = testing::DataPath("libigl/arm/arm.obj"), tgf = testing::DataPath("libigl/arm/arm.tgf");
  SKINNING_REQUIRE_DATA(obj);
  const std::string out = MakeTempDir("bake-out");
  auto result = RunCommand({BinaryPath("client/skinctl"), "--server=" + server.address(), "bake", "--obj=" + obj,
                            "--tgf=" + tgf, "--bake_method=geodesic_voxel", "--resolution=48", "--out=" + out});
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, ::testing::ContainsRegex(": succeeded [a-z ]*100%")) << "plain progress lines when not a terminal";
  EXPECT_TRUE(std::filesystem::exists(out + "/arm-geodesic_voxel.dmat"));
  EXPECT_TRUE(std::filesystem::exists(out + "/arm-geodesic_voxel.glb"));
  SKINNING_EXPECT_VALID_GLTF(testing::GltfFilesIn(out));
}

// A skinctl flag of geodesic voxel bakes reaches the bake: the written weights are core's Bake
// with the option (`set`) on the rig the server holds, and differ from the default's by more than
// `min_change`; `bad` (the flag with a value out of range) is refused naming the field
// (`bad_message`), and the flag is refused for another method.
void ExpectGeodesicFlagReachesTheBake(const std::string& flag, const std::function<void(GeodesicWeightsOptions&)>& set,
                                      double min_change, const std::string& bad, const std::string& bad_message) {
  const std::string store = MakeTempDir("store");
  ServerProcess server(store);
  const std::string obj = testing::DataPath("libigl/arm/arm.obj"), tgf = testing::DataPath("libigl/arm/arm.tgf");
  SKINNING_REQUIRE_DATA(obj);
  const std::string skinctl = BinaryPath("client/skinctl"), at = "--server=" + server.address();
  const std::string with = MakeTempDir("with"), plain = MakeTempDir("plain");
  auto baked = RunCommand({skinctl, at, "bake", "--obj=" + obj, "--tgf=" + tgf, "--bake_method=geodesic_voxel",
                           "--resolution=32", flag, "--out=" + with});
  ASSERT_EQ(baked.exit_code, 0) << baked.output;
  baked = RunCommand({skinctl, at, "bake", "--obj=" + obj, "--tgf=" + tgf, "--bake_method=geodesic_voxel",
                      "--resolution=32", "--out=" + plain});
  ASSERT_EQ(baked.exit_code, 0) << baked.output;
  auto W_with = ReadDmat(with + "/arm-geodesic_voxel.dmat"), W_plain = ReadDmat(plain + "/arm-geodesic_voxel.dmat");
  ASSERT_TRUE(W_with.ok() && W_plain.ok());

  Client client(Options(server));
  auto rigs = client.ListRigs();
  ASSERT_TRUE(rigs.ok()) << rigs.status();
  ASSERT_EQ(rigs->size(), 1u);
  auto stored = client.GetRig(rigs->front().name(), v1::RIG_VIEW_FULL);
  ASSERT_TRUE(stored.ok()) << stored.status();
  auto rig = RigFromProto(*stored);
  ASSERT_TRUE(rig.ok()) << rig.status();
  BakeOptions options;
  options.method = BakeMethod::kGeodesicVoxel;
  options.domain.voxel.resolution = 32;
  set(options.geodesic);
  auto expected = Bake(rig->mesh, rig->skeleton, options);
  ASSERT_TRUE(expected.ok()) << expected.status();
  ASSERT_EQ(W_with->rows(), expected->weights.rows());
  ASSERT_EQ(W_with->cols(), expected->weights.cols());
  EXPECT_LT((*W_with - expected->weights).cwiseAbs().maxCoeff(), 1e-6);
  EXPECT_GT((*W_with - *W_plain).cwiseAbs().maxCoeff(), min_change);

  auto refused = RunCommand({skinctl, at, "bake", "--obj=" + obj, "--tgf=" + tgf, "--bake_method=geodesic_voxel", bad,
                             "--out=" + with});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.output, ::testing::HasSubstr(bad_message));
  refused = RunCommand({skinctl, at, "bake", "--obj=" + obj, "--tgf=" + tgf, flag, "--out=" + with});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.output, ::testing::HasSubstr(flag.substr(0, flag.find('=')) + " is for --bake_method=geodesic_voxel"));
}

// Dionne & de Lasa's weight function (--dionne_falloff) blends wider than the power law.
TEST(SkinctlBake, DionneFalloffBakesThePapersWeightFunction) {
  ExpectGeodesicFlagReachesTheBake(
      "--dionne_falloff=1", [](GeodesicWeightsOptions& o) { o.dionne_falloff = 1; }, 0.05, "--dionne_falloff=1.5",
      "options.geodesic_voxel.dionne_falloff = 1.5 must be in [0, 1]");
}

// Smoothing passes (--smoothing) widen the transitions at the joints.
TEST(SkinctlBake, SmoothingBakesSmoothedGeodesicWeights) {
  ExpectGeodesicFlagReachesTheBake(
      "--smoothing=10", [](GeodesicWeightsOptions& o) { o.smoothing = 10; }, 0.02, "--smoothing=101",
      "options.geodesic_voxel.smoothing = 101 must be in [0, 100]");
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
