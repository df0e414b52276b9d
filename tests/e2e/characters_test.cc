// Posing real characters from ../shared/data through the real server, checked against
// independent computations.
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include <nlohmann/json.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "core/io/dmat.h"
#include "core/io/gltf.h"
#include "core/io/obj.h"
#include "core/io/tgf.h"
#include "core/rig/bones.h"
#include "core/skinning/dqs.h"
#include "core/skinning/stbs.h"
#include "google/protobuf/util/message_differencer.h"
#include "server/convert/convert.h"
#include "server/convert/gltf_import.h"
#include "tests/support/base64.h"
#include "tests/support/data.h"
#include "tests/support/geometry_metrics.h"
#include "tests/support/gltf_reference.h"
#include "tests/support/morph_gltf.h"
#include "tests/support/multi_skin_gltf.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

namespace ref = ::skinning::testing::gltf_reference;
using ::skinning::testing::DataPath;
using ::skinning::testing::FileBytes;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::ServerProcess;

// The rig a glTF character registers as: its mesh, skeleton, weights and morph targets.
Rig RigOf(const GltfCharacter& c, const std::string& name) {
  Rig rig;
  rig.name = name;
  rig.mesh = c.mesh;
  rig.skeleton = c.skeleton;
  rig.sparse_weights = c.weights;
  rig.morph_targets = c.morph_targets;
  return rig;
}

// One server for the whole suite.
class CharactersTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess(MakeTempDir("store"));
    ClientOptions o;
    o.target = server_->address();
    o.deadline = std::chrono::seconds(60);
    client_ = new Client(o);
  }
  static void TearDownTestSuite() {
    delete client_;
    EXPECT_EQ(server_->Stop(SIGTERM), 0);
    delete server_;
  }
  static ServerProcess* server_;
  static Client* client_;
};
ServerProcess* CharactersTest::server_ = nullptr;
Client* CharactersTest::client_ = nullptr;

class GltfCharacterTest : public CharactersTest, public ::testing::WithParamInterface<const char*> {
 protected:
  void SetUp() override {
    path_ = DataPath(GetParam());
    SKINNING_REQUIRE_DATA(path_);
    auto character = ReadGltf(path_);
    ASSERT_TRUE(character.ok()) << character.status();
    character_ = *std::move(character);
    auto reg = client_->CreateRig(RigToProto(RigOf(character_, GetParam())));
    ASSERT_TRUE(reg.ok()) << reg.status();
    rig_name_ = reg->rig().name();
  }

  // At least five times: the first, middle and last keys and the midpoints after the first and
  // the middle key, plus one time before the animation (clamped).
  std::vector<double> TestTimes() {
    auto keys = ref::AnimationKeyTimes(path_, 0);
    EXPECT_TRUE(keys.ok()) << keys.status();
    std::vector<double> times;
    if (!keys.ok() || keys->keys.empty()) return times;
    const auto& k = keys->keys;
    const size_t m = k.size() / 2;
    times = {k.front(), k[m], k.back(), keys->start - 0.25};
    if (k.size() > 1) {
      times.push_back(0.5 * (k[0] + k[1]));
      times.push_back(0.37 * k[m - (m > 0)] + 0.63 * k[m]);
      times.push_back(0.5 * (k[k.size() - 2] + k.back()));
    }
    return times;
  }

  std::string path_;
  GltfCharacter character_;
  std::string rig_name_;
};

// LBS against the spec's skinning (the independent reference), and DQS against the double-precision
// per-vertex DQS of core (dqs.h, in the file's vertex and slot order) with the weights of the file
// and the transforms the server reports; the reference's own DQS takes rigid joint matrices only,
// which RiggedFigure's and CesiumMan's are not. The server poses DQS through a vertex order grouped
// by joint set where that pays (PrepareDqsLaneOrder: RiggedSimple, RiggedFigure and CesiumMan), so
// this also checks that the order maps every vertex back to its place.
TEST_P(GltfCharacterTest, LbsAndDqsMatchTheirReferences) {
  ASSERT_FALSE(character_.animations.empty());
  const std::vector<double> times = TestTimes();
  ASSERT_GE(times.size(), 5u);
  const int joints = character_.skeleton.size();
  for (const v1::Deformer deformer : {v1::DEFORMER_UNSPECIFIED, v1::DEFORMER_DQS}) {
    const bool dqs = deformer == v1::DEFORMER_DQS;
    const char* method = dqs ? "DQS" : "LBS";
    v1::PoseClipRequest req;
    req.set_rig(rig_name_);
    req.set_deformer(deformer);
    req.mutable_outputs()->set_vertices(true);
    req.mutable_outputs()->set_transforms(dqs);
    for (double t : times)
      *req.add_poses() = PoseToProto(Pose{SampleAnimation(character_.skeleton, character_.animations[0], t)});
    auto clip = client_->PoseClip(req);
    ASSERT_TRUE(clip.ok()) << clip.status();
    ASSERT_EQ(clip->frames_size(), static_cast<int>(times.size()));
    double max_moved = 0;  // largest displacement over all frames, relative to the diagonal
    for (size_t f = 0; f < times.size(); ++f) {
      auto spec = ref::SkinAtTime(path_, 0, times[f]);
      ASSERT_TRUE(spec.ok()) << spec.status();
      const auto& posed = clip->frames(static_cast<int>(f));
      std::vector<Eigen::Vector3d> expected = spec->posed;
      if (dqs) {
        ASSERT_EQ(posed.transforms_size(), 12 * joints);
        std::vector<Eigen::Affine3d> T(joints, Eigen::Affine3d::Identity());
        for (int j = 0; j < joints; ++j)
          for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 4; ++c) T[j].matrix()(r, c) = posed.transforms(12 * j + 4 * r + c);
        RowMatrixX3d U;
        Dqs(character_.mesh.V, character_.weights, T, &U);
        for (size_t i = 0; i < expected.size(); ++i) expected[i] = U.row(static_cast<int>(i)).transpose();
      }
      ASSERT_EQ(posed.vertices_size(), 3 * static_cast<int>(expected.size()));
      Eigen::Vector3d lo = spec->rest[0], hi = spec->rest[0];
      for (const auto& p : spec->rest) {
        lo = lo.cwiseMin(p);
        hi = hi.cwiseMax(p);
      }
      const double diag = (hi - lo).norm();
      double worst = 0, moved = 0;
      for (size_t i = 0; i < expected.size(); ++i) {
        const Eigen::Vector3d got(posed.vertices(3 * i), posed.vertices(3 * i + 1), posed.vertices(3 * i + 2));
        worst = std::max(worst, (got - expected[i]).norm());
        moved = std::max(moved, (expected[i] - spec->rest[i]).norm());
      }
      EXPECT_LE(worst, 1e-5 * diag) << method << ", " << GetParam() << " at t = " << times[f] << ": worst error "
                                    << worst << " (bounding-box diagonal " << diag << ")";
      RecordProperty(std::string(method) + "_max_error_over_diag_t" + std::to_string(f), std::to_string(worst / diag));
      max_moved = std::max(max_moved, moved / diag);
    }
    EXPECT_GT(max_moved, 1e-3) << method << ": the animation should move the mesh at some tested time";
  }
}

// STBS over LBS and DQS through the server (an endpoint bake by projection, with the file's own
// weights) against core's double references (stbs.h: dense weights, the file's vertex order) at
// animation times with every bone stretched and twisted. The server skins through the bake's
// vertex order where it pays (RiggedSimple, RiggedFigure, CesiumMan), so this also checks that the
// order takes every vertex and its endpoint weights and puts the result back in its place.
TEST_P(GltfCharacterTest, StbsMatchesTheCoreReferencesWithTheFilesWeights) {
  v1::BakeOptions options;
  options.mutable_endpoint()->set_method(v1::ENDPOINT_METHOD_PROJECTION);
  auto started = client_->StartBake(rig_name_, options);
  ASSERT_TRUE(started.ok()) << started.status();
  auto done = client_->WatchBake(started->bake().name(), [](const v1::Bake&) { return true; });
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ(done->metadata().state(), v1::BAKE_STATE_SUCCEEDED) << done->error().message();
  auto w = client_->GetWeights(started->bake().name(), v1::WEIGHTS_FORMAT_DENSE);
  ASSERT_TRUE(w.ok()) << w.status();
  const int nv = static_cast<int>(character_.mesh.V.rows()), joints = character_.skeleton.size();
  ASSERT_EQ(w->weights().dense().values_size(), nv * joints);
  ASSERT_EQ(w->endpoint().values_size(), nv * joints);
  Eigen::MatrixXd W(nv, joints), E(nv, joints);
  for (int i = 0; i < nv; ++i)
    for (int j = 0; j < joints; ++j) {
      W(i, j) = w->weights().dense().values(i * joints + j);
      E(i, j) = w->endpoint().values(i * joints + j);
    }
  const std::vector<StbsBone> bones = StbsBones(*JointHandles(character_.skeleton));
  const std::vector<int> order = *TopologicalOrder(character_.skeleton);
  const double diag = (character_.mesh.V.colwise().maxCoeff() - character_.mesh.V.colwise().minCoeff()).norm();
  const std::vector<double> times = TestTimes();
  ASSERT_GE(times.size(), 3u);
  for (size_t f = 0; f < 3; ++f) {
    const Pose pose{SampleAnimation(character_.skeleton, character_.animations[0], times[f])};
    v1::PoseRequest req;
    req.set_rig(rig_name_);
    req.set_bake(started->bake().name());
    *req.mutable_pose() = PoseToProto(pose);
    req.mutable_outputs()->set_vertices(true);
    BoneStretchTwist st;  // every bone stretched and twisted, differently
    for (int j = 0; j < joints; ++j) {
      const bool bone = bones[j].valid;
      st.stretch.push_back(bone ? 1.0 + 0.2 * std::sin(j + 1.0 + f) : 1.0);
      st.twist_a.push_back(bone ? 0.3 * std::cos(j + f) : 0.0);
      st.twist_b.push_back(bone ? 0.8 * std::sin(2.0 * j + 1.0) : 0.0);
      req.mutable_pose()->add_bone_stretch(static_cast<float>(st.stretch[j]));
      req.mutable_pose()->add_bone_twist(static_cast<float>(st.twist_a[j]));
      req.mutable_pose()->add_bone_twist(static_cast<float>(st.twist_b[j]));
      st.stretch[j] = static_cast<float>(st.stretch[j]);  // as the server reads them
      st.twist_a[j] = static_cast<float>(st.twist_a[j]);
      st.twist_b[j] = static_cast<float>(st.twist_b[j]);
    }
    const std::vector<Eigen::Affine3d> T = *StretchedSkinningTransforms(character_.skeleton, order, pose, bones, st);
    for (const v1::Deformer deformer : {v1::DEFORMER_STBS_LBS, v1::DEFORMER_STBS_DQS}) {
      req.set_deformer(deformer);
      auto frame = client_->Pose(req);
      ASSERT_TRUE(frame.ok()) << frame.status();
      ASSERT_EQ(frame->vertices_size(), 3 * nv);
      RowMatrixX3d expected;
      if (deformer == v1::DEFORMER_STBS_LBS)
        StbsLbs(character_.mesh.V, W, E, bones, T, st, &expected);
      else
        StbsDqs(character_.mesh.V, W, E, bones, T, st, &expected);
      double worst = 0, moved = 0;
      for (int i = 0; i < nv; ++i) {
        const Eigen::Vector3d got(frame->vertices(3 * i), frame->vertices(3 * i + 1), frame->vertices(3 * i + 2));
        worst = std::max(worst, (got - expected.row(i).transpose()).norm());
        moved = std::max(moved, (expected.row(i) - character_.mesh.V.row(i)).norm());
      }
      EXPECT_LE(worst, 1e-5 * diag) << v1::Deformer_Name(deformer) << ", " << GetParam() << " at t = " << times[f];
      EXPECT_GT(moved, 1e-3 * diag) << v1::Deformer_Name(deformer) << ": the frame moves the mesh";
    }
  }
}

// A .gltf with every external buffer embedded as a data: URI (an exporter's "embedded" option).
std::string EmbedBuffers(const std::string& path) {
  nlohmann::json doc = nlohmann::json::parse(FileBytes(path));
  const std::string dir = path.substr(0, path.rfind('/') + 1);
  for (auto& buffer : doc["buffers"])
    if (buffer.contains("uri") && buffer["uri"].get<std::string>().rfind("data:", 0) != 0)
      buffer["uri"] = "data:application/octet-stream;base64," +
                      ::skinning::testing::Base64(FileBytes(dir + buffer["uri"].get<std::string>()));
  return doc.dump();
}

// Thin clients send the file; the server reads it with the same reader as skinctl, so the rig
// (content address) is the one skinctl registers, and the animations come back as the poses
// skinctl would sample.
TEST_P(GltfCharacterTest, RegistersFromTheFileBytesAsSkinctlDoes) {
  const bool binary = path_.size() > 4 && path_.substr(path_.size() - 4) == ".glb";
  const std::string bytes = binary ? FileBytes(path_) : EmbedBuffers(path_);
  auto from_bytes = client_->CreateRigFromGltf(bytes, "from bytes");
  ASSERT_TRUE(from_bytes.ok()) << from_bytes.status();
  GltfImport local = ImportGltf(character_);
  auto from_client = client_->CreateRig(RigToProto(local.rig));
  ASSERT_TRUE(from_client.ok()) << from_client.status();
  EXPECT_EQ(from_bytes->rig().name(), from_client->rig().name());
  EXPECT_FALSE(from_client->created()) << "the same rig, stored by the first call";

  ASSERT_EQ(from_bytes->animations_size(), static_cast<int>(character_.animations.size()));
  for (int a = 0; a < from_bytes->animations_size(); ++a) {
    const v1::AnimationClip& clip = from_bytes->animations(a);
    const Animation& anim = character_.animations[a];
    EXPECT_EQ(clip.frames_per_second(), 30.0f);
    EXPECT_EQ(clip.start(), static_cast<float>(anim.start));
    ASSERT_EQ(clip.poses_size(), static_cast<int>(std::floor((anim.end - anim.start) * 30 + 1e-9)) + 1);
    for (int f : {0, clip.poses_size() / 2, clip.poses_size() - 1}) {
      const v1::Pose want = PoseToProto(Pose{SampleAnimation(character_.skeleton, anim, anim.start + f / 30.0)});
      EXPECT_EQ(clip.poses(f).SerializeAsString(), want.SerializeAsString()) << "animation " << a << " frame " << f;
    }
  }
  if (!binary) {
    auto external = client_->CreateRigFromGltf(FileBytes(path_));
    ASSERT_EQ(external.status().code(), absl::StatusCode::kInvalidArgument) << external.status();
    EXPECT_THAT(std::string(external.status().message()), ::testing::HasSubstr("refers to the external file"));
  }
}

// What differs from `a` in `b`, one line per field ("" when nothing does).
std::string Differences(const google::protobuf::Message& a, const google::protobuf::Message& b) {
  google::protobuf::util::MessageDifferencer differ;
  std::string out;
  differ.ReportDifferencesToString(&out);
  differ.Compare(a, b);
  return out;
}

// Content addresses survive a round trip: the stored rig exported as `skinctl get --out_file`
// writes it (ExportRigGltf) registers under the same name, and so does the export of that. Before,
// CesiumMan, RiggedSimple and RiggedFigure came back as other rigs each time: renormalizing
// weights that already summed to 1 moved them by float ulps, and the inverse bind matrices of
// joints outside the skin were computed from the file's rest transforms rather than the stored
// ones.
TEST_P(GltfCharacterTest, AnExportedRigRegistersAsTheSameRig) {
  const bool binary = path_.size() > 4 && path_.substr(path_.size() - 4) == ".glb";
  auto original = client_->CreateRigFromGltf(binary ? FileBytes(path_) : EmbedBuffers(path_));
  ASSERT_TRUE(original.ok()) << original.status();
  const std::string name = original->rig().name();
  const std::string dir = MakeTempDir("export");
  for (int round = 1; round <= 2; ++round) {
    auto full = client_->GetRig(name, v1::RIG_VIEW_FULL);
    ASSERT_TRUE(full.ok()) << full.status();
    const std::string file = absl::StrCat(dir, "/round", round, ".glb");
    ASSERT_TRUE(ExportRigGltf(*full, file).ok());
    auto again = client_->CreateRigFromGltf(FileBytes(file));
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->rig().name(), name) << "round " << round;
    EXPECT_FALSE(again->created()) << "round " << round;
    auto back = client_->GetRig(again->rig().name(), v1::RIG_VIEW_FULL);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(Differences(full->weights(), back->weights()), "") << "round " << round;
    EXPECT_EQ(Differences(full->skeleton(), back->skeleton()), "") << "round " << round;
  }
}

TEST_F(CharactersTest, CreateRigRefusesBadGltfBytesClearly) {
  auto garbage = client_->CreateRigFromGltf("{\"asset\": {\"version\": \"2.0\"}, \"meshes\": 7}");
  ASSERT_EQ(garbage.status().code(), absl::StatusCode::kInvalidArgument) << garbage.status();
  EXPECT_THAT(std::string(garbage.status().message()), ::testing::HasSubstr("gltf: "));
  auto truncated = client_->CreateRigFromGltf(std::string("glTF\x02\0\0\0\xff\0\0\0", 12));
  ASSERT_EQ(truncated.status().code(), absl::StatusCode::kInvalidArgument) << truncated.status();
  EXPECT_THAT(std::string(truncated.status().message()), ::testing::HasSubstr("glb"));
  auto empty = client_->CreateRigFromGltf("");
  ASSERT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument) << empty.status();
  EXPECT_THAT(std::string(empty.status().message()), ::testing::HasSubstr("gltf: the file is empty"));
}

TEST_P(GltfCharacterTest, BindPoseReproducesTheInputExactly) {
  v1::PoseRequest req;
  req.set_rig(rig_name_);
  for (v1::Deformer method : {v1::DEFORMER_UNSPECIFIED, v1::DEFORMER_DQS}) {
    req.set_deformer(method);
    auto posed = client_->Pose(req);
    ASSERT_TRUE(posed.ok()) << posed.status();
    auto raw = ref::SkinAtTime(path_, 0, 0.0);
    ASSERT_TRUE(raw.ok());
    ASSERT_EQ(posed->vertices_size(), 3 * static_cast<int>(raw->rest.size()));
    for (size_t i = 0; i < raw->rest.size(); ++i)
      for (int a = 0; a < 3; ++a)
        ASSERT_EQ(posed->vertices(3 * i + a), static_cast<float>(raw->rest[i](a))) << "vertex " << i << " method " << method;
  }
}

TEST_P(GltfCharacterTest, SingleInfluenceVerticesMoveRigidlyWithTheirJointAndLbsEqualsDqsThere) {
  ASSERT_FALSE(character_.animations.empty());
  const std::vector<double> times = TestTimes();
  const Pose pose{SampleAnimation(character_.skeleton, character_.animations[0], times[1])};
  v1::PoseRequest req;
  req.set_rig(rig_name_);
  *req.mutable_pose() = PoseToProto(pose);
  req.mutable_outputs()->set_vertices(true);
  req.mutable_outputs()->set_transforms(true);
  req.set_deformer(v1::DEFORMER_UNSPECIFIED);
  auto lbs = client_->Pose(req);
  ASSERT_TRUE(lbs.ok()) << lbs.status();
  req.set_deformer(v1::DEFORMER_DQS);
  auto dqs = client_->Pose(req);
  ASSERT_TRUE(dqs.ok()) << dqs.status();
  const double diag = BoundingBoxDiagonal(character_.mesh.V);
  int single = 0;
  for (int i = 0; i < character_.weights.rows(); ++i) {
    int c = 0;
    for (; c < character_.weights.k(); ++c)
      if (character_.weights.weights(i, c) >= 1.0f - 1e-6f) break;
    if (c == character_.weights.k()) continue;
    ++single;
    const int j = character_.weights.joints(i, c);
    Eigen::Matrix<double, 3, 4> T;
    for (int r = 0; r < 3; ++r)
      for (int k = 0; k < 4; ++k) T(r, k) = lbs->transforms(12 * j + 4 * r + k);
    const Eigen::Vector3d rigid = T * character_.mesh.V.row(i).transpose().homogeneous();
    const Eigen::Vector3d l(lbs->vertices(3 * i), lbs->vertices(3 * i + 1), lbs->vertices(3 * i + 2));
    const Eigen::Vector3d d(dqs->vertices(3 * i), dqs->vertices(3 * i + 1), dqs->vertices(3 * i + 2));
    ASSERT_LE((l - rigid).norm(), 1e-5 * diag) << "vertex " << i;
    ASSERT_LE((d - l).norm(), 1e-5 * diag) << "vertex " << i;
  }
  EXPECT_GT(single, 0) << GetParam() << " has no single-influence vertex";
}

INSTANTIATE_TEST_SUITE_P(SharedData, GltfCharacterTest,
                         ::testing::Values("gltf/SimpleSkin/SimpleSkin.gltf", "gltf/RiggedSimple/RiggedSimple.gltf",
                                           "gltf/RiggedSimple/RiggedSimple.glb", "gltf/RiggedFigure/RiggedFigure.gltf",
                                           "gltf/RiggedFigure/RiggedFigure.glb", "gltf/CesiumMan/CesiumMan.glb"),
                         [](const auto& info) {
                           std::string name = info.param;
                           name = name.substr(name.rfind('/') + 1);
                           std::replace(name.begin(), name.end(), '.', '_');
                           return name;
                         });

// Morph targets on a real character (CesiumMan, two targets added by the test): registered with
// the rig and posed through the server, morph then skin follows the independent glTF reference
// with the targets' default weights (no morph_weights given) and with explicit ones, at keys and
// between them.
TEST_F(CharactersTest, MorphTargetsThenSkinningFollowTheSpec) {
  const std::string in = DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(in);
  const std::string path = MakeTempDir("morph") + "/CesiumManMorph.glb";
  ASSERT_TRUE(testing::WriteWithMorphTargets(in, path).ok());
  absl::StatusOr<GltfCharacter> character = ReadGltf(path);
  ASSERT_TRUE(character.ok()) << character.status();
  ASSERT_EQ(character->morph_targets.size(), 2u);
  auto reg = client_->CreateRig(RigToProto(RigOf(*character, "CesiumManMorph")));
  ASSERT_TRUE(reg.ok()) << reg.status();

  auto keys = ref::AnimationKeyTimes(path, 0);
  ASSERT_TRUE(keys.ok()) << keys.status();
  const std::vector<double> times = {keys->keys[0], 0.5 * (keys->keys[3] + keys->keys[4]),
                                     keys->keys[keys->keys.size() / 2]};
  auto bind = ref::SkinAtTime(path, -1, 0.0);
  ASSERT_TRUE(bind.ok()) << bind.status();
  Eigen::Vector3d lo = bind->bind[0], hi = bind->bind[0];
  for (const auto& p : bind->bind) lo = lo.cwiseMin(p), hi = hi.cwiseMax(p);
  const double diag = (hi - lo).norm();
  // Three ways to weigh the targets, each against the reference: the animation's weights
  // channel (sampled by core into Pose.morph_weights; the reference samples it itself), none
  // given (the server uses the defaults), and explicit weights.
  const std::vector<double> defaults = {0.5, 0.0}, explicit_weights = {0.2, 0.8}, zero = {0.0, 0.0};
  ASSERT_EQ(character->animations[0].morph_channels.size(), 1u);
  enum class Weights { kAnimated, kDefaults, kExplicit };
  for (Weights how : {Weights::kAnimated, Weights::kDefaults, Weights::kExplicit}) {
    // LBS only: CesiumMan's joint matrices carry scale, which the reference's DQS refuses (the
    // multi-skin test checks DQS; the morph is applied before either the same way).
    v1::PoseClipRequest req;
    req.set_rig(reg->rig().name());
    req.mutable_outputs()->set_vertices(true);
    for (double t : times) {
      v1::Pose* p = req.add_poses();
      *p = PoseToProto(Pose{SampleAnimation(character->skeleton, character->animations[0], t)});
      std::vector<double> w;
      if (how == Weights::kAnimated) w = SampleMorphWeights(character->animations[0], t, defaults);
      if (how == Weights::kExplicit) w = explicit_weights;
      for (double x : w) p->add_morph_weights(static_cast<float>(x));
    }
    auto clip = client_->PoseClip(req);
    ASSERT_TRUE(clip.ok()) << clip.status();
    for (size_t f = 0; f < times.size(); ++f) {
      const std::vector<double>* reference_weights =
          how == Weights::kAnimated ? nullptr
                                    : (how == Weights::kDefaults ? &defaults : &explicit_weights);
      auto expected = ref::SkinAtTime(path, 0, times[f], ref::Blend::kLinear, reference_weights);
      auto unmorphed = ref::SkinAtTime(path, 0, times[f], ref::Blend::kLinear, &zero);
      ASSERT_TRUE(expected.ok()) << expected.status();
      ASSERT_TRUE(unmorphed.ok()) << unmorphed.status();
      const auto& posed = clip->frames(static_cast<int>(f));
      ASSERT_EQ(posed.vertices_size(), 3 * static_cast<int>(expected->posed.size()));
      double worst = 0, morph = 0;
      for (size_t i = 0; i < expected->posed.size(); ++i) {
        const Eigen::Vector3d got(posed.vertices(3 * i), posed.vertices(3 * i + 1),
                                  posed.vertices(3 * i + 2));
        worst = std::max(worst, (got - expected->posed[i]).norm());
        morph = std::max(morph, (expected->posed[i] - unmorphed->posed[i]).norm());
      }
      EXPECT_LE(worst, 1e-5 * diag) << "weights " << static_cast<int>(how) << " at t = " << times[f]
                                    << ": worst " << worst;
      EXPECT_GT(morph, 0.005 * diag) << "the morph should show";
    }
  }

  // By name, over the defaults: lean at 1, bulge at its default 0.5.
  {
    v1::PoseClipRequest named;
    named.set_rig(reg->rig().name());
    named.mutable_outputs()->set_vertices(true);
    v1::Pose* p = named.add_poses();
    *p = PoseToProto(Pose{SampleAnimation(character->skeleton, character->animations[0], times[1])});
    (*p->mutable_named_morph_weights())["lean"] = 1.f;
    auto clip = client_->PoseClip(named);
    ASSERT_TRUE(clip.ok()) << clip.status();
    const std::vector<double> lean = {0.5, 1.0};
    auto expected = ref::SkinAtTime(path, 0, times[1], ref::Blend::kLinear, &lean);
    ASSERT_TRUE(expected.ok()) << expected.status();
    double worst = 0;
    for (size_t i = 0; i < expected->posed.size(); ++i) {
      const Eigen::Vector3d got(clip->frames(0).vertices(3 * i), clip->frames(0).vertices(3 * i + 1),
                                clip->frames(0).vertices(3 * i + 2));
      worst = std::max(worst, (got - expected->posed[i]).norm());
    }
    EXPECT_LE(worst, 1e-5 * diag);
    (*named.mutable_poses(0)->mutable_named_morph_weights())["leen"] = 1.f;
    auto typo = client_->PoseClip(named);
    ASSERT_FALSE(typo.ok());
    EXPECT_THAT(std::string(typo.status().message()),
                ::testing::HasSubstr("no morph target named 'leen'"));
  }

  // One weight per target, or none.
  v1::PoseClipRequest bad;
  bad.set_rig(reg->rig().name());
  bad.mutable_outputs()->set_vertices(true);
  bad.add_poses()->add_morph_weights(1.f);
  auto refused = client_->PoseClip(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()),
              ::testing::HasSubstr("morph_weights has 1 values; the rig has 2 morph targets"));
}

// A file of the shape Unity writes: one mesh instanced by three nodes, each with its own skin
// over a different joint chain of one tree (skins sharing the root, binding the mesh at three
// places), plus a helmet mesh without a skin below one joint (a prop), and again with the helmet
// below a node that the animation turns. Registered as one rig and posed through the server, every
// node's vertices follow the independent glTF-spec reference at the keys and between them, with
// LBS and with DQS (the prop rigidly, as the spec draws it).
TEST_F(CharactersTest, MultiSkinFilePosesEveryNodeLikeTheSpecWithLbsAndDqs) {
  for (const bool animated_prop : {false, true}) {
    SCOPED_TRACE(animated_prop ? "the helmet below a mount the animation turns" : "the helmet below the joint");
    testing::MultiSkinGltf spec;
    spec.prop = true;  // and a helmet without a skin below chain 0's last joint
    spec.animated_prop = animated_prop;
    const std::string path = testing::WriteMultiSkinGltf(spec, MakeTempDir("multi") + "/multi.gltf");
    absl::StatusOr<GltfCharacter> character = ReadGltf(path);
    ASSERT_TRUE(character.ok()) << character.status();
    ASSERT_EQ(character->parts.size(), 4u);
    auto reg = client_->CreateRig(RigToProto(RigOf(*character, "multi-skin")));
    ASSERT_TRUE(reg.ok()) << reg.status();

    auto bind = ref::SkinAtTime(path, -1, 0.0);
    ASSERT_TRUE(bind.ok()) << bind.status();
    Eigen::Vector3d lo = bind->bind[0], hi = bind->bind[0];
    for (const auto& p : bind->bind) lo = lo.cwiseMin(p), hi = hi.cwiseMax(p);
    const double diag = (hi - lo).norm();
    ASSERT_EQ(bind->nodes.size(), 4u);
    // Keys 0, 0.5, 1.5 s; between keys; before and after the animation (clamped).
    const std::vector<double> times = {0.0, 0.5, 1.5, 0.2, 0.9, 1.3, -0.4, 2.0};
    for (const auto& [deformer, blend] :
         {std::pair{v1::DEFORMER_UNSPECIFIED, ref::Blend::kLinear},
          std::pair{v1::DEFORMER_DQS, ref::Blend::kDualQuaternion}}) {
      v1::PoseClipRequest req;
      req.set_rig(reg->rig().name());
      req.set_deformer(deformer);
      req.mutable_outputs()->set_vertices(true);
      for (double t : times) {
        *req.add_poses() =
            PoseToProto(Pose{SampleAnimation(character->skeleton, character->animations[0], t)});
      }
      auto clip = client_->PoseClip(req);
      ASSERT_TRUE(clip.ok()) << clip.status();
      ASSERT_EQ(clip->frames_size(), static_cast<int>(times.size()));
      double moved = 0;
      for (size_t f = 0; f < times.size(); ++f) {
        auto expected = ref::SkinAtTime(path, 0, times[f], blend);
        ASSERT_TRUE(expected.ok()) << expected.status();
        const auto& posed = clip->frames(static_cast<int>(f));
        ASSERT_EQ(posed.vertices_size(), 3 * static_cast<int>(expected->posed.size()));
        for (size_t node = 0; node < expected->nodes.size(); ++node) {
          const int first = expected->first_vertex[node];
          const int end = node + 1 < expected->nodes.size() ? expected->first_vertex[node + 1]
                                                            : static_cast<int>(expected->posed.size());
          EXPECT_EQ(character->parts[node].first_vertex, first);
          double worst = 0;
          for (int i = first; i < end; ++i) {
            const Eigen::Vector3d got(posed.vertices(3 * i), posed.vertices(3 * i + 1),
                                      posed.vertices(3 * i + 2));
            worst = std::max(worst, (got - expected->posed[i]).norm());
            moved = std::max(moved, (expected->posed[i] - bind->bind[i]).norm());
          }
          EXPECT_LE(worst, 1e-5 * diag)
              << (blend == ref::Blend::kLinear ? "LBS" : "DQS") << ", node "
              << expected->nodes[node] << " at t = " << times[f] << ": worst " << worst
              << " (diagonal " << diag << ")";
        }
      }
      EXPECT_GT(moved, 0.05 * diag) << "the animation should bend every chain";
    }
  }
}

// The libigl arm twisted 180° about bone 2's axis: LBS collapses the cross-section at the joint
// (candy wrapper), DQS keeps it.
// Scenery exported with the character (a mesh without a skin at the scene's root): CreateRig from
// the file's bytes refuses it by name, or with skip_static_meshes leaves it out and names it, and
// the rig is then the one of the same file without the scenery (the same content address).
TEST_F(CharactersTest, StaticMeshesAreRefusedByNameOrLeftOutWhenAsked) {
  testing::MultiSkinGltf spec;
  spec.prop = true;  // a helmet below a joint: a prop, read either way
  const std::string dir = MakeTempDir("scenery");
  const std::string plain = testing::WriteMultiSkinGltf(spec, dir + "/plain.gltf");
  spec.scenery = true;
  const std::string scenery = testing::WriteMultiSkinGltf(spec, dir + "/scenery.gltf");
  auto refused = client_->CreateRigFromGltf(FileBytes(scenery));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()),
              ::testing::AllOf(::testing::HasSubstr("(\"ground\") has a triangle mesh, no skin"),
                               ::testing::HasSubstr("skip_static_meshes leaves them out")));
  auto skipped = client_->CreateRigFromGltf(FileBytes(scenery), "", /*skip_static_meshes=*/true);
  ASSERT_TRUE(skipped.ok()) << skipped.status();
  ASSERT_EQ(skipped->skipped_static_meshes_size(), 1);
  EXPECT_THAT(skipped->skipped_static_meshes(0), ::testing::MatchesRegex(R"(nodes\[[0-9]+\] \("ground"\))"));
  auto expected = client_->CreateRigFromGltf(FileBytes(plain));
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_EQ(expected->skipped_static_meshes_size(), 0);
  EXPECT_EQ(skipped->rig().name(), expected->rig().name()) << "the rig is the file's without the scenery";
  EXPECT_FALSE(expected->created()) << "the same rig: stored by the call that left the scenery out";
  EXPECT_EQ(skipped->animations_size(), expected->animations_size());
}

// Of a file with several scenes the server reads the default one, or the one asked for, and says
// which: the ground of a second scene is neither refused nor read.
TEST_F(CharactersTest, OfSeveralScenesTheDefaultOrTheOneAskedForIsRead) {
  testing::MultiSkinGltf spec;
  spec.prop = true;
  const std::string dir = MakeTempDir("scenes");
  const std::string plain = testing::WriteMultiSkinGltf(spec, dir + "/plain.gltf");
  spec.scenery = spec.scenery_scene = true;
  const std::string scenes = testing::WriteMultiSkinGltf(spec, dir + "/scenes.gltf");
  auto expected = client_->CreateRigFromGltf(FileBytes(plain));
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_EQ(expected->scene(), "") << "one scene: nothing to say";
  auto read = client_->CreateRigFromGltf(FileBytes(scenes));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->scene(), "scenes[0] (\"Character\") of 2");
  EXPECT_EQ(read->skipped_static_meshes_size(), 0);
  EXPECT_EQ(read->rig().name(), expected->rig().name()) << "the rig is the first scene's";
  EXPECT_EQ(read->animations_size(), expected->animations_size());

  auto props = client_->CreateRigFromGltf(FileBytes(scenes), "", false, /*scene=*/1);
  EXPECT_EQ(props.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(props.status().message()),
              ::testing::HasSubstr("scenes[1] (\"Props\"), the one asked for, has no skinned mesh; scenes[0] "
                                   "(\"Character\") has one"));
  auto missing = client_->CreateRigFromGltf(FileBytes(scenes), "", false, /*scene=*/2);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(missing.status().message()),
              ::testing::HasSubstr("gltf: scene 2 was asked for; the file has 2 scenes"));

  spec.default_scene = 1;
  const std::string props_default = testing::WriteMultiSkinGltf(spec, dir + "/props_default.gltf");
  auto refused = client_->CreateRigFromGltf(FileBytes(props_default));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()),
              ::testing::HasSubstr("scenes[1] (\"Props\"), the file's default scene, has no skinned mesh"));
  auto asked = client_->CreateRigFromGltf(FileBytes(props_default), "", false, /*scene=*/0);
  ASSERT_TRUE(asked.ok()) << asked.status();
  EXPECT_EQ(asked->scene(), "scenes[0] (\"Character\") of 2");
  EXPECT_EQ(asked->rig().name(), expected->rig().name());
}

TEST_F(CharactersTest, ArmTwistedAtBoneTwoCollapsesWithLbsButNotDqs) {
  const std::string obj = DataPath("libigl/arm/arm.obj"), tgf = DataPath("libigl/arm/arm.tgf"),
                    dmat = DataPath("libigl/arm/arm-weights.dmat");
  SKINNING_REQUIRE_DATA(obj);
  SKINNING_REQUIRE_DATA(tgf);
  SKINNING_REQUIRE_DATA(dmat);
  auto mesh = ReadObj(obj);
  auto graph = ReadTgf(tgf);
  auto W = ReadDmat(dmat);
  ASSERT_TRUE(mesh.ok() && graph.ok() && W.ok());
  auto skeleton = SkeletonFromBones(*graph);
  ASSERT_TRUE(skeleton.ok()) << skeleton.status();
  Rig rig;
  rig.name = "arm";
  rig.mesh = *mesh;
  rig.skeleton = *skeleton;
  rig.dense_weights = *W;
  auto reg = client_->CreateRig(RigToProto(rig));
  ASSERT_TRUE(reg.ok()) << reg.status();

  // Bone 2 runs from C[E(2,0)] to C[E(2,1)]; twist it by π about its own axis (joint frames are
  // world-aligned, so the local rotation is the world-axis rotation).
  const Eigen::Vector3d a = graph->C.row(graph->E(2, 0)), b = graph->C.row(graph->E(2, 1));
  const Eigen::Vector3d axis = (b - a).normalized();
  Pose pose = RestPose(rig.skeleton);
  pose.local[2].rotation = Eigen::Quaterniond(Eigen::AngleAxisd(M_PI, axis));

  // The cross-section where bones 1 and 2 share the weight equally: the centroid of the vertices
  // with |w1 - w2| < 0.1, on bone 2's axis.
  Eigen::Vector3d centre = Eigen::Vector3d::Zero();
  int count = 0;
  for (int i = 0; i < W->rows(); ++i)
    if (std::abs((*W)(i, 1) - (*W)(i, 2)) < 0.1 && (*W)(i, 1) + (*W)(i, 2) > 0.9) {
      centre += rig.mesh.V.row(i).transpose();
      ++count;
    }
  ASSERT_GT(count, 10);
  centre /= count;
  const double slab = 0.01 * (b - a).norm();

  // Vertices within the slab at rest, followed to their posed positions.
  std::vector<int> section;
  std::vector<Eigen::Vector3d> rest;
  for (int i = 0; i < rig.mesh.V.rows(); ++i)
    if (std::abs((rig.mesh.V.row(i).transpose() - centre).dot(axis)) <= slab) {
      section.push_back(i);
      rest.push_back(rig.mesh.V.row(i));
    }
  ASSERT_GT(section.size(), 8u);
  const double rest_area = testing::SlabCrossSectionArea(rest, centre, axis, 10 * slab);
  double area[2];
  for (int m = 0; m < 2; ++m) {
    v1::PoseRequest req;
    req.set_rig(reg->rig().name());
    *req.mutable_pose() = PoseToProto(pose);
    req.set_deformer(m == 0 ? v1::DEFORMER_UNSPECIFIED : v1::DEFORMER_DQS);
    auto posed = client_->Pose(req);
    ASSERT_TRUE(posed.ok()) << posed.status();
    std::vector<Eigen::Vector3d> P;
    for (int i : section) P.emplace_back(posed->vertices(3 * i), posed->vertices(3 * i + 1), posed->vertices(3 * i + 2));
    area[m] = testing::SlabCrossSectionArea(P, centre, axis, 10 * slab);
  }
  std::printf("arm cross-section at joint 2: rest %.5f, LBS %.5f (%.1f%%), DQS %.5f (%.1f%%)\n", rest_area, area[0],
              100 * area[0] / rest_area, area[1], 100 * area[1] / rest_area);
  EXPECT_LT(area[0], 0.2 * rest_area) << "LBS should collapse (candy wrapper)";
  EXPECT_GT(area[1], 0.8 * rest_area) << "DQS should keep the cross-section";
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
