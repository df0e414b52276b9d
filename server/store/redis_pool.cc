#include "server/store/redis_pool.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <sys/time.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "server/store/store_log.h"

namespace skinning {
namespace {

// Idle connections kept for reuse; calls beyond this many at once open (and then close) more.
constexpr size_t kMaxIdleConnections = 8;
constexpr timeval kConnectTimeout = {2, 0};
// How long one read or write on the socket may wait (hiredis sets it as SO_RCVTIMEO/SO_SNDTIMEO,
// so a 100 MB value that keeps flowing is not cut): a Redis that answers nothing for this long
// (stopped, or its host gone without a reset) is unreachable, and the call gets UNAVAILABLE well
// within a client's deadline instead of holding a thread for 30 s.
constexpr timeval kCommandTimeout = {5, 0};

constexpr char kRefusedThisServer[] = "the shared store (redis) refused this server";
constexpr char kNoTlsSession[] = "no TLS session with the shared store (redis)";

// The first word of a Redis error reply ("NOAUTH", "OOM", "ERR").
absl::string_view ReplyKind(absl::string_view error) { return error.substr(0, error.find(' ')); }

// An error reply from Redis → a status. Transient server states are UNAVAILABLE (retryable), and
// so are the refusals of this server that its operator must mend (a Redis that now asks for a
// password, or whose ACL refuses a command: the caller can only retry later; the log says what
// to mend). Every failure but the expected BUSYGROUP is logged.
absl::Status ErrorReplyStatus(const std::string& what, absl::string_view error) {
  const std::string message = absl::StrCat(what, ": redis replied ", error);
  // Expected in normal operation: the consumer group exists already.
  if (absl::StartsWith(error, "BUSYGROUP")) return absl::AlreadyExistsError(message);
  absl::Status status;
  std::string hint;
  if (absl::StartsWith(error, "NOAUTH") || absl::StartsWith(error, "WRONGPASS") || absl::StartsWith(error, "NOPERM")) {
    status = absl::UnavailableError(absl::StrCat(what, ": ", kRefusedThisServer));
    hint = absl::StrCat(" (redis replied ", error, "; see --redis_password_file and --redis_user)");
    LogStoreFailure(ReplyKind(error), status, hint);
    return status;
  }
  status = absl::InternalError(message);
  for (const char* transient : {"LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "READONLY", "ERR max number of clients"}) {
    if (absl::StartsWith(error, transient)) status = absl::UnavailableError(message);
  }
  if (absl::StartsWith(error, "OOM")) status = absl::ResourceExhaustedError(message);
  LogStoreFailure(ReplyKind(error), status);
  return status;
}

// Why an exchange failed: the message, and whether it was the command timeout.
struct ExchangeFailure {
  std::string error;
  bool timed_out = false;
};

// A failed SSL_read/SSL_write (return value r) described; errno as the call left it.
void DescribeTlsFailure(SSL* ssl, int r, ExchangeFailure* failure) {
  const int saved_errno = errno;
  const int kind = SSL_get_error(ssl, r);
  const std::string reason = TakeOpensslError();
  if (kind == SSL_ERROR_WANT_READ || kind == SSL_ERROR_WANT_WRITE ||
      (kind == SSL_ERROR_SYSCALL && (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK))) {
    failure->timed_out = true;
    failure->error = "timed out";
  } else if (kind == SSL_ERROR_ZERO_RETURN || (kind == SSL_ERROR_SYSCALL && saved_errno == 0)) {
    failure->error = "Redis closed the connection";
  } else if (kind == SSL_ERROR_SYSCALL) {
    failure->error = strerror(saved_errno);
  } else {
    failure->error = absl::StrCat("TLS: ", reason.empty() ? "protocol error" : reason);
  }
}

// Sends one command (binary-safe arguments) and waits for its reply; null, with *failure set, when
// the connection failed. Plain: hiredis does it all. TLS: hiredis formats the command and parses
// the reply; the bytes go through the TLS session.
RedisReplyPtr SendCommand(redisContext* c, SSL* ssl, const std::vector<absl::string_view>& args,
                          ExchangeFailure* failure) {
  std::vector<const char*> argv;
  std::vector<size_t> argv_len;
  for (absl::string_view a : args) {
    argv.push_back(a.data());
    argv_len.push_back(a.size());
  }
  if (ssl == nullptr) {
    errno = 0;
    RedisReplyPtr reply(
        static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), argv_len.data())));
    const int saved_errno = errno;
    if (reply != nullptr && c->err == 0) return reply;
    failure->timed_out = c->err == REDIS_ERR_IO && (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK);
    failure->error = c->errstr[0] ? c->errstr : "connection failed";
    return nullptr;
  }
  char* command = nullptr;
  const int length = redisFormatCommandArgv(&command, static_cast<int>(argv.size()), argv.data(), argv_len.data());
  if (length < 0) {
    failure->error = "cannot format the command (out of memory)";
    return nullptr;
  }
  const std::unique_ptr<char, void (*)(char*)> owned(command, redisFreeCommand);
  ERR_clear_error();
  for (int sent = 0; sent < length;) {
    errno = 0;
    const int n = SSL_write(ssl, command + sent, length - sent);
    if (n <= 0) {
      DescribeTlsFailure(ssl, n, failure);
      return nullptr;
    }
    sent += n;
  }
  char buffer[16 * 1024];
  for (;;) {
    void* reply = nullptr;
    if (redisReaderGetReply(c->reader, &reply) != REDIS_OK) {
      failure->error = absl::StrCat("bad reply: ", c->reader->errstr);
      return nullptr;
    }
    if (reply != nullptr) return RedisReplyPtr(static_cast<redisReply*>(reply));
    errno = 0;
    const int n = SSL_read(ssl, buffer, sizeof buffer);
    if (n <= 0) {
      DescribeTlsFailure(ssl, n, failure);
      return nullptr;
    }
    if (redisReaderFeed(c->reader, buffer, static_cast<size_t>(n)) != REDIS_OK) {
      failure->error = "cannot buffer the reply (out of memory)";
      return nullptr;
    }
  }
}

}  // namespace

absl::StatusOr<RedisPool::Connection> RedisPool::Connect() {
  auto link = std::make_unique<Link>();
  link->context.reset(redisConnectWithTimeout(host_.c_str(), port_, kConnectTimeout));
  redisContext* c = link->context.get();
  if (c == nullptr) return absl::ResourceExhaustedError("cannot allocate a redis connection");
  if (c->err) return absl::UnavailableError(absl::StrCat("cannot connect to the shared store (redis): ", c->errstr));
  if (redisSetTimeout(c, kCommandTimeout) != REDIS_OK || redisEnableKeepAlive(c) != REDIS_OK)
    return absl::UnavailableError(absl::StrCat("cannot configure the connection to the shared store (redis): ", c->errstr));
  if (credentials_.tls != nullptr) {
    std::string error;
    bool untrusted = false;
    link->ssl.reset(credentials_.tls->Handshake(c->fd, host_, &error, &untrusted));
    if (link->ssl == nullptr) {
      if (!untrusted)
        return absl::UnavailableError(absl::StrCat("the shared store (redis) is unreachable: ", error));
      return absl::UnavailableError(absl::StrCat(kNoTlsSession, ": ", error));
    }
  }
  // The first command: AUTH when there is a password, else a PING with TLS. With TLS 1.3 a Redis
  // that wants a client certificate (tls-auth-clients) says so only after the handshake, at the
  // first read, so this exchange tells a refused session from a working one.
  std::vector<absl::string_view> first;
  if (!credentials_.password.empty()) {
    first = {"AUTH"};
    if (!credentials_.user.empty()) first.push_back(credentials_.user);
    first.push_back(credentials_.password);
  } else if (link->ssl != nullptr) {
    first = {"PING"};
  }
  if (first.empty()) return link;
  ExchangeFailure failure;
  RedisReplyPtr reply = SendCommand(c, link->ssl.get(), first, &failure);
  if (reply == nullptr) {
    // A TLS session ended at once (an alert, or a reset that came before the alert) is taken as
    // refused: a Redis that went down would not have finished the handshake a moment before.
    if (link->ssl != nullptr && !failure.timed_out)
      return absl::UnavailableError(absl::StrCat(kNoTlsSession, ": it ended the session: ", failure.error,
                                                 " (does it ask for a client certificate? see --redis_tls_cert_file)"));
    return absl::UnavailableError(absl::StrCat(
        "the shared store (redis) is unreachable: ",
        link->ssl != nullptr ? absl::StrCat("no answer within ", kCommandTimeout.tv_sec, " s") : failure.error));
  }
  // The reply to AUTH names neither user nor password; a refusal is the operator's to fix, not
  // transient.
  if (!credentials_.password.empty() && reply->type == REDIS_REPLY_ERROR) {
    // UNAVAILABLE to callers (they can only retry); not waited for at start (IsStoreRefusal).
    absl::Status refused = absl::UnavailableError(absl::StrCat(
        kRefusedThisServer, ": it refused our credentials: ", absl::string_view(reply->str, reply->len)));
    LogStoreFailure("credentials", refused, " (see --redis_password_file and --redis_user)");
    return refused;
  }
  return link;
}

absl::StatusOr<RedisReplyPtr> RedisPool::Command(const std::vector<absl::string_view>& args,
                                                 const std::string& what) {
  for (int attempt = 0;; ++attempt) {
    Connection c;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!idle_.empty()) {
        c = std::move(idle_.back());
        idle_.pop_back();
      }
    }
    const bool reused = c != nullptr;
    if (!reused) {
      absl::StatusOr<Connection> fresh = Connect();
      if (!fresh.ok()) {
        absl::Status failed(fresh.status().code(), absl::StrCat(what, ": ", fresh.status().message()));
        LogStoreFailure("connect", failed);
        failures_.fetch_add(1, std::memory_order_relaxed);
        return failed;
      }
      c = *std::move(fresh);
    }
    ExchangeFailure failure;
    RedisReplyPtr reply = SendCommand(c->context.get(), c->ssl.get(), args, &failure);
    if (reply == nullptr) {
      const bool timed_out = failure.timed_out;
      const std::string error =
          timed_out ? absl::StrCat("no answer within ", kCommandTimeout.tv_sec, " s") : failure.error;
      c.reset();
      if (reused && !timed_out && attempt == 0) {
        std::lock_guard<std::mutex> lock(mu_);
        idle_.clear();
        continue;
      }
      absl::Status unreachable =
          absl::UnavailableError(absl::StrCat(what, ": the shared store (redis) is unreachable: ", error));
      LogStoreFailure("unreachable", unreachable);
      failures_.fetch_add(1, std::memory_order_relaxed);
      return unreachable;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (idle_.size() < kMaxIdleConnections) idle_.push_back(std::move(c));
    }
    if (reply->type == REDIS_REPLY_ERROR) {
      absl::Status status = ErrorReplyStatus(what, absl::string_view(reply->str, reply->len));
      if (!absl::IsAlreadyExists(status)) failures_.fetch_add(1, std::memory_order_relaxed);  // not BUSYGROUP
      return status;
    }
    return reply;
  }
}

absl::StatusOr<int64_t> RedisPool::IntegerCommand(const std::vector<absl::string_view>& args, const std::string& what) {
  ASSIGN_OR_RETURN(RedisReplyPtr reply, Command(args, what));
  if (reply->type != REDIS_REPLY_INTEGER)
    return absl::InternalError(absl::StrCat(what, ": unexpected redis reply type ", reply->type));
  return static_cast<int64_t>(reply->integer);
}

absl::Status RedisPool::ForOperator(const absl::Status& status) const {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat("redis at ", Endpoint(), ": ", status.message()));
}

bool IsStoreRefusal(const absl::Status& status) {
  return absl::IsUnavailable(status) && (absl::StrContains(status.message(), kRefusedThisServer) ||
                                         absl::StrContains(status.message(), kNoTlsSession));
}

void IgnoreSigpipeForRedis() {
  struct sigaction current;
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
}

}  // namespace skinning
