// Morph targets read from a real character (CesiumMan with two targets added by the test).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/strings/str_format.h"
#include "core/io/gltf.h"
#include "tests/support/data.h"
#include "tests/support/gltf_reference.h"
#include "tests/support/gltf_validator.h"
#include "tests/support/morph_gltf.h"

namespace skinning {
namespace {

namespace ref = ::skinning::testing::gltf_reference;

TEST(GltfMorph, ReadsTargetsNamesAndDefaultsAndTheyMorphAsTheSpecSays) {
  const std::string in = testing::DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(in);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / absl::StrFormat("gltf_morph_%d", getpid());
  std::filesystem::create_directories(dir);
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

}  // namespace
}  // namespace skinning
