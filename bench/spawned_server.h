// The skinning-server binary (or redis-server) as a child process of a benchmark, on a free
// loopback port, stopped with SIGTERM when destroyed.
#ifndef SKINNING_BENCH_SPAWNED_SERVER_H_
#define SKINNING_BENCH_SPAWNED_SERVER_H_

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace skinning {

class SpawnedServer {
 public:
  ~SpawnedServer() { Stop(); }

  // Starts skinning-server `binary` on 127.0.0.1:0 with a temporary store, the HTTP front door
  // on another free port, and `extra_flags`; waits for its "listening on port" and "http on
  // port" lines.
  absl::Status Start(const std::string& binary, const std::vector<std::string>& extra_flags) {
    store_ = (std::filesystem::temp_directory_path() /
              absl::StrCat("skinning-bench-", getpid(), "-", reinterpret_cast<uintptr_t>(this)))
                 .string();
    std::filesystem::create_directories(store_);
    std::vector<std::string> args = {binary, "--address=127.0.0.1:0", "--store_dir=" + store_, "--metrics_address=",
                                     "--http_address=127.0.0.1:0", "--web_dir=", "--drain_seconds=1"};
    args.insert(args.end(), extra_flags.begin(), extra_flags.end());
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError("pipe failed");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDOUT_FILENO);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(fds[1]);
    std::string out;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while ((port_ == 0 || http_port_ == 0) && std::chrono::steady_clock::now() < until) {
      pollfd p{fds[0], POLLIN, 0};
      if (poll(&p, 1, 200) <= 0) continue;
      char buf[4096];
      const ssize_t n = read(fds[0], buf, sizeof buf);
      if (n <= 0) break;
      out.append(buf, n);
      const size_t at = out.find("listening on port ");
      if (at != std::string::npos) port_ = std::atoi(out.c_str() + at + 18);
      const size_t http = out.find("http on port ");
      if (http != std::string::npos) http_port_ = std::atoi(out.c_str() + http + 13);
    }
    stdout_fd_ = fds[0];
    if (port_ == 0 || http_port_ == 0) return absl::UnavailableError(absl::StrCat(binary, " did not start: ", out));
    return absl::OkStatus();
  }

  void Stop() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    if (stdout_fd_ >= 0) close(stdout_fd_);
    stdout_fd_ = -1;
    if (!store_.empty()) std::filesystem::remove_all(store_);
    store_.clear();
  }

  int port() const { return port_; }
  int http_port() const { return http_port_; }
  pid_t pid() const { return pid_; }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  int http_port_ = 0;
  int stdout_fd_ = -1;
  std::string store_;
};

}  // namespace skinning

#endif  // SKINNING_BENCH_SPAWNED_SERVER_H_
