#include "server/grpc/session_reactor.h"

#include <time.h>

#include <algorithm>
#include <optional>
#include <thread>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "server/auth/auth.h"

namespace skinning {

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

absl::StatusOr<CallContext> AdmitGrpcCall(const CallGate& gate, grpc::ServerContextBase* ctx) {
  std::optional<absl::string_view> authorization;
  const auto& metadata = ctx->client_metadata();
  if (auto it = metadata.find(kAuthorizationMetadata); it != metadata.end())
    authorization = absl::string_view(it->second.data(), it->second.size());
  return gate.Admit(authorization, ctx->deadline(), [ctx] { return ctx->IsCancelled(); });
}

struct SessionHost::Pool {
  explicit Pool(int threads) : pool(static_cast<std::size_t>(threads)) {}
  boost::asio::thread_pool pool;
};

namespace {
int StepThreads(int threads) {
  if (threads > 0) return threads;
  return std::max(4, 2 * static_cast<int>(std::thread::hardware_concurrency()));
}
}  // namespace

SessionHost::SessionHost(int threads, int max_sessions)
    : threads_(StepThreads(threads)), max_sessions_(max_sessions), pool_(std::make_unique<Pool>(threads_)) {}

SessionHost::~SessionHost() { pool_->pool.join(); }

bool SessionHost::TryOpen() {
  if (max_sessions_ <= 0) {
    open_.fetch_add(1);
    return true;
  }
  int n = open_.load();
  while (n < max_sessions_)
    if (open_.compare_exchange_weak(n, n + 1)) return true;
  return false;
}

void SessionHost::Post(std::function<void()> step) { boost::asio::post(pool_->pool, std::move(step)); }

}  // namespace skinning
