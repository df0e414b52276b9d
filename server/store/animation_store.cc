#include "server/store/animation_store.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>
#include <utility>

#include <google/protobuf/util/message_differencer.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"
#include "server/store/tenant_scope.h"

namespace skinning {
namespace {

std::string AnimationsKey(const std::string& rig_id, const std::string& tenant) {
  return tenant.empty() ? absl::StrCat("animations/", rig_id, ".pb")
                        : absl::StrCat("animations/", rig_id, "/", tenant, ".pb");
}

}  // namespace

absl::StatusOr<internal::v1::StoredAnimations> AnimationStore::Load(const std::string& rig_id,
                                                                    const std::string& tenant,
                                                                    std::optional<std::string>* bytes) {
  internal::v1::StoredAnimations stored;
  absl::StatusOr<std::string> got = blobs_->Get(AnimationsKey(rig_id, tenant));
  if (absl::IsNotFound(got.status())) {
    bytes->reset();
    return stored;
  }
  RETURN_IF_ERROR(got.status());
  const std::string what = DescribeTenantScope(rig_id, tenant);
  if (!stored.ParseFromString(*got))
    return absl::DataLossError(absl::StrCat("stored animations of ", what, " are corrupt (do not parse)"));
  if (stored.format_version() != kAnimationsFormatVersion)
    return absl::DataLossError(absl::StrFormat("stored animations of %s have format version %d, this server reads %d",
                                               what, stored.format_version(), kAnimationsFormatVersion));
  if (stored.rig_id() != rig_id || stored.tenant() != tenant)
    return absl::DataLossError(absl::StrCat("stored animations of ", what, " belong to rig '", stored.rig_id(),
                                            "' of tenant '", stored.tenant(), "'"));
  *bytes = *std::move(got);
  return stored;
}

absl::StatusOr<std::vector<v1::AnimationClip>> AnimationStore::Get(const std::string& rig_id,
                                                                   const std::string& tenant) {
  RETURN_IF_ERROR(CheckTenantScope(rig_id, tenant));
  std::optional<std::string> bytes;
  ASSIGN_OR_RETURN(internal::v1::StoredAnimations stored, Load(rig_id, tenant, &bytes));
  return std::vector<v1::AnimationClip>(std::make_move_iterator(stored.mutable_clips()->begin()),
                                        std::make_move_iterator(stored.mutable_clips()->end()));
}

absl::StatusOr<int> AnimationStore::Add(const std::string& rig_id, const std::string& tenant,
                                        const std::vector<v1::AnimationClip>& clips) {
  RETURN_IF_ERROR(CheckTenantScope(rig_id, tenant));
  const std::string key = AnimationsKey(rig_id, tenant);
  for (int attempt = 0; attempt < kUpdateAttempts; ++attempt) {
    std::optional<std::string> bytes;
    ASSIGN_OR_RETURN(const internal::v1::StoredAnimations old, Load(rig_id, tenant, &bytes));
    if (clips.empty()) return old.clips_size();
    internal::v1::StoredAnimations next;
    next.set_format_version(kAnimationsFormatVersion);
    next.set_rig_id(rig_id);
    next.set_tenant(tenant);
    size_t total = 0;
    for (const v1::AnimationClip& clip : clips) {
      *next.add_clips() = clip;
      total += clip.ByteSizeLong();
    }
    for (const v1::AnimationClip& clip : old.clips()) {
      if (std::any_of(clips.begin(), clips.end(), [&clip](const v1::AnimationClip& added) {
            return google::protobuf::util::MessageDifferencer::Equals(added, clip);
          }))
        continue;  // registered again: it moves to the front
      total += clip.ByteSizeLong();
      if (max_bytes_ != 0 && total > max_bytes_) break;  // this one and the older ones go
      *next.add_clips() = clip;
    }
    std::string serialized = next.SerializeAsString();
    if (bytes.has_value() && serialized == *bytes) return next.clips_size();  // the same clips, in order
    ASSIGN_OR_RETURN(const bool written, blobs_->WriteIf(key, bytes, {{key, std::move(serialized)}}));
    if (written) return next.clips_size();
    // Another writer came first: wait a random while, up to 2^attempt ms (at most 64), so that two
    // replicas adding in a loop do not keep undoing each other's reads.
    thread_local std::mt19937 random(std::random_device{}());
    const int most_ms = 1 << std::min(attempt, 6);
    std::this_thread::sleep_for(std::chrono::microseconds(
        std::uniform_int_distribution<int>(0, 1000 * most_ms)(random)));
  }
  return absl::AbortedError(absl::StrFormat("the animations of %s changed under %d attempts to add to them; retry",
                                            DescribeTenantScope(rig_id, tenant), kUpdateAttempts));
}

absl::Status AnimationStore::DeleteAll(const std::string& rig_id, const std::string& tenant) {
  RETURN_IF_ERROR(CheckTenantScope(rig_id, tenant));
  return blobs_->Delete(AnimationsKey(rig_id, tenant)).status();
}

absl::Status AnimationStore::DeleteEveryTenant(const std::string& rig_id) {
  RETURN_IF_ERROR(DeleteAll(rig_id, ""));
  const std::string prefix = absl::StrCat("animations/", rig_id, "/");
  ASSIGN_OR_RETURN(const std::vector<std::string> keys, blobs_->List(prefix));
  for (const std::string& key : keys)
    if (absl::EndsWith(key, ".pb")) RETURN_IF_ERROR(blobs_->Delete(key).status());
  return absl::OkStatus();
}

}  // namespace skinning
