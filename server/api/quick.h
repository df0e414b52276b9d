// Whether a piece of work was quick, and which kinds of call were quick last time: both doors
// (gRPC's callback API and the HTTP front door) run quick work on the threads that move the
// sockets' bytes and the rest on a pool, so that those threads are never held for long.
#ifndef SKINNING_SERVER_API_QUICK_H_
#define SKINNING_SERVER_API_QUICK_H_

#include <chrono>
#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace skinning {

// CPU seconds the calling thread has used.
double ThreadCpuSeconds();

// Quick: under 2 ms of CPU and 50 ms on the clock (under contention a quick frame can take long on
// the clock; a wait on the store takes no CPU). Under 2 ms on the clock is quick without reading
// the CPU clock again (CPU time cannot exceed it).
struct QuickTimer {
  QuickTimer();
  bool Quick() const;
  std::chrono::steady_clock::time_point wall;
  double cpu;
};

// Which kinds of call (a hash of what decides a call's cost) were quick last time. Thread-safe.
class QuickKinds {
 public:
  // False for a kind not seen yet.
  bool WasQuick(uint64_t key) const;
  void Record(uint64_t key, bool quick);

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, bool> quick_ ABSL_GUARDED_BY(mu_);  // bounded: cleared when large
};

}  // namespace skinning

#endif  // SKINNING_SERVER_API_QUICK_H_
