#include "tests/support/redis_process.h"

#include "tests/support/data.h"
#include "tests/support/server_process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "tests/support/server_process.h"

namespace skinning::testing {
namespace {

// redis-server on PATH (or in the usual places), or "" when it is not installed.
std::string FindRedisServer() {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) dirs = absl::StrSplit(path, ':', absl::SkipEmpty());
  dirs.push_back("/usr/bin");
  dirs.push_back("/usr/local/bin");
  for (const std::string& dir : dirs) {
    const std::string candidate = dir + "/redis-server";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}


int DecodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Whether the redis-server with process id `pid` answers PING on `port` (and not another one
// that had the port already).
bool AnswersPing(int port, pid_t pid) {
  RedisConnection c = ConnectRedis(port);
  if (!c) return false;
  RedisReply pong(static_cast<redisReply*>(redisCommand(c.get(), "PING")));
  if (!pong || pong->type != REDIS_REPLY_STATUS || std::string(pong->str, pong->len) != "PONG")
    return false;
  RedisReply info(static_cast<redisReply*>(redisCommand(c.get(), "INFO server")));
  if (!info || info->type != REDIS_REPLY_STRING) return false;
  const std::string text(info->str, info->len);
  return text.find("process_id:" + std::to_string(pid) + "\r\n") != std::string::npos;
}

}  // namespace

RedisConnection ConnectRedis(int port) {
  RedisConnection c(redisConnectWithTimeout("127.0.0.1", port, timeval{1, 0}));
  if (!c || c->err) return nullptr;
  redisSetTimeout(c.get(), timeval{60, 0});
  return c;
}

RedisProcess::RedisProcess(bool persistent) : persistent_(persistent) { LaunchOnFreePorts(); }

RedisProcess::RedisProcess(const RedisTlsFiles& tls) : tls_(tls), with_tls_(true) { LaunchOnFreePorts(); }

void RedisProcess::LaunchOnFreePorts() {
  binary_ = FindRedisServer();
  if (binary_.empty())
    throw std::runtime_error(
        "redis-server is not installed (not on PATH, /usr/bin or /usr/local/bin); "
        "scripts/install-deps.sh "
        "installs it");
  dir_ = MakeTempDir("redis");
  std::string log;
  for (int attempt = 0; attempt < 10; ++attempt) {
    const int port = PickFreePort();
    int tls_port = 0;
    while (with_tls_ && (tls_port == 0 || tls_port == port)) tls_port = PickFreePort();
    if (Launch(port, tls_port, &log)) return;
  }
  throw std::runtime_error("redis-server did not start after 10 attempts; last output:\n" + log);
}

bool RedisProcess::Launch(int port, int tls_port, std::string* log) {
  const std::string log_path = dir_ + "/redis-" + std::to_string(port) + ".log";
  std::vector<std::string> args = {
      binary_,        "--port", std::to_string(port), "--bind", "127.0.0.1", "--save", "",
      "--appendonly", persistent_ ? "yes" : "no",     "--daemonize",        "no",     "--dir",     dir_};
  if (persistent_) args.insert(args.end(), {"--appendfsync", "always"});
  if (with_tls_)
    args.insert(args.end(), {"--tls-port", std::to_string(tls_port), "--tls-cert-file", tls_.cert_file,
                             "--tls-key-file", tls_.key_file, "--tls-ca-cert-file", tls_.ca_file,
                             "--tls-auth-clients", tls_.auth_clients ? "yes" : "no"});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the test binary
    const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  if (pid < 0) throw std::runtime_error("fork failed");
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < until) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {  // exited: most likely the port was taken
      *log = FileBytes(log_path);
      return false;
    }
    if (AnswersPing(port, pid)) {
      pid_ = pid;
      port_ = port;
      tls_port_ = tls_port;
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  *log = FileBytes(log_path);
  return false;
}

int RedisProcess::Stop(int signal, double timeout_s) {
  if (pid_ < 0) return -1;
  kill(pid_, signal);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < until) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return DecodeStatus(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

void RedisProcess::Restart() {
  if (pid_ > 0) throw std::runtime_error("RedisProcess::Restart: redis-server is still running");
  std::string log;
  // The old server's socket may linger for a moment; retry the same port for a few seconds.
  for (int attempt = 0; attempt < 20; ++attempt) {
    if (Launch(port_, tls_port_, &log)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  throw std::runtime_error("redis-server did not restart on port " + std::to_string(port_) +
                           "; output:\n" + log);
}

RedisProcess::~RedisProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

}  // namespace skinning::testing
