// Baking a mesh whose points repeat (non-indexed triangles, seams): every copy of a point gets
// the same weights, equal to those of the indexed mesh, and the posed mesh does not tear.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/io/dmat.h"
#include "core/io/gltf.h"
#include "core/io/obj.h"
#include "core/io/tgf.h"
#include "core/rig/animation.h"
#include "core/rig/pose.h"
#include "core/skinning/lbs.h"
#include "core/skinning/weights.h"
#include "core/weights/bake.h"
#include "tests/support/data.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::DataPath;

struct Character {
  Mesh mesh;
  Skeleton skeleton;
  Eigen::MatrixXd weights;  // the file's, dense
  std::vector<Pose> poses;  // from its animation, or bends of every joint
};

// Each triangle with three vertices of its own: every point repeats once per triangle using it.
Mesh Unindexed(const Mesh& m, std::vector<int>* source) {
  Mesh out;
  out.V.resize(3 * m.F.rows(), 3);
  out.F.resize(m.F.rows(), 3);
  source->resize(3 * m.F.rows());
  for (Eigen::Index f = 0; f < m.F.rows(); ++f)
    for (int c = 0; c < 3; ++c) {
      const int i = static_cast<int>(3 * f + c);
      out.V.row(i) = m.V.row(m.F(f, c));
      out.F(f, c) = i;
      (*source)[i] = m.F(f, c);
    }
  return out;
}

// One rigid-ish test pose per joint: the joint turned by 40 degrees about a fixed axis.
std::vector<Pose> Bends(const Skeleton& skeleton) {
  std::vector<Pose> poses;
  for (int j = 0; j < skeleton.size(); ++j) {
    Pose p = RestPose(skeleton);
    p.local[j].rotation = p.local[j].rotation * Eigen::Quaterniond(Eigen::AngleAxisd(0.7, Eigen::Vector3d(1, 2, 3).normalized()));
    poses.push_back(p);
  }
  return poses;
}

bool Load(const std::string& name, Character* c) {
  if (name == "arm") {
    auto mesh = ReadObj(DataPath("libigl/arm/arm.obj"));
    auto graph = ReadTgf(DataPath("libigl/arm/arm.tgf"));
    auto W = ReadDmat(DataPath("libigl/arm/arm-weights.dmat"));
    if (!mesh.ok() || !graph.ok() || !W.ok()) return false;
    c->mesh = *mesh;
    c->skeleton = *SkeletonFromBones(*graph);
    c->weights = *W;
    c->poses = Bends(c->skeleton);
    return true;
  }
  auto g = ReadGltf(DataPath(name));
  if (!g.ok()) return false;
  c->mesh = g->mesh;
  c->skeleton = g->skeleton;
  c->weights = ToDense(g->weights, g->skeleton.size());
  const Animation& anim = g->animations.at(0);
  for (int f = 0; f <= 4; ++f)
    c->poses.push_back(Pose{SampleAnimation(c->skeleton, anim, anim.start + (anim.end - anim.start) * f / 4)});
  return true;
}

class WeldedBakeTest : public ::testing::TestWithParam<const char*> {};

TEST_P(WeldedBakeTest, CopiesOfAPointGetTheIndexedMeshsWeightsAndThePoseDoesNotTear) {
  const std::string name = GetParam();
  SKINNING_REQUIRE_DATA(name == "arm" ? DataPath("libigl/arm/arm.obj") : DataPath(name));
  Character c;
  ASSERT_TRUE(Load(name, &c));
  std::vector<int> source;
  const Mesh split = Unindexed(c.mesh, &source);
  const double diag = (c.mesh.V.colwise().maxCoeff() - c.mesh.V.colwise().minCoeff()).norm();
  Eigen::MatrixXd split_weights(split.V.rows(), c.weights.cols());
  for (size_t i = 0; i < source.size(); ++i) split_weights.row(static_cast<Eigen::Index>(i)) = c.weights.row(source[i]);

  for (BakeMethod method : {BakeMethod::kBoneHeat, BakeMethod::kGeodesicVoxel, BakeMethod::kBbw,
                            BakeMethod::kSwingTwist, BakeMethod::kEndpoint}) {
    SCOPED_TRACE(BakeMethodName(method));
    BakeOptions options;
    options.method = method;
    options.domain.voxel.resolution = 24;  // small: this is about copies, not quality
    options.endpoint_method = EndpointMethod::kProjection;
    options.source_weights = c.weights;
    auto indexed = Bake(c.mesh, c.skeleton, options, {});
    ASSERT_TRUE(indexed.ok()) << indexed.status();
    options.source_weights = split_weights;
    auto copies = Bake(split, c.skeleton, options, {});
    ASSERT_TRUE(copies.ok()) << copies.status();
    ASSERT_EQ(copies->weights.rows(), split.V.rows());
    ASSERT_EQ(copies->sparse.rows(), split.V.rows());

    // Every copy has the weights of its point in the indexed bake (the same welded problem,
    // assembled in another vertex order: equal up to rounding).
    double worst = 0;
    for (size_t i = 0; i < source.size(); ++i) {
      const Eigen::Index r = static_cast<Eigen::Index>(i);
      worst = std::max(worst, (copies->weights.row(r) - indexed->weights.row(source[i])).cwiseAbs().maxCoeff());
      for (Eigen::MatrixXd BakeResult::*extra : {&BakeResult::swing, &BakeResult::twist, &BakeResult::endpoint})
        if (((*copies).*extra).size() > 0)
          worst = std::max(worst, (((*copies).*extra).row(r) - ((*indexed).*extra).row(source[i])).cwiseAbs().maxCoeff());
    }
    EXPECT_LT(worst, 1e-6) << "copies differ from the indexed mesh's weights";

    // Copies of one point are exactly equal, so LBS with the sparse weights keeps them together.
    auto order = TopologicalOrder(c.skeleton);
    ASSERT_TRUE(order.ok());
    double gap = 0;
    for (const Pose& pose : c.poses) {
      auto T = SkinningTransforms(c.skeleton, *order, pose);
      ASSERT_TRUE(T.ok()) << T.status();
      RowMatrixX3d U;
      Lbs(split.V, copies->sparse, *T, &U);
      std::vector<int> first(c.mesh.V.rows(), -1);
      for (size_t i = 0; i < source.size(); ++i) {
        int& f = first[source[i]];
        if (f < 0) f = static_cast<int>(i);
        else gap = std::max(gap, (U.row(static_cast<Eigen::Index>(i)) - U.row(f)).norm() / diag);
      }
    }
    EXPECT_EQ(gap, 0.0) << "the posed mesh tears between copies of a point";
  }
}

INSTANTIATE_TEST_SUITE_P(SharedData, WeldedBakeTest,
                         ::testing::Values("arm", "gltf/SimpleSkin/SimpleSkin.gltf", "gltf/RiggedSimple/RiggedSimple.glb",
                                           "gltf/RiggedFigure/RiggedFigure.glb", "gltf/CesiumMan/CesiumMan.glb"),
                         [](const auto& info) { return testing::DataFileTestName(info.param); });

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
