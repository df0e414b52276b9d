// The --auth_tokens file, read again while the server runs: a Kubernetes Secret mounted as a
// volume is updated in place (the kubelet swaps the files, within about a minute of the
// change), so tokens can be added, rotated and revoked without restarting a replica.
#ifndef SKINNING_SERVER_AUTH_TOKEN_FILE_H_
#define SKINNING_SERVER_AUTH_TOKEN_FILE_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "server/auth/auth.h"

namespace skinning {

class TokenFile {
 public:
  // Reads the file (NOT_FOUND naming it when it cannot be read; Authenticator::FromText's
  // errors) and, with a period above zero, starts a thread that reads it again every `period`.
  // A changed file that parses replaces the tokens at once (calls admitted before keep their
  // tenant); one that does not parse, or a file that cannot be read, leaves the tokens of before
  // in force. Each outcome is printed once on stdout per distinct content: "skinning-server:
  // --auth_tokens: read tokens.txt again: 3 tenants" or "... tokens.txt changed and is not valid
  // (tokens.txt:2: expected 'TOKEN TENANT', found 1 fields); the tokens of before stay".
  static absl::StatusOr<std::unique_ptr<TokenFile>> Open(const std::string& path, std::chrono::milliseconds period);
  ~TokenFile();  // stops the thread
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  // The tokens in force.
  std::shared_ptr<const Authenticator> Current() const;

 private:
  TokenFile(std::string path, std::string text, std::shared_ptr<const Authenticator> auth);
  void Watch(std::chrono::milliseconds period);
  void CheckOnce();

  const std::string path_;
  mutable std::mutex mu_;
  std::shared_ptr<const Authenticator> current_;  // guarded by mu_
  std::string text_;      // the content in force (watcher thread only)
  std::string refused_text_;  // the last content refused, or the last read error (watcher only)
  bool stop_ = false;     // guarded by mu_
  std::condition_variable wake_;
  std::thread watcher_;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_AUTH_TOKEN_FILE_H_
