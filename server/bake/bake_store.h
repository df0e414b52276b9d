// Finished bakes in the blob store, bakes/<bake id>.pb: a StoredBake with a format version,
// written atomically before a bake is reported done, and indexed by rig (an empty
// rig-bakes/<rig id>/<bake id> per bake, so that deleting a rig deletes its bakes). Read back two ways: the header (options,
// report, times; what status checks answer from, never running a recipe's load) or the loaded
// bake (the recipe's Restore and Prepare; what posing, GetWeights and FAST use), each with an
// in-memory cache.
#ifndef SKINNING_SERVER_BAKE_BAKE_STORE_H_
#define SKINNING_SERVER_BAKE_BAKE_STORE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include "absl/status/statusor.h"
#include "server/bake/loaded_bake.h"
#include "server/bake/recipe.h"
#include "server/names.h"
#include "server/store/blob_store.h"
#include "server/store/lru_cache.h"
#include "server/store/rig_store.h"
#include "skinning/internal/v1/store.pb.h"
#include "skinning/v1/bake.pb.h"

namespace skinning {

// Version of the StoredBake layout; readers refuse other versions. 2: the v1 API's BakeOptions
// (oneof per method) and the recipes' BakeArtifact.
inline constexpr int kBakeFormatVersion = 2;

// Told of every stored bake loaded into memory (for metrics).
class BakeLoadObserver {
 public:
  virtual ~BakeLoadObserver() = default;
  // The recipe `method` loaded a stored bake in `seconds`.
  virtual void OnBakeLoad(const std::string& method, double seconds) = 0;
};

// Whether a pending record's server (its writer) still runs on this machine, this process
// included; a record of another machine is never (its processes cannot be seen from here).
bool QueuedByARunningServerHere(const internal::v1::PendingBake& record);
// The process id in a record's writer ("<pid>-<start ticks>").
std::string WriterPid(const std::string& writer);

class BakeStore {
 public:
  // `rigs`, `recipes` and `observer` (may be null) must outlive this object. `cache_bytes`
  // bounds the loaded bakes kept in memory.
  BakeStore(std::shared_ptr<BlobStore> blobs, RigStore* rigs, const RecipeRegistry* recipes, size_t cache_bytes,
            BakeLoadObserver* observer = nullptr);

  // Writes `stored` (header and artifact) atomically, and its rig's index entry before it, then
  // caches `loaded` (its loaded form).
  absl::Status Put(const internal::v1::StoredBake& stored, std::shared_ptr<const LoadedBake> loaded);
  // Deletes the stored bake, its index entry and its cached forms. Returns whether it was stored.
  absl::StatusOr<bool> Delete(const std::string& rig_id, const std::string& bake_id);
  // Deletes every bake of the rig in its index (RigApi::DeleteRig, once the stored rig is gone).
  // Returns how many were stored. Bakes stored before the index existed are not in it:
  // IndexOlderBakes adds them at start.
  absl::StatusOr<int> DeleteForRig(const std::string& rig_id);
  // What IndexOlderBakes found among the stored bakes that had no index entry.
  struct OlderBakes {
    int indexed = 0;     // their rig is stored: the entry is written
    int deleted = 0;     // their rig was deleted (before the index existed): the bake goes too
    int unreadable = 0;  // the bake does not read (DATA_LOSS): left as it is, for an operator
  };
  // Bakes stored by servers older than the rig-bakes index get their entry, or are deleted when
  // their rig is gone, so that DeleteForRig finds every bake. Lists the bakes and the index
  // (cheap when every bake has its entry) and reads only the bakes without one. Run at start;
  // running it again, or on several replicas at once, does no harm.
  absl::StatusOr<OlderBakes> IndexOlderBakes();
  // The stored bake without its artifact. NOT_FOUND when it is not stored (also when it is
  // cached here but was deleted since, e.g. with its rig on another replica); DATA_LOSS when it
  // does not parse, has another format version or does not match its content address.
  absl::StatusOr<std::shared_ptr<const internal::v1::StoredBake>> Header(const std::string& bake_id);
  // The bake ready for use: from the cache, or read and loaded by its method's recipe (which may
  // rebuild a model). NOT_FOUND, DATA_LOSS as Header.
  absl::StatusOr<std::shared_ptr<const LoadedBake>> Load(const std::string& bake_id);
  // Whether Load would answer from the cache now.
  bool Resident(const std::string& bake_id) const { return loaded_.Peek(bake_id) != nullptr; }
  // Whether the bake is in the store now (one lookup; the caches are not asked).
  absl::StatusOr<bool> Stored(const std::string& bake_id);

  // The local queue's bakes not yet ended (internal::v1::PendingBake): written when a bake is
  // queued, deleted when it ends, read at start to queue them again (SkinningServer::Start).
  // PutPending returns the bytes written (UpdatePending compares them).
  absl::StatusOr<std::string> PutPending(const std::string& bake_id, const internal::v1::PendingBake& pending);
  // Replaces the record with `pending` if the store still holds `expected` under its key; false
  // when another server took the record or it was removed (BlobStore::WriteIf). The new bytes
  // in *written.
  absl::StatusOr<bool> UpdatePending(const std::string& bake_id, const std::string& expected,
                                     const internal::v1::PendingBake& pending, std::string* written);
  absl::Status DeletePending(const std::string& bake_id);
  struct PendingRecord {
    std::string bake_id;
    internal::v1::PendingBake bake;
    std::string bytes;  // as stored (ClaimPending compares them)
  };
  // Every record; records that do not parse are skipped (and deleted).
  absl::StatusOr<std::vector<PendingRecord>> Pending();
  // The record of one bake; nullopt when there is none, or when it does not parse (it is then
  // deleted).
  absl::StatusOr<std::optional<PendingRecord>> PendingOf(const std::string& bake_id);
  // Makes `record` this process's (its host and writer) if the store still holds record.bytes
  // under its key; false when another server took it or removed it first (BlobStore::WriteIf).
  absl::StatusOr<bool> ClaimPending(const PendingRecord& record);

  // The bake's DQS vertex order (LoadedBake::dqs_lanes, for its bone weights), prepared on the
  // first call for the bake together with the payload's layout in it
  // (BakePayload::PrepareForLaneOrder); the cache then counts their bytes too.
  const DqsLaneOrder& DqsLanes(const LoadedBake& bake);
  // Counts what the bake's payload has grown by since it was last counted
  // (BakePayload::GrownBytes) in the cache, which may then evict older bakes. Cheap when it has
  // not grown: callers call it after each use that may have grown it (a FAST solve).
  void ChargeGrowth(const LoadedBake& bake);

  // The loaded bakes in memory.
  CacheStats cache_stats() const { return loaded_.stats(); }
  // Stored bakes loaded by their recipe so far (cache misses of Load that read a bake).
  uint64_t loads() const { return loads_.load(); }

 private:
  // Reads, parses and checks the whole StoredBake.
  absl::StatusOr<std::shared_ptr<internal::v1::StoredBake>> Read(const std::string& bake_id);

  std::shared_ptr<BlobStore> blobs_;
  RigStore* rigs_;
  const RecipeRegistry* recipes_;
  BakeLoadObserver* observer_;
  LruCache<LoadedBake> loaded_;
  LruCache<internal::v1::StoredBake> headers_;
  std::atomic<uint64_t> loads_{0};
};

// `stored` without its artifact.
std::shared_ptr<const internal::v1::StoredBake> StoredBakeHeader(const internal::v1::StoredBake& stored);

// The bake resource of a stored bake: done, SUCCEEDED, its report; created and ended when it
// was stored; elapsed its run time.
v1::Bake BakeFromStored(const internal::v1::StoredBake& header);

// Whether a bake in `state` has ended (SUCCEEDED, FAILED or CANCELLED).
bool BakeEnded(v1::BakeState state);

// What a bake queue knows of a job that is not (or not yet) stored, whichever queue holds it.
struct BakeJobState {
  v1::BakeState state = v1::BAKE_STATE_UNSPECIFIED;
  std::string stage;
  double fraction = 0.0;
  google::protobuf::Timestamp create_time;
  std::optional<google::protobuf::Timestamp> start_time;  // once it started
  std::optional<google::protobuf::Timestamp> end_time;    // once it ended
  double elapsed_seconds = 0.0;                            // of running, until now or the end
  absl::Status error;                                      // FAILED: why; CANCELLED: the reason
  std::optional<int> queue_position;                       // QUEUED: jobs ahead of it
};

// The bake resource of such a job: metadata (with the remaining time estimated from the progress
// once it is past 2 %), done, and the error of a failed or cancelled one. Both queues answer with
// it, so a bake reads the same from every replica.
v1::Bake JobBake(const std::string& name, const v1::BakeOptions& options, const BakeJobState& job);

// The bake resource of `bake` from the store's header (never loading the result); NOT_FOUND
// naming the bake when it is not stored (or stored for another rig).
absl::StatusOr<v1::Bake> StoredBakeResource(BakeStore& store, const BakeRef& bake);
// StoredBakeResource for StartBake of a bake of `recipe`: also DATA_LOSS when the stored bake does
// not load (what the recipe restores from the artifact: weights whose rows do not sum to one, a
// model that does not parse), so that it is computed again; the bake is then in memory. Bakes of
// recipes that rebuild their result on restore are not loaded (nothing stored to damage, and
// rebuilding costs a bake). Other load errors (the rig missing, the store away) are not the
// stored bake's: the answer is then StoredBakeResource's.
absl::StatusOr<v1::Bake> StoredAndReadable(BakeStore& store, const BakeRef& bake, const Recipe* recipe);

}  // namespace skinning

#endif  // SKINNING_SERVER_BAKE_BAKE_STORE_H_
