// Key → bytes storage behind the rig store. The filesystem backend is the embedded default;
// others (Redis) implement the same interface.
#ifndef SKINNING_SERVER_BLOB_STORE_H_
#define SKINNING_SERVER_BLOB_STORE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

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
};

// Files under a root directory; a key "rigs/abc" is the file <root>/rigs/abc. Writes go to a
// temporary file in the same directory, are fsynced, then renamed over the target (and the
// directory fsynced), so a crash never leaves half a file under a key.
absl::StatusOr<std::unique_ptr<BlobStore>> OpenFilesystemBlobStore(const std::string& root);

}  // namespace skinning

#endif  // SKINNING_SERVER_BLOB_STORE_H_
