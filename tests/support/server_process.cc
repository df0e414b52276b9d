#include "tests/support/server_process.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <thread>

#include <gtest/gtest.h>

namespace skinning::testing {
namespace {

std::vector<char*> Argv(std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return argv;
}

int DecodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

std::string ClientErrorLogDir() { return BinaryPath("tests/client-errors"); }

std::string BinaryPath(const std::string& relative) {
  const char* env = std::getenv("SKINNING_BINARY_DIR");
  const std::string dir = env && *env ? env : SKINNING_BINARY_DIR;
  return dir + "/" + relative;
}

int PickFreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    throw std::runtime_error("cannot bind a loopback socket to find a free port");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

std::string MakeTempDir(const std::string& prefix) {
  static std::mt19937_64 rng(std::random_device{}());
  const auto base = std::filesystem::temp_directory_path();
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto dir = base / (prefix + "-" + std::to_string(getpid()) + "-" + std::to_string(rng() % 1000000000));
    if (std::filesystem::create_directories(dir)) return dir.string();
  }
  throw std::runtime_error("cannot create a temporary directory");
}

ServerProcess::ServerProcess(const std::string& store_dir, const std::vector<std::string>& extra_flags,
                             const std::vector<std::string>& wrapper) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  std::vector<std::string> args = {BinaryPath("server/skinning-server"), "--address=127.0.0.1:0",
                                   "--store_dir=" + store_dir, "--drain_seconds=5",
                                   "--metrics_address="};  // extra flags may turn metrics on
  args.insert(args.end(), extra_flags.begin(), extra_flags.end());
  args.insert(args.begin(), wrapper.begin(), wrapper.end());
  // Every error the server sends a client goes to a log of this test program (the path-leak
  // test reads them all), unless the caller chose a log already.
  std::string error_log;
  if (const char* env = std::getenv("SKINNING_CLIENT_ERROR_LOG"); env == nullptr || *env == '\0') {
    std::error_code ec;
    std::filesystem::create_directories(ClientErrorLogDir(), ec);
    const char* test = program_invocation_short_name;
    error_log = ClientErrorLogDir() + "/" + (test ? test : "test") + "-" + std::to_string(getpid()) + ".log";
  }
  pid_ = fork();
  if (pid_ == 0) {
    if (!error_log.empty()) setenv("SKINNING_CLIENT_ERROR_LOG", error_log.c_str(), 1);
    dup2(fds[1], STDOUT_FILENO);
    std::vector<char*> argv = Argv(args);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  stdout_fd_ = fds[0];
  // Read until the "listening on port N" line (at most 30 s).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (port_ == 0 && std::chrono::steady_clock::now() < until) {
    pollfd p{stdout_fd_, POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(stdout_fd_, buf, sizeof buf);
    if (n <= 0) break;
    output_.append(buf, n);
    const auto at = output_.find("listening on port ");
    if (at != std::string::npos) port_ = std::atoi(output_.c_str() + at + 18);
  }
  if (port_ == 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
    throw std::runtime_error("skinning-server did not start; output: " + output_);
  }
}

int ServerProcess::metrics_port() { return PortAfter("metrics on port ", &metrics_port_); }
int ServerProcess::http_port() { return PortAfter("http on port ", &http_port_); }
int ServerProcess::health_port() { return PortAfter("health on port ", &health_port_); }

int ServerProcess::PortAfter(const char* marker, int* cached) {
  const std::string kMarker = marker;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (*cached == 0) {
    const std::string out = Output();
    const auto at = out.find(kMarker);
    if (at != std::string::npos) {
      *cached = std::atoi(out.c_str() + at + kMarker.size());
      break;
    }
    if (pid_ < 0 || std::chrono::steady_clock::now() >= until) break;
    pollfd p{stdout_fd_, POLLIN, 0};
    if (poll(&p, 1, 100) > 0 && (p.revents & POLLIN) == 0) break;  // the server closed stdout
  }
  return *cached;
}

std::string ServerProcess::Output() {
  if (stdout_fd_ >= 0) {
    char buf[4096];
    int flags = fcntl(stdout_fd_, F_GETFL);
    fcntl(stdout_fd_, F_SETFL, flags | O_NONBLOCK);
    ssize_t n;
    while ((n = read(stdout_fd_, buf, sizeof buf)) > 0) output_.append(buf, n);
    fcntl(stdout_fd_, F_SETFL, flags);
  }
  return output_;
}

int ServerProcess::Stop(int signal, double timeout_s) {
  if (pid_ < 0) return -1;
  kill(pid_, signal);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  while (std::chrono::steady_clock::now() < until) {
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      Output();
      return DecodeStatus(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

CommandResult RunCommand(const std::vector<std::string>& command) {
  CommandResult result;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return result;
  std::vector<std::string> args = command;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    std::vector<char*> argv = Argv(args);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) result.output.append(buf, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = DecodeStatus(status);
  return result;
}

}  // namespace skinning::testing
