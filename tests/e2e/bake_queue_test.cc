// Bakes across a cluster: one `api` and two `worker` skinning-server processes sharing a real
// redis-server. A bake started through one replica is computed once by one worker, watched the
// same from every replica, cancelled from any, and taken over by the other worker when the one
// running it is killed.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_split.h"
#include "client/client.h"
#include "server/convert/convert.h"
#include "tests/support/fixtures.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_process.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::ConnectRedis;
using ::skinning::testing::ScrapeMetric;
using ::skinning::testing::MakeTempDir;
using ::skinning::testing::RedisProcess;
using ::skinning::testing::RedisReply;
using ::skinning::testing::ServerProcess;

ClientOptions Options(const std::string& target) {
  ClientOptions o;
  o.target = target;
  o.deadline = std::chrono::seconds(120);
  o.max_attempts = 10;
  return o;
}

// A BBW bake of the tube at a resolution that takes a few seconds here.
v1::BakeOptions SlowBbw(int resolution = 80) {
  v1::BakeOptions o;
  o.mutable_bbw();
  o.mutable_domain()->set_voxel_resolution(resolution);
  return o;
}

// The sum over `servers` of the metric line `series` (exact text before the value).
double SumMetric(std::vector<ServerProcess*> servers, const std::string& series) {
  double sum = 0;
  for (ServerProcess* s : servers) sum += ScrapeMetric(s->metrics_port(), series);
  return sum;
}

// SumMetric once it reaches `at_least`, or after 5 s: for a counter a worker bumps just after the
// state a caller waits for is written (the queue entry is acknowledged after the job's end).
double SumMetricReaching(std::vector<ServerProcess*> servers, const std::string& series, double at_least) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  double sum = SumMetric(servers, series);
  while (sum < at_least && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    sum = SumMetric(servers, series);
  }
  return sum;
}

int64_t RedisSetCalls(int port) {
  auto c = ConnectRedis(port);
  RedisReply r(static_cast<redisReply*>(redisCommand(c.get(), "INFO commandstats")));
  std::smatch m;
  const std::string text(r->str, r->len);
  if (std::regex_search(text, m, std::regex("cmdstat_set:calls=([0-9]+)"))) return std::stoll(m[1]);
  return 0;
}

// XLEN of the shared bake stream: the count the deployment's KEDA trigger scales the workers on
// (deploy/k8s/overlays/prod/keda-scaledobject.yaml).
int64_t StreamLength(int port) {
  auto c = ConnectRedis(port);
  RedisReply r(static_cast<redisReply*>(redisCommand(c.get(), "XLEN skinning:bakequeue:stream")));
  return r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
}

// Watches a bake to its end on a thread of its own, keeping every progress fraction it is told;
// the bake must succeed. Joined by Join() or when it goes.
class ProgressWatch {
 public:
  ProgressWatch(Client* client, const std::string& name)
      : thread_([this, client, name] {
          auto done = client->WatchBake(name, [this](const v1::Bake& b) {
            std::lock_guard<std::mutex> lock(mu_);
            fractions_.push_back(b.metadata().progress_fraction());
            return true;
          });
          EXPECT_TRUE(done.ok()) << done.status();
          if (done.ok()) {
            EXPECT_EQ(done->metadata().state(), v1::BAKE_STATE_SUCCEEDED) << done->error().message();
          }
        }) {}
  ~ProgressWatch() { Join(); }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  // After Join: the fractions seen (at least 3) never went down.
  void ExpectNeverWentBack() {
    std::lock_guard<std::mutex> lock(mu_);
    ASSERT_GE(fractions_.size(), 3u);
    for (size_t i = 1; i < fractions_.size(); ++i)
      EXPECT_GE(fractions_[i], fractions_[i - 1]) << "update " << i << " of " << fractions_.size();
  }

 private:
  std::mutex mu_;
  std::vector<double> fractions_;
  std::thread thread_;  // last: it uses the members above
};

class BakeQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    redis_ = std::make_unique<RedisProcess>(persistent_);
    const std::string redis = "--redis=" + redis_->address();
    std::vector<std::string> common = {redis, "--metrics_address=127.0.0.1:0", "--bake_lease_ms=2000"};
    common.insert(common.end(), extra_flags_.begin(), extra_flags_.end());
    auto with = [&](std::vector<std::string> extra) {
      extra.insert(extra.end(), common.begin(), common.end());
      return extra;
    };
    api_ = std::make_unique<ServerProcess>(MakeTempDir("api"), with({"--role=api"}));
    w1_ = std::make_unique<ServerProcess>(MakeTempDir("w1"), with({"--role=worker"}));
    w2_ = std::make_unique<ServerProcess>(MakeTempDir("w2"), with({"--role=worker"}));
    api_client_ = std::make_unique<Client>(Options(api_->address()));
    w1_client_ = std::make_unique<Client>(Options(w1_->address()));
    w2_client_ = std::make_unique<Client>(Options(w2_->address()));
    auto rig = api_client_->CreateRig(RigToProto(::skinning::testing::MakeTubeForBaking()));
    ASSERT_TRUE(rig.ok()) << rig.status();
    rig_ = rig->rig().name();
  }

  // The worker process running `bake` now (from the job's "worker" field: host-pid).
  ServerProcess* RunningWorker(const std::string& bake_id) {
    auto c = ConnectRedis(redis_->port());
    const std::string key = "skinning:bakequeue:job:" + bake_id;
    RedisReply r(static_cast<redisReply*>(redisCommand(c.get(), "HGET %s worker", key.c_str())));
    if (!r || r->type != REDIS_REPLY_STRING) return nullptr;
    const std::string worker(r->str, r->len);
    for (ServerProcess* s : {w1_.get(), w2_.get()})
      if (worker.size() > 0 && worker.substr(worker.rfind('-') + 1) == std::to_string(s->pid())) return s;
    return nullptr;
  }

  // The worker running bake `name` once its BBW stage has begun (null when no worker took it).
  ServerProcess* RunnerWellIntoTheBake(const std::string& name) {
    const std::string bake_id = name.substr(name.rfind('/') + 1);
    ServerProcess* runner = nullptr;
    for (int i = 0; i < 200 && runner == nullptr; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      runner = RunningWorker(bake_id);
    }
    for (int i = 0; runner != nullptr && i < 600; ++i) {
      auto now = api_client_->GetBake(name);
      if (!now.ok() || now->metadata().stage() == "bbw") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return runner;
  }

  bool persistent_ = false;  // Redis with an append-only file (for restarts)
  std::vector<std::string> extra_flags_;  // given to every replica
  std::unique_ptr<RedisProcess> redis_;
  std::unique_ptr<ServerProcess> api_, w1_, w2_;
  std::unique_ptr<Client> api_client_, w1_client_, w2_client_;
  std::string rig_;
};

TEST_F(BakeQueueTest, OneBakeStartedOnTheApiIsComputedOnceAndWatchedAlikeEverywhere) {
  const int64_t sets_before = RedisSetCalls(redis_->port());
  auto started = api_client_->StartBake(rig_, SlowBbw());
  ASSERT_TRUE(started.ok()) << started.status();
  ASSERT_TRUE(started->created());
  const std::string name = started->bake().name();

  std::vector<double> seen[2];
  v1::Bake last[2];
  std::vector<std::thread> watchers;
  Client* clients[2] = {w1_client_.get(), w2_client_.get()};
  for (int i = 0; i < 2; ++i)
    watchers.emplace_back([&, i] {
      auto done = clients[i]->WatchBake(name, [&](const v1::Bake& b) {
        seen[i].push_back(b.metadata().progress_fraction());
        return true;
      });
      if (done.ok()) last[i] = *done;
    });
  // A second StartBake of the same bake on another replica while it runs: the same job.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto again = w2_client_->StartBake(rig_, SlowBbw());
  for (std::thread& t : watchers) t.join();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->bake().name(), name);
  EXPECT_FALSE(again->created());

  for (int i = 0; i < 2; ++i) {
    ASSERT_GE(seen[i].size(), 2u) << "watcher " << i << " saw no progress";
    for (size_t k = 1; k < seen[i].size(); ++k) EXPECT_GE(seen[i][k], seen[i][k - 1]) << "watcher " << i;
    EXPECT_EQ(last[i].metadata().state(), v1::BAKE_STATE_SUCCEEDED) << last[i].error().message();
    EXPECT_EQ(seen[i].back(), 1.0);
  }
  EXPECT_EQ(last[0].SerializeAsString(), last[1].SerializeAsString()) << "the replicas answer the same final state";
  // Computed once: one store write (the bake and its rig's index entry), one worker says it
  // finished one bake.
  EXPECT_EQ(RedisSetCalls(redis_->port()) - sets_before, 2);
  EXPECT_EQ(SumMetric({w1_.get(), w2_.get()}, "skinning_bakes_finished_total{method=\"bbw\",state=\"done\"}"), 1);
  EXPECT_EQ(SumMetricReaching({w1_.get(), w2_.get()}, "skinning_bake_queue_acknowledged_total", 1), 1);
  EXPECT_EQ(SumMetric({api_.get()}, "skinning_bakes_finished_total{method=\"bbw\",state=\"done\"}"), 0)
      << "the api replica bakes nothing";
}

TEST_F(BakeQueueTest, KilledWorkersBakeIsTakenOverAndStoredAsAnUndisturbedRunWould) {
  auto started = api_client_->StartBake(rig_, SlowBbw());
  ASSERT_TRUE(started.ok()) << started.status();
  const std::string name = started->bake().name();
  const std::string bake_id = name.substr(name.rfind('/') + 1);
  // Kill whichever worker runs it once it is running.
  ServerProcess* victim = nullptr;
  for (int i = 0; i < 200 && victim == nullptr; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    victim = RunningWorker(bake_id);
  }
  ASSERT_NE(victim, nullptr) << "no worker took the bake";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(victim->Stop(SIGKILL), 128 + SIGKILL);
  ServerProcess* survivor = victim == w1_.get() ? w2_.get() : w1_.get();

  auto done = api_client_->WatchBake(name, [](const v1::Bake&) { return true; });
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->metadata().state(), v1::BAKE_STATE_SUCCEEDED) << done->error().message();
  EXPECT_EQ(SumMetric({survivor}, "skinning_bake_queue_reclaimed_total"), 1);

  // The same bake computed by a single undisturbed server gives the same weights, bit for bit.
  auto weights = api_client_->GetWeights(name, v1::WEIGHTS_FORMAT_DENSE);
  ASSERT_TRUE(weights.ok()) << weights.status();
  ServerProcess alone(MakeTempDir("alone"));
  Client alone_client(Options(alone.address()));
  ASSERT_TRUE(alone_client.CreateRig(RigToProto(::skinning::testing::MakeTubeForBaking())).ok());
  auto alone_started = alone_client.StartBake(rig_, SlowBbw());
  ASSERT_TRUE(alone_started.ok());
  auto alone_done = alone_client.WatchBake(alone_started->bake().name(), [](const v1::Bake&) { return true; });
  ASSERT_TRUE(alone_done.ok());
  auto alone_weights = alone_client.GetWeights(alone_started->bake().name(), v1::WEIGHTS_FORMAT_DENSE);
  ASSERT_TRUE(alone_weights.ok());
  EXPECT_EQ(alone_weights->weights().SerializeAsString(), weights->weights().SerializeAsString());
}

TEST_F(BakeQueueTest, CancelThroughAnotherReplicaStopsTheWorkerAndStoresNothing) {
  const int64_t sets_before = RedisSetCalls(redis_->port());
  auto started = api_client_->StartBake(rig_, SlowBbw(96));
  ASSERT_TRUE(started.ok()) << started.status();
  const std::string name = started->bake().name();
  const std::string bake_id = name.substr(name.rfind('/') + 1);
  ServerProcess* runner = nullptr;
  for (int i = 0; i < 200 && runner == nullptr; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    runner = RunningWorker(bake_id);
  }
  ASSERT_NE(runner, nullptr);
  // Cancel inside the solve: from its first stage on, a factorization of ≈ 53k unknowns is
  // under way (≈ 3 s on one core), which cannot check for a cancel itself and is abandoned.
  for (int i = 0; i < 600; ++i) {
    auto now = api_client_->GetBake(name);
    ASSERT_TRUE(now.ok()) << now.status();
    if (now->metadata().stage() == "bbw") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  Client* other = runner == w1_.get() ? w2_client_.get() : w1_client_.get();
  const auto t0 = std::chrono::steady_clock::now();
  auto cancelled = other->CancelBake(name);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->metadata().state(), v1::BAKE_STATE_CANCELLED) << cancelled->DebugString();
  RecordProperty("cancel_seconds", std::to_string(waited));
  EXPECT_LT(waited, 2.2) << "cancel must stop the worker within 2 s of its next check (every 0.2 s)";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(RedisSetCalls(redis_->port()) - sets_before, 0) << "a cancelled bake stored something";
  auto weights = api_client_->GetWeights(name);
  EXPECT_EQ(weights.status().code(), absl::StatusCode::kFailedPrecondition) << weights.status();
}

// A worker stopped with SIGTERM hands its running bake back at once (state queued, its start
// not counted against --bake_max_attempts: the hash's writes were dropped during the shutdown and
// the bake sat RUNNING with no worker until its lease ran out), the other worker takes it over,
// and the progress a watcher sees never goes back although the new start begins again.
TEST_F(BakeQueueTest, AWorkerThatShutsDownHandsItsBakeBackAndProgressNeverGoesBack) {
  auto started = api_client_->StartBake(rig_, SlowBbw());
  ASSERT_TRUE(started.ok()) << started.status();
  const std::string name = started->bake().name();
  const std::string bake_id = name.substr(name.rfind('/') + 1);
  ProgressWatch watch(api_client_.get(), name);
  ServerProcess* runner = RunnerWellIntoTheBake(name);
  ASSERT_NE(runner, nullptr) << "no worker took the bake";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // The job as the runner hands it back during its shutdown, read while the runner exits: the
  // other worker may take it over once the lease (2 s) has run out, and under load the runner's
  // exit (it waits for an abandoned factorization) can take longer than that.
  ASSERT_EQ(kill(runner->pid(), SIGTERM), 0);
  auto c = ConnectRedis(redis_->port());
  const std::string key = "skinning:bakequeue:job:" + bake_id;
  std::vector<std::string> fields;
  for (int i = 0; i < 1000; ++i) {
    RedisReply state(static_cast<redisReply*>(redisCommand(c.get(), "HMGET %s state attempts stage", key.c_str())));
    ASSERT_TRUE(state && state->type == REDIS_REPLY_ARRAY && state->elements == 3);
    fields.clear();
    for (size_t f = 0; f < 3; ++f) {
      const redisReply* e = state->element[f];
      fields.push_back(e->type == REDIS_REPLY_STRING ? std::string(e->str, e->len) : std::string());
    }
    if (fields[0] != std::to_string(v1::BAKE_STATE_RUNNING)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(fields[0], std::to_string(v1::BAKE_STATE_QUEUED)) << fields[2];
  EXPECT_EQ(fields[1], "0") << "a clean shutdown counted as a failed start";
  EXPECT_THAT(fields[2], ::testing::HasSubstr("waiting for another worker"));
  EXPECT_EQ(runner->Stop(SIGTERM), 0) << runner->Output();
  watch.Join();
  ServerProcess* other = runner == w1_.get() ? w2_.get() : w1_.get();
  EXPECT_EQ(SumMetric({other}, "skinning_bake_queue_reclaimed_total"), 1);
  watch.ExpectNeverWentBack();
}

// A worker that stalls past its lease (SIGSTOP for twice --bake_lease_ms) is taken over; once it
// runs again it finds the job no longer names its run, stops and writes nothing more: the bake is
// computed to the end once, counted once, and its progress never goes back. (Its lease renewal
// used to take the job back: both workers computed it to the end, taking it from each other every
// second, the progress going backwards and the bake counted twice.)
TEST_F(BakeQueueTest, AWorkerThatStallsPastItsLeaseIsTakenOverAndWritesNothingMore) {
  auto started = api_client_->StartBake(rig_, SlowBbw(88));
  ASSERT_TRUE(started.ok()) << started.status();
  const std::string name = started->bake().name();
  const std::string bake_id = name.substr(name.rfind('/') + 1);
  ProgressWatch watch(api_client_.get(), name);
  ServerProcess* runner = RunnerWellIntoTheBake(name);
  ASSERT_NE(runner, nullptr) << "no worker took the bake";
  ASSERT_EQ(kill(runner->pid(), SIGSTOP), 0);
  // Whatever happens below, the runner runs again (before the watch is joined).
  struct Resume {
    pid_t pid;
    ~Resume() { kill(pid, SIGCONT); }
  } resume{runner->pid()};
  ServerProcess* other = runner == w1_.get() ? w2_.get() : w1_.get();
  ServerProcess* now_running = runner;
  for (int i = 0; i < 100 && now_running != other; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    now_running = RunningWorker(bake_id);
  }
  ASSERT_EQ(now_running, other) << "the other worker did not take the bake over";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // into its start
  ASSERT_EQ(kill(runner->pid(), SIGCONT), 0);
  watch.Join();  // the bake's end
  const std::string finished = "skinning_bakes_finished_total{method=\"bbw\",state=\"done\"}";
  EXPECT_EQ(SumMetricReaching({w1_.get(), w2_.get()}, finished, 1), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // a second count would come now
  EXPECT_EQ(SumMetric({w1_.get(), w2_.get()}, finished), 1) << "computed to the end twice";
  EXPECT_EQ(SumMetric({runner}, "skinning_bakes_running{method=\"bbw\"}"), 0);
  EXPECT_EQ(SumMetricReaching({other}, "skinning_bake_queue_acknowledged_total", 1), 1);
  EXPECT_EQ(SumMetric({runner}, "skinning_bake_queue_acknowledged_total"), 0);
  for (int i = 0; i < 50 && runner->Output().find("was taken over by another worker") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_THAT(runner->Output(), ::testing::HasSubstr("bake " + bake_id + " was taken over by another worker"));
  watch.ExpectNeverWentBack();
}

// A Redis that refuses writes (OOM at maxmemory, a refusal that is not "unavailable") while a bake
// runs: the worker cannot store the result, nor the job's end, and gives up on the end after 8
// tries (about 4 s) instead of holding its thread for ever; the job, still pending in the stream,
// is taken again once Redis takes writes, and the bake ends SUCCEEDED, computed to the end once
// more. The maxmemory refusal is real (CONFIG SET maxmemory on the test's redis-server).
TEST_F(BakeQueueTest, ARedisRefusingWritesMidBakeEndsTheWorkersTriesAndTheBakeIsDoneOnceItTakesWritesAgain) {
  auto started = api_client_->StartBake(rig_, SlowBbw());
  ASSERT_TRUE(started.ok()) << started.status();
  const std::string name = started->bake().name();
  ServerProcess* runner = RunnerWellIntoTheBake(name);
  ASSERT_NE(runner, nullptr) << "no worker took the bake";
  auto redis = ConnectRedis(redis_->port());
  auto config = [&](const char* bytes) {
    RedisReply r(static_cast<redisReply*>(redisCommand(redis.get(), "CONFIG SET maxmemory %s", bytes)));
    return r && r->type == REDIS_REPLY_STATUS;
  };
  ASSERT_TRUE(config("1"));  // every write is now refused with OOM (noeviction, Redis's default)
  const std::string gave_up = "gave up after 8 tries: bake queue: end job: redis replied OOM";
  const auto refused = std::chrono::steady_clock::now();
  while (runner->Output().find(gave_up) == std::string::npos &&
         std::chrono::steady_clock::now() - refused < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_THAT(runner->Output(), ::testing::HasSubstr(gave_up));
  auto now = api_client_->GetBake(name);
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_FALSE(now->done()) << "nothing could be written: the bake is not reported ended";
  ASSERT_TRUE(config("0"));  // writes are taken again
  auto done = api_client_->WatchBake(name, [](const v1::Bake&) { return true; });
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->metadata().state(), v1::BAKE_STATE_SUCCEEDED) << done->error().message();
  EXPECT_EQ(SumMetricReaching({w1_.get(), w2_.get()}, "skinning_bakes_finished_total{method=\"bbw\",state=\"done\"}", 1),
            1);
  // The worker that gave up is free: a second bake runs (whichever worker takes it).
  auto second = api_client_->StartBake(rig_, SlowBbw(40));
  ASSERT_TRUE(second.ok()) << second.status();
  auto second_done = api_client_->WatchBake(second->bake().name(), [](const v1::Bake&) { return true; });
  ASSERT_TRUE(second_done.ok()) << second_done.status();
  EXPECT_EQ(second_done->metadata().state(), v1::BAKE_STATE_SUCCEEDED) << second_done->error().message();
}

class BakeQueueOneAttemptTest : public BakeQueueTest {
 protected:
  BakeQueueOneAttemptTest() { extra_flags_ = {"--bake_max_attempts=1"}; }
};

// A result the store refuses as unavailable (here Redis's ACL denies SET to the servers' user,
// a real refusal, mid-bake) sends the job back to the queue without counting its start: with
// --bake_max_attempts=1 the bake is handed back twice, run a third time once SET is allowed
// again, and ends SUCCEEDED. Counted, the second start would have ended it FAILED ("started 1
// times").
TEST_F(BakeQueueOneAttemptTest, ResultsTheStoreRefusesAsUnavailableAreHandedBackWithoutCountingTheStart) {
  auto started = api_client_->StartBake(rig_, SlowBbw(64));
  ASSERT_TRUE(started.ok()) << started.status();
  const std::string name = started->bake().name();
  const std::string key = "skinning:bakequeue:job:" + name.substr(name.rfind('/') + 1);
  ASSERT_NE(RunnerWellIntoTheBake(name), nullptr) << "no worker took the bake";
  auto redis = ConnectRedis(redis_->port());
  auto acl = [&](const char* rule) {
    RedisReply r(static_cast<redisReply*>(redisCommand(redis.get(), "ACL SETUSER default %s", rule)));
    return r && r->type == REDIS_REPLY_STATUS;
  };
  auto field = [&](const char* name) {
    RedisReply r(static_cast<redisReply*>(redisCommand(redis.get(), "HGET %s %s", key.c_str(), name)));
    return r && r->type == REDIS_REPLY_STRING ? std::stoll(std::string(r->str, r->len)) : int64_t{0};
  };
  ASSERT_TRUE(acl("-set"));
  const auto denied = std::chrono::steady_clock::now();
  while (field("store_waits") < 2 && std::chrono::steady_clock::now() - denied < std::chrono::seconds(90))
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(field("store_waits"), 2) << "the result was refused twice";
  auto between = api_client_->GetBake(name);
  ASSERT_TRUE(between.ok()) << between.status();
  EXPECT_FALSE(between->done()) << between->error().message();
  ASSERT_TRUE(acl("+set"));
  auto done = api_client_->WatchBake(name, [](const v1::Bake&) { return true; });
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->metadata().state(), v1::BAKE_STATE_SUCCEEDED) << done->error().message();
  EXPECT_EQ(field("attempts"), 1) << "only the start that stored its result counts";
  EXPECT_EQ(SumMetricReaching({w1_.get(), w2_.get()}, "skinning_bakes_finished_total{method=\"bbw\",state=\"done\"}", 1),
            1);
}

class BakeQueueRestartTest : public BakeQueueTest {
 protected:
  BakeQueueRestartTest() { persistent_ = true; }
};

TEST_F(BakeQueueRestartTest, ThirtyBakesAcrossReplicasSurviveARedisRestartEachDoneOnce) {
  constexpr int kBakes = 30;
  Client* clients[3] = {api_client_.get(), w1_client_.get(), w2_client_.get()};
  std::vector<std::string> names;
  for (int i = 0; i < kBakes; ++i) {
    Rig rig = ::skinning::testing::MakeTwoBoneTube(21, 12, 2.0 + 0.02 * i);
    rig.sparse_weights.reset();
    rig.skeleton.joints[0].tail = Eigen::Vector3d(1.0 + 0.01 * i, 0, 0);
    rig.skeleton.joints[1].tail = Eigen::Vector3d(1.9 + 0.019 * i, 0, 0);
    Client* c = clients[i % 3];
    auto created = c->CreateRig(RigToProto(rig));
    ASSERT_TRUE(created.ok()) << created.status();
    auto started = c->StartBake(created->rig().name(), SlowBbw(40));
    ASSERT_TRUE(started.ok()) << started.status();
    names.push_back(started->bake().name());
  }
  // The stream holds the bakes queued or running, and only those: what the workers scale on.
  auto not_done = [&] {
    int n = 0;
    for (const std::string& name : names) {
      auto b = api_client_->GetBake(name);
      n += b.ok() && !b->done();
    }
    return n;
  };
  const int before = not_done();
  const int64_t length = StreamLength(redis_->port());
  const int after = not_done();
  EXPECT_GE(length, after);
  // (+2: a bake each worker just finished, whose entry goes right after its state is stored.)
  EXPECT_LE(length, before + 2) << before << " bakes were queued or running";
  // Restart Redis while the workers are in the middle of the queue.
  for (int i = 0; i < 200; ++i) {
    auto b = api_client_->GetBake(names[kBakes / 3]);
    if (b.ok() && b->metadata().state() != v1::BAKE_STATE_QUEUED) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  auto tail = api_client_->GetBake(names.back());
  ASSERT_TRUE(tail.ok()) << tail.status();
  EXPECT_FALSE(tail->done()) << "the restart came after the queue emptied: it tests nothing";
  EXPECT_EQ(redis_->Stop(SIGTERM), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  redis_->Restart();

  int succeeded = 0;
  for (const std::string& name : names) {
    v1::Bake last;
    for (int i = 0; i < 1200; ++i) {
      auto b = api_client_->GetBake(name);
      if (b.ok()) last = *b;
      if (b.ok() && b->done()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_EQ(last.metadata().state(), v1::BAKE_STATE_SUCCEEDED) << name << ": " << last.error().message();
    succeeded += last.metadata().state() == v1::BAKE_STATE_SUCCEEDED;
  }
  EXPECT_EQ(succeeded, kBakes);
  int64_t left = StreamLength(redis_->port());
  for (int i = 0; i < 250 && left != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    left = StreamLength(redis_->port());
  }
  EXPECT_EQ(left, 0) << "every finished bake's entry leaves the stream, so idle workers scale down";
  EXPECT_EQ(SumMetric({w1_.get(), w2_.get()}, "skinning_bakes_finished_total{method=\"bbw\",state=\"done\"}"), kBakes)
      << "every bake computed to completion exactly once";
  EXPECT_EQ(SumMetric({w1_.get(), w2_.get()}, "skinning_bakes_finished_total{method=\"bbw\",state=\"failed\"}"), 0);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
