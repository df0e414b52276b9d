// Fast automatic skinning transformations through the real server.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "client/client.h"
#include "core/io/dmat.h"
#include "core/io/obj.h"
#include "core/io/tgf.h"
#include "server/convert/convert.h"
#include "tests/support/data.h"
#include "tests/support/fast_constraints.h"
#include "tests/support/http_client.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::DataPath;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::ScrapeMetric;
using ::skinning::testing::ServerProcess;
using ::testing::HasSubstr;

class FastEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    SKINNING_REQUIRE_DATA(DataPath("libigl/arm/arm.obj"));
    server_ = std::make_unique<ServerProcess>(MakeTempDir("store"), server_flags_);
    ClientOptions o;
    o.target = server_->address();
    o.deadline = std::chrono::seconds(120);
    client_ = std::make_unique<Client>(o);
    auto mesh = ReadObj(DataPath("libigl/arm/arm.obj"));
    auto graph = ReadTgf(DataPath("libigl/arm/arm.tgf"));
    auto W = ReadDmat(DataPath("libigl/arm/arm-weights.dmat"));
    ASSERT_TRUE(mesh.ok() && graph.ok() && W.ok());
    graph_ = *graph;
    Rig rig;
    rig.name = "arm";
    rig.mesh = *mesh;
    rig.skeleton = *SkeletonFromBones(*graph);
    rig.dense_weights = *W;
    skeleton_ = rig.skeleton;
    auto reg = client_->CreateRig(RigToProto(rig));
    ASSERT_TRUE(reg.ok()) << reg.status();
    rig_name_ = reg->rig().name();
  }
  void TearDown() override {
    if (server_) {
      EXPECT_EQ(server_->Stop(SIGTERM), 0);
    }
  }
  std::string BakeFastModel() {
    v1::BakeOptions options;
    options.mutable_fast_model();
    auto started = client_->StartBake(rig_name_, options);
    EXPECT_TRUE(started.ok()) << started.status();
    auto done = client_->WatchBake(started->bake().name(), [](const v1::Bake&) { return true; });
    EXPECT_TRUE(done.ok());
    EXPECT_EQ(done->metadata().state(), v1::BAKE_STATE_SUCCEEDED) << done->error().message();
    return started->bake().name();
  }
  // Root bone fully fixed, the hand (the last bone's tail) dragged to `target`.
  v1::SolveRequest DragHand(const Eigen::Vector3d& target) {
    v1::SolveRequest req;
    *req.add_constraints() = testing::FixedJoint(0);
    auto* hand = req.add_constraints();
    hand->set_joint(3);
    hand->set_kind(v1::HandleConstraint::KIND_POSITION);
    const Eigen::Vector3d tip = graph_.C.row(graph_.E(3, 1));
    for (int a = 0; a < 3; ++a) hand->add_point(static_cast<float>(tip(a)));
    for (int a = 0; a < 3; ++a) hand->add_target(static_cast<float>(target(a)));
    return req;
  }
  // A session on `bake` that has answered one frame of `constraints`; null (with a test failure)
  // when a step fails.
  std::unique_ptr<SolveSession> SessionAfterOneFrame(
      const std::string& bake, const google::protobuf::RepeatedPtrField<v1::HandleConstraint>& constraints) {
    auto session = client_->StartSolveSession(bake);
    EXPECT_TRUE(session.ok()) << session.status();
    if (!session.ok()) return nullptr;
    v1::SolveSessionRequest frame;
    frame.set_bake(bake);
    *frame.mutable_constraints() = constraints;
    const bool answered = (*session)->Write(frame).ok() && (*session)->Read().ok();
    EXPECT_TRUE(answered) << "the session's first frame";
    return answered ? *std::move(session) : nullptr;
  }
  std::vector<std::string> server_flags_;  // set by a derived fixture's constructor
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Client> client_;
  TgfGraph graph_;
  Skeleton skeleton_;
  std::string rig_name_;
};

TEST_F(FastEndToEnd, StreamingSessionAnswersAThousandFramesInOrder) {
  const std::string bake = BakeFastModel();
  auto session = client_->StartSolveSession(bake);
  ASSERT_TRUE(session.ok()) << session.status();
  const Eigen::Vector3d tip = graph_.C.row(graph_.E(3, 1));
  const Eigen::Vector3d shoulder = graph_.C.row(graph_.E(0, 0));
  const double reach = (tip - shoulder).norm();
  std::vector<double> micros;
  for (int f = 0; f < 1000; ++f) {
    // The hand circles within reach.
    const double a = 2 * M_PI * f / 250;
    const Eigen::Vector3d target = tip + 0.15 * reach * Eigen::Vector3d(0, std::cos(a) - 1, std::sin(a));
    const auto t0 = std::chrono::steady_clock::now();
    v1::SolveSessionRequest frame;
    if (f == 0) frame.set_bake(bake);
    frame.set_sequence(f);
    *frame.mutable_constraints() = DragHand(target).constraints();
    ASSERT_TRUE((*session)->Write(frame).ok()) << "frame " << f;
    auto response = (*session)->Read();
    micros.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    ASSERT_TRUE(response.ok()) << "frame " << f << ": " << response.status();
    ASSERT_EQ(response->sequence(), f);
    const v1::FastSolution* answer = &response->solution();
    ASSERT_EQ(answer->transforms_size(), 12 * (answer->handle_count() + answer->extra_handle_count()));
    // The hand constraint holds: T_3 · tip = target.
    Eigen::Matrix<double, 3, 4> T3;
    for (int r = 0; r < 3; ++r)
      for (int k = 0; k < 4; ++k) T3(r, k) = answer->transforms(12 * 3 + 4 * r + k);
    ASSERT_LT((T3 * tip.homogeneous() - target).norm(), 1e-4 * reach) << "frame " << f;
  }
  ASSERT_TRUE((*session)->Close().ok());
  std::sort(micros.begin(), micros.end());
  std::printf("FAST session, 1000 frames over loopback: p50 %.1f us, p99 %.1f us\n", micros[500], micros[990]);
  RecordProperty("p50_us", std::to_string(micros[500]));
  RecordProperty("p99_us", std::to_string(micros[990]));
}

// An open FAST session whose rig is deleted (and its bakes with it) ends with NOT_FOUND at its
// next frame once a second has passed. It used to go on solving from the model it had opened.
TEST_F(FastEndToEnd, AnOpenSessionEndsWhenItsRigIsDeleted) {
  const std::string bake = BakeFastModel();
  v1::SolveSessionRequest frame;
  *frame.mutable_constraints() = DragHand(Eigen::Vector3d(graph_.C.row(graph_.E(3, 1)))).constraints();
  std::unique_ptr<SolveSession> session = SessionAfterOneFrame(bake, frame.constraints());
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(client_->DeleteRig(rig_name_).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  ASSERT_TRUE(session->Write(frame).ok());
  auto after = session->Read();
  EXPECT_EQ(after.status().code(), absl::StatusCode::kNotFound) << "the session solved on: " << after.status();
  EXPECT_THAT(after.status().message(), HasSubstr("frame 2: rig '" + rig_name_ + "' was deleted while the session was open"));
}

TEST_F(FastEndToEnd, UnarySolveReturnsVerticesAndNeedsAFastModel) {
  v1::SolveRequest req = DragHand(Eigen::Vector3d(graph_.C.row(graph_.E(3, 1))) + Eigen::Vector3d(0, 0.1, 0));
  req.set_bake(rig_name_ + "/bakes/bake-0123456789abcdef0123456789abcdef");
  auto missing = client_->Solve(req);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition) << missing.status();
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("StartBake"));

  req.set_bake(BakeFastModel());
  req.mutable_outputs()->set_vertices(true);
  auto solved = client_->Solve(req);
  ASSERT_TRUE(solved.ok()) << solved.status();
  EXPECT_EQ(solved->vertices_size() % 3, 0);
  EXPECT_GT(solved->vertices_size(), 0);
  EXPECT_TRUE(std::isfinite(solved->energy()));

  auto bad = req;
  bad.mutable_constraints(1)->set_joint(17);
  auto refused = client_->Solve(bad);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("constraints[1].joint = 17"));

  // Two constraints on one joint (the last silently won) and a non-finite warm start (taken
  // silently) are refused.
  auto twice = req;
  *twice.add_constraints() = req.constraints(1);
  refused = client_->Solve(twice);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("constraints[2].joint = 3 is constrained already by constraints[1]"));
  auto warm = req;
  for (float v : solved->transforms()) warm.add_warm_start(v);
  ASSERT_TRUE(client_->Solve(warm).ok());
  warm.set_warm_start(5, std::nanf(""));
  refused = client_->Solve(warm);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("warm_start[5] (handle 0) = nan is not finite"));
}

class FastCacheTest : public FastEndToEnd {
 protected:
  FastCacheTest() { server_flags_ = {"--metrics_address=127.0.0.1:0"}; }
  double CacheBytes() { return ScrapeMetric(server_->metrics_port(), "skinning_bake_cache_bytes"); }
  // DragHand with the hand's constrained point moved by `shift` along x: a constraint set of its
  // own (its operators are built anew) of the same size as every other shift's.
  v1::SolveRequest Drag(const std::string& bake, double shift) {
    v1::SolveRequest req = DragHand(Eigen::Vector3d(graph_.C.row(graph_.E(3, 1))));
    req.set_bake(bake);
    req.mutable_constraints(1)->set_point(0, req.constraints(1).point(0) + static_cast<float>(shift));
    return req;
  }
};

// The operators a FAST model keeps for its last constraint sets (4 at most) are counted in the
// bake cache (--bake_cache_mb), by the most they held at once: each new set adds its size, a set
// used again or one that replaces a set dropped from the model's cache adds nothing, and a
// session's sets count as a unary call's. The old server counted the model as loaded only: the
// cache's bytes did not move however many sets were built (with 256 extra weights a set is 20 MB).
TEST_F(FastCacheTest, ConstraintSetOperatorsAreCountedInTheBakeCache) {
  const std::string bake = BakeFastModel();
  ASSERT_TRUE(client_->Solve(Drag(bake, 0)).ok());  // loads the model; set 1
  const double loaded = CacheBytes();
  ASSERT_GT(loaded, 0);
  ASSERT_TRUE(client_->Solve(Drag(bake, 0)).ok());
  EXPECT_EQ(CacheBytes(), loaded) << "a set used again is not counted again";
  std::vector<double> after = {loaded};
  for (double shift : {0.01, 0.02}) {  // sets 2 and 3
    ASSERT_TRUE(client_->Solve(Drag(bake, shift)).ok());
    after.push_back(CacheBytes());
  }
  {  // set 4, in a session
    std::unique_ptr<SolveSession> session = SessionAfterOneFrame(bake, Drag(bake, 0.03).constraints());
    ASSERT_NE(session, nullptr);
    ASSERT_TRUE(session->Close().ok());
    after.push_back(CacheBytes());
  }
  const double one_set = after[1] - after[0];
  EXPECT_GT(one_set, 0) << "a new constraint set's operators are counted";
  EXPECT_EQ(after[2] - after[1], one_set) << "set 3";
  EXPECT_EQ(after[3] - after[2], one_set) << "set 4 (in a session)";
  for (double shift : {0.04, 0.05}) {  // sets 5 and 6: the model keeps 4, so it holds no more
    ASSERT_TRUE(client_->Solve(Drag(bake, shift)).ok());
    EXPECT_EQ(CacheBytes(), after[3]) << "shift " << shift;
  }
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
