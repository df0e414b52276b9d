// Pooled hiredis connections to one Redis, for the blob store and the bake queue: one command at
// a time per connection, errors as statuses (a lost connection is UNAVAILABLE; a command taken on
// a pooled connection that Redis closed since, e.g. after a restart, is run once more on a fresh
// one). With credentials.tls, every connection runs TLS (redis_tls.h).
#ifndef SKINNING_SERVER_STORE_REDIS_POOL_H_
#define SKINNING_SERVER_STORE_REDIS_POOL_H_

#include <hiredis/hiredis.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/store/redis_credentials.h"
#include "server/store/redis_tls.h"

namespace skinning {

struct RedisReplyDeleter {
  void operator()(redisReply* reply) const { freeReplyObject(reply); }
};
using RedisReplyPtr = std::unique_ptr<redisReply, RedisReplyDeleter>;

class RedisPool {
 public:
  RedisPool(std::string host, int port, RedisCredentials credentials = {})
      : host_(std::move(host)), port_(port), credentials_(std::move(credentials)) {}

  // One command (every argument binary-safe). `what` starts every error message; no message names
  // the endpoint (errors reach clients, and Redis's address is the cluster's business: callers
  // that speak to the operator, such as the checks at startup, add it). An error reply is INTERNAL (UNAVAILABLE for Redis's transient states, RESOURCE_EXHAUSTED for OOM). Only use
  // commands that are safe to repeat: a command whose connection broke may have run.
  absl::StatusOr<RedisReplyPtr> Command(const std::vector<absl::string_view>& args, const std::string& what);
  // Command, expecting an integer reply.
  absl::StatusOr<int64_t> IntegerCommand(const std::vector<absl::string_view>& args, const std::string& what);

  // Commands that failed so far: Redis unreachable, or an error reply (but the expected BUSYGROUP).
  int64_t failures() const { return failures_.load(std::memory_order_relaxed); }

  std::string Endpoint() const { return host_ + ":" + std::to_string(port_); }
  // `status` with the endpoint in front, for messages to the operator (startup, the server's log).
  absl::Status ForOperator(const absl::Status& status) const;

 private:
  struct ContextDeleter {
    void operator()(redisContext* context) const { redisFree(context); }
  };
  // One connection: hiredis's context (the socket with its timeouts, the reply parser, and the
  // I/O when plain) and the TLS session over its socket (null when plain), declared after it so
  // that it goes before the socket closes.
  struct Link {
    std::unique_ptr<redisContext, ContextDeleter> context;
    SslPtr ssl;
  };
  using Connection = std::unique_ptr<Link>;
  absl::StatusOr<Connection> Connect();

  const std::string host_;
  const int port_;
  const RedisCredentials credentials_;
  std::mutex mu_;
  std::vector<Connection> idle_;  // guarded by mu_
  std::atomic<int64_t> failures_{0};
};

// Ignores SIGPIPE when its action is the default (a write to a connection Redis closed would
// otherwise kill the process instead of failing with UNAVAILABLE).
void IgnoreSigpipeForRedis();

// Whether `status` says that Redis refused this server (NOAUTH, WRONGPASS, NOPERM) or that no TLS
// session came about with a Redis that answered (a certificate not trusted, not TLS there, no
// client certificate): UNAVAILABLE to callers, who can only retry, but not worth waiting for at
// start (the operator must mend it).
bool IsStoreRefusal(const absl::Status& status);

}  // namespace skinning

#endif  // SKINNING_SERVER_STORE_REDIS_POOL_H_
