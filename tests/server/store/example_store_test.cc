#include "server/store/example_store.h"

#include <cmath>
#include <functional>
#include <limits>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "server/convert/convert.h"
#include "server/pose/psd_models.h"
#include "skinning/internal/v1/store.pb.h"
#include "tests/support/fixtures.h"
#include "tests/support/redis_process.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::MakeTempDir;
using ::skinning::testing::MakeTwoBoneTube;
using ::testing::HasSubstr;

constexpr char kRig[] = "rig-0123456789abcdef0123456789abcdef";

std::shared_ptr<BlobStore> OpenBlobs(const std::string& dir) {
  auto blobs = OpenFilesystemBlobStore(dir);
  EXPECT_TRUE(blobs.ok()) << blobs.status();
  return std::shared_ptr<BlobStore>(*std::move(blobs));
}

std::shared_ptr<LoadedRig> TubeRig() {
  Rig rig = MakeTwoBoneTube(5, 6);
  return PrepareRig(kRig, std::move(rig), v1::Rig());
}

// The rig's bind positions, each moved by `offset`, at the elbow bent by `degrees` about z.
v1::CreateExampleRequest BentRequest(const LoadedRig& rig, double degrees, float offset = 0.01f,
                                     const std::string& id = "") {
  v1::CreateExampleRequest req;
  req.set_parent("rigs/" + rig.id);
  Pose pose = RestPose(rig.rig.skeleton);
  pose.local[1].rotation = Eigen::AngleAxisd(degrees * M_PI / 180, Eigen::Vector3d::UnitZ());
  *req.mutable_example()->mutable_pose() = PoseToProto(pose);
  req.set_example_id(id);
  for (float p : rig.positions) req.mutable_example()->add_positions(p + offset);
  return req;
}

std::vector<std::string> Names(const internal::v1::StoredExamples& s) {
  std::vector<std::string> names;
  for (const auto& e : s.examples()) names.push_back(e.name());
  return names;
}

TEST(ResolveExample, JointsByNameSetsTheNamedJointAndKeepsTheOthersAtRest) {
  auto rig = TubeRig();
  v1::CreateExampleRequest req = BentRequest(*rig, 0);
  req.mutable_example()->clear_pose();
  const Eigen::Quaterniond q(Eigen::AngleAxisd(0.7, Eigen::Vector3d::UnitY()));
  v1::Transform& t = (*req.mutable_joints_by_name())["elbow"];
  for (double c : {q.x(), q.y(), q.z(), q.w()}) t.add_rotation(static_cast<float>(c));
  auto e = ResolveExample(*rig, req);
  ASSERT_TRUE(e.ok()) << e.status();
  auto pose = PoseFromProto(e->pose(), rig->rig.skeleton);
  ASSERT_TRUE(pose.ok()) << pose.status();
  ASSERT_EQ(pose->local.size(), 2u);
  EXPECT_LT(pose->local[1].rotation.angularDistance(q), 1e-6);
  // The elbow keeps its rest translation (not given), the root its rest transform.
  EXPECT_LT((pose->local[1].translation - rig->rig.skeleton.joints[1].rest.translation).norm(), 1e-7);
  EXPECT_LT(pose->local[0].rotation.angularDistance(rig->rig.skeleton.joints[0].rest.rotation), 1e-7);
  EXPECT_EQ(e->positions_size(), static_cast<int>(rig->positions.size()));
}

TEST(ResolveExample, RejectsBadInputNamingTheField) {
  auto rig = TubeRig();
  {
    v1::CreateExampleRequest req = BentRequest(*rig, 30);
    req.mutable_example()->mutable_positions()->RemoveLast();
    auto e = ResolveExample(*rig, req);
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(e.status().message(), HasSubstr("example.positions has 89 values, expected 90"));
  }
  {
    v1::CreateExampleRequest req = BentRequest(*rig, 30);
    req.mutable_example()->set_positions(7, std::numeric_limits<float>::quiet_NaN());
    auto e = ResolveExample(*rig, req);
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(e.status().message(), HasSubstr("example.positions[7] (vertex 2)"));
  }
  {
    v1::CreateExampleRequest req = BentRequest(*rig, 30);
    req.mutable_example()->clear_pose();
    (*req.mutable_joints_by_name())["wrist"].add_translation(1);
    auto e = ResolveExample(*rig, req);
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(e.status().message(), HasSubstr("no joint named 'wrist'"));
  }
  {
    v1::CreateExampleRequest req = BentRequest(*rig, 30);
    (*req.mutable_joints_by_name())["elbow"];
    auto e = ResolveExample(*rig, req);
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(e.status().message(), HasSubstr("not both"));
  }
  {
    v1::CreateExampleRequest req = BentRequest(*rig, 30);
    req.mutable_example()->mutable_pose()->mutable_joints()->RemoveLast();
    auto e = ResolveExample(*rig, req);
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(e.status().message(), HasSubstr("example.pose.joints has 1 entries"));
  }
  {
    v1::CreateExampleRequest req = BentRequest(*rig, 30);
    req.mutable_example()->mutable_pose()->add_bone_stretch(1.5f);
    req.mutable_example()->mutable_pose()->add_bone_stretch(1.f);
    auto e = ResolveExample(*rig, req);
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(e.status().message(), HasSubstr("bone_stretch"));
  }
  {
    v1::CreateExampleRequest req = BentRequest(*rig, 30);
    req.set_example_id("bad\nname");
    auto e = ResolveExample(*rig, req);
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(e.status().message(), HasSubstr("example_id 'bad\nname' is not an example id"));
  }
}

TEST(ExampleStore, AddNamesUnnamedExamplesAndBumpsTheRevision) {
  auto rig = TubeRig();
  ExampleStore store(OpenBlobs(MakeTempDir("examples")));
  auto empty = store.Get(kRig, "");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->stored->examples_size(), 0);
  EXPECT_EQ(empty->stored->revision(), 0);
  for (int k = 0; k < 3; ++k) {
    auto e = ResolveExample(*rig, BentRequest(*rig, 20 * (k + 1), 0.01f, k == 1 ? "example-3" : ""));
    ASSERT_TRUE(e.ok()) << e.status();
    auto added = store.Add(kRig, "", *e);
    ASSERT_TRUE(added.ok()) << added.status();
    EXPECT_EQ(added->example_count, k + 1);
  }
  auto got = store.Get(kRig, "");
  ASSERT_TRUE(got.ok());
  // The third, unnamed, skips the taken "example-3".
  EXPECT_THAT(Names(*got->stored), ::testing::ElementsAre("example-1", "example-3", "example-4"));
  EXPECT_EQ(got->stored->revision(), 3);
  EXPECT_EQ(got->stored->format_version(), kExamplesFormatVersion);
  EXPECT_NE(got->fingerprint, empty->fingerprint);
}

TEST(ExampleStore, ErrorsStoreNothing) {
  auto rig = TubeRig();
  const std::string dir = MakeTempDir("examples");
  ExampleStore store(OpenBlobs(dir));
  auto first = ResolveExample(*rig, BentRequest(*rig, 30, 0.01f, "bent"));
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(store.Add(kRig, "", *first).ok());
  // Taken name.
  auto again = ResolveExample(*rig, BentRequest(*rig, 60, 0.01f, "bent"));
  auto taken = store.Add(kRig, "", *again);
  EXPECT_EQ(taken.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(taken.status().message(), HasSubstr("'bent'"));
  // A validator that refuses.
  auto other = ResolveExample(*rig, BentRequest(*rig, 60, 0.01f, "other"));
  auto refused = store.Add(kRig, "", *other, [](const internal::v1::StoredExamples& existing, const v1::Example& e) {
    EXPECT_EQ(existing.examples_size(), 1);
    EXPECT_EQ(e.name(), "other");
    return absl::InvalidArgumentError("no");
  });
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  // Unknown name.
  auto missing = store.Remove(kRig, "", "nope");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("'nope'"));
  // What is stored (read by a fresh store on the same directory) is the first example alone.
  ExampleStore fresh(OpenBlobs(dir));
  auto got = fresh.Get(kRig, "");
  ASSERT_TRUE(got.ok());
  EXPECT_THAT(Names(*got->stored), ::testing::ElementsAre("bent"));
  EXPECT_EQ(got->stored->revision(), 1);
}

TEST(ExampleStore, ARetriedAddChangesNothing) {
  auto rig = TubeRig();
  const std::string dir = MakeTempDir("examples");
  ExampleStore store(OpenBlobs(dir));
  auto e = ResolveExample(*rig, BentRequest(*rig, 30, 0.01f, "bent"));
  ASSERT_TRUE(e.ok());
  auto first = store.Add(kRig, "", *e);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->created);
  // The same call again (a client retry after a lost answer): OK, nothing stored.
  auto again = store.Add(kRig, "", *e);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->created);
  EXPECT_EQ(again->id, "bent");
  EXPECT_EQ(again->example_count, 1);
  ExampleStore fresh(OpenBlobs(dir));
  EXPECT_EQ(fresh.Get(kRig, "")->stored->revision(), 1);
  // The same name with other positions is a conflict.
  auto moved = ResolveExample(*rig, BentRequest(*rig, 30, 0.02f, "bent"));
  auto conflict = store.Add(kRig, "", *moved);
  EXPECT_EQ(conflict.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(conflict.status().message(), HasSubstr("different pose or shape"));
}

TEST(ExampleStore, ARetriedUnnamedAddChangesNothing) {
  auto rig = TubeRig();
  const std::string dir = MakeTempDir("examples");
  ExampleStore store(OpenBlobs(dir));
  auto e = ResolveExample(*rig, BentRequest(*rig, 30, 0.01f, ""));
  ASSERT_TRUE(e.ok());
  auto first = store.Add(kRig, "", *e);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->created);
  EXPECT_EQ(first->id, "example-1");
  // The retry of the unnamed call finds the stored copy under the name the server gave it.
  auto again = store.Add(kRig, "", *e);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->created);
  EXPECT_EQ(again->id, "example-1");
  EXPECT_EQ(again->example_count, 1);
  EXPECT_EQ(ExampleStore(OpenBlobs(dir)).Get(kRig, "")->stored->revision(), 1);
  // Unnamed, same pose, other positions: not a retry. The validator (the server's duplicate-pose
  // check) decides; without one the store keeps both.
  auto other = ResolveExample(*rig, BentRequest(*rig, 30, 0.02f, ""));
  auto second = store.Add(kRig, "", *other);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->created);
  EXPECT_EQ(second->id, "example-2");
  // A named call with the content of an unnamed example is not a retry of it either.
  auto named = ResolveExample(*rig, BentRequest(*rig, 30, 0.01f, "named"));
  auto third = store.Add(kRig, "", *named);
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_TRUE(third->created);
  EXPECT_EQ(third->example_count, 3);
}

TEST(ExampleStore, EachTenantHasItsOwnExamplesOfASharedRig) {
  auto rig = TubeRig();
  const std::string dir = MakeTempDir("examples");
  auto blobs = OpenBlobs(dir);
  ExampleStore store(blobs);
  auto mine = ResolveExample(*rig, BentRequest(*rig, 30, 0.01f, "alpha-bent"));
  auto theirs = ResolveExample(*rig, BentRequest(*rig, 30, 0.05f, "beta-bent"));
  auto open = ResolveExample(*rig, BentRequest(*rig, 60, 0.01f, "open-bent"));
  ASSERT_TRUE(store.Add(kRig, "alpha", *mine).ok());
  ASSERT_TRUE(store.Add(kRig, "beta", *theirs).ok());
  ASSERT_TRUE(store.Add(kRig, "", *open).ok());
  EXPECT_THAT(Names(*store.Get(kRig, "alpha")->stored), ::testing::ElementsAre("alpha-bent"));
  EXPECT_THAT(Names(*store.Get(kRig, "beta")->stored), ::testing::ElementsAre("beta-bent"));
  EXPECT_THAT(Names(*store.Get(kRig, "")->stored), ::testing::ElementsAre("open-bent"));
  EXPECT_NE(store.Get(kRig, "alpha")->fingerprint, store.Get(kRig, "beta")->fingerprint);
  // Another tenant's name is not taken for this one, and removing is per tenant too.
  EXPECT_EQ(store.Remove(kRig, "beta", "alpha-bent").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(*blobs->Exists(absl::StrCat("examples/", kRig, "/alpha.pb")));
  // A tenant that gives up the rig loses its examples; the others keep theirs.
  ASSERT_TRUE(store.DeleteAll(kRig, "alpha").ok());
  EXPECT_EQ(store.Get(kRig, "alpha")->stored->examples_size(), 0);
  EXPECT_THAT(Names(*store.Get(kRig, "beta")->stored), ::testing::ElementsAre("beta-bent"));
  // The stored rig gone: every tenant's examples go (read back by a fresh store).
  ASSERT_TRUE(store.DeleteEveryTenant(kRig).ok());
  ExampleStore fresh(OpenBlobs(dir));
  for (const char* tenant : {"", "alpha", "beta"})
    EXPECT_EQ(fresh.Get(kRig, tenant)->stored->examples_size(), 0) << tenant;
  EXPECT_EQ(store.Get(kRig, "../beta").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ExampleStore, AnotherReplicaSeesAChangeWithinTheRecheckInterval) {
  auto rig = TubeRig();
  const std::string dir = MakeTempDir("examples");
  ExampleStore a(OpenBlobs(dir)), b(OpenBlobs(dir));
  ASSERT_EQ(b.Get(kRig, "")->stored->examples_size(), 0);  // b caches "none"
  auto e = ResolveExample(*rig, BentRequest(*rig, 30));
  ASSERT_TRUE(a.Add(kRig, "", *e).ok());
  EXPECT_EQ(a.Get(kRig, "")->stored->examples_size(), 1);  // its own change at once
  std::this_thread::sleep_for(ExampleStore::kRecheck + std::chrono::milliseconds(50));
  auto seen = b.Get(kRig, "");
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ(seen->stored->examples_size(), 1);
  EXPECT_EQ(seen->fingerprint, a.Get(kRig, "")->fingerprint);
}

// Two replicas (store objects with their own blob store handles on one directory, and on one
// Redis) adding examples at the same time from several threads each: every example is kept and
// the revision counts every change. Before WriteIf, one replica's read-modify-write could
// overwrite the other's.
void CheckConcurrentAddsFromTwoReplicas(const std::function<std::shared_ptr<BlobStore>()>& open) {
  auto rig = TubeRig();
  ExampleStore a(open()), b(open());
  constexpr int kThreadsPerReplica = 3, kAddsPerThread = 4;
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    for (int t = 0; t < kThreadsPerReplica; ++t)
      threads.emplace_back([&, r, t] {
        for (int i = 0; i < kAddsPerThread; ++i) {
          const int k = (r * kThreadsPerReplica + t) * kAddsPerThread + i;
          auto e = ResolveExample(*rig, BentRequest(*rig, 1 + k, 0.01f, absl::StrCat("e", k)));
          ASSERT_TRUE(e.ok()) << e.status();
          auto added = (r == 0 ? a : b).Add(kRig, "", *e);
          ASSERT_TRUE(added.ok()) << added.status();
          EXPECT_TRUE(added->created);
        }
      });
  for (auto& th : threads) th.join();
  const int total = 2 * kThreadsPerReplica * kAddsPerThread;
  ExampleStore fresh(open());
  auto set = fresh.Get(kRig, "");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->stored->examples_size(), total);
  EXPECT_EQ(set->stored->revision(), static_cast<int64_t>(total));
}

TEST(ExampleStore, ConcurrentAddsFromTwoReplicasOnOneDirectoryKeepEveryExample) {
  const std::string dir = MakeTempDir("examples");
  CheckConcurrentAddsFromTwoReplicas([&] { return OpenBlobs(dir); });
}

TEST(ExampleStore, ConcurrentAddsFromTwoReplicasOnOneRedisKeepEveryExample) {
  testing::RedisProcess redis;
  CheckConcurrentAddsFromTwoReplicas([&] {
    auto blobs = OpenRedisBlobStore("127.0.0.1", redis.port());
    EXPECT_TRUE(blobs.ok()) << blobs.status();
    return std::shared_ptr<BlobStore>(*std::move(blobs));
  });
}

TEST(ExampleStore, DeleteAllRemovesTheExamplesAndRevisionsNeverRepeat) {
  auto rig = TubeRig();
  const std::string dir = MakeTempDir("examples");
  ExampleStore store(OpenBlobs(dir));
  auto e = ResolveExample(*rig, BentRequest(*rig, 30, 0.01f, "x"));
  ASSERT_TRUE(store.Add(kRig, "", *e).ok());
  const ExampleSet before = *store.Get(kRig, "");
  ASSERT_TRUE(store.DeleteAll(kRig, "").ok());
  auto after = store.Get(kRig, "");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->stored->examples_size(), 0);
  // The same example added again is a new revision with a different fingerprint: nothing
  // derived from the deleted set can be mistaken for it.
  ASSERT_TRUE(store.Add(kRig, "", *e).ok());
  auto readded = store.Get(kRig, "");
  EXPECT_GT(readded->stored->revision(), before.stored->revision());
  EXPECT_NE(readded->fingerprint, before.fingerprint);
  EXPECT_TRUE(store.DeleteAll("rig-ffffffffffffffffffffffffffffffff", "").ok());  // none: fine
}

TEST(ExampleStore, RefusesMoreThanTheLimitPerRig) {
  auto rig = TubeRig();
  ExampleStore store(OpenBlobs(MakeTempDir("examples")));
  // Distinct shapes (an identical unnamed one would be a retry of the first).
  auto shape = [&](int k) { return *ResolveExample(*rig, BentRequest(*rig, 30, 0.001f * (k + 1))); };
  for (int k = 0; k < kMaxExamplesPerRig; ++k) ASSERT_TRUE(store.Add(kRig, "", shape(k)).ok()) << k;
  auto over = store.Add(kRig, "", shape(kMaxExamplesPerRig));
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(over.status().message(), HasSubstr(absl::StrCat(kMaxExamplesPerRig, " examples")));
  EXPECT_EQ(store.Get(kRig, "")->stored->examples_size(), kMaxExamplesPerRig);
}

TEST(ExampleStore, RefusesAnotherFormatVersion) {
  const std::string dir = MakeTempDir("examples");
  auto blobs = OpenBlobs(dir);
  internal::v1::StoredExamples stored;
  stored.set_format_version(kExamplesFormatVersion + 1);
  stored.set_rig_id(kRig);
  ASSERT_TRUE(blobs->Put(absl::StrCat("examples/", kRig, ".pb"), stored.SerializeAsString()).ok());
  ExampleStore store(blobs);
  auto got = store.Get(kRig, "");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(got.status().message(), HasSubstr("format version 2"));
  EXPECT_EQ(store.Get("../etc/passwd", "").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ValidateNewExample, RefusesThePoseOfAnExistingExampleNamingIt) {
  auto rig = TubeRig();
  internal::v1::StoredExamples existing;
  auto a = ResolveExample(*rig, BentRequest(*rig, 45, 0.01f, "a"));
  ASSERT_TRUE(a.ok());
  *existing.add_examples() = *a;
  // The same rotation as −q, other positions: still the same pose.
  v1::CreateExampleRequest req = BentRequest(*rig, 45, 0.02f, "b");
  auto* rot = req.mutable_example()->mutable_pose()->mutable_joints(1)->mutable_rotation();
  for (float& c : *rot) c = -c;
  auto b = ResolveExample(*rig, req);
  ASSERT_TRUE(b.ok());
  absl::Status s = ValidateNewExample(*rig, existing, *b);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("has the pose of example 'a'"));
  // Another pose is fine.
  auto c = ResolveExample(*rig, BentRequest(*rig, 50, 0.02f, "c"));
  EXPECT_TRUE(ValidateNewExample(*rig, existing, *c).ok());
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

// A support-joint model that cannot be built (the only bent joint is the root, which has no
// parent bone) fails once; the same request again is answered from memory without a rebuild.
TEST(PsdModels, ABuildThatCannotSucceedIsNotRepeated) {
  auto rig = TubeRig();
  ASSERT_TRUE(rig->rig.has_weights());
  ExampleStore store(OpenBlobs(MakeTempDir("examples")));
  v1::CreateExampleRequest req = BentRequest(*rig, 0, 0.01f, "root-turned");
  Pose pose = RestPose(rig->rig.skeleton);
  pose.local[0].rotation = Eigen::AngleAxisd(0.5, Eigen::Vector3d::UnitZ());
  *req.mutable_example()->mutable_pose() = PoseToProto(pose);
  auto e = ResolveExample(*rig, req);
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_TRUE(store.Add(kRig, "", *e).ok());
  PsdModels models(&store);
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto m = models.Get(*rig, "", &rig->weights, "", v1::DEFORMER_PSD_SUPPORT_LBS);
    EXPECT_EQ(m.status().code(), absl::StatusCode::kFailedPrecondition) << attempt;
    EXPECT_THAT(m.status().message(), HasSubstr("support joints")) << attempt;
  }
  EXPECT_EQ(models.failed_builds(), 1u);
  // Plain PSD on the same examples builds.
  auto plain = models.Get(*rig, "", &rig->weights, "", v1::DEFORMER_PSD_LBS);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_NE(*plain, nullptr);
  EXPECT_EQ(models.builds(), 1u);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
