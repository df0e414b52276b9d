// The rig store: content-addressed rigs in a BlobStore, with an in-memory LRU cache (by bytes)
// of rigs prepared for posing.
#ifndef SKINNING_SERVER_RIG_STORE_H_
#define SKINNING_SERVER_RIG_STORE_H_

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "core/rig/rig.h"
#include "server/blob_store.h"
#include "server/convert.h"
#include "skinning/v1/rig.pb.h"

namespace skinning {

// Version of the StoredRig layout; readers refuse other versions.
inline constexpr uint32_t kRigFormatVersion = 1;

// A rig ready for per-frame work; immutable and shared between calls.
struct LoadedRig {
  std::string id;
  v1::RigInfo info;
  Rig rig;                       // core form (double)
  std::vector<int> order;        // TopologicalOrder(rig.skeleton)
  SparseWeights weights;         // exact sparse weights, rows normalized (0 rows if none)
  std::vector<float> positions;  // #V*3 float32 bind positions
  std::vector<float> normals;    // #V*3 or empty
  size_t bytes = 0;              // approximate memory footprint, for the cache
};

struct RegisterResult {
  std::string rig_id;
  bool created = false;
  v1::RigInfo info;
};

struct RigStoreStats {
  uint64_t hits = 0, misses = 0, evictions = 0;
  size_t cached_bytes = 0, cached_rigs = 0;
};

class RigStore {
 public:
  RigStore(std::unique_ptr<BlobStore> blobs, size_t cache_capacity_bytes, RigLimits limits = {});

  // Validates and stores a rig. The same rig (mesh, skeleton, weights; the name does not count)
  // always gets the same id; storing it again changes nothing and returns created = false.
  absl::StatusOr<RegisterResult> Register(const v1::Rig& rig);
  // INVALID_ARGUMENT for a malformed id, NOT_FOUND for an unknown one, DATA_LOSS for a stored
  // artifact that does not parse or has another format version.
  absl::StatusOr<std::shared_ptr<const LoadedRig>> Get(const std::string& rig_id);
  absl::StatusOr<bool> Delete(const std::string& rig_id);
  // Every stored rig's summary, sorted by id.
  absl::StatusOr<std::vector<v1::RigInfo>> List();

  RigStoreStats stats() const;
  const RigLimits& limits() const { return limits_; }

  static absl::Status CheckRigId(const std::string& rig_id);

 private:
  std::shared_ptr<const LoadedRig> CacheLookup(const std::string& id);
  void CacheInsert(std::shared_ptr<const LoadedRig> rig);
  void CacheErase(const std::string& id);

  std::unique_ptr<BlobStore> blobs_;
  const size_t capacity_bytes_;
  const RigLimits limits_;

  mutable std::mutex mu_;
  std::list<std::shared_ptr<const LoadedRig>> lru_;  // front = most recently used
  std::unordered_map<std::string, std::list<std::shared_ptr<const LoadedRig>>::iterator> index_;
  RigStoreStats stats_;
};

// Builds the prepared form of a validated rig.
std::shared_ptr<LoadedRig> PrepareRig(const std::string& id, Rig rig, v1::RigInfo info);

}  // namespace skinning

#endif  // SKINNING_SERVER_RIG_STORE_H_
