// skinctl against the real server: registering, posing from files and animations, exporting.
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <tiny_gltf.h>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/client.h"
#include "core/io/dmat.h"
#include "core/io/gltf.h"
#include "core/io/mesh_file.h"
#include "core/io/obj.h"
#include "core/io/tgf.h"
#include "server/convert/convert.h"
#include "tests/support/clips.h"
#include "tests/support/data.h"
#include "tests/support/gltf_reference.h"
#include "tests/support/gltf_validator.h"
#include "tests/support/morph_gltf.h"
#include "tests/support/multi_skin_gltf.h"
#include "tests/support/server_process.h"
#include "tests/support/tinygltf_load.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::BinaryPath;
using ::skinning::testing::DataPath;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::RunCommand;
using ::skinning::testing::ServerProcess;
using ::testing::HasSubstr;
using ::testing::Not;

// The shared data's CesiumMan, which the morph target tests give two targets
// (testing::WriteWithMorphTargets).
std::string CesiumManPath() { return DataPath("gltf/CesiumMan/CesiumMan.glb"); }

class SkinctlTest : public ::testing::Test {
 protected:
  void SetUp() override { server_ = std::make_unique<ServerProcess>(MakeTempDir("store")); }
  void TearDown() override { EXPECT_EQ(server_->Stop(SIGTERM), 0); }
  testing::CommandResult Skinctl(std::vector<std::string> args) {
    args.insert(args.begin(), {BinaryPath("client/skinctl"), "--server=" + server_->address()});
    return RunCommand(args);
  }
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(SkinctlTest, PosesTheArmFromAJsonPoseFileLikeTheClientLibrary) {
  const std::string obj = DataPath("libigl/arm/arm.obj"), tgf = DataPath("libigl/arm/arm.tgf"),
                    dmat = DataPath("libigl/arm/arm-weights.dmat");
  SKINNING_REQUIRE_DATA(obj);
  auto reg = Skinctl({"register", "--obj=" + obj, "--tgf=" + tgf, "--dmat=" + dmat});
  ASSERT_EQ(reg.exit_code, 0) << reg.output;
  const std::vector<std::string> lines = absl::StrSplit(reg.output, '\n', absl::SkipEmpty());
  const std::string id = lines.back();
  ASSERT_THAT(id, ::testing::StartsWith("rigs/rig-"));

  // Bone 2 bent 60° about z (absolute local rotation), bone 3 by name with a translation.
  const std::string dir = MakeTempDir("pose");
  const double s = std::sin(M_PI / 6), c = std::cos(M_PI / 6);
  std::ofstream(dir + "/bend.json") << "{\"joints\": [{\"index\": 2, \"rotation\": [0, 0, " << s << ", " << c
                                    << "]}, {\"name\": \"bone3\", \"translation\": [0.1, 0.2, 0.3]}]}";
  auto posed = Skinctl({"pose", "--rig=" + id, "--pose=" + dir + "/bend.json", "--method=lbs,dqs",
                        "--format=obj", "--out=" + dir});
  ASSERT_EQ(posed.exit_code, 0) << posed.output;

  // The same pose through the client library.
  auto graph = ReadTgf(tgf);
  ASSERT_TRUE(graph.ok());
  auto skeleton = SkeletonFromBones(*graph);
  ASSERT_TRUE(skeleton.ok());
  Pose pose = RestPose(*skeleton);
  pose.local[2].rotation = Eigen::Quaterniond(c, 0, 0, s);
  pose.local[3].translation = Eigen::Vector3d(0.1, 0.2, 0.3);
  ClientOptions o;
  o.target = server_->address();
  Client client(o);
  for (const auto& [name, deformer] : {std::pair{"lbs", v1::DEFORMER_UNSPECIFIED}, std::pair{"dqs", v1::DEFORMER_DQS}}) {
    v1::PoseRequest req;
    req.set_rig(id);
    req.set_deformer(deformer);
    *req.mutable_pose() = PoseToProto(pose);
    auto expected = client.Pose(req);
    ASSERT_TRUE(expected.ok()) << expected.status();
    auto written = ReadObj(dir + "/arm-" + name + "-bend.obj");
    ASSERT_TRUE(written.ok()) << written.status();
    ASSERT_EQ(written->V.size(), expected->vertices_size());
    double worst = 0, moved = 0;
    auto rest = ReadObj(obj);
    for (int i = 0; i < expected->vertices_size(); ++i) {
      worst = std::max(worst, std::abs(written->V.data()[i] - expected->vertices(i)));
      moved = std::max(moved, std::abs(rest->V.data()[i] - expected->vertices(i)));
    }
    EXPECT_LT(worst, 1e-6) << name;
    EXPECT_GT(moved, 0.05) << name << ": the pose should move the arm";
  }
}

TEST_F(SkinctlTest, PosesFromALibiglRelativeRotationDmatAndRefusesAWrongSizedOne) {
  const std::string tgf = DataPath("libigl/arm/arm.tgf"), obj = DataPath("libigl/arm/arm.obj"),
                    dmat = DataPath("libigl/arm/arm-weights.dmat"), hand_pose = DataPath("libigl/hand/hand-pose.dmat");
  SKINNING_REQUIRE_DATA(obj);
  SKINNING_REQUIRE_DATA(hand_pose);
  const std::string dir = MakeTempDir("pose");
  // One relative rotation per bone, x, y, z, w consecutively (libigl's layout), as 16 x 1.
  const Eigen::Quaterniond r(Eigen::AngleAxisd(0.5, Eigen::Vector3d::UnitY()));
  Eigen::MatrixXd q(16, 1);
  for (int j = 0; j < 4; ++j) q.block<4, 1>(4 * j, 0) << r.x(), r.y(), r.z(), r.w();
  ASSERT_TRUE(WriteDmat(dir + "/pose.dmat", q).ok());
  auto ok = Skinctl({"pose", "--obj=" + obj, "--tgf=" + tgf, "--dmat=" + dmat, "--pose=" + dir + "/pose.dmat",
                     "--format=obj", "--out=" + dir});
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  auto written = ReadObj(dir + "/arm-lbs-pose.obj");
  ASSERT_TRUE(written.ok()) << written.status();

  // Independently: every bone turns by r about its tail, composed down the chain (libigl's FK):
  // bone b's transform is T_b = T_parent · (C_b + r (x − C_b)), and LBS with the given weights.
  auto graph = ReadTgf(tgf);
  auto W = ReadDmat(dmat);
  auto rest = ReadObj(obj);
  ASSERT_TRUE(graph.ok() && W.ok() && rest.ok());
  std::vector<Eigen::Affine3d> T(4);
  for (int b = 0; b < 4; ++b) {
    const Eigen::Vector3d c = graph->C.row(graph->E(b, 0));
    const Eigen::Affine3d local = Eigen::Translation3d(c) * r * Eigen::Translation3d(-c);
    int parent = -1;
    for (int p = 0; p < 4; ++p)
      if (graph->E(p, 1) == graph->E(b, 0)) parent = p;
    T[b] = parent < 0 ? local : T[parent] * local;  // edges are listed parents first here
  }
  double worst = 0;
  for (int i = 0; i < rest->V.rows(); ++i) {
    Eigen::Vector3d x = Eigen::Vector3d::Zero();
    for (int b = 0; b < 4; ++b) x += (*W)(i, b) * (T[b] * rest->V.row(i).transpose());
    worst = std::max(worst, (x - written->V.row(i).transpose()).norm());
  }
  EXPECT_LT(worst, 1e-5);

  auto bad = Skinctl({"pose", "--obj=" + obj, "--tgf=" + tgf, "--dmat=" + dmat, "--pose=" + hand_pose, "--out=" + dir});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.output, HasSubstr("has 80 numbers, expected 4 per joint (16)"));
}

TEST_F(SkinctlTest, SamplesAnAnimationAtAFrameRateAndExportsASkinnedGltf) {
  const std::string gltf = DataPath("gltf/RiggedSimple/RiggedSimple.glb");
  SKINNING_REQUIRE_DATA(gltf);
  const std::string dir = MakeTempDir("anim");
  auto posed =
      Skinctl({"pose", "--gltf=" + gltf, "--fps=10", "--format=glb,gltf", "--out=" + dir});
  ASSERT_EQ(posed.exit_code, 0) << posed.output;
  auto character = ReadGltf(gltf);
  ASSERT_TRUE(character.ok());
  // The register line says what was sent and what the file held.
  EXPECT_THAT(posed.output,
              HasSubstr(absl::StrFormat("(%d vertices, %d joints; from the file: 1 skin, 1 mesh "
                                        "node, 0 morph targets, 1 animation)",
                                        character->mesh.V.rows(), character->skeleton.size())));
  const auto& anim = character->animations[0];
  const int expected_frames = static_cast<int>(std::floor((anim.end - anim.start) * 10 + 1e-9)) + 1;
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) files += e.path().extension() == ".glb";
  EXPECT_EQ(files, expected_frames);
  // Every written frame reads back as a static mesh of the right size.
  for (auto& e : std::filesystem::directory_iterator(dir)) {
    auto mesh = ReadGltf(e.path().string());
    EXPECT_FALSE(mesh.ok()) << "a posed mesh has no skin, so it is not a character";
  }

  // Export the stored rig as a skinned glTF and read it back as a character.
  auto list = Skinctl({"list"});
  ASSERT_EQ(list.exit_code, 0);
  const std::string id = list.output.substr(0, list.output.find(' '));
  ASSERT_THAT(id, ::testing::MatchesRegex("rigs/rig-[0-9a-f]{32}"));
  auto got = Skinctl({"get", id, "--out_file=" + dir + "/rig.glb"});
  ASSERT_EQ(got.exit_code, 0) << got.output;
  auto back = ReadGltf(dir + "/rig.glb");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->mesh.V.rows(), character->mesh.V.rows());
  EXPECT_EQ(back->skeleton.size(), character->skeleton.size());
  EXPECT_TRUE(back->mesh.V.isApprox(character->mesh.V, 1e-6));

  // Every glTF written here (posed frames as .glb and .gltf, the exported rig) validates.
  SKINNING_EXPECT_VALID_GLTF(testing::GltfFilesIn(dir));
}

// A file of several skinned nodes (one mesh instanced by three nodes, three skins): skinctl
// says what it sent, and every glTF it writes (posed frames, the exported rig) has one mesh
// node per file node, in order, and validates.
TEST_F(SkinctlTest, MultiSkinFileKeepsItsNodesApartInEveryOutput) {
  const std::string dir = MakeTempDir("multi");
  std::filesystem::create_directories(dir + "/in");
  const std::string gltf =
      testing::WriteMultiSkinGltf(testing::MultiSkinGltf(), dir + "/in/multi.gltf");
  const std::string out = dir + "/out";
  auto posed = Skinctl({"pose", "--gltf=" + gltf, "--fps=2", "--format=glb,obj", "--out=" + out});
  ASSERT_EQ(posed.exit_code, 0) << posed.output;
  EXPECT_THAT(posed.output, HasSubstr("from the file: 3 skins, 3 mesh nodes, 0 morph targets"));
  std::vector<std::string> files = testing::GltfFilesIn(out);
  ASSERT_GE(files.size(), 3u) << "frames at 0, 0.5, 1 and 1.5 s";
  for (const std::string& file : files) {
    absl::StatusOr<tinygltf::Model> loaded = testing::LoadTinyGltf(file);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    const tinygltf::Model& model = *loaded;
    ASSERT_EQ(model.meshes.size(), 3u) << file;
    for (int p = 0; p < 3; ++p) {
      EXPECT_EQ(model.nodes[model.scenes[0].nodes[p]].name, absl::StrFormat("instance%d", p));
    }
  }
  auto list = Skinctl({"list"});
  ASSERT_EQ(list.exit_code, 0);
  std::string id;
  for (absl::string_view line : absl::StrSplit(list.output, '\n')) {
    if (absl::StrContains(line, "multi")) id = std::string(line.substr(0, line.find(' ')));
  }
  ASSERT_FALSE(id.empty()) << list.output;
  auto got = Skinctl({"get", id, "--out_file=" + out + "/rig.glb"});
  ASSERT_EQ(got.exit_code, 0) << got.output;
  auto back = ReadGltf(out + "/rig.glb");
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->parts.size(), 3u);
  EXPECT_EQ(back->parts[2].name, "instance2");
  files = testing::GltfFilesIn(out);
  SKINNING_EXPECT_VALID_GLTF(files);
}

// A pose file sets morph weights by target name; the posed mesh is the reference's morph
// (named target at the file's weight, the other at its default) then skin. Unknown names fail.
TEST_F(SkinctlTest, PoseFileSetsMorphWeightsByTargetName) {
  SKINNING_REQUIRE_DATA(CesiumManPath());
  const std::string dir = MakeTempDir("morph-pose"), gltf = dir + "/CesiumManMorph.glb";
  ASSERT_TRUE(testing::WriteWithMorphTargets(CesiumManPath(), gltf).ok());
  {
    std::ofstream(dir + "/lean.json") << R"({"joints": [], "morph_weights": {"lean": 1.0}})";
    std::ofstream(dir + "/typo.json") << R"({"joints": [], "morph_weights": {"leen": 1.0}})";
  }
  auto posed = Skinctl({"pose", "--gltf=" + gltf, "--pose=" + dir + "/lean.json", "--format=obj",
                        "--out=" + dir + "/out"});
  ASSERT_EQ(posed.exit_code, 0) << posed.output;
  EXPECT_THAT(posed.output, HasSubstr("2 morph targets"));
  const std::vector<double> weights = {0.5, 1.0};  // bulge's default, lean from the file
  auto expected = testing::gltf_reference::SkinAtTime(gltf, -1, 0.0,
                                                      testing::gltf_reference::Blend::kLinear, &weights);
  ASSERT_TRUE(expected.ok()) << expected.status();
  std::string obj;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/out")) obj = e.path().string();
  auto mesh = ReadObj(obj);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  ASSERT_EQ(mesh->V.rows(), static_cast<Eigen::Index>(expected->bind.size()));
  double worst = 0, diag = BoundingBoxDiagonal(mesh->V);
  for (size_t i = 0; i < expected->bind.size(); ++i) {
    worst = std::max(worst, (mesh->V.row(i).transpose() - expected->bind[i]).norm());
  }
  EXPECT_LE(worst, 1e-5 * diag);
  auto typo = Skinctl({"pose", "--gltf=" + gltf, "--pose=" + dir + "/typo.json", "--format=obj",
                       "--out=" + dir + "/out2"});
  EXPECT_NE(typo.exit_code, 0);
  EXPECT_THAT(typo.output, HasSubstr("no morph target named 'leen'"));
  // A file of morph weights only (every joint at rest), and errors named by the file's entry and
  // the joint, or in the JSON parser's words.
  auto character = ReadGltf(gltf);
  ASSERT_TRUE(character.ok());
  const std::string last = character->skeleton.joints.back().name;
  {
    std::ofstream(dir + "/only.json") << R"({"morph_weights": {"lean": 1.0}})";
    std::ofstream(dir + "/quat.json") << R"({"joints": [{"name": ")" << last << R"(", "rotation": [0, 0, 0, 2]}]})";
    std::ofstream(dir + "/huge.json") << R"({"joints": [{"index": 0, "translation": [1e400, 0, 0]}]})";
  }
  auto only = Skinctl(
      {"pose", "--gltf=" + gltf, "--pose=" + dir + "/only.json", "--format=obj", "--out=" + dir + "/o"});
  EXPECT_EQ(only.exit_code, 0) << only.output;
  auto quat = Skinctl(
      {"pose", "--gltf=" + gltf, "--pose=" + dir + "/quat.json", "--format=obj", "--out=" + dir + "/q"});
  EXPECT_EQ(quat.exit_code, 2);
  EXPECT_THAT(quat.output, HasSubstr("quat.json: joints[0] (joint '" + last + "').rotation has norm 2"));
  auto huge = Skinctl(
      {"pose", "--gltf=" + gltf, "--pose=" + dir + "/huge.json", "--format=obj", "--out=" + dir + "/h"});
  EXPECT_EQ(huge.exit_code, 2);
  EXPECT_THAT(huge.output, HasSubstr("number overflow"));

  // The stored rig exported keeps its targets: names, default weights and deltas (they were
  // dropped), and the file validates.
  const size_t at = posed.output.find("rigs/rig-");
  ASSERT_NE(at, std::string::npos) << posed.output;
  auto got = Skinctl({"get", posed.output.substr(at, 41), "--out_file=" + dir + "/export/rig.glb"});
  ASSERT_EQ(got.exit_code, 0) << got.output;
  auto original = ReadGltf(gltf);
  auto exported = ReadGltf(dir + "/export/rig.glb");
  ASSERT_TRUE(original.ok() && exported.ok()) << exported.status();
  ASSERT_EQ(exported->morph_targets.size(), 2u);
  for (size_t t = 0; t < 2; ++t) {
    const MorphTarget& a = original->morph_targets[t];
    const MorphTarget& b = exported->morph_targets[t];
    EXPECT_EQ(b.name, a.name);
    EXPECT_EQ(b.default_weight, a.default_weight);
    ASSERT_EQ(b.dV.rows(), a.dV.rows());
    EXPECT_LE((b.dV - a.dV).cwiseAbs().maxCoeff(), 1e-6 * diag) << a.name;
    EXPECT_EQ(b.dN.rows(), a.dN.rows()) << a.name;
  }
  SKINNING_EXPECT_VALID_GLTF(testing::GltfFilesIn(dir + "/export"));
}

// A folder passed as a file is an error, not an abort; a display name that is a path ("../x")
// names files inside --out; and a stored rig's summary is the same whatever it is called.
TEST_F(SkinctlTest, AFolderAsAFileIsAnErrorAndDisplayNamesStayInsideOut) {
  const std::string gltf = DataPath("gltf/RiggedSimple/RiggedSimple.glb");
  SKINNING_REQUIRE_DATA(gltf);
  const std::string dir = MakeTempDir("names");
  const std::string folder_obj = MakeTempDir("folders") + "/folder.obj";  // --obj reads by extension
  std::filesystem::create_directories(folder_obj);
  for (const std::string& flag : {"--gltf=" + dir, "--obj=" + folder_obj}) {
    auto folder = Skinctl({"register", flag, "--tgf=" + dir});
    EXPECT_EQ(folder.exit_code, 2) << flag << folder.output;  // 134: std::ios_base::failure escaped
    EXPECT_THAT(folder.output, HasSubstr("Is a directory")) << flag;
  }
  auto reg = Skinctl({"register", "--gltf=" + gltf, "--name=../escaped name"});
  ASSERT_EQ(reg.exit_code, 0) << reg.output;
  const size_t at = reg.output.find("rigs/rig-");
  ASSERT_NE(at, std::string::npos) << reg.output;
  const std::string id = reg.output.substr(at, 41);
  const std::string out = dir + "/out";
  auto posed = Skinctl({"pose", "--rig=" + id, "--format=obj", "--out=" + out});
  ASSERT_EQ(posed.exit_code, 0) << posed.output;
  EXPECT_TRUE(std::filesystem::exists(out + "/_escaped_name-lbs-rest.obj")) << posed.output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/escaped name-lbs-rest.obj"));
  for (auto& e : std::filesystem::directory_iterator(dir)) EXPECT_EQ(e.path().filename(), "out");
  // The same content under another name is the stored rig, which keeps its name: said, not silent.
  auto again = Skinctl({"register", "--gltf=" + gltf, "--name=other"});
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_THAT(again.output, HasSubstr("it keeps its name '../escaped name'; 'other' is not applied"));
  auto both = Skinctl({"register", "--gltf=" + gltf, "--obj=" + dir + "/x.obj", "--tgf=" + dir + "/x.tgf"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_THAT(both.output, HasSubstr("give --gltf or --obj (with --tgf), not both"));
  auto obj = Skinctl({"get", id, "--out_file=" + dir + "/rig.obj"});
  EXPECT_EQ(obj.exit_code, 2);
  EXPECT_THAT(obj.output, HasSubstr("name it .glb or .gltf"));
}

// register --gltf of a file with scenery: refused by name, or registered with the scenery left out
// and named in the summary line with --skip_static_meshes (with --gltf only).
TEST_F(SkinctlTest, RegisterSkipsStaticMeshesOnlyWhenAsked) {
  testing::MultiSkinGltf spec;
  spec.scenery = true;
  const std::string dir = MakeTempDir("scenery");
  const std::string gltf = testing::WriteMultiSkinGltf(spec, dir + "/scenery.gltf");
  auto refused = Skinctl({"register", "--gltf=" + gltf});
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("skip_static_meshes leaves them out"));
  auto reg = Skinctl({"register", "--gltf=" + gltf, "--skip_static_meshes"});
  ASSERT_EQ(reg.exit_code, 0) << reg.output;
  EXPECT_THAT(reg.output, ::testing::ContainsRegex(R"(; left out: 1 static mesh, nodes\[[0-9]+\] \("ground"\)\))"));
  auto obj = Skinctl({"register", "--obj=" + dir + "/x.obj", "--tgf=" + dir + "/x.tgf", "--skip_static_meshes"});
  EXPECT_EQ(obj.exit_code, 2) << obj.output;
  EXPECT_THAT(obj.output, HasSubstr("--skip_static_meshes goes with --gltf"));
}

// Of a file with several scenes, register reads the default one or --scene, and says which.
TEST_F(SkinctlTest, RegisterReadsTheDefaultSceneOrTheOneAskedFor) {
  testing::MultiSkinGltf spec;
  spec.scenery = spec.scenery_scene = true;
  spec.default_scene = 1;  // the ground's: the character is to be asked for
  const std::string dir = MakeTempDir("scenes");
  const std::string gltf = testing::WriteMultiSkinGltf(spec, dir + "/scenes.gltf");
  auto refused = Skinctl({"register", "--gltf=" + gltf});
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_THAT(refused.output, HasSubstr("scenes[1] (\"Props\"), the file's default scene, has no skinned mesh; "
                                        "scenes[0] (\"Character\") has one"));
  auto reg = Skinctl({"register", "--gltf=" + gltf, "--scene=0"});
  ASSERT_EQ(reg.exit_code, 0) << reg.output;
  EXPECT_THAT(reg.output, HasSubstr("; read scenes[0] (\"Character\") of 2"));
  auto obj = Skinctl({"register", "--obj=" + dir + "/x.obj", "--tgf=" + dir + "/x.tgf", "--scene=0"});
  EXPECT_EQ(obj.exit_code, 2) << obj.output;
  EXPECT_THAT(obj.output, HasSubstr("--scene goes with --gltf"));
}

TEST_F(SkinctlTest, ReportsUnknownRigsAndCommands) {
  auto missing = Skinctl({"get", "rigs/rig-0123456789abcdef0123456789abcdef"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.output, HasSubstr("NOT_FOUND"));
  auto unknown = Skinctl({"frobnicate"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.output, HasSubstr("unknown command 'frobnicate'"));
  // `skinctl help` is asked for: the usage and exit 0 (it printed the usage, then "unknown
  // command 'help'" and exit 2).
  auto help = Skinctl({"help"});
  EXPECT_EQ(help.exit_code, 0) << help.output;
  EXPECT_THAT(help.output, HasSubstr("Commands:"));
  EXPECT_THAT(help.output, Not(HasSubstr("unknown command")));
}

// A bake of a --gltf file writes the file's animations into the baked .glb: every joint channel's
// and the morph target weights channel's keys as the file had them (times and values as floats),
// with the bake's weights. The .glb used to have none, so the rigger's character did not play.
TEST_F(SkinctlTest, ABakedGlbOfAFileCarriesTheFilesAnimations) {
  SKINNING_REQUIRE_DATA(CesiumManPath());
  const std::string dir = MakeTempDir("bake-animations"), gltf = dir + "/CesiumManMorph.glb";
  ASSERT_TRUE(testing::WriteWithMorphTargets(CesiumManPath(), gltf).ok());
  auto baked = Skinctl({"bake", "--gltf=" + gltf, "--bake_method=bone_heat", "--out=" + dir + "/out"});
  ASSERT_EQ(baked.exit_code, 0) << baked.output;
  const std::string glb = dir + "/out/CesiumManMorph-bone_heat.glb";
  SKINNING_EXPECT_VALID_GLTF(std::vector<std::string>{glb});
  absl::StatusOr<GltfCharacter> file = ReadGltf(gltf), out = ReadGltf(glb);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(out.ok()) << out.status();
  auto as_floats = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
  ASSERT_EQ(out->animations.size(), file->animations.size());
  for (size_t a = 0; a < file->animations.size(); ++a) {
    const Animation &want = file->animations[a], &got = out->animations[a];
    EXPECT_EQ(got.name, want.name);
    ASSERT_EQ(got.channels.size(), want.channels.size());
    for (size_t c = 0; c < want.channels.size(); ++c) {
      SCOPED_TRACE(absl::StrFormat("animations[%d].channels[%d]", a, c));
      EXPECT_EQ(got.channels[c].joint, want.channels[c].joint);
      EXPECT_EQ(got.channels[c].path, want.channels[c].path);
      EXPECT_EQ(got.channels[c].interpolation, want.channels[c].interpolation);
      EXPECT_EQ(as_floats(got.channels[c].times), as_floats(want.channels[c].times));
      EXPECT_EQ(as_floats(got.channels[c].values), as_floats(want.channels[c].values));
    }
    ASSERT_EQ(got.morph_channels.size(), want.morph_channels.size());
    for (size_t c = 0; c < want.morph_channels.size(); ++c) {
      EXPECT_EQ(got.morph_channels[c].first_target, want.morph_channels[c].first_target);
      EXPECT_EQ(got.morph_channels[c].count, want.morph_channels[c].count);
      EXPECT_EQ(as_floats(got.morph_channels[c].times), as_floats(want.morph_channels[c].times));
      EXPECT_EQ(as_floats(got.morph_channels[c].values), as_floats(want.morph_channels[c].values));
    }
  }
  EXPECT_EQ(file->animations[0].morph_channels.size(), 1u);
  EXPECT_EQ(out->morph_targets.size(), 2u);
}

// `skinctl register --gltf` stores the file's animations with the rig, so that `get --out_file`
// and `bake --rig` write them into their .glb later, without the file: each file registered again
// gives the clips that the source file gives (CreateRig's sampling), joint transforms and morph
// target weights within 1e-5. Before, both files had no animation, and `pose --rig --fps` was
// refused ("need a glTF file with an animation").
TEST_F(SkinctlTest, TheAnimationsStoredWithARigGoIntoItsGetBakeAndPoseFiles) {
  SKINNING_REQUIRE_DATA(CesiumManPath());
  const std::string dir = MakeTempDir("stored-animations"), gltf = dir + "/CesiumManMorph.glb";
  ASSERT_TRUE(testing::WriteWithMorphTargets(CesiumManPath(), gltf).ok());
  auto reg = Skinctl({"register", "--gltf=" + gltf});
  ASSERT_EQ(reg.exit_code, 0) << reg.output;
  const size_t at = reg.output.find("rigs/rig-");
  ASSERT_NE(at, std::string::npos) << reg.output;
  const std::string rig = reg.output.substr(at, 41);
  ASSERT_THAT(rig, ::testing::MatchesRegex("rigs/rig-[0-9a-f]{32}"));
  auto got = Skinctl({"get", rig, "--out_file=" + dir + "/got.glb"});
  ASSERT_EQ(got.exit_code, 0) << got.output;
  EXPECT_THAT(got.output, HasSubstr("animation 'animation0': "));
  auto baked = Skinctl({"bake", "--rig=" + rig, "--bake_method=bone_heat", "--out=" + dir + "/out"});
  ASSERT_EQ(baked.exit_code, 0) << baked.output;
  const std::string baked_glb = dir + "/out/CesiumManMorph-bone_heat.glb";
  const std::vector<std::string> written = {dir + "/got.glb", baked_glb};
  SKINNING_EXPECT_VALID_GLTF(written);

  ClientOptions o;
  o.target = server_->address();
  Client client(o);
  auto want = client.CreateRigFromGltf(testing::FileBytes(gltf));
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_EQ(want->animations_size(), 1);
  ASSERT_GT(want->animations(0).poses(0).morph_weights_size(), 0);
  for (const std::string& file : {dir + "/got.glb", baked_glb}) {
    SCOPED_TRACE(file);
    auto again = client.CreateRigFromGltf(testing::FileBytes(file));
    ASSERT_TRUE(again.ok()) << again.status();
    ASSERT_EQ(again->animations_size(), 1);
    EXPECT_LT(testing::ClipDifference(again->animations(0), want->animations(0)), 1e-5);
  }

  // `pose --rig --fps` samples the stored clip: each frame as `pose --gltf --fps` of the file poses
  // it, within 1e-5 of the diagonal (10 frames/s: every third frame of the 30 frames/s clip).
  auto posed_files = [&](const std::vector<std::string>& source, const std::string& out) {
    std::vector<std::string> args = {"pose", "--fps=10", "--format=obj", "--out=" + out};
    args.insert(args.end(), source.begin(), source.end());
    auto posed = Skinctl(args);
    EXPECT_EQ(posed.exit_code, 0) << posed.output;
    std::vector<std::string> files;
    for (absl::string_view line : absl::StrSplit(posed.output, '\n'))
      if (absl::EndsWith(line, ".obj")) files.emplace_back(line);
    return files;
  };
  const std::vector<std::string> from_rig = posed_files({"--rig=" + rig}, dir + "/rig"),
                                 from_file = posed_files({"--gltf=" + gltf}, dir + "/file");
  ASSERT_EQ(from_rig.size(), from_file.size());
  EXPECT_GT(from_rig.size(), 10u);
  double most = 0, diag = 0;
  for (size_t f = 0; f < from_rig.size(); ++f) {
    auto a = ReadObj(from_rig[f]), b = ReadObj(from_file[f]);
    ASSERT_TRUE(a.ok() && b.ok()) << from_rig[f] << " " << from_file[f];
    ASSERT_EQ(a->V.rows(), b->V.rows());
    most = std::max(most, (a->V - b->V).cwiseAbs().maxCoeff());
    diag = std::max(diag, (b->V.colwise().maxCoeff() - b->V.colwise().minCoeff()).norm());
  }
  EXPECT_LT(most, 1e-5 * diag);
}

// Flags another command reads, conflicting frame sources and impossible frame rates are errors
// (each was silently ignored: bake --method=bone_heat baked bbw), and a bake's --out is checked
// before the bake starts.
TEST_F(SkinctlTest, RefusesFlagsOfOtherCommandsAndBadFrameSourcesBeforeWorking) {
  const std::string gltf = DataPath("gltf/RiggedSimple/RiggedSimple.glb");
  SKINNING_REQUIRE_DATA(gltf);
  const std::string dir = MakeTempDir("flags");
  auto method = Skinctl({"bake", "--gltf=" + gltf, "--method=bone_heat"});
  EXPECT_EQ(method.exit_code, 2);
  EXPECT_THAT(method.output, HasSubstr("--method is not a flag of bake (did you mean --bake_method?)"));
  auto nowait = Skinctl({"list", "--nowait"});
  EXPECT_EQ(nowait.exit_code, 2);
  EXPECT_THAT(nowait.output, HasSubstr("--wait is not a flag of list; list takes none"));
  for (const char* fps : {"-5", "1e9"}) {
    auto bad = Skinctl({"pose", "--gltf=" + gltf, std::string("--fps=") + fps, "--out=" + dir});
    EXPECT_EQ(bad.exit_code, 2) << fps;
    EXPECT_THAT(bad.output, HasSubstr("give a frame rate above 0, at most 1000")) << fps;
  }
  { std::ofstream(dir + "/rest.json") << R"({"joints": []})"; }
  auto both = Skinctl({"pose", "--gltf=" + gltf, "--pose=" + dir + "/rest.json", "--times=0.5", "--out=" + dir});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_THAT(both.output, HasSubstr("give one of --pose, --times and --fps"));
  { std::ofstream(dir + "/a_file") << "x"; }
  auto out = Skinctl({"bake", "--gltf=" + gltf, "--bake_method=bone_heat", "--out=" + dir + "/a_file/sub"});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_THAT(out.output, HasSubstr("cannot create " + dir + "/a_file/sub"));
  EXPECT_THAT(out.output, ::testing::Not(HasSubstr("started bake")));
}

// --stretch and --twist name a joint or give its index. A name that is not a joint used to stretch
// joint 0 (exit 0, the output as with --stretch=0=...); it is refused now, naming the flag.
TEST_F(SkinctlTest, StretchAndTwistOfAnUnknownJointAreRefused) {
  const std::string gltf = DataPath("gltf/RiggedSimple/RiggedSimple.glb");
  SKINNING_REQUIRE_DATA(gltf);
  const std::string dir = MakeTempDir("stretch");
  auto reg = Skinctl({"register", "--gltf=" + gltf});
  ASSERT_EQ(reg.exit_code, 0) << reg.output;
  const std::vector<std::string> lines = absl::StrSplit(reg.output, '\n', absl::SkipEmpty());
  const std::string rig = lines.back();
  auto baked = Skinctl({"bake", "--rig=" + rig, "--bake_method=endpoint", "--endpoint_method=projection",
                        "--out=" + dir + "/bake"});
  ASSERT_EQ(baked.exit_code, 0) << baked.output;
  const size_t at = baked.output.find(rig + "/bakes/bake-");  // the output holds stderr's progress too
  ASSERT_NE(at, std::string::npos) << baked.output;
  const std::string bake = baked.output.substr(at, rig.size() + std::string("/bakes/bake-").size() + 32);
  auto pose = [&](const std::string& flag, const std::string& out) {
    return Skinctl({"pose", "--rig=" + rig, "--bake=" + bake, "--method=stbs_lbs", flag, "--format=obj",
                    "--out=" + dir + "/" + out});
  };
  auto typo = pose("--stretch=no_such_joint=1.5", "typo");
  EXPECT_EQ(typo.exit_code, 2) << typo.output;
  EXPECT_THAT(typo.output, HasSubstr("--stretch: unknown joint 'no_such_joint': give a joint's name or its index"));
  auto twist = pose("--twist=no_such_joint=0:90", "typo");
  EXPECT_EQ(twist.exit_code, 2) << twist.output;
  EXPECT_THAT(twist.output, HasSubstr("--twist: unknown joint 'no_such_joint'"));
  auto far = pose("--twist=99=0:90", "typo");
  EXPECT_EQ(far.exit_code, 2) << far.output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/typo")) << "a refused pose wrote output";
  auto by_index = pose("--stretch=0=1.5", "by_index");
  EXPECT_EQ(by_index.exit_code, 0) << by_index.output;
}

// --obj reads the mesh by its extension: an .off (or a MEDIT .mesh) of the same surface is the same
// rig. The OBJ reader used to read any file, skipping every line it did not know, so an .off gave
// "rig.mesh has no vertices" without naming the file.
TEST_F(SkinctlTest, RegistersAnOffOrMeditMeshLikeItsObjAndNamesAnUnknownExtension) {
  const std::string obj = DataPath("libigl/arm/arm.obj"), tgf = DataPath("libigl/arm/arm.tgf");
  SKINNING_REQUIRE_DATA(obj);
  const std::string dir = MakeTempDir("formats");
  absl::StatusOr<Mesh> mesh = ReadObj(obj);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  mesh->N.resize(0, 3);  // the .off and .mesh files carry none, so neither does the .obj
  ASSERT_TRUE(WriteMeshFile(dir + "/arm.obj", *mesh).ok());
  ASSERT_TRUE(WriteMeshFile(dir + "/arm.off", *mesh).ok());
  ASSERT_TRUE(WriteMeshFile(dir + "/arm.mesh", *mesh).ok());
  std::vector<std::string> names;
  for (const char* file : {"arm.obj", "arm.off", "arm.mesh"}) {
    auto reg = Skinctl({"register", "--obj=" + dir + "/" + file, "--tgf=" + tgf});
    ASSERT_EQ(reg.exit_code, 0) << file << ": " << reg.output;
    const std::vector<std::string> lines = absl::StrSplit(reg.output, '\n', absl::SkipEmpty());
    names.push_back(lines.back());
  }
  EXPECT_THAT(names[0], ::testing::StartsWith("rigs/rig-"));
  EXPECT_EQ(names[1], names[0]) << "the .off gave another rig";
  EXPECT_EQ(names[2], names[0]) << "the .mesh gave another rig";
  auto other = Skinctl({"register", "--obj=" + tgf, "--tgf=" + tgf});
  EXPECT_EQ(other.exit_code, 2) << other.output;
  EXPECT_THAT(other.output, HasSubstr(tgf + ": unsupported mesh file extension '.tgf' (expected .obj, .off or .mesh)"));
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
