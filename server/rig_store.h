// The rig store: content-addressed rigs in a BlobStore, with an in-memory LRU cache (by bytes)
// of rigs prepared for posing.
#ifndef SKINNING_SERVER_RIG_STORE_H_
#define SKINNING_SERVER_RIG_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/rig/rig.h"
#include "server/blob_store.h"
#include "server/convert.h"
#include "server/lru_cache.h"
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

class RigStore {
 public:
  RigStore(std::shared_ptr<BlobStore> blobs, size_t cache_capacity_bytes, RigLimits limits = {});

  // Validates and stores a rig. The same rig (mesh, skeleton, weights; the name does not count)
  // always gets the same id; storing it again changes nothing and returns created = false.
  // `still_wanted` (may be empty) is asked after validation and after hashing; a non-OK answer
  // (the caller's deadline passed, say) stops the registration before anything is stored.
  absl::StatusOr<RegisterResult> Register(const v1::Rig& rig,
                                          const std::function<absl::Status()>& still_wanted = nullptr);
  // INVALID_ARGUMENT for a malformed id, NOT_FOUND for an unknown one, DATA_LOSS for a stored
  // artifact that does not parse or has another format version.
  absl::StatusOr<std::shared_ptr<const LoadedRig>> Get(const std::string& rig_id);
  absl::StatusOr<bool> Delete(const std::string& rig_id);
  // Every stored rig's summary, sorted by id.
  absl::StatusOr<std::vector<v1::RigInfo>> List();

  CacheStats cache_stats() const { return cache_.stats(); }
  const RigLimits& limits() const { return limits_; }

  static absl::Status CheckRigId(const std::string& rig_id);

 private:
  void CacheInsert(std::shared_ptr<const LoadedRig> rig) { cache_.Insert(rig->id, rig, rig->bytes); }

  std::shared_ptr<BlobStore> blobs_;
  const RigLimits limits_;
  LruCache<LoadedRig> cache_;
};

// Builds the prepared form of a validated rig.
std::shared_ptr<LoadedRig> PrepareRig(const std::string& id, Rig rig, v1::RigInfo info);

}  // namespace skinning

#endif  // SKINNING_SERVER_RIG_STORE_H_
