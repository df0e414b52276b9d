#include "server/grpc/callback_calls.h"

#include <time.h>

#include <algorithm>
#include <optional>
#include <thread>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "core/util/cpus.h"
#include "server/auth/auth.h"

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

absl::StatusOr<CallContext> AdmitGrpcCall(const CallGate& gate, grpc::ServerContextBase* ctx) {
  std::optional<absl::string_view> authorization;
  const auto& metadata = ctx->client_metadata();
  if (auto it = metadata.find(kAuthorizationMetadata); it != metadata.end())
    authorization = absl::string_view(it->second.data(), it->second.size());
  return gate.Admit(authorization, ctx->deadline(), [ctx] { return ctx->IsCancelled(); });
}

struct CallbackHost::Pool {
  explicit Pool(int threads) : pool(static_cast<std::size_t>(threads)) {}
  boost::asio::thread_pool pool;
};

namespace {
int PoolThreads(int threads) {
  if (threads > 0) return threads;
  return std::max(4, 2 * AvailableCpus());
}
}  // namespace

CallbackHost::CallbackHost(int threads, int max_sessions)
    : threads_(PoolThreads(threads)), max_sessions_(max_sessions), pool_(std::make_unique<Pool>(threads_)) {}

CallbackHost::~CallbackHost() { pool_->pool.join(); }

bool CallbackHost::TryOpen() {
  if (max_sessions_ <= 0) {
    open_.fetch_add(1);
    return true;
  }
  int n = open_.load();
  while (n < max_sessions_)
    if (open_.compare_exchange_weak(n, n + 1)) return true;
  return false;
}

void CallbackHost::Post(std::function<void()> work) { boost::asio::post(pool_->pool, std::move(work)); }

bool CallbackHost::WasQuick(uint64_t key) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = quick_.find(key);
  return it != quick_.end() && it->second;
}

void CallbackHost::RecordQuick(uint64_t key, bool quick) {
  {
    absl::ReaderMutexLock lock(&mu_);  // most calls find what they would write: no writer lock
    if (auto it = quick_.find(key); it != quick_.end() && it->second == quick) return;
  }
  absl::MutexLock lock(&mu_);
  if (quick_.size() >= 100000) quick_.clear();  // kinds of call come and go; relearned in one call
  quick_[key] = quick;
}

}  // namespace skinning
