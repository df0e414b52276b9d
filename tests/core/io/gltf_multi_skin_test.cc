// Files with several skins over one node tree (one mesh instanced by several nodes, each with its
// own skin), read into one rig; checked against the independent glTF reference in tests/support.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <tiny_gltf.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/strings/str_format.h"
#include "core/io/gltf.h"
#include "core/io/obj.h"
#include "tests/support/data.h"
#include "tests/support/gltf_reference.h"
#include "tests/support/gltf_validator.h"
#include "tests/support/multi_skin_gltf.h"
#include "tests/support/tinygltf_load.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

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
  EXPECT_EQ(c->NumSkins(), spec.chains);
  EXPECT_EQ(c->parts.size(), static_cast<size_t>(spec.chains));
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

// Output keeps the nodes apart: a posed glTF and a skinned export have one mesh node per part,
// named after it, the export reads back into the same parts and vertices, an OBJ groups each
// part's faces under `o <name>`, and the glTF files validate.
TEST(GltfMultiSkin, OutputKeepsEveryNodeApart) {
  const std::string path = testing::WriteMultiSkinGltf(testing::MultiSkinGltf(), TempFile("out.gltf"));
  absl::StatusOr<GltfCharacter> c = ReadGltf(path);
  ASSERT_TRUE(c.ok()) << c.status();
  const std::vector<MeshPart> parts = c->MeshParts();
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[1].name, "instance1");
  ASSERT_TRUE(ValidateMeshParts(parts, c->mesh).ok());

  const std::string posed = TempFile("posed.glb"), skinned = TempFile("skinned.gltf"),
                    obj = TempFile("posed.obj");
  ASSERT_TRUE(WritePosedGltf(posed, c->mesh, parts).ok());
  ASSERT_TRUE(WriteSkinnedGltf(skinned, c->mesh, c->skeleton, c->weights, c->animations, parts).ok());
  ASSERT_TRUE(WriteObj(obj, c->mesh, parts).ok());

  absl::StatusOr<tinygltf::Model> loaded = testing::LoadTinyGltf(posed);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const tinygltf::Model& model = *loaded;
  ASSERT_EQ(model.meshes.size(), 3u);
  ASSERT_EQ(model.scenes[0].nodes.size(), 3u);
  for (int p = 0; p < 3; ++p) {
    EXPECT_EQ(model.nodes[model.scenes[0].nodes[p]].name, parts[p].name);
    const int position = model.meshes[p].primitives[0].attributes.at("POSITION");
    EXPECT_EQ(model.accessors[position].count, static_cast<size_t>(parts[p].num_vertices));
  }

  absl::StatusOr<GltfCharacter> back = ReadGltf(skinned);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->parts.size(), 3u);
  for (int p = 0; p < 3; ++p) {
    EXPECT_EQ(back->parts[p].name, parts[p].name);
    EXPECT_EQ(back->parts[p].first_vertex, parts[p].first_vertex);
    EXPECT_EQ(back->parts[p].num_vertices, parts[p].num_vertices);
  }
  EXPECT_TRUE(back->mesh.V.isApprox(c->mesh.V, 1e-6));
  EXPECT_EQ(back->mesh.F, c->mesh.F);

  const std::string text = testing::FileBytes(obj);
  for (const MeshPart& part : parts) EXPECT_THAT(text, HasSubstr("\no " + part.name + "\n"));
  absl::StatusOr<Mesh> read_obj = ReadObj(obj);
  ASSERT_TRUE(read_obj.ok()) << read_obj.status();
  EXPECT_EQ(read_obj->F.rows(), c->mesh.F.rows());

  SKINNING_EXPECT_VALID_GLTF((std::vector<std::string>{posed, skinned}));
}

TEST(GltfMultiSkin, MeshPartsAreValidated) {
  Mesh m;
  m.V = RowMatrixX3d::Zero(6, 3);
  m.F.resize(2, 3);
  m.F << 0, 1, 2, 3, 4, 5;
  EXPECT_TRUE(ValidateMeshParts({{"a", 0, 3}, {"b", 3, 3}}, m).ok());
  EXPECT_THAT(std::string(ValidateMeshParts({{"a", 0, 3}, {"b", 3, 2}}, m).message()),
              HasSubstr("mesh.parts: the parts hold 5 vertices but the mesh has 6"));
  EXPECT_THAT(std::string(ValidateMeshParts({{"a", 0, 3}, {"b", 2, 4}}, m).message()),
              HasSubstr("mesh.parts[1]"));
  EXPECT_THAT(std::string(ValidateMeshParts({{"a", 0, 6}, {"b", 6, 0}}, m).message()),
              HasSubstr("mesh.parts[1]: 0 vertices"));
  m.F << 0, 1, 3, 3, 4, 5;
  EXPECT_THAT(std::string(ValidateMeshParts({{"a", 0, 3}, {"b", 3, 3}}, m).message()),
              HasSubstr("mesh.triangles[0] joins parts 0 and 1"));
}

// A mesh without a skin below a joint (a helmet), or on the joint node itself, is read as one
// more part, weighted 1 to that joint, its vertices where the spec draws it in the bind pose (on
// the joint node it was given the joint's parent: right at rest, off by 1.1 once the joint
// turned). Below a node that an animation turns ("mount", between the helmet and the joint; such
// props were refused), that node becomes a joint of the rig, child of the skin joint, and the
// helmet is weighted 1 to it.
TEST(GltfMultiSkin, ReadsAPropBelowOrOnAJointAsAPartOfThatJoint) {
  enum class Prop { kBelow, kOnJoint, kBelowAnimatedMount };
  for (const Prop kind : {Prop::kBelow, Prop::kOnJoint, Prop::kBelowAnimatedMount}) {
    const bool on_joint = kind == Prop::kOnJoint, animated = kind == Prop::kBelowAnimatedMount;
    SCOPED_TRACE(on_joint ? "on the joint node" : (animated ? "below an animated mount" : "below the joint"));
    testing::MultiSkinGltf spec;
    spec.prop = true;
    spec.prop_on_joint = on_joint;
    spec.animated_prop = animated;
    const std::string path = testing::WriteMultiSkinGltf(
        spec, TempFile(on_joint ? "prop_on_joint.gltf" : (animated ? "prop_animated.gltf" : "prop.gltf")));
    SKINNING_EXPECT_VALID_GLTF(std::vector<std::string>{path});
    absl::StatusOr<GltfCharacter> c = ReadGltf(path);
    ASSERT_TRUE(c.ok()) << c.status();
    ASSERT_EQ(c->parts.size(), 4u);
    EXPECT_EQ(c->NumSkins(), spec.chains);
    const int joint_node = spec.chain_joints;  // nodes: root, then chain 0's joints
    const GltfCharacter::Part* box = nullptr;
    for (const GltfCharacter::Part& part : c->parts)
      if (part.skin == -1) box = &part;
    ASSERT_NE(box, nullptr);
    if (on_joint) {
      EXPECT_EQ(box->node, joint_node);
    } else {
      EXPECT_EQ(box->name, "helmet");
    }
    ASSERT_EQ(box->num_vertices, 8);
    const int last_of_chain0 = spec.chain_joints;  // rig joints: root, then chain 0's joints
    int prop_joint = last_of_chain0;
    if (animated) {
      ASSERT_EQ(c->skeleton.size(), c->num_skin_joints + 1) << "the mount, after the skins' joints";
      prop_joint = c->num_skin_joints;
      const Joint& mount = c->skeleton.joints[prop_joint];
      EXPECT_EQ(mount.name, "mount");
      EXPECT_EQ(mount.parent, last_of_chain0);
      EXPECT_TRUE(mount.deforms) << "it carries the helmet's weight";
      ASSERT_EQ(c->animations.size(), 1u);
      int mount_channels = 0;
      for (const AnimationChannel& channel : c->animations[0].channels) mount_channels += channel.joint == prop_joint;
      EXPECT_EQ(mount_channels, 1);
    } else {
      EXPECT_EQ(c->skeleton.size(), c->num_skin_joints);
    }
    for (int v = box->first_vertex; v < box->first_vertex + 8; ++v) {
      EXPECT_EQ(c->weights.joints(v, 0), prop_joint) << "vertex " << v;
      EXPECT_EQ(c->weights.weights(v, 0), 1.f);
    }
    absl::StatusOr<ref::SkinnedPositions> bind = ref::SkinAtTime(path, -1, 0.0);
    ASSERT_TRUE(bind.ok()) << bind.status();
    ASSERT_EQ(bind->bind.size(), static_cast<size_t>(c->mesh.V.rows()));
    double worst = 0;
    for (size_t i = 0; i < bind->bind.size(); ++i) {
      worst = std::max(worst, (c->mesh.V.row(i).transpose() - bind->bind[i]).norm());
    }
    EXPECT_LT(worst, 1e-6);
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

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
