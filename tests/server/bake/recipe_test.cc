// The recipes: one per BakeOptions method, their options filled in and checked, and for every
// method a bake that goes through the store (Store, serialization, Restore) loads back as the
// bake that was computed.
#include "server/bake/recipe.h"

#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/bake/bake_options.h"
#include "server/bake/bake_store.h"
#include "server/bake/recipes/elastic_model.h"
#include "server/bake/recipes/endpoint.h"
#include "server/bake/recipes/fast_model.h"
#include "server/bake/recipes/swing_twist.h"
#include "server/convert/convert.h"
#include "server/store/blob_store.h"
#include "tests/support/fixtures.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::testing::HasSubstr;

constexpr char kRig[] = "rig-0123456789abcdef0123456789abcdef";

TEST(RecipeRegistry, HasOneRecipePerBakeOptionsMethod) {
  const RecipeRegistry& registry = RecipeRegistry::Default();
  const google::protobuf::OneofDescriptor* oneof = v1::BakeOptions::descriptor()->FindOneofByName("method");
  ASSERT_NE(oneof, nullptr);
  std::set<std::string> names;
  for (int i = 0; i < oneof->field_count(); ++i) {
    const auto method_case = static_cast<v1::BakeOptions::MethodCase>(oneof->field(i)->number());
    const Recipe* recipe = registry.Find(method_case);
    ASSERT_NE(recipe, nullptr) << oneof->field(i)->name();
    // The recipe's name is the oneof field's name: the API, the report and the metrics agree.
    EXPECT_EQ(recipe->name(), oneof->field(i)->name());
    EXPECT_EQ(registry.Find(recipe->name()), recipe);
    names.insert(recipe->name());
  }
  EXPECT_EQ(registry.all().size(), names.size());
  // A method registered again is refused.
  RecipeRegistry twice;
  AddAllRecipes(&twice);
  AddAllRecipes(&twice);
  EXPECT_EQ(twice.all().size(), names.size());
}

TEST(NormalizeBakeOptions, FillsEveryDefaultExplicitly) {
  auto n = NormalizeBakeOptions(v1::BakeOptions());
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_TRUE(n->options.has_bbw()) << "no method means bbw, set explicitly";
  EXPECT_EQ(n->options.influence_count(), 4);
  EXPECT_EQ(n->options.domain().voxel_resolution(), 64);
  EXPECT_STREQ(n->recipe->name(), "bbw");

  v1::BakeOptions heat;
  heat.mutable_bone_heat();
  heat.mutable_domain()->set_voxel_resolution(32);
  n = NormalizeBakeOptions(heat);
  ASSERT_TRUE(n.ok());
  EXPECT_DOUBLE_EQ(n->options.bone_heat().heat_coefficient(), 4.0);  // as bake.proto says
  EXPECT_FALSE(n->options.has_domain()) << "a surface method has no domain";

  v1::BakeOptions fast;
  fast.mutable_fast_model();
  fast.set_influence_count(8);
  n = NormalizeBakeOptions(fast);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->options.influence_count(), 0) << "FAST models keep every non-zero";
  EXPECT_FALSE(n->options.has_domain()) << "the surface energy";

  v1::BakeOptions st;
  st.mutable_swing_twist();
  n = NormalizeBakeOptions(st);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->options.swing_twist().max_iteration_count(), 30);
  v1::BakeOptions geo;
  geo.mutable_geodesic_voxel();
  EXPECT_DOUBLE_EQ(NormalizeBakeOptions(geo)->options.geodesic_voxel().falloff(), 12.0);  // as bake.proto says
  EXPECT_FALSE(NormalizeBakeOptions(geo)->options.geodesic_voxel().has_dionne_falloff());
  // Dionne & de Lasa's α = 0 is a weight function of its own, not "unset": another bake.
  v1::BakeOptions dionne = geo;
  dionne.mutable_geodesic_voxel()->set_dionne_falloff(0);
  EXPECT_NE(BakeId(kRig, NormalizeBakeOptions(dionne)->options), BakeId(kRig, NormalizeBakeOptions(geo)->options));
  // Smoothing makes another bake; none (0) is the bake of before the option existed.
  EXPECT_EQ(NormalizeBakeOptions(geo)->options.geodesic_voxel().smoothing(), 0);
  v1::BakeOptions smoothed = geo;
  smoothed.mutable_geodesic_voxel()->set_smoothing(10);
  EXPECT_NE(BakeId(kRig, NormalizeBakeOptions(smoothed)->options), BakeId(kRig, NormalizeBakeOptions(geo)->options));
  // The same request, filled in or not, is the same bake.
  v1::BakeOptions explicit_bbw = NormalizeBakeOptions(v1::BakeOptions())->options;
  EXPECT_EQ(BakeId(kRig, NormalizeBakeOptions(explicit_bbw)->options),
            BakeId(kRig, NormalizeBakeOptions(v1::BakeOptions())->options));
  EXPECT_NE(BakeId(kRig, explicit_bbw), BakeId("rig-ffffffffffffffffffffffffffffffff", explicit_bbw));
}

TEST(NormalizeBakeOptions, RefusesBadValuesNamingTheField) {
  auto message = [](const v1::BakeOptions& o) { return std::string(NormalizeBakeOptions(o).status().message()); };
  v1::BakeOptions o;
  o.mutable_domain()->set_voxel_resolution(100000);
  EXPECT_THAT(message(o), HasSubstr("options.domain.voxel_resolution = 100000 is outside the limits [8, 256]"));
  o = v1::BakeOptions();
  o.set_influence_count(17);
  EXPECT_THAT(message(o), HasSubstr("options.influence_count = 17 must be in [1, 16]"));
  o = v1::BakeOptions();
  o.mutable_swing_twist()->set_max_iteration_count(900);
  EXPECT_THAT(message(o), HasSubstr("options.swing_twist.max_iteration_count = 900"));
  o = v1::BakeOptions();
  o.mutable_geodesic_voxel()->set_dionne_falloff(1.5);
  EXPECT_THAT(message(o), HasSubstr("options.geodesic_voxel.dionne_falloff = 1.5 must be in [0, 1]"));
  o = v1::BakeOptions();
  o.mutable_geodesic_voxel()->set_smoothing(-1);
  EXPECT_THAT(message(o), HasSubstr("options.geodesic_voxel.smoothing = -1 must be in [0, 100]"));
  o = v1::BakeOptions();
  o.mutable_bone_heat();
  o.mutable_domain()->mutable_tet_mesh()->add_tets(0);
  EXPECT_THAT(message(o), HasSubstr("options.domain.tet_mesh: bone_heat"));
  o = v1::BakeOptions();
  o.mutable_fast_model()->set_weights_bake("bake-1");
  EXPECT_THAT(message(o), HasSubstr("options.fast_model.weights_bake 'bake-1' is not a bake name"));
  o = v1::BakeOptions();
  v1::TetMesh* tet = o.mutable_domain()->mutable_tet_mesh();
  for (float x : {0.f, 0.f, 0.f, 1.f, 0.f, 0.f, 0.f, 1.f, 0.f, 0.f, 0.f, 1.f}) tet->add_positions(x);
  for (int i : {0, 1, 2, 7}) tet->add_tets(i);
  EXPECT_THAT(message(o), HasSubstr("options.domain.tet_mesh.tets[0][3] = 7 is out of range (4 vertices)"));
  o.mutable_domain()->mutable_tet_mesh()->set_tets(3, 3);
  o.mutable_domain()->set_voxel_resolution(32);
  EXPECT_THAT(message(o), HasSubstr("give one or the other"));
  o.mutable_domain()->set_voxel_resolution(0);
  EXPECT_TRUE(NormalizeBakeOptions(o).ok());
}

// A bake of `options` for `rig` as the runner makes it, and the same bake after the store.
struct RoundTrip {
  std::shared_ptr<LoadedBake> fresh, restored;
};

RoundTrip BakeAndRestore(const Rig& core_rig, v1::BakeOptions options) {
  RoundTrip out;
  auto rig = PrepareRig(kRig, core_rig, v1::Rig());
  absl::StatusOr<NormalizedBakeOptions> n = NormalizeBakeOptions(options);
  EXPECT_TRUE(n.ok()) << n.status();
  if (!n.ok()) return out;
  const Recipe& recipe = *n->recipe;
  BakeOptions core = CoreBakeOptions(n->options, recipe, *rig);
  if (recipe.WeightsSourceField() != nullptr) core.source_weights = ToDense(rig->weights, rig->rig.skeleton.size());
  absl::StatusOr<BakeResult> result = recipe.Run(n->options, core, *rig, {});
  EXPECT_TRUE(result.ok()) << recipe.name() << ": " << result.status();
  if (!result.ok()) return out;

  internal::v1::StoredBake stored;
  stored.set_format_version(kBakeFormatVersion);
  stored.set_rig_id(kRig);
  *stored.mutable_options() = n->options;
  stored.set_bake_id(BakeId(kRig, n->options));
  *stored.mutable_report() = BakeReportToProto(result->report);
  recipe.Store(*result, stored.mutable_artifact());
  internal::v1::StoredBake parsed;  // through the bytes, as a store keeps it
  EXPECT_TRUE(parsed.ParseFromString(stored.SerializeAsString()));

  absl::StatusOr<std::shared_ptr<LoadedBake>> fresh = PrepareBake(recipe, StoredBakeHeader(stored), *result, *rig);
  EXPECT_TRUE(fresh.ok()) << fresh.status();
  absl::StatusOr<BakeResult> back = recipe.Restore(parsed, *rig);
  EXPECT_TRUE(back.ok()) << recipe.name() << ": " << back.status();
  if (!fresh.ok() || !back.ok()) return out;
  absl::StatusOr<std::shared_ptr<LoadedBake>> restored =
      PrepareBake(recipe, StoredBakeHeader(parsed), *std::move(back), *rig);
  EXPECT_TRUE(restored.ok()) << restored.status();
  if (!restored.ok()) return out;
  out.fresh = *std::move(fresh);
  out.restored = *std::move(restored);
  return out;
}

void ExpectSameWeights(const LoadedBake& a, const LoadedBake& b) {
  EXPECT_EQ(a.bone_weights, b.bone_weights);
  ASSERT_EQ(a.dense.rows(), b.dense.rows());
  ASSERT_EQ(a.dense.cols(), b.dense.cols());
  EXPECT_EQ(a.dense, b.dense);
  EXPECT_EQ(a.sparse.joints, b.sparse.joints);
  EXPECT_EQ(a.sparse.weights, b.sparse.weights);
  EXPECT_GT(a.bytes, 0u);
}

v1::BakeOptions Coarse(v1::BakeOptions o) {
  if (o.method_case() != v1::BakeOptions::kBoneHeat && !(o.has_fast_model()) &&
      !(o.has_endpoint() && o.endpoint().method() == v1::ENDPOINT_METHOD_PROJECTION))
    o.mutable_domain()->set_voxel_resolution(16);
  return o;
}

TEST(RecipeRoundTrip, BoneWeightMethodsLoadTheWeightsTheyBaked) {
  for (const char* method : {"bbw", "bone_heat", "geodesic_voxel"}) {
    SCOPED_TRACE(method);
    v1::BakeOptions o;
    const google::protobuf::FieldDescriptor* f = v1::BakeOptions::descriptor()->FindFieldByName(method);
    o.GetReflection()->MutableMessage(&o, f);
    RoundTrip r = BakeAndRestore(testing::MakeTubeForBaking(), Coarse(o));
    ASSERT_TRUE(r.fresh && r.restored);
    EXPECT_TRUE(r.restored->bone_weights);
    EXPECT_EQ(r.restored->sparse.k(), 2) << "min(4 influences, 2 joints)";
    ExpectSameWeights(*r.fresh, *r.restored);
    EXPECT_EQ(r.restored->payload, nullptr);
  }
}

TEST(RecipeRoundTrip, FastModelLoadsTheSameModel) {
  v1::BakeOptions o;
  o.mutable_fast_model();
  RoundTrip r = BakeAndRestore(testing::MakeTwoBoneTube(), o);
  ASSERT_TRUE(r.fresh && r.restored);
  ExpectSameWeights(*r.fresh, *r.restored);
  const auto* a = r.fresh->payload_as<FastModelPayload>();
  const auto* b = r.restored->payload_as<FastModelPayload>();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->handle_joints, b->handle_joints);
  EXPECT_EQ(SerializeFastModel(*a->model), SerializeFastModel(*b->model));
  EXPECT_FALSE(r.restored->bone_weights);
}

TEST(RecipeRoundTrip, SwingTwistLoadsTheSameChannelsAndLayout) {
  v1::BakeOptions o;
  o.mutable_swing_twist()->set_max_iteration_count(3);
  RoundTrip r = BakeAndRestore(testing::MakeTubeForBaking(), Coarse(o));
  ASSERT_TRUE(r.fresh && r.restored);
  ExpectSameWeights(*r.fresh, *r.restored);
  const auto* a = r.fresh->payload_as<SwingTwistPayload>();
  const auto* b = r.restored->payload_as<SwingTwistPayload>();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->swing, b->swing);
  EXPECT_EQ(a->twist, b->twist);
  EXPECT_EQ(a->weights.swing, b->weights.swing);
  EXPECT_EQ(a->frames.size(), b->frames.size());
  v1::GetWeightsResponse weights;
  ASSERT_TRUE(r.restored->recipe->FillWeights(*r.restored, &weights).ok());
  EXPECT_EQ(weights.swing().values_size(), a->swing.size());
  EXPECT_EQ(weights.twist().joint_count(), 2);
}

TEST(RecipeRoundTrip, EndpointLoadsTheBoneAndEndpointWeights) {
  for (v1::EndpointMethod method : {v1::ENDPOINT_METHOD_UNSPECIFIED, v1::ENDPOINT_METHOD_PROJECTION}) {
    v1::BakeOptions o;
    o.mutable_endpoint()->set_method(method);
    RoundTrip r = BakeAndRestore(testing::MakeTwoBoneTube(), Coarse(o));
    ASSERT_TRUE(r.fresh && r.restored);
    ExpectSameWeights(*r.fresh, *r.restored);
    EXPECT_TRUE(r.restored->bone_weights);
    const auto* a = r.fresh->payload_as<EndpointPayload>();
    const auto* b = r.restored->payload_as<EndpointPayload>();
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->endpoint, b->endpoint);
    EXPECT_EQ(a->aligned, b->aligned);
    EXPECT_EQ(a->bones.size(), b->bones.size());
  }
}

TEST(RecipeRoundTrip, ElasticModelIsRebuiltTheSame) {
  v1::BakeOptions o;
  o.mutable_elastic_model();
  RoundTrip r = BakeAndRestore(testing::MakeTubeForBaking(), Coarse(o));
  ASSERT_TRUE(r.fresh && r.restored);
  const auto* a = r.fresh->payload_as<ElasticModelPayload>();
  const auto* b = r.restored->payload_as<ElasticModelPayload>();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->model->domain().num_nodes(), b->model->domain().num_nodes());
  EXPECT_EQ(r.restored->dense.size(), 0);
  // It holds no weights: GetWeights is refused, naming the deformer it is for.
  v1::GetWeightsResponse weights;
  absl::Status s = r.restored->recipe->FillWeights(*r.restored, &weights);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("DEFORMER_ELASTIC"));
}

// A loaded bake's DQS vertex order is prepared by the first BakeStore::DqsLanes (its first DQS
// or STBS frame), not when it is loaded, and the bake cache counts it from then on, once; an
// endpoint bake's payload lays its endpoint weights out in that order at the same time
// (EndpointPayload::lane_aligned, counted with it).
TEST(BakeStore, DqsLaneOrderIsPreparedOnFirstUseAndThenCounted) {
  auto blobs = OpenFilesystemBlobStore(testing::MakeTempDir("bakes"));
  ASSERT_TRUE(blobs.ok()) << blobs.status();
  std::shared_ptr<BlobStore> shared = *std::move(blobs);
  RigStore rigs(shared, 1 << 20);
  BakeStore store(shared, &rigs, &RecipeRegistry::Default(), 1 << 20);
  internal::v1::StoredBake stored;
  stored.set_format_version(kBakeFormatVersion);
  stored.set_rig_id(kRig);
  stored.mutable_options()->mutable_bbw();
  stored.set_bake_id(BakeId(kRig, stored.options()));
  auto bake = std::make_shared<LoadedBake>();
  bake->bake_id = stored.bake_id();
  bake->header = StoredBakeHeader(stored);
  bake->bone_weights = true;
  bake->sparse = *testing::MakeInterleavedJointSetsTube().sparse_weights;
  bake->bytes = 1000;
  auto endpoint = std::make_shared<EndpointPayload>();
  const int n = bake->sparse.rows();
  endpoint->aligned = RowMatrixXf::Zero(n, 4);
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < 4; ++c)
      if (bake->sparse.weights(i, c) != 0.f) endpoint->aligned(i, c) = 0.01f * static_cast<float>(i % 97) + 0.1f * c;
  bake->payload = endpoint;
  ASSERT_TRUE(store.Put(stored, bake).ok());
  EXPECT_EQ(store.cache_stats().bytes, 1000u);
  EXPECT_EQ(endpoint->lane_aligned.size(), 0);
  const DqsLaneOrder& lanes = store.DqsLanes(*bake);
  ASSERT_FALSE(lanes.empty());
  EXPECT_EQ(lanes.order, PrepareDqsLaneOrder(bake->sparse).order);
  EXPECT_TRUE(endpoint->lane_aligned == LaneEndpointWeights(bake->sparse, endpoint->aligned, lanes));
  const size_t laid_out = sizeof(float) * 4 * static_cast<size_t>(n);
  EXPECT_EQ(store.cache_stats().bytes, 1000u + lanes.bytes() + laid_out);
  EXPECT_EQ(&store.DqsLanes(*bake), &lanes);
  EXPECT_EQ(store.cache_stats().bytes, 1000u + lanes.bytes() + laid_out);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
