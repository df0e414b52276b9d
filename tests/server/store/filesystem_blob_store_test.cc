// The filesystem store's leftovers: temporary files of writes a crash interrupted go when a store
// opens, and a live writer's do not. Its files are framed with a length and a CRC-32, so a file
// cut or damaged on disk is DATA_LOSS, never served.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "core/util/process_stats.h"
#include "server/store/blob_framing.h"
#include "server/store/blob_store.h"
#include "tests/support/server_process.h"
#include "tests/support/stored_file.h"

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

// A server killed while it rewrote a bake's record leaves a temporary file while the other
// servers of the store run on: listing the folder removes it (its writer is gone) and keeps a
// live writer's. Listing used to skip both, so the file stayed until a store opened.
TEST(FilesystemBlobStore, ListingAFolderRemovesLeftoversOfGoneWritersInIt) {
  const fs::path root = testing::MakeTempDir("fs-store");
  auto store = OpenFilesystemBlobStore(root.string());
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->Put("bakejobs/bake-a.pb", "record").ok());
  const std::string host = Host();
  const int64_t parent_start = ProcessStartTicks(getppid());
  ASSERT_GE(parent_start, 0);
  const fs::path gone = root / "bakejobs" / absl::StrCat("bake-a.pb.tmp.", host, ".", GonePid(), "-", parent_start, ".7");
  const fs::path live = root / "bakejobs" / absl::StrCat("bake-b.pb.tmp.", host, ".", getppid(), "-", parent_start, ".2");
  const fs::path elsewhere = root / "rigs" / absl::StrCat("rig-a.pb.tmp.", host, ".", GonePid(), "-", parent_start, ".1");
  for (const fs::path& p : {gone, live, elsewhere}) Touch(p);

  auto keys = (*store)->List("bakejobs/");
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_THAT(*keys, ::testing::ElementsAre("bakejobs/bake-a.pb"));
  EXPECT_FALSE(fs::exists(gone)) << "its writer is gone";
  EXPECT_TRUE(fs::exists(live)) << "a live writer's file";
  EXPECT_TRUE(fs::exists(elsewhere)) << "not in the folder listed";
  fs::remove_all(root);
}

void WriteRaw(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

// The layout checked by hand (the Redis store's: magic, version, length, CRC-32, payload); a
// flipped byte, a cut file and another version are DATA_LOSS naming the key and never the
// store's folder (a damaged magic too); a file written before the framing reads as it is.
TEST(FilesystemBlobStore, FilesAreFramedAndADamagedOneIsDataLoss) {
  const fs::path root = testing::MakeTempDir("fs-store");
  auto opened = OpenFilesystemBlobStore(root.string());
  ASSERT_TRUE(opened.ok()) << opened.status();
  BlobStore& store = **opened;
  ASSERT_TRUE(store.Put("check/crc", "123456789").ok());
  const std::string raw = testing::FileBytes((root / "check" / "crc").string());
  ASSERT_EQ(raw.size(), kBlobHeaderBytes + 9);
  EXPECT_EQ(raw.substr(0, 4), "SKB1");
  EXPECT_EQ(testing::LittleEndian(raw, 4, 4), kBlobFormatVersion);
  EXPECT_EQ(testing::LittleEndian(raw, 8, 8), 9u);
  EXPECT_EQ(testing::LittleEndian(raw, 16, 4), 0xCBF43926u) << "the published CRC-32 check value of \"123456789\"";
  EXPECT_EQ(*store.Get("check/crc"), "123456789");

  std::string payload(100000, '\0');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 7919 % 251);
  ASSERT_TRUE(store.Put("bakes/b.pb", payload).ok());
  EXPECT_EQ(*store.Get("bakes/b.pb"), payload);
  const fs::path file = root / "bakes" / "b.pb";
  const std::string good = testing::FileBytes(file.string());
  const auto expect_loss = [&](const std::string& why) {
    const absl::Status s = store.Get("bakes/b.pb").status();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
    EXPECT_THAT(std::string(s.message()), ::testing::AllOf(::testing::HasSubstr("'bakes/b.pb'"), ::testing::HasSubstr(why)));
    EXPECT_THAT(std::string(s.message()), ::testing::Not(::testing::HasSubstr(root.string())));
  };
  std::string damaged = good;
  damaged[kBlobHeaderBytes + 54321] ^= 0x10;  // one bit of one weight
  WriteRaw(file, damaged);
  expect_loss("CRC-32");
  WriteRaw(file, good.substr(0, good.size() - 1000));
  expect_loss("header says 100000 payload bytes but 99000 follow");
  WriteRaw(file, good.substr(0, 12));
  expect_loss("shorter than the 20-byte header");
  damaged = good;
  damaged[4] = 2;
  WriteRaw(file, damaged);
  expect_loss("format version 2");
  // A damaged magic: the rest of the header is whole, so the file is framed, not one written
  // before the framing (it used to be returned as it was, header and all).
  damaged = good;
  damaged[1] ^= 0x04;
  WriteRaw(file, damaged);
  expect_loss("does not start with the magic");

  // A store written before the framing: its files have no header and read as they are.
  WriteRaw(file, payload);
  EXPECT_EQ(*store.Get("bakes/b.pb"), payload);
  // WriteIf compares payloads.
  ASSERT_TRUE(store.Put("guard", "v1").ok());
  EXPECT_TRUE(*store.WriteIf("guard", std::string("v1"), {{"guard", std::string("v2")}}));
  EXPECT_FALSE(*store.WriteIf("guard", std::string("v1"), {{"guard", std::string("v3")}}));
  EXPECT_EQ(*store.Get("guard"), "v2");
  fs::remove_all(root);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
