// The v1 API through the real server binary and the client library: resource names and the
// standard methods, bakes as operations, examples, sessions, and a status check that never
// rebuilds a stored model (seen in the server's metrics).
#include <chrono>

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/client.h"
#include "server/convert/convert.h"
#include "tests/support/fast_constraints.h"
#include "tests/support/fixtures.h"
#include "tests/support/http_client.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::MakeTempDir;
using ::skinning::testing::ServerProcess;
using ::testing::HasSubstr;
using ::testing::StartsWith;

ClientOptions Options(const ServerProcess& server) {
  ClientOptions o;
  o.target = server.address();
  o.deadline = std::chrono::seconds(60);
  return o;
}

// Waits for a bake to be done and returns its last state.
v1::Bake WaitDone(Client& client, const std::string& name) {
  absl::StatusOr<v1::Bake> last = client.WatchBake(name, [](const v1::Bake&) { return true; });
  EXPECT_TRUE(last.ok()) << last.status();
  return last.ok() ? *last : v1::Bake();
}

// The value of the series `name{labels}` in a Prometheus scrape, or -1 when it is absent.
double Series(const std::string& scrape, const std::string& name_and_labels) {
  for (absl::string_view line : absl::StrSplit(scrape, '\n'))
    if (absl::ConsumePrefix(&line, name_and_labels + " ")) return std::stod(std::string(line));
  return -1;
}

std::string Scrape(ServerProcess& server) {
  auto response = testing::HttpGet("127.0.0.1", server.metrics_port(), "/metrics");
  EXPECT_TRUE(response.ok()) << response.status();
  return response.ok() ? response->body : "";
}

TEST(ServerApi, RigsHaveNamesAndTheStandardMethods) {
  ServerProcess server(MakeTempDir("store"));
  Client client(Options(server));
  v1::Rig rig = RigToProto(testing::MakeTwoBoneTube());
  rig.set_display_name("tube");
  auto created = client.CreateRig(rig);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_TRUE(created->created());
  const v1::Rig& summary = created->rig();
  EXPECT_THAT(summary.name(), StartsWith("rigs/rig-"));
  EXPECT_EQ(summary.display_name(), "tube");
  EXPECT_EQ(summary.joint_count(), 2);
  EXPECT_EQ(summary.influence_count(), 2);
  EXPECT_FALSE(summary.has_mesh()) << "the summary view";
  EXPECT_GT(summary.create_time().seconds(), 0);
  auto again = client.CreateRig(rig);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->created());
  EXPECT_EQ(again->rig().name(), summary.name());

  auto full = client.GetRig(summary.name(), v1::RIG_VIEW_FULL);
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(full->mesh().positions_size(), rig.mesh().positions_size());
  EXPECT_EQ(full->vertex_count(), summary.vertex_count());
  auto listed = client.ListRigs();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].name(), summary.name());

  auto stub = v1::RigService::NewStub(grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
  {
    grpc::ClientContext ctx;
    v1::ListRigsRequest req;
    req.set_page_size(5000);  // treated as 1000
    v1::ListRigsResponse resp;
    EXPECT_TRUE(stub->ListRigs(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.rigs_size(), 1);
  }
  {
    grpc::ClientContext ctx;
    v1::ListRigsRequest req;
    req.set_page_size(-1);
    v1::ListRigsResponse resp;
    EXPECT_EQ(stub->ListRigs(&ctx, req, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  {  // The glTF-only fields with a rig: refused, not ignored (scene 0 too: it is set).
    for (const std::string field : {"display_name", "skip_static_meshes", "scene"}) {
      grpc::ClientContext ctx;
      v1::CreateRigRequest req;
      *req.mutable_rig() = rig;
      if (field == "display_name") req.set_display_name("label");
      if (field == "skip_static_meshes") req.set_skip_static_meshes(true);
      if (field == "scene") req.set_scene(0);
      v1::CreateRigResponse resp;
      const grpc::Status status = stub->CreateRig(&ctx, req, &resp);
      EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
      EXPECT_THAT(status.error_message(), HasSubstr(field + " goes with gltf"));
    }
    grpc::ClientContext ctx;
    v1::CreateRigRequest req;
    req.set_gltf("not read: the scene is checked first");
    req.set_scene(-1);
    v1::CreateRigResponse resp;
    const grpc::Status status = stub->CreateRig(&ctx, req, &resp);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(status.error_message(), HasSubstr("scene is -1; a scene index is 0 or more"));
  }
  auto bad = client.GetRig(summary.name().substr(5));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("name '" + summary.name().substr(5) + "' is not a rig name"));
  ASSERT_TRUE(client.DeleteRig(summary.name()).ok());
  EXPECT_EQ(client.GetRig(summary.name()).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client.DeleteRig(summary.name()).code(), absl::StatusCode::kNotFound);
}

TEST(ServerApi, BakesAreOperationsUsedByName) {
  ServerProcess server(MakeTempDir("store"));
  Client client(Options(server));
  auto rig = client.CreateRig(RigToProto(testing::MakeTubeForBaking()));
  ASSERT_TRUE(rig.ok()) << rig.status();
  const std::string rig_name = rig->rig().name();
  v1::BakeOptions options;
  options.mutable_domain()->set_voxel_resolution(16);
  auto started = client.StartBake(rig_name, options);
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_TRUE(started->created());
  const v1::Bake& bake = started->bake();
  EXPECT_THAT(bake.name(), StartsWith(rig_name + "/bakes/bake-"));
  EXPECT_TRUE(bake.options().has_bbw()) << "the filled-in options name the method";
  EXPECT_EQ(bake.options().influence_count(), 4);
  EXPECT_EQ(bake.options().domain().voxel_resolution(), 16);

  const v1::Bake done = WaitDone(client, bake.name());
  EXPECT_TRUE(done.done());
  EXPECT_EQ(done.metadata().state(), v1::BAKE_STATE_SUCCEEDED);
  EXPECT_FALSE(done.has_error());
  EXPECT_EQ(done.response().report().method(), "bbw");
  EXPECT_THAT(done.response().report().domain(), HasSubstr("voxel grid 16"));
  auto reused = client.StartBake(rig_name, options);
  ASSERT_TRUE(reused.ok());
  EXPECT_FALSE(reused->created());
  EXPECT_TRUE(reused->bake().done());

  auto sparse = client.GetWeights(bake.name());
  ASSERT_TRUE(sparse.ok()) << sparse.status();
  EXPECT_EQ(sparse->bake(), bake.name());
  EXPECT_EQ(sparse->weights().sparse().influence_count(), 2);
  auto dense = client.GetWeights(bake.name(), v1::WEIGHTS_FORMAT_DENSE);
  ASSERT_TRUE(dense.ok());
  EXPECT_EQ(dense->weights().dense().joint_count(), 2);

  v1::PoseRequest pose;
  pose.set_rig(rig_name);
  pose.set_bake(bake.name());
  pose.set_deformer(v1::DEFORMER_DQS);
  auto frame = client.Pose(pose);
  ASSERT_TRUE(frame.ok()) << frame.status();
  EXPECT_EQ(frame->vertices_size(), rig->rig().vertex_count() * 3);
  // Without the bake the rig has no weights: the message names what to run.
  pose.clear_bake();
  EXPECT_EQ(client.Pose(pose).status().code(), absl::StatusCode::kFailedPrecondition);
  // A bake that needs another bake names it.
  pose.set_bake(bake.name());
  pose.set_deformer(v1::DEFORMER_SWING_TWIST);
  auto wrong = client.Pose(pose);
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(wrong.status().message(), HasSubstr("StartBake with options.swing_twist"));

  auto cancelled = client.CancelBake(bake.name());
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->metadata().state(), v1::BAKE_STATE_SUCCEEDED) << "a finished bake is unchanged";
  const std::string unknown = rig_name + "/bakes/bake-00000000000000000000000000000000";
  EXPECT_EQ(client.GetBake(unknown).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client.GetWeights(unknown).status().code(), absl::StatusCode::kFailedPrecondition);
  // A bake of a rig that is not stored (never was, or deleted) is NOT_FOUND naming the rig, as
  // GetBake answers; it was FAILED_PRECONDITION "has not been run: start it with StartBake".
  const std::string no_rig = "rigs/rig-0123456789abcdef0123456789abcdef/bakes/bake-00000000000000000000000000000000";
  absl::Status never = client.GetWeights(no_rig).status();
  EXPECT_EQ(never.code(), absl::StatusCode::kNotFound) << never;
  EXPECT_THAT(std::string(never.message()), HasSubstr("rig-0123456789abcdef0123456789abcdef"));
  ASSERT_TRUE(client.DeleteRig(rig_name).ok());
  absl::Status deleted = client.GetWeights(bake.name()).status();
  EXPECT_EQ(deleted.code(), absl::StatusCode::kNotFound) << deleted;
  EXPECT_THAT(std::string(deleted.message()), HasSubstr(rig_name + "' not found"));
}

// GetBake, StartBake, WatchBake and CancelBake of a stored elastic bake answer from the stored
// header on a fresh server: no model is rebuilt (skinning_bake_loads_total stays 0) until a pose
// needs the model.
TEST(ServerApi, AStatusCheckNeverRebuildsAStoredModel) {
  const std::string store = MakeTempDir("store");
  std::string rig_name, bake_name;
  v1::BakeOptions options;
  options.mutable_elastic_model();
  options.mutable_domain()->set_voxel_resolution(24);
  {
    ServerProcess server(store);
    Client client(Options(server));
    auto rig = client.CreateRig(RigToProto(testing::MakeTubeForBaking()));
    ASSERT_TRUE(rig.ok()) << rig.status();
    rig_name = rig->rig().name();
    auto started = client.StartBake(rig_name, options);
    ASSERT_TRUE(started.ok()) << started.status();
    bake_name = started->bake().name();
    ASSERT_EQ(WaitDone(client, bake_name).metadata().state(), v1::BAKE_STATE_SUCCEEDED);
  }
  ServerProcess server(store, {"--metrics_address=127.0.0.1:0"});
  Client client(Options(server));
  const std::string loads = "skinning_bake_loads_total{method=\"elastic_model\"}";
  ASSERT_EQ(Series(Scrape(server), loads), 0) << "the series exists from the start";
  auto got = client.GetBake(bake_name);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->metadata().state(), v1::BAKE_STATE_SUCCEEDED);
  EXPECT_EQ(got->response().report().method(), "elastic_model");
  auto restarted = client.StartBake(rig_name, options);
  ASSERT_TRUE(restarted.ok());
  EXPECT_FALSE(restarted->created());
  EXPECT_EQ(WaitDone(client, bake_name).metadata().state(), v1::BAKE_STATE_SUCCEEDED);
  EXPECT_TRUE(client.CancelBake(bake_name).ok());
  EXPECT_EQ(Series(Scrape(server), loads), 0) << "status checks loaded the model";

  v1::PoseRequest pose;
  pose.set_rig(rig_name);
  pose.set_bake(bake_name);
  pose.set_deformer(v1::DEFORMER_ELASTIC);
  ASSERT_TRUE(client.Pose(pose).ok());
  EXPECT_EQ(Series(Scrape(server), loads), 1) << "posing loads (rebuilds) the model once";
  ASSERT_TRUE(client.Pose(pose).ok());
  EXPECT_EQ(Series(Scrape(server), loads), 1) << "then it is in memory";
}

TEST(ServerApi, ExamplesHaveNamesUnderTheirRig) {
  ServerProcess server(MakeTempDir("store"));
  Client client(Options(server));
  const Rig core = testing::MakeTwoBoneTube(5, 6);
  auto rig = client.CreateRig(RigToProto(core));
  ASSERT_TRUE(rig.ok()) << rig.status();
  const std::string rig_name = rig->rig().name();
  v1::CreateExampleRequest req;
  req.set_parent(rig_name);
  req.set_example_id("elbow-30");
  Pose bent = RestPose(core.skeleton);
  bent.local[1].rotation = Eigen::AngleAxisd(0.5, Eigen::Vector3d::UnitZ());
  *req.mutable_example()->mutable_pose() = PoseToProto(bent);
  for (int i = 0; i < core.mesh.V.size(); ++i) req.mutable_example()->add_positions(core.mesh.V.data()[i] * 1.01f);
  auto created = client.CreateExample(req);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->example().name(), rig_name + "/examples/elbow-30");
  EXPECT_TRUE(created->created());
  EXPECT_EQ(created->example_count(), 1);
  auto retried = client.CreateExample(req);
  ASSERT_TRUE(retried.ok());
  EXPECT_FALSE(retried->created());
  req.set_example_id("elbow 30");
  EXPECT_EQ(client.CreateExample(req).status().code(), absl::StatusCode::kInvalidArgument);

  auto got = client.GetExample(created->example().name());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->positions_size(), core.mesh.V.size());
  auto names = client.ListExamples(rig_name);
  ASSERT_TRUE(names.ok());
  ASSERT_EQ(names->size(), 1u);
  EXPECT_EQ((*names)[0].name(), created->example().name());
  EXPECT_EQ((*names)[0].positions_size(), 0) << "names only by default";
  auto full = client.ListExamples(rig_name, v1::EXAMPLE_VIEW_FULL);
  ASSERT_TRUE(full.ok());
  EXPECT_EQ((*full)[0].positions_size(), core.mesh.V.size());

  v1::PoseRequest pose;
  pose.set_rig(rig_name);
  pose.set_deformer(v1::DEFORMER_PSD_LBS);
  *pose.mutable_pose() = PoseToProto(bent);
  auto posed = client.Pose(pose);
  ASSERT_TRUE(posed.ok()) << posed.status();
  for (int i = 0; i < posed->vertices_size(); ++i)
    ASSERT_NEAR(posed->vertices(i), req.example().positions(i), 1e-4) << "PSD reproduces the example at its pose";

  ASSERT_TRUE(client.DeleteExample(created->example().name()).ok());
  EXPECT_EQ(client.GetExample(created->example().name()).status().code(), absl::StatusCode::kNotFound);
}

TEST(ServerApi, SessionsAnswerFramesInOrder) {
  ServerProcess server(MakeTempDir("store"));
  Client client(Options(server));
  auto rig = client.CreateRig(RigToProto(testing::MakeTwoBoneTube()));
  ASSERT_TRUE(rig.ok()) << rig.status();
  v1::PoseOutputs outputs;
  outputs.set_transforms(true);
  auto session = client.StartPoseSession(rig->rig().name(), v1::DEFORMER_DQS, outputs);
  ASSERT_TRUE(session.ok());
  for (int f = 0; f < 3; ++f) {
    auto frame = (*session)->Step(v1::Pose());
    ASSERT_TRUE(frame.ok()) << frame.status();
    EXPECT_EQ(frame->transforms_size(), 24);
  }
  EXPECT_TRUE((*session)->Close().ok());

  // FAST on the rig's own weights.
  v1::BakeOptions fast;
  fast.mutable_fast_model();
  auto started = client.StartBake(rig->rig().name(), fast);
  ASSERT_TRUE(started.ok()) << started.status();
  ASSERT_EQ(WaitDone(client, started->bake().name()).metadata().state(), v1::BAKE_STATE_SUCCEEDED);
  v1::SolveRequest solve;
  solve.set_bake(started->bake().name());
  *solve.add_constraints() = testing::FixedJoint(0);
  auto solution = client.Solve(solve);
  ASSERT_TRUE(solution.ok()) << solution.status();
  EXPECT_EQ(solution->handle_count(), 2);
  EXPECT_EQ(solution->transforms_size(), 24);
  auto solver = client.StartSolveSession(started->bake().name());
  ASSERT_TRUE(solver.ok());
  v1::SolveSessionRequest frame;
  *frame.mutable_constraints() = solve.constraints();
  for (int f = 0; f < 2; ++f) ASSERT_TRUE((*solver)->Step(frame).ok());
  frame.mutable_constraints(0)->set_joint(17);
  auto refused = (*solver)->Step(frame);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("frame 3: constraints[0].joint = 17"));

  // Targets each finite that overflow where they combine: INVALID_ARGUMENT as Pose answers, not an
  // answer of NaN and infinities; one far target gives an energy that is never negative.
  auto translate = [](v1::HandleConstraint* h, int joint, float x) {
    h->set_joint(joint);
    h->set_kind(v1::HandleConstraint::KIND_POSITION);
    for (float v : {x, 0.f, 0.f}) h->add_target(v);
  };
  v1::SolveRequest far;
  far.set_bake(started->bake().name());
  far.mutable_outputs()->set_vertices(true);
  translate(far.add_constraints(), 0, 3e38f);
  auto one = client.Solve(far);
  if (one.ok()) {
    EXPECT_GE(one->energy(), 0.0);
  } else {
    EXPECT_EQ(one.status().code(), absl::StatusCode::kInvalidArgument) << one.status();
  }
  translate(far.add_constraints(), 1, -3e38f);
  auto apart = client.Solve(far);
  EXPECT_EQ(apart.status().code(), absl::StatusCode::kInvalidArgument) << apart.status();
  EXPECT_THAT(std::string(apart.status().message()), HasSubstr("overflow float"));
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
