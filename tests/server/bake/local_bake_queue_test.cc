// The bake queue's state machine with a runner the test drives: queued, running, succeeded
// (stored before reported done), failed, cancelled; reuse; the queue bound; stored bakes answered
// from their header.
#include "server/bake/local_bake_queue.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "server/bake/bake_options.h"
#include "server/bake/bake_store.h"
#include "absl/strings/str_cat.h"
#include "core/util/process_stats.h"
#include "tests/support/server_process.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::MakeTempDir;
using ::testing::HasSubstr;

constexpr char kRig[] = "rig-0123456789abcdef0123456789abcdef";

// A bbw job of kRig; `k` (influences) makes distinct bakes.
BakeJob Job(int k) {
  v1::BakeOptions options;
  options.set_influence_count(k);
  absl::StatusOr<NormalizedBakeOptions> n = NormalizeBakeOptions(options);
  EXPECT_TRUE(n.ok()) << n.status();
  BakeJob job;
  job.rig_id = kRig;
  job.options = n->options;
  job.recipe = n->recipe;
  job.bake_id = BakeId(kRig, job.options);
  return job;
}

// Runs jobs the way the test says: each reports progress, waits until released (or cancelled),
// then stores a minimal bake (or fails with the release's status).
class FakeRunner {
 public:
  explicit FakeRunner(BakeStore* store) : store_(store) {}

  BakeRunFunction function() {
    return [this](const BakeJob& job, const Progress& progress) { return Run(job, progress); };
  }
  // Lets the jobs waiting now, and every later one, end with `result`.
  void Release(absl::Status result = absl::OkStatus()) {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    result_ = std::move(result);
    cv_.notify_all();
  }
  // Makes every running job report `stage` (at 0.6) once, and waits until one has.
  bool Nudge(const std::string& stage) {
    std::unique_lock<std::mutex> lock(mu_);
    nudge_ = stage;
    const int before = nudged_;
    cv_.notify_all();
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return nudged_ > before; });
  }
  // Waits until `n` jobs have started running.
  bool WaitStarted(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return started_ >= n; });
  }

 private:
  absl::StatusOr<std::shared_ptr<const internal::v1::StoredBake>> Run(const BakeJob& job, const Progress& progress) {
    progress.Report("working", 0.5);
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++started_;
      cv_.notify_all();
      while (!released_ && !progress.Cancelled()) {
        if (!nudge_.empty()) {
          const std::string stage = std::move(nudge_);
          nudge_.clear();
          lock.unlock();
          progress.Report(stage, 0.6);
          lock.lock();
          ++nudged_;
          cv_.notify_all();
        }
        cv_.wait_for(lock, std::chrono::milliseconds(10));
      }
      if (progress.Cancelled()) return absl::CancelledError("cancelled");
      if (!result_.ok()) return result_;
    }
    internal::v1::StoredBake stored;
    stored.set_format_version(kBakeFormatVersion);
    stored.set_bake_id(job.bake_id);
    stored.set_rig_id(job.rig_id);
    *stored.mutable_options() = job.options;
    stored.mutable_report()->set_method("bbw");
    stored.mutable_report()->mutable_total_duration()->set_seconds(3);
    stored.set_created_unix_ms(1700000000000);
    auto loaded = std::make_shared<LoadedBake>();
    loaded->header = StoredBakeHeader(stored);
    loaded->bytes = 1;
    if (absl::Status s = store_->Put(stored, loaded); !s.ok()) return s;
    return loaded->header;
  }

  BakeStore* store_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  absl::Status result_;
  int started_ = 0;
  std::string nudge_;
  int nudged_ = 0;
};

class LocalBakeQueueTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(MakeTempDir("bakes")); }
  void Open(const std::string& dir, LocalBakeQueueOptions options = {}) {
    dir_ = dir;
    if (runner_) runner_->Release();
    queue_.reset();
    runner_.reset();
    auto blobs = OpenFilesystemBlobStore(dir);
    ASSERT_TRUE(blobs.ok()) << blobs.status();
    blobs_ = *std::move(blobs);
    rigs_ = std::make_unique<RigStore>(blobs_, 1 << 20);
    store_ = std::make_unique<BakeStore>(blobs_, rigs_.get(), &RecipeRegistry::Default(), 1 << 20);
    runner_ = std::make_unique<FakeRunner>(store_.get());
    queue_ = std::make_unique<LocalBakeQueue>(store_.get(), runner_->function(), options);
  }
  void TearDown() override {
    if (runner_) runner_->Release();
    queue_.reset();
  }

  // The state the job's bake ends in (polled for up to 5 s; UNSPECIFIED if it does not end).
  v1::BakeState WaitEnded(const BakeJob& job) {
    for (int i = 0; i < 500; ++i) {
      absl::StatusOr<v1::Bake> now = queue_->Get(job.ref());
      if (now.ok() && now->done()) return now->metadata().state();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return v1::BAKE_STATE_UNSPECIFIED;
  }

  // The job's bake's record in the store (nullopt when there is none; a store error fails the test).
  std::optional<internal::v1::PendingBake> RecordOf(const BakeJob& job) {
    absl::StatusOr<std::optional<BakeStore::PendingRecord>> r = store_->PendingOf(job.bake_id);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || !r->has_value()) return std::nullopt;
    return (*r)->bake;
  }

  std::string dir_;
  std::shared_ptr<BlobStore> blobs_;
  std::unique_ptr<RigStore> rigs_;
  std::unique_ptr<BakeStore> store_;
  std::unique_ptr<FakeRunner> runner_;
  std::unique_ptr<LocalBakeQueue> queue_;
};

TEST_F(LocalBakeQueueTest, RunsToSucceededAndIsStoredBeforeItIsReportedDone) {
  const BakeJob job = Job(4);
  auto started = queue_->Start(job);
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_TRUE(started->created);
  EXPECT_EQ(started->bake.name(), job.ref().name());
  EXPECT_FALSE(started->bake.done());
  EXPECT_TRUE(started->bake.options().has_bbw());
  ASSERT_TRUE(runner_->WaitStarted(1));
  // Running: the same bake is found, not queued again; progress and times are reported.
  auto again = queue_->Start(job);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->created);
  auto running = queue_->Get(job.ref());
  ASSERT_TRUE(running.ok());
  EXPECT_EQ(running->metadata().state(), v1::BAKE_STATE_RUNNING);
  EXPECT_EQ(running->metadata().stage(), "working");
  EXPECT_DOUBLE_EQ(running->metadata().progress_fraction(), 0.5);
  EXPECT_TRUE(running->metadata().has_start_time());
  EXPECT_FALSE(running->metadata().has_end_time());
  EXPECT_TRUE(queue_->Pending(job.ref()).has_value());

  std::vector<v1::Bake> seen;
  bool stored_when_done = false;
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    runner_->Release();
  });
  absl::Status watched = queue_->Watch(
      job.ref(),
      [&](const v1::Bake& bake) {
        seen.push_back(bake);
        if (bake.done()) stored_when_done = store_->Header(job.bake_id).ok();
        return true;
      },
      [] { return false; });
  release.join();
  ASSERT_TRUE(watched.ok()) << watched;
  ASSERT_FALSE(seen.empty());
  const v1::Bake& last = seen.back();
  EXPECT_EQ(last.metadata().state(), v1::BAKE_STATE_SUCCEEDED);
  EXPECT_TRUE(last.done());
  EXPECT_TRUE(last.has_response());
  EXPECT_EQ(last.response().report().method(), "bbw");
  EXPECT_DOUBLE_EQ(last.metadata().progress_fraction(), 1.0);
  EXPECT_TRUE(last.metadata().has_end_time());
  EXPECT_TRUE(stored_when_done);
  for (size_t i = 1; i < seen.size(); ++i)
    EXPECT_GE(seen[i].metadata().progress_fraction(), seen[i - 1].metadata().progress_fraction());
  EXPECT_FALSE(queue_->Pending(job.ref()).has_value());
}

TEST_F(LocalBakeQueueTest, AFullQueueIsResourceExhaustedAndQueuedBakesKnowTheirPosition) {
  Open(MakeTempDir("bakes"), LocalBakeQueueOptions{1, 1});
  ASSERT_TRUE(queue_->Start(Job(1)).ok());
  ASSERT_TRUE(runner_->WaitStarted(1));
  auto queued = queue_->Start(Job(2));
  ASSERT_TRUE(queued.ok()) << queued.status();
  EXPECT_EQ(queued->bake.metadata().state(), v1::BAKE_STATE_QUEUED);
  EXPECT_EQ(queued->bake.metadata().queue_position(), 0);
  EXPECT_FALSE(queued->bake.metadata().has_estimated_remaining()) << "unknown while queued";
  auto full = queue_->Start(Job(3));
  EXPECT_EQ(full.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(full.status().message(),
              HasSubstr("bake queue is full (1 of 1 workers busy, 1 waiting, at most 1 (--bake_queue)); retry later"));
  // The queued bake itself is found, not refused.
  EXPECT_TRUE(queue_->Start(Job(2)).ok());
}

// --bake_queue=0: no bake waits, but an idle worker still takes one (every bake was refused).
TEST_F(LocalBakeQueueTest, AQueueOfZeroRunsABakeOnAnIdleWorkerAndRefusesTheNext) {
  Open(MakeTempDir("bakes"), LocalBakeQueueOptions{1, 0});
  auto first = queue_->Start(Job(1));
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(runner_->WaitStarted(1));
  auto second = queue_->Start(Job(2));
  EXPECT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(second.status().message(), HasSubstr("1 of 1 workers busy, 0 waiting, at most 0"));
}

TEST_F(LocalBakeQueueTest, CancelledBakesEndCancelledAndStoreNothing) {
  Open(MakeTempDir("bakes"), LocalBakeQueueOptions{1, 4});
  const BakeJob running = Job(1), queued = Job(2);
  ASSERT_TRUE(queue_->Start(running).ok());
  ASSERT_TRUE(runner_->WaitStarted(1));
  ASSERT_TRUE(queue_->Start(queued).ok());
  for (const BakeJob& job : {queued, running}) {
    auto cancelled = queue_->Cancel(job.ref());
    ASSERT_TRUE(cancelled.ok()) << cancelled.status();
    EXPECT_EQ(cancelled->metadata().state(), v1::BAKE_STATE_CANCELLED);
    EXPECT_TRUE(cancelled->done());
    EXPECT_EQ(cancelled->error().code(), static_cast<int>(absl::StatusCode::kCancelled));
    EXPECT_THAT(cancelled->error().message(), HasSubstr("CancelBake"));
    EXPECT_EQ(store_->Header(job.bake_id).status().code(), absl::StatusCode::kNotFound);
  }
  // A cancelled bake started again is a new job.
  auto restarted = queue_->Start(queued);
  ASSERT_TRUE(restarted.ok());
  EXPECT_TRUE(restarted->created);
}

TEST_F(LocalBakeQueueTest, AFailedBakeSaysWhyAndStartingItAgainRunsItAgain) {
  const BakeJob job = Job(4);
  ASSERT_TRUE(queue_->Start(job).ok());
  runner_->Release(absl::FailedPreconditionError("bone 'arm' is outside the mesh"));
  v1::Bake last;
  ASSERT_TRUE(queue_->Watch(job.ref(), [&](const v1::Bake& b) { last = b; return true; }, [] { return false; }).ok());
  EXPECT_EQ(last.metadata().state(), v1::BAKE_STATE_FAILED);
  EXPECT_EQ(last.error().code(), static_cast<int>(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(last.error().message(), "bone 'arm' is outside the mesh");
  EXPECT_TRUE(queue_->Pending(job.ref()).has_value());
  EXPECT_EQ(store_->Header(job.bake_id).status().code(), absl::StatusCode::kNotFound);
  auto again = queue_->Start(job);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->created);
}

TEST_F(LocalBakeQueueTest, AStoredBakeIsAnsweredFromItsHeaderByAnotherQueue) {
  const std::string dir = MakeTempDir("bakes");
  Open(dir);
  const BakeJob job = Job(4);
  runner_->Release();
  ASSERT_TRUE(queue_->Start(job).ok());
  ASSERT_TRUE(queue_->Watch(job.ref(), [](const v1::Bake&) { return true; }, [] { return false; }).ok());
  Open(dir);  // a fresh process on the same store
  auto started = queue_->Start(job);
  ASSERT_TRUE(started.ok()) << started.status();
  EXPECT_FALSE(started->created);
  const v1::Bake& bake = started->bake;
  EXPECT_EQ(bake.metadata().state(), v1::BAKE_STATE_SUCCEEDED);
  EXPECT_TRUE(bake.done());
  EXPECT_EQ(bake.metadata().elapsed().seconds(), 3);
  EXPECT_EQ(bake.metadata().create_time().seconds(), 1700000000);
  for (auto got : {queue_->Get(job.ref()), queue_->Cancel(job.ref())}) {
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->metadata().state(), v1::BAKE_STATE_SUCCEEDED);
  }
  int watched = 0;
  ASSERT_TRUE(queue_->Watch(job.ref(), [&](const v1::Bake&) { return ++watched > 0; }, [] { return false; }).ok());
  EXPECT_EQ(watched, 1);
  EXPECT_EQ(store_->loads(), 0u) << "a status check never loads the bake";
}

TEST_F(LocalBakeQueueTest, UnknownBakesAndBakesOfAnotherRigAreNotFound) {
  const BakeJob job = Job(4);
  EXPECT_EQ(queue_->Get(job.ref()).status().code(), absl::StatusCode::kNotFound);
  runner_->Release();
  ASSERT_TRUE(queue_->Start(job).ok());
  ASSERT_TRUE(queue_->Watch(job.ref(), [](const v1::Bake&) { return true; }, [] { return false; }).ok());
  BakeRef other = job.ref();
  other.rig_id = "rig-ffffffffffffffffffffffffffffffff";
  EXPECT_EQ(queue_->Get(other).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(queue_->Cancel(other).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(LocalBakeQueueTest, ShutdownCancelsQueuedAndRunningBakes) {
  Open(MakeTempDir("bakes"), LocalBakeQueueOptions{1, 4});
  const BakeJob running = Job(1), queued = Job(2);
  ASSERT_TRUE(queue_->Start(running).ok());
  ASSERT_TRUE(runner_->WaitStarted(1));
  ASSERT_TRUE(queue_->Start(queued).ok());
  queue_->Shutdown();
  for (const BakeJob& job : {running, queued}) {
    auto bake = queue_->Get(job.ref());
    ASSERT_TRUE(bake.ok()) << bake.status();
    EXPECT_EQ(bake->metadata().state(), v1::BAKE_STATE_CANCELLED);
    EXPECT_THAT(bake->error().message(), HasSubstr("shut down"));
  }
  EXPECT_EQ(queue_->Start(Job(3)).status().code(), absl::StatusCode::kUnavailable);
}

// A queued bake's record names its server (machine and process). A record whose server has
// ended is taken over by one server only when two start on the store at once
// (BakeStore::ClaimPending): the second's claim, made from what it read before the first's,
// fails.
TEST_F(LocalBakeQueueTest, ARecordNamesItsServerAndOnlyOneServerTakesOverAnEndedServersRecord) {
  ASSERT_TRUE(queue_->Start(Job(1)).ok());
  absl::StatusOr<std::vector<BakeStore::PendingRecord>> records = store_->Pending();
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 1u);
  EXPECT_EQ((*records)[0].bake.host(), HostName());
  EXPECT_EQ((*records)[0].bake.writer(), ThisProcessWriter());
  EXPECT_FALSE(WriterEnded(ThisProcessWriter()));

  // A real process that has ended, named as a server names itself (read while it is a zombie).
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  const std::string ended = absl::StrCat(child, "-", ProcessStartTicks(child));
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WriterEnded(ended)) << ended;

  const BakeJob job = Job(2);
  internal::v1::PendingBake theirs;
  theirs.set_rig_id(kRig);
  *theirs.mutable_options() = job.options;
  theirs.set_host(HostName());
  theirs.set_writer(ended);
  ASSERT_TRUE(store_->PutPending(job.bake_id, theirs).ok());
  absl::StatusOr<std::unique_ptr<BlobStore>> opened = OpenFilesystemBlobStore(dir_);
  ASSERT_TRUE(opened.ok()) << opened.status();
  const std::shared_ptr<BlobStore> other_blobs = *std::move(opened);
  RigStore other_rigs(other_blobs, 1 << 20);
  BakeStore other(other_blobs, &other_rigs, &RecipeRegistry::Default(), 1 << 20);
  auto ours = store_->Pending();
  auto seen_by_other = other.Pending();
  ASSERT_TRUE(ours.ok() && seen_by_other.ok());
  ASSERT_EQ(ours->size(), 2u);
  ASSERT_EQ(seen_by_other->size(), 2u);
  auto find = [&](std::vector<BakeStore::PendingRecord>& in) -> const BakeStore::PendingRecord& {
    return in[0].bake_id == job.bake_id ? in[0] : in[1];
  };
  ASSERT_EQ(find(*ours).bake.writer(), ended);
  absl::StatusOr<bool> first = store_->ClaimPending(find(*ours));
  absl::StatusOr<bool> second = other.ClaimPending(find(*seen_by_other));
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_TRUE(*first);
  EXPECT_FALSE(*second);
  auto after = other.Pending();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(find(*after).bake.writer(), ThisProcessWriter());
  EXPECT_EQ(find(*after).bake.rig_id(), kRig);
}

// A running bake writes its stage and progress into its record (for another server of the
// store waiting for it). When another server took the record over meanwhile (a server of
// another machine sharing the directory, at its start), the rewrite is refused and the record
// stays that server's: the bake's end leaves it. The record used to be written once, and deleted
// at the end whoever it named.
TEST_F(LocalBakeQueueTest, ARunningBakeWritesItsProgressIntoItsRecordAndLeavesARecordAnotherServerTookOver) {
  const BakeJob job = Job(3);
  ASSERT_TRUE(queue_->Start(job).ok());
  ASSERT_TRUE(runner_->WaitStarted(1));
  auto record = [&] {
    std::optional<internal::v1::PendingBake> r = RecordOf(job);
    EXPECT_TRUE(r.has_value());
    return r.value_or(internal::v1::PendingBake());
  };
  EXPECT_EQ(record().stage(), "working");
  EXPECT_DOUBLE_EQ(record().progress_fraction(), 0.5);
  EXPECT_EQ(record().writer(), ThisProcessWriter());
  ASSERT_TRUE(runner_->Nudge("second stage"));
  EXPECT_EQ(record().stage(), "second stage");
  EXPECT_DOUBLE_EQ(record().progress_fraction(), 0.6);

  internal::v1::PendingBake theirs = record();
  theirs.set_host("another-machine");
  theirs.set_writer("1-1");
  theirs.clear_stage();
  theirs.clear_progress_fraction();
  ASSERT_TRUE(store_->PutPending(job.bake_id, theirs).ok());
  ASSERT_TRUE(runner_->Nudge("third stage"));
  EXPECT_EQ(record().writer(), "1-1") << "not written over";
  EXPECT_EQ(record().stage(), "");
  runner_->Release();
  EXPECT_EQ(WaitEnded(job), v1::BAKE_STATE_SUCCEEDED);
  EXPECT_EQ(record().host(), "another-machine") << "the other server's record stays";
}

// A record this server wrote already (taken over at its start, or from an ended server) is kept
// as it is when the bake is queued, with its first queued time; a rewrite of the record by this
// server (two StartBake calls of one bake racing) leaves it this server's: the progress still
// goes into it, and the bake's end deletes it. The queue wrote the record again (a new queued
// time), and such a rewrite would have made the running job leave its own record behind.
TEST_F(LocalBakeQueueTest, ARecordThisServerWroteIsKeptAndStaysItsOwnWhenThisServerRewritesIt) {
  const BakeJob job = Job(5);
  internal::v1::PendingBake mine;
  mine.set_rig_id(kRig);
  *mine.mutable_options() = job.options;
  mine.set_host(HostName());
  mine.set_writer(ThisProcessWriter());
  mine.set_queued_unix_ms(1234);
  ASSERT_TRUE(store_->PutPending(job.bake_id, mine).ok());
  ASSERT_TRUE(queue_->Start(job).ok());
  ASSERT_TRUE(runner_->WaitStarted(1));
  auto record = [&] { return RecordOf(job); };
  ASSERT_TRUE(record());
  EXPECT_EQ(record()->queued_unix_ms(), 1234) << "kept, not written again";
  EXPECT_EQ(record()->stage(), "working");

  mine.set_queued_unix_ms(99);
  ASSERT_TRUE(store_->PutPending(job.bake_id, mine).ok());
  ASSERT_TRUE(runner_->Nudge("after the rewrite"));
  ASSERT_TRUE(record());
  EXPECT_EQ(record()->stage(), "after the rewrite");
  EXPECT_EQ(record()->queued_unix_ms(), 99);
  runner_->Release();
  EXPECT_EQ(WaitEnded(job), v1::BAKE_STATE_SUCCEEDED);
  EXPECT_FALSE(record()) << "the end deleted it";
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
