// Morph targets read from a real character (CesiumMan with two targets added by the test).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <tiny_gltf.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "absl/strings/str_format.h"
#include "core/io/gltf.h"
#include "tests/support/data.h"
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

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
