// The Redis BlobStore against a real redis-server on a loopback port.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <random>
#include <thread>
#include <vector>

#include "server/store/blob_framing.h"
#include "server/store/blob_store.h"
#include "tests/support/random_bytes.h"
#include "tests/support/redis_process.h"
#include "tests/support/server_process.h"
#include "tests/support/stored_file.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::ConnectRedis;
using ::skinning::testing::RandomBytes;
using ::skinning::testing::LittleEndian;
using ::skinning::testing::RedisConnection;
using ::skinning::testing::RedisProcess;
using ::skinning::testing::RedisReply;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// Bitwise CRC-32 (IEEE, reflected), written independently of the store's table-driven one.
uint32_t BitwiseCrc32(const std::string& data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char byte : data) {
    crc ^= byte;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

class RedisBlobStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<BlobStore>> store =
        OpenRedisBlobStore("127.0.0.1", redis_.port(), "skinning:");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    raw_ = ConnectRedis(redis_.port());
    ASSERT_NE(raw_, nullptr);
  }

  // Raw access, bypassing the store.
  void RawSet(const std::string& key, const std::string& value) {
    RedisReply r(static_cast<redisReply*>(
        redisCommand(raw_.get(), "SET %b %b", key.data(), key.size(), value.data(), value.size())));
    ASSERT_TRUE(r && r->type == REDIS_REPLY_STATUS) << (r ? r->str : raw_->errstr);
  }
  std::string RawGet(const std::string& key) {
    RedisReply r(
        static_cast<redisReply*>(redisCommand(raw_.get(), "GET %b", key.data(), key.size())));
    EXPECT_TRUE(r && r->type == REDIS_REPLY_STRING) << key;
    return r && r->type == REDIS_REPLY_STRING ? std::string(r->str, r->len) : "";
  }

  RedisProcess redis_;
  std::unique_ptr<BlobStore> store_;
  RedisConnection raw_;
};

TEST_F(RedisBlobStoreTest, PutGetExistsDeleteListRoundTrip) {
  const std::string binary("a\0b\r\n\xff", 6);
  ASSERT_TRUE(store_->Put("rigs/a.pb", binary).ok());
  ASSERT_TRUE(store_->Put("rigs/b.info", "").ok());
  ASSERT_TRUE(store_->Put("bakes/x.pb", "bake").ok());
  ASSERT_TRUE(store_->Put("rigs/a.pb", binary).ok()) << "overwriting is allowed";

  EXPECT_EQ(*store_->Get("rigs/a.pb"), binary);
  EXPECT_EQ(*store_->Get("rigs/b.info"), "") << "an empty value is a value";
  EXPECT_EQ(*store_->Get("bakes/x.pb"), "bake");
  EXPECT_TRUE(*store_->Exists("rigs/a.pb"));
  EXPECT_FALSE(*store_->Exists("rigs/c.pb"));
  EXPECT_THAT(*store_->List("rigs/"), ElementsAre("rigs/a.pb", "rigs/b.info"));
  EXPECT_THAT(*store_->List(""), ElementsAre("bakes/x.pb", "rigs/a.pb", "rigs/b.info"));
  EXPECT_THAT(*store_->List("nothing/"), ElementsAre());

  // Keys are namespaced: another prefix sees nothing, and Redis holds "skinning:<key>".
  auto other = OpenRedisBlobStore("127.0.0.1", redis_.port(), "other:");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_THAT(*(*other)->List(""), ElementsAre());
  EXPECT_EQ((*other)->Get("rigs/a.pb").status().code(), absl::StatusCode::kNotFound);

  // The stored layout, checked by hand: magic, version, length, CRC-32, payload.
  ASSERT_TRUE(store_->Put("check/crc", "123456789").ok());
  const std::string raw = RawGet("skinning:check/crc");
  ASSERT_EQ(raw.size(), kBlobHeaderBytes + 9);
  EXPECT_EQ(raw.substr(0, 4), "SKB1");
  EXPECT_EQ(LittleEndian(raw, 4, 4), kBlobFormatVersion);
  EXPECT_EQ(LittleEndian(raw, 8, 8), 9u);
  EXPECT_EQ(LittleEndian(raw, 16, 4), 0xCBF43926u)
      << "the published CRC-32 check value of \"123456789\"";
  EXPECT_EQ(raw.substr(kBlobHeaderBytes), "123456789");

  EXPECT_TRUE(*store_->Delete("rigs/a.pb"));
  EXPECT_FALSE(*store_->Delete("rigs/a.pb"));
  const absl::Status gone = store_->Get("rigs/a.pb").status();
  EXPECT_EQ(gone.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(gone.message()), HasSubstr("rigs/a.pb"));
  EXPECT_THAT(*store_->List("rigs/"), ElementsAre("rigs/b.info"));

  EXPECT_EQ(store_->Put("../escape", "x").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->Get("rigs/*").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(RedisBlobStoreTest, LargeValue) {
  const std::string big = RandomBytes(20 << 20, 7);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(store_->Put("bakes/big.pb", big).ok());
  absl::StatusOr<std::string> back = store_->Get("bakes/big.pb");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(*back == big) << "20 MB value differs after the round trip";
  std::printf("20 MB put + get: %.3f s\n", seconds);
}

TEST_F(RedisBlobStoreTest, CorruptValueIsDataLoss) {
  // Not written by the store at all.
  RawSet("skinning:rigs/bad.pb", "hello, this is not an artifact");
  absl::Status s = store_->Get("rigs/bad.pb").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(std::string(s.message()), AllOf(HasSubstr("rigs/bad.pb"), HasSubstr("magic")));

  // A good header over a payload with one flipped byte.
  ASSERT_TRUE(store_->Put("rigs/flip.pb", RandomBytes(4096, 1)).ok());
  std::string raw = RawGet("skinning:rigs/flip.pb");
  raw[kBlobHeaderBytes + 1000] ^= 0x01;
  RawSet("skinning:rigs/flip.pb", raw);
  s = store_->Get("rigs/flip.pb").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(std::string(s.message()), AllOf(HasSubstr("rigs/flip.pb"), HasSubstr("CRC-32")));

  // Another format version.
  ASSERT_TRUE(store_->Put("rigs/v2.pb", "payload").ok());
  raw = RawGet("skinning:rigs/v2.pb");
  raw[4] = 2;
  RawSet("skinning:rigs/v2.pb", raw);
  s = store_->Get("rigs/v2.pb").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(std::string(s.message()),
              AllOf(HasSubstr("rigs/v2.pb"), HasSubstr("format version 2")));

  // Exists and List still see the keys (so a corrupt artifact can be found and replaced).
  EXPECT_TRUE(*store_->Exists("rigs/bad.pb"));
  EXPECT_THAT(*store_->List("rigs/"), ElementsAre("rigs/bad.pb", "rigs/flip.pb", "rigs/v2.pb"));
  ASSERT_TRUE(store_->Put("rigs/bad.pb", "fixed").ok());
  EXPECT_EQ(*store_->Get("rigs/bad.pb"), "fixed");
}

TEST_F(RedisBlobStoreTest, TruncatedValueIsDataLoss) {
  ASSERT_TRUE(store_->Put("bakes/t.pb", RandomBytes(10000, 2)).ok());
  const std::string raw = RawGet("skinning:bakes/t.pb");

  RawSet("skinning:bakes/t.pb", raw.substr(0, raw.size() - 10));
  absl::Status s = store_->Get("bakes/t.pb").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(std::string(s.message()),
              AllOf(HasSubstr("bakes/t.pb"), HasSubstr("10000 payload bytes but 9990 follow")));

  RawSet("skinning:bakes/t.pb", raw.substr(0, 12));  // cut inside the header
  s = store_->Get("bakes/t.pb").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(std::string(s.message()),
              AllOf(HasSubstr("bakes/t.pb"), HasSubstr("shorter than the 20-byte header")));

  RawSet("skinning:bakes/t.pb", raw + "extra");  // padded is as wrong as truncated
  s = store_->Get("bakes/t.pb").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
}

TEST_F(RedisBlobStoreTest, ConcurrentPutsAndGetsFromManyThreads) {
  // One key overwritten with two different large values in turn while readers read it: every
  // read must be all of one value or all of the other.
  const std::string a = RandomBytes(2 << 20, 11), b = RandomBytes(2 << 20, 12);
  const uint32_t crc_a = BitwiseCrc32(a), crc_b = BitwiseCrc32(b);
  ASSERT_TRUE(store_->Put("bakes/shared.pb", a).ok());
  std::atomic<bool> done{false};
  std::atomic<int> reads_a{0}, reads_b{0}, bad_reads{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&] {
      while (!done) {
        absl::StatusOr<std::string> v = store_->Get("bakes/shared.pb");
        if (!v.ok()) {
          ++errors;
          ADD_FAILURE() << v.status();
          continue;
        }
        const uint32_t crc = BitwiseCrc32(*v);
        if (v->size() == a.size() && crc == crc_a) {
          ++reads_a;
        } else if (v->size() == b.size() && crc == crc_b) {
          ++reads_b;
        } else {
          ++bad_reads;
        }
      }
    });
  }
  // Other threads write and read their own small keys meanwhile (more connections in the pool).
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; !done; ++i) {
        const std::string key = "rigs/t" + std::to_string(t) + "-" + std::to_string(i % 50);
        const std::string value = RandomBytes(1000 + i % 977, t * 100000 + i);
        if (!store_->Put(key, value).ok() || *store_->Get(key) != value) ++errors;
      }
    });
  }
  for (int i = 0; i < 150; ++i) {
    const absl::Status put = store_->Put("bakes/shared.pb", i % 2 ? b : a);
    if (!put.ok()) {
      ADD_FAILURE() << put;
      break;
    }
  }
  done = true;
  for (auto& t : threads) t.join();
  std::printf("reads: %d of A, %d of B\n", reads_a.load(), reads_b.load());
  EXPECT_EQ(bad_reads, 0);
  EXPECT_EQ(errors, 0);
  EXPECT_GT(reads_a + reads_b, 10);
  EXPECT_TRUE(*store_->Get("bakes/shared.pb") == b) << "the last write wins";
}

TEST_F(RedisBlobStoreTest, ReconnectsAfterRedisRestart) {
  ASSERT_TRUE(store_->Put("rigs/before.pb", "x").ok());
  ASSERT_TRUE(store_->Get("rigs/before.pb").ok());

  // A restart between two calls: the pooled connection is stale, the next call still succeeds.
  ASSERT_EQ(redis_.Stop(SIGTERM), 0);
  redis_.Restart();
  ASSERT_TRUE(store_->Put("rigs/after.pb", "y").ok());
  EXPECT_EQ(*store_->Get("rigs/after.pb"), "y");
  EXPECT_EQ(store_->Get("rigs/before.pb").status().code(), absl::StatusCode::kNotFound)
      << "this redis-server keeps nothing across a restart";

  // During an outage every call fails with UNAVAILABLE naming the key but not Redis's address
  // (these messages reach clients); opening a store, which speaks to the operator, names it.
  ASSERT_EQ(redis_.Stop(SIGTERM), 0);
  const absl::Status get = store_->Get("rigs/after.pb").status();
  EXPECT_EQ(get.code(), absl::StatusCode::kUnavailable) << get;
  EXPECT_THAT(std::string(get.message()),
              AllOf(HasSubstr("rigs/after.pb"), HasSubstr("shared store"), Not(HasSubstr(redis_.address())),
                    Not(HasSubstr(std::to_string(redis_.port())))));
  EXPECT_EQ(store_->Put("rigs/during.pb", "z").code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store_->Exists("rigs/after.pb").status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store_->Delete("rigs/after.pb").status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store_->List("rigs/").status().code(), absl::StatusCode::kUnavailable);
  const auto refused = OpenRedisBlobStore("127.0.0.1", redis_.port(), "skinning:");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr(redis_.address()));

  // The first call after the restart succeeds.
  redis_.Restart();
  ASSERT_TRUE(store_->Put("rigs/again.pb", "w").ok());
  EXPECT_EQ(*store_->Get("rigs/again.pb"), "w");
  EXPECT_THAT(*store_->List("rigs/"), ElementsAre("rigs/again.pb"));
}

// A Redis that stops answering (SIGSTOP: the socket stays open, nothing comes back) fails the
// call with UNAVAILABLE saying so after the 5 s socket timeout, not after 30 s (longer than most
// clients' deadlines, holding a server thread all along); once it answers again, so does the store.
TEST_F(RedisBlobStoreTest, AHungRedisIsUnavailableWithinFiveSeconds) {
  ASSERT_TRUE(store_->Put("rigs/x.pb", "x").ok());
  ASSERT_EQ(kill(redis_.pid(), SIGSTOP), 0);
  const auto t0 = std::chrono::steady_clock::now();
  const absl::Status get = store_->Get("rigs/x.pb").status();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(kill(redis_.pid(), SIGCONT), 0);
  EXPECT_EQ(get.code(), absl::StatusCode::kUnavailable) << get;
  EXPECT_THAT(std::string(get.message()), AllOf(HasSubstr("rigs/x.pb"), HasSubstr("no answer within 5 s")));
  EXPECT_LT(seconds, 15) << "the call waited for the old 30 s timeout";
  EXPECT_EQ(*store_->Get("rigs/x.pb"), "x");
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

// "OK and true" / "OK and false" as one printable value.
std::string Answer(const absl::StatusOr<bool>& r) { return r.ok() ? (*r ? "true" : "false") : r.status().ToString(); }

// WriteIf on any backend: the guard decides, and a refused call writes nothing.
void CheckWriteIfAllOrNothing(BlobStore& store) {
  using Write = BlobStore::Write;
  // Guard absent as expected: both writes land.
  ASSERT_EQ(Answer(store.WriteIf("g/rev", std::nullopt, {Write{"g/set", "one"}, Write{"g/rev", "1"}})), "true");
  EXPECT_EQ(*store.Get("g/set"), "one");
  // A stale expectation (absent, or "0") is refused and changes nothing.
  EXPECT_EQ(Answer(store.WriteIf("g/rev", std::nullopt, {Write{"g/set", "two"}, Write{"g/rev", "2"}})), "false");
  EXPECT_EQ(Answer(store.WriteIf("g/rev", std::string("0"), {Write{"g/set", "two"}, Write{"g/rev", "2"}})), "false");
  EXPECT_EQ(*store.Get("g/set"), "one");
  EXPECT_EQ(*store.Get("g/rev"), "1");
  // The current value: a delete and a put.
  ASSERT_EQ(Answer(store.WriteIf("g/rev", std::string("1"), {Write{"g/set", std::nullopt}, Write{"g/rev", "2"}})), "true");
  EXPECT_FALSE(*store.Exists("g/set"));
  EXPECT_EQ(*store.Get("g/rev"), "2");
  EXPECT_EQ(store.WriteIf("bad key!", std::nullopt, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

// Read-modify-write of one counter from several threads, each with its own store connection
// (`open` gives another "replica"): with WriteIf no increment is lost.
void CheckNoLostIncrements(const std::function<std::shared_ptr<BlobStore>()>& open) {
  constexpr int kThreads = 6, kIncrements = 40;
  std::atomic<int> retries{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, store = open()] {
      for (int i = 0; i < kIncrements; ++i) {
        for (;;) {
          absl::StatusOr<std::string> cur = store->Get("counter");
          std::optional<std::string> expected;
          int value = 0;
          if (cur.ok()) {
            expected = *cur;
            value = std::stoi(*cur);
          }
          absl::StatusOr<bool> ok = store->WriteIf("counter", expected, {{"counter", std::to_string(value + 1)}});
          ASSERT_TRUE(ok.ok()) << ok.status();
          if (*ok) break;
          ++retries;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  std::shared_ptr<BlobStore> store = open();
  EXPECT_EQ(*store->Get("counter"), std::to_string(kThreads * kIncrements));
  std::printf("%d increments from %d threads, %d refused writes retried\n", kThreads * kIncrements, kThreads,
              retries.load());
}

TEST_F(RedisBlobStoreTest, WriteIfAppliesAllOrNothing) { CheckWriteIfAllOrNothing(*store_); }

TEST_F(RedisBlobStoreTest, WriteIfLosesNoIncrementFromManyConnections) {
  CheckNoLostIncrements([&] { return std::shared_ptr<BlobStore>(*OpenRedisBlobStore("127.0.0.1", redis_.port())); });
}

TEST(FilesystemBlobStore, WriteIfAppliesAllOrNothing) {
  auto store = OpenFilesystemBlobStore(testing::MakeTempDir("writeif"));
  ASSERT_TRUE(store.ok()) << store.status();
  CheckWriteIfAllOrNothing(**store);
  EXPECT_THAT(*(*store)->List(""), ::testing::Not(::testing::Contains(".write-lock")));
}

// Separate store objects on one directory stand for servers sharing it: only the flock of
// <root>/.write-lock orders them (each object has its own mutex).
TEST(FilesystemBlobStore, WriteIfLosesNoIncrementAcrossStoreObjects) {
  const std::string dir = testing::MakeTempDir("writeif");
  CheckNoLostIncrements([&] { return std::shared_ptr<BlobStore>(*OpenFilesystemBlobStore(dir)); });
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
