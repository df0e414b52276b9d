// Example shapes for pose space deformation, stored per rig (StoredExamples in the BlobStore).
//
// Examples belong to a tenant as well as a rig: rig ids are content addresses shared by the
// tenants that registered the same rig, and one tenant's sculpted shapes must not reach another.
// The tenant "" (authentication off) keeps its examples under examples/<rig id>.pb; tenant T
// under examples/<rig id>/T.pb (the whole StoredExamples, replaced atomically on every change),
// each with its revision beside it in a .rev blob (decimal text, written after the .pb), so a
// replica can check cheaply whether its in-memory copy is current. Changes are read-modify-write
// and serialized per (tenant, rig) within the process; two replicas changing the same set at the
// same instant may lose one change (the last write wins).
#ifndef SKINNING_SERVER_STORE_EXAMPLE_STORE_H_
#define SKINNING_SERVER_STORE_EXAMPLE_STORE_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/store/blob_store.h"
#include "server/store/lru_cache.h"
#include "server/store/rig_store.h"
#include "skinning/internal/v1/store.pb.h"
#include "skinning/v1/rig_service.pb.h"

namespace skinning {

// Version of the StoredExamples layout; readers refuse other versions.
inline constexpr int kExamplesFormatVersion = 1;
// At most this many examples per rig (RESOURCE_EXHAUSTED beyond).
inline constexpr int kMaxExamplesPerRig = 256;
// At most this many serialized bytes of examples per rig (RESOURCE_EXHAUSTED beyond).
inline constexpr size_t kMaxExampleBytesPerRig = size_t{256} << 20;
// Checks a CreateExample request against `rig` and returns the example to store: `name` holds
// the request's example_id (CheckNewExampleId; possibly empty: ExampleStore::Add names it), the
// pose with every joint's local
// transform explicit (from example.pose, or from joints_by_name with every other joint at its
// rest transform; both empty = the rest pose), and the positions. INVALID_ARGUMENT, naming the
// field, for: positions not #V*3 finite floats, a pose with the wrong joint count or a bad
// transform, an unknown name in joints_by_name, both pose and joints_by_name, bone_stretch or
// bone_twist values, an example id outside the charset.
absl::StatusOr<v1::Example> ResolveExample(const LoadedRig& rig, const v1::CreateExampleRequest& req);

// What ExampleStore::Add did.
struct ExampleAdded {
  std::string id;         // the example's id (the one given, or the one the store chose)
  bool created = false;   // false: the same example was stored already (a retried call)
  int example_count = 0;  // the tenant's examples of the rig now
};

// A rig's examples as read at one moment.
struct ExampleSet {
  std::shared_ptr<const internal::v1::StoredExamples> stored;
  // A hash of the whole content (names, poses, positions, revision): a key for what is derived
  // from the examples (PSD models). Revisions alone may repeat after the rig is deleted and
  // registered again; content hashes do not collide in practice. Stable within one process.
  uint64_t fingerprint = 0;
};

class ExampleStore {
 public:
  // Called by Add with the rig's current examples and the new one (pose and positions already
  // resolved, name assigned) before anything is stored; a non-OK answer stops the change.
  using Validator =
      std::function<absl::Status(const internal::v1::StoredExamples& existing, const v1::Example& added)>;

  // `cache_bytes` bounds the in-memory copies of examples (LRU by bytes).
  explicit ExampleStore(std::shared_ptr<BlobStore> blobs, size_t cache_bytes = size_t{256} << 20);

  // The rig's examples (no examples and revision 0 when it has none). The rig id must be valid
  // (RigStore::CheckAccess). Served from memory; a copy older than kRecheck is compared with
  // the stored revision first. DATA_LOSS for a stored artifact that does not parse or has
  // another format version.
  absl::StatusOr<ExampleSet> Get(const std::string& rig_id, const std::string& tenant);
  // Whether Get would answer from memory now, asking the store nothing: a copy checked less than
  // kRecheck ago (see RigStore::Resident).
  bool Resident(const std::string& rig_id, const std::string& tenant);

  // Adds `example` (its name field holds the id) to the tenant's examples of the rig: an empty
  // id becomes "example-<n>" (the smallest n >= count + 1 not taken). A taken id is OK with
  // created = false when the stored example has the same pose and positions (a retried call;
  // nothing changes), ALREADY_EXISTS otherwise. An example without an id whose pose and positions
  // equal a stored one's (any id) is a retried call too: OK with created = false and the stored
  // example's id. RESOURCE_EXHAUSTED past kMaxExamplesPerRig or kMaxExampleBytesPerRig; then
  // `validate` (may be empty). Stores the new set with revision + 1. Nothing is stored on any
  // error.
  absl::StatusOr<ExampleAdded> Add(const std::string& rig_id, const std::string& tenant, v1::Example example,
                                   const Validator& validate = nullptr);
  // Removes one example and returns how many are left. NOT_FOUND naming the example when the
  // tenant's set has none of that id.
  absl::StatusOr<int> Remove(const std::string& rig_id, const std::string& tenant, const std::string& id);
  // Removes the tenant's examples of the rig (when the tenant deletes the rig); OK when it had
  // none. The revision counter (the .rev blob) is kept and bumped, so revisions never repeat.
  absl::Status DeleteAll(const std::string& rig_id, const std::string& tenant);
  // DeleteAll for every tenant's examples of the rig (when the stored rig itself is gone).
  absl::Status DeleteEveryTenant(const std::string& rig_id);

  // How long an in-memory copy is served without asking the store for the revision (another
  // replica's change is seen after at most this long; this replica's own changes at once).
  static constexpr std::chrono::milliseconds kRecheck{1000};

  CacheStats cache_stats() const { return cache_.stats(); }

 private:
  struct Cached {
    ExampleSet set;
    std::chrono::steady_clock::time_point checked;
  };
  // Reads the set's .pb; when absent, an empty set with revision `absent_revision`, or with the
  // stored revision (StoredRevision) when that is not given.
  absl::StatusOr<std::shared_ptr<const internal::v1::StoredExamples>> Load(
      const std::string& rig_id, const std::string& tenant, std::optional<int64_t> absent_revision = std::nullopt);
  // The text of the set's .rev (nullopt when absent).
  absl::StatusOr<std::optional<std::string>> ReadRevision(const std::string& rig_id, const std::string& tenant);
  // The stored revision from the set's .rev (0 when absent or unreadable).
  int64_t StoredRevision(const std::string& rig_id, const std::string& tenant);
  // One read-modify-write of the tenant's set, safe against other replicas: reads the .rev blob
  // and the set, calls `change` (which returns the new set, or nullptr to write nothing, or an
  // error), and writes the set and its new revision with BlobStore::WriteIf guarded by the .rev
  // it read. A returned set without a rig id deletes the set's blob (DeleteAll); the revision is
  // bumped either way. Another writer in between makes it start over, up to kUpdateAttempts
  // times (then ABORTED). `change` may run more than once and must reset what it reports each
  // time. Returns the set now stored (the new one, or the current one when nothing was written).
  using Change = std::function<absl::StatusOr<std::shared_ptr<internal::v1::StoredExamples>>(
      const internal::v1::StoredExamples& old)>;
  absl::StatusOr<std::shared_ptr<const internal::v1::StoredExamples>> Update(const std::string& rig_id,
                                                                             const std::string& tenant,
                                                                             const Change& change);
  static constexpr int kUpdateAttempts = 16;
  // Caches `stored` (fingerprint computed) and returns it as a set.
  ExampleSet Remember(std::shared_ptr<const internal::v1::StoredExamples> stored);
  void Recheck(const ExampleSet& set);
  std::mutex& SetMutex(const std::string& rig_id, const std::string& tenant);

  std::shared_ptr<BlobStore> blobs_;
  LruCache<Cached> cache_;
  // Changes to one set take its stripe (a hash of tenant and rig id): this replica's writers take
  // turns instead of racing through WriteIf.
  std::array<std::mutex, 64> rig_mu_;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_STORE_EXAMPLE_STORE_H_
