// Pose space deformation end to end: examples through RigService, posing with METHOD_PSD_*,
// against the real server binary (and skinctl) on a loopback port.
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/client.h"
#include "core/geometry/mesh.h"
#include "core/io/obj.h"
#include "server/convert/convert.h"
#include "tests/support/fixtures.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::BinaryPath;
using ::skinning::testing::MakeCylinderRig;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::MakeTwoBoneTube;
using ::skinning::testing::RunCommand;
using ::skinning::testing::ServerProcess;
using ::testing::HasSubstr;

constexpr v1::Deformer kPsdMethods[] = {v1::DEFORMER_PSD_LBS, v1::DEFORMER_PSD_DQS, v1::DEFORMER_PSD_SUPPORT_LBS,
                                      v1::DEFORMER_PSD_SUPPORT_DQS};

// The closed cylinder of MakeCylinderRig (bones with tails, so the elbow qualifies for a support
// joint) with weights blending linearly from root to elbow over the middle fifth of its length.
Rig PsdRig() {
  Rig rig = MakeCylinderRig(21, 16);
  rig.name = "psd-cylinder";
  const int n = static_cast<int>(rig.mesh.V.rows());
  SparseWeights W;
  W.joints.resize(n, 2);
  W.weights.resize(n, 2);
  for (int i = 0; i < n; ++i) {
    const double b = std::clamp((rig.mesh.V(i, 0) - 0.8) / 0.4, 0.0, 1.0);
    W.joints.row(i) << 0, 1;
    W.weights.row(i) << static_cast<float>(1 - b), static_cast<float>(b);
  }
  rig.sparse_weights = std::move(W);
  // A morph target at default weight 0 (so every pose that sets no morph weights is unmorphed):
  // the cylinder swells radially by up to 0.03, most at x = 0.5, away from the elbow's bulge.
  MorphTarget swell;
  swell.name = "swell";
  swell.dV = RowMatrixX3d::Zero(n, 3);
  swell.dN.resize(0, 3);
  for (int i = 0; i < n; ++i) {
    const Eigen::Vector3d radial(0, rig.mesh.V(i, 1), rig.mesh.V(i, 2));
    const double g = 0.03 * std::exp(-(rig.mesh.V(i, 0) - 0.5) * (rig.mesh.V(i, 0) - 0.5) / 0.05);
    if (radial.norm() > 1e-9) swell.dV.row(i) = g * radial.normalized().transpose();
  }
  rig.morph_targets.push_back(std::move(swell));
  return rig;
}

double BoxDiagonal(const Rig& rig) {
  return (rig.mesh.V.colwise().maxCoeff() - rig.mesh.V.colwise().minCoeff()).norm();
}

// The elbow rotated by `degrees` about `axis`, the root at rest.
v1::Pose Bend(const Rig& rig, double degrees, const Eigen::Vector3d& axis) {
  Pose pose = RestPose(rig.skeleton);
  pose.local[1].rotation = Eigen::AngleAxisd(degrees * M_PI / 180, axis.normalized());
  return PoseToProto(pose);
}

double MaxDistance(const google::protobuf::RepeatedField<float>& a, const google::protobuf::RepeatedField<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (int i = 0; i + 2 < std::min(a.size(), b.size()); i += 3)
    worst = std::max(worst, std::hypot(double{a[i]} - b[i], double{a[i + 1]} - b[i + 1], double{a[i + 2]} - b[i + 2]));
  return worst;
}

class PsdEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    store_dir_ = MakeTempDir("store");
    Start();
    rig_ = PsdRig();
    auto reg = client_->CreateRig(RigToProto(rig_));
    ASSERT_TRUE(reg.ok()) << reg.status();
    rig_name_ = reg->rig().name();
    diag_ = BoxDiagonal(rig_);
  }
  void TearDown() override {
    if (server_) {
      EXPECT_EQ(server_->Stop(SIGTERM), 0) << server_->Output();
    }
  }
  void Start() {
    server_ = std::make_unique<ServerProcess>(store_dir_);
    ClientOptions o;
    o.target = server_->address();
    o.deadline = std::chrono::milliseconds(120000);  // the first PSD call builds the model
    client_ = std::make_unique<Client>(o);
  }

  absl::StatusOr<v1::PosedFrame> PoseVertices(const v1::Pose& pose, v1::Deformer method, bool normals = false) {
    v1::PoseRequest req;
    req.set_rig(rig_name_);
    *req.mutable_pose() = pose;
    req.set_deformer(method);
    req.mutable_outputs()->set_vertices(true);
    req.mutable_outputs()->set_normals(normals);
    return client_->Pose(req);
  }

  // A sculpted example at `pose`: plain LBS there plus a bulge of `amplitude` around the elbow,
  // along each vertex's rest radial direction.
  v1::Example Sculpt(const std::string& name, const v1::Pose& pose, double amplitude) {
    auto lbs = PoseVertices(pose, v1::DEFORMER_UNSPECIFIED);
    EXPECT_TRUE(lbs.ok()) << lbs.status();
    v1::Example e;
    e.set_name(name);
    *e.mutable_pose() = pose;
    for (int i = 0; i < rig_.mesh.V.rows(); ++i) {
      const Eigen::Vector3d v = rig_.mesh.V.row(i);
      const Eigen::Vector3d radial(0, v.y(), v.z());
      const double g = amplitude * std::exp(-(v.x() - 1.0) * (v.x() - 1.0) / 0.02);
      const Eigen::Vector3d d = radial.norm() > 1e-9 ? Eigen::Vector3d(g * radial.normalized()) : Eigen::Vector3d::Zero();
      for (int a = 0; a < 3; ++a) e.add_positions(static_cast<float>(lbs->vertices(3 * i + a) + d(a)));
    }
    return e;
  }

  // Sculpt's examples carry the id to ask for in `name` (empty: the server names it); the
  // stored example's name is ExampleName(id).
  absl::StatusOr<v1::CreateExampleResponse> Add(const v1::Example& e) {
    v1::CreateExampleRequest req;
    req.set_parent(rig_name_);
    req.set_example_id(e.name());
    *req.mutable_example() = e;
    req.mutable_example()->clear_name();
    return client_->CreateExample(req);
  }

  std::string ExampleName(const std::string& id) const { return rig_name_ + "/examples/" + id; }

  // The ids of the rig's examples (the last part of their names).
  std::vector<std::string> Names() {
    auto list = client_->ListExamples(rig_name_);
    EXPECT_TRUE(list.ok()) << list.status();
    std::vector<std::string> ids;
    if (list.ok())
      for (const auto& e : *list) ids.push_back(e.name().substr(e.name().rfind('/') + 1));
    return ids;
  }

  std::string store_dir_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Client> client_;
  Rig rig_;
  std::string rig_name_;
  double diag_ = 0;
};

TEST_F(PsdEndToEnd, EveryPsdMethodReproducesTheExamplesAtTheirPoses) {
  const v1::Example a = Sculpt("bend-z", Bend(rig_, 60, Eigen::Vector3d::UnitZ()), 0.05);
  const v1::Example b = Sculpt("bend-y", Bend(rig_, -50, Eigen::Vector3d::UnitY()), 0.03);
  auto added_a = Add(a);
  ASSERT_TRUE(added_a.ok()) << added_a.status();
  EXPECT_EQ(added_a->example().name(), ExampleName("bend-z"));
  EXPECT_EQ(added_a->example_count(), 1);
  auto added_b = Add(b);
  ASSERT_TRUE(added_b.ok()) << added_b.status();
  EXPECT_EQ(added_b->example_count(), 2);
  for (v1::Deformer method : kPsdMethods) {
    SCOPED_TRACE(v1::Deformer_Name(method));
    for (const v1::Example* e : {&a, &b}) {
      auto posed = PoseVertices(e->pose(), method);
      ASSERT_TRUE(posed.ok()) << posed.status();
      const double error = MaxDistance(posed->vertices(), e->positions());
      EXPECT_LE(error, 1e-6 * diag_) << e->name();
      std::printf("%-24s %-7s max |PSD - example| = %.3g (bbox diagonal %.3f)\n", v1::Deformer_Name(method).c_str(),
                  e->name().c_str(), error, diag_);
    }
  }
  // The same through a clip and a session (the cached model).
  v1::PoseClipRequest clip;
  clip.set_rig(rig_name_);
  clip.set_deformer(v1::DEFORMER_PSD_SUPPORT_DQS);
  *clip.add_poses() = a.pose();
  *clip.add_poses() = b.pose();
  auto frames = client_->PoseClip(clip);
  ASSERT_TRUE(frames.ok()) << frames.status();
  ASSERT_EQ(frames->frames_size(), 2);
  EXPECT_LE(MaxDistance(frames->frames(0).vertices(), a.positions()), 1e-6 * diag_);
  EXPECT_LE(MaxDistance(frames->frames(1).vertices(), b.positions()), 1e-6 * diag_);
  v1::PoseOutputs outputs;
  outputs.set_vertices(true);
  auto session = client_->StartPoseSession(rig_name_, v1::DEFORMER_PSD_LBS, outputs);
  ASSERT_TRUE(session.ok()) << session.status();
  for (const v1::Example* e : {&b, &a}) {
    auto frame = (*session)->Step(e->pose());
    ASSERT_TRUE(frame.ok()) << frame.status();
    EXPECT_LE(MaxDistance(frame->vertices(), e->positions()), 1e-6 * diag_);
  }
  EXPECT_TRUE((*session)->Close().ok());
}

TEST_F(PsdEndToEnd, PsdIsPlainSkinningAtRestAndBendsTheBulgeInBetween) {
  const v1::Example a = Sculpt("bend-z", Bend(rig_, 60, Eigen::Vector3d::UnitZ()), 0.05);
  ASSERT_TRUE(Add(a).ok());
  const v1::Pose rest = PoseToProto(RestPose(rig_.skeleton));
  const v1::Pose half = Bend(rig_, 30, Eigen::Vector3d::UnitZ());
  for (auto [psd, plain] : {std::pair{v1::DEFORMER_PSD_LBS, v1::DEFORMER_UNSPECIFIED}, std::pair{v1::DEFORMER_PSD_DQS, v1::DEFORMER_DQS}}) {
    SCOPED_TRACE(v1::Deformer_Name(psd));
    auto p_rest = PoseVertices(rest, psd), s_rest = PoseVertices(rest, plain);
    ASSERT_TRUE(p_rest.ok() && s_rest.ok()) << p_rest.status() << s_rest.status();
    EXPECT_LE(MaxDistance(p_rest->vertices(), s_rest->vertices()), 1e-6 * diag_);
    // Half way to the example some of its bulge (0.05 at the elbow) is there.
    auto p_half = PoseVertices(half, psd), s_half = PoseVertices(half, plain);
    ASSERT_TRUE(p_half.ok() && s_half.ok());
    const double d = MaxDistance(p_half->vertices(), s_half->vertices());
    EXPECT_GT(d, 0.005);
    EXPECT_LT(d, 0.05 + 1e-3);
  }
  // Support joints change the base skinning away from the examples: another in-between shape.
  for (auto [support, psd] : {std::pair{v1::DEFORMER_PSD_SUPPORT_LBS, v1::DEFORMER_PSD_LBS},
                              std::pair{v1::DEFORMER_PSD_SUPPORT_DQS, v1::DEFORMER_PSD_DQS}}) {
    auto with = PoseVertices(half, support), without = PoseVertices(half, psd);
    ASSERT_TRUE(with.ok() && without.ok()) << with.status() << without.status();
    const double d = MaxDistance(with->vertices(), without->vertices());
    std::printf("%s vs %s half way: max difference %.3g\n", v1::Deformer_Name(support).c_str(),
                v1::Deformer_Name(psd).c_str(), d);
    EXPECT_GT(d, 1e-5);
  }
}

// PSD with morph targets: morph first, then the example corrections, then skinning. Skinning is
// linear in the rest positions for fixed weights and transforms, so what the morph adds to a
// PSD pose must equal what it adds to the plain pose of PSD's base (LBS or DQS):
// PSD(morphed) − PSD(unmorphed) = base(morphed) − base(unmorphed), here with an example active.
TEST_F(PsdEndToEnd, MorphTargetsComposeWithTheExamplesMorphFirst) {
  ASSERT_TRUE(Add(Sculpt("bend-z", Bend(rig_, 60, Eigen::Vector3d::UnitZ()), 0.05)).ok());
  v1::Pose pose = Bend(rig_, 45, Eigen::Vector3d::UnitZ());
  v1::Pose morphed = pose;
  morphed.add_morph_weights(1.f);
  for (auto [psd, plain] : {std::pair{v1::DEFORMER_PSD_LBS, v1::DEFORMER_UNSPECIFIED},
                            std::pair{v1::DEFORMER_PSD_DQS, v1::DEFORMER_DQS}}) {
    SCOPED_TRACE(v1::Deformer_Name(psd));
    auto p0 = PoseVertices(pose, psd), p1 = PoseVertices(morphed, psd);
    auto s0 = PoseVertices(pose, plain), s1 = PoseVertices(morphed, plain);
    ASSERT_TRUE(p0.ok() && p1.ok() && s0.ok() && s1.ok())
        << p0.status() << p1.status() << s0.status() << s1.status();
    double worst = 0, morph = 0, correction = 0;
    for (int i = 0; i < p0->vertices_size(); ++i) {
      const double psd_delta = double{p1->vertices(i)} - p0->vertices(i);
      const double plain_delta = double{s1->vertices(i)} - s0->vertices(i);
      worst = std::max(worst, std::abs(psd_delta - plain_delta));
      morph = std::max(morph, std::abs(plain_delta));
      correction = std::max(correction, std::abs(double{p1->vertices(i)} - s1->vertices(i)));
    }
    EXPECT_LE(worst, 1e-5 * diag_);
    EXPECT_GT(morph, 0.01) << "the morph should show";
    EXPECT_GT(correction, 0.005) << "the example's correction should show on the morphed mesh";
  }
}

// An example given without a pose is at the bind pose, as a Pose without joints is. It used to
// be stored at the rest pose, which differs where a rig's rest pose is not its bind pose (glTF
// rigs), so a sculpt of the default pose applied at another pose.
TEST_F(PsdEndToEnd, AnExampleWithoutAPoseIsAtTheBindPoseAsForPose) {
  Rig bent = PsdRig();
  bent.name = "psd-cylinder-bent-rest";
  bent.skeleton.joints[1].rest.rotation = Eigen::AngleAxisd(40 * M_PI / 180, Eigen::Vector3d::UnitZ());
  auto reg = client_->CreateRig(RigToProto(bent));
  ASSERT_TRUE(reg.ok()) << reg.status();
  rig_name_ = reg->rig().name();  // Sculpt, Add and PoseVertices use this rig from here on
  const v1::Example sculpt = Sculpt("bind", v1::Pose(), 0.05);
  ASSERT_TRUE(Add(sculpt).ok());
  auto stored = client_->GetExample(ExampleName("bind"));
  ASSERT_TRUE(stored.ok()) << stored.status();
  ASSERT_EQ(stored->pose().joints_size(), 2);
  EXPECT_NEAR(stored->pose().joints(1).rotation(3), 1.0, 1e-6) << "the elbow is stored turned, at its rest";
  auto at_rest = PoseVertices(PoseToProto(RestPose(bent.skeleton)), v1::DEFORMER_UNSPECIFIED);
  for (v1::Deformer psd : {v1::DEFORMER_PSD_LBS, v1::DEFORMER_PSD_DQS}) {
    auto posed = PoseVertices(v1::Pose(), psd);
    ASSERT_TRUE(posed.ok() && at_rest.ok()) << posed.status() << at_rest.status();
    EXPECT_LE(MaxDistance(posed->vertices(), sculpt.positions()), 1e-5 * diag_) << v1::Deformer_Name(psd);
  }
  EXPECT_GT(MaxDistance(at_rest->vertices(), sculpt.positions()), 0.1) << "the rest pose should differ from the bind pose";
}

TEST_F(PsdEndToEnd, WithoutExamplesPsdIsPlainSkinning) {
  const v1::Pose pose = Bend(rig_, 70, Eigen::Vector3d(0, 1, 1));
  for (auto [psd, plain] : {std::pair{v1::DEFORMER_PSD_LBS, v1::DEFORMER_UNSPECIFIED}, std::pair{v1::DEFORMER_PSD_DQS, v1::DEFORMER_DQS},
                            std::pair{v1::DEFORMER_PSD_SUPPORT_LBS, v1::DEFORMER_UNSPECIFIED},
                            std::pair{v1::DEFORMER_PSD_SUPPORT_DQS, v1::DEFORMER_DQS}}) {
    auto p = PoseVertices(pose, psd), s = PoseVertices(pose, plain);
    ASSERT_TRUE(p.ok() && s.ok()) << p.status() << s.status();
    EXPECT_EQ(MaxDistance(p->vertices(), s->vertices()), 0.0) << v1::Deformer_Name(psd);
  }
}

TEST_F(PsdEndToEnd, BadExamplesAreRefusedAndNothingIsStored) {
  const v1::Example a = Sculpt("a", Bend(rig_, 60, Eigen::Vector3d::UnitZ()), 0.05);
  ASSERT_TRUE(Add(a).ok());
  const std::vector<std::string> before = Names();
  ASSERT_THAT(before, ::testing::ElementsAre("a"));
  auto expect_invalid = [&](const v1::CreateExampleRequest& req, const std::string& message) {
    auto r = client_->CreateExample(req);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr(message));
    EXPECT_EQ(Names(), before);
  };
  v1::CreateExampleRequest req;
  req.set_parent(rig_name_);
  {  // Wrong vertex count.
    v1::CreateExampleRequest r = req;
    r.set_example_id("short");
    *r.mutable_example() = Sculpt("", Bend(rig_, 20, Eigen::Vector3d::UnitZ()), 0.01);
    for (int k = 0; k < 3; ++k) r.mutable_example()->mutable_positions()->RemoveLast();
    expect_invalid(r, absl::StrFormat("expected %d", 3 * rig_.mesh.V.rows()));
  }
  {  // The pose of example "a" again (other positions).
    v1::CreateExampleRequest r = req;
    r.set_example_id("again");
    *r.mutable_example() = Sculpt("", a.pose(), 0.02);
    expect_invalid(r, "has the pose of example 'a'");
  }
  {  // An unknown joint name.
    v1::CreateExampleRequest r = req;
    r.set_example_id("by-name");
    *r.mutable_example() = Sculpt("", Bend(rig_, 20, Eigen::Vector3d::UnitZ()), 0.01);
    r.mutable_example()->clear_pose();
    (*r.mutable_joints_by_name())["shoulder"].add_rotation(0);
    expect_invalid(r, "no joint named 'shoulder'");
  }
  {  // The wrong joint count.
    v1::CreateExampleRequest r = req;
    r.set_example_id("three");
    *r.mutable_example() = Sculpt("", Bend(rig_, 20, Eigen::Vector3d::UnitZ()), 0.01);
    *r.mutable_example()->mutable_pose()->add_joints() = r.example().pose().joints(0);
    expect_invalid(r, "joints has 3 entries, the rig's skeleton has 2");
  }
  {  // Morph weights, in either form: they used to be dropped without a word.
    v1::CreateExampleRequest r = req;
    r.set_example_id("morphed");
    *r.mutable_example() = Sculpt("", Bend(rig_, 20, Eigen::Vector3d::UnitZ()), 0.01);
    r.mutable_example()->mutable_pose()->add_morph_weights(1.f);
    expect_invalid(r, "example.pose has morph weights");
    r.mutable_example()->mutable_pose()->clear_morph_weights();
    (*r.mutable_example()->mutable_pose()->mutable_named_morph_weights())["bulge"] = 1.f;
    expect_invalid(r, "example.pose has morph weights");
  }
  {  // A taken name.
    v1::CreateExampleRequest r = req;
    r.set_example_id("a");
    *r.mutable_example() = Sculpt("", Bend(rig_, 20, Eigen::Vector3d::UnitZ()), 0.01);
    auto taken = client_->CreateExample(r);
    EXPECT_EQ(taken.status().code(), absl::StatusCode::kAlreadyExists) << taken.status();
    EXPECT_EQ(Names(), before);
  }
  {  // Unknown rig; unknown example.
    v1::CreateExampleRequest r = req;
    r.set_parent("rigs/rig-00000000000000000000000000000000");
    r.set_example_id("a");
    *r.mutable_example() = a;
    r.mutable_example()->clear_name();
    EXPECT_EQ(client_->CreateExample(r).status().code(), absl::StatusCode::kNotFound);
    const absl::Status missing = client_->DeleteExample(ExampleName("nope"));
    EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
    EXPECT_THAT(missing.message(), HasSubstr("'nope'"));
  }
  // joints_by_name gives the full pose: the elbow rotation of "a" by name is a duplicate.
  v1::CreateExampleRequest r = req;
  r.set_example_id("");
    *r.mutable_example() = Sculpt("", Bend(rig_, 20, Eigen::Vector3d::UnitZ()), 0.01);
  r.mutable_example()->clear_pose();
  (*r.mutable_joints_by_name())["elbow"] = a.pose().joints(1);
  (*r.mutable_joints_by_name())["elbow"].clear_translation();  // kept at rest
  expect_invalid(r, "has the pose of example 'a'");
}

TEST_F(PsdEndToEnd, ExamplesSurviveARestart) {
  const v1::Example a = Sculpt("a", Bend(rig_, 60, Eigen::Vector3d::UnitZ()), 0.05);
  ASSERT_TRUE(Add(a).ok());
  auto unnamed = Add(Sculpt("", Bend(rig_, -40, Eigen::Vector3d::UnitY()), 0.02));
  ASSERT_TRUE(unnamed.ok()) << unnamed.status();
  EXPECT_EQ(unnamed->example().name(), ExampleName("example-2"));
  auto shapes = client_->ListExamples(rig_name_, v1::EXAMPLE_VIEW_FULL);
  ASSERT_TRUE(shapes.ok());
  ASSERT_EQ(shapes->size(), 2u);
  EXPECT_EQ(MaxDistance((*shapes)[0].positions(), a.positions()), 0.0);

  EXPECT_EQ(server_->Stop(SIGTERM), 0);
  Start();
  EXPECT_THAT(Names(), ::testing::ElementsAre("a", "example-2"));
  // A retry of the unnamed call after the restart (its first answer lost): OK, nothing added,
  // answered with the name the server gave it.
  auto retried = Add(Sculpt("", Bend(rig_, -40, Eigen::Vector3d::UnitY()), 0.02));
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_FALSE(retried->created());
  EXPECT_EQ(retried->example().name(), ExampleName("example-2"));
  EXPECT_EQ(retried->example_count(), 2);
  auto posed = PoseVertices(a.pose(), v1::DEFORMER_PSD_LBS);
  ASSERT_TRUE(posed.ok()) << posed.status();
  EXPECT_LE(MaxDistance(posed->vertices(), a.positions()), 1e-6 * diag_);
}

TEST_F(PsdEndToEnd, AfterRemoveExampleThePoseIsThatOfTheRemainingSet) {
  const v1::Example a = Sculpt("a", Bend(rig_, 60, Eigen::Vector3d::UnitZ()), 0.05);
  const v1::Example b = Sculpt("b", Bend(rig_, -50, Eigen::Vector3d::UnitY()), 0.03);
  ASSERT_TRUE(Add(a).ok());
  ASSERT_TRUE(Add(b).ok());
  const v1::Pose between = Bend(rig_, 35, Eigen::Vector3d(0, 1, 2));
  auto with_a = PoseVertices(between, v1::DEFORMER_PSD_LBS);  // builds and caches the {a, b} model
  ASSERT_TRUE(with_a.ok());
  const absl::Status removed = client_->DeleteExample(ExampleName("a"));
  ASSERT_TRUE(removed.ok()) << removed;
  EXPECT_THAT(Names(), ::testing::ElementsAre("b"));

  // A second server with only "b" added is the reference.
  ServerProcess other(MakeTempDir("other"));
  ClientOptions o;
  o.target = other.address();
  o.deadline = std::chrono::milliseconds(120000);
  Client reference(o);
  auto reg = reference.CreateRig(RigToProto(rig_));
  ASSERT_TRUE(reg.ok());
  ASSERT_EQ(reg->rig().name(), rig_name_);
  v1::CreateExampleRequest add_b;
  add_b.set_parent(rig_name_);
  add_b.set_example_id("b");
  *add_b.mutable_example() = b;
  add_b.mutable_example()->clear_name();
  ASSERT_TRUE(reference.CreateExample(add_b).ok());
  for (const v1::Pose& pose : {a.pose(), b.pose(), between}) {
    auto here = PoseVertices(pose, v1::DEFORMER_PSD_LBS);
    v1::PoseRequest req;
    req.set_rig(rig_name_);
    *req.mutable_pose() = pose;
    req.set_deformer(v1::DEFORMER_PSD_LBS);
    auto there = reference.Pose(req);
    ASSERT_TRUE(here.ok() && there.ok()) << here.status() << there.status();
    EXPECT_LE(MaxDistance(here->vertices(), there->vertices()), 1e-6 * diag_);
  }
  // And "a" is gone: its sculpt is no longer reproduced at its pose.
  auto at_a = PoseVertices(a.pose(), v1::DEFORMER_PSD_LBS);
  ASSERT_TRUE(at_a.ok());
  EXPECT_GT(MaxDistance(at_a->vertices(), a.positions()), 0.01);
  EXPECT_GT(MaxDistance(at_a->vertices(), with_a->vertices()), 0.0);
  EXPECT_EQ(other.Stop(SIGTERM), 0);
}

TEST_F(PsdEndToEnd, DeleteRigRemovesItsExamples) {
  ASSERT_TRUE(Add(Sculpt("a", Bend(rig_, 60, Eigen::Vector3d::UnitZ()), 0.05)).ok());
  ASSERT_TRUE(client_->DeleteRig(rig_name_).ok());
  EXPECT_EQ(client_->ListExamples(rig_name_).status().code(), absl::StatusCode::kNotFound);
  auto reg = client_->CreateRig(RigToProto(rig_));
  ASSERT_TRUE(reg.ok());
  EXPECT_THAT(Names(), ::testing::IsEmpty());
}

TEST_F(PsdEndToEnd, NormalsAreThoseOfThePosedMesh) {
  const v1::Example a = Sculpt("a", Bend(rig_, 60, Eigen::Vector3d::UnitZ()), 0.05);
  ASSERT_TRUE(Add(a).ok());
  // The cylinder has no normals: none are returned, as with LBS.
  auto none = PoseVertices(a.pose(), v1::DEFORMER_PSD_LBS, /*normals=*/true);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->normals_size(), 0);
  // A rig with normals: the example's own area-weighted normals at its pose.
  Rig tube = MakeTwoBoneTube();
  auto reg = client_->CreateRig(RigToProto(tube));
  ASSERT_TRUE(reg.ok());
  const v1::Pose pose = Bend(tube, 45, Eigen::Vector3d::UnitZ());
  v1::PoseRequest req;
  req.set_rig(reg->rig().name());
  *req.mutable_pose() = pose;
  req.set_deformer(v1::DEFORMER_UNSPECIFIED);
  auto lbs = client_->Pose(req);
  ASSERT_TRUE(lbs.ok());
  v1::CreateExampleRequest add;
  add.set_parent(reg->rig().name());
  *add.mutable_example()->mutable_pose() = pose;
  RowMatrixX3d sculpt(tube.mesh.V.rows(), 3);
  for (int i = 0; i < sculpt.rows(); ++i) {
    for (int c = 0; c < 3; ++c) sculpt(i, c) = lbs->vertices(3 * i + c) * (c == 0 ? 1.0 : 1.2);
    for (int c = 0; c < 3; ++c) add.mutable_example()->add_positions(static_cast<float>(sculpt(i, c)));
  }
  ASSERT_TRUE(client_->CreateExample(add).ok());
  req.set_deformer(v1::DEFORMER_PSD_LBS);
  req.mutable_outputs()->set_vertices(true);
  req.mutable_outputs()->set_normals(true);
  auto posed = client_->Pose(req);
  ASSERT_TRUE(posed.ok()) << posed.status();
  const RowMatrixX3d N = PerVertexNormals(sculpt, tube.mesh.F);
  ASSERT_EQ(posed->normals_size(), 3 * N.rows());
  double worst = 0;
  for (int i = 0; i < N.rows(); ++i)
    worst = std::max(worst, (Eigen::Vector3d(posed->normals(3 * i), posed->normals(3 * i + 1), posed->normals(3 * i + 2)) -
                             N.row(i).transpose()).norm());
  EXPECT_LT(worst, 1e-4);
}

TEST_F(PsdEndToEnd, RigWithoutWeightsIsFailedPrecondition) {
  Rig bare = PsdRig();
  bare.sparse_weights.reset();
  auto reg = client_->CreateRig(RigToProto(bare));
  ASSERT_TRUE(reg.ok());
  v1::PoseRequest req;
  req.set_rig(reg->rig().name());
  *req.mutable_pose() = Bend(bare, 30, Eigen::Vector3d::UnitZ());
  req.set_deformer(v1::DEFORMER_PSD_SUPPORT_LBS);
  auto posed = client_->Pose(req);
  EXPECT_EQ(posed.status().code(), absl::StatusCode::kFailedPrecondition) << posed.status();
  EXPECT_THAT(posed.status().message(), HasSubstr("no skinning weights"));
}

TEST_F(PsdEndToEnd, SupportMethodsNeedABentJointWithAParentAndAChildEnd) {
  // MakeTwoBoneTube's elbow has neither a child joint nor a tail: no support joint qualifies.
  Rig tube = MakeTwoBoneTube();
  auto reg = client_->CreateRig(RigToProto(tube));
  ASSERT_TRUE(reg.ok());
  v1::CreateExampleRequest add;
  add.set_parent(reg->rig().name());
  *add.mutable_example()->mutable_pose() = Bend(tube, 45, Eigen::Vector3d::UnitZ());
  for (int i = 0; i < tube.mesh.V.size(); ++i) add.mutable_example()->add_positions(static_cast<float>(tube.mesh.V.data()[i]));
  ASSERT_TRUE(client_->CreateExample(add).ok());
  v1::PoseRequest req;
  req.set_rig(reg->rig().name());
  *req.mutable_pose() = Bend(tube, 20, Eigen::Vector3d::UnitZ());
  req.set_deformer(v1::DEFORMER_PSD_SUPPORT_DQS);
  auto posed = client_->Pose(req);
  EXPECT_EQ(posed.status().code(), absl::StatusCode::kFailedPrecondition) << posed.status();
  EXPECT_THAT(posed.status().message(), HasSubstr("DEFORMER_PSD_SUPPORT_DQS"));
  // Without support joints the same rig and example pose fine.
  req.set_deformer(v1::DEFORMER_PSD_DQS);
  EXPECT_TRUE(client_->Pose(req).ok());
}

TEST_F(PsdEndToEnd, SkinctlAddsListsAndRemovesExamples) {
  const v1::Example a = Sculpt("", Bend(rig_, 60, Eigen::Vector3d::UnitZ()), 0.05);
  const std::string dir = MakeTempDir("skinctl");
  // The pose as skinctl's JSON (absolute local rotation by joint name), the sculpt as OBJ.
  const auto& q = a.pose().joints(1).rotation();
  std::ofstream json(dir + "/bend.json");
  json.precision(9);  // the float quaternion exactly
  json << "{\"joints\": [{\"name\": \"elbow\", \"rotation\": [" << q[0] << ", " << q[1]
                                    << ", " << q[2] << ", " << q[3] << "]}]}";
  json.close();
  {
    std::ofstream obj(dir + "/bend.obj");
    obj.precision(9);
    for (int i = 0; i < a.positions_size(); i += 3)
      obj << "v " << a.positions(i) << " " << a.positions(i + 1) << " " << a.positions(i + 2) << "\n";
    for (int f = 0; f < rig_.mesh.F.rows(); ++f)
      obj << "f " << rig_.mesh.F(f, 0) + 1 << " " << rig_.mesh.F(f, 1) + 1 << " " << rig_.mesh.F(f, 2) + 1 << "\n";
  }
  auto skinctl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {BinaryPath("client/skinctl"), "--server=" + server_->address()});
    return RunCommand(args);
  };
  auto added = skinctl({"example", "add", "--rig=" + rig_name_, "--pose=" + dir + "/bend.json",
                        "--mesh=" + dir + "/bend.obj", "--name=elbow-60"});
  ASSERT_EQ(added.exit_code, 0) << added.output;
  EXPECT_THAT(added.output, HasSubstr("elbow-60 (1 examples)"));
  auto dup = skinctl({"example", "add", "--rig=" + rig_name_, "--pose=" + dir + "/bend.json",
                      "--mesh=" + dir + "/bend.obj", "--name=again"});
  EXPECT_NE(dup.exit_code, 0);
  EXPECT_THAT(dup.output, HasSubstr("INVALID_ARGUMENT"));
  auto listed = skinctl({"example", "list", "--rig=" + rig_name_});
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  const std::vector<std::string> listed_lines = absl::StrSplit(listed.output, '\n', absl::SkipEmpty());
  EXPECT_THAT(listed_lines, ::testing::Contains(ExampleName("elbow-60")));
  // What skinctl stored is the sculpt: PSD reproduces it at the pose.
  auto posed = PoseVertices(a.pose(), v1::DEFORMER_PSD_LBS);
  ASSERT_TRUE(posed.ok()) << posed.status();
  EXPECT_LE(MaxDistance(posed->vertices(), a.positions()), 1e-6 * diag_);
  // skinctl pose with a PSD method writes the same mesh.
  auto pose_cmd = skinctl({"pose", "--rig=" + rig_name_, "--pose=" + dir + "/bend.json", "--method=psd_lbs",
                           "--format=obj", "--out=" + dir});
  ASSERT_EQ(pose_cmd.exit_code, 0) << pose_cmd.output;
  auto written = ReadObj(dir + "/psd-cylinder-psd_lbs-bend.obj");
  ASSERT_TRUE(written.ok()) << written.status();
  ASSERT_EQ(written->V.size(), a.positions_size());
  double worst = 0;
  for (int i = 0; i < written->V.rows(); ++i)
    for (int c = 0; c < 3; ++c) worst = std::max(worst, std::abs(written->V(i, c) - a.positions(3 * i + c)));
  EXPECT_LE(worst, 1e-5);
  auto removed = skinctl({"example", "remove", "--rig=" + rig_name_, "elbow-60"});
  ASSERT_EQ(removed.exit_code, 0) << removed.output;
  EXPECT_THAT(removed.output, HasSubstr("0 examples left"));
  EXPECT_THAT(Names(), ::testing::IsEmpty());
  auto gone = skinctl({"example", "remove", "--rig=" + rig_name_, "elbow-60"});
  EXPECT_NE(gone.exit_code, 0);
  EXPECT_THAT(gone.output, HasSubstr("NOT_FOUND"));
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

TEST(PsdTenancy, AnotherTenantCannotReadOrChangeTheExamples) {
  const std::string dir = MakeTempDir("tokens");
  std::ofstream(dir + "/tokens.txt") << "token-alpha alpha\ntoken-beta beta\n";
  ServerProcess server(MakeTempDir("store"), {"--auth_tokens=" + dir + "/tokens.txt"});
  auto client = [&](const std::string& token) {
    ClientOptions o;
    o.target = server.address();
    o.token = token;
    return std::make_unique<Client>(o);
  };
  auto alpha = client("token-alpha"), beta = client("token-beta");
  const Rig rig = PsdRig();
  auto reg = alpha->CreateRig(RigToProto(rig));
  ASSERT_TRUE(reg.ok()) << reg.status();
  v1::CreateExampleRequest add;
  add.set_parent(reg->rig().name());
  add.set_example_id("mine");
  *add.mutable_example()->mutable_pose() = Bend(rig, 45, Eigen::Vector3d::UnitZ());
  for (int i = 0; i < rig.mesh.V.size(); ++i) add.mutable_example()->add_positions(static_cast<float>(rig.mesh.V.data()[i]));
  ASSERT_TRUE(alpha->CreateExample(add).ok());
  const std::string mine = reg->rig().name() + "/examples/mine";
  v1::CreateExampleRequest theirs = add;
  theirs.set_example_id("theirs");
  *theirs.mutable_example()->mutable_pose() = Bend(rig, -45, Eigen::Vector3d::UnitZ());
  EXPECT_EQ(beta->CreateExample(theirs).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(beta->ListExamples(reg->rig().name()).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(beta->DeleteExample(mine).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(beta->GetExample(mine).status().code(), absl::StatusCode::kPermissionDenied);
  auto names = alpha->ListExamples(reg->rig().name());
  ASSERT_TRUE(names.ok());
  ASSERT_EQ(names->size(), 1u);
  EXPECT_EQ((*names)[0].name(), mine);

  // A retried CreateExample (same id, pose and positions) is OK and changes nothing.
  auto retried = alpha->CreateExample(add);
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_FALSE(retried->created());
  EXPECT_EQ(retried->example_count(), 1);

  // Beta registers the same rig (same content address): it shares the rig, not the examples.
  auto reg_beta = beta->CreateRig(RigToProto(rig));
  ASSERT_TRUE(reg_beta.ok()) << reg_beta.status();
  ASSERT_EQ(reg_beta->rig().name(), reg->rig().name());
  auto beta_names = beta->ListExamples(reg->rig().name());
  ASSERT_TRUE(beta_names.ok()) << beta_names.status();
  EXPECT_TRUE(beta_names->empty());
  // Beta's own example at alpha's pose, with another shape: every vertex 0.1 further along z.
  v1::CreateExampleRequest beta_add = add;
  beta_add.set_example_id("mine");  // the id alpha uses is free for beta
  for (int i = 2; i < beta_add.example().positions_size(); i += 3)
    beta_add.mutable_example()->set_positions(i, beta_add.example().positions(i) + 0.1f);
  auto beta_added = beta->CreateExample(beta_add);
  ASSERT_TRUE(beta_added.ok()) << beta_added.status();
  EXPECT_TRUE(beta_added->created());
  // At the example pose each tenant's PSD reproduces its own example, not the other's.
  auto pose_for = [&](Client& c) {
    v1::PoseRequest req;
    req.set_rig(reg->rig().name());
    *req.mutable_pose() = add.example().pose();
    req.set_deformer(v1::DEFORMER_PSD_LBS);
    return c.Pose(req);
  };
  const double tol = 1e-5 * BoxDiagonal(rig);
  auto a_frame = pose_for(*alpha), b_frame = pose_for(*beta);
  ASSERT_TRUE(a_frame.ok()) << a_frame.status();
  ASSERT_TRUE(b_frame.ok()) << b_frame.status();
  EXPECT_LT(MaxDistance(a_frame->vertices(), add.example().positions()), tol);
  EXPECT_LT(MaxDistance(b_frame->vertices(), beta_add.example().positions()), tol);
  // Alpha gives the rig up: its examples go, beta's stay (the stored rig stays, beta owns it).
  ASSERT_TRUE(alpha->DeleteRig(reg->rig().name()).ok());
  beta_names = beta->ListExamples(reg->rig().name());
  ASSERT_TRUE(beta_names.ok());
  ASSERT_EQ(beta_names->size(), 1u);
  ASSERT_TRUE(alpha->CreateRig(RigToProto(rig)).ok());
  names = alpha->ListExamples(reg->rig().name());
  ASSERT_TRUE(names.ok());
  EXPECT_TRUE(names->empty()) << "alpha's examples came back after it deleted the rig";
  EXPECT_EQ(server.Stop(SIGTERM), 0);
}

// A 12k-vertex arm: each example with its shape is about 150 kB, so 8 of them do not fit in the
// 1 MiB message limit the server is started with. Before examples came in pages, ListExamples
// with EXAMPLE_VIEW_FULL failed there (RESOURCE_EXHAUSTED from gRPC).
TEST(PsdPaging, ListExamplesPagesStayBelowTheMessageLimitAndTheClientGetsThemAll) {
  ServerProcess server(MakeTempDir("store"), {"--max_message_mb=1"});
  ClientOptions o;
  o.target = server.address();
  Client client(o);
  Rig rig = MakeCylinderRig(101, 120);
  rig.name = "paging-arm";
  auto reg = client.CreateRig(RigToProto(rig));
  ASSERT_TRUE(reg.ok()) << reg.status();
  constexpr int kExamples = 8;
  std::vector<v1::Example> added;
  for (int k = 0; k < kExamples; ++k) {
    v1::CreateExampleRequest req;
    req.set_parent(reg->rig().name());
    req.set_example_id(absl::StrCat("bend-", 10 * (k + 1)));
    v1::Example& e = *req.mutable_example();
    *e.mutable_pose() = Bend(rig, 10 * (k + 1), Eigen::Vector3d::UnitZ());
    for (int i = 0; i < rig.mesh.V.rows(); ++i)
      for (int a = 0; a < 3; ++a) e.add_positions(static_cast<float>(rig.mesh.V(i, a) + 0.001 * k));
    auto r = client.CreateExample(req);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->example().name(), reg->rig().name() + "/examples/" + req.example_id());
    e.set_name(r->example().name());
    added.push_back(e);
  }
  const size_t one = added[0].ByteSizeLong();
  ASSERT_GT(kExamples * one, size_t{1} << 20);  // the whole set does not fit in one message

  // Raw pages (a receiver that would take more than the server may send).
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  auto stub = v1::RigService::NewStub(
      grpc::CreateCustomChannel(server.address(), grpc::InsecureChannelCredentials(), args));
  auto list = [&](v1::ListExamplesRequest req, v1::ListExamplesResponse* resp) {
    grpc::ClientContext ctx;
    req.set_parent(reg->rig().name());
    return stub->ListExamples(&ctx, req, resp);
  };
  v1::ListExamplesRequest req;
  req.set_view(v1::EXAMPLE_VIEW_FULL);
  std::vector<std::string> names;
  int pages = 0;
  for (;;) {
    v1::ListExamplesResponse resp;
    grpc::Status s = list(req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ++pages;
    EXPECT_LE(resp.ByteSizeLong(), size_t{1} << 20);
    EXPECT_GE(resp.examples_size(), 1);
    EXPECT_EQ(resp.total_size(), kExamples);
    EXPECT_EQ(resp.revision(), kExamples);
    for (const v1::Example& e : resp.examples()) names.push_back(e.name());
    if (resp.next_page_token().empty()) break;
    req.set_page_token(resp.next_page_token());
  }
  EXPECT_GE(pages, 2);
  ASSERT_EQ(names.size(), static_cast<size_t>(kExamples));
  for (int k = 0; k < kExamples; ++k) EXPECT_EQ(names[k], added[k].name());

  // page_size: names only, 3 + 3 + 2.
  v1::ListExamplesRequest sized;
  sized.set_page_size(3);
  v1::ListExamplesResponse first;
  ASSERT_TRUE(list(sized, &first).ok());
  EXPECT_EQ(first.examples_size(), 3);
  EXPECT_TRUE(first.examples(0).positions().empty());
  ASSERT_FALSE(first.next_page_token().empty());
  sized.set_page_token(first.next_page_token());
  v1::ListExamplesResponse second;
  ASSERT_TRUE(list(sized, &second).ok());
  EXPECT_EQ(second.examples(0).name(), added[3].name());

  // The set changes between pages: the old token is ABORTED; a made-up one INVALID_ARGUMENT.
  ASSERT_TRUE(client.DeleteExample(added[7].name()).ok());
  v1::ListExamplesResponse stale;
  grpc::Status aborted = list(sized, &stale);
  EXPECT_EQ(aborted.error_code(), grpc::StatusCode::ABORTED);
  EXPECT_THAT(aborted.error_message(), HasSubstr("changed since the first page"));
  v1::ListExamplesRequest bogus;
  bogus.set_page_token("nonsense");
  EXPECT_EQ(list(bogus, &stale).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  bogus.set_page_token(absl::StrCat(kExamples - 1, ":99"));
  EXPECT_EQ(list(bogus, &stale).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  bogus.set_page_token("-1:0");  // no server gives a negative revision
  EXPECT_EQ(list(bogus, &stale).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // A view number this API does not know is refused, as an unknown deformer is.
  v1::ListExamplesRequest unknown_view;
  unknown_view.set_view(static_cast<v1::ExampleView>(7));
  grpc::Status refused = list(unknown_view, &stale);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(refused.error_message(), HasSubstr("view = 7 is not an ExampleView"));

  // The client library pages for the caller: every remaining shape, byte for byte.
  ClientOptions small = o;
  small.max_message_bytes = 1 << 20;
  Client limited(small);
  auto all = limited.ListExamples(reg->rig().name(), v1::EXAMPLE_VIEW_FULL);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), static_cast<size_t>(kExamples - 1));
  for (int k = 0; k < kExamples - 1; ++k)
    EXPECT_EQ((*all)[k].SerializeAsString(), added[k].SerializeAsString()) << k;
  EXPECT_EQ(server.Stop(SIGTERM), 0) << server.Output();
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
