#include "core/weights/endpoint_weights.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "core/io/gltf.h"
#include "core/rig/bones.h"
#include "core/skinning/stbs.h"
#include "tests/support/data.h"
#include "tests/support/fixtures.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

// The cylinder rig plus isolated probe vertices on the bone axis at x = 0, 0.1, …, 1.9 (no
// triangle uses them; they sample the weights inside the shape).
constexpr int kProbes = 20;
Rig CylinderWithProbes(int* first_probe) {
  Rig rig = testing::MakeCylinderRig(31, 16);
  const Eigen::Index n = rig.mesh.V.rows();
  *first_probe = static_cast<int>(n);
  rig.mesh.V.conservativeResize(n + kProbes, 3);
  for (int p = 0; p < kProbes; ++p) rig.mesh.V.row(n + p) = Eigen::RowVector3d(0.1 * p, 0, 0);
  return rig;
}

TEST(EndpointProjection, IsClampedLinearParameterAlongEachBone) {
  const Rig rig = testing::MakeCylinderRig();
  EndpointBakeOptions o;
  o.method = EndpointMethod::kProjection;
  auto r = BakeEndpointWeights(rig.mesh, rig.skeleton, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->report.method, "endpoint_projection");
  ASSERT_EQ(r->endpoint.cols(), 2);
  for (Eigen::Index i = 0; i < rig.mesh.V.rows(); ++i) {
    const double x = rig.mesh.V(i, 0);
    EXPECT_NEAR(r->endpoint(i, 0), std::clamp(x, 0.0, 1.0), 1e-12);
    EXPECT_NEAR(r->endpoint(i, 1), std::clamp((x - 1.0) / 0.9, 0.0, 1.0), 1e-12);
  }
}

TEST(EndpointJointBbw, InterpolatesBoneEndsIsBoundedAndIncreasesAlongTheBone) {
  int first = 0;
  const Rig rig = CylinderWithProbes(&first);
  EndpointBakeOptions o;
  o.domain.voxel.resolution = 32;
  auto r = BakeEndpointWeights(rig.mesh, rig.skeleton, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->report.method, "endpoint_joint_bbw");
  const Eigen::MatrixXd& E = r->endpoint;
  EXPECT_GE(E.minCoeff(), 0.0);
  EXPECT_LE(E.maxCoeff(), 1.0);
  auto e = [&](int probe, int bone) { return E(first + probe, bone); };
  std::printf("bone 0: e(a) = %.4f, e(b) = %.4f; bone 1: e(a) = %.4f, e(b) = %.4f\n", e(0, 0),
              e(10, 0), e(10, 1), e(19, 1));
  EXPECT_LT(e(0, 0), 0.05);   // probe 0 at a_0 = (0,0,0)
  EXPECT_GT(e(10, 0), 0.95);  // probe 10 at b_0 = (1,0,0)
  EXPECT_LT(e(10, 1), 0.05);  // a_1 = (1,0,0)
  EXPECT_GT(e(19, 1), 0.95);  // b_1 = (1.9,0,0)
  for (int p = 1; p <= 10; ++p) EXPECT_GT(e(p, 0), e(p - 1, 0)) << "probe " << p;
  for (int p = 11; p <= 19; ++p) EXPECT_GT(e(p, 1), e(p - 1, 1)) << "probe " << p;
}

// glTF leaf bones continue past the surface (CesiumMan's head, hands and toes): their ends lie
// outside the volume and take the nearest domain node, so the bake succeeds and each bone's e
// still rises from its start to its end.
TEST(EndpointJointBbw, CharacterWithLeafBonesOutsideTheMesh) {
  const std::string path = testing::DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<GltfCharacter> c = ReadGltf(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EndpointBakeOptions options;
  options.domain.voxel.resolution = 48;
  absl::StatusOr<EndpointBakeResult> r = BakeEndpointWeights(c->mesh, c->skeleton, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GE(r->endpoint.minCoeff(), 0.0);
  EXPECT_LE(r->endpoint.maxCoeff(), 1.0);
  const std::vector<StbsBone> bones = StbsBones(*JointHandles(c->skeleton));
  int checked = 0;
  for (size_t j = 0; j < bones.size(); ++j) {
    if (!bones[j].valid) continue;
    // Mesh vertices near the bone's start have smaller e than those near its end.
    double near_a = 0, near_b = 0;
    int na = 0, nb = 0;
    const double len = (bones[j].b - bones[j].a).norm();
    for (int i = 0; i < c->mesh.V.rows(); ++i) {
      const Eigen::Vector3d p = c->mesh.V.row(i).transpose();
      if ((p - bones[j].a).norm() < 0.25 * len) near_a += r->endpoint(i, j), ++na;
      if ((p - bones[j].b).norm() < 0.25 * len) near_b += r->endpoint(i, j), ++nb;
    }
    if (na == 0 || nb == 0) continue;
    EXPECT_LT(near_a / na, near_b / nb) << "bone of joint " << j;
    ++checked;
  }
  EXPECT_GE(checked, 8);
}

TEST(EndpointBake, RejectsBadInputWithNamedFields) {
  Rig rig = testing::MakeCylinderRig(11, 8);
  EndpointBakeOptions o;
  o.domain.voxel.resolution = 4;
  auto r = BakeEndpointWeights(rig.mesh, rig.skeleton, o);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(r.status().message()).find("options.voxel.resolution = 4"), std::string::npos)
      << r.status();

  Rig bad = rig;
  bad.mesh.V(3, 1) = std::nan("");
  r = BakeEndpointWeights(bad.mesh, bad.skeleton, EndpointBakeOptions{});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(r.status().message()).find("mesh.vertices[3].y"), std::string::npos)
      << r.status();

  bad = rig;
  bad.skeleton.joints[1].parent = 7;
  r = BakeEndpointWeights(bad.mesh, bad.skeleton, EndpointBakeOptions{});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(r.status().message()).find("skeleton.joints[1]"), std::string::npos)
      << r.status();
}

TEST(EndpointBake, HonoursCancellation) {
  const Rig rig = testing::MakeCylinderRig(11, 8);
  std::atomic<bool> cancel{true};
  EndpointBakeOptions o;
  o.domain.voxel.resolution = 16;
  auto r = BakeEndpointWeights(rig.mesh, rig.skeleton, o, Progress({}, &cancel));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
