// Bakes as jobs: the interface the services use to start, watch and cancel them. A queue finds a
// bake queued, running or stored before queueing it again (bakes are content-addressed), and a
// bake is stored before it is reported done. LocalBakeQueue (this process's worker pool) is the
// implementation today; a queue shared through Redis can implement the same interface.
#ifndef SKINNING_SERVER_BAKE_BAKE_QUEUE_H_
#define SKINNING_SERVER_BAKE_BAKE_QUEUE_H_

#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "google/protobuf/timestamp.pb.h"
#include "absl/status/statusor.h"
#include "server/bake/recipe.h"
#include "server/names.h"
#include "skinning/v1/bake.pb.h"

namespace skinning {

// What to bake.
struct BakeJob {
  std::string rig_id;
  std::string bake_id;              // BakeId(rig_id, options)
  v1::BakeOptions options;          // normalized (NormalizeBakeOptions)
  const Recipe* recipe = nullptr;   // the options' method
  std::string tenant;               // who started it ("" with authentication off)
  google::protobuf::Timestamp create_time;  // when it was queued (set by the queue)
  google::protobuf::Timestamp start_time;   // when a worker began it (set by the queue)

  BakeRef ref() const { return BakeRef{rig_id, bake_id}; }
};

struct StartedBake {
  v1::Bake bake;
  bool created = false;  // this call queued it
};

// A job's change of state. `from` is BAKE_STATE_UNSPECIFIED for a job just queued; `to` is
// BAKE_STATE_UNSPECIFIED for a job that leaves its state without an outcome this process counts
// (another worker or server computed it); `run_seconds` is the time since the job started
// running when it ends after running, else 0.
struct BakeTransition {
  std::string method;  // the recipe's name, e.g. "bbw"
  v1::BakeState from = v1::BAKE_STATE_UNSPECIFIED;
  v1::BakeState to = v1::BAKE_STATE_UNSPECIFIED;
  double run_seconds = 0.0;
};

// Watches bake jobs (for metrics). Called with the queue's lock held: be quick, do not call back.
// A job's end is told before any caller can see it (in Get or Watch), so that metrics read after
// a caller saw a bake end count it.
class BakeObserver {
 public:
  virtual ~BakeObserver() = default;
  virtual void OnBakeTransition(const BakeTransition& transition) = 0;
};

class BakeQueue {
 public:
  virtual ~BakeQueue() = default;

  // The bake of `job`: found queued, running or stored (created = false), or queued now.
  // RESOURCE_EXHAUSTED when the queue is full, UNAVAILABLE while shutting down.
  virtual absl::StatusOr<StartedBake> Start(const BakeJob& job) = 0;
  // The bake's state: its job's, else the stored bake's (from the stored header only).
  // NOT_FOUND when it is neither queued, running, ended here nor stored.
  virtual absl::StatusOr<v1::Bake> Get(const BakeRef& bake) = 0;
  // The state of the bake's job while its result cannot be used: queued, running, failed or
  // cancelled. nullopt when no such job is known (the bake is stored, or was never started).
  virtual std::optional<v1::Bake> Pending(const BakeRef& bake) = 0;
  // Whether Pending answers from memory (a local queue) rather than from the shared store.
  virtual bool PendingFromMemory() const { return true; }
  // Calls on_change with the current state, then after every change, until the bake is done,
  // on_change returns false, or stop() returns true (polled every 100 ms; CANCELLED then).
  virtual absl::Status Watch(const BakeRef& bake, const std::function<bool(const v1::Bake&)>& on_change,
                             const std::function<bool()>& stop) = 0;
  // Cancels a queued or running bake and waits (up to 5 s) for it to stop; returns its state. A
  // finished bake is returned unchanged; NOT_FOUND as Get.
  virtual absl::StatusOr<v1::Bake> Cancel(const BakeRef& bake) = 0;
  // Cancels queued and running bakes (nothing half-done is stored) and stops the workers.
  virtual void Shutdown() = 0;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_BAKE_BAKE_QUEUE_H_
