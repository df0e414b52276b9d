// Key → bytes storage behind the rig store. The filesystem backend is the embedded default;
// others (Redis) implement the same interface.
#ifndef SKINNING_SERVER_STORE_BLOB_STORE_H_
#define SKINNING_SERVER_STORE_BLOB_STORE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/store/redis_credentials.h"

namespace skinning {

class BlobStore {
 public:
  virtual ~BlobStore() = default;
  // Stores `bytes` under `key` atomically: a reader sees the old value, no value, or all of
  // the new one, never part of it. Keys are [A-Za-z0-9_.-]+ with '/' separating namespaces.
  virtual absl::Status Put(const std::string& key, const std::string& bytes) = 0;
  // NOT_FOUND when absent.
  virtual absl::StatusOr<std::string> Get(const std::string& key) = 0;
  virtual absl::StatusOr<bool> Exists(const std::string& key) = 0;
  // Returns whether the key existed.
  virtual absl::StatusOr<bool> Delete(const std::string& key) = 0;
  // Keys that start with `prefix`, sorted.
  virtual absl::StatusOr<std::vector<std::string>> List(const std::string& prefix) = 0;

  // One write of WriteIf: bytes to store under key, or nullopt to delete it.
  struct Write {
    std::string key;
    std::optional<std::string> bytes;
  };
  // Compare and swap for read-modify-write across replicas: if the value under `guard` is
  // `expected` (nullopt: the guard is absent), applies `writes` in order and returns true;
  // otherwise changes nothing and returns false (someone else wrote first: read again, retry).
  // Redis: one Lua script, so the check and all the writes are one atomic step. Filesystem: the
  // check and the writes run under an exclusive flock of <root>/.write-lock (so servers sharing
  // the directory take turns); each write is atomic, a crash between two may leave the first.
  virtual absl::StatusOr<bool> WriteIf(const std::string& guard, const std::optional<std::string>& expected,
                                       const std::vector<Write>& writes) = 0;
};

// Files under a root directory; a key "rigs/abc" is the file <root>/rigs/abc. Writes go to a
// temporary file in the same directory, are fsynced, then renamed over the target (and the
// directory fsynced), so a crash never leaves half a file under a key. Files are framed as Redis
// values are (blob_framing.h), so Get returns DATA_LOSS naming the key for a file that was cut
// or damaged on disk; a file without the header (written before the framing) is read as it is.
absl::StatusOr<std::unique_ptr<BlobStore>> OpenFilesystemBlobStore(const std::string& root);

// Redis (hiredis) at host:port, for several replicas sharing one store. A key "rigs/abc" is the
// Redis string <key_prefix>rigs/abc. Each value is written with ONE SET (so a reader sees all of
// it or none), framed (blob_framing.h: a 20-byte header with the payload's length and CRC-32);
// Get returns DATA_LOSS naming the key for a value that fails the check. The store is
// thread-safe: calls share a small pool of connections; a connection that fails is dropped and
// the call returns UNAVAILABLE (the next call reconnects). Fails with UNAVAILABLE when Redis
// does not answer PING. Opening it makes the process ignore SIGPIPE (a socket whose peer went
// away must not kill a server).
// `credentials` go to AUTH on every connection (none when the password is empty).
absl::StatusOr<std::unique_ptr<BlobStore>> OpenRedisBlobStore(const std::string& host, int port,
                                                              const std::string& key_prefix = "skinning:",
                                                              RedisCredentials credentials = {});

}  // namespace skinning

#endif  // SKINNING_SERVER_STORE_BLOB_STORE_H_
