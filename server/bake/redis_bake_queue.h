// Bakes queued across replicas in Redis (--redis): a Redis Stream of job ids read by a consumer
// group, one hash per job with its state and progress. StartBake on any replica adds a job once
// (deduplicated by bake id), any replica's workers take jobs with XREADGROUP and acknowledge them
// once the result is stored; a running job's worker renews its lease (the pending entry's idle
// time) while it works, and a job whose lease ran out (its worker died) is claimed by another
// worker with XAUTOCLAIM and run again, FAILED after max_attempts starts. Every replica reads
// state and progress from the job's hash, so Get/Watch/Cancel work from anywhere; cancelling sets
// a flag the running worker reads at its next check.
//
// Keys (after the prefix): bakequeue:stream (the stream, group "bakers"), bakequeue:job:<bake id>
// (the hash; it expires record_ttl after the job ends).
#ifndef SKINNING_SERVER_BAKE_REDIS_BAKE_QUEUE_H_
#define SKINNING_SERVER_BAKE_REDIS_BAKE_QUEUE_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "server/bake/bake_queue.h"
#include "server/bake/bake_store.h"
#include "server/bake/local_bake_queue.h"
#include "server/bake/recipe.h"
#include "server/store/redis_credentials.h"
#include "server/store/redis_pool.h"

namespace skinning {

struct RedisBakeQueueOptions {
  std::string host;
  int port = 6379;
  std::string prefix = "skinning:";
  RedisCredentials credentials;  // AUTH on every connection (none when the password is empty)
  int workers = 1;  // bakes computed at once by this process; 0 = it only enqueues (role api)
  std::string consumer;  // this process's name in the group; empty = hostname-pid
  // A running job whose worker has not renewed its lease for this long is taken by another.
  std::chrono::milliseconds lease{10000};
  int max_attempts = 3;                   // starts of one job before it ends FAILED
  int64_t max_stream_length = 100000;     // the stream is trimmed to about this many entries
  std::chrono::seconds record_ttl{86400};  // how long an ended job's state is kept
};

// Counts for metrics (this process's).
struct RedisBakeQueueCounts {
  int64_t reclaimed = 0;  // jobs this process's workers took over from a dead worker
  int64_t acked = 0;      // jobs this process's workers ended and acknowledged
  int64_t store_errors = 0;  // the queue's Redis commands that failed (unreachable, or an error reply)
};

class RedisBakeQueue final : public BakeQueue {
 public:
  // Connects, creates the consumer group when missing, starts the workers. UNAVAILABLE when Redis
  // does not answer. Everything passed must outlive the queue.
  static absl::StatusOr<std::unique_ptr<RedisBakeQueue>> Open(BakeStore* store, const RecipeRegistry* recipes,
                                                              BakeRunFunction run, RedisBakeQueueOptions options,
                                                              BakeObserver* observer = nullptr);
  ~RedisBakeQueue() override;  // Shutdown()

  absl::StatusOr<StartedBake> Start(const BakeJob& job) override;
  absl::StatusOr<v1::Bake> Get(const BakeRef& bake) override;
  std::optional<v1::Bake> Pending(const BakeRef& bake) override;
  bool PendingFromMemory() const override { return false; }  // the job record is in Redis
  absl::Status Watch(const BakeRef& bake, const std::function<bool(const v1::Bake&)>& on_change,
                     const std::function<bool()>& stop) override;
  absl::StatusOr<v1::Bake> Cancel(const BakeRef& bake) override;
  // Stops the workers; a job running here is left to another worker (its lease runs out).
  void Shutdown() override;

  // Entries in the stream, and delivered but not yet acknowledged ones (all replicas).
  absl::StatusOr<std::pair<int64_t, int64_t>> Lengths();
  RedisBakeQueueCounts counts() const { return {reclaimed_.load(), acked_.load(), pool_.failures()}; }

 private:
  using Record = absl::flat_hash_map<std::string, std::string>;
  RedisBakeQueue(BakeStore* store, const RecipeRegistry* recipes, BakeRunFunction run, RedisBakeQueueOptions options,
                 BakeObserver* observer);
  std::string JobKey(const std::string& bake_id) const { return options_.prefix + "bakequeue:job:" + bake_id; }
  absl::StatusOr<Record> Read(const std::string& bake_id);
  absl::Status EnsureGroup();
  v1::Bake ToBake(const Record& r, const BakeRef& ref);
  absl::StatusOr<v1::Bake> Stored(const BakeRef& bake);
  void WorkerLoop(int index);
  // Runs the job of stream entry `entry` as `consumer` (which holds the entry and renews its
  // lease); acknowledges it unless this process is stopping.
  void Process(const std::string& entry, const std::string& bake_id, const std::string& consumer);
  // Repeats `command` while Redis is away until it succeeds or the queue stops (a few tries for
  // other errors); false when it did not succeed.
  bool Persist(const std::vector<std::string>& command, const std::string& what);
  // Persist for a command that answers an integer: the integer, or nothing when it did not succeed.
  std::optional<int64_t> PersistInteger(const std::vector<std::string>& command, const std::string& what);

  BakeStore* store_;
  const RecipeRegistry* recipes_;
  const BakeRunFunction run_;
  const RedisBakeQueueOptions options_;
  BakeObserver* const observer_;
  const std::string stream_;
  RedisPool pool_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> reclaimed_{0}, acked_{0};
  std::vector<std::thread> workers_;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_BAKE_REDIS_BAKE_QUEUE_H_
