// Runs a real redis-server on a free loopback port for tests, and talks to it with hiredis.
#ifndef SKINNING_TESTS_SUPPORT_REDIS_PROCESS_H_
#define SKINNING_TESTS_SUPPORT_REDIS_PROCESS_H_

#include <hiredis/hiredis.h>
#include <sys/types.h>

#include <memory>
#include <string>

namespace skinning::testing {

struct RedisContextDeleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
using RedisConnection = std::unique_ptr<redisContext, RedisContextDeleter>;

struct RedisReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using RedisReply = std::unique_ptr<redisReply, RedisReplyDeleter>;

// A connection to 127.0.0.1:port, or nullptr when nothing answers there.
RedisConnection ConnectRedis(int port);

// TLS for a RedisProcess (PEM files): its tls-port serves TLS beside the plain port.
struct RedisTlsFiles {
  std::string cert_file, key_file, ca_file;
  bool auth_clients = false;  // tls-auth-clients: clients must show a certificate from ca_file
};

class RedisProcess {
 public:
  // Starts `redis-server --port N --bind 127.0.0.1 --save "" --appendonly no --daemonize no`
  // on a free port (another port is tried if N turns out to be taken) and waits until it
  // answers PING. Throws std::runtime_error, with redis-server's output, when it does not come
  // up, or when redis-server is not installed (scripts/install-deps.sh installs it).
  RedisProcess() : RedisProcess(false) {}
  // With `persistent`, --appendonly yes --appendfsync always in its own directory: Restart
  // brings back every write acknowledged before Stop.
  explicit RedisProcess(bool persistent);
  // Also serves TLS on tls_port() (--tls-port, another free port). The plain port() stays, for
  // the tests' own hiredis connections (ConnectRedis), which see the same data.
  explicit RedisProcess(const RedisTlsFiles& tls);
  ~RedisProcess();  // SIGKILL if still running

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int tls_port() const { return tls_port_; }  // 0 without TLS
  std::string tls_address() const { return "127.0.0.1:" + std::to_string(tls_port_); }

  // Sends `signal` to the server by its PID and waits for it; returns its exit status
  // (WEXITSTATUS, or 128 + signal number when killed), or -1 if it did not exit in `timeout_s`.
  int Stop(int signal, double timeout_s = 30);
  // Starts a new redis-server on the same port after Stop (empty, or with the data of before when
  // persistent). Throws if it does not come up.
  void Restart();

 private:
  // Starts redis-server on `port` (and `tls_port` with TLS) and waits for PING; false (with its
  // output in `log`) when it exits or does not answer within 10 s.
  bool Launch(int port, int tls_port, std::string* log);
  void LaunchOnFreePorts();

  std::string binary_;
  std::string dir_;  // redis-server's working directory (the append-only file when persistent)
  bool persistent_ = false;
  RedisTlsFiles tls_;
  bool with_tls_ = false;
  pid_t pid_ = -1;
  int port_ = 0;
  int tls_port_ = 0;
};

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_REDIS_PROCESS_H_
