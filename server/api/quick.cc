#include "server/api/quick.h"

#include <time.h>

namespace skinning {

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

QuickTimer::QuickTimer() : wall(std::chrono::steady_clock::now()), cpu(ThreadCpuSeconds()) {}

bool QuickTimer::Quick() const {
  // One CPU bound for both tests below: the early return is right only while it is the same.
  constexpr std::chrono::duration<double> kCpu = std::chrono::milliseconds(2);
  constexpr std::chrono::milliseconds kWall(50);
  const std::chrono::steady_clock::duration elapsed = std::chrono::steady_clock::now() - wall;
  // A thread's CPU time grows no faster than the clock, so work under the CPU bound on the clock
  // is quick without a second read of the thread's CPU clock (a system call, 1.2–1.4 µs here,
  // where the steady clock is a vDSO read of about 30 ns): most calls and frames stop here.
  if (elapsed < kCpu) return true;
  return elapsed < kWall && ThreadCpuSeconds() - cpu < kCpu.count();
}

bool QuickKinds::WasQuick(uint64_t key) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = quick_.find(key);
  return it != quick_.end() && it->second;
}

void QuickKinds::Record(uint64_t key, bool quick) {
  {
    absl::ReaderMutexLock lock(&mu_);  // most calls find what they would write: no writer lock
    if (auto it = quick_.find(key); it != quick_.end() && it->second == quick) return;
  }
  absl::MutexLock lock(&mu_);
  if (quick_.size() >= 100000) quick_.clear();  // kinds of call come and go; relearned in one call
  quick_[key] = quick;
}

}  // namespace skinning
