#include "server/grpc/callback_calls.h"

#include <algorithm>
#include <optional>
#include <thread>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "core/util/cpus.h"
#include "server/auth/auth.h"

namespace skinning {

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

}  // namespace skinning
