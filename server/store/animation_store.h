// Animations stored with a rig (StoredAnimations in the BlobStore): the clips of the glTF files a
// tenant registered the rig from, so that a front-end that opens the rig later can play them
// without the file.
//
// They belong to a tenant as well as a rig, as examples do (example_store.h): the tenant ""
// (authentication off) keeps them under animations/<rig id>.pb, tenant T under
// animations/<rig id>/T.pb. Each change is one read-modify-write of that blob through
// BlobStore::WriteIf guarded by the bytes it read, so two replicas adding at once both land (the
// one that lost the race reads again after a random backoff, up to kUpdateAttempts times).
#ifndef SKINNING_SERVER_STORE_ANIMATION_STORE_H_
#define SKINNING_SERVER_STORE_ANIMATION_STORE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/store/blob_store.h"
#include "skinning/internal/v1/store.pb.h"
#include "skinning/v1/rig_service.pb.h"

namespace skinning {

// Version of the StoredAnimations layout; readers refuse other versions.
inline constexpr int kAnimationsFormatVersion = 1;

class AnimationStore {
 public:
  // `max_bytes`: most serialized bytes of one tenant's clips of a rig (0 = no bound).
  AnimationStore(std::shared_ptr<BlobStore> blobs, size_t max_bytes) : blobs_(std::move(blobs)), max_bytes_(max_bytes) {}

  // The tenant's clips of the rig, those added last first (none when it has none). DATA_LOSS for
  // a stored artifact that does not parse, has another format version or another owner.
  absl::StatusOr<std::vector<v1::AnimationClip>> Get(const std::string& rig_id, const std::string& tenant);
  // Puts `clips` first among the tenant's clips of the rig: a stored clip equal to one of them (the
  // same file registered again) goes, one of the same name but other frames stays (every Mixamo
  // export names its clip "mixamo.com": a character's files, one clip each, keep all of them), and
  // then the oldest go while all would take more than max_bytes (the new ones always stay).
  // Returns how many clips the tenant now has of the rig. Nothing is written for no clips, nor
  // when the stored clips are already these first and the same others (a retried registration).
  absl::StatusOr<int> Add(const std::string& rig_id, const std::string& tenant,
                          const std::vector<v1::AnimationClip>& clips);
  // Removes the tenant's clips of the rig (OK when it had none).
  absl::Status DeleteAll(const std::string& rig_id, const std::string& tenant);
  // DeleteAll for every tenant's clips of the rig (when the stored rig itself is gone).
  absl::Status DeleteEveryTenant(const std::string& rig_id);

 private:
  // The stored clips (empty when absent) and the bytes they were read from (nullopt: absent).
  absl::StatusOr<internal::v1::StoredAnimations> Load(const std::string& rig_id, const std::string& tenant,
                                                      std::optional<std::string>* bytes);
  static constexpr int kUpdateAttempts = 16;

  std::shared_ptr<BlobStore> blobs_;
  size_t max_bytes_;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_STORE_ANIMATION_STORE_H_
