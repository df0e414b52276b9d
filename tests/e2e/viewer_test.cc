// The browser viewer (web/) in Debian's chromium against the real server: tests/web/viewer.mjs
// drives the page like a user (register the bundled sample, play, DQS, bake BBW, drag a FAST
// handle) and writes what it saw; this test checks it, and checks the vertices the page received
// against a gRPC Pose of the same request. Screenshots: build/test-artifacts/viewer/*.png.
// tests/web/viewer_restart.mjs keeps a pose session going across a server restart, and
// tests/web/viewer_bake_restart.mjs a bake watch and a unary call across a restart of the replica
// they went to; tests/web/viewer_phone.mjs uses the page on an emulated phone's touch screen.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <thread>

#include <gmock/gmock.h>
#include <google/protobuf/repeated_field.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/client.h"
#include "core/io/gltf.h"
#include "server/convert/convert.h"
#include "server/convert/gltf_import.h"
#include "skinning/v1/pose_service.pb.h"
#include "skinning/v1/bake_service.pb.h"
#include "tests/support/clips.h"
#include "tests/support/data.h"
#include "tests/support/fixtures.h"
#include "tests/support/glb.h"
#include "tests/support/gltf_validator.h"
#include "tests/support/morph_gltf.h"
#include "tests/support/multi_skin_gltf.h"
#include "tests/support/redis_process.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::CommandResult;
using ::skinning::testing::LargestDifference;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::RedisProcess;
using ::skinning::testing::RunCommand;
using ::skinning::testing::ServerProcess;

// `name` on PATH, or "".
std::string OnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path ? path : "/usr/bin", ':')) {
    const std::string candidate = std::string(dir) + "/" + name;
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// What the browser test needs; in CI all of it is installed (scripts/install-deps.sh).
std::string MissingTool() {
  const std::string src = SKINNING_SOURCE_DIR;
  if (!std::filesystem::exists("/usr/bin/chromium")) return "/usr/bin/chromium";
  if (!std::filesystem::exists(src + "/tests/node_modules/playwright-core")) return "tests/node_modules/playwright-core";
  if (!std::filesystem::exists(src + "/web/dist/viewer.js")) return "web/dist/viewer.js (scripts/install-deps.sh builds it)";
  if (OnPath("node").empty()) return "node on PATH";
  return "";
}

// A server of its own store that serves the viewer's files.
std::unique_ptr<ServerProcess> ViewerServer() {
  const std::string src = SKINNING_SOURCE_DIR;
  const std::vector<std::string> flags = {"--http_address=127.0.0.1:0", "--web_dir=" + src + "/web"};
  return std::make_unique<ServerProcess>(MakeTempDir("store"), flags);
}

// Where a browser test keeps its files: build/test-artifacts/`name`.
std::string ArtifactsDir(const std::string& name) {
  return std::string(SKINNING_BINARY_DIR) + "/test-artifacts/" + name;
}

// The command that runs tests/web/`script` on the page at port `http` with the bundled CesiumMan
// (`more_args` after), its files in `out` (ArtifactsDir), which is emptied first.
std::vector<std::string> ViewerScriptCommand(const std::string& script, int http, const std::string& out,
                                             const std::vector<std::string>& more_args) {
  const std::string src = SKINNING_SOURCE_DIR;
  std::filesystem::remove_all(out);
  std::vector<std::string> command = {OnPath("node"), src + "/tests/web/" + script,
                                      "--url=http://127.0.0.1:" + std::to_string(http),
                                      "--glb=" + src + "/samples/CesiumMan/CesiumMan.glb", "--out=" + out};
  command.insert(command.end(), more_args.begin(), more_args.end());
  return command;
}

// *r: the result.json a script that exited 0 wrote in `out` (`ran`: the script's run), which must
// hold no failure and no console or page error.
void ReadViewerResult(const CommandResult& ran, const std::string& out, nlohmann::json* r) {
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  std::ifstream in(out + "/result.json");
  ASSERT_TRUE(in) << "no result.json; node said: " << ran.output;
  *r = nlohmann::json::parse(in);
  ASSERT_FALSE(r->contains("failure")) << (*r)["failure"].get<std::string>() << "\nsteps: " << (*r)["steps"].dump();
  EXPECT_TRUE((*r)["consoleErrors"].empty()) << (*r)["consoleErrors"].dump();
  EXPECT_TRUE((*r)["pageErrors"].empty()) << (*r)["pageErrors"].dump();
}

// Runs tests/web/`script` on the page `server` serves (ViewerServer), as ViewerScriptCommand, and
// reads its result into *r (ReadViewerResult).
void RunViewerScript(ServerProcess& server, const std::string& script, const std::string& out, nlohmann::json* r,
                     const std::vector<std::string>& more_args = {}) {
  ASSERT_GT(server.http_port(), 0) << server.Output();
  ReadViewerResult(RunCommand(ViewerScriptCommand(script, server.http_port(), out, more_args)), out, r);
}

// The page's FAST drag (r["fast"]: the handle's rest point, the drag's target and the answer's
// transform of that handle) moved the handle, and the answer puts it where it was dragged.
void ExpectDraggedHandleFollowed(const nlohmann::json& r) {
  ASSERT_GT(r["handleCount"].get<int>(), 1);
  ASSERT_TRUE(r.contains("fast"));
  const auto& f = r["fast"];
  const auto& T = f["transform"];
  ASSERT_EQ(T.size(), 12u);
  double gap2 = 0, moved2 = 0;
  for (int a = 0; a < 3; ++a) {
    double q = T[4 * a + 3].get<double>();
    for (int b = 0; b < 3; ++b) q += T[4 * a + b].get<double>() * f["point"][b].get<double>();
    gap2 += std::pow(q - f["target"][a].get<double>(), 2);
    moved2 += std::pow(f["target"][a].get<double>() - f["point"][a].get<double>(), 2);
  }
  const double diag = r["diag"].get<double>();
  EXPECT_LE(std::sqrt(gap2), 1e-4 * diag);
  EXPECT_GT(std::sqrt(moved2), 1e-3 * diag) << "the drag did not move the handle";
}

TEST(ViewerBrowserTest, RegistersPlaysSwitchesBakesAndDragsInChromium) {
  SKINNING_REQUIRE_TOOL(MissingTool());
  std::unique_ptr<ServerProcess> server = ViewerServer();
  const std::string out = ArtifactsDir("viewer");
  nlohmann::json r;
  ASSERT_NO_FATAL_FAILURE(RunViewerScript(*server, "viewer.mjs", out, &r));
  EXPECT_EQ(r["steps"], nlohmann::json({"loaded", "registered", "played", "dqs", "baked", "dragged"}));

  // The animation moved the picture.
  EXPECT_GT(r["changedPixelFraction"].get<double>(), 0.01) << "bind and posed frames look the same";

  // The page's DQS frame is what gRPC answers for the same request, float for float.
  v1::PoseRequest request;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r["dqsPose"]["request"].get<std::string>(), &request).ok());
  EXPECT_EQ(request.deformer(), v1::DEFORMER_DQS);
  ClientOptions o;
  o.target = server->address();
  Client client(o);
  auto want = client.Pose(request);
  ASSERT_TRUE(want.ok()) << want.status();
  const auto& got = r["dqsPose"]["vertices"];
  ASSERT_EQ(static_cast<int>(got.size()), want->vertices_size());
  int differ = 0;
  for (int i = 0; i < want->vertices_size(); ++i)
    if (static_cast<float>(got[i].get<double>()) != want->vertices(i)) ++differ;
  EXPECT_EQ(differ, 0) << "of " << want->vertices_size() << " coordinates";

  // The BBW bake's progress bar went up to 100 %.
  const auto& progress = r["progress"];
  ASSERT_FALSE(progress.empty());
  for (size_t i = 1; i < progress.size(); ++i) EXPECT_GE(progress[i].get<double>(), progress[i - 1].get<double>());
  EXPECT_EQ(progress.back().get<double>(), 1.0);
  EXPECT_EQ(r["progressBar"].get<double>(), 1.0);
  // Joint-slider frames before the bake posed with the rig's own weights; the first after it
  // opened a session naming the bake (the old socket, which named none, would have kept posing
  // with the rig's weights).
  ASSERT_TRUE(r["bakeName"].is_string());
  EXPECT_EQ(r["sessionBakes"], nlohmann::json({"", r["bakeName"].get<std::string>()}));

  ExpectDraggedHandleFollowed(r);
  for (const char* shot : {"1-bind.png", "2-animation.png", "3-dqs.png", "4-bbw-weights.png", "5-fast-drag.png"})
    EXPECT_TRUE(std::filesystem::exists(out + "/" + shot)) << shot;
  EXPECT_EQ(server->Stop(SIGTERM), 0);
}

// tests/web/viewer_scenery.mjs: a file exported with scenery (a mesh at the scene's root that no
// skin or joint moves, which CreateRig refuses by default) registers from the page with the
// scenery left out (the rig of the same file without it), and the status line names it, and
// which of the file's two scenes was read; a chooser offers both. The same file whose default
// scene is the scenery alone is refused, naming the scene with the character, and registers that
// scene once it is chosen.
TEST(ViewerBrowserTest, AFileWithSceneryRegistersWithoutItAndThePageSaysWhatWasLeftOut) {
  SKINNING_REQUIRE_TOOL(MissingTool());
  std::unique_ptr<ServerProcess> server = ViewerServer();
  testing::MultiSkinGltf spec;
  const std::string dir = MakeTempDir("scenery");
  const std::string plain = testing::WriteMultiSkinGltf(spec, dir + "/character.gltf");
  // The ground beside the character, and in a second scene of its own: the page reads the default.
  spec.scenery = spec.scenery_scene = spec.ground_in_both_scenes = true;
  const std::string scenery = testing::WriteMultiSkinGltf(spec, MakeTempDir("scenery") + "/character.gltf");
  // The same with the scenery's scene the default.
  spec.default_scene = 1;
  const std::string props_first = testing::WriteMultiSkinGltf(spec, MakeTempDir("scenery") + "/props-first.gltf");
  nlohmann::json r;
  ASSERT_NO_FATAL_FAILURE(RunViewerScript(*server, "viewer_scenery.mjs", ArtifactsDir("viewer-scenery"), &r,
                                          {"--scenery=" + scenery, "--props_first=" + props_first}));
  EXPECT_EQ(r["steps"], nlohmann::json({"registered", "refused the default scene", "registered the scene chosen"}));
  const std::string left_out = R"(; left out \(no skin or joint moves them\): nodes\[[0-9]+\] \("ground"\)$)";
  EXPECT_THAT(r["status"].get<std::string>(),
              ::testing::ContainsRegex(R"(; read scenes\[0\] \("Character"\) of 2)" + left_out));
  const nlohmann::json options = {R"(scenes[0] ("Character") (the file's default))", R"(scenes[1] ("Props"))"};
  EXPECT_EQ(r["scenes"], nlohmann::json({{"shown", true}, {"options", options}, {"chosen", "0"}}));

  // Refused, with the chooser left on the scene that was refused.
  EXPECT_THAT(r["refused"].get<std::string>(),
              ::testing::ContainsRegex(R"(^Registering props-first.gltf, scenes\[1\] \("Props"\): .*scenes\[1\] )"
                                       R"(\("Props"\), the file's default scene, has no skinned mesh; scenes\[0\] )"
                                       R"(\("Character"\) has one)"));
  const nlohmann::json props_options = {R"(scenes[0] ("Character"))", R"(scenes[1] ("Props") (the file's default))"};
  EXPECT_EQ(r["refusedScenes"], nlohmann::json({{"shown", true}, {"options", props_options}, {"chosen", "1"}}));
  EXPECT_THAT(r["chosenStatus"].get<std::string>(),
              ::testing::ContainsRegex(R"(; read scenes\[0\] \("Character"\) of 2)" + left_out));
  EXPECT_EQ(r["chosenScenes"], nlohmann::json({{"shown", true}, {"options", props_options}, {"chosen", "0"}}));

  // Both are the rig of the file without the scenery.
  ClientOptions o;
  o.target = server->address();
  Client client(o);
  auto want = client.CreateRigFromGltf(testing::FileBytes(plain), "character");
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_EQ(r["rig"].get<std::string>(), want->rig().name());
  EXPECT_FALSE(want->created()) << "the page stored the same rig";
  EXPECT_EQ(r["chosenRig"].get<std::string>(), want->rig().name());
  EXPECT_EQ(server->Stop(SIGTERM), 0);
}

// tests/web/viewer_gltf_files.mjs: SimpleSkin, a .gltf with four .bin files beside it. Chosen
// alone, the page names the first file it also needs; chosen with them, it registers the rig that
// reading the file from disk gives (the same content address).
TEST(ViewerBrowserTest, AGltfChosenWithItsBinFilesRegistersAsTheFileReadFromDisk) {
  SKINNING_REQUIRE_TOOL(MissingTool());
  const std::string gltf = testing::DataPath("gltf/SimpleSkin/SimpleSkin.gltf");
  SKINNING_REQUIRE_DATA(gltf);
  std::vector<std::string> bins;
  for (const char* bin : {"inverseBindMatrices.bin", "skinAnimation.bin", "skinGeometry.bin", "skinningData.bin"})
    bins.push_back(testing::DataPath(std::string("gltf/SimpleSkin/") + bin));
  std::unique_ptr<ServerProcess> server = ViewerServer();
  nlohmann::json r;
  ASSERT_NO_FATAL_FAILURE(RunViewerScript(*server, "viewer_gltf_files.mjs", ArtifactsDir("viewer-gltf-files"), &r,
                                          {"--gltf=" + gltf, "--bins=" + absl::StrJoin(bins, ",")}));
  EXPECT_EQ(r["steps"], nlohmann::json({"refused alone", "registered"}));
  EXPECT_THAT(r["alone"].get<std::string>(),
              ::testing::HasSubstr("SimpleSkin.gltf keeps a buffer in skinGeometry.bin: choose or drop it together "
                                   "with the .gltf"));
  absl::StatusOr<GltfCharacter> read = ReadGltf(gltf);
  ASSERT_TRUE(read.ok()) << read.status();
  GltfImport imported = ImportGltf(*std::move(read));
  imported.rig.name = "SimpleSkin";  // the page's display name: the file's
  ClientOptions o;
  o.target = server->address();
  Client client(o);
  auto want = client.CreateRig(RigToProto(imported.rig));
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_EQ(r["rig"].get<std::string>(), want->rig().name());
  EXPECT_FALSE(want->created()) << "the page stored the same rig";
  EXPECT_THAT(r["status"].get<std::string>(), ::testing::StartsWith("SimpleSkin: "));
  EXPECT_EQ(server->Stop(SIGTERM), 0);
}

// tests/web/viewer_images.mjs: CesiumMan (a 210 kB JPEG texture after its mesh data) and the
// same file packed by gltfpack (the texture first, the meshopt-compressed data after it, so that
// every range moves). The page sends each without its image, and registers the rig that the whole
// file gives (the same content address). A third copy names the mesh's index view as its image:
// nothing is cut from it. A fourth is an avatar's .vrm (CesiumMan with VRM 1.0's extensions),
// which the page takes as the glTF binary it is: CesiumMan's rig.
TEST(ViewerBrowserTest, AGlbIsSentWithoutItsImagesAndRegistersAsTheWholeFile) {
  SKINNING_REQUIRE_TOOL(MissingTool());
  SKINNING_REQUIRE_TOOL(OnPath("gltfpack").empty() ? std::string("gltfpack on PATH") : std::string());
  const std::string cesium = testing::DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(cesium);
  const std::string dir = MakeTempDir("images");
  const std::string packed = dir + "/CesiumMan-packed.glb", shared = dir + "/CesiumMan-shared.glb";
  const std::string vrm = dir + "/CesiumMan.vrm";
  ASSERT_EQ(std::system(("gltfpack -i " + cesium + " -o " + packed + " -cc >/dev/null 2>&1").c_str()), 0);
  {
    const testing::GlbChunks chunks = testing::SplitGlb(testing::FileBytes(cesium));
    nlohmann::json doc = nlohmann::json::parse(chunks.json);
    doc["images"][0]["bufferView"] = doc["accessors"][0]["bufferView"];
    std::ofstream(shared, std::ios::binary) << testing::JoinGlb(doc.dump(), chunks.rest);
  }
  {
    // An avatar as VRoid Studio and UniVRM write them: a .vrm is a glTF binary with VRM 1.0's
    // extensions (the humanoid's bones, spring bones, MToon materials), which the reader ignores.
    const testing::GlbChunks chunks = testing::SplitGlb(testing::FileBytes(cesium));
    nlohmann::json doc = nlohmann::json::parse(chunks.json);
    const int hips = doc["skins"][0]["joints"][0].get<int>(), spine = doc["skins"][0]["joints"][1].get<int>();
    for (const char* e : {"VRMC_vrm", "VRMC_springBone", "VRMC_materials_mtoon"}) doc["extensionsUsed"].push_back(e);
    doc["extensions"]["VRMC_vrm"] = {
        {"specVersion", "1.0"},
        {"meta", {{"name", "CesiumMan"}, {"authors", {"Cesium"}}, {"licenseUrl", "https://vrm.dev/licenses/1.0/"}}},
        {"humanoid", {{"humanBones", {{"hips", {{"node", hips}}}, {"spine", {{"node", spine}}}}}}}};
    doc["extensions"]["VRMC_springBone"] = {
        {"specVersion", "1.0"}, {"springs", {{{"joints", {{{"node", spine}, {"stiffness", 1.0}}}}}}}};
    doc["materials"][0]["extensions"]["VRMC_materials_mtoon"] = {{"specVersion", "1.0"},
                                                                 {"shadeColorFactor", {1, 1, 1}}};
    std::ofstream(vrm, std::ios::binary) << testing::JoinGlb(doc.dump(), chunks.rest);
  }
  std::unique_ptr<ServerProcess> server = ViewerServer();
  nlohmann::json r;
  ASSERT_NO_FATAL_FAILURE(RunViewerScript(*server, "viewer_images.mjs", ArtifactsDir("viewer-images"), &r,
                                          {"--glbs=" + cesium + "," + packed + "," + shared + "," + vrm}));
  EXPECT_EQ(r["steps"], nlohmann::json({"registered"}));
  ASSERT_EQ(r["files"].size(), 4u);
  ClientOptions o;
  o.target = server->address();
  Client client(o);
  const std::vector<std::string> files = {cesium, packed, shared, vrm};
  for (size_t f = 0; f < files.size(); ++f) {
    SCOPED_TRACE(files[f]);
    const std::string bytes = testing::FileBytes(files[f]);
    const nlohmann::json doc = nlohmann::json::parse(testing::SplitGlb(bytes).json);
    ASSERT_EQ(doc["images"].size(), 1u);
    const int64_t image = doc["bufferViews"][doc["images"][0]["bufferView"].get<int>()]["byteLength"].get<int64_t>();
    const int64_t sent = r["files"][f]["uploadBytes"].get<int64_t>();
    if (files[f] == shared) {
      EXPECT_GE(sent, static_cast<int64_t>(bytes.size()) - 1024) << "the mesh's view was cut";
    } else {
      EXPECT_GT(image, 200000);
      EXPECT_LE(sent, static_cast<int64_t>(bytes.size()) - image + 1024) << "the image was sent";
    }
    auto want = client.CreateRigFromGltf(bytes, std::filesystem::path(files[f]).stem().string());
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_EQ(r["files"][f]["rig"].get<std::string>(), want->rig().name());
    EXPECT_FALSE(want->created()) << "the page stored the same rig";
  }
  // The avatar is CesiumMan: the same rig.
  EXPECT_EQ(r["files"][3]["rig"], r["files"][0]["rig"]);
  EXPECT_EQ(server->Stop(SIGTERM), 0);
}

// tests/web/viewer_download.mjs: the rig saved from the page as a skinned .glb, with its own
// weights, then after a bone heat bake with the bake's; then a character of three mesh parts,
// CesiumMan with two morph targets, and a stored rig of dense weights. Each file, registered again,
// is that character: those saved with their own sparse weights are the same rigs (the same
// content address: mesh and its parts, morph targets, skeleton and weights to the bit), and
// CesiumMan's animations (that of the copy with morph targets with its target weights) come back
// as the clips the page had; the baked one carries the bake's
// top-4 weights exactly and poses, with them, as the rig poses with the bake; the dense one poses
// as the dense rig (LBS, a frame of the animation, within 1e-5).
TEST(ViewerBrowserTest, TheRigSavedAsGlbIsTheRigWithItsOwnOrTheBakesWeights) {
  SKINNING_REQUIRE_TOOL(MissingTool());
  std::unique_ptr<ServerProcess> server = ViewerServer();
  const std::string out = ArtifactsDir("viewer-download");
  const std::string sample = std::string(SKINNING_SOURCE_DIR) + "/samples/CesiumMan/CesiumMan.glb";
  const std::string dir = MakeTempDir("download");
  const std::string multi = testing::WriteMultiSkinGltf(testing::MultiSkinGltf(), dir + "/multi.gltf");
  const std::string morph = dir + "/CesiumManMorph.glb";
  ASSERT_TRUE(testing::WriteWithMorphTargets(sample, morph).ok());
  ClientOptions o;
  o.target = server->address();
  Client client(o);
  // The sample's rig with its weights as dense values, stored as a rig of its own.
  auto clip = client.CreateRigFromGltf(testing::FileBytes(sample), "CesiumMan");  // the page's name for it
  ASSERT_TRUE(clip.ok()) << clip.status();
  ASSERT_FALSE(clip->animations().empty());
  auto sample_rig = client.GetRig(clip->rig().name(), v1::RIG_VIEW_FULL);
  ASSERT_TRUE(sample_rig.ok()) << sample_rig.status();
  v1::Rig dense_proto = *sample_rig;
  dense_proto.clear_name();
  dense_proto.set_display_name("dense");
  {
    const v1::SparseWeights sparse = sample_rig->weights().sparse();
    const int nj = sample_rig->skeleton().joints_size(), k = sparse.influence_count();
    const int nv = sparse.joints_size() / k;
    v1::DenseWeights* d = dense_proto.mutable_weights()->mutable_dense();
    d->set_joint_count(nj);
    for (int i = 0; i < nv * nj; ++i) d->add_values(0.0);
    for (int i = 0; i < nv * k; ++i) {
      const int at = (i / k) * nj + sparse.joints(i);
      d->set_values(at, d->values(at) + sparse.weights(i));
    }
  }
  auto dense = client.CreateRig(dense_proto);
  ASSERT_TRUE(dense.ok()) << dense.status();

  nlohmann::json r;
  ASSERT_NO_FATAL_FAILURE(RunViewerScript(*server, "viewer_download.mjs", out, &r,
                                          {"--more=" + multi + "," + morph, "--dense=" + dense->rig().name()}));
  EXPECT_EQ(r["steps"], nlohmann::json({"registered", "saved its own weights", "saved the bake's weights",
                                        "saved the others", "saved the rig of dense weights"}));
  EXPECT_EQ(r["own"]["suggested"], "CesiumMan.glb");
  const std::string bake = r["bakeName"].get<std::string>();
  EXPECT_EQ(r["baked"]["suggested"].get<std::string>(), "CesiumMan-" + bake.substr(bake.rfind('/') + 1) + ".glb");
  const std::vector<std::string> saved_files = {out + "/own.glb", out + "/baked.glb", out + "/more-0.glb",
                                                out + "/more-1.glb", out + "/dense.glb"};
  // Files the spec's validator passes.
  SKINNING_EXPECT_VALID_GLTF(saved_files);

  // Saved with their own sparse weights: the same rigs.
  const std::vector<std::pair<std::string, std::string>> same = {{out + "/own.glb", r["rig"].get<std::string>()},
                                                                  {out + "/more-0.glb", r["more"][0]["rig"]},
                                                                  {out + "/more-1.glb", r["more"][1]["rig"]}};
  for (const auto& [file, rig] : same) {
    SCOPED_TRACE(file);
    auto again = client.CreateRigFromGltf(testing::FileBytes(file));
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->rig().name(), rig);
    EXPECT_FALSE(again->created()) << "not the rig the page saved";
  }
  // CesiumMan's animation, saved from the clip the page had, reads back as that clip: every frame's
  // joint transforms within 1e-5; so does CesiumMan's with morph targets, with its frames' target
  // weights.
  for (const auto& [file, source] : {std::pair{out + "/own.glb", sample}, std::pair{out + "/more-1.glb", morph}}) {
    SCOPED_TRACE(file);
    auto want = client.CreateRigFromGltf(testing::FileBytes(source));
    auto again = client.CreateRigFromGltf(testing::FileBytes(file));
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_TRUE(again.ok()) << again.status();
    ASSERT_EQ(again->animations_size(), want->animations_size());
    const v1::AnimationClip &want_clip = want->animations(0), &got_clip = again->animations(0);
    ASSERT_EQ(got_clip.poses_size(), want_clip.poses_size());
    EXPECT_LT(testing::ClipDifference(got_clip, want_clip), 1e-5)
        << "largest difference of a joint transform's component or a target weight";
    EXPECT_EQ(want_clip.poses(0).morph_weights_size(), file == out + "/own.glb" ? 0 : 2);
  }
  auto parts = client.GetRig(r["more"][0]["rig"].get<std::string>(), v1::RIG_VIEW_FULL);
  auto morphs = client.GetRig(r["more"][1]["rig"].get<std::string>(), v1::RIG_VIEW_FULL);
  ASSERT_TRUE(parts.ok() && morphs.ok());
  EXPECT_EQ(parts->mesh().parts_size(), 3);
  EXPECT_EQ(morphs->morph_targets_size(), 2);

  // The bake's weights, exactly.
  const std::string rig = r["rig"].get<std::string>();
  auto baked = client.CreateRigFromGltf(testing::FileBytes(out + "/baked.glb"));
  ASSERT_TRUE(baked.ok()) << baked.status();
  auto saved = client.GetRig(baked->rig().name(), v1::RIG_VIEW_FULL);
  auto weights = client.GetWeights(bake);
  ASSERT_TRUE(saved.ok()) << saved.status();
  ASSERT_TRUE(weights.ok()) << weights.status();
  const v1::SparseWeights& want = weights->weights().sparse();
  const v1::SparseWeights& got = saved->weights().sparse();
  ASSERT_EQ(got.influence_count(), want.influence_count());
  ASSERT_EQ(got.joints_size(), want.joints_size());
  int differ = 0;
  for (int i = 0; i < want.joints_size(); ++i)
    if (want.weights(i) != got.weights(i) || (want.weights(i) != 0 && want.joints(i) != got.joints(i))) ++differ;
  EXPECT_EQ(differ, 0) << "of " << want.joints_size() << " influences";

  // Posed with LBS at a frame of the animation: each saved rig with its weights against the rig it
  // was saved from (with the bake for the baked one).
  const v1::Pose& pose = clip->animations(0).poses(clip->animations(0).poses_size() / 2);
  auto dense_again = client.CreateRigFromGltf(testing::FileBytes(out + "/dense.glb"));
  ASSERT_TRUE(dense_again.ok()) << dense_again.status();
  struct Pair {
    std::string original, bake, saved;
  };
  for (const Pair& p :
       {Pair{rig, bake, baked->rig().name()}, Pair{dense->rig().name(), "", dense_again->rig().name()}}) {
    SCOPED_TRACE(p.saved);
    v1::PoseRequest a;
    a.set_rig(p.original);
    a.set_bake(p.bake);
    *a.mutable_pose() = pose;
    a.mutable_outputs()->set_vertices(true);
    v1::PoseRequest b = a;
    b.set_rig(p.saved);
    b.clear_bake();
    auto posed_a = client.Pose(a), posed_b = client.Pose(b);
    ASSERT_TRUE(posed_a.ok()) << posed_a.status();
    ASSERT_TRUE(posed_b.ok()) << posed_b.status();
    ASSERT_EQ(posed_a->vertices_size(), posed_b->vertices_size());
    EXPECT_LT(LargestDifference(posed_a->vertices(), posed_b->vertices()), 1e-5) << "largest coordinate difference";
  }
  EXPECT_EQ(server->Stop(SIGTERM), 0);
}

// A JSON array of numbers (vertices a page received) as floats.
google::protobuf::RepeatedField<float> Floats(const nlohmann::json& values) {
  google::protobuf::RepeatedField<float> floats;
  for (const auto& v : values) floats.Add(static_cast<float>(v.get<double>()));
  return floats;
}

// tests/web/viewer_shapes.mjs: CesiumMan with two morph targets ("bulge", default 0.5, and
// "lean", default 0). The Shapes list names them, its slider at bulge's default. Lean's slider at
// 0.75 poses the rest pose with weights (0.5, 0.75): what the page shows is, within 1e-5 of the
// diagonal, the rest pose without targets plus 0.5 × what bulge alone changes plus 0.75 × what lean
// alone does (gRPC's Poses of each, combined here). A joint slider then keeps those weights: the frame is
// gRPC's Pose of the same request, float for float, and is not that pose without them. "Bind pose"
// sends no weights (the defaults) and puts lean's slider back at 0; the sample without targets
// hides the Shapes controls.
TEST(ViewerBrowserTest, AShapesSliderMorphsTheMeshAndTheBindPoseResetsIt) {
  SKINNING_REQUIRE_TOOL(MissingTool());
  std::unique_ptr<ServerProcess> server = ViewerServer();
  const std::string out = ArtifactsDir("viewer-shapes");
  const std::string sample = std::string(SKINNING_SOURCE_DIR) + "/samples/CesiumMan/CesiumMan.glb";
  const std::string morph = MakeTempDir("shapes") + "/CesiumManMorph.glb";
  ASSERT_TRUE(testing::WriteWithMorphTargets(sample, morph).ok());
  nlohmann::json r;
  ASSERT_NO_FATAL_FAILURE(RunViewerScript(*server, "viewer_shapes.mjs", out, &r, {"--morph=" + morph}));
  EXPECT_EQ(r["steps"], nlohmann::json({"registered", "shaped", "bent", "bind pose", "a rig without shapes"}));
  EXPECT_TRUE(r["errors"].empty()) << r["errors"].dump();
  EXPECT_THAT(r["status"].get<std::string>(), ::testing::HasSubstr(", 2 shape(s)"));
  EXPECT_EQ(r["opened"], nlohmann::json({{"hidden", false}, {"names", {"bulge", "lean"}}, {"weight", 0.5}}));
  EXPECT_EQ(r["chosen"]["weight"], 0.0);

  ClientOptions o;
  o.target = server->address();
  Client client(o);
  const std::string rig_name = r["rig"].get<std::string>();
  auto rig = client.GetRig(rig_name, v1::RIG_VIEW_FULL);
  ASSERT_TRUE(rig.ok()) << rig.status();
  ASSERT_EQ(rig->morph_targets_size(), 2);
  ASSERT_TRUE(r["diag"].is_number());
  const double diag = r["diag"].get<double>();
  ASSERT_GT(diag, 0);

  // The shaped rest pose against the morphed mesh.
  v1::PoseSessionRequest shaped;
  using google::protobuf::util::JsonStringToMessage;
  ASSERT_TRUE(JsonStringToMessage(r["shaped"]["request"].get<std::string>(), &shaped).ok());
  EXPECT_EQ(shaped.rig(), rig_name);
  EXPECT_THAT(shaped.pose().morph_weights(), ::testing::ElementsAre(0.5f, 0.75f));
  // The joints of the page's manual pose (each at its node's rest transform). LBS is affine in the
  // rest geometry: posed with weights (0.5, 0.75) is posed with (0, 0) plus 0.5 × the change that
  // (1, 0) makes plus 0.75 × that of (0, 1).
  auto bind_posed = [&](float b, float l) {
    v1::PoseRequest request;
    request.set_rig(rig_name);
    *request.mutable_pose()->mutable_joints() = shaped.pose().joints();
    request.mutable_pose()->add_morph_weights(b);
    request.mutable_pose()->add_morph_weights(l);
    request.mutable_outputs()->set_vertices(true);
    auto posed = client.Pose(request);
    EXPECT_TRUE(posed.ok()) << posed.status();
    return posed.ok() ? posed->vertices() : google::protobuf::RepeatedField<float>();
  };
  const auto none = bind_posed(0, 0), bulge = bind_posed(1, 0), lean = bind_posed(0, 1);
  ASSERT_EQ(none.size(), rig->vertex_count() * 3);
  google::protobuf::RepeatedField<float> morphed;
  for (int i = 0; i < none.size(); ++i)
    morphed.Add(none[i] + 0.5f * (bulge[i] - none[i]) + 0.75f * (lean[i] - none[i]));
  const google::protobuf::RepeatedField<float> shaped_vertices = Floats(r["shaped"]["vertices"]);
  EXPECT_LT(LargestDifference(shaped_vertices, morphed), 1e-5 * diag);
  EXPECT_GT(LargestDifference(shaped_vertices, bind_posed(0.5f, 0)), 0.02 * diag) << "lean moved no vertex";

  // The bent frame: gRPC's, and morphed.
  v1::PoseSessionRequest bent;
  ASSERT_TRUE(JsonStringToMessage(r["bent"]["request"].get<std::string>(), &bent).ok());
  EXPECT_THAT(bent.pose().morph_weights(), ::testing::ElementsAre(0.5f, 0.75f));
  v1::PoseRequest request;
  request.set_rig(rig_name);
  *request.mutable_pose() = bent.pose();
  request.set_deformer(bent.deformer());
  *request.mutable_outputs() = bent.outputs();
  auto want = client.Pose(request);
  request.mutable_pose()->clear_morph_weights();
  auto unshaped = client.Pose(request);
  ASSERT_TRUE(want.ok() && unshaped.ok()) << want.status() << unshaped.status();
  const google::protobuf::RepeatedField<float> bent_vertices = Floats(r["bent"]["vertices"]);
  EXPECT_EQ(LargestDifference(bent_vertices, want->vertices()), 0);
  EXPECT_GT(LargestDifference(bent_vertices, unshaped->vertices()), 0.02 * diag) << "posed without the shapes";
  EXPECT_GT(LargestDifference(bent_vertices, shaped_vertices), 0.02 * diag) << "the joint slider moved nothing";

  // The bind pose: no weights sent, lean's slider at its default again.
  v1::PoseRequest rest;
  ASSERT_TRUE(JsonStringToMessage(r["rest"]["request"].get<std::string>(), &rest).ok());
  EXPECT_EQ(rest.pose().morph_weights_size(), 0);
  EXPECT_EQ(r["afterRest"]["weight"], 0.0);
  EXPECT_EQ(r["without"]["hidden"], true);
  EXPECT_EQ(server->Stop(SIGTERM), 0);
}

// tests/web/viewer_listed.mjs: rigs registered by a client, opened from the page's list. A rig
// sent without animations has none to play; CesiumMan, registered from its file, comes with its
// clip (the one CreateRig answered, stored with it), which plays. Before, a rig opened from the
// list never had an animation. "Delete this rig" then removes CesiumMan, once confirmed.
TEST(ViewerBrowserTest, ARigOpenedFromTheListPlaysItsStoredAnimationsAndCanBeDeleted) {
  SKINNING_REQUIRE_TOOL(MissingTool());
  std::unique_ptr<ServerProcess> server = ViewerServer();
  ClientOptions o;
  o.target = server->address();
  Client client(o);
  const std::string sample = std::string(SKINNING_SOURCE_DIR) + "/samples/CesiumMan/CesiumMan.glb";
  auto cesium = client.CreateRigFromGltf(testing::FileBytes(sample));
  ASSERT_TRUE(cesium.ok()) << cesium.status();
  ASSERT_EQ(cesium->animations_size(), 1);
  auto tube = client.CreateRig(RigToProto(testing::MakeTwoBoneTube(5, 6)));
  ASSERT_TRUE(tube.ok()) << tube.status();
  const std::string out = ArtifactsDir("viewer-listed");
  nlohmann::json r;
  ASSERT_NO_FATAL_FAILURE(RunViewerScript(*server, "viewer_listed.mjs", out, &r,
                                          {"--rigs=" + tube->rig().name() + "," + cesium->rig().name()}));
  EXPECT_TRUE(r["errors"].empty()) << r["errors"].dump();
  ASSERT_EQ(r["opened"].size(), 2u);
  const auto &plain = r["opened"][0], &walker = r["opened"][1];
  EXPECT_EQ(plain["rig"], tube->rig().name());
  EXPECT_TRUE(plain["animations"].empty());
  EXPECT_EQ(plain["playDisabled"], true);
  EXPECT_EQ(walker["rig"], cesium->rig().name());
  const v1::AnimationClip& clip = cesium->animations(0);
  EXPECT_EQ(walker["animations"], nlohmann::json({absl::StrCat(clip.name(), " (", clip.poses_size(), " frames)")}));
  EXPECT_EQ(walker["playDisabled"], false);
  EXPECT_GT(walker["frame"].get<int>(), 3) << "it did not play";
  // Deleting it: the dismissed question changed nothing; once confirmed the rig is gone from the
  // list and the server, with its stored clips, and the view is empty.
  const std::string name = cesium->rig().name();
  const std::string label = cesium->rig().display_name();
  EXPECT_THAT(r["dialog"].get<std::string>(), ::testing::HasSubstr("Delete " + label + " from the server"));
  EXPECT_THAT(r["afterDismiss"], ::testing::Contains(name));
  EXPECT_EQ(r["afterDelete"]["deleted"], name);
  EXPECT_EQ(r["afterDelete"]["rigs"], nlohmann::json({tube->rig().name()}));
  EXPECT_EQ(r["afterDelete"]["animations"], 0);
  EXPECT_EQ(r["afterDelete"]["deleteDisabled"], true);
  EXPECT_EQ(r["afterDelete"]["status"], "Deleted " + label + ".");
  EXPECT_EQ(client.GetRig(name).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client.GetAnimations(name).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(server->Stop(SIGTERM), 0);
}

// tests/web/viewer_phone.mjs: the page on a 390 × 844 touch screen, used with a finger.
TEST(ViewerBrowserTest, OnAPhoneTheViewSpansTheScreenAndAFingerBesideAHandleDragsIt) {
  SKINNING_REQUIRE_TOOL(MissingTool());
  std::unique_ptr<ServerProcess> server = ViewerServer();
  const std::string out = ArtifactsDir("viewer-phone");
  nlohmann::json r;
  ASSERT_NO_FATAL_FAILURE(RunViewerScript(*server, "viewer_phone.mjs", out, &r));
  EXPECT_EQ(r["steps"], nlohmann::json({"registered", "laid out", "fast", "dragged", "cancelled", "orbited"}));

  // The view spans the screen's width and most of its height, and nothing is wider than the
  // screen (no sideways scrolling); it is still there after the page scrolled to the FAST button.
  const double width = r["viewport"]["width"].get<double>(), height = r["viewport"]["height"].get<double>();
  for (const char* when : {"view", "viewAfterScroll"}) {
    SCOPED_TRACE(when);
    const auto& view = r[when];
    EXPECT_NEAR(view["x"].get<double>(), 0.0, 1.0);
    EXPECT_GE(view["width"].get<double>(), width - 1.0);
    EXPECT_GE(view["height"].get<double>(), 0.45 * height);
    EXPECT_NEAR(view["y"].get<double>(), 0.0, 1.0);
  }
  EXPECT_LE(r["scrollWidth"].get<double>(), width);
  // Drawn at the phone's 2 device pixels per CSS pixel, not blurred up from 1.
  ASSERT_EQ(r["devicePixelRatio"].get<double>(), 2.0);
  EXPECT_EQ(r["buffer"], nlohmann::json({2 * r["viewCss"][0].get<int>(), 2 * r["viewCss"][1].get<int>()}));

  // The finger landed beside the handle's sphere, not on it, and dragged that handle: the FAST
  // answer puts it where the finger went, and the camera did not turn meanwhile.
  EXPECT_GT(r["dragged"]["offsetPx"].get<double>(), r["dragged"]["r"].get<double>());
  ExpectDraggedHandleFollowed(r);
  EXPECT_EQ(r["fast"]["joint"], r["dragged"]["joint"]);
  EXPECT_EQ(r["cameraDuringDrag"][0], r["cameraDuringDrag"][1]);
  // A finger far from the handles turns the camera instead, also after a drag that the browser
  // cancelled (which used to leave the camera controls off).
  EXPECT_GT(r["farFromHandles"].get<double>(), 40.0);
  EXPECT_NE(r["cameraAfterOrbit"], r["cameraBeforeOrbit"]);
  EXPECT_TRUE(std::filesystem::exists(out + "/1-phone.png"));
  EXPECT_EQ(server->Stop(SIGTERM), 0);
}

// Waits up to `seconds` for `path` to exist; whether it does.
bool WaitForFile(const std::string& path, int seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!std::filesystem::exists(path)) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

// Runs tests/web/`script` (a restart script: viewer_restart.mjs, viewer_bake_restart.mjs) on the
// page at `http`, into build/test-artifacts/`artifacts`. The two sides meet through files there:
// the script writes `ready` once the page is where its server should go away; then `stop` runs,
// OUT/down tells the script, which acts while nothing listens and writes OUT/moved; then `start`
// brings a server back. *result: the script's result.json, whose steps must be `steps`, with no
// failure and no page or console error. `extra_args` go to the script too.
void RunAcrossARestart(const std::string& script, int http, const std::string& artifacts, const std::string& ready,
                       const std::function<void()>& stop, const std::function<void()>& start,
                       const nlohmann::json& steps, nlohmann::json* result,
                       const std::vector<std::string>& extra_args = {}) {
  const std::string out = ArtifactsDir(artifacts);
  const std::vector<std::string> command = ViewerScriptCommand(script, http, out, extra_args);
  auto run = std::async(std::launch::async, [&] { return RunCommand(command); });
  const bool at_ready = WaitForFile(out + "/" + ready, 120);
  EXPECT_TRUE(at_ready) << "the page never wrote " << ready;
  if (at_ready) {
    stop();
    std::ofstream(out + "/down").flush();
    EXPECT_TRUE(WaitForFile(out + "/moved", 60)) << "the page did not act while the server was away";
    start();
  }
  ASSERT_NO_FATAL_FAILURE(ReadViewerResult(run.get(), out, result));
  EXPECT_EQ((*result)["steps"], steps);
}

// A rolling update seen from a browser: the server posing the page's joint slider and solving
// its FAST handles drains (closing both sessions with 4014), the user moves the slider while
// nothing listens, and a server comes back on the same address and store. The page opens the
// sessions again and sends that pose on its own, with no error shown. It used to show "closed by
// the server (14)" as an error at the drain, drop the pose asked for meanwhile (the next slider
// move opened a session) and leave FAST closed until the user started it again.
TEST(ViewerBrowserTest, APoseSessionOutlivesAServerRestart) {
  SKINNING_REQUIRE_TOOL(MissingTool());
  const std::string src = SKINNING_SOURCE_DIR;
  const std::string store = MakeTempDir("store");
  auto server = std::make_unique<ServerProcess>(
      store, std::vector<std::string>{"--http_address=127.0.0.1:0", "--web_dir=" + src + "/web"});
  const int http = server->http_port();
  ASSERT_GT(http, 0) << server->Output();
  nlohmann::json r;
  ASSERT_NO_FATAL_FAILURE(RunAcrossARestart(
      "viewer_restart.mjs", http, "viewer-restart", "posed",
      [&] { EXPECT_EQ(server->Stop(SIGTERM), 0) << server->Output(); },
      [&] {
        server = std::make_unique<ServerProcess>(
            store, std::vector<std::string>{"--http_address=127.0.0.1:" + std::to_string(http), "--web_dir=" + src + "/web"});
        ASSERT_EQ(server->http_port(), http) << server->Output();
      },
      {"registered", "posed", "moved", "resent"}, &r));
  EXPECT_GT(r["framesAfter"].get<int>(), r["framesBefore"].get<int>()) << "the pose asked for while away never came";
  EXPECT_GT(r["fastFramesBefore"].get<int>(), 0) << "the FAST session never answered";
  EXPECT_GT(r["fastFramesAfter"].get<int>(), r["fastFramesBefore"].get<int>()) << "the FAST session was not opened again";
  EXPECT_EQ(r["statusWhileDown"], "The server went away; reconnecting…");
  EXPECT_EQ(r["status"], "Connected to the server again.");
  EXPECT_EQ(server->Stop(SIGTERM), 0);
}

// A rolling update of the replica a browser talks to, in a deployment with a shared store (an api
// replica and bake workers on Redis, as deploy/'s prod overlay runs them): the page watches a
// bake it started (queued: no worker runs yet) when the replica drains and is gone, and the user
// switches to DQS meanwhile (a unary Pose). The replica comes back on the same address and a
// worker starts: the page's watch sees the bake done and the pose arrives, with no error shown.
// The viewer used to fail both at once: "Baking bbw: The server is not reachable or is
// restarting; try again" and the same for the pose, although the bake went on.
TEST(ViewerBrowserTest, ABakeWatchAndACallOutliveARestartOfTheirReplica) {
  SKINNING_REQUIRE_TOOL(MissingTool());
  const std::string src = SKINNING_SOURCE_DIR;
  RedisProcess redis;
  const std::vector<std::string> api_flags = {"--redis=" + redis.address(), "--role=api", "--web_dir=" + src + "/web"};
  auto api_with = [&](const std::string& http) {
    std::vector<std::string> flags = api_flags;
    flags.push_back("--http_address=127.0.0.1:" + http);
    return flags;
  };
  auto api = std::make_unique<ServerProcess>(MakeTempDir("api"), api_with("0"));
  const int http = api->http_port();
  ASSERT_GT(http, 0) << api->Output();
  std::unique_ptr<ServerProcess> worker;
  nlohmann::json r;
  ASSERT_NO_FATAL_FAILURE(RunAcrossARestart(
      "viewer_bake_restart.mjs", http, "viewer-bake-restart", "queued",
      [&] { EXPECT_EQ(api->Stop(SIGTERM), 0) << api->Output(); },
      [&] {
        api = std::make_unique<ServerProcess>(MakeTempDir("api"), api_with(std::to_string(http)));
        ASSERT_EQ(api->http_port(), http) << api->Output();
        worker = std::make_unique<ServerProcess>(
            MakeTempDir("worker"), std::vector<std::string>{"--redis=" + redis.address(), "--role=worker"});
      },
      {"registered", "queued", "moved", "done"}, &r));
  ASSERT_TRUE(worker) << "no restart";
  EXPECT_EQ(r["statusQueued"], "Baking bbw: queued 0 %");
  EXPECT_EQ(r["statusWhileDown"], "The server went away; reconnecting…");
  EXPECT_EQ(r["posesWhileDown"], 0) << "a pose arrived with no server";
  // The pose asked for while away (DQS), then the one after the bake (DQS with its weights).
  EXPECT_EQ(r["poses"], 2);
  ASSERT_TRUE(r["bakeName"].is_string());
  const std::string bake = r["bakeName"].get<std::string>();
  v1::PoseRequest last;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r["lastPose"]["request"].get<std::string>(), &last).ok());
  EXPECT_EQ(last.deformer(), v1::DEFORMER_DQS);
  EXPECT_EQ(last.bake(), bake);
  EXPECT_EQ(r["status"], "Posed with DQS and " + bake.substr(bake.rfind('/') + 1) + ".");
  // The bake the page saw done is stored, done by the worker.
  ClientOptions o;
  o.target = api->address();
  Client client(o);
  auto done = client.GetBake(bake);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->metadata().state(), v1::BAKE_STATE_SUCCEEDED) << done->error().message();
  EXPECT_EQ(worker->Stop(SIGTERM), 0);
  EXPECT_EQ(api->Stop(SIGTERM), 0);
}

// A Redis outage under a browser: while its server's store is out, the page opens a pose session
// (a joint slider; the server keeps no rig in memory) and registers a .glb. The server closes the
// session with 4014 and refuses the upload UNAVAILABLE, both naming the store; the page says so
// ("The server is unavailable (…); retrying…"), tries again with backoff and opens the rig once
// Redis is back on the same port (with its data: append-only file). The viewer used to fail the
// upload at once ("The server is not reachable or is restarting; try again"), and a retrying page
// that said "The server went away" would have blamed the wrong part.
TEST(ViewerBrowserTest, ARigRegisteredDuringAStoreOutageIsSentAgainUntilTheStoreIsBack) {
  SKINNING_REQUIRE_TOOL(MissingTool());
  const std::string second = ::skinning::testing::DataPath("gltf/RiggedFigure/RiggedFigure.glb");
  SKINNING_REQUIRE_DATA(second);
  const std::string src = SKINNING_SOURCE_DIR;
  RedisProcess redis(/*persistent=*/true);
  ServerProcess server(MakeTempDir("store"), {"--redis=" + redis.address(), "--http_address=127.0.0.1:0",
                                              "--web_dir=" + src + "/web", "--cache_mb=0"});
  const int http = server.http_port();
  ASSERT_GT(http, 0) << server.Output();
  nlohmann::json r;
  ASSERT_NO_FATAL_FAILURE(RunAcrossARestart(
      "viewer_store_outage.mjs", http, "viewer-store-outage", "ready", [&] { EXPECT_EQ(redis.Stop(SIGTERM), 0); },
      [&] { redis.Restart(); }, {"registered", "moved", "opened"}, &r, {"--glb2=" + second}));
  for (const char* when : {"sessionStatusWhileDown", "statusWhileDown"}) {
    const std::string status = r[when].get<std::string>();
    EXPECT_THAT(status, ::testing::StartsWith("The server is unavailable (")) << when << ": " << status;
    EXPECT_THAT(status, ::testing::HasSubstr("edis")) << when << ": the store is not named: " << status;
    EXPECT_THAT(status, ::testing::EndsWith("); retrying…")) << when << ": " << status;
  }
  EXPECT_EQ(r["sessionFramesWhileDown"], 0) << "a session frame was posed with no store";
  EXPECT_EQ(r["registeredWhileDown"], r["firstRig"]) << "a rig was registered with no store";
  ASSERT_TRUE(r["secondRig"].is_string());
  EXPECT_NE(r["secondRig"], r["firstRig"]);
  // The rig the page opened is stored.
  ClientOptions o;
  o.target = server.address();
  Client client(o);
  auto rig = client.GetRig(r["secondRig"].get<std::string>());
  ASSERT_TRUE(rig.ok()) << rig.status();
  EXPECT_EQ(rig->joint_count(), 21) << "RiggedFigure: 19 skin joints and their ancestors Z_UP and Armature";
  EXPECT_THAT(rig->joint_names(), ::testing::Contains("neck_joint_2"));
  EXPECT_EQ(server.Stop(SIGTERM), 0);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
