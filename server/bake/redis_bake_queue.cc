#include "server/bake/redis_bake_queue.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "google/protobuf/util/time_util.h"

namespace skinning {
namespace {

using google::protobuf::util::TimeUtil;
constexpr char kGroup[] = "bakers";
int64_t NowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Str(const redisReply* r) {
  return r != nullptr && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) ? std::string(r->str, r->len)
                                                                                          : std::string();
}

int64_t Int(const std::string& s, int64_t fallback = 0) {
  int64_t v = fallback;
  return absl::SimpleAtoi(s, &v) ? v : fallback;
}

// Creates the job's hash and adds it to the stream, unless it is queued or running already.
// KEYS: job, stream. ARGV: rig, options, tenant, create ns, max stream length, bake id.
constexpr char kStartScript[] = R"lua(
local s = redis.call('HGET', KEYS[1], 'state')
if s == '1' or s == '2' then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'rig', ARGV[1], 'options', ARGV[2], 'tenant', ARGV[3], 'state', '1',
           'stage', 'queued', 'fraction', '0', 'create', ARGV[4], 'attempts', '0')
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[5], '*', 'bake', ARGV[6])
return 1
)lua";

// A worker starts the job (1) only while it is queued or running (a takeover), so that a cancel
// that ended it since the worker read it is not overwritten; 0 otherwise. `run` names this start
// (its worker and attempt): every later write of the run is made only while the job still names
// it, so that a worker that stalled past its lease and was taken over writes nothing more.
// KEYS: job. ARGV: start ns, worker, run.
constexpr char kClaimScript[] = R"lua(
local s = redis.call('HGET', KEYS[1], 'state')
if s ~= '1' and s ~= '2' then return 0 end
redis.call('HSET', KEYS[1], 'state', '2', 'stage', 'starting', 'start', ARGV[1], 'worker', ARGV[2], 'run', ARGV[3])
return 1
)lua";

// Renews the run's lease (1): resets the idle time of its stream entry, only while the job names
// the run and the entry is pending for this consumer; 0 when another worker took it over. (The
// renewal was an XCLAIM with no condition, which took a taken-over entry back: two workers then
// ran the bake to the end, taking the job from each other every second.)
// KEYS: job, stream. ARGV: run, group, consumer, entry.
constexpr char kRenewScript[] = R"lua(
if redis.call('HGET', KEYS[1], 'run') ~= ARGV[1] then return 0 end
local p = redis.call('XPENDING', KEYS[2], ARGV[2], ARGV[4], ARGV[4], 1)
if #p == 0 or p[1][2] ~= ARGV[3] then return 0 end
redis.call('XCLAIM', KEYS[2], ARGV[2], ARGV[3], 0, ARGV[4], 'JUSTID')
return 1
)lua";

// The run's progress (1), only while the job names the run; 0 otherwise.
// KEYS: job. ARGV: run, stage, fraction.
constexpr char kProgressScript[] = R"lua(
if redis.call('HGET', KEYS[1], 'run') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'stage', ARGV[2], 'fraction', ARGV[3])
return 1
)lua";

// The run's end (1): the job's fields, its expiry, and the stream entry acknowledged and removed,
// only while the job names the run; 0 otherwise (the entry is then another worker's).
// KEYS: job, stream. ARGV: run, group, entry, ttl, then field/value pairs.
constexpr char kEndRunScript[] = R"lua(
if redis.call('HGET', KEYS[1], 'run') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 5))
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('XACK', KEYS[2], ARGV[2], ARGV[3])
redis.call('XDEL', KEYS[2], ARGV[3])
return 1
)lua";

// The run hands the job back to the queue (1) without counting its start, only while the job
// names the run; 0 otherwise. A hand-back for the store (ARGV[3] = '1') counts in `store_waits`,
// and only the first kMaxStoreWaits go uncounted, so that a result the store never takes does not
// run for ever. KEYS: job. ARGV: run, stage, for the store, most uncounted store hand-backs.
constexpr char kHandBackScript[] = R"lua(
if redis.call('HGET', KEYS[1], 'run') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'state', '1', 'stage', ARGV[2])
if ARGV[3] == '1' then
  if redis.call('HINCRBY', KEYS[1], 'store_waits', 1) > tonumber(ARGV[4]) then return 1 end
end
redis.call('HINCRBY', KEYS[1], 'attempts', -1)
return 1
)lua";
constexpr int kMaxStoreWaits = 5;

// Cancels a queued job at once (1), flags a running one (2); 0 for anything else.
// KEYS: job. ARGV: end ns.
constexpr char kCancelScript[] = R"lua(
local s = redis.call('HGET', KEYS[1], 'state')
if s == '1' then
  redis.call('HSET', KEYS[1], 'state', '5', 'stage', 'cancelled while queued',
             'error', 'cancelled with CancelBake while queued', 'end', ARGV[1])
  return 1
end
if s == '2' then
  redis.call('HSET', KEYS[1], 'cancel', '1')
  return 2
end
return 0
)lua";

google::protobuf::Timestamp FromNanos(int64_t ns) { return TimeUtil::NanosecondsToTimestamp(ns); }

}  // namespace

RedisBakeQueue::RedisBakeQueue(BakeStore* store, const RecipeRegistry* recipes, BakeRunFunction run,
                               RedisBakeQueueOptions options, BakeObserver* observer)
    : store_(store),
      recipes_(recipes),
      run_(std::move(run)),
      options_(std::move(options)),
      observer_(observer),
      stream_(options_.prefix + "bakequeue:stream"),
      pool_(options_.host, options_.port, options_.credentials) {}

absl::StatusOr<std::unique_ptr<RedisBakeQueue>> RedisBakeQueue::Open(BakeStore* store, const RecipeRegistry* recipes,
                                                                     BakeRunFunction run,
                                                                     RedisBakeQueueOptions options,
                                                                     BakeObserver* observer) {
  IgnoreSigpipeForRedis();
  if (options.consumer.empty()) {
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    options.consumer = absl::StrCat(host, "-", getpid());
  }
  std::unique_ptr<RedisBakeQueue> q(new RedisBakeQueue(store, recipes, std::move(run), std::move(options), observer));
  RETURN_IF_ERROR(q->EnsureGroup());
  for (int i = 0; i < q->options_.workers; ++i) q->workers_.emplace_back([p = q.get(), i] { p->WorkerLoop(i); });
  return q;
}

RedisBakeQueue::~RedisBakeQueue() { Shutdown(); }

absl::Status RedisBakeQueue::EnsureGroup() {
  absl::StatusOr<RedisReplyPtr> r = pool_.Command({"XGROUP", "CREATE", stream_, kGroup, "0", "MKSTREAM"}, "bake queue");
  if (!r.ok() && absl::StrContains(r.status().message(), "BUSYGROUP")) return absl::OkStatus();
  return pool_.ForOperator(r.status());  // at startup
}

absl::StatusOr<RedisBakeQueue::Record> RedisBakeQueue::Read(const std::string& bake_id) {
  ASSIGN_OR_RETURN(RedisReplyPtr r, pool_.Command({"HGETALL", JobKey(bake_id)}, "bake queue: read job"));
  Record rec;
  if (r->type == REDIS_REPLY_ARRAY)
    for (size_t i = 0; i + 1 < r->elements; i += 2) rec[Str(r->element[i])] = Str(r->element[i + 1]);
  return rec;
}

absl::StatusOr<v1::Bake> RedisBakeQueue::Stored(const BakeRef& bake) { return StoredBakeResource(*store_, bake); }

v1::Bake RedisBakeQueue::ToBake(const Record& r, const BakeRef& ref) {
  const auto get = [&r](const char* k) {
    auto it = r.find(k);
    return it == r.end() ? std::string() : it->second;
  };
  const auto state = static_cast<v1::BakeState>(Int(get("state")));
  if (state == v1::BAKE_STATE_SUCCEEDED) {
    absl::StatusOr<v1::Bake> stored = Stored(ref);
    if (stored.ok()) return *std::move(stored);
  }
  v1::BakeOptions options;
  options.ParseFromString(get("options"));
  BakeJobState job;
  job.state = state;
  job.stage = get("stage");
  (void)absl::SimpleAtod(get("fraction"), &job.fraction);
  job.create_time = FromNanos(Int(get("create")));
  const int64_t start = Int(get("start")), end = Int(get("end"));
  if (state != v1::BAKE_STATE_QUEUED && start > 0) {
    job.start_time = FromNanos(start);
    job.elapsed_seconds = ((BakeEnded(state) && end > 0 ? end : NowNanos()) - start) * 1e-9;
  }
  if (BakeEnded(state) && end > 0) job.end_time = FromNanos(end);
  if (state == v1::BAKE_STATE_FAILED)
    job.error = absl::Status(static_cast<absl::StatusCode>(Int(get("error_code"), static_cast<int>(absl::StatusCode::kInternal))),
                             get("error"));
  if (state == v1::BAKE_STATE_CANCELLED) job.error = absl::CancelledError(get("error"));
  return JobBake(ref.name(), options, job);
}

absl::StatusOr<StartedBake> RedisBakeQueue::Start(const BakeJob& job) {
  if (stopping_) return absl::UnavailableError("server is shutting down");
  ASSIGN_OR_RETURN(Record rec, Read(job.bake_id));
  const auto state = static_cast<v1::BakeState>(Int(rec["state"]));
  // A job that succeeded is answered from the store, where its bake is gone once its rig is
  // deleted (BakeStore::DeleteForRig); then the job is queued again.
  if (!rec.empty() && rec["rig"] == job.rig_id && (state == v1::BAKE_STATE_QUEUED || state == v1::BAKE_STATE_RUNNING))
    return StartedBake{ToBake(rec, job.ref()), false};
  absl::StatusOr<v1::Bake> stored = StoredAndReadable(*store_, job.ref(), job.recipe);
  if (stored.ok()) return StartedBake{*std::move(stored), false};
  if (!absl::IsNotFound(stored.status()) && !absl::IsDataLoss(stored.status())) return stored.status();
  const std::string options = job.options.SerializeAsString(), create = std::to_string(NowNanos()),
                    max_length = std::to_string(options_.max_stream_length);
  ASSIGN_OR_RETURN(const int64_t created,
                   pool_.IntegerCommand({"EVAL", kStartScript, "2", JobKey(job.bake_id), stream_, job.rig_id, options,
                                         job.tenant, create, max_length, job.bake_id},
                                        "bake queue: add job"));
  ASSIGN_OR_RETURN(rec, Read(job.bake_id));
  return StartedBake{ToBake(rec, job.ref()), created == 1};
}

absl::StatusOr<v1::Bake> RedisBakeQueue::Get(const BakeRef& bake) {
  ASSIGN_OR_RETURN(Record rec, Read(bake.bake_id));
  if (!rec.empty() && rec["rig"] == bake.rig_id && Int(rec["state"]) != v1::BAKE_STATE_SUCCEEDED)
    return ToBake(rec, bake);
  return Stored(bake);  // stored (SUCCEEDED; gone with its rig) or NOT_FOUND
}

std::optional<v1::Bake> RedisBakeQueue::Pending(const BakeRef& bake) {
  absl::StatusOr<Record> rec = Read(bake.bake_id);
  if (!rec.ok() || rec->empty() || (*rec)["rig"] != bake.rig_id ||
      Int((*rec)["state"]) == v1::BAKE_STATE_SUCCEEDED)
    return std::nullopt;
  return ToBake(*rec, bake);
}

absl::Status RedisBakeQueue::Watch(const BakeRef& bake, const std::function<bool(const v1::Bake&)>& on_change,
                                   const std::function<bool()>& stop) {
  std::string last;
  while (true) {
    ASSIGN_OR_RETURN(Record rec, Read(bake.bake_id));
    if (rec.empty() || rec["rig"] != bake.rig_id || (last.empty() && Int(rec["state"]) == v1::BAKE_STATE_SUCCEEDED)) {
      ASSIGN_OR_RETURN(const v1::Bake stored, Stored(bake));
      on_change(stored);
      return absl::OkStatus();
    }
    std::string key = absl::StrCat(rec["state"], "|", rec["stage"], "|", rec["fraction"]);
    if (key != last) {
      last = std::move(key);
      const v1::Bake now = ToBake(rec, bake);
      if (!on_change(now) || now.done()) return absl::OkStatus();
    }
    if (stop()) return absl::CancelledError("watch stopped");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

absl::StatusOr<v1::Bake> RedisBakeQueue::Cancel(const BakeRef& bake) {
  ASSIGN_OR_RETURN(Record rec, Read(bake.bake_id));
  if (rec.empty() || rec["rig"] != bake.rig_id) return Stored(bake);
  ASSIGN_OR_RETURN(const int64_t what, pool_.IntegerCommand({"EVAL", kCancelScript, "1", JobKey(bake.bake_id),
                                                             std::to_string(NowNanos())},
                                                            "bake queue: cancel"));
  if (what == 2) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < until) {
      ASSIGN_OR_RETURN(rec, Read(bake.bake_id));
      if (BakeEnded(static_cast<v1::BakeState>(Int(rec["state"])))) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return Get(bake);
}

absl::StatusOr<std::pair<int64_t, int64_t>> RedisBakeQueue::Lengths() {
  ASSIGN_OR_RETURN(const int64_t length, pool_.IntegerCommand({"XLEN", stream_}, "bake queue: length"));
  ASSIGN_OR_RETURN(RedisReplyPtr pending, pool_.Command({"XPENDING", stream_, kGroup}, "bake queue: pending"));
  int64_t n = 0;
  if (pending->type == REDIS_REPLY_ARRAY && pending->elements > 0 && pending->element[0]->type == REDIS_REPLY_INTEGER)
    n = pending->element[0]->integer;
  return std::make_pair(length, n);
}

bool RedisBakeQueue::Persist(const std::vector<std::string>& command, const std::string& what) {
  return PersistInteger(command, what).has_value();
}

std::optional<int64_t> RedisBakeQueue::PersistInteger(const std::vector<std::string>& command,
                                                      const std::string& what) {
  std::vector<absl::string_view> args(command.begin(), command.end());
  // Retried while Redis is away (UNAVAILABLE: restarting, loading); once this process is stopping,
  // three tries (the hand-back or the end of a job that ran into the shutdown must still be
  // written, but Redis being away must not hold the shutdown). Any other refusal (OOM at
  // maxmemory, an ACL) gets 8 tries over about 6 s, then this worker gives up: it was retried for
  // ever, the worker thread held and the job shown RUNNING after its bake had ended.
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<RedisReplyPtr> r = pool_.Command(args, what);
    if (r.ok()) return (*r)->type == REDIS_REPLY_INTEGER ? static_cast<int64_t>((*r)->integer) : int64_t{1};
    if (stopping_ && attempt >= 2) return std::nullopt;
    if (!absl::IsUnavailable(r.status()) && attempt >= 7) {
      // The message names `what` already ("bake queue: end job: redis replied OOM …").
      std::printf("skinning-server bake queue: gave up after %d tries: %s\n", attempt + 1,
                  std::string(r.status().message()).c_str());
      std::fflush(stdout);
      return std::nullopt;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(1000, 50 << std::min(attempt, 5))));
  }
}

void RedisBakeQueue::WorkerLoop(int index) {
  const std::string consumer = absl::StrCat(options_.consumer, "/", index);
  const std::string lease_ms = std::to_string(options_.lease.count());
  auto next_claim = std::chrono::steady_clock::now();
  while (!stopping_) {
    // Jobs whose worker stopped renewing its lease: taken over here.
    if (std::chrono::steady_clock::now() >= next_claim) {
      next_claim = std::chrono::steady_clock::now() + options_.lease / 2;
      absl::StatusOr<RedisReplyPtr> claimed = pool_.Command(
          {"XAUTOCLAIM", stream_, kGroup, consumer, lease_ms, "0-0", "COUNT", "1"}, "bake queue: claim");
      if (claimed.ok() && (*claimed)->type == REDIS_REPLY_ARRAY && (*claimed)->elements >= 2) {
        const redisReply* entries = (*claimed)->element[1];
        for (size_t e = 0; entries->type == REDIS_REPLY_ARRAY && e < entries->elements; ++e) {
          const redisReply* entry = entries->element[e];
          if (entry->type != REDIS_REPLY_ARRAY || entry->elements < 2 || entry->element[1]->type != REDIS_REPLY_ARRAY ||
              entry->element[1]->elements < 2)
            continue;
          ++reclaimed_;
          Process(Str(entry->element[0]), Str(entry->element[1]->element[1]), consumer);
        }
      }
    }
    absl::StatusOr<RedisReplyPtr> read = pool_.Command(
        {"XREADGROUP", "GROUP", kGroup, consumer, "COUNT", "1", "BLOCK", "1000", "STREAMS", stream_, ">"},
        "bake queue: read");
    if (!read.ok()) {
      // Redis restarting (or the group gone with an empty Redis): wait, then make sure of it.
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      if (absl::StrContains(read.status().message(), "NOGROUP")) EnsureGroup().IgnoreError();
      continue;
    }
    const redisReply* r = read->get();
    if (r->type != REDIS_REPLY_ARRAY || r->elements == 0) continue;  // timed out
    const redisReply* stream = r->element[0];
    if (stream->type != REDIS_REPLY_ARRAY || stream->elements < 2) continue;
    const redisReply* entries = stream->element[1];
    for (size_t e = 0; entries->type == REDIS_REPLY_ARRAY && e < entries->elements; ++e) {
      const redisReply* entry = entries->element[e];
      if (entry->type != REDIS_REPLY_ARRAY || entry->elements < 2 || entry->element[1]->type != REDIS_REPLY_ARRAY ||
          entry->element[1]->elements < 2)
        continue;
      Process(Str(entry->element[0]), Str(entry->element[1]->element[1]), consumer);
    }
  }
}

void RedisBakeQueue::Process(const std::string& entry, const std::string& bake_id, const std::string& consumer) {
  const std::string key = JobKey(bake_id);
  auto ack = [&] {
    if (Persist({"XACK", stream_, kGroup, entry}, "bake queue: acknowledge")) {
      Persist({"XDEL", stream_, entry}, "bake queue: trim");
      ++acked_;
    }
  };
  absl::StatusOr<Record> read = Read(bake_id);
  if (!read.ok()) return;  // Redis is away: the entry stays pending and is claimed again later
  Record rec = *std::move(read);
  const auto state = static_cast<v1::BakeState>(Int(rec["state"]));
  if (rec.empty() || BakeEnded(state)) return ack();  // expired, cancelled while queued, or done already
  const std::string ttl = std::to_string(options_.record_ttl.count()), now = std::to_string(NowNanos());
  auto end = [&](v1::BakeState to, std::vector<std::string> fields) {
    std::vector<std::string> cmd = {"HSET", key, "state", std::to_string(to), "end", std::to_string(NowNanos())};
    cmd.insert(cmd.end(), fields.begin(), fields.end());
    Persist(cmd, "bake queue: end job");
    Persist({"EXPIRE", key, ttl}, "bake queue: expire job");
    ack();
  };
  if (rec["cancel"] == "1") return end(v1::BAKE_STATE_CANCELLED, {"stage", "cancelled", "error", "cancelled with CancelBake"});
  absl::StatusOr<int64_t> attempts = pool_.IntegerCommand({"HINCRBY", key, "attempts", "1"}, "bake queue: count start");
  if (!attempts.ok()) return;
  if (*attempts > options_.max_attempts)
    return end(v1::BAKE_STATE_FAILED,
               {"stage", "failed", "error_code", std::to_string(static_cast<int>(absl::StatusCode::kAborted)), "error",
                absl::StrCat("the bake was started ", *attempts - 1, " times and every worker running it stopped before "
                             "it finished (crashed or was killed)",
                             Int(rec["store_waits"]) > 0
                                 ? absl::StrCat(", or could not store its result (the store was unavailable ",
                                                Int(rec["store_waits"]), " times)")
                                 : "",
                             "; not trying again")});

  BakeJob job;
  job.rig_id = rec["rig"];
  job.bake_id = bake_id;
  job.options.ParseFromString(rec["options"]);
  job.recipe = recipes_->Find(job.options.method_case());
  job.tenant = rec["tenant"];
  job.create_time = FromNanos(Int(rec["create"]));
  job.start_time = FromNanos(Int(now));
  if (job.recipe == nullptr)
    return end(v1::BAKE_STATE_FAILED, {"stage", "failed", "error_code", "13", "error", "no recipe for the bake's method"});
  // Unique to this start: a hand-back gives the count back, so the count alone may repeat.
  const std::string run = absl::StrCat(consumer, "#", *attempts, "@", now);
  absl::StatusOr<int64_t> claimed =
      pool_.IntegerCommand({"EVAL", kClaimScript, "1", key, now, options_.consumer, run}, "bake queue: start job");
  if (!claimed.ok()) return;        // Redis is away: claimed again later
  if (*claimed == 0) return ack();  // cancelled (or ended) since it was read
  if (observer_) observer_->OnBakeTransition({job.recipe->name(), v1::BAKE_STATE_UNSPECIFIED, v1::BAKE_STATE_RUNNING, 0});
  const auto started = std::chrono::steady_clock::now();

  // The lease: renewed (the pending entry's idle time reset) and the cancel flag read, a few
  // times per lease, by a helper thread while the job runs.
  // A run that another worker took over (this one stalled past its lease) is `lost`: it stops,
  // and writes nothing more.
  std::atomic<bool> cancel{false}, done{false}, user_cancelled{false}, lost{false};
  std::mutex mu;
  std::condition_variable cv;
  std::thread heartbeat([&] {
    std::unique_lock<std::mutex> lock(mu);
    while (!done) {
      cv.wait_for(lock, std::min<std::chrono::milliseconds>(options_.lease / 4, std::chrono::milliseconds(200)));
      if (done) break;
      lock.unlock();
      absl::StatusOr<int64_t> renewed = pool_.IntegerCommand(
          {"EVAL", kRenewScript, "2", key, stream_, run, kGroup, consumer, entry}, "bake queue: renew lease");
      if (renewed.ok() && *renewed == 0) lost = cancel = true;
      absl::StatusOr<RedisReplyPtr> flag = pool_.Command({"HGET", key, "cancel"}, "bake queue: cancel flag");
      if (flag.ok() && Str(flag->get()) == "1") user_cancelled = cancel = true;
      if (stopping_) cancel = true;
      lock.lock();
    }
  });
  // The fraction never goes down, also when this start takes over from a worker that died
  // further on (the stage then says where this one is).
  double published = 0;
  (void)absl::SimpleAtod(rec["fraction"], &published);
  std::string stage = "starting";
  Progress progress(
      [&](const std::string& s, double fraction) {
        const double f = std::min(fraction, 0.999);
        if (s == stage && f < published + 0.01) return;
        stage = s;
        published = std::max(published, f);
        absl::StatusOr<int64_t> written = pool_.IntegerCommand(
            {"EVAL", kProgressScript, "1", key, run, s, absl::StrCat(published)}, "bake queue: progress");
        if (written.ok() && *written == 0) lost = cancel = true;
      },
      &cancel);
  absl::StatusOr<std::shared_ptr<const internal::v1::StoredBake>> stored = run_(job, progress);
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  heartbeat.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  // The observer (the metrics) hears of the outcome before the job record shows it, so that a
  // scrape made after a caller saw the bake end counts it.
  const auto tell = [&](v1::BakeState to) {
    if (observer_) observer_->OnBakeTransition({job.recipe->name(), v1::BAKE_STATE_RUNNING, to, seconds});
  };
  // Whether the job still names this run (a worker that stalled past its lease and was taken
  // over ends here: it neither counts nor writes an outcome).
  auto still_ours = [&] {
    if (lost) return false;
    absl::StatusOr<RedisReplyPtr> named = pool_.Command({"HGET", key, "run"}, "bake queue: run");
    return !named.ok() || Str(named->get()) == run;  // Redis away: the writes below decide
  };
  auto end_run = [&](v1::BakeState to, std::vector<std::string> fields) {
    std::vector<std::string> cmd = {"EVAL", kEndRunScript, "2", key, stream_, run, kGroup, entry, ttl,
                                    "state", std::to_string(to), "end", std::to_string(NowNanos())};
    cmd.insert(cmd.end(), fields.begin(), fields.end());
    if (PersistInteger(cmd, "bake queue: end job") == int64_t{1}) ++acked_;
  };
  auto hand_back = [&](const char* stage, bool for_the_store) {
    (void)PersistInteger({"EVAL", kHandBackScript, "1", key, run, stage, for_the_store ? "1" : "0",
                          std::to_string(kMaxStoreWaits)},
                         "bake queue: hand back");
  };
  if (!still_ours()) {
    tell(v1::BAKE_STATE_UNSPECIFIED);  // no longer running here; the other worker's to count
    std::printf(
        "skinning-server bake queue: bake %s was taken over by another worker (this one did not renew its lease for "
        "--bake_lease_ms); stopped here\n",
        bake_id.c_str());
    std::fflush(stdout);
  } else if (stored.ok()) {
    tell(v1::BAKE_STATE_SUCCEEDED);
    end_run(v1::BAKE_STATE_SUCCEEDED, {"stage", "done", "fraction", "1"});
  } else if ((absl::IsCancelled(stored.status()) || cancel) && !user_cancelled && stopping_) {
    // This process is shutting down: the job goes back to the queue; another worker claims it
    // once the lease runs out. A worker that shut down did not fail the job: its start does not
    // count against --bake_max_attempts (those are for workers that died under it).
    tell(v1::BAKE_STATE_CANCELLED);
    hand_back("waiting for another worker (the last one shut down)", false);
  } else if (absl::IsUnavailable(stored.status()) && !user_cancelled) {
    // Redis (the store) was away when the result was written: the job stays pending, goes back
    // to the queue, and is claimed again once its lease runs out. The store being away is no
    // worker dying: the start does not count (up to kMaxStoreWaits times).
    tell(v1::BAKE_STATE_QUEUED);
    hand_back("waiting to run again (the store was unavailable)", true);
  } else if (absl::IsCancelled(stored.status()) || user_cancelled) {
    tell(v1::BAKE_STATE_CANCELLED);
    end_run(v1::BAKE_STATE_CANCELLED, {"stage", "cancelled", "error", "cancelled with CancelBake"});
  } else {
    tell(v1::BAKE_STATE_FAILED);
    const std::string code = std::to_string(static_cast<int>(stored.status().code()));
    end_run(v1::BAKE_STATE_FAILED,
            {"stage", "failed", "error_code", code, "error", std::string(stored.status().message())});
  }
}

void RedisBakeQueue::Shutdown() {
  stopping_ = true;
  for (std::thread& w : workers_) w.join();
  workers_.clear();
}

}  // namespace skinning
