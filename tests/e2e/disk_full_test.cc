// The store's disk fills up: the server is started in its own mount namespace (unshare) on a
// 3 MiB tmpfs as its store, so the disk is really full (ENOSPC from write), not simulated.
// Writes that do not fit fail with RESOURCE_EXHAUSTED naming the artifact and never a server
// path; what was stored before stays readable and the server keeps serving.
#include <signal.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "client/client.h"
#include "server/convert/convert.h"
#include "tests/support/fixtures.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::MakeTempDir;
using ::skinning::testing::MakeTwoBoneTube;
using ::skinning::testing::ServerProcess;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(DiskFullTest, FullStoreIsResourceExhaustedNamingTheArtifactAndOlderArtifactsStay) {
  if (access("/usr/bin/unshare", X_OK) != 0) GTEST_FAIL() << "/usr/bin/unshare (util-linux) is missing";
  const std::string store = MakeTempDir("full");
  ServerProcess server(store, {}, {"/usr/bin/unshare", "-rm", "--", "/bin/sh", "-c",
                                   "mount -t tmpfs -o size=3m tmpfs \"$1\" && shift && exec \"$@\"", "sh", store});
  ClientOptions o;
  o.target = server.address();
  o.deadline = std::chrono::seconds(120);
  o.max_attempts = 1;
  Client client(o);

  // What is stored before the disk fills.
  auto first = client.CreateRig(RigToProto(::skinning::testing::MakeTubeForBaking()));
  ASSERT_TRUE(first.ok()) << first.status();

  // Fill it: large rigs, then smaller ones, until even small ones no longer fit.
  absl::Status full;
  int stored = 0;
  for (int rings : {300, 60, 12}) {
    for (int i = 0; i < 40; ++i) {
      auto r = client.CreateRig(RigToProto(MakeTwoBoneTube(rings, 50, 2.0 + 0.01 * i + rings)));
      if (r.ok()) {
        ++stored;
        continue;
      }
      full = r.status();
      break;
    }
  }
  ASSERT_GT(stored, 0);
  ASSERT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_THAT(std::string(full.message()), HasSubstr("No space left on device"));
  EXPECT_THAT(std::string(full.message()), HasSubstr("'rigs/"));
  EXPECT_THAT(std::string(full.message()), Not(HasSubstr(store)));
  // The operator sees it in the log (nothing was printed before).
  EXPECT_THAT(server.Output(), HasSubstr("skinning-server store: RESOURCE_EXHAUSTED: store: cannot "));

  // A bake whose result does not fit ends FAILED the same way, saying which bake.
  v1::BakeOptions options;
  options.mutable_bbw();
  auto started = client.StartBake(first->rig().name(), options);
  ASSERT_TRUE(started.ok()) << started.status();
  auto done = client.WatchBake(started->bake().name(), [](const v1::Bake&) { return true; });
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->metadata().state(), v1::BAKE_STATE_FAILED);
  EXPECT_EQ(done->error().code(), static_cast<int>(absl::StatusCode::kResourceExhausted)) << done->error().message();
  EXPECT_THAT(done->error().message(), HasSubstr("bake-"));
  EXPECT_THAT(done->error().message(), Not(HasSubstr(store)));

  // Older artifacts stay, and the server serves.
  auto rigs = client.ListRigs();
  ASSERT_TRUE(rigs.ok()) << rigs.status();
  EXPECT_EQ(static_cast<int>(rigs->size()), stored + 1);
  auto got = client.GetRig(first->rig().name(), v1::RIG_VIEW_FULL);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(server.Stop(SIGTERM), 0);
}

// A store on a read-only disk (as the kernel leaves one after I/O errors): the server starts and
// serves what it has; writes and deletes fail with UNAVAILABLE (the store cannot take writes now;
// another replica may), naming the artifact and the cause, not INTERNAL (a delete was INTERNAL),
// and the server's log says so.
TEST(DiskFullTest, ReadOnlyStoreIsUnavailableForWritesNamingTheCause) {
  if (access("/usr/bin/unshare", X_OK) != 0) GTEST_FAIL() << "/usr/bin/unshare (util-linux) is missing";
  // A rig stored first (on a writable store), copied onto the disk before it goes read-only.
  const std::string before = MakeTempDir("before");
  std::string kept;
  {
    ServerProcess writable(before);
    ClientOptions w;
    w.target = writable.address();
    Client client(w);
    auto created = client.CreateRig(RigToProto(MakeTwoBoneTube(12, 8, 3.0)));
    ASSERT_TRUE(created.ok()) << created.status();
    kept = created->rig().name();
    ASSERT_EQ(writable.Stop(SIGTERM), 0);
  }
  const std::string store = MakeTempDir("readonly");
  ServerProcess server(store, {}, {"/usr/bin/unshare", "-rm", "--", "/bin/sh", "-c",
                                   "mount -t tmpfs -o size=3m tmpfs \"$1\" && cp -a \"$2\"/. \"$1\"/ && "
                                   "mount -o remount,ro \"$1\" && shift 2 && exec \"$@\"",
                                   "sh", store, before});
  ClientOptions o;
  o.target = server.address();
  o.max_attempts = 1;
  Client client(o);
  auto rigs = client.ListRigs();
  ASSERT_TRUE(rigs.ok()) << rigs.status();
  ASSERT_EQ(rigs->size(), 1u);
  auto created = client.CreateRig(RigToProto(MakeTwoBoneTube()));
  ASSERT_EQ(created.status().code(), absl::StatusCode::kUnavailable) << created.status();
  EXPECT_THAT(std::string(created.status().message()), HasSubstr("Read-only file system"));
  EXPECT_THAT(std::string(created.status().message()), HasSubstr("'rigs/"));
  EXPECT_THAT(std::string(created.status().message()), Not(HasSubstr(store)));
  absl::Status deleted = client.DeleteRig(kept);
  EXPECT_EQ(deleted.code(), absl::StatusCode::kUnavailable) << deleted;
  EXPECT_THAT(std::string(deleted.message()), HasSubstr("Read-only file system"));
  EXPECT_THAT(std::string(deleted.message()), Not(HasSubstr(store)));
  EXPECT_TRUE(client.GetRig(kept, v1::RIG_VIEW_FULL).ok()) << "the rig stays";
  EXPECT_THAT(server.Output(), HasSubstr("skinning-server store: UNAVAILABLE: store: cannot "));
  EXPECT_THAT(server.Output(), HasSubstr("Read-only file system"));
  EXPECT_EQ(server.Stop(SIGTERM), 0);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
