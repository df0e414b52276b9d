// Fast automatic skinning transformations through the real server.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "client/client.h"
#include "core/io/dmat.h"
#include "core/io/obj.h"
#include "core/io/tgf.h"
#include "server/convert/convert.h"
#include "tests/support/data.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {

using ::skinning::testing::DataPath;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::ServerProcess;
using ::testing::HasSubstr;

class FastEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    SKINNING_REQUIRE_DATA(DataPath("libigl/arm/arm.obj"));
    server_ = std::make_unique<ServerProcess>(MakeTempDir("store"));
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
    auto reg = client_->RegisterRig(RigToProto(rig));
    ASSERT_TRUE(reg.ok()) << reg.status();
    rig_id_ = reg->rig_id();
  }
  void TearDown() override {
    if (server_) EXPECT_EQ(server_->Stop(SIGTERM), 0);
  }
  std::string BakeFastModel() {
    v1::BakeOptions options;
    options.set_method(v1::BAKE_METHOD_FAST_MODEL);
    auto started = client_->StartBake(rig_id_, options);
    EXPECT_TRUE(started.ok()) << started.status();
    auto done = client_->WatchBake(started->bake_id(), [](const v1::BakeStatus&) { return true; });
    EXPECT_TRUE(done.ok());
    EXPECT_EQ(done->state(), v1::BAKE_STATE_DONE) << done->error_message();
    return started->bake_id();
  }
  // Root bone fully fixed, the hand (the last bone's tail) dragged to `target`.
  v1::FastSolveRequest DragHand(const Eigen::Vector3d& target) {
    v1::FastSolveRequest req;
    auto* root = req.add_constraints();
    root->set_handle(0);
    root->set_kind(v1::HandleConstraint::FULL);
    for (float v : {1.f, 0.f, 0.f, 0.f, 0.f, 1.f, 0.f, 0.f, 0.f, 0.f, 1.f, 0.f}) root->add_target(v);
    auto* hand = req.add_constraints();
    hand->set_handle(3);
    hand->set_kind(v1::HandleConstraint::POSITION);
    const Eigen::Vector3d tip = graph_.C.row(graph_.E(3, 1));
    for (int a = 0; a < 3; ++a) hand->add_point(static_cast<float>(tip(a)));
    for (int a = 0; a < 3; ++a) hand->add_target(static_cast<float>(target(a)));
    return req;
  }
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Client> client_;
  TgfGraph graph_;
  Skeleton skeleton_;
  std::string rig_id_;
};

TEST_F(FastEndToEnd, StreamingSessionAnswersAThousandFramesInOrder) {
  const std::string bake = BakeFastModel();
  auto session = client_->StartFastSession(bake);
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
    auto answer = (*session)->Step(DragHand(target));
    micros.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    ASSERT_TRUE(answer.ok()) << "frame " << f << ": " << answer.status();
    ASSERT_EQ(answer->sequence(), static_cast<uint64_t>(f));
    ASSERT_EQ(answer->transforms_size(), 12 * static_cast<int>(answer->handles() + answer->extra_handles()));
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

TEST_F(FastEndToEnd, UnarySolveReturnsVerticesAndNeedsAFastModel) {
  v1::FastSolveRequest req = DragHand(Eigen::Vector3d(graph_.C.row(graph_.E(3, 1))) + Eigen::Vector3d(0, 0.1, 0));
  req.set_bake_id("bake-0123456789abcdef0123456789abcdef");
  auto missing = client_->FastSolve(req);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition) << missing.status();
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("StartBake"));

  req.set_bake_id(BakeFastModel());
  req.mutable_outputs()->set_vertices(true);
  auto solved = client_->FastSolve(req);
  ASSERT_TRUE(solved.ok()) << solved.status();
  EXPECT_EQ(solved->vertices_size() % 3, 0);
  EXPECT_GT(solved->vertices_size(), 0);
  EXPECT_TRUE(std::isfinite(solved->energy()));

  auto bad = req;
  bad.mutable_constraints(1)->set_handle(17);
  auto refused = client_->FastSolve(bad);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("constraints[1].handle = 17"));
}

}  // namespace
}  // namespace skinning
