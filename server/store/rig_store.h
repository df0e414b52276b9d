// The rig store: content-addressed rigs in a BlobStore, with an in-memory LRU cache (by bytes)
// of rigs prepared for posing. Each rig is two blobs: rigs/<id>.pb (StoredRig) and the summary
// rigs/<id>.info (StoredRigSummary, for listing without loading the rig).
#ifndef SKINNING_SERVER_STORE_RIG_STORE_H_
#define SKINNING_SERVER_STORE_RIG_STORE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/skinning/dqs.h"
#include "server/convert/convert.h"
#include "server/convert/rig.h"
#include "server/store/blob_store.h"
#include "server/store/lru_cache.h"
#include "skinning/internal/v1/store.pb.h"
#include "skinning/v1/rig.pb.h"

namespace skinning {

// Version of the StoredRig layout; readers refuse other versions.
inline constexpr int kRigFormatVersion = 1;

// A rig ready for per-frame work; immutable and shared between calls (but for dqs_lanes, which
// the first DQS frame with vertices prepares once, thread-safely).
struct LoadedRig {
  std::string id;
  v1::Rig summary;               // name, display name and the output-only fields (RigSummary)
  Rig rig;                       // core form (double)
  std::vector<int> order;        // TopologicalOrder(rig.skeleton)
  SparseWeights weights;         // exact sparse weights, rows normalized (0 rows if none)
  // DEFORMER_DQS's vertex order for `weights`, prepared by the first DQS frame with vertices (RigStore::DqsLanes).
  LazyDqsLaneOrder dqs_lanes;
  std::vector<float> positions;  // #V*3 float32 bind positions
  std::vector<float> normals;    // #V*3 or empty
  // Morph targets in float32: per target #V*3 position deltas, and normal deltas (empty when
  // the target or the mesh has none). Names and default weights: rig.morph_targets.
  std::vector<std::vector<float>> morph_positions, morph_normals;
  size_t bytes = 0;              // approximate memory footprint at load, for the cache
};

struct RegisterResult {
  std::string rig_id;
  bool created = false;
  v1::Rig summary;
};

// Tenancy. Rig ids are content addresses shared by every tenant (the same rig registered by two
// tenants is stored once), but access is per tenant: registering a rig records that the tenant
// owns it (an empty marker under tenants/<tenant>/rigs/<rig_id>), and a tenant may only use,
// list and delete the rigs it owns. The tenant "" (authentication off) owns every stored rig
// and keeps no markers. A rig stored while authentication was off is owned by no tenant until
// one registers it.
class RigStore {
 public:
  RigStore(std::shared_ptr<BlobStore> blobs, size_t cache_capacity_bytes, RigLimits limits = {});

  // Validates and stores a rig, owned by `tenant`. The same rig (mesh, skeleton, weights; the
  // name does not count) always gets the same id; registering it again changes nothing and
  // returns created = false. For a tenant, created says whether the tenant did not own it yet
  // (so it does not tell whether another tenant has the same rig). `still_wanted` (may be empty)
  // is asked after validation and after hashing; a non-OK answer (the caller's deadline passed,
  // say) stops the registration before anything is stored.
  absl::StatusOr<RegisterResult> Register(const v1::Rig& rig, const std::string& tenant = "",
                                          const std::function<absl::Status()>& still_wanted = nullptr);
  // Ids are rig ids ("rig-…"), not names; messages name the rig by its resource name.
  // INVALID_ARGUMENT for a malformed id, NOT_FOUND for an unknown one, DATA_LOSS for a stored
  // artifact that does not parse or has another format version. No access check: for internal
  // use (bakes) after CheckAccess, or with authentication off.
  absl::StatusOr<std::shared_ptr<const LoadedRig>> Get(const std::string& rig_id);
  // Whether `tenant` may use the rig: OK when it owns it (for "": when it is stored), PERMISSION_DENIED
  // "rig 'rigs/X' belongs to another tenant" when the rig is stored but not the tenant's, NOT_FOUND
  // when nobody has it. Positive answers are cached in memory for kOwnershipCacheTtl, so the
  // per-call check on the posing path is a hash lookup.
  absl::Status CheckAccess(const std::string& rig_id, const std::string& tenant);
  // Whether the rig is in the store now (not the cache: another replica may have deleted it).
  absl::StatusOr<bool> Stored(const std::string& rig_id);
  // CheckAccess, then Get.
  absl::StatusOr<std::shared_ptr<const LoadedRig>> GetForTenant(const std::string& rig_id,
                                                                const std::string& tenant);
  // Whether GetForTenant would answer from memory now, asking the store nothing: the rig is in
  // the cache and the tenant's access was checked less than kOwnershipCacheTtl ago (also true for
  // a malformed id, refused without the store). The doors run a quick call on the threads that
  // move the sockets' bytes only then: a store that stalls would hold them.
  bool Resident(const std::string& rig_id, const std::string& tenant);
  // Removes the tenant's ownership, and the stored rig when no tenant owns it any more (with
  // tenant "": the stored rig, whoever owns it). Returns whether the tenant had it;
  // PERMISSION_DENIED when the rig is another tenant's.
  absl::StatusOr<bool> Delete(const std::string& rig_id, const std::string& tenant = "");
  // The summaries of the tenant's rigs (every stored rig for ""), sorted by id. A rig whose
  // summary blob is missing or does not read gets it written again from the rig (and is left
  // out when the rig itself does not load).
  absl::StatusOr<std::vector<v1::Rig>> List(const std::string& tenant = "");

  // How long a positive ownership check is trusted without asking the store again (another
  // replica's DeleteRig is seen after at most this long).
  static constexpr std::chrono::seconds kOwnershipCacheTtl{30};

  // The rig's DQS vertex order (LoadedRig::dqs_lanes), prepared on the first call for the rig;
  // the cache then counts its bytes too.
  const DqsLaneOrder& DqsLanes(const LoadedRig& rig);

  CacheStats cache_stats() const { return cache_.stats(); }
  const RigLimits& limits() const { return limits_; }

 private:
  void CacheInsert(std::shared_ptr<const LoadedRig> rig) { cache_.Insert(rig->id, rig, rig->bytes); }
  // Writes rigs/<id>.info for a rig that loads.
  absl::Status PutSummary(const LoadedRig& rig);
  bool OwnershipCached(const std::string& rig_id, const std::string& tenant);
  void CacheOwnership(const std::string& rig_id, const std::string& tenant);
  void ForgetOwnership(const std::string& rig_id, const std::string& tenant);
  // PERMISSION_DENIED when the rig is stored (someone else's), else NOT_FOUND.
  absl::Status NotOwned(const std::string& rig_id);

  std::shared_ptr<BlobStore> blobs_;
  const RigLimits limits_;
  LruCache<LoadedRig> cache_;

  std::mutex ownership_mu_;
  // tenant + '/' + rig id → when the positive answer expires.
  absl::flat_hash_map<std::string, std::chrono::steady_clock::time_point> ownership_;
};

// Builds the prepared form of a validated rig.
std::shared_ptr<LoadedRig> PrepareRig(const std::string& id, Rig rig, v1::Rig summary);

// The stored summary of a rig (rigs/<id>.info), and the summary as the API returns it: the Rig
// message's name, display name and output-only fields.
internal::v1::StoredRigSummary StoredSummary(const std::string& id, const Rig& rig, int64_t created_unix_ms,
                                             size_t stored_bytes);
v1::Rig SummaryFromStored(const internal::v1::StoredRigSummary& stored);

}  // namespace skinning

#endif  // SKINNING_SERVER_STORE_RIG_STORE_H_
