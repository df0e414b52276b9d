#include "server/store/animation_store.h"

#include <sys/stat.h>

#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "server/store/blob_store.h"
#include "tests/support/clips.h"
#include "tests/support/redis_process.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::ClipNames;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::RedisProcess;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kRig[] = "rig-0123456789abcdef0123456789abcdef";
constexpr char kOtherRig[] = "rig-fedcba9876543210fedcba9876543210";

std::shared_ptr<BlobStore> OpenBlobs(const std::string& dir) {
  auto blobs = OpenFilesystemBlobStore(dir);
  EXPECT_TRUE(blobs.ok()) << blobs.status();
  return std::shared_ptr<BlobStore>(*std::move(blobs));
}

// A clip of `frames` poses of one joint, its x translation f + tag at frame f.
v1::AnimationClip Clip(const std::string& name, int frames, float tag = 0) {
  v1::AnimationClip clip;
  clip.set_name(name);
  clip.set_frames_per_second(30);
  for (int f = 0; f < frames; ++f) {
    v1::Transform* t = clip.add_poses()->add_joints();
    for (float v : {f + tag, 0.f, 0.f}) t->add_translation(v);
  }
  return clip;
}

// A file registered again moves its clips to the front; a clip of the same name but other frames
// (Mixamo names every clip "mixamo.com") is kept beside the stored one.
TEST(AnimationStore, AddedClipsGoFirstAndReplaceStoredOnesEqualToThem) {
  const std::string dir = MakeTempDir("anim");
  AnimationStore store(OpenBlobs(dir), 0);
  EXPECT_TRUE(ClipNames(store.Get(kRig, "")).empty());
  EXPECT_EQ(*store.Add(kRig, "", {Clip("walk", 3), Clip("run", 2)}), 2);
  EXPECT_EQ(*store.Add(kRig, "", {Clip("jump", 4), Clip("walk", 3)}), 3);
  EXPECT_THAT(ClipNames(store.Get(kRig, "")), ElementsAre("jump", "walk", "run"));
  EXPECT_EQ(*store.Add(kRig, "", {Clip("walk", 5, 0.5f)}), 4);
  auto got = store.Get(kRig, "");
  EXPECT_THAT(ClipNames(got), ElementsAre("walk", "jump", "walk", "run"));
  // Both walks, whole.
  ASSERT_EQ((*got)[0].poses_size(), 5);
  EXPECT_EQ((*got)[0].poses(4).joints(0).translation(0), 4.5f);
  EXPECT_EQ((*got)[2].poses_size(), 3);
  // No clips, or the first clip again: nothing is written (the file keeps its inode; every write
  // renames a new file over it).
  const std::string file = absl::StrCat(dir, "/animations/", kRig, ".pb");
  struct stat before {}, after {};
  ASSERT_EQ(stat(file.c_str(), &before), 0);
  EXPECT_EQ(*store.Add(kRig, "", {}), 4);
  EXPECT_EQ(*store.Add(kRig, "", {Clip("walk", 5, 0.5f)}), 4);
  ASSERT_EQ(stat(file.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino) << "an unchanged set was written again";
  // The second clip first: written.
  EXPECT_EQ(*store.Add(kRig, "", {Clip("jump", 4)}), 4);
  ASSERT_EQ(stat(file.c_str(), &after), 0);
  EXPECT_NE(after.st_ino, before.st_ino);
  EXPECT_THAT(ClipNames(store.Get(kRig, "")), ElementsAre("jump", "walk", "walk", "run"));
  // Another rig has its own.
  EXPECT_TRUE(ClipNames(store.Get(kOtherRig, "")).empty());
}

TEST(AnimationStore, TheOldestGoPastTheBoundAndTheNewAlwaysStay) {
  const size_t one = Clip("a", 10).ByteSizeLong();
  AnimationStore store(OpenBlobs(MakeTempDir("anim")), 3 * one);
  ASSERT_TRUE(store.Add(kRig, "", {Clip("a", 10)}).ok());
  ASSERT_TRUE(store.Add(kRig, "", {Clip("b", 10)}).ok());
  ASSERT_TRUE(store.Add(kRig, "", {Clip("c", 10)}).ok());
  EXPECT_THAT(ClipNames(store.Get(kRig, "")), ElementsAre("c", "b", "a"));
  ASSERT_TRUE(store.Add(kRig, "", {Clip("d", 10)}).ok());
  EXPECT_THAT(ClipNames(store.Get(kRig, "")), ElementsAre("d", "c", "b"));
  // Larger than the bound by itself: kept, alone.
  ASSERT_TRUE(store.Add(kRig, "", {Clip("long", 40)}).ok());
  EXPECT_THAT(ClipNames(store.Get(kRig, "")), ElementsAre("long"));
}

TEST(AnimationStore, TenantsKeepTheirOwnAndDeletesReachOnlyTheirs) {
  const std::string dir = MakeTempDir("anim");
  AnimationStore store(OpenBlobs(dir), 0);
  ASSERT_TRUE(store.Add(kRig, "", {Clip("mine", 2)}).ok());
  ASSERT_TRUE(store.Add(kRig, "alpha", {Clip("alpha-walk", 2)}).ok());
  ASSERT_TRUE(store.Add(kRig, "beta", {Clip("beta-walk", 2)}).ok());
  EXPECT_THAT(ClipNames(store.Get(kRig, "alpha")), ElementsAre("alpha-walk"));
  EXPECT_THAT(ClipNames(store.Get(kRig, "beta")), ElementsAre("beta-walk"));
  EXPECT_THAT(ClipNames(store.Get(kRig, "")), ElementsAre("mine"));
  ASSERT_TRUE(store.DeleteAll(kRig, "alpha").ok());
  EXPECT_TRUE(ClipNames(store.Get(kRig, "alpha")).empty());
  EXPECT_THAT(ClipNames(store.Get(kRig, "beta")), ElementsAre("beta-walk"));
  EXPECT_TRUE(store.DeleteAll(kRig, "alpha").ok()) << "none left is fine";
  ASSERT_TRUE(store.Add(kOtherRig, "beta", {Clip("other", 2)}).ok());
  ASSERT_TRUE(store.DeleteEveryTenant(kRig).ok());
  EXPECT_TRUE(ClipNames(store.Get(kRig, "beta")).empty());
  EXPECT_TRUE(ClipNames(store.Get(kRig, "")).empty());
  EXPECT_THAT(ClipNames(store.Get(kOtherRig, "beta")), ElementsAre("other"));
  // A bad tenant name or rig id never becomes a key.
  EXPECT_EQ(store.Get(kRig, "../x").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Add("rig-../../etc", "", {Clip("x", 1)}).status().code(), absl::StatusCode::kInvalidArgument);
}

// Two stores adding 20 clips each at once on `a` and `b` (two replicas' connections to one
// store): every clip lands (WriteIf, then a random backoff, retries a lost race).
void ExpectConcurrentAddsAllLand(std::shared_ptr<BlobStore> a_blobs, std::shared_ptr<BlobStore> b_blobs) {
  AnimationStore a(std::move(a_blobs), 0), b(std::move(b_blobs), 0);
  auto add = [&](AnimationStore& store, const char* prefix) {
    for (int i = 0; i < 20; ++i) {
      auto added = store.Add(kRig, "", {Clip(absl::StrCat(prefix, i), 2)});
      ASSERT_TRUE(added.ok()) << added.status();
    }
  };
  std::thread ta([&] { add(a, "a"); }), tb([&] { add(b, "b"); });
  ta.join();
  tb.join();
  EXPECT_EQ(ClipNames(a.Get(kRig, "")).size(), 40u);
}

TEST(AnimationStore, ConcurrentAddsAllLand) {
  const std::string dir = MakeTempDir("anim");
  ExpectConcurrentAddsAllLand(OpenBlobs(dir), OpenBlobs(dir));
}

TEST(AnimationStore, ConcurrentAddsOverRedisAllLand) {
  RedisProcess redis;
  auto a = OpenRedisBlobStore("127.0.0.1", redis.port()), b = OpenRedisBlobStore("127.0.0.1", redis.port());
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  ExpectConcurrentAddsAllLand(std::shared_ptr<BlobStore>(*std::move(a)), std::shared_ptr<BlobStore>(*std::move(b)));
}

TEST(AnimationStore, ADamagedOrForeignBlobIsDataLoss) {
  const std::string dir = MakeTempDir("anim");
  std::shared_ptr<BlobStore> blobs = OpenBlobs(dir);
  AnimationStore store(blobs, 0);
  ASSERT_TRUE(blobs->Put(absl::StrCat("animations/", kRig, ".pb"), "not a proto \xff\xff").ok());
  auto got = store.Get(kRig, "");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(store.Add(kRig, "", {Clip("x", 1)}).status().code(), absl::StatusCode::kDataLoss) << "nothing overwritten";
  // Another rig's clips under this rig's key.
  ASSERT_TRUE(store.Add(kOtherRig, "", {Clip("x", 1)}).ok());
  auto other = blobs->Get(absl::StrCat("animations/", kOtherRig, ".pb"));
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(blobs->Put(absl::StrCat("animations/", kRig, ".pb"), *other).ok());
  got = store.Get(kRig, "");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(got.status().message(), HasSubstr(kOtherRig));
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
