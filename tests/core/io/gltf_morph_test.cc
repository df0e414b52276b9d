// Morph targets read from a real character (CesiumMan with two targets added by the test).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <tiny_gltf.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/io/gltf.h"
#include "tests/support/data.h"
#include "tests/support/glb.h"
#include "tests/support/gltf_reference.h"
#include "tests/support/gltf_validator.h"
#include "tests/support/morph_gltf.h"
#include "tests/support/server_process.h"
#include "tests/support/tinygltf_load.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

namespace ref = ::skinning::testing::gltf_reference;

TEST(GltfMorph, ReadsTargetsNamesAndDefaultsAndTheyMorphAsTheSpecSays) {
  const std::string in = testing::DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(in);
  const std::filesystem::path dir = testing::MakeTempDir("gltf_morph");
  const std::string path = (dir / "CesiumManMorph.glb").string();
  ASSERT_TRUE(testing::WriteWithMorphTargets(in, path).ok());
  SKINNING_EXPECT_VALID_GLTF(std::vector<std::string>{path});

  absl::StatusOr<GltfCharacter> plain = ReadGltf(in);
  absl::StatusOr<GltfCharacter> c = ReadGltf(path);
  ASSERT_TRUE(plain.ok() && c.ok()) << c.status();
  ASSERT_EQ(c->morph_targets.size(), 2u);
  EXPECT_EQ(c->morph_targets[0].name, "bulge");
  EXPECT_EQ(c->morph_targets[1].name, "lean");
  EXPECT_EQ(c->morph_targets[0].default_weight, 0.5);
  EXPECT_EQ(c->morph_targets[1].default_weight, 0.0);
  EXPECT_EQ(c->morph_targets[0].dN.rows(), c->mesh.V.rows()) << "bulge has NORMAL deltas";
  EXPECT_EQ(c->morph_targets[1].dN.rows(), 0);
  EXPECT_EQ(c->mesh.V, plain->mesh.V) << "the base mesh is not morphed";

  // V + Σ w dV in the bind pose equals the reference's morphed bind positions.
  for (const std::vector<double>& w : {std::vector<double>{0.5, 0.0}, {0.2, 0.8}}) {
    absl::StatusOr<ref::SkinnedPositions> bind =
        ref::SkinAtTime(path, -1, 0.0, ref::Blend::kLinear, &w);
    ASSERT_TRUE(bind.ok()) << bind.status();
    ASSERT_EQ(bind->rest.size(), static_cast<size_t>(c->mesh.V.rows()));
    double worst = 0, moved = 0;
    for (size_t i = 0; i < bind->rest.size(); ++i) {
      const Eigen::Vector3d morphed = c->mesh.V.row(i).transpose() +
                                      w[0] * c->morph_targets[0].dV.row(i).transpose() +
                                      w[1] * c->morph_targets[1].dV.row(i).transpose();
      worst = std::max(worst, (morphed - bind->rest[i]).norm());
      moved = std::max(moved, (morphed - c->mesh.V.row(i).transpose()).norm());
    }
    EXPECT_LT(worst, 1e-6);
    EXPECT_GT(moved, 1e-3);
  }
}

// The same targets stored as sparse accessors (nonzero elements over zeros; a base view with a
// sparse list restoring half of it) read to exactly the numbers of the dense file, pass the
// Khronos validator, and morph as the glTF reference (its own sparse reading) says.
TEST(GltfMorph, SparseTargetsReadAsTheirDenseTwin) {
  const std::string in = testing::DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(in);
  const std::filesystem::path dir = testing::MakeTempDir("gltf_morph_sparse");
  const std::string dense_path = (dir / "dense.glb").string(), sparse_path = (dir / "sparse.glb").string();
  ASSERT_TRUE(testing::WriteWithMorphTargets(in, dense_path).ok());
  ASSERT_TRUE(testing::WriteWithMorphTargets(in, sparse_path, testing::MorphEncoding::kSparse).ok());
  SKINNING_EXPECT_VALID_GLTF(std::vector<std::string>{sparse_path});

  // The file is sparse where the test says: some targets list fewer elements than they have,
  // over no view; one lists half over a base view.
  {
    absl::StatusOr<tinygltf::Model> loaded = testing::LoadTinyGltf(sparse_path);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    const tinygltf::Model& model = *loaded;
    int over_zeros = 0, over_base = 0, omitted = 0;
    for (const tinygltf::Primitive& prim : model.meshes[0].primitives)
      for (const auto& target : prim.targets)
        for (const auto& [attribute, index] : target) {
          const tinygltf::Accessor& a = model.accessors[index];
          ASSERT_TRUE(a.sparse.isSparse) << attribute;
          if (a.bufferView < 0) {
            ++over_zeros;
            omitted += static_cast<int>(a.count) - a.sparse.count;
          } else {
            ++over_base;
            EXPECT_EQ(a.sparse.count, static_cast<int>((a.count + 1) / 2));
          }
        }
    EXPECT_GT(over_zeros, 0);
    EXPECT_GT(over_base, 0);
    EXPECT_GT(omitted, 0) << "every element listed: the zeros base is not exercised";
    std::printf("sparse targets: %d over zeros (%d elements left to the zeros), %d over a base view\n",
                over_zeros, omitted, over_base);
  }

  absl::StatusOr<GltfCharacter> dense = ReadGltf(dense_path);
  absl::StatusOr<GltfCharacter> sparse = ReadGltf(sparse_path);
  ASSERT_TRUE(dense.ok()) << dense.status();
  ASSERT_TRUE(sparse.ok()) << sparse.status();
  EXPECT_EQ(sparse->mesh.V, dense->mesh.V);
  ASSERT_EQ(sparse->morph_targets.size(), dense->morph_targets.size());
  for (size_t t = 0; t < dense->morph_targets.size(); ++t) {
    EXPECT_EQ(sparse->morph_targets[t].name, dense->morph_targets[t].name);
    EXPECT_EQ(sparse->morph_targets[t].dV, dense->morph_targets[t].dV) << "target " << t;
    EXPECT_EQ(sparse->morph_targets[t].dN, dense->morph_targets[t].dN) << "target " << t;
  }
  const std::vector<double> w = {0.2, 0.8};
  absl::StatusOr<ref::SkinnedPositions> bind = ref::SkinAtTime(sparse_path, -1, 0.0, ref::Blend::kLinear, &w);
  ASSERT_TRUE(bind.ok()) << bind.status();
  ASSERT_EQ(bind->rest.size(), static_cast<size_t>(sparse->mesh.V.rows()));
  double worst = 0;
  for (size_t i = 0; i < bind->rest.size(); ++i) {
    const Eigen::Vector3d morphed = sparse->mesh.V.row(i).transpose() +
                                    w[0] * sparse->morph_targets[0].dV.row(i).transpose() +
                                    w[1] * sparse->morph_targets[1].dV.row(i).transpose();
    worst = std::max(worst, (morphed - bind->rest[i]).norm());
  }
  EXPECT_LT(worst, 1e-6);
  std::filesystem::remove_all(dir);
}

// UniVRM (VRM 0.x avatars, as VRoid Studio exports them) names a mesh's targets in each
// primitive's extras.targetNames, not the mesh's: those names are read too, so a pose can set the
// avatar's blend shapes by name. The mesh's names come first where both are given; a mesh with
// neither has target0, target1, ... (the names were target0, target1 for every VRM 0.x avatar).
TEST(GltfMorph, TargetNamesOfPrimitivesAsUniVrmWritesThemAreRead) {
  const std::string in = testing::DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(in);
  const std::filesystem::path dir = testing::MakeTempDir("gltf_morph_names");
  const std::string path = (dir / "CesiumManMorph.glb").string();
  ASSERT_TRUE(testing::WriteWithMorphTargets(in, path).ok());
  std::ifstream file(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const testing::GlbChunks chunks = testing::SplitGlb(bytes);
  const nlohmann::json doc = nlohmann::json::parse(chunks.json);
  ASSERT_EQ(doc["meshes"][0]["extras"]["targetNames"], nlohmann::json({"bulge", "lean"}));
  auto names_of = [&](const nlohmann::json& edited) {
    std::vector<std::string> names;
    absl::StatusOr<GltfCharacter> c = ReadGltfBytes(testing::JoinGlb(edited.dump(), chunks.rest), "gltf");
    EXPECT_TRUE(c.ok()) << c.status();
    if (c.ok())
      for (const MorphTarget& t : c->morph_targets) names.push_back(t.name);
    return names;
  };
  nlohmann::json univrm = doc;
  univrm["meshes"][0].erase("extras");
  for (nlohmann::json& primitive : univrm["meshes"][0]["primitives"])
    primitive["extras"] = {{"targetNames", {"Fcl_ALL_Joy", "Fcl_EYE_Close"}}};
  EXPECT_THAT(names_of(univrm), ::testing::ElementsAre("Fcl_ALL_Joy", "Fcl_EYE_Close"));
  nlohmann::json both = univrm;
  both["meshes"][0]["extras"] = doc["meshes"][0]["extras"];
  EXPECT_THAT(names_of(both), ::testing::ElementsAre("bulge", "lean"));
  nlohmann::json neither = univrm;
  for (nlohmann::json& primitive : neither["meshes"][0]["primitives"]) primitive["extras"] = {{"other", 1}};
  EXPECT_THAT(names_of(neither), ::testing::ElementsAre("target0", "target1"));
}

// WriteSkinnedGltf writes an animation's morph target weights: a "weights" channel on the mesh
// node. The file's channel reads back as it was (keys, interpolation, values), a CUBICSPLINE
// channel keeps its tangents, and two channels that each move some of a mesh's targets become one
// whose LINEAR keys, at the union of their times, weigh the targets as the two did at any time.
// A channel of targets the rig does not have is refused. (The writer used to drop every weights
// channel: a baked character lost its face animation.)
TEST(GltfMorph, WrittenAnimationsKeepTheirMorphTargetWeights) {
  const std::string in = testing::DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(in);
  const std::filesystem::path dir = testing::MakeTempDir("gltf_morph_write");
  const std::string path = (dir / "CesiumManMorph.glb").string();
  ASSERT_TRUE(testing::WriteWithMorphTargets(in, path).ok());
  absl::StatusOr<GltfCharacter> a = ReadGltf(path);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->animations.size(), 1u);
  ASSERT_EQ(a->animations[0].morph_channels.size(), 1u);
  auto write_and_read = [&](const std::vector<Animation>& animations, const std::string& name) {
    const std::string out = (dir / name).string();
    absl::Status written = WriteSkinnedGltf(out, a->mesh, a->skeleton, a->weights, animations, a->MeshParts(),
                                            a->morph_targets);
    EXPECT_TRUE(written.ok()) << written;
    SKINNING_EXPECT_VALID_GLTF(std::vector<std::string>{out});
    return ReadGltf(out);
  };
  auto expect_same_keys = [](const MorphWeightChannel& got, const MorphWeightChannel& want) {
    EXPECT_EQ(got.first_target, want.first_target);
    EXPECT_EQ(got.count, want.count);
    EXPECT_EQ(got.interpolation, want.interpolation);
    ASSERT_EQ(got.times.size(), want.times.size());
    ASSERT_EQ(got.values.size(), want.values.size());
    for (size_t i = 0; i < want.times.size(); ++i) EXPECT_EQ(got.times[i], static_cast<float>(want.times[i])) << i;
    for (size_t i = 0; i < want.values.size(); ++i) EXPECT_EQ(got.values[i], static_cast<float>(want.values[i])) << i;
  };

  // The file's channel (LINEAR, both targets), and the joint channels beside it.
  absl::StatusOr<GltfCharacter> b = write_and_read(a->animations, "linear.glb");
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(b->animations.size(), 1u);
  EXPECT_EQ(b->animations[0].channels.size(), a->animations[0].channels.size());
  ASSERT_EQ(b->animations[0].morph_channels.size(), 1u);
  expect_same_keys(b->animations[0].morph_channels[0], a->animations[0].morph_channels[0]);

  // CUBICSPLINE keys of one target: the other keeps its default weight (0.5) and no slope.
  Animation cubic = a->animations[0];
  MorphWeightChannel& only = cubic.morph_channels[0];
  only = MorphWeightChannel{1, 1, Interpolation::kCubicSpline, {0.25, 1.0, 1.5}, {0.5, 0.0, -1.0,  // in, value, out
                                                                                 2.0, 0.8, 0.0,
                                                                                 0.0, 0.3, 4.0}};
  b = write_and_read({cubic}, "cubic.glb");
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(b->animations[0].morph_channels.size(), 1u);
  MorphWeightChannel want{0, 2, Interpolation::kCubicSpline, only.times, {}};
  for (size_t key = 0; key < only.times.size(); ++key)
    for (int block = 0; block < 3; ++block) want.values.insert(want.values.end(), {block == 1 ? 0.5 : 0.0,
                                                                                   only.values[key * 3 + block]});
  expect_same_keys(b->animations[0].morph_channels[0], want);

  // Two LINEAR channels, one a target: one channel at the union of their times.
  Animation two = a->animations[0];
  two.morph_channels = {MorphWeightChannel{0, 1, Interpolation::kLinear, {0.0, 0.5, 2.0}, {0.0, 1.0, 0.25}},
                        MorphWeightChannel{1, 1, Interpolation::kLinear, {0.25, 1.0}, {0.75, 0.0}}};
  b = write_and_read({two}, "two.glb");
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(b->animations[0].morph_channels.size(), 1u);
  const MorphWeightChannel& merged = b->animations[0].morph_channels[0];
  EXPECT_EQ(merged.interpolation, Interpolation::kLinear);
  EXPECT_THAT(merged.times, ::testing::ElementsAre(0.0, 0.25, 0.5, 1.0, 2.0));
  const std::vector<double> defaults = {0.5, 0.0};
  double most = 0;
  for (double t = -0.5; t <= 2.5; t += 1.0 / 64) {
    const std::vector<double> x = SampleMorphWeights(b->animations[0], t, defaults);
    const std::vector<double> y = SampleMorphWeights(two, t, defaults);
    for (int i = 0; i < 2; ++i) most = std::max(most, std::abs(x[i] - y[i]));
  }
  EXPECT_LT(most, 1e-6);

  Animation past = a->animations[0];
  past.morph_channels[0].first_target = 1;  // targets 1 and 2 of 2
  absl::Status refused = WriteSkinnedGltf((dir / "past.glb").string(), a->mesh, a->skeleton, a->weights, {past},
                                          a->MeshParts(), a->morph_targets);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(), ::testing::HasSubstr("animations[0].morph_channels[0]: targets [1, 3) are out of "
                                                      "range (2 morph targets)"));
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
