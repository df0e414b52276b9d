#include "core/weights/handles.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Core>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/geometry/volume_domain.h"
#include "core/io/gltf.h"
#include "core/io/medit.h"
#include "core/io/obj.h"
#include "core/io/tgf.h"
#include "core/rig/bones.h"
#include "tests/support/data.h"
#include "tests/support/fixtures.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::DataPath;
using ::skinning::testing::MakeSphere;
using ::testing::HasSubstr;

VolumeDomain VoxelDomainOrDie(const Mesh& mesh, int resolution) {
  VoxelGridOptions options;
  options.resolution = resolution;
  absl::StatusOr<VolumeDomain> domain = BuildVoxelDomain(mesh, options);
  EXPECT_TRUE(domain.ok()) << domain.status();
  return domain.ok() ? *std::move(domain) : VolumeDomain{};
}

int NearestNode(const VolumeDomain& d, const Eigen::Vector3d& p) {
  int best = 0;
  (d.nodes.rowwise() - p.transpose()).rowwise().squaredNorm().minCoeff(&best);
  return best;
}

TEST(RasterizeHandlesTest, HandTetHandlesLieOnBonesAndAreDisjoint) {
  const std::string mesh_path = DataPath("libigl/hand/hand.mesh");
  const std::string tgf_path = DataPath("libigl/hand/hand.tgf");
  SKINNING_REQUIRE_DATA(mesh_path);
  SKINNING_REQUIRE_DATA(tgf_path);
  absl::StatusOr<TetMesh> tet = ReadMedit(mesh_path);
  ASSERT_TRUE(tet.ok()) << tet.status();
  const RowMatrixX3d V = tet->V.topRows(4780);
  absl::StatusOr<VolumeDomain> d = BuildTetDomain(tet->V, tet->T, V);
  ASSERT_TRUE(d.ok()) << d.status();

  absl::StatusOr<TgfGraph> graph = ReadTgf(tgf_path);
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<Skeleton> skeleton = SkeletonFromBones(*graph);
  ASSERT_TRUE(skeleton.ok()) << skeleton.status();
  absl::StatusOr<std::vector<JointHandle>> handles = JointHandles(*skeleton);
  ASSERT_TRUE(handles.ok()) << handles.status();
  absl::StatusOr<std::vector<std::vector<int>>> nodes = RasterizeHandles(*d, *handles);
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  ASSERT_EQ(nodes->size(), handles->size());
  const double tol = 1e-6 * BoundingBoxDiagonal(tet->V);
  std::set<int> seen;
  for (size_t j = 0; j < handles->size(); ++j) {
    EXPECT_GE((*nodes)[j].size(), 2u) << "bone " << j;
    for (int i : (*nodes)[j]) {
      EXPECT_TRUE(seen.insert(i).second) << "node " << i << " in two handles";
      EXPECT_LT(DistanceToSegment(d->nodes.row(i).transpose(), (*handles)[j].segments[0]), tol);
    }
  }
}

TEST(RasterizeHandlesTest, LeafPointHandleAtItsParentsBoneEndStillGetsANode) {
  // Two joints along a capsule-like sphere: joint 0's bone runs to joint 1, a leaf point at the
  // bone's end, so every node near joint 1 is at least as near joint 0's bone.
  const VolumeDomain d = VoxelDomainOrDie(MakeSphere(Eigen::Vector3d::Zero(), 1.0), 16);
  std::vector<JointHandle> handles(3);
  handles[0] = {0, true, {{Eigen::Vector3d(-0.5, 0.01, 0.02), Eigen::Vector3d(0.5, 0.01, 0.02)}}};
  handles[1] = {1, true, {{Eigen::Vector3d(0.5, 0.01, 0.02), Eigen::Vector3d(0.5, 0.01, 0.02)}}};
  handles[2] = {2, false, {}};
  absl::StatusOr<std::vector<std::vector<int>>> nodes = RasterizeHandles(d, handles);
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  ASSERT_EQ((*nodes)[1].size(), 1u);
  EXPECT_TRUE((*nodes)[2].empty());
  EXPECT_GE((*nodes)[0].size(), 2u);
  // Joint 1 got the node nearest to it; every node of joint 0 is within half a cell diagonal.
  const int mine = (*nodes)[1][0];
  EXPECT_EQ(mine, NearestNode(d, handles[1].segments[0].a));
  for (int i : (*nodes)[0])
    EXPECT_LE(DistanceToSegment(d.nodes.row(i).transpose(), handles[0].segments[0]),
              0.5 * std::sqrt(3.0) * d.spacing * (1 + 1e-9));
}

struct CharacterCase {
  std::string name;
  Mesh mesh;
  std::vector<JointHandle> handles;
};

void CheckCharacter(const CharacterCase& c) {
  VoxelGridOptions options;
  options.resolution = 64;
  VoxelGridReport report;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<VolumeDomain> d = BuildVoxelDomain(c.mesh, options, &report);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(d.ok()) << c.name << ": " << d.status();
  std::printf(
      "%s (%lld vertices, %lld triangles) at resolution 64: %.3f s; cells %dx%dx%d, "
      "%d domain cells (%d surface), %d nodes, %d components, %d winding evaluations\n",
      c.name.c_str(), static_cast<long long>(c.mesh.V.rows()),
      static_cast<long long>(c.mesh.F.rows()), seconds, report.cells.x(), report.cells.y(),
      report.cells.z(), report.inside_cells, report.surface_cells, report.nodes, report.components,
      report.winding_evaluations);

  absl::StatusOr<std::vector<std::vector<int>>> nodes = RasterizeHandles(*d, c.handles);
  ASSERT_TRUE(nodes.ok()) << c.name << ": " << nodes.status();
  for (size_t j = 0; j < c.handles.size(); ++j) {
    if (c.handles[j].deforms)
      EXPECT_FALSE((*nodes)[j].empty()) << c.name << " joint " << j;
    else
      EXPECT_TRUE((*nodes)[j].empty()) << c.name << " joint " << j;
  }

  // The same skeleton far away reaches no node.
  std::vector<JointHandle> far = c.handles;
  const Eigen::Vector3d shift = Eigen::Vector3d::Constant(10 * BoundingBoxDiagonal(c.mesh.V));
  for (JointHandle& h : far)
    for (Segment& s : h.segments) s.a += shift, s.b += shift;
  absl::StatusOr<std::vector<std::vector<int>>> failed = RasterizeHandles(*d, far);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kFailedPrecondition) << c.name;
  EXPECT_THAT(std::string(failed.status().message()), HasSubstr("lies outside the mesh"));
  EXPECT_THAT(std::string(failed.status().message()), HasSubstr("skeleton.joints["));
}

TEST(RasterizeHandlesTest, ArmEveryDeformingJointHasNodesAndAFarSkeletonNone) {
  const std::string obj = DataPath("libigl/arm/arm.obj");
  const std::string tgf = DataPath("libigl/arm/arm.tgf");
  SKINNING_REQUIRE_DATA(obj);
  SKINNING_REQUIRE_DATA(tgf);
  CharacterCase c;
  c.name = "arm";
  absl::StatusOr<Mesh> mesh = ReadObj(obj);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  c.mesh = *mesh;
  absl::StatusOr<TgfGraph> graph = ReadTgf(tgf);
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<Skeleton> skeleton = SkeletonFromBones(*graph);
  ASSERT_TRUE(skeleton.ok()) << skeleton.status();
  absl::StatusOr<std::vector<JointHandle>> handles = JointHandles(*skeleton);
  ASSERT_TRUE(handles.ok()) << handles.status();
  c.handles = *handles;
  CheckCharacter(c);
}

TEST(RasterizeHandlesTest, CesiumManEveryDeformingJointHasNodesAndAFarSkeletonNone) {
  const std::string glb = DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(glb);
  absl::StatusOr<GltfCharacter> character = ReadGltf(glb);
  ASSERT_TRUE(character.ok()) << character.status();
  CharacterCase c;
  c.name = "CesiumMan";
  c.mesh = character->mesh;
  absl::StatusOr<std::vector<JointHandle>> handles = JointHandles(character->skeleton);
  ASSERT_TRUE(handles.ok()) << handles.status();
  c.handles = *handles;
  CheckCharacter(c);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
