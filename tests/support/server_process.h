// Runs the real skinning-server binary on a loopback port for end-to-end tests.
#ifndef SKINNING_TESTS_SUPPORT_SERVER_PROCESS_H_
#define SKINNING_TESTS_SUPPORT_SERVER_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace skinning::testing {

// Path of a binary built by this project, e.g. BinaryPath("server/skinning-server").
std::string BinaryPath(const std::string& relative);

// Where spawned servers log the errors they send to clients (SKINNING_CLIENT_ERROR_LOG, one file
// per test process): build/tests/client-errors. The path-leak test (tests/leak) reads them.
std::string ClientErrorLogDir();

// A loopback port the kernel says is free right now (another process may still take it before
// the caller binds it).
int PickFreePort();

// A fresh empty directory under the test's temporary directory.
std::string MakeTempDir(const std::string& prefix);

class ServerProcess {
 public:
  // Starts skinning-server on 127.0.0.1 with a free port (it prints the port; we read it) and
  // the given store directory and extra flags. Aborts the test binary if it does not come up.
  // The metrics endpoint is off unless `extra_flags` sets --metrics_address.
  // `wrapper`, when given, is the command (absolute path first) that runs the server: the
  // server's argv is appended to it (e.g. unshare … sh -c '…; exec "$@"').
  ServerProcess(const std::string& store_dir, const std::vector<std::string>& extra_flags = {},
                const std::vector<std::string>& wrapper = {});
  ~ServerProcess();  // SIGKILL if still running

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // The metrics endpoint's port, read from the "metrics on port N" line (waiting up to 10 s
  // for it); 0 when the server does not print one.
  int metrics_port();
  // The HTTP front door's port ("http on port N"; the server runs with --http_address), the
  // same way; 0 when it is off.
  int http_port();
  // The plaintext health port ("health on port N"; the server runs with --health_address), the
  // same way; 0 when it is off.
  int health_port();

  // Sends `signal` and waits for the process; returns its exit status (WEXITSTATUS, or 128 +
  // signal number when killed by a signal), or -1 if it did not exit within `timeout_s`.
  int Stop(int signal, double timeout_s = 30);
  // Everything the server printed on stdout so far (after Stop: all of it).
  std::string Output();

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  int metrics_port_ = 0;
  int http_port_ = 0;
  int health_port_ = 0;
  int PortAfter(const char* marker, int* cached);
  int stdout_fd_ = -1;
  std::string output_;
};

// Runs a command, returns {exit status, stdout+stderr}.
struct CommandResult {
  int exit_code = -1;
  std::string output;
};
CommandResult RunCommand(const std::vector<std::string>& argv);

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_SERVER_PROCESS_H_
