#include "core/io/gltf.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <tiny_gltf.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/io/dmat.h"
#include "core/io/gltf_json_scan.h"
#include "core/io/gltf_patch.h"
#include "core/rig/pose.h"
#include "core/rig/transform.h"
#include "tests/support/base64.h"
#include "tests/support/data.h"
#include "tests/support/glb.h"
#include "tests/support/gltf_validator.h"
#include "tests/support/morph_gltf.h"
#include "tests/support/tinygltf_load.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::Base64;
using ::skinning::testing::DataPath;
using ::testing::HasSubstr;

constexpr double kPi = 3.14159265358979323846;

// ---------------------------------------------------------------------------------------------
// Test utilities.

// A fresh directory for one test's files.
std::string TempDir() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      absl::StrFormat("gltf_test_%d_%s_%s", getpid(), info->test_suite_name(), info->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::vector<unsigned char> ReadBytes(const std::string& path) {
  const std::string bytes = testing::FileBytes(path);
  return std::vector<unsigned char>(bytes.begin(), bytes.end());
}

void WriteBytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// A minimal skinned glTF written by hand: one joint node ("bone", node 0), a mesh node (node 1)
// with skin 0, one animation channel on the bone. Accessor indices are fixed: 0 POSITION,
// 1 JOINTS_0, 2 WEIGHTS_0, 3 animation input, 4 animation output, 5 indices (when given).
// Buffer views are one per accessor in the same order.
struct HandMade {
  std::vector<float> positions = {0, 0, 0, 1, 0, 0, 0, 1, 0};
  std::vector<uint16_t> joints = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  std::vector<float> weights = {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0};
  std::vector<uint16_t> indices;  // empty: a non-indexed primitive
  int mode = 4;
  std::string path = "translation";
  std::string interpolation = "LINEAR";
  std::vector<float> times = {0, 1};
  std::vector<float> values = {0, 0, 0, 1, 1, 1};
  std::string bone_transform;  // extra JSON members of the bone node, e.g. "\"scale\":[1,2,3]"
  int position_count = -1;     // accessor count override (-1: from the data)
  int output_count = -1;
  int view0_length_extra = 0;  // added to bufferViews[0].byteLength
  // Extra JSON, for features the reader refuses: members of the top-level object (e.g.
  // "extensionsRequired"), of the primitive (e.g. "targets"), of accessor 0 (e.g. "sparse"),
  // and nodes / skins appended after the two built-in ones; the scenes array.
  std::string top_level;
  std::string primitive_extra;
  std::string accessor0_extra;
  std::string extra_nodes;
  std::string extra_skins;
  std::string extra_primitives;  // primitives of mesh 0 after the built-in one
  std::string scenes = R"([{"nodes":[0,1]}])";
  int default_scene = 0;  // the file's "scene" (−1: none)
  int channel_node = 0;  // the node the animation channel moves
  std::string extra_channels;  // channels of animation 0 after the built-in one
};

std::string WriteHandMade(const HandMade& h, const std::string& file) {
  std::string buffer;
  std::vector<std::string> views, accessors;
  auto add = [&](const void* data, size_t bytes, int component_type, const char* type, size_t count,
                 int extra_length) {
    while (buffer.size() % 4) buffer.push_back('\0');
    views.push_back(absl::StrFormat(R"({"buffer":0,"byteOffset":%d,"byteLength":%d})",
                                    buffer.size(), bytes + extra_length));
    buffer.append(static_cast<const char*>(data), bytes);
    const std::string extra =
        accessors.empty() && !h.accessor0_extra.empty() ? "," + h.accessor0_extra : "";
    accessors.push_back(absl::StrFormat(R"({"bufferView":%d,"componentType":%d,"count":%d,)"
                                        R"("type":"%s"%s})",
                                        views.size() - 1, component_type, count, type, extra));
  };
  const size_t nv = h.positions.size() / 3;
  add(h.positions.data(), h.positions.size() * 4, 5126, "VEC3",
      h.position_count >= 0 ? h.position_count : nv, h.view0_length_extra);
  add(h.joints.data(), h.joints.size() * 2, 5123, "VEC4", h.joints.size() / 4, 0);
  add(h.weights.data(), h.weights.size() * 4, 5126, "VEC4", h.weights.size() / 4, 0);
  add(h.times.data(), h.times.size() * 4, 5126, "SCALAR", h.times.size(), 0);
  const int width = h.path == "rotation" ? 4 : 3;
  add(h.values.data(), h.values.size() * 4, 5126, width == 4 ? "VEC4" : "VEC3",
      h.output_count >= 0 ? h.output_count : h.values.size() / width, 0);
  std::string indices_member;
  if (!h.indices.empty()) {
    add(h.indices.data(), h.indices.size() * 2, 5123, "SCALAR", h.indices.size(), 0);
    indices_member = ",\"indices\":5";
  }
  while (buffer.size() % 4) buffer.push_back('\0');
  const std::string json = absl::StrFormat(
      R"({"asset":{"version":"2.0"}%s%s,"scenes":%s,)"
      R"("nodes":[{"name":"bone"%s},{"mesh":0,"skin":0}%s],)"
      R"("meshes":[{"name":"handmade","primitives":[{"attributes":{"POSITION":0,"JOINTS_0":1,)"
      R"("WEIGHTS_0":2}%s%s,"mode":%d}%s]}],)"
      R"("skins":[{"joints":[0]}%s],)"
      R"("animations":[{"channels":[{"sampler":0,"target":{"node":%d,"path":"%s"}}%s],)"
      R"("samplers":[{"input":3,"output":4,"interpolation":"%s"}]}],)"
      R"("buffers":[{"byteLength":%d,"uri":"data:application/octet-stream;base64,%s"}],)"
      R"("bufferViews":[%s],"accessors":[%s]})",
      h.top_level.empty() ? "" : "," + h.top_level,
      h.default_scene < 0 ? "" : absl::StrFormat(",\"scene\":%d", h.default_scene), h.scenes,
      h.bone_transform.empty() ? "" : "," + h.bone_transform,
      h.extra_nodes.empty() ? "" : "," + h.extra_nodes, indices_member,
      h.primitive_extra.empty() ? "" : "," + h.primitive_extra, h.mode,
      h.extra_primitives.empty() ? "" : "," + h.extra_primitives, h.extra_skins.empty() ? "" : "," + h.extra_skins, h.channel_node, h.path,
      h.extra_channels.empty() ? "" : "," + h.extra_channels,
      h.interpolation, buffer.size(), Base64(buffer), absl::StrJoin(views, ","),
      absl::StrJoin(accessors, ","));
  WriteText(file, json);
  return file;
}

// Rotation angle between two unit quaternions (radians, in [0, pi]); sign-insensitive.
double AngleBetween(const Eigen::Quaterniond& a, const Eigen::Quaterniond& b) {
  return 2 * std::acos(std::min(1.0, std::abs(a.normalized().dot(b.normalized()))));
}

Eigen::Quaterniond AboutZ(double degrees) {
  return Eigen::Quaterniond(Eigen::AngleAxisd(degrees * kPi / 180, Eigen::Vector3d::UnitZ()));
}

void ExpectRowsSumToOne(const SparseWeights& W) {
  ASSERT_GT(W.rows(), 0);
  for (int i = 0; i < W.rows(); ++i) {
    double sum = 0;
    for (int c = 0; c < W.k(); ++c) {
      EXPECT_GE(W.weights(i, c), 0.f);
      sum += W.weights(i, c);
    }
    ASSERT_NEAR(sum, 1.0, 1e-6) << "row " << i;
  }
}

// ---------------------------------------------------------------------------------------------
// The shared sample characters (counts from the shared data's README.md and the files' JSON).

TEST(GltfReadTest, ReadsSimpleSkin) {
  const std::string path = DataPath("gltf/SimpleSkin/SimpleSkin.gltf");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<GltfCharacter> c = ReadGltf(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->mesh.V.rows(), 10);
  EXPECT_EQ(c->mesh.F.rows(), 8);
  EXPECT_EQ(c->mesh.N.rows(), 0);  // SimpleSkin has no normals
  EXPECT_EQ(c->num_skin_joints, 2);
  ASSERT_EQ(c->skeleton.size(), 2);  // node 1 is the root joint, node 2 its child
  EXPECT_EQ(c->node_of_joint, (std::vector<int>{1, 2}));
  EXPECT_EQ(c->skeleton.joints[0].parent, -1);
  EXPECT_EQ(c->skeleton.joints[1].parent, 0);
  EXPECT_EQ(c->skeleton.joints[0].name, "node1");
  EXPECT_TRUE(c->skeleton.joints[1].rest.translation.isApprox(Eigen::Vector3d(0, 1, 0)));
  // Inverse bind matrices of the tutorial: identity and a translation by (0, -1, 0).
  EXPECT_TRUE(c->skeleton.joints[0].inverse_bind.matrix().isApprox(Eigen::Matrix4d::Identity()));
  Eigen::Matrix4d ib1 = Eigen::Matrix4d::Identity();
  ib1(1, 3) = -1;
  EXPECT_TRUE(c->skeleton.joints[1].inverse_bind.matrix().isApprox(ib1))
      << c->skeleton.joints[1].inverse_bind.matrix();
  // Bounds from the POSITION accessor's min/max in the JSON.
  EXPECT_TRUE(c->mesh.V.colwise().minCoeff().isApprox(Eigen::RowVector3d(-0.5, 0, 0)));
  EXPECT_TRUE(c->mesh.V.colwise().maxCoeff().isApprox(Eigen::RowVector3d(0.5, 2, 0)));
  EXPECT_EQ(c->weights.k(), 4);
  ExpectRowsSumToOne(c->weights);
  ASSERT_EQ(c->animations.size(), 1u);
  const Animation& a = c->animations[0];
  ASSERT_EQ(a.channels.size(), 1u);
  EXPECT_EQ(a.channels[0].joint, 1);
  EXPECT_EQ(a.channels[0].path, AnimationPath::kRotation);
  EXPECT_EQ(a.channels[0].interpolation, Interpolation::kLinear);
  EXPECT_EQ(a.channels[0].times.size(), 12u);
  EXPECT_EQ(a.channels[0].values.size(), 48u);
  EXPECT_DOUBLE_EQ(a.start, 0.0);
  EXPECT_DOUBLE_EQ(a.end, 5.5);
}

TEST(GltfReadTest, ReadsCesiumManCounts) {
  const std::string path = DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<GltfCharacter> c = ReadGltf(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->mesh.V.rows(), 3273);
  EXPECT_EQ(c->mesh.F.rows(), 4672);
  EXPECT_EQ(c->mesh.N.rows(), 3273);
  EXPECT_EQ(c->num_skin_joints, 19);
  EXPECT_EQ(c->name, "Cesium_Man");
  // The 19 joints, then their non-joint ancestors "Z_UP" (node 0) and "Armature" (node 1).
  ASSERT_EQ(c->skeleton.size(), 21);
  EXPECT_EQ(c->node_of_joint[0], 3);
  EXPECT_EQ(c->node_of_joint[19], 0);
  EXPECT_EQ(c->node_of_joint[20], 1);
  EXPECT_EQ(c->skeleton.joints[19].name, "Z_UP");
  EXPECT_EQ(c->skeleton.joints[20].name, "Armature");
  EXPECT_EQ(c->skeleton.joints[0].name, "Skeleton_torso_joint_1");
  EXPECT_EQ(c->skeleton.joints[0].parent, 20);
  EXPECT_EQ(c->skeleton.joints[20].parent, 19);
  EXPECT_EQ(c->skeleton.joints[19].parent, -1);
  ASSERT_EQ(c->animations.size(), 1u);
  EXPECT_EQ(c->animations[0].channels.size(), 57u);
  for (const AnimationChannel& ch : c->animations[0].channels) EXPECT_EQ(ch.times.size(), 48u);
  EXPECT_NEAR(c->animations[0].end, 2.0, 1e-6);
  ExpectRowsSumToOne(c->weights);
  // The appended ancestors carry no weight; every influence is a skin joint.
  for (int i = 0; i < c->weights.rows(); ++i)
    for (int k = 0; k < c->weights.k(); ++k) EXPECT_LT(c->weights.joints(i, k), 19);
}

TEST(GltfReadTest, AppendedAncestorsHaveInverseRestWorldAsInverseBind) {
  const std::string path = DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<GltfCharacter> c = ReadGltf(path);
  ASSERT_TRUE(c.ok()) << c.status();
  // Z_UP is a root: its world is its local; Armature's world is Z_UP · Armature. The inverse
  // binds come from the rest transforms rounded to float32, as a rig stores them (so that an
  // export reads back with the same bits): exact for those, within float rounding of the file's.
  const Eigen::Affine3d z_up = RoundedToFloat(c->skeleton.joints[19].rest).ToAffine();
  const Eigen::Affine3d armature = z_up * RoundedToFloat(c->skeleton.joints[20].rest).ToAffine();
  EXPECT_TRUE((c->skeleton.joints[19].inverse_bind * z_up).matrix().isIdentity(1e-12));
  EXPECT_TRUE((c->skeleton.joints[20].inverse_bind * armature).matrix().isIdentity(1e-12));
  const Eigen::Affine3d file_armature = c->skeleton.joints[19].rest.ToAffine() * c->skeleton.joints[20].rest.ToAffine();
  EXPECT_TRUE((c->skeleton.joints[20].inverse_bind * file_armature).matrix().isIdentity(1e-6));
  // Z_UP turns the y-up model z-up: a rotation of ±90° about x.
  EXPECT_NEAR(AngleBetween(c->skeleton.joints[19].rest.rotation, Eigen::Quaterniond::Identity()),
              kPi / 2, 1e-6);
}

TEST(GltfReadTest, ReadsRiggedSimpleAndRiggedFigureCounts) {
  const std::string simple = DataPath("gltf/RiggedSimple/RiggedSimple.gltf");
  const std::string figure = DataPath("gltf/RiggedFigure/RiggedFigure.gltf");
  SKINNING_REQUIRE_DATA(simple);
  SKINNING_REQUIRE_DATA(figure);
  absl::StatusOr<GltfCharacter> s = ReadGltf(simple);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->mesh.V.rows(), 160);
  EXPECT_EQ(s->mesh.F.rows(), 188);
  EXPECT_EQ(s->num_skin_joints, 2);
  EXPECT_EQ(s->name, "Cylinder");
  ASSERT_EQ(s->animations.size(), 1u);
  EXPECT_EQ(s->animations[0].channels.size(), 3u);
  for (const AnimationChannel& ch : s->animations[0].channels) EXPECT_EQ(ch.times.size(), 50u);
  absl::StatusOr<GltfCharacter> f = ReadGltf(figure);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->mesh.V.rows(), 370);
  EXPECT_EQ(f->mesh.F.rows(), 256);
  EXPECT_EQ(f->num_skin_joints, 19);
  ASSERT_EQ(f->animations.size(), 1u);
  EXPECT_EQ(f->animations[0].channels.size(), 57u);
  EXPECT_NEAR(f->animations[0].end, 1.25, 1e-6);
}

TEST(GltfReadTest, WeightRowsSumToOne) {
  for (const char* rel : {"gltf/SimpleSkin/SimpleSkin.gltf", "gltf/RiggedSimple/RiggedSimple.glb",
                          "gltf/RiggedFigure/RiggedFigure.glb", "gltf/CesiumMan/CesiumMan.glb"}) {
    SCOPED_TRACE(rel);
    const std::string path = DataPath(rel);
    SKINNING_REQUIRE_DATA(path);
    absl::StatusOr<GltfCharacter> c = ReadGltf(path);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->weights.rows(), c->mesh.V.rows());
    ExpectRowsSumToOne(c->weights);
    EXPECT_TRUE(ValidateWeights(c->weights, c->mesh.V.rows(), c->skeleton.size()).ok());
    EXPECT_TRUE(ValidateMesh(c->mesh).ok());
    EXPECT_TRUE(ValidateSkeleton(c->skeleton).ok());
  }
}

void ExpectSameCharacter(const GltfCharacter& a, const GltfCharacter& b) {
  ASSERT_EQ(a.mesh.V.rows(), b.mesh.V.rows());
  EXPECT_EQ(a.mesh.V, b.mesh.V);
  EXPECT_EQ(a.mesh.F, b.mesh.F);
  EXPECT_EQ(a.mesh.N, b.mesh.N);
  EXPECT_EQ(a.weights.joints, b.weights.joints);
  EXPECT_EQ(a.weights.weights, b.weights.weights);
  EXPECT_EQ(a.num_skin_joints, b.num_skin_joints);
  EXPECT_EQ(a.node_of_joint, b.node_of_joint);
  ASSERT_EQ(a.skeleton.size(), b.skeleton.size());
  for (int j = 0; j < a.skeleton.size(); ++j) {
    const Joint& x = a.skeleton.joints[j];
    const Joint& y = b.skeleton.joints[j];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.parent, y.parent);
    EXPECT_TRUE(x.rest.ToAffine().isApprox(y.rest.ToAffine(), 1e-12));
    EXPECT_TRUE(x.inverse_bind.isApprox(y.inverse_bind, 1e-12));
  }
  ASSERT_EQ(a.animations.size(), b.animations.size());
  for (size_t i = 0; i < a.animations.size(); ++i) {
    ASSERT_EQ(a.animations[i].channels.size(), b.animations[i].channels.size());
    for (size_t c = 0; c < a.animations[i].channels.size(); ++c) {
      EXPECT_EQ(a.animations[i].channels[c].joint, b.animations[i].channels[c].joint);
      EXPECT_EQ(a.animations[i].channels[c].path, b.animations[i].channels[c].path);
      EXPECT_EQ(a.animations[i].channels[c].interpolation, b.animations[i].channels[c].interpolation);
      EXPECT_EQ(a.animations[i].channels[c].times, b.animations[i].channels[c].times);
      EXPECT_EQ(a.animations[i].channels[c].values, b.animations[i].channels[c].values);
    }
  }
}

TEST(GltfReadTest, GltfAndGlbGiveSameCharacter) {
  for (const char* name : {"RiggedSimple", "RiggedFigure"}) {
    SCOPED_TRACE(name);
    const std::string gltf = DataPath(absl::StrFormat("gltf/%s/%s.gltf", name, name));
    const std::string glb = DataPath(absl::StrFormat("gltf/%s/%s.glb", name, name));
    SKINNING_REQUIRE_DATA(gltf);
    SKINNING_REQUIRE_DATA(glb);
    absl::StatusOr<GltfCharacter> a = ReadGltf(gltf);
    absl::StatusOr<GltfCharacter> b = ReadGltf(glb);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    ExpectSameCharacter(*a, *b);
  }
}

// `glb` with its animation channels given as KHR_animation_pointer targets ("/nodes/N/path",
// no node), those with an odd index when `every_other` (the rest stay core channels), plus a
// channel of a material's colour, which animates nothing of a rig; the extension used and
// required.
std::string WithAnimationPointers(const std::string& glb, bool every_other) {
  const testing::GlbChunks chunks = testing::SplitGlb(glb);
  nlohmann::json doc = nlohmann::json::parse(chunks.json);
  for (nlohmann::json& animation : doc["animations"]) {
    int c = 0;
    for (nlohmann::json& channel : animation["channels"]) {
      if (every_other && c++ % 2 == 0) continue;
      nlohmann::json& target = channel["target"];
      const std::string pointer =
          absl::StrFormat("/nodes/%d/%s", target["node"].get<int>(), target["path"].get<std::string>());
      target = {{"path", "pointer"}, {"extensions", {{"KHR_animation_pointer", {{"pointer", pointer}}}}}};
    }
    animation["channels"].push_back(
        {{"sampler", 0},
         {"target",
          {{"path", "pointer"},
           {"extensions",
            {{"KHR_animation_pointer", {{"pointer", "/materials/0/pbrMetallicRoughness/baseColorFactor"}}}}}}}});
  }
  for (const char* list : {"extensionsUsed", "extensionsRequired"}) doc[list].push_back("KHR_animation_pointer");
  return testing::JoinGlb(doc.dump(), chunks.rest);
}

// A mesh's submeshes written as primitives over one vertex buffer (UniVRM's VRM 0.x avatars: a
// primitive per material, all with the same POSITION, NORMAL, JOINTS_0, WEIGHTS_0 and morph target
// accessors) share the rig's vertices: CesiumMan with morph targets, its triangles split between
// two such primitives, reads as the file itself. Each primitive's vertices used to be read apart
// (twice the vertices here, half of each copy used by no triangle). A primitive whose POSITION is
// an accessor of its own (a copy of the same numbers) is still read apart.
TEST(GltfReadTest, PrimitivesOverOneVertexBufferShareTheRigsVertices) {
  const std::string in = DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(in);
  const std::string path = TempDir() + "/CesiumManMorphShared.glb";
  ASSERT_TRUE(testing::WriteWithMorphTargets(in, path).ok());
  const std::vector<unsigned char> bytes = ReadBytes(path);
  const std::string glb(bytes.begin(), bytes.end());
  absl::StatusOr<GltfCharacter> whole = ReadGltfBytes(glb, "gltf");
  ASSERT_TRUE(whole.ok()) << whole.status();
  ASSERT_EQ(whole->morph_targets.size(), 2u);
  const testing::GlbChunks chunks = testing::SplitGlb(glb);
  nlohmann::json doc = nlohmann::json::parse(chunks.json);
  ASSERT_EQ(doc["meshes"].size(), 1u);
  ASSERT_EQ(doc["meshes"][0]["primitives"].size(), 1u);
  // The indices accessor cut in two: the first half of the triangles, then the rest.
  const nlohmann::json prim = doc["meshes"][0]["primitives"][0];
  const int indices = prim["indices"].get<int>();
  nlohmann::json first = doc["accessors"][indices];
  const int count = first["count"].get<int>(), head = count / 6 * 3;
  const int type = first["componentType"].get<int>();
  const int size = type == 5125 ? 4 : type == 5123 ? 2 : 1;
  first.erase("min");
  first.erase("max");
  nlohmann::json second = first;
  first["count"] = head;
  second["count"] = count - head;
  second["byteOffset"] = first.value("byteOffset", 0) + head * size;
  doc["accessors"][indices] = first;
  doc["accessors"].push_back(second);
  nlohmann::json later = prim;
  later["indices"] = doc["accessors"].size() - 1;
  doc["meshes"][0]["primitives"].push_back(later);
  absl::StatusOr<GltfCharacter> split = ReadGltfBytes(testing::JoinGlb(doc.dump(), chunks.rest), "gltf");
  ASSERT_TRUE(split.ok()) << split.status();
  ExpectSameCharacter(*split, *whole);
  ASSERT_EQ(split->morph_targets.size(), whole->morph_targets.size());
  for (size_t t = 0; t < whole->morph_targets.size(); ++t) {
    EXPECT_EQ(split->morph_targets[t].name, whole->morph_targets[t].name);
    EXPECT_EQ(split->morph_targets[t].dV, whole->morph_targets[t].dV);
    EXPECT_EQ(split->morph_targets[t].dN, whole->morph_targets[t].dN);
  }
  ASSERT_EQ(split->parts.size(), 1u);
  EXPECT_EQ(split->parts[0].num_vertices, whole->mesh.V.rows());
  // The size check before reading counts them once too: --max_vertices of the file's own count
  // takes it (each primitive was counted, and the avatar refused at half its size).
  GltfSizeLimits limits;
  limits.max_vertices = whole->mesh.V.rows();
  EXPECT_TRUE(ReadGltfBytes(testing::JoinGlb(doc.dump(), chunks.rest), "gltf", limits).ok());
  limits.max_vertices = whole->mesh.V.rows() - 1;
  EXPECT_EQ(ReadGltfBytes(testing::JoinGlb(doc.dump(), chunks.rest), "gltf", limits).status().code(),
            absl::StatusCode::kResourceExhausted);

  nlohmann::json apart = doc;
  apart["accessors"].push_back(apart["accessors"][prim["attributes"]["POSITION"].get<int>()]);
  apart["meshes"][0]["primitives"][1]["attributes"]["POSITION"] = apart["accessors"].size() - 1;
  absl::StatusOr<GltfCharacter> copies = ReadGltfBytes(testing::JoinGlb(apart.dump(), chunks.rest), "gltf");
  ASSERT_TRUE(copies.ok()) << copies.status();
  EXPECT_EQ(copies->mesh.V.rows(), 2 * whole->mesh.V.rows());
  EXPECT_EQ(copies->mesh.F.rows(), whole->mesh.F.rows());
}

// KHR_animation_pointer (Blender 4.3's "animation pointer" export, UnityGLTF, Needle): a channel
// whose pointer names a node's translation, rotation, scale or morph weights is the core channel
// of that node and path, so the real characters, every channel or every other one rewritten so,
// read as the files themselves (tinygltf 2.7 dropped such channels, node missing, and the
// animations came out empty). A pointer to a node past the file's is refused, quoting it; one
// that also names a node and path a core channel animates is refused as that twice.
TEST(GltfReadTest, ReadsKhrAnimationPointerChannelsAsTheCoreChannelsTheyEqual) {
  std::vector<std::string> files;
  for (const char* name : {"RiggedSimple", "RiggedFigure", "CesiumMan"}) {
    const std::string path = DataPath(absl::StrFormat("gltf/%s/%s.glb", name, name));
    SKINNING_REQUIRE_DATA(path);
    files.push_back(path);
  }
  // CesiumMan with morph targets and a channel of their weights.
  const std::string morph = TempDir() + "/CesiumManMorph.glb";
  ASSERT_TRUE(testing::WriteWithMorphTargets(files.back(), morph).ok());
  files.push_back(morph);
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    const std::vector<unsigned char> bytes = ReadBytes(path);
    const std::string glb(bytes.begin(), bytes.end());
    absl::StatusOr<GltfCharacter> expected = ReadGltfBytes(glb, "gltf");
    ASSERT_TRUE(expected.ok()) << expected.status();
    ASSERT_FALSE(expected->animations.empty());
    for (const bool every_other : {false, true}) {
      SCOPED_TRACE(every_other ? "every other channel" : "every channel");
      absl::StatusOr<GltfCharacter> read = ReadGltfBytes(WithAnimationPointers(glb, every_other), "gltf");
      ASSERT_TRUE(read.ok()) << read.status();
      ExpectSameCharacter(*read, *expected);
      ASSERT_EQ(read->animations.size(), expected->animations.size());
      for (size_t a = 0; a < read->animations.size(); ++a) {
        const Animation& x = read->animations[a];
        const Animation& y = expected->animations[a];
        EXPECT_EQ(x.start, y.start);
        EXPECT_EQ(x.end, y.end);
        ASSERT_EQ(x.morph_channels.size(), y.morph_channels.size());
        for (size_t c = 0; c < x.morph_channels.size(); ++c) {
          EXPECT_EQ(x.morph_channels[c].first_target, y.morph_channels[c].first_target);
          EXPECT_EQ(x.morph_channels[c].values, y.morph_channels[c].values);
        }
      }
    }
  }

  // Refusals, on RiggedSimple (its nodes[4] is animated).
  const std::vector<unsigned char> bytes = ReadBytes(files[0]);
  const testing::GlbChunks chunks = testing::SplitGlb(std::string(bytes.begin(), bytes.end()));
  const nlohmann::json doc = nlohmann::json::parse(chunks.json);
  auto with_channel = [&](const nlohmann::json& target) {
    nlohmann::json edited = doc;
    edited["animations"][0]["channels"].push_back({{"sampler", 0}, {"target", target}});
    return testing::JoinGlb(edited.dump(), chunks.rest);
  };
  auto pointing_at = [](const std::string& pointer) {
    return nlohmann::json{{"path", "pointer"}, {"extensions", {{"KHR_animation_pointer", {{"pointer", pointer}}}}}};
  };
  const int last = static_cast<int>(doc["animations"][0]["channels"].size());
  absl::StatusOr<GltfCharacter> past = ReadGltfBytes(with_channel(pointing_at("/nodes/99/rotation")), "gltf");
  EXPECT_EQ(past.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(past.status().message()),
              ::testing::HasSubstr(absl::StrFormat("animations[0].channels[%d].target.extensions.KHR_animation_pointer."
                                                   "pointer: \"/nodes/99/rotation\" is out of range (%d nodes)",
                                                   last, doc["nodes"].size())));
  const nlohmann::json& first = doc["animations"][0]["channels"][0]["target"];
  const std::string twice = absl::StrFormat("/nodes/%d/%s", first["node"].get<int>(), first["path"].get<std::string>());
  absl::StatusOr<GltfCharacter> both = ReadGltfBytes(with_channel(pointing_at(twice)), "gltf");
  EXPECT_EQ(both.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(both.status().message()),
              ::testing::HasSubstr(absl::StrFormat("animations[0].channels[%d].target: node %d's %s is animated by "
                                                   "channels[0] too",
                                                   last, first["node"].get<int>(), first["path"].get<std::string>())));
  // Pointers that are not a node's transform or weights, or not JSON Pointer's spelling of an
  // index, animate nothing of a rig: the file reads as it is.
  for (const char* other : {"/nodes/4/translation/0", "/nodes/04/rotation", "/nodes/-1/rotation", "/nodes/4/matrix",
                            "/cameras/0/perspective/yfov", "nodes/4/rotation"}) {
    SCOPED_TRACE(other);
    absl::StatusOr<GltfCharacter> read = ReadGltfBytes(with_channel(pointing_at(other)), "gltf");
    ASSERT_TRUE(read.ok()) << read.status();
    ExpectSameCharacter(*read, *ReadGltfBytes(std::string(bytes.begin(), bytes.end()), "gltf"));
  }
}

TEST(GltfReadTest, FormatIsChosenByMagicNotExtension) {
  const std::string glb = DataPath("gltf/RiggedSimple/RiggedSimple.glb");
  SKINNING_REQUIRE_DATA(glb);
  const std::string dir = TempDir();
  // Binary content behind a .gltf name.
  const std::string renamed = dir + "/binary.gltf";
  std::filesystem::copy_file(glb, renamed);
  absl::StatusOr<GltfCharacter> c = ReadGltf(renamed);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->mesh.V.rows(), 160);
  // JSON content behind a .glb name.
  HandMade h;
  absl::StatusOr<GltfCharacter> j = ReadGltf(WriteHandMade(h, dir + "/text.glb"));
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->mesh.V.rows(), 3);
}

// ---------------------------------------------------------------------------------------------
// Sampling, on hand-made files with closed-form expectations.

struct Sampled {
  GltfCharacter character;
  Transform at(double t) const {
    return SampleAnimation(character.skeleton, character.animations.at(0), t).at(0);
  }
};

Sampled ReadHandMade(const HandMade& h) {
  absl::StatusOr<GltfCharacter> c = ReadGltf(WriteHandMade(h, TempDir() + "/anim.gltf"));
  EXPECT_TRUE(c.ok()) << c.status();
  return Sampled{c.ok() ? *c : GltfCharacter()};
}

TEST(GltfSampleTest, StepLinearCubicSplineSampling) {
  {
    SCOPED_TRACE("STEP translation holds the previous key");
    HandMade h;
    h.interpolation = "STEP";
    h.times = {0, 1, 2};
    h.values = {0, 0, 0, 1, 2, 3, 4, 5, 6};
    const Sampled s = ReadHandMade(h);
    ASSERT_EQ(s.character.animations.size(), 1u);
    EXPECT_EQ(s.character.animations[0].channels[0].interpolation, Interpolation::kStep);
    EXPECT_TRUE(s.at(0.99).translation.isApprox(Eigen::Vector3d(0, 0, 0)));
    EXPECT_TRUE(s.at(1.0).translation.isApprox(Eigen::Vector3d(1, 2, 3)));
    EXPECT_TRUE(s.at(1.5).translation.isApprox(Eigen::Vector3d(1, 2, 3)));
    EXPECT_TRUE(s.at(1.999).translation.isApprox(Eigen::Vector3d(1, 2, 3)));
  }
  {
    SCOPED_TRACE("LINEAR translation lerps");
    HandMade h;
    h.times = {0, 1, 3};
    h.values = {0, 0, 0, 1, 2, 3, 3, 2, 1};
    const Sampled s = ReadHandMade(h);
    EXPECT_TRUE(s.at(0.25).translation.isApprox(Eigen::Vector3d(0.25, 0.5, 0.75)));
    // t = 2 is halfway between (1, 2, 3) at 1 and (3, 2, 1) at 3.
    EXPECT_TRUE(s.at(2.0).translation.isApprox(Eigen::Vector3d(2, 2, 2)));
  }
  {
    SCOPED_TRACE("LINEAR scale lerps");
    HandMade h;
    h.path = "scale";
    h.times = {0, 4};
    h.values = {1, 1, 1, 3, 5, 1};
    const Sampled s = ReadHandMade(h);
    EXPECT_TRUE(s.at(1.0).scale.isApprox(Eigen::Vector3d(1.5, 2, 1)));
  }
  {
    SCOPED_TRACE("LINEAR rotation: slerp of 0 and 90 degrees about z");
    HandMade h;
    h.path = "rotation";
    h.times = {0, 2};
    const double s45 = std::sin(kPi / 4), c45 = std::cos(kPi / 4);
    h.values = {0, 0, 0, 1, 0, 0, float(s45), float(c45)};
    const Sampled s = ReadHandMade(h);
    EXPECT_LT(AngleBetween(s.at(1.0).rotation, AboutZ(45)), 1e-6);
    EXPECT_LT(AngleBetween(s.at(0.5).rotation, AboutZ(22.5)), 1e-6);  // slerp, not nlerp
    EXPECT_NEAR(s.at(0.5).rotation.norm(), 1.0, 1e-12);
  }
  {
    SCOPED_TRACE("LINEAR rotation takes the shorter arc for keys q and -q'");
    HandMade h;
    h.path = "rotation";
    h.times = {0, 2};
    const double s45 = std::sin(kPi / 4), c45 = std::cos(kPi / 4);
    // -(90° about z): the same rotation; the long way round would pass through -135°.
    h.values = {0, 0, 0, 1, 0, 0, float(-s45), float(-c45)};
    const Sampled s = ReadHandMade(h);
    const Eigen::Vector3d x = s.at(1.0).rotation * Eigen::Vector3d::UnitX();
    EXPECT_TRUE(x.isApprox(Eigen::Vector3d(std::cos(kPi / 4), std::sin(kPi / 4), 0), 1e-6)) << x;
  }
  {
    SCOPED_TRACE("CUBICSPLINE translation: glTF Hermite with tangents scaled by the interval");
    HandMade h;
    h.interpolation = "CUBICSPLINE";
    h.times = {1, 3};  // Δt = 2
    // Per key: in-tangent, value, out-tangent. The first in-tangent and the last out-tangent
    // are never used (±100 would show).
    h.values = {100,      100, 100, /*v0*/ 0, 0, 0, /*b0*/ 1, 0,    0,
                /*a1*/ 0, 1,   0,   /*v1*/ 2, 4, 6, -100,     -100, -100};
    const Sampled s = ReadHandMade(h);
    // s = 0.5: h00 = 0.5, h10 = 0.125, h01 = 0.5, h11 = -0.125:
    // 0.5·0 + 0.125·2·(1,0,0) + 0.5·(2,4,6) − 0.125·2·(0,1,0) = (1.25, 1.75, 3).
    EXPECT_TRUE(s.at(2.0).translation.isApprox(Eigen::Vector3d(1.25, 1.75, 3), 1e-12))
        << s.at(2.0).translation.transpose();
    // s = 0.25: h00 = 0.84375, h10 = 0.140625, h01 = 0.15625, h11 = -0.046875:
    // (0.28125 + 0.3125, 0.625 − 0.09375, 0.9375).
    EXPECT_TRUE(s.at(1.5).translation.isApprox(Eigen::Vector3d(0.59375, 0.53125, 0.9375), 1e-12))
        << s.at(1.5).translation.transpose();
    // At the keys, the values themselves.
    EXPECT_TRUE(s.at(1.0).translation.isZero());
    EXPECT_TRUE(s.at(3.0).translation.isApprox(Eigen::Vector3d(2, 4, 6)));
  }
  {
    SCOPED_TRACE("CUBICSPLINE rotation is normalized");
    HandMade h;
    h.path = "rotation";
    h.interpolation = "CUBICSPLINE";
    h.times = {0, 1};
    const float s45 = std::sin(kPi / 4), c45 = std::cos(kPi / 4);
    // Zero tangents: at s = 0.5 the spline is (v0 + v1) / 2, whose normalization is the
    // 45° rotation about z.
    h.values = {0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, s45, c45, 0, 0, 0, 0};
    const Sampled s = ReadHandMade(h);
    EXPECT_NEAR(s.at(0.5).rotation.norm(), 1.0, 1e-12);
    EXPECT_LT(AngleBetween(s.at(0.5).rotation, AboutZ(45)), 1e-6);
  }
}

TEST(GltfSampleTest, ClampsOutsideKeyRange) {
  HandMade h;
  h.times = {1, 2};
  h.values = {1, 0, 0, 3, 0, 0};
  h.bone_transform = R"("translation":[0,7,0],"rotation":[0,0,1,0],"scale":[2,2,2])";
  const Sampled s = ReadHandMade(h);
  ASSERT_EQ(s.character.animations.size(), 1u);
  EXPECT_DOUBLE_EQ(s.character.animations[0].start, 1.0);
  EXPECT_DOUBLE_EQ(s.character.animations[0].end, 2.0);
  EXPECT_TRUE(s.at(0.0).translation.isApprox(Eigen::Vector3d(1, 0, 0)));
  EXPECT_TRUE(s.at(-100.0).translation.isApprox(Eigen::Vector3d(1, 0, 0)));
  EXPECT_TRUE(s.at(10.0).translation.isApprox(Eigen::Vector3d(3, 0, 0)));
  EXPECT_TRUE(s.at(1.5).translation.isApprox(Eigen::Vector3d(2, 0, 0)));
  // Properties without a channel keep the rest transform (180° about z, scale 2).
  EXPECT_LT(AngleBetween(s.at(10.0).rotation, AboutZ(180)), 1e-9);
  EXPECT_TRUE(s.at(10.0).scale.isApprox(Eigen::Vector3d(2, 2, 2)));
  // Cubic splines clamp to the value, not a tangent.
  HandMade c;
  c.interpolation = "CUBICSPLINE";
  c.times = {1, 2};
  c.values = {9, 9, 9, 1, 0, 0, 9, 9, 9, 9, 9, 9, 3, 0, 0, 9, 9, 9};
  const Sampled cs = ReadHandMade(c);
  EXPECT_TRUE(cs.at(0.0).translation.isApprox(Eigen::Vector3d(1, 0, 0)));
  EXPECT_TRUE(cs.at(5.0).translation.isApprox(Eigen::Vector3d(3, 0, 0)));
}

TEST(GltfReadTest, ConvertsStripsAndFansAndUsesImplicitIndices) {
  HandMade h;
  h.positions = {0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0};
  h.joints.assign(16, 0);
  h.weights = {1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0.5f, 0, 0, 0};  // rows get renormalized
  {
    h.mode = 5;  // strip 0 1 2 3, glTF rule (p_i, p_{i+1+i%2}, p_{i+2-i%2}): (0 1 2), (1 3 2)
    absl::StatusOr<GltfCharacter> c = ReadGltf(WriteHandMade(h, TempDir() + "/strip.gltf"));
    ASSERT_TRUE(c.ok()) << c.status();
    ASSERT_EQ(c->mesh.F.rows(), 2);
    EXPECT_EQ(c->mesh.F.row(0), Eigen::RowVector3i(0, 1, 2));
    EXPECT_EQ(c->mesh.F.row(1), Eigen::RowVector3i(1, 3, 2));
    EXPECT_FLOAT_EQ(c->weights.weights(3, 0), 1.0f);
  }
  {
    h.mode = 6;  // fan 0 1 2 3: triangles (1 2 0), (2 3 0)
    h.indices = {0, 1, 2, 3};
    absl::StatusOr<GltfCharacter> c = ReadGltf(WriteHandMade(h, TempDir() + "/fan.gltf"));
    ASSERT_TRUE(c.ok()) << c.status();
    ASSERT_EQ(c->mesh.F.rows(), 2);
    EXPECT_EQ(c->mesh.F.row(0), Eigen::RowVector3i(1, 2, 0));
    EXPECT_EQ(c->mesh.F.row(1), Eigen::RowVector3i(2, 3, 0));
  }
}

// ---------------------------------------------------------------------------------------------
// Writing.

struct TestCharacter {
  Mesh mesh;
  Skeleton skeleton;
  SparseWeights weights;
  std::vector<Animation> animations;
};

// A 3-joint chain along y with a non-trivial rest pose, a 6-vertex mesh with normals, weights
// with k influences (k ≤ 3 distinct joints, so the rest are zero-weight slots), and one channel
// per interpolation.
TestCharacter MakeCharacter(int k) {
  TestCharacter c;
  c.mesh.V.resize(6, 3);
  c.mesh.V << 0, 0, 0, 1, 0.1, 0, 0, 1, 0.2, 1, 1.5, 0, 0, 2, 0.3, 1, 2.25, -0.5;
  c.mesh.F.resize(4, 3);
  c.mesh.F << 0, 1, 2, 2, 1, 3, 2, 3, 4, 4, 3, 5;
  c.mesh.N.resize(6, 3);  // any unit vectors will do
  c.mesh.N << 0, 0, 1, 0.6, 0, 0.8, 0, 0.6, 0.8, 1, 0, 0, 0, 1, 0, 0, -0.8, 0.6;
  const char* names[3] = {"hip", "knee", "ankle"};
  for (int j = 0; j < 3; ++j) {
    Joint joint;
    joint.name = names[j];
    joint.parent = j - 1;
    joint.rest.translation = Eigen::Vector3d(0.1 * j, j == 0 ? 0.0 : 1.0, 0.05);
    joint.rest.rotation =
        Eigen::Quaterniond(Eigen::AngleAxisd(0.3 * (j + 1), Eigen::Vector3d(1, 2, 3).normalized()));
    joint.rest.scale = Eigen::Vector3d(1.0, 1.0 + 0.1 * j, 0.9);
    c.skeleton.joints.push_back(joint);
  }
  // Inverse binds = inverse rest worlds, composed here by hand.
  Eigen::Affine3d world = Eigen::Affine3d::Identity();
  for (int j = 0; j < 3; ++j) {
    world = world * c.skeleton.joints[j].rest.ToAffine();
    c.skeleton.joints[j].inverse_bind = world.inverse();
  }
  c.weights.joints = RowMatrixXi::Zero(6, k);
  c.weights.weights = RowMatrixXf::Zero(6, k);
  for (int v = 0; v < 6; ++v) {
    const int n = std::min(k, 3);
    float sum = 0;
    for (int s = 0; s < n; ++s) {
      c.weights.joints(v, s) = (v + s) % 3;
      c.weights.weights(v, s) = 1.0f + v + 2 * s;
      sum += c.weights.weights(v, s);
    }
    for (int s = 0; s < n; ++s) c.weights.weights(v, s) /= sum;
  }
  Animation a;
  a.name = "walk";
  AnimationChannel rot;
  rot.joint = 1;
  rot.path = AnimationPath::kRotation;
  rot.interpolation = Interpolation::kLinear;
  rot.times = {0.0, 0.5, 1.25};
  for (double deg : {0.0, 30.0, 75.0}) {
    const Eigen::Quaterniond q = AboutZ(deg);
    rot.values.insert(rot.values.end(), {q.x(), q.y(), q.z(), q.w()});
  }
  AnimationChannel step;
  step.joint = 0;
  step.path = AnimationPath::kTranslation;
  step.interpolation = Interpolation::kStep;
  step.times = {0.25, 1.0};
  step.values = {0, 0, 0, 0.5, -0.25, 2};
  AnimationChannel cubic;
  cubic.joint = 2;
  cubic.path = AnimationPath::kScale;
  cubic.interpolation = Interpolation::kCubicSpline;
  cubic.times = {0.0, 2.0};
  cubic.values = {0, 0, 0, 1, 1, 1, 0.5, 0, 0, 0, 0.25, 0, 2, 1, 1, 0, 0, 0};
  a.channels = {rot, step, cubic};
  a.start = 0;
  a.end = 2;
  c.animations.push_back(a);
  return c;
}

void ExpectRoundTrip(const std::string& path, int k) {
  SCOPED_TRACE(absl::StrFormat("%s, k = %d", path, k));
  const TestCharacter in = MakeCharacter(k);
  ASSERT_TRUE(WriteSkinnedGltf(path, in.mesh, in.skeleton, in.weights, in.animations).ok());
  // .glb files start with the binary magic; .gltf files are JSON with an embedded data URI.
  const std::vector<unsigned char> bytes = ReadBytes(path);
  ASSERT_GE(bytes.size(), 4u);
  const bool glb = std::memcmp(bytes.data(), "glTF", 4) == 0;
  EXPECT_EQ(glb, absl::EndsWith(path, ".glb"));
  if (!glb) {
    EXPECT_THAT(std::string(bytes.begin(), bytes.end()),
                HasSubstr("data:application/octet-stream;base64,"));
  }

  absl::StatusOr<GltfCharacter> out = ReadGltf(path);
  ASSERT_TRUE(out.ok()) << out.status();
  constexpr double kFloatTol = 1e-6;
  EXPECT_TRUE(out->mesh.V.isApprox(in.mesh.V, kFloatTol));
  EXPECT_EQ(out->mesh.F, in.mesh.F);
  EXPECT_TRUE(out->mesh.N.isApprox(in.mesh.N, kFloatTol));
  EXPECT_EQ(out->weights.k(), k > 4 ? 8 : 4);
  EXPECT_TRUE(ToDense(out->weights, 3).isApprox(ToDense(in.weights, 3), kFloatTol));
  ASSERT_EQ(out->skeleton.size(), 3);
  EXPECT_EQ(out->num_skin_joints, 3);
  for (int j = 0; j < 3; ++j) {
    const Joint& a = in.skeleton.joints[j];
    const Joint& b = out->skeleton.joints[j];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.parent, b.parent);
    EXPECT_TRUE(a.rest.translation.isApprox(b.rest.translation, kFloatTol));
    EXPECT_LT(AngleBetween(a.rest.rotation, b.rest.rotation), kFloatTol);
    EXPECT_TRUE(a.rest.scale.isApprox(b.rest.scale, kFloatTol));
    EXPECT_TRUE(a.inverse_bind.matrix().isApprox(b.inverse_bind.matrix(), 1e-5))
        << a.inverse_bind.matrix() << "\nvs\n"
        << b.inverse_bind.matrix();
  }
  ASSERT_EQ(out->animations.size(), 1u);
  const Animation& a = in.animations[0];
  const Animation& b = out->animations[0];
  EXPECT_EQ(b.name, "walk");
  EXPECT_DOUBLE_EQ(b.start, 0.0);
  EXPECT_DOUBLE_EQ(b.end, 2.0);
  ASSERT_EQ(b.channels.size(), a.channels.size());
  for (size_t c = 0; c < a.channels.size(); ++c) {
    EXPECT_EQ(b.channels[c].joint, a.channels[c].joint);
    EXPECT_EQ(b.channels[c].path, a.channels[c].path);
    EXPECT_EQ(b.channels[c].interpolation, a.channels[c].interpolation);
    ASSERT_EQ(b.channels[c].times.size(), a.channels[c].times.size());
    ASSERT_EQ(b.channels[c].values.size(), a.channels[c].values.size());
    for (size_t i = 0; i < a.channels[c].times.size(); ++i)
      EXPECT_NEAR(b.channels[c].times[i], a.channels[c].times[i], kFloatTol);
    for (size_t i = 0; i < a.channels[c].values.size(); ++i)
      EXPECT_NEAR(b.channels[c].values[i], a.channels[c].values[i], kFloatTol);
  }
  // Sampling the read animation agrees with sampling the original.
  for (double t : {0.1, 0.6, 1.1, 1.9}) {
    const std::vector<Transform> x = SampleAnimation(in.skeleton, a, t);
    const std::vector<Transform> y = SampleAnimation(out->skeleton, b, t);
    for (int j = 0; j < 3; ++j)
      EXPECT_TRUE(x[j].ToAffine().isApprox(y[j].ToAffine(), 1e-5)) << "t " << t << " joint " << j;
  }
}

TEST(GltfWriteTest, SkinnedGltfRoundTrip) {
  const std::string dir = TempDir();
  ExpectRoundTrip(dir + "/k6.glb", 6);
  ExpectRoundTrip(dir + "/k4.glb", 4);
  ExpectRoundTrip(dir + "/k3.gltf", 3);
  ExpectRoundTrip(dir + "/k8.gltf", 8);
}

TEST(GltfWriteTest, SkinnedGltfRoundTripOfCesiumMan) {
  const std::string path = DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<GltfCharacter> a = ReadGltf(path);
  ASSERT_TRUE(a.ok()) << a.status();
  const std::string out = TempDir() + "/cesium.glb";
  ASSERT_TRUE(WriteSkinnedGltf(out, a->mesh, a->skeleton, a->weights, a->animations).ok());
  absl::StatusOr<GltfCharacter> b = ReadGltf(out);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->mesh.V, a->mesh.V);  // float data written back as float: exact
  EXPECT_EQ(b->mesh.F, a->mesh.F);
  EXPECT_EQ(b->skeleton.size(), a->skeleton.size());
  EXPECT_EQ(b->animations[0].channels.size(), a->animations[0].channels.size());
  EXPECT_TRUE(ToDense(b->weights, 21).isApprox(ToDense(a->weights, 21), 1e-6));
  // The file's two non-joint ancestors ("Z_UP", "Armature": read as non-deforming joints) are
  // written as plain nodes again, not as two more skin joints, and come back in the same place.
  for (int j = 0; j < a->skeleton.size(); ++j) {
    EXPECT_EQ(b->skeleton.joints[j].name, a->skeleton.joints[j].name) << j;
    EXPECT_EQ(b->skeleton.joints[j].deforms, a->skeleton.joints[j].deforms) << j;
  }
  absl::StatusOr<tinygltf::Model> written = testing::LoadTinyGltf(out);
  ASSERT_TRUE(written.ok()) << written.status();
  const tinygltf::Model& m = *written;
  ASSERT_EQ(m.skins.size(), 1u);
  EXPECT_EQ(m.skins[0].joints.size(), 19u);
  std::vector<std::string> plain;
  for (int n = 0; n < static_cast<int>(m.nodes.size()); ++n)
    if (m.nodes[n].mesh < 0 && absl::c_find(m.skins[0].joints, n) == m.skins[0].joints.end())
      plain.push_back(m.nodes[n].name);
  EXPECT_THAT(plain, ::testing::UnorderedElementsAre("Z_UP", "Armature"));
}

// Everything the writers produce passes the Khronos glTF Validator with no error: skinned
// characters with animations (.glb and .gltf; k = 4, 8 and 12 influences) and posed meshes with
// and without normals. Warnings are printed (and listed in the README).
TEST(GltfWriteTest, OutputPassesTheKhronosValidator) {
  const std::string in = DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(in);
  absl::StatusOr<GltfCharacter> a = ReadGltf(in);
  ASSERT_TRUE(a.ok()) << a.status();
  const std::string dir = TempDir();
  ASSERT_TRUE(WriteSkinnedGltf(dir + "/skinned.glb", a->mesh, a->skeleton, a->weights,
                               a->animations).ok());
  ASSERT_TRUE(WriteSkinnedGltf(dir + "/skinned.gltf", a->mesh, a->skeleton, a->weights,
                               a->animations).ok());
  // k influences (8, and 12 in three sets): the file's four scaled by 0.9, then k − 4 joints the
  // vertex does not use yet sharing 0.1 (the last takes the float rounding, so each row sums to 1).
  auto widen = [&](int k) {
    SparseWeights wide;
    wide.joints.resize(a->weights.rows(), k);
    wide.weights.resize(a->weights.rows(), k);
    for (int v = 0; v < a->weights.rows(); ++v) {
      float sum = 0.f;
      int next = 0;
      for (int c = 0; c < k; ++c) {
        if (c < 4) {
          wide.joints(v, c) = a->weights.joints(v, c);
          wide.weights(v, c) = 0.9f * a->weights.weights(v, c);
        } else {
          auto used = [&](int j) {
            for (int u = 0; u < c; ++u) {
              if (wide.joints(v, u) == j) return true;
            }
            return false;
          };
          while (used(next)) ++next;
          wide.joints(v, c) = next;
          wide.weights(v, c) = c < k - 1 ? 0.1f / (k - 4) : 1.f - sum;
        }
        sum += wide.weights(v, c);
      }
    }
    return wide;
  };
  ASSERT_TRUE(WriteSkinnedGltf(dir + "/skinned-k8.glb", a->mesh, a->skeleton, widen(8)).ok());
  // Twelve: three sets. They used to be refused (at most JOINTS_0/JOINTS_1), so `skinctl bake
  // --influences=12` wrote the .dmat and then failed; read back, every influence is there.
  const SparseWeights twelve = widen(12);
  ASSERT_TRUE(WriteSkinnedGltf(dir + "/skinned-k12.glb", a->mesh, a->skeleton, twelve).ok());
  absl::StatusOr<GltfCharacter> k12 = ReadGltf(dir + "/skinned-k12.glb");
  ASSERT_TRUE(k12.ok()) << k12.status();
  ASSERT_EQ(k12->weights.k(), 12);
  ASSERT_EQ(k12->weights.rows(), twelve.rows());
  for (int v = 0; v < twelve.rows(); ++v)
    for (int c = 0; c < 12; ++c) {
      ASSERT_EQ(k12->weights.joints(v, c), twelve.joints(v, c)) << "vertex " << v << ", influence " << c;
      ASSERT_NEAR(k12->weights.weights(v, c), twelve.weights(v, c), 1e-6) << "vertex " << v << ", influence " << c;
    }
  ASSERT_TRUE(WritePosedGltf(dir + "/posed.glb", a->mesh).ok());
  Mesh no_normals = a->mesh;
  no_normals.N.resize(0, 3);
  ASSERT_TRUE(WritePosedGltf(dir + "/posed-no-normals.gltf", no_normals).ok());
  const std::vector<std::string> files = testing::GltfFilesIn(dir);
  ASSERT_EQ(files.size(), 6u);
  SKINNING_EXPECT_VALID_GLTF(files);

  // A bake's top-4 rows with fewer than four nonzero weights still name four joints (BBW's
  // exact zeros): the written file names joint 0 for every zero weight, so the validator has
  // no warning either (ACCESSOR_JOINTS_USED_ZERO_WEIGHT).
  SparseWeights rigid = a->weights;
  for (int v = 0; v < rigid.rows(); ++v) {
    int next = 0;
    for (int c = 1; c < 4; ++c) {
      while (next == rigid.joints(v, 0)) ++next;
      rigid.joints(v, c) = next++;
      rigid.weights(v, c) = 0.f;
    }
    rigid.weights(v, 0) = 1.f;
  }
  const std::string zeros = dir + "/zeros/skinned-zeros.glb";
  std::filesystem::create_directories(dir + "/zeros");
  ASSERT_TRUE(WriteSkinnedGltf(zeros, a->mesh, a->skeleton, rigid).ok());
  const testing::GltfValidation v = testing::ValidateGltfFiles({zeros});
  if (v.available) {
    const std::string counts = v.report.substr(0, v.report.find('\n'));  // the file's line of counts
    EXPECT_THAT(counts, HasSubstr("skinned-zeros.glb: 0 errors, 0 warnings")) << v.report.substr(0, 2000);
  } else {
    EXPECT_FALSE(testing::InCi()) << "glTF validator not installed in CI: " << v.report;
  }
  absl::StatusOr<GltfCharacter> back = ReadGltf(zeros);
  ASSERT_TRUE(back.ok()) << back.status();
  for (int r = 0; r < back->weights.rows(); ++r) {
    float total = 0.f;
    for (int c = 0; c < back->weights.k(); ++c)
      if (back->weights.joints(r, c) == rigid.joints(r, 0)) total += back->weights.weights(r, c);
    ASSERT_EQ(total, 1.f) << "vertex " << r << " is still bound rigidly to its joint";
  }
}

TEST(GltfWriteTest, WriteRejectsInvalidInput) {
  const std::string dir = TempDir();
  TestCharacter c = MakeCharacter(4);
  c.weights.joints(2, 0) = 7;  // only 3 joints
  EXPECT_FALSE(WriteSkinnedGltf(dir + "/bad.glb", c.mesh, c.skeleton, c.weights).ok());
  c = MakeCharacter(4);
  c.animations[0].channels[0].times = {1.0, 1.0, 2.0};
  EXPECT_FALSE(
      WriteSkinnedGltf(dir + "/bad.glb", c.mesh, c.skeleton, c.weights, c.animations).ok());
  EXPECT_FALSE(WriteSkinnedGltf(dir + "/no/such/dir/x.glb", c.mesh, c.skeleton, c.weights).ok());
}

// Reads accessor `index` of a tinygltf model as floats (tightly packed float data only).
std::vector<float> TinyFloats(const tinygltf::Model& m, int index) {
  const tinygltf::Accessor& a = m.accessors.at(index);
  const tinygltf::BufferView& v = m.bufferViews.at(a.bufferView);
  const int n = a.type == TINYGLTF_TYPE_SCALAR ? 1 : a.type;  // VEC2..4 are 2..4
  std::vector<float> out(a.count * n);
  std::memcpy(out.data(), m.buffers.at(v.buffer).data.data() + v.byteOffset + a.byteOffset,
              out.size() * 4);
  return out;
}

TEST(GltfWriteTest, PosedGltfRoundTrip) {
  const std::string dir = TempDir();
  const TestCharacter c = MakeCharacter(4);
  for (const std::string name : {"posed.glb", "posed.gltf"}) {
    SCOPED_TRACE(name);
    const std::string path = dir + "/" + name;
    ASSERT_TRUE(WritePosedGltf(path, c.mesh).ok());
    // Read back with tinygltf itself, independently of ReadGltf.
    absl::StatusOr<tinygltf::Model> loaded = testing::LoadTinyGltf(path);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    const tinygltf::Model& m = *loaded;
    ASSERT_EQ(m.meshes.size(), 1u);
    EXPECT_TRUE(m.skins.empty());
    ASSERT_EQ(m.meshes[0].primitives.size(), 1u);
    const tinygltf::Primitive& p = m.meshes[0].primitives[0];
    EXPECT_EQ(p.mode, TINYGLTF_MODE_TRIANGLES);
    const tinygltf::Accessor& pos = m.accessors.at(p.attributes.at("POSITION"));
    EXPECT_EQ(pos.componentType, TINYGLTF_COMPONENT_TYPE_FLOAT);
    EXPECT_EQ(pos.count, 6u);
    // POSITION min/max as the spec requires: the bounding box of the input.
    ASSERT_EQ(pos.minValues.size(), 3u);
    ASSERT_EQ(pos.maxValues.size(), 3u);
    for (int a = 0; a < 3; ++a) {
      EXPECT_NEAR(pos.minValues[a], c.mesh.V.col(a).minCoeff(), 1e-6);
      EXPECT_NEAR(pos.maxValues[a], c.mesh.V.col(a).maxCoeff(), 1e-6);
    }
    const std::vector<float> V = TinyFloats(m, p.attributes.at("POSITION"));
    const std::vector<float> N = TinyFloats(m, p.attributes.at("NORMAL"));
    for (int i = 0; i < 6; ++i)
      for (int a = 0; a < 3; ++a) {
        EXPECT_NEAR(V[i * 3 + a], c.mesh.V(i, a), 1e-6);
        EXPECT_NEAR(N[i * 3 + a], c.mesh.N(i, a), 1e-6);
      }
    const tinygltf::Accessor& ind = m.accessors.at(p.indices);
    EXPECT_EQ(ind.componentType, TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT);
    ASSERT_EQ(ind.count, 12u);
    const tinygltf::BufferView& iv = m.bufferViews.at(ind.bufferView);
    std::vector<uint32_t> F(12);
    std::memcpy(F.data(), m.buffers[iv.buffer].data.data() + iv.byteOffset + ind.byteOffset, 48);
    for (int f = 0; f < 4; ++f)
      for (int k = 0; k < 3; ++k) EXPECT_EQ(F[f * 3 + k], uint32_t(c.mesh.F(f, k)));
    // Without a skin it is not a character.
    EXPECT_FALSE(ReadGltf(path).ok());
  }
}

// ---------------------------------------------------------------------------------------------
// Corrupt input: errors, never crashes.

TEST(GltfRobustnessTest, RejectsTruncatedGlb) {
  const std::string path = DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(path);
  const std::vector<unsigned char> bytes = ReadBytes(path);
  ASSERT_EQ(bytes.size(), 490956u);
  uint32_t json_length;
  std::memcpy(&json_length, bytes.data() + 12, 4);
  const size_t json_end = 20 + json_length;
  const std::string dir = TempDir();
  const std::string file = dir + "/cut.glb";

  // 1. Plain truncation (the header still claims the full length).
  for (size_t n : {size_t{1}, size_t{3}, size_t{4}, size_t{12}, size_t{19}, size_t{20},
                   size_t{1000}, json_end - 1, json_end, json_end + 4, json_end + 8,
                   json_end + 5000, bytes.size() / 2, bytes.size() - 1}) {
    SCOPED_TRACE(absl::StrCat("truncated to ", n, " bytes"));
    WriteBytes(file, std::vector<unsigned char>(bytes.begin(), bytes.begin() + n));
    EXPECT_FALSE(ReadGltf(file).ok());
  }

  // 2. Truncation made consistent: header length, BIN chunk length and the JSON buffer
  //    byteLength all say the shorter size, so only the accessor checks can catch it.
  const std::string json(bytes.begin() + 20, bytes.begin() + json_end);
  const size_t at = json.find("\"byteLength\":462572}");
  ASSERT_NE(at, std::string::npos);
  const size_t digits = at + std::strlen("\"byteLength\":");
  for (uint32_t bin : {4u, 1000u, 28032u, 100000u, 200000u, 300000u, 400000u, 462000u}) {
    SCOPED_TRACE(absl::StrCat("BIN chunk of ", bin, " bytes"));
    std::vector<unsigned char> cut(bytes.begin(), bytes.begin() + json_end + 8 + bin);
    const std::string number = absl::StrFormat("%6d", bin);  // same width: JSON stays aligned
    std::memcpy(cut.data() + 20 + digits, number.data(), 6);
    const uint32_t total = static_cast<uint32_t>(cut.size());
    std::memcpy(cut.data() + 8, &total, 4);
    std::memcpy(cut.data() + json_end, &bin, 4);
    WriteBytes(file, cut);
    absl::StatusOr<GltfCharacter> c = ReadGltf(file);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(c.status().message()),
                ::testing::AnyOf(HasSubstr("bufferViews["), HasSubstr("accessors[")))
        << c.status();
  }

  // 3. Bytes flipped in the JSON chunk. Setting the high bit of an ASCII byte makes it an
  //    invalid UTF-8 byte inside a string and a syntax error outside one.
  for (int i = 1; i <= 12; ++i) {
    const size_t pos = 20 + (static_cast<size_t>(json_length) * i) / 13;
    SCOPED_TRACE(absl::StrCat("flipped JSON byte at ", pos));
    std::vector<unsigned char> flipped = bytes;
    flipped[pos] ^= 0x80;
    WriteBytes(file, flipped);
    EXPECT_FALSE(ReadGltf(file).ok());
  }

  // 4. Bytes flipped in the BIN chunk: may or may not be valid data; must not crash.
  for (int i = 1; i <= 12; ++i) {
    std::vector<unsigned char> flipped = bytes;
    for (size_t pos = json_end + 8 + i * 997; pos < flipped.size(); pos += 7919)
      flipped[pos] ^= 0xFF;
    WriteBytes(file, flipped);
    absl::StatusOr<GltfCharacter> c = ReadGltf(file);
    if (c.ok()) {
      EXPECT_TRUE(ValidateMesh(c->mesh).ok());
    }
  }
}

TEST(GltfRobustnessTest, RejectsAccessorOutOfBounds) {
  const std::string dir = TempDir();
  {
    HandMade h;
    h.position_count = 4;  // 4 × 12 bytes, but the view holds 3 vertices
    absl::StatusOr<GltfCharacter> c = ReadGltf(WriteHandMade(h, dir + "/count.gltf"));
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(c.status().message()),
                HasSubstr("accessors[0]: 48 bytes needed at offset 0 but bufferViews[0] has 36"));
  }
  {
    HandMade h;
    h.view0_length_extra = 10000;  // the view runs past the end of the buffer
    absl::StatusOr<GltfCharacter> c = ReadGltf(WriteHandMade(h, dir + "/view.gltf"));
    ASSERT_FALSE(c.ok());
    EXPECT_THAT(std::string(c.status().message()), HasSubstr("bufferViews[0]: 10036 bytes"));
  }
  {
    HandMade h;
    h.position_count = 1 << 30;  // far beyond the view; must not overflow or allocate
    absl::StatusOr<GltfCharacter> c = ReadGltf(WriteHandMade(h, dir + "/huge.gltf"));
    ASSERT_FALSE(c.ok());
    EXPECT_THAT(std::string(c.status().message()), HasSubstr("accessors[0]"));
  }
}

// Sparse accessors (the glTF 2.0 spec, "Sparse Accessors"): the listed elements replace the base view's, or zeros
// where the accessor has no view. Here POSITION's vertex 2, (0, 1, 0), is replaced by (1, 1, 1):
// the index 2 is element 2 of the triangle's index view (bufferViews[5], UNSIGNED_SHORT), the value
// the second VEC3 of the animation's output view (bufferViews[4]).
TEST(GltfReadTest, ReadsSparseAccessors) {
  const std::string dir = TempDir();
  HandMade h;
  h.indices = {0, 1, 2};
  h.accessor0_extra = R"("sparse":{"count":1,"indices":{"bufferView":5,"byteOffset":4,"componentType":5123},)"
                      R"("values":{"bufferView":4,"byteOffset":12}})";
  absl::StatusOr<GltfCharacter> c = ReadGltf(WriteHandMade(h, dir + "/sparse.gltf"));
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->mesh.V.rows(), 3);
  EXPECT_EQ(c->mesh.V.row(0), Eigen::RowVector3d(0, 0, 0));
  EXPECT_EQ(c->mesh.V.row(1), Eigen::RowVector3d(1, 0, 0));
  EXPECT_EQ(c->mesh.V.row(2), Eigen::RowVector3d(1, 1, 1));
}

// Malformed sparse data is INVALID_ARGUMENT naming the accessor and what is wrong, never a crash
// or a silent read. Views: 0 positions (36 bytes), 1 joints (24 bytes of zeros), 3 the animation's
// two times (8 bytes: the floats 0 and 1).
TEST(GltfRobustnessTest, RejectsMalformedSparseAccessors) {
  const std::string dir = TempDir();
  struct Case {
    std::string name;
    std::string sparse;
    std::vector<std::string> message;
  };
  const std::vector<Case> cases = {
      {"index out of range",  // the float 1.0 read as UNSIGNED_INT: 1065353216
       R"("count":1,"indices":{"bufferView":3,"byteOffset":4,"componentType":5125},"values":{"bufferView":0})",
       {"accessors[0] (", "sparse index 1065353216 (entry 0) is out of range (count 3)"}},
      {"not increasing", R"("count":2,"indices":{"bufferView":1,"componentType":5123},"values":{"bufferView":0})",
       {"accessors[0] (", "sparse indices must strictly increase; entry 1 is 0 after 0"}},
      {"float indices", R"("count":1,"indices":{"bufferView":1,"componentType":5126},"values":{"bufferView":0})",
       {"accessors[0].sparse.indices: componentType 5126 (FLOAT) is not allowed"}},
      {"values too short", R"("count":3,"indices":{"bufferView":1,"componentType":5123},"values":{"bufferView":3})",
       {"accessors[0].sparse.values: 36 bytes needed at offset 0 but bufferViews[3] has 8"}},
      {"count above the accessor's",
       R"("count":4,"indices":{"bufferView":1,"componentType":5123},"values":{"bufferView":0})",
       {"accessors[0].sparse: count 4 is not in [1, 3]"}},
      {"view out of range", R"("count":1,"indices":{"bufferView":9,"componentType":5123},"values":{"bufferView":0})",
       {"accessors[0].sparse.indices: bufferView 9 is out of range"}},
  };
  for (const Case& c : cases) {
    HandMade h;
    h.accessor0_extra = "\"sparse\":{" + c.sparse + "}";
    absl::StatusOr<GltfCharacter> r = ReadGltf(WriteHandMade(h, dir + "/sparse.gltf"));
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    for (const std::string& part : c.message) EXPECT_THAT(std::string(r.status().message()), HasSubstr(part)) << c.name;
  }
}

// Scenery beside the character (meshes without a skin at the root, named or not) is refused by
// default (RefusesUnsupportedFeaturesByName); with skip_static_meshes it is left out and named,
// and the character reads as without it, a prop below the bone included.
TEST(GltfRobustnessTest, SkipStaticMeshesLeavesSceneryOutAndNamesIt) {
  const std::string dir = TempDir();
  HandMade prop;
  prop.bone_transform = R"("children":[2])";
  prop.extra_nodes = R"({"name":"helmet","mesh":0})";
  HandMade scenery = prop;
  scenery.extra_nodes += R"(,{"name":"ground","mesh":0,"translation":[0,-3,0]},{"mesh":0})";
  const std::string path = WriteHandMade(scenery, dir + "/scenery.gltf");
  absl::StatusOr<GltfCharacter> refused = ReadGltf(path);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()),
              ::testing::AllOf(HasSubstr("nodes[3] (\"ground\") has a triangle mesh, no skin"),
                               HasSubstr("skip_static_meshes leaves them out")));
  GltfReadOptions options;
  options.skip_static_meshes = true;
  absl::StatusOr<GltfCharacter> read = ReadGltf(path, options);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_THAT(read->skipped_static_meshes, ::testing::ElementsAre("nodes[3] (\"ground\")", "nodes[4]"));
  absl::StatusOr<GltfCharacter> expected = ReadGltf(WriteHandMade(prop, dir + "/prop.gltf"), options);
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_TRUE(expected->skipped_static_meshes.empty());
  ASSERT_EQ(read->parts.size(), 2u);
  EXPECT_EQ(read->parts[1].node, 2);
  EXPECT_EQ(read->parts[1].skin, -1) << "the helmet below the bone is a prop, read";
  EXPECT_EQ(read->mesh.V, expected->mesh.V);
  EXPECT_EQ(read->mesh.F, expected->mesh.F);
  EXPECT_EQ(read->skeleton.size(), expected->skeleton.size());
  EXPECT_EQ(read->animations.size(), expected->animations.size());
}

// Of a file with several scenes, one is read: the default (`scene`) or the one asked for, with the
// skins its meshes use and the animations that move its nodes; the other scenes' meshes (a second
// character, scenery that would be refused) are left out. Each reading equals a one-scene file of
// that content.
TEST(GltfRobustnessTest, OfSeveralScenesOneIsReadAndTheOthersLeftOut) {
  const std::string dir = TempDir();
  HandMade plain;
  HandMade scenes = plain;
  // Scene 1: a second character (bone2 with its own skin) and a ground plane without a skin.
  scenes.extra_nodes = R"({"name":"bone2","translation":[0,2,0]},{"name":"other","mesh":0,"skin":1},)"
                       R"({"name":"ground","mesh":0,"translation":[0,-3,0]})";
  scenes.extra_skins = R"({"joints":[2]})";
  scenes.scenes = R"([{"name":"Main","nodes":[0,1]},{"name":"Other","nodes":[2,3,4]}])";
  absl::StatusOr<GltfCharacter> expected = ReadGltf(WriteHandMade(plain, dir + "/plain.gltf"));
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_EQ(expected->scene, "") << "one scene: nothing to say";

  const std::string path = WriteHandMade(scenes, dir + "/scenes.gltf");
  absl::StatusOr<GltfCharacter> main = ReadGltf(path);
  ASSERT_TRUE(main.ok()) << main.status();
  EXPECT_EQ(main->scene, "scenes[0] (\"Main\") of 2");
  EXPECT_TRUE(main->skipped_static_meshes.empty()) << "the ground is another scene's";
  ASSERT_EQ(main->parts.size(), 1u);
  EXPECT_EQ(main->parts[0].node, 1);
  EXPECT_EQ(main->mesh.V, expected->mesh.V);
  EXPECT_EQ(main->mesh.F, expected->mesh.F);
  ASSERT_EQ(main->skeleton.size(), 1) << "skins[1] is only the other scene's";
  EXPECT_EQ(main->skeleton.joints[0].name, "bone");
  EXPECT_EQ(main->weights.joints, expected->weights.joints);
  EXPECT_EQ(main->weights.weights, expected->weights.weights);
  ASSERT_EQ(main->animations.size(), 1u);
  EXPECT_EQ(main->animations[0].channels.size(), expected->animations[0].channels.size());

  // The other scene, asked for: its ground is refused as in a one-scene file, or left out.
  GltfReadOptions other;
  other.scene = 1;
  absl::StatusOr<GltfCharacter> refused = ReadGltf(path, other);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("nodes[4] (\"ground\") has a triangle mesh"));
  other.skip_static_meshes = true;
  absl::StatusOr<GltfCharacter> second = ReadGltf(path, other);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->scene, "scenes[1] (\"Other\") of 2");
  EXPECT_THAT(second->skipped_static_meshes, ::testing::ElementsAre("nodes[4] (\"ground\")"));
  ASSERT_EQ(second->parts.size(), 1u);
  EXPECT_EQ(second->parts[0].node, 3);
  EXPECT_EQ(second->mesh.V, expected->mesh.V) << "the same mesh, bound with identity inverse binds";
  ASSERT_EQ(second->skeleton.size(), 1);
  EXPECT_EQ(second->skeleton.joints[0].name, "bone2");
  EXPECT_TRUE(second->skeleton.joints[0].rest.translation.isApprox(Eigen::Vector3d(0, 2, 0)));
  EXPECT_TRUE(second->animations.empty()) << "the animation moves only the first scene's bone";

  // The file's default, when it names the second; the first asked for instead.
  scenes.default_scene = 1;
  const std::string second_default = WriteHandMade(scenes, dir + "/second_default.gltf");
  GltfReadOptions skip;
  skip.skip_static_meshes = true;
  absl::StatusOr<GltfCharacter> by_default = ReadGltf(second_default, skip);
  ASSERT_TRUE(by_default.ok()) << by_default.status();
  EXPECT_EQ(by_default->scene, "scenes[1] (\"Other\") of 2");
  EXPECT_EQ(by_default->skeleton.joints[0].name, "bone2");
  GltfReadOptions first;
  first.scene = 0;
  absl::StatusOr<GltfCharacter> asked = ReadGltf(second_default, first);
  ASSERT_TRUE(asked.ok()) << asked.status();
  EXPECT_EQ(asked->scene, "scenes[0] (\"Main\") of 2");
  EXPECT_EQ(asked->skeleton.joints[0].name, "bone");
  // Without "scene", the first.
  scenes.default_scene = -1;
  absl::StatusOr<GltfCharacter> no_default = ReadGltf(WriteHandMade(scenes, dir + "/no_default.gltf"));
  ASSERT_TRUE(no_default.ok()) << no_default.status();
  EXPECT_EQ(no_default->scene, "scenes[0] (\"Main\") of 2");

  // A scene the file does not have; a default scene without a skinned mesh, naming one that has.
  GltfReadOptions third;
  third.scene = 2;
  absl::StatusOr<GltfCharacter> missing = ReadGltf(path, third);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("scene 2 was asked for; the file has 2 scenes"));
  HandMade bare = plain;
  bare.extra_nodes = R"({"name":"ground","mesh":0})";
  bare.scenes = R"([{"nodes":[2]},{"name":"Main","nodes":[0,1]}])";
  absl::StatusOr<GltfCharacter> empty = ReadGltf(WriteHandMade(bare, dir + "/bare.gltf"));
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(empty.status().message()),
              HasSubstr("scenes[0], the file's default scene, has no skinned mesh; scenes[1] (\"Main\") has one "
                        "(nodes[1])"));
}

// A file that requires extensions of materials, textures, lights or metadata only (KTX2 or WebP
// textures, material extensions: what gltfpack and glTF-Transform write) is read, as the same
// character as the file without them: the reader reads none of these.
TEST(GltfRobustnessTest, ReadsPastRequiredExtensionsOfMaterialsAndTextures) {
  const std::string dir = TempDir();
  absl::StatusOr<GltfCharacter> expected = ReadGltf(WriteHandMade(HandMade(), dir + "/plain.gltf"));
  ASSERT_TRUE(expected.ok()) << expected.status();
  const std::string extensions =
      R"(["KHR_texture_basisu","EXT_texture_webp","KHR_texture_transform","KHR_materials_emissive_strength",)"
      R"("KHR_materials_variants","KHR_lights_punctual","KHR_xmp_json_ld"])";
  HandMade textured;
  textured.top_level =
      absl::StrCat(R"("extensionsUsed":)", extensions, R"(,"extensionsRequired":)", extensions,
                   R"(,"images":[{"uri":"data:image/ktx2;base64,q0tUWCAyMLsNChoK"},)"
                   R"({"uri":"data:image/webp;base64,UklGRg=="}],)"
                   R"("textures":[{"extensions":{"KHR_texture_basisu":{"source":0},"EXT_texture_webp":{"source":1}}}],)"
                   R"("materials":[{"pbrMetallicRoughness":{"baseColorTexture":{"index":0,"extensions":)"
                   R"({"KHR_texture_transform":{"scale":[2,2]}}}},"emissiveFactor":[1,1,1],)"
                   R"("extensions":{"KHR_materials_emissive_strength":{"emissiveStrength":4}}}],)"
                   R"("extensions":{"KHR_lights_punctual":{"lights":[{"type":"point"}]}})");
  textured.primitive_extra =
      R"("material":0,"extensions":{"KHR_materials_variants":{"mappings":[{"material":0,"variants":[0]}]}})";
  absl::StatusOr<GltfCharacter> read = ReadGltf(WriteHandMade(textured, dir + "/textured.gltf"));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->mesh.V, expected->mesh.V);
  EXPECT_EQ(read->mesh.F, expected->mesh.F);
  EXPECT_EQ(read->skeleton.size(), expected->skeleton.size());
  EXPECT_EQ(read->weights.joints, expected->weights.joints);
  EXPECT_EQ(read->weights.weights, expected->weights.weights);
  EXPECT_EQ(read->animations.size(), expected->animations.size());
  // Of these, only the reader's own are known to it: a made-up material-like name is refused.
  for (const char* other : {"KHR_materialsx", "EXT_mesh_gpu_instancing"}) {
    HandMade h;
    h.top_level = absl::StrFormat(R"("extensionsUsed":["%s"],"extensionsRequired":["%s"])", other, other);
    absl::StatusOr<GltfCharacter> refused = ReadGltf(WriteHandMade(h, dir + "/refused.gltf"));
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << other;
  }
}

// Every feature the reader does not support is refused with INVALID_ARGUMENT naming it (and
// where it is), never dropped. The plain hand-made file reads, so each refusal is the feature's.
TEST(GltfRobustnessTest, RefusesUnsupportedFeaturesByName) {
  const std::string dir = TempDir();
  ASSERT_TRUE(ReadGltf(WriteHandMade(HandMade(), dir + "/plain.gltf")).ok());
  struct Case {
    std::string name;
    std::function<void(HandMade*)> change;
    std::vector<std::string> message;
  };
  const std::vector<Case> cases = {
      {"an unknown one beside quantization",  // only the unsupported one is named
       [](HandMade* h) {
         h->top_level = R"("extensionsUsed":["KHR_mesh_quantization","EXT_mesh_gpu_instancing"],)"
                        R"("extensionsRequired":["KHR_mesh_quantization","EXT_mesh_gpu_instancing"])";
       },
       {"extensionsRequired: \"EXT_mesh_gpu_instancing\" is not supported",
        "the required extensions the reader supports are KHR_mesh_quantization, EXT_meshopt_compression, "
        "KHR_draco_mesh_compression and KHR_animation_pointer, and those of materials, textures, lights and "
        "metadata"}},
      {"two unknown ones beside a texture's and animation pointers",  // those are read: not named
       [](HandMade* h) {
         h->top_level = R"("extensionsUsed":["EXT_texture_webp","KHR_animation_pointer","VENDOR_x","VENDOR_y"],)"
                        R"("extensionsRequired":["EXT_texture_webp","KHR_animation_pointer","VENDOR_x","VENDOR_y"])";
       },
       {"extensionsRequired: \"VENDOR_x\", \"VENDOR_y\" are not supported"}},
      {"skin out of range", [](HandMade* h) { h->extra_nodes = R"({"mesh":0,"skin":4})"; },
       {"nodes[2].skin: skin 4 is out of range (1 skins)"}},
      {"negative skin", [](HandMade* h) { h->extra_nodes = R"({"mesh":0,"skin":-2})"; },
       {"nodes[2].skin is -2, not a non-negative integer"}},
      // Modes past 6 were skipped as points or lines, leaving "no node with a triangle mesh".
      {"unknown primitive mode", [](HandMade* h) { h->mode = 9; },
       {"meshes[0].primitives[0].mode is 9, not a primitive mode (0 to 6)"}},
      // The spec: every primitive of a mesh has the same number of morph targets. A later one with
      // fewer (or the first with none) was read, its missing targets taken as zero deltas.
      {"fewer morph targets on a later primitive",
       [](HandMade* h) {
         h->primitive_extra = R"("targets":[{"POSITION":0},{"POSITION":0}])";
         h->extra_primitives = R"({"attributes":{"POSITION":0,"JOINTS_0":1,"WEIGHTS_0":2},"targets":[{"POSITION":0}]})";
       },
       {"meshes[0].primitives[1] has 1 morph targets, primitives[0] has 2; the primitives of a mesh have the same "
        "number"}},
      {"morph targets on a later primitive only",
       [](HandMade* h) {
         h->extra_primitives = R"({"attributes":{"POSITION":0,"JOINTS_0":1,"WEIGHTS_0":2},"targets":[{"POSITION":0}]})";
       },
       {"meshes[0].primitives[1] has 1 morph targets, primitives[0] has 0"}},
      // A channel's target node out of range, or a path the spec does not have, animated nothing.
      {"channel target out of range", [](HandMade* h) { h->channel_node = 7; },
       {"animations[0].channels[0].target.node: node 7 is out of range (2 nodes)"}},
      {"unknown channel path", [](HandMade* h) { h->path = "wobble"; },
       {"animations[0].channels[0].target.path: \"wobble\" is not translation, rotation, scale or weights"}},
      // The spec: a node and path once per animation; the later channel overrode the earlier.
      {"a target animated twice",
       [](HandMade* h) { h->extra_channels = R"({"sampler":0,"target":{"node":0,"path":"translation"}})"; },
       {"animations[0].channels[1].target: node 0's translation is animated by channels[0] too"}},
      {"static mesh", [](HandMade* h) { h->extra_nodes = R"({"name":"helmet","mesh":0})"; },
       {"nodes[2] (\"helmet\") has a triangle mesh, no skin, is no skin joint and has none above it",
        "static meshes are not supported"}},
      // Node matrices are T·R·S (the spec); these were read as their nearest T·R·S, or as given.
      {"sheared node matrix",
       [](HandMade* h) { h->bone_transform = R"("matrix":[1,0,0,0, 0.5,1,0,0, 0,0,1,0, 0,0,0,1])"; },
       {"nodes[0].matrix shears (its columns 0 and 1 are not orthogonal"}},
      {"projective node matrix",
       [](HandMade* h) { h->bone_transform = R"("matrix":[1,0,0,0.25, 0,1,0,0, 0,0,1,0, 0,0,0,1])"; },
       {"nodes[0].matrix's last row is (0.25, 0, 0, 1), not (0, 0, 0, 1)"}},
      // Integers the parser would have replaced by their default (a negative or fractional offset
      // read as 0, a `children` that is not an array dropped).
      {"negative byteOffset", [](HandMade* h) { h->accessor0_extra = R"("byteOffset":-4)"; },
       {"not a valid glTF file: accessors[0].byteOffset is -4, not a non-negative integer"}},
      {"fractional byteOffset", [](HandMade* h) { h->accessor0_extra = R"("byteOffset":0.5)"; },
       {"accessors[0].byteOffset is 0.5, not a non-negative integer"}},
      {"children an object", [](HandMade* h) { h->bone_transform = R"("children":{"a":1})"; },
       {R"(nodes[0].children is {"a":1}, not an array of non-negative integers)"}},
      {"a joint as a string", [](HandMade* h) { h->extra_skins = R"({"joints":["0"]})"; },
       {R"(skins[1].joints is ["0"], not an array of non-negative integers)"}},
      // A zero rotation key was read as the identity.
      {"zero rotation key",
       [](HandMade* h) {
         h->path = "rotation";
         h->values = {0, 0, 0, 1, 0, 0, 0, 0};
       },
       {"(animations[0].samplers[0].output): rotation key 1 (0, 0, 0, 0) is not a unit quaternion"}},
  };
  for (const Case& c : cases) {
    HandMade h;
    c.change(&h);
    absl::StatusOr<GltfCharacter> r = ReadGltf(WriteHandMade(h, dir + "/" + c.name + ".gltf"));
    EXPECT_FALSE(r.ok()) << c.name;
    if (r.ok()) continue;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    for (const std::string& part : c.message) {
      EXPECT_THAT(std::string(r.status().message()), HasSubstr(part)) << c.name;
    }
  }
}

// A mesh instanced by two nodes that share skin 0 is read once per node; the count says so.
TEST(GltfReadTest, CountsSkinnedMeshNodes) {
  const std::string dir = TempDir();
  HandMade h;
  h.extra_nodes = R"({"mesh":0,"skin":0})";
  absl::StatusOr<GltfCharacter> c = ReadGltf(WriteHandMade(h, dir + "/two.gltf"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->parts.size(), 2u);
  EXPECT_EQ(c->mesh.V.rows(), 6);
  absl::StatusOr<GltfCharacter> one = ReadGltf(WriteHandMade(HandMade(), dir + "/one.gltf"));
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->parts.size(), 1u);
}

// Size limits with the given fields set (the others 0: no limit).
using L = GltfSizeLimits;
GltfSizeLimits Limits(std::initializer_list<std::pair<int64_t GltfSizeLimits::*, int64_t>> fields) {
  GltfSizeLimits limits;
  for (const auto& [field, value] : fields) limits.*field = value;
  return limits;
}

// ReadGltfBytes holds what the accessors declare to its limits before anything is decoded or
// read (the server passes its rig limits): RESOURCE_EXHAUSTED naming the count and the limit.
TEST(GltfRobustnessTest, RefusesDeclaredSizesOverTheLimits) {
  const std::string path = DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(path);
  const std::vector<unsigned char> file = ReadBytes(path);
  auto read = [](const std::vector<unsigned char>& bytes, const GltfSizeLimits& limits) {
    return ReadGltfBytes(absl::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), "gltf", limits);
  };
  auto expect_refused = [&](const std::vector<unsigned char>& bytes, const GltfSizeLimits& limits,
                            const std::string& message) {
    absl::StatusOr<GltfCharacter> c = read(bytes, limits);
    ASSERT_FALSE(c.ok()) << message;
    EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted) << c.status();
    EXPECT_THAT(std::string(c.status().message()), HasSubstr(message));
  };
  // CesiumMan: 3,273 vertices and 4,672 triangles (ReadsCesiumManCounts), no morph targets.
  expect_refused(file, Limits({{&L::max_vertices, 3272}}),
                 "gltf: the meshes declare 3273 vertices (POSITION elements over every mesh node), more than the "
                 "limit of 3272");
  expect_refused(file, Limits({{&L::max_triangles, 4671}}),
                 "gltf: the meshes declare 4672 triangles (over every mesh node), more than the limit of 4671");
  absl::StatusOr<GltfCharacter> at_limits =
      read(file, Limits({{&L::max_vertices, 3273}, {&L::max_triangles, 4672}, {&L::max_morph_targets, 1}}));
  ASSERT_TRUE(at_limits.ok()) << at_limits.status();
  EXPECT_EQ(at_limits->mesh.V.rows(), 3273);
  EXPECT_EQ(at_limits->mesh.F.rows(), 4672);

  // A mesh instanced by two nodes counts twice, as it is read (3 vertices and 1 triangle each).
  const std::string dir = TempDir();
  HandMade h;
  h.extra_nodes = R"({"mesh":0,"skin":0})";
  const std::vector<unsigned char> two = ReadBytes(WriteHandMade(h, dir + "/two.gltf"));
  expect_refused(two, Limits({{&L::max_vertices, 5}}), "declare 6 vertices");
  expect_refused(two, Limits({{&L::max_triangles, 1}}), "declare 2 triangles");
  absl::StatusOr<GltfCharacter> both = read(two, Limits({{&L::max_vertices, 6}, {&L::max_triangles, 2}}));
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->mesh.V.rows(), 6);

  // Animations: every channel's key times and values, counted independently from tinygltf's
  // parse of the file; three more animations sharing the first one's accessors count 4×.
  tinygltf::Model model;
  tinygltf::TinyGLTF loader;
  std::string err, warn;
  ASSERT_TRUE(loader.LoadBinaryFromMemory(&model, &err, &warn, file.data(), static_cast<unsigned>(file.size()))) << err;
  int64_t values = 0;
  for (const tinygltf::AnimationChannel& ch : model.animations[0].channels) {
    const tinygltf::AnimationSampler& sampler = model.animations[0].samplers[ch.sampler];
    const tinygltf::Accessor& output = model.accessors[sampler.output];
    values += model.accessors[sampler.input].count + output.count * (output.type == TINYGLTF_TYPE_VEC4 ? 4 : 3);
  }
  ASSERT_EQ(model.animations.size(), 1u);
  // Joints: the nodes the skins list, before the skeleton is built.
  ASSERT_EQ(model.skins.size(), 1u);
  const int64_t joints = static_cast<int64_t>(model.skins[0].joints.size());
  expect_refused(file, Limits({{&L::max_joints, joints - 1}}),
                 absl::StrFormat("gltf: the skins declare %d joints (distinct nodes over every skin), more than the "
                                 "limit of %d",
                                 joints, joints - 1));
  EXPECT_TRUE(read(file, Limits({{&L::max_joints, joints}})).ok());
  expect_refused(file, Limits({{&L::max_animation_values, values - 1}}),
                 absl::StrFormat("gltf: the animations declare %d key times and values (over every channel), more "
                                 "than the limit of %d",
                                 values, values - 1));
  EXPECT_TRUE(read(file, Limits({{&L::max_animation_values, values}})).ok());
  for (int copy = 0; copy < 3; ++copy) model.animations.push_back(model.animations[0]);
  std::ostringstream shared;
  ASSERT_TRUE(loader.WriteGltfSceneToStream(&model, shared, false, true));
  const std::string shared_bytes = shared.str();
  const std::vector<unsigned char> four(shared_bytes.begin(), shared_bytes.end());
  expect_refused(four, Limits({{&L::max_animation_values, 4 * values - 1}}),
                 absl::StrFormat("declare %d key times and values", 4 * values));
  EXPECT_TRUE(read(four, Limits({{&L::max_animation_values, 4 * values}})).ok());

  // A mesh no node uses is counted once (its compressed data would be decoded all the same): the
  // hand-made quad (4 vertices, 2 triangles) with an unused copy of its mesh declares 8 and 4.
  std::ifstream quad_in(std::string(SKINNING_SOURCE_DIR) + "/tests/fuzz/seeds/gltf/quad.gltf");
  nlohmann::json quad = nlohmann::json::parse(quad_in);
  quad["meshes"].push_back(quad["meshes"][0]);
  const std::string quad_text = quad.dump();
  const std::vector<unsigned char> unused_copy(quad_text.begin(), quad_text.end());
  expect_refused(unused_copy, Limits({{&L::max_vertices, 7}}), "declare 8 vertices");
  expect_refused(unused_copy, Limits({{&L::max_triangles, 3}}), "declare 4 triangles");
  absl::StatusOr<GltfCharacter> quad_read =
      read(unused_copy, Limits({{&L::max_vertices, 8}, {&L::max_triangles, 4}}));
  ASSERT_TRUE(quad_read.ok()) << quad_read.status();
  EXPECT_EQ(quad_read->mesh.V.rows(), 4) << "the unused mesh is not read";

  // CesiumMan with two morph targets on its one mesh.
  const std::string morphed = dir + "/morphed.glb";
  ASSERT_TRUE(testing::WriteWithMorphTargets(path, morphed).ok());
  const std::vector<unsigned char> with_targets = ReadBytes(morphed);
  expect_refused(with_targets, Limits({{&L::max_morph_targets, 1}}),
                 "gltf: the meshes declare 2 morph targets (over every mesh node and primitive), more than the limit "
                 "of 1");
  // Their deltas: 2 targets of 3,273 vertices.
  expect_refused(with_targets, Limits({{&L::max_morph_deltas, 6545}}),
                 "gltf: the meshes declare 6546 morph target vertices (each target's vertices, over every mesh node "
                 "and primitive), more than the limit of 6545");
  absl::StatusOr<GltfCharacter> targets =
      read(with_targets, Limits({{&L::max_morph_targets, 2}, {&L::max_morph_deltas, 6546}}));
  ASSERT_TRUE(targets.ok()) << targets.status();
  EXPECT_EQ(targets->morph_targets.size(), 2u);
}

// A member name may be spelled with JSON escapes ("\u0074ranslation" is "translation"): it is
// read as the name it spells. The reader's pre-parse pass matched names raw and removed these as
// unknown, so the file was read without them (a rest translation lost, a mesh node unseen).
TEST(GltfRobustnessTest, ReadsMemberNamesSpelledWithEscapes) {
  const std::string dir = TempDir();
  HandMade h;
  h.bone_transform = R"("\u0074ranslation":[0,1,0],"rot\u0061tion":[0,0,0.7071068,0.7071068])";
  const std::string path = WriteHandMade(h, dir + "/escaped.gltf");
  // Node 1's "mesh" escaped too.
  const std::vector<unsigned char> bytes = ReadBytes(path);
  std::string text(bytes.begin(), bytes.end());
  const std::string plain = R"({"mesh":0,"skin":0})";
  const size_t at = text.find(plain);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, plain.size(), R"({"\u006D\u0065sh":0,"skin":0})");
  WriteText(path, text);
  absl::StatusOr<GltfCharacter> c = ReadGltf(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->mesh.V.rows(), 3);
  ASSERT_GE(c->skeleton.joints.size(), 1u);
  EXPECT_LT((c->skeleton.joints[0].rest.translation - Eigen::Vector3d(0, 1, 0)).norm(), 1e-7);
  EXPECT_LT(AngleBetween(c->skeleton.joints[0].rest.rotation, AboutZ(90)), 1e-6);
}

// A mirrored node matrix (orthogonal columns, negative determinant) is read as exactly that
// transform, and an inverse bind matrix must be affine (a projective last row was dropped).
TEST(GltfReadTest, ReadsMirroredNodeMatricesAndRefusesProjectiveInverseBinds) {
  const std::string dir = TempDir();
  const Eigen::Affine3d mirror = Eigen::Translation3d(0.5, -0.25, 2) * Eigen::AngleAxisd(0.7, Eigen::Vector3d(1, 2, 3).normalized()) *
                                 Eigen::Scaling(-1.5, 2.0, 0.5);
  std::vector<std::string> numbers;
  for (int c = 0; c < 4; ++c)
    for (int r = 0; r < 4; ++r) numbers.push_back(absl::StrFormat("%.17g", mirror.matrix()(r, c)));
  HandMade h;
  h.bone_transform = "\"matrix\":[" + absl::StrJoin(numbers, ",") + "]";
  absl::StatusOr<GltfCharacter> c = ReadGltf(WriteHandMade(h, dir + "/mirror.gltf"));
  ASSERT_TRUE(c.ok()) << c.status();
  const Eigen::Matrix4d got = c->skeleton.joints[0].rest.ToAffine().matrix();
  EXPECT_LT((got - mirror.matrix()).cwiseAbs().maxCoeff(), 1e-12) << got;

  // The bone's inverse bind matrix, with a last row of (0, 0, 0.5, 1).
  const std::string path = WriteHandMade(HandMade(), dir + "/projective.gltf");
  std::ifstream in(path);
  nlohmann::json doc = nlohmann::json::parse(in);
  std::vector<float> ibm = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0.5f, 0, 0, 0, 1};  // column-major
  const std::string bytes(reinterpret_cast<const char*>(ibm.data()), ibm.size() * sizeof(float));
  doc["buffers"].push_back({{"byteLength", bytes.size()}, {"uri", "data:application/octet-stream;base64," + Base64(bytes)}});
  doc["bufferViews"].push_back({{"buffer", doc["buffers"].size() - 1}, {"byteLength", bytes.size()}});
  doc["accessors"].push_back(
      {{"bufferView", doc["bufferViews"].size() - 1}, {"componentType", 5126}, {"count", 1}, {"type", "MAT4"}});
  doc["skins"][0]["inverseBindMatrices"] = doc["accessors"].size() - 1;
  WriteText(path, doc.dump());
  absl::StatusOr<GltfCharacter> projective = ReadGltf(path);
  ASSERT_FALSE(projective.ok());
  EXPECT_EQ(projective.status().code(), absl::StatusCode::kInvalidArgument) << projective.status();
  EXPECT_THAT(std::string(projective.status().message()),
              HasSubstr("(skins[0].inverseBindMatrices): matrix 0's last row is (0, 0, 0.5, 1), not (0, 0, 0, 1)"));
  ibm[11] = 0;  // affine: read
  doc["buffers"].back()["uri"] =
      "data:application/octet-stream;base64," +
      Base64(std::string(reinterpret_cast<const char*>(ibm.data()), ibm.size() * sizeof(float)));
  WriteText(path, doc.dump());
  EXPECT_TRUE(ReadGltf(path).ok());
}

// An attribute's count is held to POSITION's before the accessor is decoded: one without a
// buffer view (zeros) declaring 2^25 normals was materialized first (and 16M cost 525 MB).
TEST(GltfRobustnessTest, ComparesAttributeCountsBeforeDecoding) {
  const std::string dir = TempDir();
  const std::string path = WriteHandMade(HandMade(), dir + "/normals.gltf");
  std::ifstream in(path);
  nlohmann::json doc = nlohmann::json::parse(in);
  doc["accessors"].push_back({{"componentType", 5126}, {"count", 33554432}, {"type", "VEC3"}});
  doc["meshes"][0]["primitives"][0]["attributes"]["NORMAL"] = doc["accessors"].size() - 1;
  WriteText(path, doc.dump());
  absl::StatusOr<GltfCharacter> c = ReadGltf(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << c.status();
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr(absl::StrFormat("accessors[%d] (meshes[0].primitives[0].NORMAL): count 33554432 differs "
                                        "from POSITION's 3",
                                        doc["accessors"].size() - 1)));
}

// An inverse-bind accessor may hold more matrices than its skin has joints (the spec allows it,
// and skins may share one): the skin's first ones are read, the rest not even decoded, and a
// sparse entry past them is not looked at. The hand-made quad's two matrices, then 998 others.
TEST(GltfReadTest, ReadsOnlyTheSkinsInverseBindMatrices) {
  std::ifstream quad_in(std::string(SKINNING_SOURCE_DIR) + "/tests/fuzz/seeds/gltf/quad.gltf");
  const nlohmann::json quad = nlohmann::json::parse(quad_in);
  auto read = [](const nlohmann::json& j) {
    const std::string text = j.dump();
    return ReadGltfBytes(text, "gltf");
  };
  absl::StatusOr<GltfCharacter> original = read(quad);
  ASSERT_TRUE(original.ok()) << original.status();
  constexpr int kMatrices = 1000;
  std::vector<float> matrices(kMatrices * 16, 0.0f);
  for (int m = 0; m < kMatrices; ++m) {
    const Eigen::Matrix4d M =
        m < 2 ? original->skeleton.joints[m].inverse_bind.matrix() : Eigen::Matrix4d(Eigen::Matrix4d::Identity() * 2);
    for (int c = 0; c < 4; ++c)
      for (int r = 0; r < 4; ++r) matrices[m * 16 + c * 4 + r] = static_cast<float>(M(r, c));  // column-major
  }
  auto with_matrices = [&](const std::vector<float>& values, const nlohmann::json& sparse) {
    nlohmann::json j = quad;
    const std::string bytes(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
    j["buffers"].push_back({{"byteLength", bytes.size()},
                            {"uri", "data:application/octet-stream;base64," + testing::Base64(bytes)}});
    j["bufferViews"].push_back({{"buffer", j["buffers"].size() - 1}, {"byteLength", bytes.size()}});
    nlohmann::json accessor = {{"bufferView", j["bufferViews"].size() - 1},
                               {"componentType", 5126},
                               {"count", kMatrices},
                               {"type", "MAT4"}};
    if (!sparse.is_null()) accessor["sparse"] = sparse;
    j["accessors"].push_back(accessor);
    j["skins"][0]["inverseBindMatrices"] = j["accessors"].size() - 1;
    return j;
  };
  auto expect_same_binds = [&](const absl::StatusOr<GltfCharacter>& c) {
    ASSERT_TRUE(c.ok()) << c.status();
    for (int j = 0; j < 2; ++j)
      EXPECT_TRUE(c->skeleton.joints[j].inverse_bind.isApprox(original->skeleton.joints[j].inverse_bind, 1e-7)) << j;
  };
  expect_same_binds(read(with_matrices(matrices, nullptr)));

  // Sparse: matrix 0 zeroed in the base and restored by entry 0; entry 1 (index 999, beyond the
  // skin's two) holds a non-finite value, which reading it would refuse.
  std::vector<float> base = matrices;
  std::fill(base.begin(), base.begin() + 16, 0.0f);
  std::vector<float> values(matrices.begin(), matrices.begin() + 16);
  values.resize(32, std::numeric_limits<float>::quiet_NaN());
  const uint32_t indices[2] = {0, kMatrices - 1};
  nlohmann::json j = with_matrices(base, nullptr);
  const std::string sparse_bytes = std::string(reinterpret_cast<const char*>(indices), sizeof indices) +
                                   std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4);
  j["buffers"].push_back({{"byteLength", sparse_bytes.size()},
                          {"uri", "data:application/octet-stream;base64," + testing::Base64(sparse_bytes)}});
  const int b = static_cast<int>(j["buffers"].size()) - 1;
  j["bufferViews"].push_back({{"buffer", b}, {"byteLength", sizeof indices}});
  j["bufferViews"].push_back({{"buffer", b}, {"byteOffset", sizeof indices}, {"byteLength", values.size() * 4}});
  const int views = static_cast<int>(j["bufferViews"].size());
  j["accessors"].back()["sparse"] = {{"count", 2},
                                     {"indices", {{"bufferView", views - 2}, {"componentType", 5125}}},
                                     {"values", {{"bufferView", views - 1}}}};
  expect_same_binds(read(j));
  // The same sparse accessor read whole, by a skin of 1,000 joints (998 more nodes below the
  // tip), is refused for the NaN: the entry is real.
  for (int m = 2; m < kMatrices; ++m) {
    j["nodes"][1]["children"].push_back(j["nodes"].size());
    j["skins"][0]["joints"].push_back(j["nodes"].size());
    j["nodes"].push_back({{"name", absl::StrFormat("extra%d", m)}});
  }
  absl::StatusOr<GltfCharacter> whole = read(j);
  ASSERT_FALSE(whole.ok());
  EXPECT_THAT(std::string(whole.status().message()), HasSubstr("is not finite"));
}

TEST(GltfRobustnessTest, RejectsIndexOrJointOutOfRange) {
  const std::string dir = TempDir();
  {
    HandMade h;
    h.indices = {0, 1, 3};  // 3 vertices
    absl::StatusOr<GltfCharacter> c = ReadGltf(WriteHandMade(h, dir + "/index.gltf"));
    ASSERT_FALSE(c.ok());
    EXPECT_THAT(std::string(c.status().message()), HasSubstr("accessors[5]"));
    EXPECT_THAT(std::string(c.status().message()), HasSubstr("out of range (3 vertices)"));
  }
  {
    HandMade h;
    h.joints[4] = 1;  // vertex 1 uses joint 1 with weight 1; the skin has 1 joint
    h.weights[4] = 1;
    absl::StatusOr<GltfCharacter> c = ReadGltf(WriteHandMade(h, dir + "/joint.gltf"));
    ASSERT_FALSE(c.ok());
    EXPECT_THAT(std::string(c.status().message()), HasSubstr("accessors[1]"));
    EXPECT_THAT(std::string(c.status().message()), HasSubstr("vertex 1 uses joint 1"));
  }
  {
    HandMade h;
    h.weights = {1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0};  // vertex 1 has no weight
    absl::StatusOr<GltfCharacter> c = ReadGltf(WriteHandMade(h, dir + "/zero.gltf"));
    ASSERT_FALSE(c.ok());
    EXPECT_THAT(std::string(c.status().message()), HasSubstr("vertex 1"));
  }
}

TEST(GltfRobustnessTest, RejectsBadAnimationSamplers) {
  const std::string dir = TempDir();
  {
    HandMade h;
    h.times = {0, 1, 1};  // not strictly increasing
    h.values = {0, 0, 0, 1, 1, 1, 2, 2, 2};
    absl::StatusOr<GltfCharacter> c = ReadGltf(WriteHandMade(h, dir + "/times.gltf"));
    ASSERT_FALSE(c.ok());
    EXPECT_THAT(std::string(c.status().message()), HasSubstr("not greater"));
  }
  {
    HandMade h;
    h.times = {0, NAN};
    absl::StatusOr<GltfCharacter> c = ReadGltf(WriteHandMade(h, dir + "/nan.gltf"));
    ASSERT_FALSE(c.ok());
    EXPECT_THAT(std::string(c.status().message()), HasSubstr("accessors[3]"));
  }
  {
    HandMade h;
    h.interpolation = "CUBICSPLINE";  // needs 3 × 2 outputs, has 2
    absl::StatusOr<GltfCharacter> c = ReadGltf(WriteHandMade(h, dir + "/cubic.gltf"));
    ASSERT_FALSE(c.ok());
    EXPECT_THAT(std::string(c.status().message()), HasSubstr("output has 2 values for 2"));
  }
  {
    HandMade h;
    h.interpolation = "SMOOTH";
    EXPECT_FALSE(ReadGltf(WriteHandMade(h, dir + "/interp.gltf")).ok());
  }
}

TEST(GltfRobustnessTest, RejectsMissingAndNonGltfFiles) {
  const std::string dir = TempDir();
  EXPECT_EQ(ReadGltf(dir + "/missing.glb").status().code(), absl::StatusCode::kNotFound);
  WriteText(dir + "/empty.gltf", "");
  EXPECT_FALSE(ReadGltf(dir + "/empty.gltf").ok());
  WriteText(dir + "/text.gltf", "{\"asset\":{\"version\":\"2.0\"}}");
  EXPECT_FALSE(ReadGltf(dir + "/text.gltf").ok());  // valid glTF, but no skin
  WriteText(dir + "/junk.glb", std::string("glTF\x02\0\0\0garbage garbage garbage", 30));
  EXPECT_FALSE(ReadGltf(dir + "/junk.glb").ok());
}

// The JSON values of a parsed document, counted independently of the reader's text scan: the
// top one, every array element and every object member's value.
int64_t JsonValues(const nlohmann::json& j) {
  int64_t n = 1;
  if (j.is_structured())
    for (const nlohmann::json& child : j) n += JsonValues(child);
  return n;
}

// A glTF's JSON is checked before it is parsed: nesting deeper than 64 levels is INVALID_ARGUMENT
// whatever the limits (parsing recursed once per level: a 200 kB file of nested brackets
// overflowed the stack and took the server down), and more values than
// GltfSizeLimits::max_json_values is RESOURCE_EXHAUSTED (each costs 200 to 400 bytes parsed: 25M
// in a 50 MB upload took 4.8 GB). On the seed quad, as .gltf and as .glb, with `extras` on the
// root: 63 nested arrays (64 levels) read, 64 and 100,000 do not; the values are counted as
// nlohmann counts them, with strings holding brackets, commas, escaped quotes and backslashes.
TEST(GltfRobustnessTest, BoundsTheJsonBeforeParsingIt) {
  const std::string seed_path = std::string(SKINNING_SOURCE_DIR) + "/tests/fuzz/seeds/gltf/quad.gltf";
  const nlohmann::json seed = nlohmann::json::parse(testing::FileBytes(seed_path));
  ASSERT_TRUE(ReadGltf(seed_path).ok());
  // The JSON as a .gltf, or as a .glb: the JSON chunk (its buffer still a data: URI), padded.
  auto as_file = [](const std::string& json, bool glb) { return glb ? testing::JoinGlb(json) : json; };
  auto read = [](const std::string& bytes, const GltfSizeLimits& limits = {}) {
    return ReadGltfBytes(bytes, "gltf", limits);
  };
  for (bool glb : {false, true}) {
    SCOPED_TRACE(glb ? "glb" : "gltf");
    const std::string plain = seed.dump();
    ASSERT_TRUE(read(as_file(plain, glb)).ok()) << read(as_file(plain, glb)).status();
    // Depth: the root object is level 1, its extras' n nested arrays levels 2 to n + 1.
    auto nested = [&](int n) {
      return as_file(plain.substr(0, plain.size() - 1) + ",\"extras\":" + std::string(n, '[') + std::string(n, ']') + "}",
                     glb);
    };
    EXPECT_TRUE(read(nested(63)).ok()) << read(nested(63)).status();
    for (int n : {64, 100000}) {
      absl::StatusOr<GltfCharacter> r = read(nested(n));
      ASSERT_FALSE(r.ok()) << n;
      EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << n;
      EXPECT_EQ(r.status().message(), "gltf: its JSON nests arrays and objects deeper than 64 levels") << n;
    }
    // Values: extras of k elements, strings that look like structure among them.
    auto with_extras = [&](int k) {
      nlohmann::json j = seed;
      nlohmann::json extras = nlohmann::json::array();
      const std::vector<nlohmann::json> kinds = {0, "a,[{\"b\\", nlohmann::json::object(), "}],", {1, 2}};
      for (int i = 0; i < k; ++i) extras.push_back(kinds[i % kinds.size()]);
      j["extras"] = extras;
      return j;
    };
    const int64_t limit = JsonValues(with_extras(500));
    const nlohmann::json at = with_extras(500), over = with_extras(501);
    ASSERT_EQ(JsonValues(over), limit + 1);  // the 501st element is a number
    EXPECT_TRUE(read(as_file(at.dump(), glb), Limits({{&L::max_json_values, limit}})).ok());
    absl::StatusOr<GltfCharacter> r = read(as_file(over.dump(), glb), Limits({{&L::max_json_values, limit}}));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_EQ(r.status().message(), absl::StrFormat("gltf: its JSON has %d values, more than the limit of %d",
                                                    JsonValues(over), limit));
    // Pretty-printed (white space everywhere) counts the same.
    EXPECT_TRUE(read(as_file(at.dump(2), glb), Limits({{&L::max_json_values, limit}})).ok());
    EXPECT_FALSE(read(as_file(over.dump(2), glb), Limits({{&L::max_json_values, limit}})).ok());
  }
}

// What the reader removes before parsing is nothing tinygltf's parser reads: on the sample
// characters of the data set and the fuzz seeds (sparse accessors, Draco and meshopt files), the
// model tinygltf parses from the text as it is equals the one it parses after the removal, once
// the parts the reader is known to drop (materials, textures, images, samplers, cameras, extras
// but a mesh's targetNames, extensions other than Draco, meshopt and KHR_animation_pointer) are
// cleared from the first.
TEST(GltfRobustnessTest, RemovalKeepsEverythingTinygltfReads) {
  const std::string seeds = std::string(SKINNING_SOURCE_DIR) + "/tests/fuzz/seeds/gltf/";
  std::vector<std::string> files = {seeds + "quad.gltf", seeds + "sparse_triangle.gltf", seeds + "quad_draco.glb",
                                    seeds + "quad_draco_sequential.glb", seeds + "triangle_meshopt.glb",
                                    seeds + "two_scenes.gltf", seeds + "quad_pointer.gltf"};
  for (const char* sample : {"CesiumMan/CesiumMan.glb", "RiggedFigure/RiggedFigure.glb",
                             "RiggedFigure/RiggedFigure.gltf", "RiggedSimple/RiggedSimple.glb",
                             "RiggedSimple/RiggedSimple.gltf", "SimpleSkin/SimpleSkin.gltf"}) {
    const std::string path = DataPath(std::string("gltf/") + sample);
    SKINNING_REQUIRE_DATA(path);
    files.push_back(path);
  }
  auto keep_extensions = [](tinygltf::ExtensionMap* extensions) {
    for (auto it = extensions->begin(); it != extensions->end();) {
      const bool kept = it->first == "KHR_draco_mesh_compression" || it->first == "EXT_meshopt_compression" ||
                        it->first == "KHR_animation_pointer";
      it = kept ? std::next(it) : extensions->erase(it);
    }
  };
  auto clean = [&](auto* object) {
    object->extras = tinygltf::Value();
    keep_extensions(&object->extensions);
  };
  auto known_parts = [&](tinygltf::Model* m) {
    m->materials.clear(), m->textures.clear(), m->images.clear(), m->samplers.clear(), m->cameras.clear();
    m->lights.clear();
    clean(m);
    clean(&m->asset);
    std::vector<std::string> used;
    for (const std::string& e : m->extensionsUsed)
      if (e == "KHR_mesh_quantization" || e == "KHR_draco_mesh_compression" || e == "EXT_meshopt_compression" ||
          e == "KHR_animation_pointer")
        used.push_back(e);
    m->extensionsUsed = used;
    for (auto& o : m->nodes) clean(&o);
    for (auto& o : m->accessors) clean(&o);
    for (auto& o : m->bufferViews) clean(&o);
    for (auto& o : m->buffers) clean(&o);
    for (auto& o : m->skins) clean(&o);
    for (auto& o : m->scenes) clean(&o);
    for (auto& mesh : m->meshes) {
      const tinygltf::Value names = mesh.extras.Has("targetNames") ? mesh.extras.Get("targetNames") : tinygltf::Value();
      clean(&mesh);
      if (names.Type() != tinygltf::NULL_TYPE) mesh.extras = tinygltf::Value(tinygltf::Value::Object{{"targetNames", names}});
      for (auto& o : mesh.primitives) clean(&o);
    }
    for (auto& animation : m->animations) {
      clean(&animation);
      for (auto& o : animation.channels) {
        clean(&o);
        keep_extensions(&o.target_extensions);
      }
      for (auto& o : animation.samplers) clean(&o);
    }
  };
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    const std::string bytes = testing::FileBytes(file);
    const bool binary = bytes.compare(0, 4, "glTF") == 0;
    std::string json = binary ? testing::SplitGlb(bytes).json : bytes;
    const gltf_internal::GltfJsonLayout layout =
        gltf_internal::ScanGltfJson(reinterpret_cast<const unsigned char*>(json.data()), json.size());
    std::vector<unsigned char> text(json.begin(), json.end());
    gltf_internal::BlankUnread(layout.unread, 0, &text);
    const std::string removed(text.begin(), text.end());
    const std::string base_dir = std::filesystem::path(file).parent_path().string();
    // As the reader parses: after PatchForParser, which makes compressed files acceptable to it.
    auto parse = [&](const std::string& j, tinygltf::Model* model) {
      const std::string file_bytes = binary ? testing::JoinGlb(j, testing::SplitGlb(bytes).rest) : j;
      std::vector<unsigned char> input(file_bytes.begin(), file_bytes.end());
      if (std::optional<std::vector<unsigned char>> patched = gltf_internal::PatchForParser(input, binary)) {
        input = std::move(*patched);
      }
      tinygltf::TinyGLTF loader;
      std::string err, warn;
      const bool ok =
          binary ? loader.LoadBinaryFromMemory(model, &err, &warn, input.data(), static_cast<unsigned>(input.size()),
                                               base_dir)
                 : loader.LoadASCIIFromString(model, &err, &warn, reinterpret_cast<const char*>(input.data()),
                                              static_cast<unsigned>(input.size()), base_dir);
      EXPECT_TRUE(ok) << err;
      return ok;
    };
    tinygltf::Model original, after;
    ASSERT_TRUE(parse(json, &original));
    ASSERT_TRUE(parse(removed, &after));
    const bool had_unread = !original.materials.empty() || !original.images.empty();
    EXPECT_EQ(!layout.unread.empty(), had_unread || removed != json);
    known_parts(&original);
    EXPECT_TRUE(original == after);
    // The same on the JSON, so that a member left at its default value counts too: the text
    // after the removal is the file without those parts (the samples hold nothing else unread).
    nlohmann::json expected = nlohmann::json::parse(json);
    std::function<void(nlohmann::json*)> drop = [&](nlohmann::json* v) {
      if (v->is_array()) {
        for (nlohmann::json& e : *v) drop(&e);
      } else if (v->is_object()) {
        v->erase("extras");
        if (v->contains("extensions")) {
          nlohmann::json kept = nlohmann::json::object();
          for (const char* e : {"KHR_draco_mesh_compression", "EXT_meshopt_compression", "KHR_animation_pointer"})
            if ((*v)["extensions"].contains(e)) kept[e] = (*v)["extensions"][e];
          (*v)["extensions"] = kept;
        }
        for (auto& [key, member] : v->items()) drop(&member);
      }
    };
    for (const char* top : {"materials", "textures", "images", "samplers", "cameras"}) expected.erase(top);
    const nlohmann::json meshes = expected.value("meshes", nlohmann::json::array());
    drop(&expected);
    for (size_t k = 0; k < meshes.size(); ++k) {  // a mesh's extras keep their targetNames
      if (meshes[k].contains("extras")) {
        expected["meshes"][k]["extras"] = nlohmann::json::object();
        if (meshes[k]["extras"].contains("targetNames"))
          expected["meshes"][k]["extras"]["targetNames"] = meshes[k]["extras"]["targetNames"];
      }
    }
    EXPECT_EQ(nlohmann::json::parse(removed), expected);
    EXPECT_EQ(original.nodes.size(), after.nodes.size());
    EXPECT_EQ(original.accessors.size(), after.accessors.size());
  }
}

// Before parsing, the reader removes what it never reads: every member tinygltf's parser does not
// look up (the top-level materials, textures, images, samplers and cameras among them: 1M empty
// materials in a 3 MB file took 2.4 GB parsed; 1M unknown members of one node 163 MB), extras but
// a mesh's targetNames, extensions other than Draco, meshopt and KHR_animation_pointer, and their
// entries in extensionsUsed; and it counts the objects the parser makes a struct for
// (GltfSizeLimits::max_struct_bytes: 1M empty nodes took 600 MB). Checked on the seed quad with all
// of those added, unknown members first, in the middle and last of every kind of object, each
// holding text that looks like structure, and an image whose data: URI is not base64, which
// tinygltf itself refuses: after the removal the text parses (nlohmann) to the file without them,
// compact and pretty-printed; it reads as the seed does, as .gltf, and as the Draco seed .glb with
// its binary chunk; the object counts are nlohmann's; a mesh's extras keep their targetNames among
// other members (CesiumMan with two morph targets); an unknown key that is not valid JSON text is
// left for the parser to refuse.
TEST(GltfRobustnessTest, ParsesOnlyWhatItReads) {
  using gltf_internal::GltfObject;
  const std::string seed_path = std::string(SKINNING_SOURCE_DIR) + "/tests/fuzz/seeds/gltf/quad.gltf";
  const std::string draco_path = std::string(SKINNING_SOURCE_DIR) + "/tests/fuzz/seeds/gltf/quad_draco.glb";
  const nlohmann::json seed = nlohmann::json::parse(testing::FileBytes(seed_path));
  absl::StatusOr<GltfCharacter> expected = ReadGltf(seed_path);
  ASSERT_TRUE(expected.ok()) << expected.status();
  // Adds what is never read to a glTF's JSON; `removed` gets the JSON as the reader parses it.
  const nlohmann::json tricky = {{"s", "}]\",{[\\"}, {"a", {1, "]", nlohmann::json::object()}}};
  // Unknown members first, in the middle and last (nlohmann writes keys sorted), one with a key
  // of non-ASCII UTF-8 and one with an escape in its key.
  auto add_unknown = [&](nlohmann::json* object) {
    for (const char* key : {"aaa_unknown", "mmm_unknown", "zzz_unknown", "\u00fcnknown", "x\"y"})
      (*object)[key] = tricky;
  };
  auto add_unread = [&](nlohmann::json j, nlohmann::json* removed) {
    *removed = j;
    j["materials"] = {{{"name", "m}]"}, {"pbrMetallicRoughness", {{"baseColorFactor", {1, 0, 0, 1}}}}}};
    j["meshes"][0]["primitives"][0]["material"] = 0;
    (*removed)["meshes"][0]["primitives"][0]["material"] = 0;
    j["images"] = {{{"uri", "data:image/png;base64,%%not base64%%"}}};
    j["textures"] = {{{"source", 0}, {"sampler", 0}}};
    j["samplers"] = {nlohmann::json::object()};
    j["cameras"] = {{{"type", "perspective"}, {"perspective", {{"yfov", 1.0}, {"znear", 0.1}}}}};
    j["extensionsUsed"] = {"KHR_lights_punctual", "KHR_mesh_quantization", "VENDOR_node"};
    (*removed)["extensionsUsed"] = {"KHR_mesh_quantization"};
    j["extensions"]["KHR_lights_punctual"] = {{"lights", {{{"type", "point"}}}}};
    (*removed)["extensions"] = nlohmann::json::object();
    j["nodes"][1]["extras"] = tricky;
    j["nodes"][1]["extensions"]["VENDOR_node"] = tricky;
    (*removed)["nodes"][1]["extensions"] = nlohmann::json::object();
    j["animations"][0]["channels"][0]["extras"] = {1, 2, 3};
    j["meshes"][0]["extras"] = {{"kept", tricky}};
    (*removed)["meshes"][0]["extras"] = nlohmann::json::object();
    add_unknown(&j);
    add_unknown(&j["asset"]);
    for (const char* array : {"nodes", "accessors", "meshes", "skins", "animations", "buffers", "bufferViews", "scenes"})
      for (nlohmann::json& object : j[array]) add_unknown(&object);
    for (nlohmann::json& mesh : j["meshes"])
      for (nlohmann::json& primitive : mesh["primitives"]) add_unknown(&primitive);
    for (nlohmann::json& animation : j["animations"]) {
      for (const char* array : {"channels", "samplers"})
        for (nlohmann::json& object : animation[array]) add_unknown(&object);
      for (nlohmann::json& channel : animation["channels"]) add_unknown(&channel["target"]);
    }
    return j;
  };
  auto layout_of = [](const std::string& text) {
    return gltf_internal::ScanGltfJson(reinterpret_cast<const unsigned char*>(text.data()), text.size());
  };
  auto remove = [&](const std::string& text) {
    std::vector<unsigned char> bytes(text.begin(), text.end());
    gltf_internal::BlankUnread(layout_of(text).unread, 0, &bytes);
    EXPECT_EQ(bytes.size(), text.size());
    return nlohmann::json::parse(bytes.begin(), bytes.end());
  };
  nlohmann::json removed;
  const nlohmann::json full = add_unread(seed, &removed);
  for (int indent : {-1, 2}) {
    SCOPED_TRACE(indent);
    const std::string text = full.dump(indent);
    // tinygltf alone refuses the file (the image), so the reader cannot be parsing it.
    {
      tinygltf::Model model;
      tinygltf::TinyGLTF loader;
      std::string err, warn;
      EXPECT_FALSE(loader.LoadASCIIFromString(&model, &err, &warn, text.data(), static_cast<unsigned>(text.size()), ""));
    }
    const gltf_internal::GltfJsonLayout layout = layout_of(text);
    EXPECT_EQ(remove(text), removed);
    absl::StatusOr<GltfCharacter> read = ReadGltfBytes(text, "gltf");
    ASSERT_TRUE(read.ok()) << read.status();
    ExpectSameCharacter(*read, *expected);
    // The counts, each as nlohmann counts it, and the bytes they stand for.
    int64_t primitives = 0, bytes = 0;
    int64_t attributes = 0;
    for (const nlohmann::json& mesh : full["meshes"]) {
      primitives += mesh["primitives"].size();
      for (const nlohmann::json& primitive : mesh["primitives"]) attributes += primitive["attributes"].size();
    }
    const std::pair<GltfObject, int64_t> counts[] = {
        {GltfObject::kNode, full["nodes"].size()},
        {GltfObject::kAccessor, full["accessors"].size()},
        {GltfObject::kMesh, full["meshes"].size()},
        {GltfObject::kPrimitive, primitives},
        {GltfObject::kSkin, full["skins"].size()},
        {GltfObject::kAnimation, full["animations"].size()},
        {GltfObject::kChannel, full["animations"][0]["channels"].size()},
        {GltfObject::kSampler, full["animations"][0]["samplers"].size()},
        {GltfObject::kBuffer, full["buffers"].size()},
        {GltfObject::kBufferView, full["bufferViews"].size()},
        {GltfObject::kScene, full["scenes"].size()},
        {GltfObject::kAttribute, attributes}};
    const size_t sizes[] = {sizeof(tinygltf::Node), sizeof(tinygltf::Accessor), sizeof(tinygltf::Mesh),
                            sizeof(tinygltf::Primitive), sizeof(tinygltf::Skin), sizeof(tinygltf::Animation),
                            sizeof(tinygltf::AnimationChannel), sizeof(tinygltf::AnimationSampler),
                            sizeof(tinygltf::Buffer), sizeof(tinygltf::BufferView), sizeof(tinygltf::Scene),
                            // a map entry and its tree node's links and color
                            sizeof(std::pair<const std::string, int>) + 32};
    for (size_t k = 0; k < std::size(counts); ++k) {
      EXPECT_EQ(layout.counts[static_cast<int>(counts[k].first)], counts[k].second) << GltfObjectName(counts[k].first);
      bytes += counts[k].second * static_cast<int64_t>(sizes[k]);
    }
    EXPECT_EQ(layout.counts[static_cast<int>(GltfObject::kMorphTarget)], 0);
    EXPECT_EQ(layout.struct_bytes, bytes);
    // The limit: at it the file reads; 1,000 more empty nodes (unused by the scene) are refused.
    EXPECT_TRUE(ReadGltfBytes(text, "gltf", Limits({{&L::max_struct_bytes, bytes}})).ok());
    nlohmann::json more = full;
    for (int i = 0; i < 1000; ++i) more["nodes"].push_back(nlohmann::json::object());
    absl::StatusOr<GltfCharacter> over = ReadGltfBytes(more.dump(indent), "gltf", Limits({{&L::max_struct_bytes, bytes}}));
    ASSERT_FALSE(over.ok());
    EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
    const int64_t over_bytes = bytes + 1000 * static_cast<int64_t>(sizeof(tinygltf::Node));
    EXPECT_EQ(over.status().message(),
              absl::StrFormat("gltf: its JSON's objects (%d nodes, and others) would take %d bytes parsed, more than "
                              "the limit of %d",
                              full["nodes"].size() + 1000, over_bytes, bytes));
    EXPECT_TRUE(ReadGltfBytes(more.dump(indent), "gltf", Limits({{&L::max_struct_bytes, over_bytes}})).ok());
    // An unknown key that is not valid JSON text (a byte of a corrupted file, a lone surrogate)
    // stays for the parser, which refuses it, as it did before anything was removed.
    for (const std::string& bad : {std::string("\"\xEEx\""), std::string("\"\\ud800x\"")}) {
      std::string corrupt = text;
      const size_t at = corrupt.find("\"zzz_unknown\"");
      ASSERT_NE(at, std::string::npos);
      corrupt.replace(at, std::strlen("\"zzz_unknown\""), bad);
      EXPECT_FALSE(ReadGltfBytes(corrupt, "gltf").ok()) << bad;
      EXPECT_TRUE(ReadGltfBytes(corrupt.replace(corrupt.find(bad), bad.size(), "\"ok\""), "gltf").ok()) << bad;
    }
  }
  // A .glb with a binary chunk: the Draco seed, its extension kept, the rest removed in place.
  const std::string draco = testing::FileBytes(draco_path);
  absl::StatusOr<GltfCharacter> draco_expected = ReadGltf(draco_path);
  ASSERT_TRUE(draco_expected.ok()) << draco_expected.status();
  const testing::GlbChunks draco_chunks = testing::SplitGlb(draco);
  nlohmann::json draco_removed;
  const std::string glb =
      testing::JoinGlb(add_unread(nlohmann::json::parse(draco_chunks.json), &draco_removed).dump(), draco_chunks.rest);
  absl::StatusOr<GltfCharacter> read = ReadGltfBytes(glb, "glb");
  ASSERT_TRUE(read.ok()) << read.status();
  ExpectSameCharacter(*read, *draco_expected);

  // A mesh's extras: targetNames kept among other members, which go.
  const std::string cesium = DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(cesium);
  const std::string morphed = TempDir() + "/morphed_unread.glb";
  ASSERT_TRUE(testing::WriteWithMorphTargets(cesium, morphed).ok());
  const testing::GlbChunks morphed_chunks = testing::SplitGlb(testing::FileBytes(morphed));
  const nlohmann::json morphed_json = nlohmann::json::parse(morphed_chunks.json);
  const nlohmann::json names = morphed_json["meshes"][0]["extras"]["targetNames"];
  ASSERT_EQ(names, nlohmann::json({"bulge", "lean"}));
  for (int indent : {-1, 2}) {
    SCOPED_TRACE(indent);
    nlohmann::json j = morphed_json;
    j["meshes"][0]["extras"] = {{"a", tricky}, {"targetNames", names}, {"z", {{"targetNames", {"no"}}, {"n", 1}}}};
    const std::string text = j.dump(indent);
    nlohmann::json expected_json = j;
    expected_json["meshes"][0]["extras"] = {{"targetNames", names}};
    for (const char* top : {"materials", "images", "textures", "samplers", "cameras"}) expected_json.erase(top);
    EXPECT_TRUE(remove(text) == expected_json);
    absl::StatusOr<GltfCharacter> c = ReadGltfBytes(testing::JoinGlb(text, morphed_chunks.rest), "glb");
    ASSERT_TRUE(c.ok()) << c.status();
    ASSERT_EQ(c->morph_targets.size(), 2u);
    EXPECT_EQ(c->morph_targets[0].name, "bulge");
    EXPECT_EQ(c->morph_targets[1].name, "lean");
  }
}

// Morph targets are written with the mesh and read back: on one part every target, with its
// name, default weight and deltas; on several parts, each part gets the targets that move it
// and the reader names them "<part>/<target>".
TEST(GltfWriteTest, MorphTargetsRoundTripOnOneAndOnSeveralParts) {
  const TestCharacter c = MakeCharacter(2);
  Mesh mesh = c.mesh;
  mesh.F.resize(2, 3);
  mesh.F << 0, 1, 2, 3, 4, 5;  // two separate triangles, one per part
  MorphTarget both{"both", RowMatrixX3d::Zero(6, 3), RowMatrixX3d::Zero(6, 3), 0.25};
  both.dV.col(0).setConstant(0.1);
  both.dN.col(2).setConstant(0.05);
  MorphTarget second{"second_only", RowMatrixX3d::Zero(6, 3), RowMatrixX3d(0, 3), 0.0};
  second.dV.bottomRows(3).col(1).setConstant(0.2);
  const std::string dir = TempDir();

  ASSERT_TRUE(WriteSkinnedGltf(dir + "/one.glb", mesh, c.skeleton, c.weights, {}, {}, {both, second}).ok());
  auto one = ReadGltf(dir + "/one.glb");
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_EQ(one->morph_targets.size(), 2u);
  EXPECT_EQ(one->morph_targets[0].name, "both");
  EXPECT_EQ(one->morph_targets[0].default_weight, 0.25);
  EXPECT_TRUE(one->morph_targets[0].dV.isApprox(both.dV, 1e-7));
  EXPECT_TRUE(one->morph_targets[0].dN.isApprox(both.dN, 1e-7));
  EXPECT_EQ(one->morph_targets[1].name, "second_only");
  EXPECT_TRUE(one->morph_targets[1].dV.isApprox(second.dV, 1e-7));

  // An animation of both targets' weights: on several parts, each part's mesh gets the keys of
  // the targets it has.
  Animation animation;
  animation.name = "blink";
  animation.morph_channels = {MorphWeightChannel{0, 2, Interpolation::kLinear, {0.0, 0.5, 1.0},
                                                 {0.25, 0.0, 1.0, 0.5, 0.0, 1.0}}};
  animation.end = 1.0;
  const std::vector<MeshPart> parts = {{"first", 0, 3}, {"second", 3, 3}};
  ASSERT_TRUE(
      WriteSkinnedGltf(dir + "/two.glb", mesh, c.skeleton, c.weights, {animation}, parts, {both, second}).ok());
  auto two = ReadGltf(dir + "/two.glb");
  ASSERT_TRUE(two.ok()) << two.status();
  std::vector<std::string> names;
  for (const MorphTarget& t : two->morph_targets) names.push_back(t.name);
  EXPECT_THAT(names, ::testing::ElementsAre("first/both", "second/both", "second/second_only"));
  // Summed over the parts, the targets move the mesh as the originals do.
  RowMatrixX3d sum_both = RowMatrixX3d::Zero(6, 3);
  for (int t = 0; t < 2; ++t) sum_both += two->morph_targets[t].dV;
  EXPECT_TRUE(sum_both.isApprox(both.dV, 1e-7));
  EXPECT_TRUE(two->morph_targets[2].dV.isApprox(second.dV, 1e-7));
  // A channel per part's node; at any time "first/both" and "second/both" weigh what "both" did.
  ASSERT_EQ(two->animations.size(), 1u);
  EXPECT_EQ(two->animations[0].morph_channels.size(), 2u);
  for (double t = -0.25; t <= 1.25; t += 1.0 / 32) {
    const std::vector<double> want = SampleMorphWeights(animation, t, {0.25, 0.0});
    const std::vector<double> got = SampleMorphWeights(two->animations[0], t, {0.25, 0.25, 0.0});
    EXPECT_NEAR(got[0], want[0], 1e-7) << t;
    EXPECT_NEAR(got[1], want[0], 1e-7) << t;
    EXPECT_NEAR(got[2], want[1], 1e-7) << t;
  }
  SKINNING_EXPECT_VALID_GLTF((std::vector<std::string>{dir + "/one.glb", dir + "/two.glb"}));
}

// Writes are whole or not at all. A file size limit (RLIMIT_FSIZE, set in a child process)
// makes the write fail part way, as a full disk does: the writer says so, the file there before
// is left as it was and no temporary file is left (tinygltf's own writer left a cut-off .glb and
// answered OK). A folder named as the file to read is an error, not an exception.
TEST(GltfWriteTest, AWriteThatFailsPartWayLeavesThePreviousFileAndNoTemporary) {
  const std::string dir = TempDir();
  const TestCharacter in = MakeCharacter(4);
  for (const std::string name : {"rig.glb", "rig.gltf", "weights.dmat"}) {
    SCOPED_TRACE(name);
    const std::string path = dir + "/" + name;
    { std::ofstream(path) << "the previous file"; }
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::signal(SIGXFSZ, SIG_IGN);
      const struct rlimit limit = {512, 512};
      ::setrlimit(RLIMIT_FSIZE, &limit);
      const absl::Status s = absl::EndsWith(name, ".dmat")
                                 ? WriteDmat(path, Eigen::MatrixXd::Random(100, 20))
                                 : WriteSkinnedGltf(path, in.mesh, in.skeleton, in.weights, in.animations);
      ::_exit(!s.ok() && absl::StrContains(s.message(), path) ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "the failed write was not reported naming the file";
    std::ifstream back(path);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(back), {}), "the previous file");
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      files += e.path().filename().string().find(".tmp.") != std::string::npos;
    EXPECT_EQ(files, 0) << "a temporary file was left";
  }
  EXPECT_EQ(ReadGltf(dir).status().code(), absl::StatusCode::kFailedPrecondition) << ReadGltf(dir).status();
  EXPECT_THAT(std::string(ReadGltf(dir).status().message()), ::testing::HasSubstr("Is a directory"));
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
