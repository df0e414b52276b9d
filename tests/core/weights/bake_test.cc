#include "core/weights/bake.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/weights/swing_twist_bake.h"
#include "tests/support/fixtures.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::testing::HasSubstr;

constexpr int kResolution = 16;

BakeOptions Options(BakeMethod method) {
  BakeOptions o;
  o.method = method;
  o.domain.voxel.resolution = kResolution;
  return o;
}

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST(BakeOptions, ValidateNamesTheFieldAndTheValue) {
  EXPECT_TRUE(Options(BakeMethod::kBbw).Validate().ok());
  BakeOptions o = Options(BakeMethod::kBbw);
  o.influences = 0;
  EXPECT_THAT(Message(o.Validate()), HasSubstr("options.influences = 0"));
  o = Options(BakeMethod::kBbw);
  o.domain.voxel.resolution = 300;
  EXPECT_EQ(Message(o.Validate()), "options.voxel.resolution = 300 is outside [8, 256]");
  o = Options(BakeMethod::kBoneHeat);
  o.domain.tet_mesh = TetDomainInput();
  EXPECT_THAT(Message(o.Validate()), HasSubstr("options.tet_mesh"));
  o = Options(BakeMethod::kFastModel);
  EXPECT_THAT(Message(o.Validate()), HasSubstr("options.source_weights is empty"));
  // The FAST model and the elastic model keep no top-k influences.
  o = Options(BakeMethod::kElasticModel);
  o.influences = 0;
  EXPECT_TRUE(o.Validate().ok());
  o = Options(BakeMethod::kEndpoint);
  o.endpoint_method = EndpointMethod::kProjection;
  o.domain.voxel.resolution = 0;  // no volume: not checked
  o.source_weights = Eigen::MatrixXd::Ones(3, 1);
  EXPECT_TRUE(o.Validate().ok());
}

TEST(BakeOptions, ValidatesTheOptionsOfItsMethodOnly) {
  BakeOptions o = Options(BakeMethod::kGeodesicVoxel);
  o.bone_heat.heat_coefficient = 0;  // not used by this method
  EXPECT_TRUE(o.Validate().ok());
  o.geodesic.falloff = -1;
  EXPECT_EQ(Message(o.Validate()), "options.geodesic.falloff = -1 must be positive and finite");
  o = Options(BakeMethod::kSwingTwist);
  o.emw.max_iterations = -2;
  EXPECT_EQ(Message(o.Validate()), "options.emw.max_iterations = -2 must be ≥ 0");
  o = Options(BakeMethod::kFastModel);
  o.source_weights = Eigen::MatrixXd::Ones(3, 1);
  o.fast.clusters = -1;
  EXPECT_EQ(Message(o.Validate()), "options.fast.clusters = -1 must be ≥ 0");
  o = Options(BakeMethod::kBbw);
  o.bbw.bound_tolerance = -1;
  EXPECT_THAT(Message(o.Validate()), HasSubstr("options.bbw.bound_tolerance"));
  o.bbw.bound_tolerance = 1e-6;
  o.bbw.admm_iterations = -1;
  EXPECT_THAT(Message(o.Validate()), HasSubstr("options.bbw.admm_iterations"));
  o.bbw.admm_iterations = 60;
  o.bbw.admm_rho_factor = 0;
  EXPECT_THAT(Message(o.Validate()), HasSubstr("options.bbw.admm_rho_factor"));
}

struct Baked {
  Rig rig;
  Eigen::MatrixXd bbw;  // #V by #J bone weights for the methods that build on weights
};

const Baked& Cylinder() {
  static const Baked* baked = [] {
    auto* b = new Baked;
    b->rig = testing::MakeCylinderRig(21, 16);
    absl::StatusOr<BakeResult> r = Bake(b->rig.mesh, b->rig.skeleton, Options(BakeMethod::kBbw));
    EXPECT_TRUE(r.ok()) << r.status();
    if (r.ok()) b->bbw = r->weights;
    return b;
  }();
  return *baked;
}

void ExpectCompleteReport(const BakeReport& r, const std::string& method) {
  EXPECT_EQ(r.method, method);
  EXPECT_FALSE(r.domain.empty()) << method;
  EXPECT_GT(r.total_seconds, 0.0) << method;
  EXPECT_FALSE(r.detail.empty()) << method;
  const std::string brief = r.BriefReport();
  EXPECT_THAT(brief, HasSubstr(method + " on " + r.domain));
  EXPECT_EQ(brief.find('\n'), std::string::npos);
}

TEST(Bake, BoneWeightMethodsGivePartitionOfUnityAndTopK) {
  const Baked& c = Cylinder();
  const int nv = static_cast<int>(c.rig.mesh.V.rows());
  for (BakeMethod m : {BakeMethod::kBoneHeat, BakeMethod::kGeodesicVoxel, BakeMethod::kBbw}) {
    absl::StatusOr<BakeResult> r = Bake(c.rig.mesh, c.rig.skeleton, Options(m));
    ASSERT_TRUE(r.ok()) << BakeMethodName(m) << ": " << r.status();
    ExpectCompleteReport(r->report, BakeMethodName(m));
    ASSERT_EQ(r->weights.rows(), nv);
    ASSERT_EQ(r->weights.cols(), 2);
    for (int i = 0; i < nv; ++i) EXPECT_NEAR(r->weights.row(i).sum(), 1.0, 1e-12);
    EXPECT_EQ(r->sparse.rows(), nv);
    EXPECT_EQ(r->sparse.k(), 2);
    EXPECT_FALSE(r->fast_model);
    EXPECT_FALSE(r->elastic_model);
  }
}

// A vertex no triangle uses, off the surface or far away: every method bakes (BBW failed with
// nodes "in connected parts of the domain that contain no handle node", and a far one coarsened
// the voxel grid), and the stray vertex gets the weights of the nearest vertex of the surface.
TEST(Bake, StrayVerticesGetTheirNearestSurfaceVertexsWeightsAndLeaveTheGridAlone) {
  const Baked& c = Cylinder();
  const int nv = static_cast<int>(c.rig.mesh.V.rows());
  Mesh stray = c.rig.mesh;
  stray.V.conservativeResize(nv + 2, 3);
  const Eigen::RowVector3d lo = c.rig.mesh.V.colwise().minCoeff(), hi = c.rig.mesh.V.colwise().maxCoeff();
  stray.V.row(nv) = hi + 0.1 * (hi - lo);  // just off a corner of the box
  stray.V.row(nv + 1) = hi + 20 * (hi - lo);
  for (BakeMethod m : {BakeMethod::kBoneHeat, BakeMethod::kGeodesicVoxel, BakeMethod::kBbw}) {
    SCOPED_TRACE(BakeMethodName(m));
    absl::StatusOr<BakeResult> plain = Bake(c.rig.mesh, c.rig.skeleton, Options(m));
    absl::StatusOr<BakeResult> r = Bake(stray, c.rig.skeleton, Options(m));
    ASSERT_TRUE(plain.ok() && r.ok()) << r.status();
    ASSERT_EQ(r->weights.rows(), nv + 2);
    // The surface's weights are those of the mesh without the stray points (same grid).
    EXPECT_LE((r->weights.topRows(nv) - plain->weights).cwiseAbs().maxCoeff(), 1e-9);
    for (int s = nv; s < nv + 2; ++s) {
      Eigen::Index nearest = 0;
      (c.rig.mesh.V.rowwise() - stray.V.row(s)).rowwise().squaredNorm().minCoeff(&nearest);
      EXPECT_EQ(r->weights.row(s), r->weights.row(nearest)) << s;
    }
  }
}

// The bone-weight methods give one character's weights at any scale from a bounding-box
// diagonal of 1e-6 up, and refuse a smaller one by name (they came out different at 1e-7 to
// 1e-9, unannounced).
TEST(Bake, BoneWeightsDoNotDependOnScaleAndTinyMeshesAreRefused) {
  const Baked& c = Cylinder();
  const double diag = BoundingBoxDiagonal(c.rig.mesh.V);
  auto scaled = [&](double s, Mesh* mesh, Skeleton* skeleton) {
    *mesh = c.rig.mesh;
    mesh->V *= s;
    *skeleton = c.rig.skeleton;
    for (Joint& j : skeleton->joints) {
      j.rest.translation *= s;
      j.inverse_bind.translation() *= s;
      if (j.tail) *j.tail *= s;
    }
  };
  for (BakeMethod m : {BakeMethod::kBoneHeat, BakeMethod::kGeodesicVoxel, BakeMethod::kBbw}) {
    SCOPED_TRACE(BakeMethodName(m));
    absl::StatusOr<BakeResult> unit = Bake(c.rig.mesh, c.rig.skeleton, Options(m));
    ASSERT_TRUE(unit.ok()) << unit.status();
    for (double s : {2e-6 / diag, 1e3}) {
      Mesh mesh;
      Skeleton skeleton;
      scaled(s, &mesh, &skeleton);
      absl::StatusOr<BakeResult> r = Bake(mesh, skeleton, Options(m));
      ASSERT_TRUE(r.ok()) << s << ": " << r.status();
      EXPECT_LE((r->weights - unit->weights).cwiseAbs().maxCoeff(), 1e-6) << s;
    }
    Mesh mesh;
    Skeleton skeleton;
    scaled(0.5e-6 / diag, &mesh, &skeleton);
    absl::StatusOr<BakeResult> tiny = Bake(mesh, skeleton, Options(m));
    EXPECT_EQ(tiny.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(Message(tiny.status()), HasSubstr("the mesh's bounding-box diagonal is 5e-07"));
  }
  // Every vertex at one point: said so (it was "mesh has no triangles").
  Mesh point = c.rig.mesh;
  point.V.rowwise() = c.rig.mesh.V.row(0);
  const absl::Status s = Bake(point, c.rig.skeleton, Options(BakeMethod::kBoneHeat)).status();
  EXPECT_THAT(Message(s), HasSubstr("triangles are degenerate once vertices within 1e-7"));
  EXPECT_THAT(Message(s), HasSubstr("1 distinct points"));
}

TEST(Bake, SwingTwistIsBakeSwingTwistOnTheSameOptions) {
  const Baked& c = Cylinder();
  BakeOptions o = Options(BakeMethod::kSwingTwist);
  absl::StatusOr<BakeResult> r = Bake(c.rig.mesh, c.rig.skeleton, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectCompleteReport(r->report, "swing_twist");
  SwingTwistBakeOptions direct;
  direct.domain = o.domain;
  absl::StatusOr<SwingTwistBakeResult> d = BakeSwingTwist(c.rig.mesh, c.rig.skeleton, direct);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(r->weights, d->deformer);
  EXPECT_EQ(r->swing, d->swing);
  EXPECT_EQ(r->twist, d->twist);
  EXPECT_EQ(r->sparse.k(), 2);
}

TEST(Bake, EndpointKeepsTheSourceWeightsAndAddsEndpoints) {
  const Baked& c = Cylinder();
  BakeOptions o = Options(BakeMethod::kEndpoint);
  o.source_weights = c.bbw;
  absl::StatusOr<BakeResult> r = Bake(c.rig.mesh, c.rig.skeleton, o);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectCompleteReport(r->report, "endpoint_joint_bbw");
  EXPECT_EQ(r->weights, c.bbw);
  ASSERT_EQ(r->endpoint.rows(), c.bbw.rows());
  ASSERT_EQ(r->endpoint.cols(), 2);
  EXPECT_GE(r->endpoint.minCoeff(), 0.0);
  EXPECT_LE(r->endpoint.maxCoeff(), 1.0);
  o.source_weights = c.bbw.leftCols(1);
  EXPECT_THAT(Message(Bake(c.rig.mesh, c.rig.skeleton, o).status()),
              HasSubstr("options.source_weights is"));
}

TEST(Bake, FastModelIsPrecomputeFastOnTheHandleColumns) {
  const Baked& c = Cylinder();
  for (FastEnergy energy : {FastEnergy::kSurface, FastEnergy::kVolumetric}) {
    BakeOptions o = Options(BakeMethod::kFastModel);
    o.fast.energy = energy;
    o.source_weights = c.bbw;
    absl::StatusOr<BakeResult> r = Bake(c.rig.mesh, c.rig.skeleton, o);
    ASSERT_TRUE(r.ok()) << r.status();
    ExpectCompleteReport(r->report, "fast_model");
    ASSERT_TRUE(r->fast_model);
    EXPECT_EQ(r->fast_handle_joints, (std::vector<int>{0, 1}));
    EXPECT_EQ(r->weights, FastModelWeights(*r->fast_model));
    FastOptions direct = o.fast;
    direct.domain = o.domain;
    absl::StatusOr<FastModelPtr> d = PrecomputeFast(c.rig.mesh, c.bbw, direct);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(SerializeFastModel(*r->fast_model), SerializeFastModel(**d));
    EXPECT_EQ(r->report.domain == "surface (spokes and rims)", energy == FastEnergy::kSurface);
  }
}

TEST(Bake, ElasticModelReportsItsDomainAndPinnedNodes) {
  const Baked& c = Cylinder();
  absl::StatusOr<BakeResult> r = Bake(c.rig.mesh, c.rig.skeleton, Options(BakeMethod::kElasticModel));
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectCompleteReport(r->report, "elastic_model");
  ASSERT_TRUE(r->elastic_model);
  EXPECT_EQ(r->report.domain_nodes, r->elastic_model->domain().num_nodes());
  EXPECT_THAT(r->report.domain, HasSubstr("voxel grid 16"));
  EXPECT_EQ(r->weights.size(), 0);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
