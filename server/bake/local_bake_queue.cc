#include "server/bake/local_bake_queue.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/process_stats.h"
#include "core/util/status_macros.h"
#include "google/protobuf/util/time_util.h"

namespace skinning {
namespace {

using Clock = std::chrono::steady_clock;
using google::protobuf::util::TimeUtil;

// Ended jobs whose state is kept in memory; the store has the results.
constexpr size_t kMaxEndedJobs = 1000;

google::protobuf::Timestamp Now() { return TimeUtil::GetCurrentTime(); }

// Whether the record was written by another server on this machine that still runs (one sharing
// this store directory).
bool QueuedByAnotherRunningServerHere(const internal::v1::PendingBake& record) {
  return record.writer() != ThisProcessWriter() && QueuedByARunningServerHere(record);
}

// Whether the record was written by this server (this process on this machine).
bool WrittenByThisServer(const internal::v1::PendingBake& record) {
  return record.writer() == ThisProcessWriter() && record.host() == HostName();
}

std::string WaitingStage(const std::string& writer) {
  return absl::StrCat("waiting for the server on this store that runs it (pid ", WriterPid(writer), ")");
}

}  // namespace

struct LocalBakeQueue::Job {
  BakeJob spec;
  v1::BakeState state = v1::BAKE_STATE_UNSPECIFIED;
  std::string stage = "queued";
  double fraction = 0.0;
  Clock::time_point started_at, finished_at;
  google::protobuf::Timestamp create_time, start_time, end_time;
  std::atomic<bool> cancel{false};
  std::string cancel_reason;
  absl::Status error;  // FAILED: why
  std::shared_ptr<const internal::v1::StoredBake> stored;  // SUCCEEDED: what was stored
  // Another running server on this store (this machine) had queued the bake when it was started
  // here: its writer ("<pid>-<start ticks>"). The job waits for it (in waiting_, QUEUED, on no
  // worker) instead of computing the bake a second time (CheckWaitingJob); empty once it stops
  // waiting.
  std::string left_to;
  // Whether the bake's record (BakeStore::PutPending) is this server's to delete at the end.
  // False too once another server took the record over (UpdatePendingRecord).
  std::atomic<bool> owns_record{false};
  // The record as this server last wrote it, and when (UpdatePendingRecord), under record_mu.
  std::mutex record_mu;
  std::string record_bytes;
  Clock::time_point record_written;
};

LocalBakeQueue::LocalBakeQueue(BakeStore* store, BakeRunFunction run, LocalBakeQueueOptions options,
                               BakeObserver* observer)
    : store_(store), run_(std::move(run)), options_(options), observer_(observer) {
  for (int i = 0; i < std::max(1, options_.workers); ++i) workers_.emplace_back([this] { WorkerLoop(); });
  waiter_ = std::thread([this] { WaitLoop(); });
}

LocalBakeQueue::~LocalBakeQueue() { Shutdown(); }

void LocalBakeQueue::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && workers_.empty()) return;
    stopping_ = true;
    auto cancel_all = [this](auto& jobs) {
      for (auto& job : jobs) {
        job->cancel_reason = "the server shut down before the bake started";
        job->stage = "server shutting down";
        SetStateLocked(*job, v1::BAKE_STATE_CANCELLED);
      }
      jobs.clear();
    };
    cancel_all(queue_);
    cancel_all(waiting_);
    for (auto& [id, job] : jobs_) {
      if (!BakeEnded(job->state)) job->cancel_reason = "the server shut down while the bake was running";
      job->cancel = true;
    }
  }
  cv_.notify_all();
  for (auto& w : workers_) w.join();
  workers_.clear();
  if (waiter_.joinable()) waiter_.join();
}

void LocalBakeQueue::SetStateLocked(Job& job, v1::BakeState state, bool counted) {
  if (BakeEnded(state)) {
    job.finished_at = Clock::now();
    job.end_time = Now();
  }
  if (observer_ != nullptr) {
    BakeTransition t;
    t.method = job.spec.recipe->name();
    t.from = job.state;
    t.to = counted ? state : v1::BAKE_STATE_UNSPECIFIED;
    if (job.state == v1::BAKE_STATE_RUNNING && BakeEnded(state))
      t.run_seconds = std::chrono::duration<double>(job.finished_at - job.started_at).count();
    observer_->OnBakeTransition(t);
  }
  job.state = state;
}

v1::Bake LocalBakeQueue::BakeLocked(const Job& job) const {
  // A stored bake answers from what was stored, as every other replica does.
  if (job.state == v1::BAKE_STATE_SUCCEEDED) return BakeFromStored(*job.stored);
  BakeJobState state;
  state.state = job.state;
  state.stage = job.stage;
  state.fraction = job.fraction;
  state.create_time = job.create_time;
  if (job.state != v1::BAKE_STATE_QUEUED && job.started_at != Clock::time_point()) {
    state.start_time = job.start_time;
    state.elapsed_seconds =
        std::chrono::duration<double>((BakeEnded(job.state) ? job.finished_at : Clock::now()) - job.started_at).count();
  }
  if (BakeEnded(job.state)) state.end_time = job.end_time;
  if (job.state == v1::BAKE_STATE_QUEUED && job.left_to.empty()) {  // (waiting for another server: no place)
    int ahead = 0;
    for (const auto& q : queue_) {
      if (q.get() == &job) break;
      ++ahead;
    }
    state.queue_position = ahead;
  }
  if (job.state == v1::BAKE_STATE_FAILED) state.error = job.error;
  if (job.state == v1::BAKE_STATE_CANCELLED) state.error = absl::CancelledError(job.cancel_reason);
  return JobBake(BakeName(job.spec.rig_id, job.spec.bake_id), job.spec.options, state);
}

std::shared_ptr<LocalBakeQueue::Job> LocalBakeQueue::FindLocked(const BakeRef& bake) const {
  auto it = jobs_.find(bake.bake_id);
  if (it == jobs_.end() || it->second->spec.rig_id != bake.rig_id || it->second->state == v1::BAKE_STATE_SUCCEEDED)
    return nullptr;
  return it->second;
}

absl::StatusOr<v1::Bake> LocalBakeQueue::Stored(const BakeRef& bake) { return StoredBakeResource(*store_, bake); }

absl::StatusOr<StartedBake> LocalBakeQueue::Start(const BakeJob& spec) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return absl::UnavailableError("server is shutting down");
    if (std::shared_ptr<Job> job = FindLocked(spec.ref());
        job && (job->state == v1::BAKE_STATE_QUEUED || job->state == v1::BAKE_STATE_RUNNING))
      return StartedBake{BakeLocked(*job), false};
  }
  // Stored by an earlier run (or another replica sharing the store). A stored bake that does not
  // read (DATA_LOSS) is computed again below.
  absl::StatusOr<v1::Bake> stored = StoredAndReadable(*store_, spec.ref(), spec.recipe);
  if (stored.ok()) return StartedBake{*std::move(stored), false};
  if (!absl::IsNotFound(stored.status()) && !absl::IsDataLoss(stored.status())) return stored.status();

  // Queued or running on another server of this store that still runs: left to it (the job
  // waits for it, CheckWaitingJob), so that one bake is not computed twice. Its record stays.
  // A record this server wrote already (it took the record over at its start or from an ended
  // server, PendingBakeAdopter) is kept as it is, with its first queued time.
  std::string left_to;
  std::optional<std::string> record;
  if (absl::StatusOr<std::optional<BakeStore::PendingRecord>> existing = store_->PendingOf(spec.bake_id);
      existing.ok() && existing->has_value()) {
    if (QueuedByAnotherRunningServerHere((*existing)->bake)) left_to = (*existing)->bake.writer();
    if (WrittenByThisServer((*existing)->bake)) record = (*existing)->bytes;
  }
  if (left_to.empty() && !record) record = PutPendingRecord(spec);
  const bool owns_record = record.has_value();
  std::unique_lock<std::mutex> lock(mu_);
  if (std::shared_ptr<Job> job = FindLocked(spec.ref()); job && !BakeEnded(job->state))  // queued meanwhile
    return StartedBake{BakeLocked(*job), false};
  // Queued jobs an idle worker is about to take do not wait: --bake_queue=0 still runs a bake
  // on an idle worker (it refused every bake).
  const int workers = std::max(1, options_.workers);
  // A job that waits for another server takes no worker and no place in the queue.
  if (left_to.empty() && static_cast<int>(queue_.size()) + busy_ >= workers + std::max(0, options_.max_queue)) {
    const absl::Status full = absl::ResourceExhaustedError(absl::StrFormat(
        "bake queue is full (%d of %d workers busy, %d waiting, at most %d (--bake_queue)); retry later", busy_,
        workers, std::max<int>(0, static_cast<int>(queue_.size()) + busy_ - workers), options_.max_queue));
    lock.unlock();
    if (owns_record) (void)store_->DeletePending(spec.bake_id);
    return full;
  }
  auto job = std::make_shared<Job>();
  job->spec = spec;
  job->left_to = left_to;
  job->owns_record = owns_record;
  if (record) job->record_bytes = *std::move(record);
  job->create_time = Now();
  job->spec.create_time = job->create_time;
  SetStateLocked(*job, v1::BAKE_STATE_QUEUED);
  jobs_[spec.bake_id] = job;
  if (left_to.empty()) {
    queue_.push_back(job);
  } else {
    job->stage = WaitingStage(left_to);
    waiting_.push_back(job);
  }
  PruneLocked();
  cv_.notify_all();
  return StartedBake{BakeLocked(*job), true};
}

std::optional<std::string> LocalBakeQueue::PutPendingRecord(const BakeJob& spec) {
  // The record that lets a restarted server start the bake again, written before a worker can take
  // it (so that its end deletes it after it is written). Without it the bake still runs.
  internal::v1::PendingBake pending;
  pending.set_rig_id(spec.rig_id);
  *pending.mutable_options() = spec.options;
  pending.set_tenant(spec.tenant);
  pending.set_queued_unix_ms(TimeUtil::TimestampToMilliseconds(Now()));
  pending.set_host(HostName());
  pending.set_writer(ThisProcessWriter());
  absl::StatusOr<std::string> written = store_->PutPending(spec.bake_id, pending);
  if (!written.ok()) {
    std::printf("skinning-server bakes: %s will not be started again after a restart: %s\n",
                BakeName(spec.rig_id, spec.bake_id).c_str(), std::string(written.status().message()).c_str());
    std::fflush(stdout);
    return std::nullopt;
  }
  return *std::move(written);
}

void LocalBakeQueue::UpdatePendingRecord(Job& job, const std::string& stage, double fraction) {
  std::lock_guard<std::mutex> lock(job.record_mu);
  internal::v1::PendingBake record;
  if (!job.owns_record || job.record_bytes.empty() || !record.ParseFromString(job.record_bytes)) return;
  const Clock::time_point now = Clock::now();
  if (record.stage() == stage && now - job.record_written < std::chrono::seconds(1)) return;
  job.record_written = now;  // also after a failed write: the next try waits as long
  // A store failure leaves the record as it was, still this server's. A refusal means the record
  // changed: rewritten by this server (two StartBake calls of one bake racing), it is still
  // this server's and written again; otherwise another server took it over (a server of another
  // machine sharing the directory, at its start) and it is that server's now, to keep or delete.
  for (int attempt = 0; attempt < 2; ++attempt) {
    record.set_stage(stage);
    record.set_progress_fraction(fraction);
    std::string bytes;
    absl::StatusOr<bool> written = store_->UpdatePending(job.spec.bake_id, job.record_bytes, record, &bytes);
    if (!written.ok()) return;
    if (*written) {
      job.record_bytes = std::move(bytes);
      return;
    }
    absl::StatusOr<std::optional<BakeStore::PendingRecord>> now = store_->PendingOf(job.spec.bake_id);
    if (!now.ok()) return;
    if (!now->has_value() || !WrittenByThisServer((*now)->bake)) break;
    job.record_bytes = (*now)->bytes;
    record = (*now)->bake;  // what this server wrote last
  }
  job.owns_record = false;
  std::printf("skinning-server bakes: %s: its record was taken over by another server; this server leaves it\n",
              BakeName(job.spec.rig_id, job.spec.bake_id).c_str());
  std::fflush(stdout);
}

void LocalBakeQueue::PruneLocked() {
  size_t ended = 0;
  for (const auto& [id, job] : jobs_) ended += BakeEnded(job->state);
  for (auto it = jobs_.begin(); ended > kMaxEndedJobs && it != jobs_.end();) {
    if (BakeEnded(it->second->state)) {
      it = jobs_.erase(it);
      --ended;
    } else {
      ++it;
    }
  }
}

absl::StatusOr<v1::Bake> LocalBakeQueue::Get(const BakeRef& bake) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (std::shared_ptr<Job> job = FindLocked(bake)) return BakeLocked(*job);
  }
  return Stored(bake);
}

std::optional<v1::Bake> LocalBakeQueue::Pending(const BakeRef& bake) {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<Job> job = FindLocked(bake);
  if (!job) return std::nullopt;
  return BakeLocked(*job);
}

absl::Status LocalBakeQueue::Watch(const BakeRef& bake, const std::function<bool(const v1::Bake&)>& on_change,
                                   const std::function<bool()>& stop) {
  std::shared_ptr<Job> job;
  {
    std::lock_guard<std::mutex> lock(mu_);
    job = FindLocked(bake);
  }
  if (!job) {
    ASSIGN_OR_RETURN(const v1::Bake stored, Stored(bake));
    on_change(stored);
    return absl::OkStatus();
  }
  std::string last;
  while (true) {
    v1::Bake now;
    {
      std::unique_lock<std::mutex> lock(mu_);
      std::string key = absl::StrCat(job->state, "|", job->stage, "|", job->fraction);
      if (key == last && !BakeEnded(job->state)) {
        cv_.wait_for(lock, std::chrono::milliseconds(100));
        if (stop()) return absl::CancelledError("watch stopped");
        continue;
      }
      last = std::move(key);
      now = BakeLocked(*job);
    }
    if (!on_change(now) || now.done()) return absl::OkStatus();
    if (stop()) return absl::CancelledError("watch stopped");
  }
}

absl::StatusOr<v1::Bake> LocalBakeQueue::Cancel(const BakeRef& bake) {
  std::unique_lock<std::mutex> lock(mu_);
  std::shared_ptr<Job> job = FindLocked(bake);
  if (!job) {
    lock.unlock();
    return Stored(bake);  // stored (SUCCEEDED) or NOT_FOUND
  }
  if (job->state == v1::BAKE_STATE_QUEUED) {
    queue_.erase(std::remove(queue_.begin(), queue_.end(), job), queue_.end());
    waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), job), waiting_.end());
    job->stage = "cancelled while queued";
    job->cancel_reason = "cancelled with CancelBake while queued";
    SetStateLocked(*job, v1::BAKE_STATE_CANCELLED);
    cv_.notify_all();
    lock.unlock();
    if (job->owns_record) (void)store_->DeletePending(job->spec.bake_id);
    lock.lock();
  } else if (job->state == v1::BAKE_STATE_RUNNING) {
    job->cancel_reason = "cancelled with CancelBake";
    job->cancel = true;
    cv_.wait_for(lock, std::chrono::seconds(5), [&] { return BakeEnded(job->state); });
  }
  return BakeLocked(*job);
}

void LocalBakeQueue::WorkerLoop() {
  while (true) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = queue_.front();
      queue_.pop_front();
      job->stage = "starting";
      job->started_at = Clock::now();
      job->start_time = Now();
      job->spec.start_time = job->start_time;
      SetStateLocked(*job, v1::BAKE_STATE_RUNNING);
      ++busy_;
    }
    cv_.notify_all();
    Run(job);
    std::lock_guard<std::mutex> lock(mu_);
    --busy_;
  }
}

void LocalBakeQueue::Run(const std::shared_ptr<Job>& job) {
  // Progress: never decreasing, published at most every 1% or on a stage change; 1 is for done.
  // It goes into the bake's record too (UpdatePendingRecord), for other servers waiting for it.
  Progress progress(
      [this, job](const std::string& stage, double fraction) {
        bool changed = false;
        double f = 0.0;
        {
          std::lock_guard<std::mutex> lock(mu_);
          f = std::max(job->fraction, std::min(fraction, 0.999));
          if (stage != job->stage || f >= job->fraction + 0.01) {
            job->stage = stage;
            job->fraction = f;
            changed = true;
          }
        }
        if (!changed) return;
        cv_.notify_all();
        UpdatePendingRecord(*job, stage, f);
      },
      &job->cancel);
  absl::StatusOr<std::shared_ptr<const internal::v1::StoredBake>> stored = run_(job->spec, progress);
  bool ended_by_shutdown = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ended_by_shutdown = stopping_ && !stored.ok() && (absl::IsCancelled(stored.status()) || job->cancel);
    if (stored.ok()) {
      job->stored = *std::move(stored);
      job->fraction = 1.0;
      job->stage = "done";
      SetStateLocked(*job, v1::BAKE_STATE_SUCCEEDED);
    } else if (absl::IsCancelled(stored.status()) || job->cancel) {
      job->stage = "cancelled";
      if (job->cancel_reason.empty()) job->cancel_reason = std::string(stored.status().message());
      SetStateLocked(*job, v1::BAKE_STATE_CANCELLED);
    } else {
      job->stage = "failed";
      job->error = stored.status();
      SetStateLocked(*job, v1::BAKE_STATE_FAILED);
    }
  }
  // A bake the shutdown stopped keeps its record: the restarted server starts it again.
  if (!ended_by_shutdown && job->owns_record) (void)store_->DeletePending(job->spec.bake_id);
  cv_.notify_all();
}

void LocalBakeQueue::WaitLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || !waiting_.empty(); });
    if (stopping_) return;
    const std::vector<std::shared_ptr<Job>> waiting = waiting_;
    lock.unlock();
    for (const std::shared_ptr<Job>& job : waiting) CheckWaitingJob(job);
    lock.lock();
    cv_.wait_for(lock, std::chrono::milliseconds(250), [&] { return stopping_; });
  }
}

void LocalBakeQueue::CheckWaitingJob(const std::shared_ptr<Job>& job) {
  const std::string& bake_id = job->spec.bake_id;
  absl::StatusOr<std::optional<BakeStore::PendingRecord>> record = store_->PendingOf(bake_id);
  if (!record.ok()) return;  // a store error: asked again on the next pass
  // While the record names another running server of this machine, its stage and progress are
  // shown. When that server ends without ending the bake (stopped, killed), this server's adopter
  // (PendingBakeAdopter, within 5 s) makes the record this server's, and the wait ends.
  if (record->has_value() && QueuedByAnotherRunningServerHere((*record)->bake)) {
    const internal::v1::PendingBake& theirs = (*record)->bake;
    std::string stage = WaitingStage(theirs.writer());
    if (!theirs.stage().empty()) absl::StrAppend(&stage, ": ", theirs.stage());
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (job->state != v1::BAKE_STATE_QUEUED || job->left_to.empty()) return;  // cancelled meanwhile
      job->stage = std::move(stage);
      job->fraction = std::max(job->fraction, std::min(theirs.progress_fraction(), 0.999));
    }
    cv_.notify_all();
    return;
  }
  // That server ended it: stored (answered from the store), or failed or cancelled there (queued
  // here to be computed, for this server's caller still wants it).
  absl::StatusOr<std::shared_ptr<const internal::v1::StoredBake>> stored = absl::NotFoundError("not stored");
  if (StoredAndReadable(*store_, job->spec.ref(), job->spec.recipe).ok()) stored = store_->Header(bake_id);
  std::optional<std::string> own;
  if (!stored.ok()) own = PutPendingRecord(job->spec);
  bool cancelled = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled = job->state != v1::BAKE_STATE_QUEUED || job->left_to.empty();
    if (!cancelled) {
      waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), job), waiting_.end());
      job->left_to.clear();
      if (stored.ok()) {
        job->stored = *std::move(stored);
        job->fraction = 1.0;
        job->stage = "done";
        // Computed by the server this job waited for: that server counts it.
        SetStateLocked(*job, v1::BAKE_STATE_SUCCEEDED, /*counted=*/false);
      } else {
        if (own) {
          std::lock_guard<std::mutex> record_lock(job->record_mu);
          job->record_bytes = *own;
          job->owns_record = true;
        }
        job->stage = "queued";
        queue_.push_front(job);  // it was started before the jobs queued behind it
      }
    }
  }
  if (cancelled && own) (void)store_->DeletePending(bake_id);
  cv_.notify_all();
}

}  // namespace skinning
