// Several skinning-server replicas sharing one real redis-server: artifacts written through one
// replica are served by the others, and a replica killed mid-run costs the client nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "client/client.h"
#include "server/convert/convert.h"
#include "skinning/internal/v1/store.pb.h"
#include "tests/support/data.h"
#include "tests/support/fixtures.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_process.h"
#include "tests/support/server_process.h"
#include "tests/support/stored_file.h"
#include "tests/support/test_pki.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::ConnectRedis;
using ::skinning::testing::LittleEndian;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::MakeTwoBoneTube;
using ::skinning::testing::RedisConnection;
using ::skinning::testing::RedisProcess;
using ::skinning::testing::RedisReply;
using ::skinning::testing::RunCommand;
using ::skinning::testing::ScrapeMetric;
using ::skinning::testing::ServerProcess;

// The tube without weights, its bones ending at explicit tails (as in bake_test.cc).
v1::Rig TubeWithoutWeights() {
  Rig rig = MakeTwoBoneTube(41, 24);
  rig.sparse_weights.reset();
  rig.skeleton.joints[0].tail = Eigen::Vector3d(1.0, 0, 0);
  rig.skeleton.joints[1].tail = Eigen::Vector3d(1.9, 0, 0);
  return RigToProto(rig);
}

// Generous deadline and attempts: a call that lands on the killed replica is retried on the
// others.
ClientOptions Options(const std::string& target) {
  ClientOptions o;
  o.target = target;
  o.deadline = std::chrono::seconds(60);
  o.max_attempts = 10;
  return o;
}

v1::PoseRequest BentRequest(const Rig& rig, const std::string& rig_name, const std::string& bake_name,
                            double degrees) {
  Pose pose = RestPose(rig.skeleton);
  pose.local[1].rotation = Eigen::AngleAxisd(degrees * M_PI / 180, Eigen::Vector3d::UnitZ());
  v1::PoseRequest req;
  req.set_rig(rig_name);
  req.set_bake(bake_name);
  *req.mutable_pose() = PoseToProto(pose);
  req.set_deformer(v1::DEFORMER_UNSPECIFIED);
  req.mutable_outputs()->set_vertices(true);
  return req;
}

// Largest difference between two frames' vertices (infinity when the sizes differ).
double MaxDifference(const v1::PosedFrame& a, const v1::PosedFrame& b) {
  if (a.vertices_size() != b.vertices_size() || a.vertices_size() == 0) return INFINITY;
  double d = 0;
  for (int i = 0; i < a.vertices_size(); ++i)
    d = std::max(d, std::abs(double(a.vertices(i)) - b.vertices(i)));
  return d;
}

// What a replica serves about the rig and its bake, for comparing replicas.
struct Served {
  std::string rig, bake, weights;
};

Served ReadThrough(Client& client, const std::string& rig_name, const std::string& bake_name) {
  Served s;
  auto rig = client.GetRig(rig_name, v1::RIG_VIEW_FULL);
  EXPECT_TRUE(rig.ok()) << rig.status();
  if (rig.ok()) s.rig = rig->SerializeAsString();
  auto bake = client.GetBake(bake_name);
  EXPECT_TRUE(bake.ok()) << bake.status();
  if (bake.ok()) s.bake = bake->SerializeAsString();
  auto weights = client.GetWeights(bake_name, v1::WEIGHTS_FORMAT_DENSE);
  EXPECT_TRUE(weights.ok()) << weights.status();
  if (weights.ok()) s.weights = weights->SerializeAsString();
  return s;
}

void ExpectSameAs(const Served& got, const Served& want, const std::string& where) {
  EXPECT_TRUE(got.rig == want.rig) << where << ": GetRig differs";
  v1::Bake got_bake, want_bake;
  EXPECT_TRUE(got.bake == want.bake) << where << ": GetBake differs:\n"
                                     << (got_bake.ParseFromString(got.bake) ? got_bake.ShortDebugString() : "?")
                                     << "\nexpected\n"
                                     << (want_bake.ParseFromString(want.bake) ? want_bake.ShortDebugString() : "?");
  EXPECT_TRUE(got.weights == want.weights) << where << ": GetWeights differs";
}

uint32_t BitwiseCrc32(const char* data, size_t n) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= static_cast<uint8_t>(data[i]);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// Reads every key under "skinning:" (but the bake queue's) straight from Redis, checks each value's header (magic
// "SKB1", version 1, length, CRC-32) by hand and parses its payload as the artifact its name
// says. Returns the keys (without the prefix) that passed.
std::set<std::string> CheckStoredArtifacts(int redis_port) {
  std::set<std::string> good;
  RedisConnection redis = ConnectRedis(redis_port);
  EXPECT_NE(redis, nullptr);
  if (!redis) return good;
  RedisReply keys(static_cast<redisReply*>(redisCommand(redis.get(), "KEYS skinning:*")));
  EXPECT_TRUE(keys && keys->type == REDIS_REPLY_ARRAY);
  if (!keys || keys->type != REDIS_REPLY_ARRAY) return good;
  for (size_t i = 0; i < keys->elements; ++i) {
    const std::string full(keys->element[i]->str, keys->element[i]->len);
    const std::string key = full.substr(std::strlen("skinning:"));
    if (key.rfind("bakequeue:", 0) == 0) continue;  // the shared bake queue's stream and job states
    RedisReply value(
        static_cast<redisReply*>(redisCommand(redis.get(), "GET %b", full.data(), full.size())));
    if (!value || value->type != REDIS_REPLY_STRING) {
      ADD_FAILURE() << full << " cannot be read";
      continue;
    }
    const std::string v(value->str, value->len);
    if (v.size() < 20) {
      ADD_FAILURE() << key << " is shorter than the header";
      continue;
    }
    EXPECT_EQ(v.substr(0, 4), "SKB1") << key;
    EXPECT_EQ(LittleEndian(v, 4, 4), 1u) << key;
    EXPECT_EQ(LittleEndian(v, 8, 8), v.size() - 20) << key;
    EXPECT_EQ(LittleEndian(v, 16, 4), BitwiseCrc32(v.data() + 20, v.size() - 20)) << key;
    const std::string payload = v.substr(20);
    bool parses = false;
    if (key.rfind("rigs/", 0) == 0 && key.size() > 3 &&
        key.compare(key.size() - 3, 3, ".pb") == 0) {
      internal::v1::StoredRig rig;
      parses = rig.ParseFromString(payload) && "rigs/" + rig.rig_id() + ".pb" == key;
    } else if (key.rfind("rigs/", 0) == 0) {
      internal::v1::StoredRigSummary info;
      parses = info.ParseFromString(payload) && "rigs/" + info.rig_id() + ".info" == key;
    } else if (key.rfind("bakes/", 0) == 0) {
      internal::v1::StoredBake bake;
      parses = bake.ParseFromString(payload) && "bakes/" + bake.bake_id() + ".pb" == key;
    } else if (key.rfind("rig-bakes/", 0) == 0) {
      parses = payload.empty();  // a rig's index entry for one of its bakes: a name, no content
    }
    EXPECT_TRUE(parses) << key << " does not parse as the artifact its name says";
    if (parses) good.insert(key);
  }
  return good;
}

TEST(MultiReplica, ThreeReplicasShareRedisAndSurviveAKilledReplica) {
  RedisProcess redis;
  std::vector<std::string> dirs;
  std::vector<std::unique_ptr<ServerProcess>> replicas;
  for (int i = 0; i < 3; ++i) {
    dirs.push_back(MakeTempDir("unused-store"));
    replicas.push_back(std::make_unique<ServerProcess>(
        dirs.back(), std::vector<std::string>{"--redis=" + redis.address()}));
    ASSERT_THAT(replicas.back()->Output(), ::testing::HasSubstr("redis://" + redis.address()));
  }
  const std::string round_robin_target = "ipv4:" + replicas[0]->address() + "," +
                                         replicas[1]->address() + "," + replicas[2]->address();

  // Register and bake through replica 1 alone.
  Client first(Options(replicas[0]->address()));
  const v1::Rig rig_proto = TubeWithoutWeights();
  const Rig rig = *RigFromProto(rig_proto);
  auto reg = first.CreateRig(rig_proto);
  ASSERT_TRUE(reg.ok()) << reg.status();
  const std::string rig_name = reg->rig().name();
  const std::string rig_id = rig_name.substr(rig_name.rfind('/') + 1);  // the store's key
  v1::BakeOptions bake_options;
  bake_options.mutable_geodesic_voxel();
  bake_options.mutable_domain()->set_voxel_resolution(32);
  auto started = first.StartBake(rig_name, bake_options);
  ASSERT_TRUE(started.ok()) << started.status();
  const std::string bake_name = started->bake().name();
  const std::string bake_id = bake_name.substr(bake_name.rfind('/') + 1);
  auto done = first.WatchBake(bake_name, [](const v1::Bake&) { return true; });
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ(done->metadata().state(), v1::BAKE_STATE_SUCCEEDED) << done->error().message();

  const Served reference = ReadThrough(first, rig_name, bake_name);
  ASSERT_FALSE(reference.rig.empty() || reference.bake.empty() || reference.weights.empty());
  const std::vector<double> angles = {0, 30, 60, 90, 120};
  std::vector<v1::PoseRequest> requests;
  std::vector<v1::PosedFrame> expected;
  for (double a : angles) {
    requests.push_back(BentRequest(rig, rig_name, bake_name, a));
    auto frame = first.Pose(requests.back());
    ASSERT_TRUE(frame.ok()) << frame.status();
    expected.push_back(*frame);
  }

  // Replicas 2 and 3 never saw the rig or the bake: they serve them from Redis alone.
  for (int i = 1; i < 3; ++i) {
    Client pinned(Options(replicas[i]->address()));
    ExpectSameAs(ReadThrough(pinned, rig_name, bake_name), reference,
                 "replica " + std::to_string(i + 1));
    for (size_t p = 0; p < requests.size(); ++p) {
      auto frame = pinned.Pose(requests[p]);
      ASSERT_TRUE(frame.ok()) << frame.status();
      EXPECT_LT(MaxDifference(*frame, expected[p]), 1e-5) << "replica " << i + 1 << ", pose " << p;
    }
  }

  // Pose calls spread round-robin over the three from several threads; replica 2 is SIGKILLed
  // once kCallsBeforeKill have completed, then every thread makes kCallsAfterKill more. Every
  // call must succeed with the right frame (those in flight on replica 2 are retried).
  Client spread(Options(round_robin_target));
  constexpr int kThreads = 4, kCallsBeforeKill = 100, kCallsAfterKill = 40;
  std::atomic<int> completed{0}, failed{0}, wrong{0}, after_kill{0};
  std::atomic<bool> killed{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      int mine_after_kill = 0;
      for (int c = 0; mine_after_kill < kCallsAfterKill; ++c) {
        const bool started_after_kill = killed;
        const size_t p = (t + c) % requests.size();
        auto frame = spread.Pose(requests[p]);
        if (!frame.ok()) {
          ++failed;
          ADD_FAILURE() << "call " << c << " of thread " << t
                        << (started_after_kill ? " (after the kill)" : "") << ": "
                        << frame.status();
        } else if (MaxDifference(*frame, expected[p]) > 1e-5) {
          ++wrong;
        }
        if (started_after_kill) {
          ++mine_after_kill;
          ++after_kill;
        }
        ++completed;
      }
    });
  }
  while (completed < kCallsBeforeKill) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const int completed_at_kill = completed;
  EXPECT_EQ(replicas[1]->Stop(SIGKILL), 128 + SIGKILL);
  killed = true;
  for (auto& t : threads) t.join();
  std::printf(
      "%d Pose calls round-robin, %d completed before replica 2 was killed, %d started after; "
      "%d failed, %d wrong\n",
      completed.load(), completed_at_kill, after_kill.load(), failed.load(), wrong.load());
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(after_kill, kThreads * kCallsAfterKill);

  // Nothing was lost or corrupted: the survivors (pinned and round-robin) serve exactly what
  // was read before the kill, and every value in Redis is whole and parses.
  ExpectSameAs(ReadThrough(spread, rig_name, bake_name), reference, "round-robin after the kill");
  for (int i : {0, 2}) {
    Client pinned(Options(replicas[i]->address()));
    ExpectSameAs(ReadThrough(pinned, rig_name, bake_name), reference,
                 "replica " + std::to_string(i + 1) + " after the kill");
  }
  EXPECT_EQ(CheckStoredArtifacts(redis.port()),
            (std::set<std::string>{"rigs/" + rig_id + ".pb", "rigs/" + rig_id + ".info",
                                   "bakes/" + bake_id + ".pb", "rig-bakes/" + rig_id + "/" + bake_id}));
  for (const std::string& dir : dirs)
    EXPECT_TRUE(std::filesystem::is_empty(dir))
        << dir << ": with --redis nothing goes to the store directory";

  // Deleting the rig on replica 3 deletes its bake from Redis. Replica 1, which ran the bake and
  // whose job record in the shared queue says SUCCEEDED, answers from the store: once the same
  // rig is registered again its bake is NOT_FOUND and StartBake computes it anew.
  Client third(Options(replicas[2]->address()));
  ASSERT_TRUE(third.DeleteRig(rig_name).ok());
  EXPECT_TRUE(CheckStoredArtifacts(redis.port()).empty()) << "the rig's bake or index entry stayed in Redis";
  ASSERT_TRUE(first.CreateRig(rig_proto).ok());
  EXPECT_EQ(first.GetBake(bake_name).status().code(), absl::StatusCode::kNotFound);
  auto again = first.StartBake(rig_name, bake_options);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->created()) << "the deleted rig's bake was served again";
  auto redone = first.WatchBake(bake_name, [](const v1::Bake&) { return true; });
  ASSERT_TRUE(redone.ok()) << redone.status();
  EXPECT_EQ(redone->metadata().state(), v1::BAKE_STATE_SUCCEEDED) << redone->error().message();

  for (int i : {0, 2}) EXPECT_EQ(replicas[i]->Stop(SIGTERM), 0);
}


// Replicas and Redis start together (a deployment's first apply, a Redis restart): a replica
// that finds no Redis waits for it (--store_wait_seconds) instead of exiting into a crash-loop
// back-off, then serves; SIGTERM ends the wait.
TEST(MultiReplica, AReplicaStartedBeforeRedisWaitsForItThenServes) {
  RedisProcess redis;
  ASSERT_EQ(redis.Stop(SIGTERM), 0);  // its port is now free: nothing answers there
  // The server starts on another thread (its constructor returns once it listens); Redis comes
  // back on this one (redis-server dies with the thread that started it: PR_SET_PDEATHSIG).
  std::unique_ptr<ServerProcess> server;
  std::string start_error;
  std::thread starting([&] {
    try {
      server = std::make_unique<ServerProcess>(
          MakeTempDir("unused-store"),
          std::vector<std::string>{"--redis=" + redis.address(), "--store_wait_seconds=25"});
    } catch (const std::exception& e) {
      start_error = e.what();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  redis.Restart();
  starting.join();
  ASSERT_NE(server, nullptr) << start_error;
  EXPECT_THAT(server->Output(), ::testing::HasSubstr("waiting for the shared store (0 of 25 s)"));
  EXPECT_THAT(server->Output(), ::testing::HasSubstr("cannot connect to the shared store (redis)"));
  Client client(Options(server->address()));
  absl::StatusOr<v1::CreateRigResponse> created = client.CreateRig(TubeWithoutWeights());
  ASSERT_TRUE(created.ok()) << created.status();
  RedisConnection c = ConnectRedis(redis.port());
  ASSERT_NE(c, nullptr);
  RedisReply keys(static_cast<redisReply*>(redisCommand(c.get(), "KEYS skinning:rigs/*")));
  ASSERT_NE(keys, nullptr);
  EXPECT_EQ(keys->elements, 2u) << "the rig and its summary, in the Redis that came up late";
  EXPECT_EQ(server->Stop(SIGTERM), 0);
}

TEST(MultiReplica, AReplicaGivesUpOnAbsentRedisAfterTheWaitAndStopsOnSigtermDuringIt) {
  RedisProcess redis;
  ASSERT_EQ(redis.Stop(SIGTERM), 0);
  const std::vector<std::string> args = {testing::BinaryPath("server/skinning-server"), "--address=127.0.0.1:0",
                                         "--metrics_address=", "--redis=" + redis.address()};
  std::vector<std::string> give_up = args;
  give_up.push_back("--store_wait_seconds=1.5");
  const auto start = std::chrono::steady_clock::now();
  const testing::CommandResult r = RunCommand(give_up);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("gave up waiting for the shared store after 1.5 s (--store_wait_seconds): "
                                             "redis at " + redis.address() + ": PING: cannot connect"));
  EXPECT_GE(took, 1.4);
  EXPECT_LT(took, 10.0);
  // Without a wait: the error at once, as before the flag.
  std::vector<std::string> no_wait = args;
  no_wait.push_back("--store_wait_seconds=0");
  const testing::CommandResult at_once = RunCommand(no_wait);
  EXPECT_EQ(at_once.exit_code, 1) << at_once.output;
  EXPECT_THAT(at_once.output, ::testing::Not(::testing::HasSubstr("waiting for the shared store")));
  // Only an unreachable store is waited for: a port already taken stops the server at once.
  {
    RedisProcess running;
    const std::vector<std::string> taken = {testing::BinaryPath("server/skinning-server"),
                                            "--address=" + running.address(), "--metrics_address=",
                                            "--redis=" + running.address(), "--store_wait_seconds=30"};
    const auto t0 = std::chrono::steady_clock::now();
    const testing::CommandResult busy = RunCommand(taken);
    EXPECT_EQ(busy.exit_code, 1) << busy.output;
    EXPECT_THAT(busy.output, ::testing::HasSubstr("cannot listen on " + running.address()));
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  }
  // SIGTERM while it waits: exit 0 promptly, no half-started server.
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::vector<std::string> wait_long = args;
    wait_long.push_back("--store_wait_seconds=60");
    std::vector<char*> argv;
    for (std::string& a : wait_long) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const auto sent = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count(), 5.0);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// A Redis that requires a password (requirepass, as managed Redis services do): a replica
// without it, or with a wrong one, stops at once saying so (no wait: the store answers); with the
// password file (a mounted Secret) it serves, every pooled connection and the bake queue's
// authenticated.
TEST(MultiReplica, ARedisWithAPasswordIsReachedWithThePasswordFileAndRefusesOtherwise) {
  RedisProcess redis;
  {
    RedisConnection c = ConnectRedis(redis.port());
    ASSERT_NE(c, nullptr);
    RedisReply set(static_cast<redisReply*>(redisCommand(c.get(), "CONFIG SET requirepass %s", "s3cret-pass")));
    ASSERT_NE(set, nullptr);
    ASSERT_EQ(set->type, REDIS_REPLY_STATUS);
  }
  const std::string dir = MakeTempDir("secret");
  std::ofstream(dir + "/right") << "s3cret-pass\n";
  std::ofstream(dir + "/wrong") << "not-it\n";
  const std::vector<std::string> base = {testing::BinaryPath("server/skinning-server"), "--address=127.0.0.1:0",
                                         "--metrics_address=", "--redis=" + redis.address(), "--store_wait_seconds=30"};
  auto run = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    const auto t0 = std::chrono::steady_clock::now();
    testing::CommandResult r = RunCommand(args);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0)
        << "a refused password is not waited for";
    return r;
  };
  testing::CommandResult none = run({});
  EXPECT_EQ(none.exit_code, 1) << none.output;
  EXPECT_THAT(none.output, ::testing::HasSubstr("NOAUTH"));
  EXPECT_THAT(none.output, ::testing::HasSubstr("--redis_password_file"));
  testing::CommandResult wrong = run({"--redis_password_file=" + dir + "/wrong"});
  EXPECT_EQ(wrong.exit_code, 1) << wrong.output;
  EXPECT_THAT(wrong.output, ::testing::HasSubstr("refused our credentials: WRONGPASS"));
  EXPECT_THAT(wrong.output, ::testing::Not(::testing::HasSubstr("not-it")));

  ServerProcess server(MakeTempDir("unused-store"), {"--redis=" + redis.address(), "--redis_password_file=" + dir + "/right"});
  Client client(Options(server.address()));
  absl::StatusOr<v1::CreateRigResponse> created = client.CreateRig(TubeWithoutWeights());
  ASSERT_TRUE(created.ok()) << created.status();
  v1::BakeOptions options;
  options.mutable_bone_heat();
  auto started = client.StartBake(created->rig().name(), options);  // through the bake queue's connections
  ASSERT_TRUE(started.ok()) << started.status();
  auto done = client.WatchBake(started->bake().name(), [](const v1::Bake&) { return true; });
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->metadata().state(), v1::BAKE_STATE_SUCCEEDED) << done->error().message();
  RedisConnection c = ConnectRedis(redis.port());
  ASSERT_NE(c, nullptr);
  RedisReply auth(static_cast<redisReply*>(redisCommand(c.get(), "AUTH %s", "s3cret-pass")));
  ASSERT_NE(auth, nullptr);
  RedisReply keys(static_cast<redisReply*>(redisCommand(c.get(), "KEYS skinning:rigs/*")));
  ASSERT_NE(keys, nullptr);
  EXPECT_EQ(keys->elements, 2u) << "the rig and its summary";
  EXPECT_EQ(server.Stop(SIGTERM), 0);
}

// A Redis that would delete keys at its maxmemory (any policy but noeviction) is named at start-up:
// the stored rigs, bakes and ended bake jobs would vanish under memory pressure. Without a
// maxmemory, or with noeviction, nothing is said.
TEST(MultiReplica, ARedisThatEvictsKeysIsWarnedAboutAtStartUp) {
  RedisProcess redis;
  auto config = [&](const char* name, const char* value) {
    RedisConnection c = ConnectRedis(redis.port());
    ASSERT_NE(c, nullptr);
    RedisReply set(static_cast<redisReply*>(redisCommand(c.get(), "CONFIG SET %s %s", name, value)));
    ASSERT_NE(set, nullptr);
    ASSERT_EQ(set->type, REDIS_REPLY_STATUS) << name;
  };
  const std::string warning = "evicts keys at its maxmemory";
  auto started_output = [&] {
    ServerProcess server(MakeTempDir("evicting"), {"--redis=" + redis.address()});
    EXPECT_EQ(server.Stop(SIGTERM), 0);
    return server.Output();
  };
  config("maxmemory-policy", "allkeys-lru");  // no maxmemory yet: nothing is evicted
  EXPECT_THAT(started_output(), ::testing::Not(::testing::HasSubstr(warning)));
  config("maxmemory", "200000000");
  const std::string evicting = started_output();
  EXPECT_THAT(evicting, ::testing::HasSubstr("redis at " + redis.address() + " " + warning +
                                             " (200000000 bytes, maxmemory-policy allkeys-lru)"));
  EXPECT_THAT(evicting, ::testing::HasSubstr("set maxmemory-policy noeviction"));
  config("maxmemory-policy", "volatile-ttl");
  EXPECT_THAT(started_output(), ::testing::HasSubstr("maxmemory-policy volatile-ttl"));
  config("maxmemory-policy", "noeviction");
  EXPECT_THAT(started_output(), ::testing::Not(::testing::HasSubstr(warning)));
}

// Without tenants (no --auth_tokens) a replica checks a cached rig against the store, as it
// checks a tenant's ownership: a rig deleted on another replica is NOT_FOUND there, not served
// from the cache for as long as it stays there, and StartBake asks the store every time.
TEST(MultiReplica, ARigDeletedOnAnotherReplicaIsNotServedFromTheCache) {
  RedisProcess redis;
  ServerProcess a(MakeTempDir("deleting"), {"--redis=" + redis.address()});
  ServerProcess b(MakeTempDir("cached"), {"--redis=" + redis.address()});
  Client on_a(Options(a.address())), on_b(Options(b.address()));
  const Rig rig = MakeTwoBoneTube();
  auto created = on_a.CreateRig(RigToProto(rig));
  ASSERT_TRUE(created.ok()) << created.status();
  const std::string name = created->rig().name();
  auto posed = on_b.Pose(BentRequest(rig, name, "", 30));  // B reads it into its cache
  ASSERT_TRUE(posed.ok()) << posed.status();
  ASSERT_TRUE(on_a.DeleteRig(name).ok());
  auto got = on_b.GetRig(name);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound) << got.status();
  auto again = on_b.Pose(BentRequest(rig, name, "", 30));
  EXPECT_EQ(again.status().code(), absl::StatusCode::kNotFound) << again.status();
  v1::BakeOptions options;
  options.mutable_bone_heat();
  auto bake = on_b.StartBake(name, options);
  EXPECT_EQ(bake.status().code(), absl::StatusCode::kNotFound) << bake.status();
}

// A running replica whose Redis starts refusing it (too many clients; a password it does not
// have) answers UNAVAILABLE, which clients retry, without the Redis reply or the server's flags
// (it was INTERNAL with the raw reply, or PERMISSION_DENIED naming --redis_password_file); its
// log says what happened and what to mend (nothing was printed); and it serves again, without a
// restart, once Redis takes it again.
TEST(MultiReplica, ARedisThatRefusesARunningReplicaIsUnavailableLoggedAndRecoveredFrom) {
  RedisProcess redis;
  ServerProcess server(MakeTempDir("refused-store"), {"--redis=" + redis.address(), "--metrics_address=127.0.0.1:0"});
  // The bake queue's commands are counted apart from the store's operations (its workers poll
  // the stream while Redis refuses them).
  const std::string queue_errors = "skinning_bake_queue_store_errors_total";
  EXPECT_EQ(ScrapeMetric(server.metrics_port(), queue_errors), 0);
  ClientOptions once = Options(server.address());
  once.max_attempts = 1;
  Client client(once);
  ASSERT_TRUE(client.CreateRig(RigToProto(MakeTwoBoneTube())).ok());
  RedisConnection c = ConnectRedis(redis.port());
  ASSERT_NE(c, nullptr);
  auto command = [&](const std::string& text) {
    RedisReply r(static_cast<redisReply*>(redisCommand(c.get(), text.c_str())));
    ASSERT_NE(r, nullptr) << text;
    ASSERT_NE(r->type, REDIS_REPLY_ERROR) << text << ": " << std::string(r->str, r->len);
  };
  auto expect_unavailable = [&](const std::string& what) {
    absl::StatusOr<std::vector<v1::Rig>> listed = client.ListRigs();
    ASSERT_FALSE(listed.ok()) << what;
    EXPECT_EQ(listed.status().code(), absl::StatusCode::kUnavailable) << what << ": " << listed.status();
    EXPECT_THAT(std::string(listed.status().message()), ::testing::Not(::testing::HasSubstr("--redis"))) << what;
  };
  // Every other client cut off, and room for none: the server's reconnection is refused.
  command("CONFIG SET maxclients 1");
  command("CLIENT KILL TYPE normal SKIPME yes");
  expect_unavailable("max clients");
  command("CONFIG SET maxclients 10000");
  // Redis now asks for a password this server does not send.
  command("CONFIG SET requirepass later-set");
  command("CLIENT KILL TYPE normal SKIPME yes");
  expect_unavailable("a password");
  std::string log;
  for (int i = 0; i < 50; ++i) {
    log = server.Output();
    if (log.find("NOAUTH") != std::string::npos && log.find("max number of clients") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_THAT(log, ::testing::HasSubstr("skinning-server store: UNAVAILABLE"));
  EXPECT_THAT(log, ::testing::HasSubstr("max number of clients"));
  EXPECT_THAT(log, ::testing::HasSubstr("NOAUTH"));
  EXPECT_THAT(log, ::testing::HasSubstr("--redis_password_file"));
  EXPECT_GT(ScrapeMetric(server.metrics_port(), queue_errors), 0);
  RedisReply cleared(static_cast<redisReply*>(redisCommand(c.get(), "CONFIG SET requirepass %s", "")));
  ASSERT_NE(cleared, nullptr);
  ASSERT_NE(cleared->type, REDIS_REPLY_ERROR);
  absl::StatusOr<std::vector<v1::Rig>> again = client.ListRigs();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->size(), 1u);
  EXPECT_EQ(server.Stop(SIGTERM), 0) << server.Output();
}

// Two replicas on a Redis that serves only mutual TLS (a managed Redis with in-transit encryption
// and client certificates): the rig registered and baked on one (the bake through the queue's
// connections) is posed on the other, and the plain port of the same redis-server holds the
// artifacts. A replica whose TLS settings the Redis refuses, or which does not trust Redis's
// certificate, exits at once saying which flag to mend instead of waiting --store_wait_seconds.
TEST(MultiReplica, ReplicasOnATlsRedisShareItAndAReplicaWithBadTlsSettingsStopsAtOnce) {
  testing::SharedTestPki shared;
  shared.Make();
  shared.Require();
  if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return;
  const testing::TestPki& pki = *shared;
  testing::RedisTlsFiles files{pki.server_cert, pki.server_key, pki.ca_cert, /*auth_clients=*/true};
  RedisProcess redis(files);
  const std::vector<std::string> tls = {"--redis=" + redis.tls_address(), "--redis_tls",
                                        "--redis_tls_ca_file=" + pki.ca_cert,
                                        "--redis_tls_cert_file=" + pki.client_cert,
                                        "--redis_tls_key_file=" + pki.client_key};
  ServerProcess first(MakeTempDir("unused-store"), tls);
  ServerProcess second(MakeTempDir("unused-store"), tls);
  EXPECT_THAT(first.Output(), ::testing::HasSubstr("rediss://" + redis.tls_address()));

  Client one(Options(first.address()));
  const v1::Rig rig_proto = TubeWithoutWeights();
  const Rig rig = *RigFromProto(rig_proto);
  auto created = one.CreateRig(rig_proto);
  ASSERT_TRUE(created.ok()) << created.status();
  const std::string rig_name = created->rig().name();
  v1::BakeOptions options;
  options.mutable_bone_heat();
  auto started = one.StartBake(rig_name, options);
  ASSERT_TRUE(started.ok()) << started.status();
  auto done = one.WatchBake(started->bake().name(), [](const v1::Bake&) { return true; });
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ(done->metadata().state(), v1::BAKE_STATE_SUCCEEDED) << done->error().message();
  const v1::PoseRequest request = BentRequest(rig, rig_name, started->bake().name(), 60);
  auto expected = one.Pose(request);
  ASSERT_TRUE(expected.ok()) << expected.status();
  Client two(Options(second.address()));
  auto posed = two.Pose(request);
  ASSERT_TRUE(posed.ok()) << posed.status();
  EXPECT_LT(MaxDifference(*posed, *expected), 1e-5);
  RedisConnection plain = ConnectRedis(redis.port());
  ASSERT_NE(plain, nullptr);
  RedisReply keys(static_cast<redisReply*>(redisCommand(plain.get(), "KEYS skinning:rigs/*")));
  ASSERT_NE(keys, nullptr);
  EXPECT_EQ(keys->elements, 2u) << "the rig and its summary, written over TLS";

  auto run = [&](std::vector<std::string> flags) {
    std::vector<std::string> args = {testing::BinaryPath("server/skinning-server"), "--address=127.0.0.1:0",
                                     "--metrics_address=", "--store_wait_seconds=30"};
    args.insert(args.end(), flags.begin(), flags.end());
    const auto t0 = std::chrono::steady_clock::now();
    testing::CommandResult r = RunCommand(args);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0)
        << "a refused TLS session is not waited for";
    EXPECT_EQ(r.exit_code, 1) << r.output;
    return r.output;
  };
  const std::vector<std::string> no_client_cert = {"--redis=" + redis.tls_address(), "--redis_tls",
                                                   "--redis_tls_ca_file=" + pki.ca_cert};
  EXPECT_THAT(run(no_client_cert), ::testing::HasSubstr("--redis_tls_cert_file"));
  std::vector<std::string> untrusted = tls;
  untrusted[2] = "--redis_tls_ca_file=" + pki.other_ca_cert;
  EXPECT_THAT(run(untrusted), ::testing::HasSubstr("certificate is not trusted"));
  std::vector<std::string> without_tls_flag = {"--redis=" + redis.tls_address(), "--redis_tls_ca_file=" + pki.ca_cert};
  EXPECT_THAT(run(without_tls_flag), ::testing::HasSubstr("the --redis_tls_* flags need --redis_tls"));
  EXPECT_THAT(run({"--redis_tls"}), ::testing::HasSubstr("--redis_tls needs --redis"));
  EXPECT_EQ(first.Stop(SIGTERM), 0);
  EXPECT_EQ(second.Stop(SIGTERM), 0);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
