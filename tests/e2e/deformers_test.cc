// The elasticity-inspired deformers through the real server: swing/twist, endpoint and elastic
// bakes; METHOD_SWING_TWIST, METHOD_STBS_LBS/DQS and METHOD_ELASTIC frames compared with the core
// library run locally on the bake's own weights (GetWeights), and the errors a client sees.
#include <signal.h>

#include <chrono>
#include <cmath>
#include <optional>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "client/client.h"
#include "core/geometry/mesh.h"
#include "core/rig/bones.h"
#include "core/rig/joint_frames.h"
#include "core/skinning/stbs.h"
#include "core/skinning/swing_twist.h"
#include "core/weights/swing_twist_bake.h"
#include "server/convert/convert.h"
#include "tests/support/fixtures.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::MakeTempDir;
using ::skinning::testing::ServerProcess;
using ::testing::HasSubstr;

constexpr int kResolution = 24;

Eigen::MatrixXd Dense(const v1::DenseWeights& d, int nv) {
  const int nj = d.joint_count();
  EXPECT_EQ(d.values_size(), nv * nj);
  Eigen::MatrixXd D(nv, nj);
  for (int i = 0; i < nv; ++i)
    for (int j = 0; j < nj; ++j) D(i, j) = d.values(i * nj + j);
  return D;
}

RowMatrixX3d Positions(const v1::PosedFrame& f) {
  RowMatrixX3d U(f.vertices_size() / 3, 3);
  for (int i = 0; i < f.vertices_size(); ++i) U.data()[i] = f.vertices(i);
  return U;
}

class DeformersEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = MakeTempDir("store");
    StartServer();
    rig_ = testing::MakeCylinderRig(41, 24);
    order_ = *TopologicalOrder(rig_.skeleton);
    auto reg = client_->CreateRig(RigToProto(rig_));
    ASSERT_TRUE(reg.ok()) << reg.status();
    rig_name_ = reg->rig().name();
    diag_ = BoundingBoxDiagonal(rig_.mesh.V);
  }
  void TearDown() override {
    if (server_) {
      EXPECT_EQ(server_->Stop(SIGTERM), 0);
    }
  }
  void StartServer() {
    server_ = std::make_unique<ServerProcess>(store_);
    ClientOptions o;
    o.target = server_->address();
    o.deadline = std::chrono::seconds(300);
    client_ = std::make_unique<Client>(o);
  }
  std::string Bake(v1::BakeOptions options) {
    options.mutable_domain()->set_voxel_resolution(kResolution);
    auto started = client_->StartBake(rig_name_, options);
    EXPECT_TRUE(started.ok()) << started.status();
    if (!started.ok()) return "";
    auto done = client_->WatchBake(started->bake().name(), [](const v1::Bake&) { return true; });
    EXPECT_TRUE(done.ok()) << done.status();
    EXPECT_EQ(done->metadata().state(), v1::BAKE_STATE_SUCCEEDED) << done->error().message();
    return started->bake().name();
  }
  // A bake with the default options of one method, e.g. BakeMethod(&v1::BakeOptions::mutable_bbw).
  template <typename MethodOptions>
  std::string BakeMethod(MethodOptions* (v1::BakeOptions::*method)()) {
    v1::BakeOptions o;
    (o.*method)();
    return Bake(o);
  }
  v1::PoseRequest Request(v1::Deformer method, const std::string& bake, const Pose& pose) {
    v1::PoseRequest req;
    req.set_rig(rig_name_);
    req.set_bake(bake);
    req.set_deformer(method);
    *req.mutable_pose() = PoseToProto(pose);
    return req;
  }
  Pose ElbowPose(const Eigen::Vector3d& axis, double angle) {
    Pose pose = RestPose(rig_.skeleton);
    pose.local[1].rotation = Eigen::Quaterniond(Eigen::AngleAxisd(angle, axis.normalized()));
    return pose;
  }
  double MaxDiff(const RowMatrixX3d& a, const RowMatrixX3d& b) {
    return (a - b).rowwise().norm().maxCoeff() / diag_;
  }

  std::string store_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Client> client_;
  Rig rig_;
  std::vector<int> order_;
  std::string rig_name_;
  double diag_ = 1;
};

TEST_F(DeformersEndToEnd, SwingTwistFramesMatchTheCoreDeformerOnTheBakesWeights) {
  const std::string bake = BakeMethod(&v1::BakeOptions::mutable_swing_twist);
  auto w = client_->GetWeights(bake, v1::WEIGHTS_FORMAT_DENSE);
  ASSERT_TRUE(w.ok()) << w.status();
  const int nv = static_cast<int>(rig_.mesh.V.rows());
  const Eigen::MatrixXd D = Dense(w->weights().dense(), nv), S = Dense(w->swing(), nv), T = Dense(w->twist(), nv);
  EXPECT_LT((D.rowwise().sum().array() - 1).abs().maxCoeff(), 1e-9);
  const std::vector<JointFrame> frames = JointFrames(rig_.skeleton, *JointHandles(rig_.skeleton));
  for (const Pose& pose : {ElbowPose(Eigen::Vector3d::UnitX(), M_PI / 2), ElbowPose(Eigen::Vector3d::UnitZ(), M_PI / 2),
                           ElbowPose(Eigen::Vector3d(0.3, 1, 0.5), 1.2)}) {
    auto frame = client_->Pose(Request(v1::DEFORMER_SWING_TWIST, bake, pose));
    ASSERT_TRUE(frame.ok()) << frame.status();
    const auto M = *SkinningTransforms(rig_.skeleton, order_, pose);
    // The server's top-k float kernel against the dense double reference: k = 4 keeps every
    // deformer of a two-joint rig, so only float rounding remains.
    RowMatrixX3d expected;
    SwingTwist(rig_.mesh.V, D, S, T, frames, M, &expected);
    EXPECT_LT(MaxDiff(Positions(*frame), expected), 1e-5);
  }
}

TEST_F(DeformersEndToEnd, StbsStretchMovesTheFarPartRigidlyAndMatchesTheCore) {
  const std::string bbw = BakeMethod(&v1::BakeOptions::mutable_bbw);
  v1::BakeOptions o;
  o.mutable_endpoint()->set_weights_bake(bbw);
  const std::string endpoint = Bake(o);
  auto w = client_->GetWeights(endpoint, v1::WEIGHTS_FORMAT_DENSE);
  ASSERT_TRUE(w.ok()) << w.status();
  const int nv = static_cast<int>(rig_.mesh.V.rows());
  const Eigen::MatrixXd W = Dense(w->weights().dense(), nv), E = Dense(w->endpoint(), nv);
  const std::vector<StbsBone> bones = StbsBones(*JointHandles(rig_.skeleton));

  Pose pose = RestPose(rig_.skeleton);
  v1::PoseRequest req = Request(v1::DEFORMER_STBS_LBS, endpoint, pose);
  req.mutable_pose()->add_bone_stretch(2.0f);  // bone 0 twice as long
  req.mutable_pose()->add_bone_stretch(1.0f);
  for (float t : {0.f, 0.f, 0.f, static_cast<float>(M_PI)}) req.mutable_pose()->add_bone_twist(t);
  BoneStretchTwist st;
  st.stretch = {2.0, 1.0};
  st.twist_a = {0.0, 0.0};
  st.twist_b = {0.0, M_PI};
  const auto T = *StretchedSkinningTransforms(rig_.skeleton, order_, pose, bones, st);
  for (v1::Deformer method : {v1::DEFORMER_STBS_LBS, v1::DEFORMER_STBS_DQS}) {
    req.set_deformer(method);
    auto frame = client_->Pose(req);
    ASSERT_TRUE(frame.ok()) << frame.status();
    const RowMatrixX3d U = Positions(*frame);
    RowMatrixX3d expected;
    if (method == v1::DEFORMER_STBS_LBS) StbsLbs(rig_.mesh.V, W, E, bones, T, st, &expected);
    else StbsDqs(rig_.mesh.V, W, E, bones, T, st, &expected);
    EXPECT_LT(MaxDiff(U, expected), 1e-5) << v1::Deformer_Name(method);
  }
  // Stretch only: the far part (beyond the elbow's blend zone) moves by the stretch offset.
  req.mutable_pose()->clear_bone_twist();
  req.set_deformer(v1::DEFORMER_STBS_LBS);
  auto frame = client_->Pose(req);
  ASSERT_TRUE(frame.ok()) << frame.status();
  const RowMatrixX3d U = Positions(*frame);
  int far = 0;
  for (int i = 0; i < nv; ++i) {
    if (rig_.mesh.V(i, 0) < 1.5) continue;
    ++far;
    EXPECT_LT((U.row(i) - rig_.mesh.V.row(i) - Eigen::RowVector3d(1, 0, 0)).norm(), 1e-5) << "vertex " << i;
  }
  EXPECT_GT(far, 100);
}

TEST_F(DeformersEndToEnd, ElasticPoseMatchesALocalGoldStandardSolveAndSurvivesARestart) {
  const std::string bake = BakeMethod(&v1::BakeOptions::mutable_elastic_model);
  const Pose pose = ElbowPose(Eigen::Vector3d::UnitZ(), M_PI / 3);
  auto frame = client_->Pose(Request(v1::DEFORMER_ELASTIC, bake, pose));
  ASSERT_TRUE(frame.ok()) << frame.status();
  VoxelGridOptions voxel;
  voxel.resolution = kResolution;
  auto model = BuildElasticModel(rig_.mesh, rig_.skeleton, DomainOptions{voxel, std::nullopt});
  ASSERT_TRUE(model.ok()) << model.status();
  const auto T = *SkinningTransforms(rig_.skeleton, order_, pose);
  auto X = (*model)->Solve(T, nullptr, ElasticOptions());
  ASSERT_TRUE(X.ok()) << X.status();
  EXPECT_LT(MaxDiff(Positions(*frame), (*model)->ToMesh(*X)), 1e-5);
  // A restarted server rebuilds the model from the stored options and answers the same.
  ASSERT_EQ(server_->Stop(SIGTERM), 0);
  StartServer();
  auto again = client_->Pose(Request(v1::DEFORMER_ELASTIC, bake, pose));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_LT(MaxDiff(Positions(*again), Positions(*frame)), 1e-6);
}

// Consecutive elastic frames of a clip and of a session start from the last frame's solution
// carried forward, or predicted along the motion (ElasticModel::NextStart), kept when its energy
// is below the default start's (or below Prediction::enough, when the others are not tried).
// Every frame equals that warm-started chain computed locally, whose energies are those of cold
// solves of the same poses to 1 %.
TEST_F(DeformersEndToEnd, ElasticClipAndSessionFramesAreWarmStartedAndMatchColdSolves) {
  const std::string bake = BakeMethod(&v1::BakeOptions::mutable_elastic_model);
  VoxelGridOptions voxel;
  voxel.resolution = kResolution;
  auto model = BuildElasticModel(rig_.mesh, rig_.skeleton, DomainOptions{voxel, std::nullopt});
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<Pose> poses;
  for (int f = 0; f < 6; ++f) {
    // As the server receives them (floats), so that the local chain solves the same transforms.
    auto pose = PoseFromProto(PoseToProto(ElbowPose(Eigen::Vector3d::UnitZ(), 0.2 * f + 0.1)), rig_.skeleton);
    ASSERT_TRUE(pose.ok()) << pose.status();
    poses.push_back(*pose);
  }

  std::vector<RowMatrixX3d> warm_chain;
  ElasticOptions warm_options;
  warm_options.keep_lower_start = true;
  std::optional<ElasticModel::FrameHistory> last;
  int carried = 0, predicted = 0;
  for (const Pose& pose : poses) {
    const auto T = *SkinningTransforms(rig_.skeleton, order_, pose);
    ElasticReport cold_report;
    auto X_cold = (*model)->Solve(T, nullptr, ElasticOptions(), &cold_report);
    ASSERT_TRUE(X_cold.ok()) << X_cold.status();
    std::optional<ElasticModel::Prediction> start;
    if (last) {
      auto predicted = (*model)->NextStart(*last, T);
      ASSERT_TRUE(predicted.ok()) << predicted.status();
      start = *std::move(predicted);
    }
    ElasticReport report;
    warm_options.first_start_enough = start ? start->enough : 0.0;
    auto X = (*model)->Solve(T, start ? start->Starts() : std::vector<const RowMatrixX3d*>{}, warm_options, &report);
    ASSERT_TRUE(X.ok()) << X.status();
    carried += start && report.start_index != -1;
    predicted += start && start->predicted && report.start_index == 0;
    // The energy is not convex: a warm-started chain may settle in another local minimum than
    // a cold solve (on this bend, frame 5: 0.2 % higher energy, 1.7 % of the diagonal apart),
    // the price of frames that follow the motion. Both are converged minima of nearly equal energy.
    EXPECT_NEAR(report.energy.back(), cold_report.energy.back(), 0.01 * cold_report.energy.back());
    warm_chain.push_back((*model)->ToMesh(*X));
    last = start ? ElasticModel::NextHistory(*last, *start, T, *X, report.energy.back())
                 : ElasticModel::FrameHistory{T, *X, {}, {}, report.energy.back()};
  }
  EXPECT_EQ(carried, 5) << "every frame after the first starts from the last one";
  EXPECT_GE(predicted, 1) << "the bend goes on at one pace: frames after the second start from a prediction";

  v1::PoseClipRequest clip;
  clip.set_rig(rig_name_);
  clip.set_bake(bake);
  clip.set_deformer(v1::DEFORMER_ELASTIC);
  for (const Pose& pose : poses) *clip.add_poses() = PoseToProto(pose);
  auto frames = client_->PoseClip(clip);
  ASSERT_TRUE(frames.ok()) << frames.status();
  ASSERT_EQ(frames->frames_size(), 6);
  v1::PoseOutputs outputs;
  outputs.set_vertices(true);
  auto session = client_->StartPoseSession(rig_name_, v1::DEFORMER_ELASTIC, outputs, bake);
  ASSERT_TRUE(session.ok()) << session.status();
  for (int f = 0; f < 6; ++f) {
    auto step = (*session)->Step(PoseToProto(poses[f]));
    ASSERT_TRUE(step.ok()) << step.status();
    // Each frame stops at a tolerance and the next one starts from it (and, predicted, from its
    // difference to the one before), so the server's float-stored rig moves later frames of the
    // chain by ~1e-5; a chain that started cold instead would be ~1e-2 away (see above).
    for (const RowMatrixX3d& got : {Positions(frames->frames(f)), Positions(*step)}) {
      EXPECT_LT(MaxDiff(got, warm_chain[f]), 1e-4) << "frame " << f;
    }
  }
}

TEST_F(DeformersEndToEnd, ClearErrorsForMissingOrMismatchedBakesAndStretchOutsideStbs) {
  const Pose pose = ElbowPose(Eigen::Vector3d::UnitZ(), 0.5);
  auto no_bake = client_->Pose(Request(v1::DEFORMER_SWING_TWIST, "", pose));
  EXPECT_EQ(no_bake.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(no_bake.status().message(), HasSubstr("options.swing_twist"));
  auto no_elastic = client_->Pose(Request(v1::DEFORMER_ELASTIC, "", pose));
  EXPECT_EQ(no_elastic.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(no_elastic.status().message(), HasSubstr("options.elastic_model"));

  const std::string elastic = BakeMethod(&v1::BakeOptions::mutable_elastic_model);
  auto lbs_on_elastic = client_->Pose(Request(v1::DEFORMER_UNSPECIFIED, elastic, pose));
  EXPECT_EQ(lbs_on_elastic.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(lbs_on_elastic.status().message(), HasSubstr("DEFORMER_ELASTIC"));
  auto weights = client_->GetWeights(elastic, v1::WEIGHTS_FORMAT_DENSE);
  EXPECT_EQ(weights.status().code(), absl::StatusCode::kFailedPrecondition);

  const std::string bbw = BakeMethod(&v1::BakeOptions::mutable_bbw);
  v1::PoseRequest stretched = Request(v1::DEFORMER_UNSPECIFIED, bbw, pose);
  stretched.mutable_pose()->add_bone_stretch(2.0f);
  stretched.mutable_pose()->add_bone_stretch(1.0f);
  auto lbs_stretch = client_->Pose(stretched);
  EXPECT_EQ(lbs_stretch.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(lbs_stretch.status().message(), HasSubstr("bone_stretch"));
  stretched.set_deformer(v1::DEFORMER_STBS_LBS);
  auto stbs_without_endpoint = client_->Pose(stretched);
  EXPECT_EQ(stbs_without_endpoint.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(stbs_without_endpoint.status().message(), HasSubstr("options.endpoint"));

  v1::BakeOptions bad;
  bad.mutable_swing_twist()->set_max_iteration_count(100000);
  auto refused = client_->StartBake(rig_name_, bad);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("max_iteration_count"));
  v1::BakeOptions no_weights;
  no_weights.mutable_endpoint();
  auto needs_weights = client_->StartBake(rig_name_, no_weights);
  EXPECT_EQ(needs_weights.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(needs_weights.status().message(), HasSubstr("options.endpoint.weights_bake"));
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
