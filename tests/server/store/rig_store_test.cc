#include "server/store/rig_store.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_format.h"

#include "server/convert/convert.h"
#include "server/store/blob_store.h"
#include "skinning/internal/v1/store.pb.h"
#include "tests/support/fixtures.h"
#include "tests/support/server_process.h"
#include "tests/support/stored_file.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::MakeInterleavedJointSetsTube;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::MakeTwoBoneTube;
using ::testing::HasSubstr;

std::unique_ptr<RigStore> OpenStore(const std::string& dir, size_t cache = 1 << 30) {
  auto blobs = OpenFilesystemBlobStore(dir);
  EXPECT_TRUE(blobs.ok()) << blobs.status();
  return std::make_unique<RigStore>(*std::move(blobs), cache);
}

TEST(Convert, RigRoundTripIsCanonical) {
  const v1::Rig p = RigToProto(MakeTwoBoneTube());
  auto rig = RigFromProto(p);
  ASSERT_TRUE(rig.ok()) << rig.status();
  const v1::Rig again = RigToProto(*rig);
  EXPECT_EQ(again.SerializeAsString(), p.SerializeAsString());
  EXPECT_EQ(RigId(again), RigId(p));
}

// The ids of rigs stored before the v1 API (computed by that server's RigId for these fixtures):
// the renamed fields kept their numbers and wire types, so the content addresses are unchanged
// and stored rigs keep their names.
TEST(Convert, RigIdsAreThoseOfTheServerBeforeTheV1Api) {
  EXPECT_EQ(RigId(RigToProto(MakeTwoBoneTube())), "rig-f2a05c66264e4cf57adcaffe6bacc552");
  EXPECT_EQ(RigId(RigToProto(testing::MakeTubeForBaking())), "rig-90b1e941e8e95ae50ce633c29f459ef1");
  EXPECT_EQ(RigId(RigToProto(testing::MakeCylinderRig())), "rig-9099901ea068c0f8c96eca4de4a03fc3");
}

TEST(Convert, DisplayNameAndOutputOnlyFieldsDoNotChangeTheId) {
  const v1::Rig plain = RigToProto(MakeTwoBoneTube());
  v1::Rig labelled = plain;
  labelled.set_display_name("another label");
  labelled.set_name("rigs/rig-00000000000000000000000000000000");
  labelled.set_vertex_count(7);
  labelled.add_joint_names("x");
  EXPECT_EQ(RigId(labelled), RigId(plain));
}

TEST(Convert, ImplicitAndExplicitDefaultsGiveTheSameId) {
  v1::Rig explicit_rig = RigToProto(MakeTwoBoneTube());
  v1::Rig implicit_rig = explicit_rig;
  for (auto& joint : *implicit_rig.mutable_skeleton()->mutable_joints()) {
    joint.mutable_rest()->clear_scale();     // (1, 1, 1)
    joint.clear_inverse_bind();              // inverse of the rest world transform
  }
  auto a = RigFromProto(explicit_rig), b = RigFromProto(implicit_rig);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(RigId(RigToProto(*a)), RigId(RigToProto(*b)));
}

TEST(Convert, MessagesNameTheFieldAndIndex) {
  v1::Rig p = RigToProto(MakeTwoBoneTube());
  p.mutable_mesh()->mutable_positions()->RemoveLast();
  EXPECT_THAT(std::string(RigFromProto(p).status().message()), HasSubstr("rig.mesh.positions has"));
  p = RigToProto(MakeTwoBoneTube());
  p.mutable_weights()->mutable_sparse()->set_joints(7, 5);
  EXPECT_THAT(std::string(RigFromProto(p).status().message()),
              HasSubstr("rig.weights.sparse.joints[7] (vertex 3) = 5 is out of range (2 joints)"));
  p = RigToProto(MakeTwoBoneTube());
  p.mutable_skeleton()->mutable_joints(1)->mutable_rest()->add_rotation(1.f);
  EXPECT_THAT(std::string(RigFromProto(p).status().message()),
              HasSubstr("rig.skeleton.joints[1].rest.rotation has 5 values"));
}

// Mesh parts travel with the rig, count in its id only when given, and are checked.
TEST(Convert, MeshPartsRoundTripAndAreValidated) {
  Rig rig = MakeTwoBoneTube();
  const std::string plain_id = RigId(RigToProto(rig));
  const int nv = static_cast<int>(rig.mesh.V.rows());
  rig.mesh_parts = {MeshPart{"tube", 0, nv}};
  const v1::Rig with_parts = RigToProto(rig);
  ASSERT_EQ(with_parts.mesh().parts_size(), 1);
  EXPECT_EQ(with_parts.mesh().parts(0).name(), "tube");
  EXPECT_EQ(with_parts.mesh().parts(0).vertex_count(), nv);
  EXPECT_NE(RigId(with_parts), plain_id);
  absl::StatusOr<Rig> back = RigFromProto(with_parts);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->mesh_parts.size(), 1u);
  EXPECT_EQ(back->mesh_parts[0].name, "tube");
  EXPECT_EQ(back->mesh_parts[0].num_vertices, nv);
  EXPECT_EQ(RigId(RigToProto(*back)), RigId(with_parts));

  v1::Rig bad = with_parts;
  bad.mutable_mesh()->mutable_parts(0)->set_vertex_count(nv - 1);
  EXPECT_THAT(std::string(RigFromProto(bad).status().message()),
              HasSubstr(absl::StrFormat("rig.mesh.parts: the parts hold %d vertices", nv - 1)));
  bad.mutable_mesh()->mutable_parts(0)->set_vertex_count(2000000000);
  bad.mutable_mesh()->add_parts()->set_vertex_count(2000000000);
  EXPECT_EQ(RigFromProto(bad).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Convert, RigOverTheVertexLimitIsResourceExhausted) {
  RigLimits limits;
  limits.max_vertices = 100;
  auto r = RigFromProto(RigToProto(MakeTwoBoneTube()), limits);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("exceed the server limit of 100"));
}

TEST(RigStore, StoresAtomicallyWithAFormatVersionAndSurvivesReopening) {
  const std::string dir = MakeTempDir("store");
  std::string id;
  {
    auto store = OpenStore(dir);
    auto r = store->Register(RigToProto(MakeTwoBoneTube()));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->created);
    id = r->rig_id;
  }
  // Exactly the artifact and its summary; no temporary files left behind.
  std::vector<std::string> files;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files.push_back(std::filesystem::relative(e.path(), dir).string());
  std::sort(files.begin(), files.end());
  EXPECT_THAT(files, ::testing::ElementsAre("rigs/" + id + ".info", "rigs/" + id + ".pb"));
  // The summary is a StoredRigSummary (RigInfo's layout) and reads back as the Rig's
  // output-only fields.
  internal::v1::StoredRigSummary info;
  ASSERT_TRUE(info.ParseFromString(testing::StoredPayload(dir + "/rigs/" + id + ".info")));
  const v1::Rig summary = SummaryFromStored(info);
  EXPECT_EQ(summary.name(), "rigs/" + id);
  EXPECT_EQ(summary.vertex_count(), MakeTwoBoneTube().mesh.V.rows());
  EXPECT_EQ(summary.joint_count(), 2);
  EXPECT_EQ(summary.influence_count(), 2);
  EXPECT_GT(summary.size_bytes(), 0);
  EXPECT_GT(summary.create_time().seconds(), 0);
  internal::v1::StoredRig stored;
  ASSERT_TRUE(stored.ParseFromString(testing::StoredPayload(dir + "/rigs/" + id + ".pb")));
  EXPECT_EQ(stored.format_version(), kRigFormatVersion);
  EXPECT_EQ(stored.rig_id(), id);

  auto store = OpenStore(dir);
  auto again = store->Register(RigToProto(MakeTwoBoneTube()));
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->created);
  auto loaded = store->Get(id);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->rig.mesh.V.rows(), MakeTwoBoneTube().mesh.V.rows());
}

TEST(RigStore, RefusesCorruptOrForeignVersionArtifactsWithDataLoss) {
  const std::string dir = MakeTempDir("store");
  std::string id;
  {
    auto store = OpenStore(dir);
    id = store->Register(RigToProto(MakeTwoBoneTube()))->rig_id;
  }
  const std::string path = dir + "/rigs/" + id + ".pb";
  auto blobs = OpenFilesystemBlobStore(dir);
  ASSERT_TRUE(blobs.ok()) << blobs.status();
  const std::string key = "rigs/" + id + ".pb";
  const absl::StatusOr<std::string> payload = (*blobs)->Get(key);
  ASSERT_TRUE(payload.ok()) << payload.status();
  internal::v1::StoredRig stored;
  ASSERT_TRUE(stored.ParseFromString(*payload));
  // The file cut in half (the blob store's length check), then the payload cut in half and
  // written whole (the artifact does not parse).
  const std::string file = testing::FileBytes(path);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << file.substr(0, file.size() / 2);
  auto loaded = OpenStore(dir)->Get(id);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss) << loaded.status();
  EXPECT_THAT(std::string(loaded.status().message()), HasSubstr("payload bytes but"));
  ASSERT_TRUE((*blobs)->Put(key, payload->substr(0, payload->size() / 2)).ok());
  loaded = OpenStore(dir)->Get(id);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss) << loaded.status();
  EXPECT_THAT(std::string(loaded.status().message()), HasSubstr("does not parse"));

  stored.set_format_version(kRigFormatVersion + 1);
  ASSERT_TRUE((*blobs)->Put(key, stored.SerializeAsString()).ok());
  loaded = OpenStore(dir)->Get(id);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(loaded.status().message()), HasSubstr("format version"));

  // An artifact whose content does not match its address is refused too.
  stored.set_format_version(kRigFormatVersion);
  stored.mutable_rig()->mutable_mesh()->set_positions(0, 42.f);
  ASSERT_TRUE((*blobs)->Put(key, stored.SerializeAsString()).ok());
  loaded = OpenStore(dir)->Get(id);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(loaded.status().message()), HasSubstr("content address"));
}

TEST(RigStore, CacheStaysUnderItsByteCapAndEvictsLeastRecentlyUsed) {
  const std::string dir = MakeTempDir("store");
  const Rig base = MakeTwoBoneTube();
  auto probe = PrepareRig("x", base, {});
  const size_t one = probe->bytes;
  auto store = OpenStore(dir, 3 * one + one / 2);  // room for three
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) {
    v1::Rig p = RigToProto(base);
    p.mutable_mesh()->set_positions(0, static_cast<float>(i));
    ids.push_back(store->Register(p)->rig_id);
    EXPECT_LE(store->cache_stats().bytes, 3 * one + one / 2);
  }
  EXPECT_EQ(store->cache_stats().entries, 3u);
  EXPECT_EQ(store->cache_stats().evictions, 3u);
  // Evicted rigs still load from the store (a miss), recent ones are hits.
  const auto before = store->cache_stats();
  ASSERT_TRUE(store->Get(ids[5]).ok());
  ASSERT_TRUE(store->Get(ids[0]).ok());
  EXPECT_EQ(store->cache_stats().hits, before.hits + 1);
  EXPECT_EQ(store->cache_stats().misses, before.misses + 1);
}

// Joint.non_deforming says the joint never receives weights: a rig whose own weights weight it
// contradicts itself and is refused naming the joint and a vertex; without weights it is taken.
TEST(RigStore, RefusesANonDeformingJointThatTheRigsWeightsWeight) {
  auto store = OpenStore(MakeTempDir("store"));
  v1::Rig rig = RigToProto(MakeTwoBoneTube());
  rig.mutable_skeleton()->mutable_joints(1)->set_non_deforming(true);
  auto refused = store->Register(rig);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("rig.skeleton.joints[1] ('"));
  EXPECT_THAT(refused.status().message(), HasSubstr("is non_deforming, but rig.weights give it weight at vertex"));
  rig.clear_weights();
  EXPECT_TRUE(store->Register(rig).ok());
}

TEST(RigStore, DeleteRemovesTheRigAndMalformedIdsAreRejected) {
  auto store = OpenStore(MakeTempDir("store"));
  const std::string id = store->Register(RigToProto(MakeTwoBoneTube()))->rig_id;
  ASSERT_TRUE(*store->Delete(id));
  EXPECT_EQ(store->Get(id).status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(*store->Delete(id));
  EXPECT_EQ(store->Get("rig-../../x").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(store->List()->empty());
}

// Register writes the artifact, then its summary. A process that died, or a disk that filled,
// between the two left a rig that loaded but was never listed, and registering it again did not
// mend it. Now List and Register write a missing or unreadable summary again from the rig, and a
// summary whose rig is gone is not listed.
TEST(RigStore, ARigWithoutAReadableSummaryIsListedAndRegisteringItWritesTheSummaryAgain) {
  const std::string dir = MakeTempDir("store");
  const v1::Rig proto = RigToProto(MakeTwoBoneTube());
  const std::string id = OpenStore(dir)->Register(proto)->rig_id;
  const std::string info = dir + "/rigs/" + id + ".info";
  const std::string good = testing::FileBytes(info);
  const auto read_info = [&] { return testing::FileBytes(info); };
  const auto expect_listed = [&](RigStore& store) {
    absl::StatusOr<std::vector<v1::Rig>> listed = store.List();
    ASSERT_TRUE(listed.ok()) << listed.status();
    ASSERT_EQ(listed->size(), 1u);
    EXPECT_EQ((*listed)[0].name(), "rigs/" + id);
    EXPECT_EQ((*listed)[0].vertex_count(), MakeTwoBoneTube().mesh.V.rows());
  };

  // Missing: Register (a fresh store, so nothing is cached) writes the same summary again.
  std::filesystem::remove(info);
  auto again = OpenStore(dir)->Register(proto);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->created);
  EXPECT_EQ(read_info(), good);

  // Missing: List writes it and lists the rig.
  std::filesystem::remove(info);
  expect_listed(*OpenStore(dir));
  EXPECT_EQ(read_info(), good);

  // Garbage, and another rig's summary: both read as no summary of this rig.
  internal::v1::StoredRigSummary foreign;
  ASSERT_TRUE(foreign.ParseFromString(testing::StoredPayload(info)));
  foreign.set_rig_id("rig-00000000000000000000000000000000");
  for (const std::string& bad : {std::string("\x0a\xff\xff\xff\x7f garbage"), foreign.SerializeAsString()}) {
    std::ofstream(info, std::ios::binary | std::ios::trunc) << bad;
    expect_listed(*OpenStore(dir));
    EXPECT_EQ(read_info(), good);
  }

  // A summary without its artifact (a delete that stopped half way) is not listed; an artifact
  // that does not load is left out too (GetRig says DATA_LOSS).
  const std::string pb = dir + "/rigs/" + id + ".pb";
  std::filesystem::rename(pb, pb + ".aside");
  EXPECT_TRUE(OpenStore(dir)->List()->empty());
  std::filesystem::rename(pb + ".aside", pb);
  std::filesystem::remove(info);
  std::ofstream(pb, std::ios::binary | std::ios::trunc) << "broken";
  EXPECT_TRUE(OpenStore(dir)->List()->empty());
}

// The DQS vertex order is prepared by the first RigStore::DqsLanes (the first DQS frame), not
// when the rig is loaded, and the cache counts its bytes from then on: a rig posed with LBS only
// never pays for it.
TEST(RigStore, DqsLaneOrderIsPreparedOnFirstUseAndThenCounted) {
  auto store = OpenStore(MakeTempDir("store"));
  const std::string id = store->Register(RigToProto(MakeInterleavedJointSetsTube()))->rig_id;
  auto rig = store->Get(id);
  ASSERT_TRUE(rig.ok()) << rig.status();
  const size_t loaded = store->cache_stats().bytes;
  EXPECT_EQ(loaded, (*rig)->bytes);
  const DqsLaneOrder& lanes = store->DqsLanes(**rig);
  ASSERT_FALSE(lanes.empty());
  const DqsLaneOrder direct = PrepareDqsLaneOrder((*rig)->weights);
  EXPECT_EQ(lanes.order, direct.order);
  EXPECT_EQ(lanes.joints, direct.joints);
  EXPECT_EQ(lanes.weights, direct.weights);
  EXPECT_EQ(lanes.bytes(), static_cast<size_t>((*rig)->weights.rows()) * 4 * 9);  // 4 (1 + 2k) per vertex
  EXPECT_EQ(store->cache_stats().bytes, loaded + lanes.bytes());
  // Prepared once: the same order, counted once.
  EXPECT_EQ(&store->DqsLanes(**rig), &lanes);
  EXPECT_EQ(store->cache_stats().bytes, loaded + lanes.bytes());

  // Weights whose order would not pay (the plain tube: k = 2) add nothing.
  const std::string tube_id = store->Register(RigToProto(MakeTwoBoneTube()))->rig_id;
  auto tube = store->Get(tube_id);
  ASSERT_TRUE(tube.ok()) << tube.status();
  const size_t both = store->cache_stats().bytes;
  EXPECT_TRUE(store->DqsLanes(**tube).empty());
  EXPECT_EQ(store->cache_stats().bytes, both);
}

// The growth keeps the cache under its cap (the grown rig itself is evicted when nothing else
// is), and an order prepared for a rig that is no longer the cached one (evicted and loaded
// again while a call held it) is not counted against its successor.
TEST(RigStore, DqsLaneOrderGrowthStaysUnderTheCapAndSkipsReplacedRigs) {
  const Rig base = MakeInterleavedJointSetsTube();
  const size_t one = PrepareRig("x", base, {})->bytes;
  const size_t order = PrepareDqsLaneOrder(PrepareRig("x", base, {})->weights).bytes();
  ASSERT_GT(order, 0u);
  ASSERT_LT(order, one / 2);
  {
    auto store = OpenStore(MakeTempDir("store"), one + order / 2);
    const std::string id = store->Register(RigToProto(base))->rig_id;
    auto rig = store->Get(id);
    ASSERT_TRUE(rig.ok()) << rig.status();
    const DqsLaneOrder& lanes = store->DqsLanes(**rig);
    EXPECT_EQ(lanes.bytes(), order);  // still valid: the call holds the rig
    EXPECT_EQ(store->cache_stats().entries, 0u);
    EXPECT_EQ(store->cache_stats().bytes, 0u);
    EXPECT_EQ(store->cache_stats().evictions, 1u);
  }
  auto store = OpenStore(MakeTempDir("store"), one + one / 2);  // room for one rig and its order
  const std::string id = store->Register(RigToProto(base))->rig_id;
  auto held = store->Get(id);
  ASSERT_TRUE(held.ok()) << held.status();
  v1::Rig other = RigToProto(base);
  other.mutable_mesh()->set_positions(0, 7.f);
  ASSERT_TRUE(store->Register(other).ok());  // evicts the held rig
  auto again = store->Get(id);               // loads it again: another object under the same key
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_NE(again->get(), held->get());
  EXPECT_EQ(store->cache_stats().entries, 1u);
  const size_t cached = store->cache_stats().bytes;
  EXPECT_EQ(store->DqsLanes(**held).bytes(), order);
  EXPECT_EQ(store->cache_stats().bytes, cached);
  EXPECT_EQ(store->DqsLanes(**again).bytes(), order);
  EXPECT_EQ(store->cache_stats().bytes, cached + order);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
