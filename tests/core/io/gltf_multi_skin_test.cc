// Files with several skins over one node tree (one mesh instanced by several nodes, each with its
// own skin), read into one rig; checked against the independent glTF reference in tests/support.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/strings/str_format.h"
#include "core/io/gltf.h"
#include "tests/support/gltf_reference.h"
#include "tests/support/gltf_validator.h"
#include "tests/support/multi_skin_gltf.h"

namespace skinning {
namespace {

namespace ref = ::skinning::testing::gltf_reference;
using ::testing::HasSubstr;

std::string TempFile(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    absl::StrFormat("gltf_multi_skin_%d", getpid());
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

TEST(GltfMultiSkin, TheTestFileIsValidGltf) {
  SKINNING_EXPECT_VALID_GLTF(std::vector<std::string>{
      testing::WriteMultiSkinGltf(testing::MultiSkinGltf(), TempFile("valid.gltf"))});
}

// Every node's vertices are read, in node order, into one rig whose joints are the union of the
// skins'; each node's rest vertices are where the spec puts them in the bind pose (the skins
// bind the one mesh at three places: skins 1 and 2 differ from skin 0 at the shared root by a
// rotation, which the reader moves into the vertices).
TEST(GltfMultiSkin, ReadsEverySkinnedNodeIntoOneRig) {
  const testing::MultiSkinGltf spec;
  const std::string path = testing::WriteMultiSkinGltf(spec, TempFile("three.gltf"));
  absl::StatusOr<GltfCharacter> c = ReadGltf(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->num_skins, spec.chains);
  EXPECT_EQ(c->num_mesh_nodes, spec.chains);
  EXPECT_EQ(c->num_skin_joints, 1 + spec.chains * spec.chain_joints);
  ASSERT_EQ(c->parts.size(), static_cast<size_t>(spec.chains));
  const int per_node = spec.rings * spec.segments;
  EXPECT_EQ(c->mesh.V.rows(), spec.chains * per_node);
  EXPECT_EQ(c->mesh.F.rows(), spec.chains * 2 * (spec.rings - 1) * spec.segments);

  absl::StatusOr<ref::SkinnedPositions> bind = ref::SkinAtTime(path, -1, 0.0);
  ASSERT_TRUE(bind.ok()) << bind.status();
  ASSERT_EQ(bind->nodes.size(), c->parts.size());
  ASSERT_EQ(bind->bind.size(), static_cast<size_t>(c->mesh.V.rows()));
  for (size_t p = 0; p < c->parts.size(); ++p) {
    EXPECT_EQ(c->parts[p].node, bind->nodes[p]);
    EXPECT_EQ(c->parts[p].skin, static_cast<int>(p));
    EXPECT_EQ(c->parts[p].first_vertex, bind->first_vertex[p]);
    EXPECT_EQ(c->parts[p].num_vertices, per_node);
  }
  double worst = 0;
  for (size_t i = 0; i < bind->bind.size(); ++i) {
    worst = std::max(worst, (c->mesh.V.row(i).transpose() - bind->bind[i]).norm());
  }
  EXPECT_LT(worst, 1e-6);
  // The three instances are apart (along x, y and z), not on top of each other.
  EXPECT_GT((c->mesh.V.row(per_node - 1) - c->mesh.V.row(2 * per_node - 1)).norm(), 1.0);
  // Weights name rig joints: a vertex of instance 1 is weighted by chain 1's joints only.
  const int chain1_first = 1 + spec.chain_joints;
  for (int v = per_node; v < 2 * per_node; ++v) {
    for (int k = 0; k < c->weights.k(); ++k) {
      if (c->weights.weights(v, k) == 0) continue;
      EXPECT_GE(c->weights.joints(v, k), chain1_first) << "vertex " << v;
      EXPECT_LT(c->weights.joints(v, k), chain1_first + spec.chain_joints) << "vertex " << v;
    }
  }
}

TEST(GltfMultiSkin, RefusesSkinsThatBindASharedJointInconsistently) {
  testing::MultiSkinGltf spec;
  spec.inconsistent_shared_binds = true;
  absl::StatusOr<GltfCharacter> c =
      ReadGltf(testing::WriteMultiSkinGltf(spec, TempFile("inconsistent.gltf")));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()),
              HasSubstr("not by one transform for the whole skin"));
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("skins[1] binds joint \"chain0_0\""));
}

}  // namespace
}  // namespace skinning
