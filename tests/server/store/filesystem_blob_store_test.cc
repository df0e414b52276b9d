// The filesystem store's leftovers: temporary files of writes a crash interrupted go when a store
// opens, and a live writer's do not.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "core/util/process_stats.h"
#include "server/store/blob_store.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

namespace fs = std::filesystem;

std::string Host() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

void Touch(const fs::path& p) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << "half a rig";
}

// A pid that no process has: a child that has exited and been waited for.
pid_t GonePid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

TEST(FilesystemBlobStore, OpeningRemovesLeftoversOfGoneWritersOnly) {
  const fs::path root = testing::MakeTempDir("fs-store");
  const std::string host = Host();
  ASSERT_FALSE(host.empty());
  const int64_t parent_start = ProcessStartTicks(getppid());
  ASSERT_GE(parent_start, 0);
  const fs::path gone = root / "rigs" / absl::StrCat("rig-a.pb.tmp.", host, ".", GonePid(), "-", parent_start, ".3");
  // A live pid that started at another time: an earlier process that had this pid (a restarted
  // container is pid 1 again).
  const fs::path reused = root / "bakes" / absl::StrCat("bake-b.pb.tmp.", host, ".", getppid(), "-1.0");
  // The parent of this test is alive: its temporary file is a write in progress.
  const fs::path live = root / "rigs" / absl::StrCat("rig-c.pb.tmp.", host, ".", getppid(), "-", parent_start, ".1");
  const fs::path other_host = root / "rigs" / absl::StrCat("rig-d.pb.tmp.another-", host, ".1-1.0");
  const fs::path old_form = root / "rigs" / absl::StrCat("rig-e.pb.tmp.", GonePid(), ".0");
  for (const fs::path& p : {gone, reused, live, other_host, old_form}) Touch(p);
  Touch(root / "rigs" / "rig-f.pb");

  auto store = OpenFilesystemBlobStore(root.string());
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_FALSE(fs::exists(gone)) << "its writer is gone";
  EXPECT_FALSE(fs::exists(reused)) << "a pid now another process's";
  EXPECT_TRUE(fs::exists(live)) << "a live writer's file";
  EXPECT_TRUE(fs::exists(other_host)) << "another host's file waits for its age";
  EXPECT_TRUE(fs::exists(old_form)) << "no host in the name: waits for its age";
  EXPECT_TRUE(fs::exists(root / "rigs" / "rig-f.pb"));

  // What a write leaves: the value, and no temporary file.
  ASSERT_TRUE((*store)->Put("rigs/rig-g.pb", "whole").ok());
  int temporaries = 0;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) ++temporaries;
  EXPECT_EQ(temporaries, 3);
  fs::remove_all(root);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
