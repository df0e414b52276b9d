#include "server/store/example_store.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"
#include "server/auth/auth.h"
#include "server/convert/convert.h"
#include "server/names.h"
#include "server/store/tenant_scope.h"

namespace skinning {
namespace {

// The tenant "" keeps the layout of before tenants had their own examples: examples/<rig>.pb.
std::string SetKey(const std::string& rig_id, const std::string& tenant) {
  return tenant.empty() ? absl::StrCat("examples/", rig_id) : absl::StrCat("examples/", rig_id, "/", tenant);
}
std::string ExamplesKey(const std::string& rig_id, const std::string& tenant) {
  return absl::StrCat(SetKey(rig_id, tenant), ".pb");
}
std::string RevisionKey(const std::string& rig_id, const std::string& tenant) {
  return absl::StrCat(SetKey(rig_id, tenant), ".rev");
}
// The number in a .rev blob's text: 0 when absent or unreadable.
int64_t RevisionNumber(const std::optional<std::string>& text) {
  int64_t revision = 0;
  if (!text.has_value() || !absl::SimpleAtoi(*text, &revision)) return 0;
  return revision;
}
size_t CachedBytes(const internal::v1::StoredExamples& stored) { return stored.ByteSizeLong() * 2 + 256; }

}  // namespace

absl::StatusOr<v1::Example> ResolveExample(const LoadedRig& rig, const v1::CreateExampleRequest& req) {
  const v1::Example& in = req.example();
  const Skeleton& skeleton = rig.rig.skeleton;
  if (!req.example_id().empty()) RETURN_IF_ERROR(CheckNewExampleId(req.example_id(), "example_id"));
  const int nv = static_cast<int>(rig.positions.size() / 3);
  if (in.positions_size() != 3 * nv)
    return absl::InvalidArgumentError(
        absl::StrFormat("example.positions has %d values, expected %d (3 per vertex, the rig has %d vertices)",
                        in.positions_size(), 3 * nv, nv));
  for (int i = 0; i < in.positions_size(); ++i)
    if (!std::isfinite(in.positions(i)))
      return absl::InvalidArgumentError(
          absl::StrFormat("example.positions[%d] (vertex %d) is %f, not finite", i, i / 3, in.positions(i)));
  if (in.pose().bone_stretch_size() != 0 || in.pose().bone_twist_size() != 0)
    return absl::InvalidArgumentError(
        "example.pose has bone_stretch or bone_twist: examples are plain poses (every joint's local transform)");
  // They were dropped without a word, and an example differing only in them matched the first.
  if (in.pose().morph_weights_size() != 0 || !in.pose().named_morph_weights().empty())
    return absl::InvalidArgumentError(
        "example.pose has morph weights: examples are plain poses (every joint's local transform); the sculpted "
        "positions are the whole shape, morphs included");

  Pose pose;
  if (!req.joints_by_name().empty()) {
    if (in.pose().joints_size() != 0)
      return absl::InvalidArgumentError("give example.pose or joints_by_name, not both");
    pose = RestPose(skeleton);
    // Sorted for a deterministic message when several names are wrong.
    std::vector<std::string> names;
    for (const auto& [name, t] : req.joints_by_name()) names.push_back(name);
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      const v1::Transform& t = req.joints_by_name().at(name);
      const std::string where = absl::StrCat("joints_by_name['", name, "']");
      const int j = skeleton.Find(name);
      if (j < 0)
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: the rig has no joint named '%s' (%d joints)", where, name, skeleton.size()));
      RETURN_IF_ERROR(TransformLengths(t, [&] { return where; }));
      // Fields given replace the rest value; fields left empty keep it.
      Transform& local = pose.local[j];
      if (t.translation_size() == 3) local.translation = Eigen::Vector3d(t.translation(0), t.translation(1), t.translation(2));
      if (t.rotation_size() == 4) local.rotation = Eigen::Quaterniond(t.rotation(3), t.rotation(0), t.rotation(1), t.rotation(2));
      if (t.scale_size() == 3) local.scale = Eigen::Vector3d(t.scale(0), t.scale(1), t.scale(2));
    }
    RETURN_IF_ERROR(ValidatePose(skeleton, pose, "joints_by_name"));
  } else if (in.pose().joints_size() == 0) {
    // As for Pose: no joints is the bind pose (it was the rest pose here, which differs for
    // glTF rigs, so a sculpt of the default pose applied at another pose).
    pose.local = PoseLocals(skeleton, Pose{});
  } else {
    ASSIGN_OR_RETURN(pose, PoseFromProto(in.pose(), skeleton, "example.pose"));
  }

  v1::Example out;
  out.set_name(req.example_id());
  *out.mutable_pose() = PoseToProto(pose);
  // The canonical (float) pose must still be valid: re-read it as the poser will.
  RETURN_IF_ERROR(PoseFromProto(out.pose(), skeleton, "example.pose").status());
  *out.mutable_positions() = in.positions();
  return out;
}

ExampleStore::ExampleStore(std::shared_ptr<BlobStore> blobs, size_t cache_bytes)
    : blobs_(std::move(blobs)), cache_(cache_bytes) {}

std::mutex& ExampleStore::SetMutex(const std::string& rig_id, const std::string& tenant) {
  return rig_mu_[std::hash<std::string>()(SetKey(rig_id, tenant)) % rig_mu_.size()];
}

absl::StatusOr<std::shared_ptr<const internal::v1::StoredExamples>> ExampleStore::Load(const std::string& rig_id,
                                                                             const std::string& tenant,
                                                                             std::optional<int64_t> absent_revision) {
  auto stored = std::make_shared<internal::v1::StoredExamples>();
  absl::StatusOr<std::string> bytes = blobs_->Get(ExamplesKey(rig_id, tenant));
  if (absl::IsNotFound(bytes.status())) {
    stored->set_format_version(kExamplesFormatVersion);
    stored->set_rig_id(rig_id);
    stored->set_tenant(tenant);
    // Kept by DeleteAll: revisions never repeat.
    stored->set_revision(absent_revision.has_value() ? *absent_revision : StoredRevision(rig_id, tenant));
    return std::shared_ptr<const internal::v1::StoredExamples>(std::move(stored));
  }
  RETURN_IF_ERROR(bytes.status());
  const std::string what = DescribeTenantScope(rig_id, tenant);
  if (!stored->ParseFromString(*bytes))
    return absl::DataLossError(absl::StrCat("stored examples of ", what, " are corrupt (do not parse)"));
  if (stored->format_version() != kExamplesFormatVersion)
    return absl::DataLossError(absl::StrFormat("stored examples of %s have format version %d, this server reads %d",
                                               what, stored->format_version(), kExamplesFormatVersion));
  if (stored->rig_id() != rig_id)
    return absl::DataLossError(absl::StrCat("stored examples of ", what, " belong to rig '", stored->rig_id(), "'"));
  if (stored->tenant() != tenant)
    return absl::DataLossError(
        absl::StrCat("stored examples of ", what, " belong to tenant '", stored->tenant(), "'"));
  return std::shared_ptr<const internal::v1::StoredExamples>(std::move(stored));
}

absl::StatusOr<std::optional<std::string>> ExampleStore::ReadRevision(const std::string& rig_id,
                                                                     const std::string& tenant) {
  absl::StatusOr<std::string> text = blobs_->Get(RevisionKey(rig_id, tenant));
  if (absl::IsNotFound(text.status())) return std::nullopt;
  RETURN_IF_ERROR(text.status());
  return std::optional<std::string>(*std::move(text));
}

int64_t ExampleStore::StoredRevision(const std::string& rig_id, const std::string& tenant) {
  return RevisionNumber(ReadRevision(rig_id, tenant).value_or(std::nullopt));
}

ExampleSet ExampleStore::Remember(std::shared_ptr<const internal::v1::StoredExamples> stored) {
  ExampleSet set;
  set.fingerprint = std::hash<std::string>()(stored->SerializeAsString());
  set.stored = std::move(stored);
  Recheck(set);
  return set;
}

void ExampleStore::Recheck(const ExampleSet& set) {
  cache_.Insert(SetKey(set.stored->rig_id(), set.stored->tenant()),
                std::make_shared<const Cached>(Cached{set, std::chrono::steady_clock::now()}), CachedBytes(*set.stored));
}

bool ExampleStore::Resident(const std::string& rig_id, const std::string& tenant) {
  if (!CheckTenantScope(rig_id, tenant).ok()) return true;
  std::shared_ptr<const Cached> hit = cache_.Peek(SetKey(rig_id, tenant));
  return hit != nullptr && std::chrono::steady_clock::now() - hit->checked < kRecheck;
}

absl::StatusOr<ExampleSet> ExampleStore::Get(const std::string& rig_id, const std::string& tenant) {
  RETURN_IF_ERROR(CheckTenantScope(rig_id, tenant));
  if (std::shared_ptr<const Cached> hit = cache_.Find(SetKey(rig_id, tenant))) {
    if (std::chrono::steady_clock::now() - hit->checked < kRecheck) return hit->set;
    if (StoredRevision(rig_id, tenant) == hit->set.stored->revision()) {
      Recheck(hit->set);  // still current: trust it for another kRecheck
      return hit->set;
    }
  }
  ASSIGN_OR_RETURN(std::shared_ptr<const internal::v1::StoredExamples> loaded, Load(rig_id, tenant));
  return Remember(std::move(loaded));
}

absl::StatusOr<std::shared_ptr<const internal::v1::StoredExamples>> ExampleStore::Update(const std::string& rig_id,
                                                                               const std::string& tenant,
                                                                               const Change& change) {
  const std::string rev_key = RevisionKey(rig_id, tenant);
  for (int attempt = 0; attempt < kUpdateAttempts; ++attempt) {
    // The guard first, then the set: a writer that lands in between changes the guard.
    ASSIGN_OR_RETURN(const std::optional<std::string> guard, ReadRevision(rig_id, tenant));
    const int64_t guard_revision = RevisionNumber(guard);
    ASSIGN_OR_RETURN(std::shared_ptr<const internal::v1::StoredExamples> current,
                     Load(rig_id, tenant, guard_revision));
    // Both counts only grow; a crash between the two writes of the filesystem store may leave the
    // set one ahead of its .rev, so the next revision is past both.
    const int64_t next_revision = std::max(guard_revision, current->revision()) + 1;
    ASSIGN_OR_RETURN(std::shared_ptr<internal::v1::StoredExamples> next, change(*current));
    if (next == nullptr) return current;
    internal::v1::StoredExamples& set = *next;
    const bool remove = set.rig_id().empty();  // DeleteAll's answer: delete the set's blob
    set.set_format_version(kExamplesFormatVersion);
    set.set_rig_id(rig_id);
    set.set_tenant(tenant);
    set.set_revision(next_revision);
    std::vector<BlobStore::Write> writes;
    writes.push_back({ExamplesKey(rig_id, tenant), remove ? std::nullopt : std::optional(set.SerializeAsString())});
    writes.push_back({rev_key, absl::StrCat(next_revision)});
    absl::StatusOr<bool> written = blobs_->WriteIf(rev_key, guard, writes);
    if (!written.ok()) {
      cache_.Erase(SetKey(rig_id, tenant));  // the store may hold either version now
      return written.status();
    }
    if (*written) return std::shared_ptr<const internal::v1::StoredExamples>(std::move(next));
  }
  cache_.Erase(SetKey(rig_id, tenant));
  return absl::AbortedError(absl::StrFormat("the examples of %s changed under %d attempts to change them; retry",
                                            DescribeTenantScope(rig_id, tenant), kUpdateAttempts));
}

absl::StatusOr<ExampleAdded> ExampleStore::Add(const std::string& rig_id, const std::string& tenant,
                                                         v1::Example example, const Validator& validate) {
  RETURN_IF_ERROR(CheckTenantScope(rig_id, tenant));
  std::lock_guard<std::mutex> lock(SetMutex(rig_id, tenant));
  const std::string what = DescribeTenantScope(rig_id, tenant);
  ExampleAdded added_result;
  // Runs on the stored set itself (not the cache): another replica may have changed it.
  auto change = [&](const internal::v1::StoredExamples& old) -> absl::StatusOr<std::shared_ptr<internal::v1::StoredExamples>> {
    added_result = ExampleAdded();
    // A retried call: the same id (or, without an id, any id) with the same pose and positions
    // is already there.
    // Same pose and the same position bits (no copy of the stored shapes).
    auto same_content = [&](const v1::Example& e) {
      return e.positions_size() == example.positions_size() &&
             (e.positions_size() == 0 ||
              std::memcmp(e.positions().data(), example.positions().data(),
                          sizeof(float) * static_cast<size_t>(e.positions_size())) == 0) &&
             e.pose().SerializeAsString() == example.pose().SerializeAsString();
    };
    for (const v1::Example& e : old.examples()) {
      if (example.name().empty()) {
        if (!same_content(e)) continue;
      } else if (e.name() != example.name()) {
        continue;
      } else if (e.SerializeAsString() != example.SerializeAsString()) {
        return absl::AlreadyExistsError(absl::StrCat(
            what, " already has an example '", example.name(),
            "' with a different pose or shape; delete it first or choose another id"));
      }
      added_result.id = e.name();
      added_result.example_count = old.examples_size();
      return nullptr;
    }
    if (old.examples_size() >= kMaxExamplesPerRig)
      return absl::ResourceExhaustedError(absl::StrFormat(
          "%s has %d examples, the limit per rig; remove some first", what, old.examples_size()));
    if (const size_t bytes = old.ByteSizeLong() + example.ByteSizeLong(); bytes > kMaxExampleBytesPerRig)
      return absl::ResourceExhaustedError(absl::StrFormat(
          "%s: its examples would take %d bytes, over the limit of %d per rig; remove some first", what, bytes,
          kMaxExampleBytesPerRig));
    v1::Example added = example;
    if (added.name().empty()) {
      absl::flat_hash_set<std::string> taken;
      for (const v1::Example& e : old.examples()) taken.insert(e.name());
      for (int n = old.examples_size() + 1;; ++n) {
        std::string name = absl::StrCat("example-", n);
        if (!taken.contains(name)) {
          added.set_name(std::move(name));
          break;
        }
      }
    }
    if (validate) RETURN_IF_ERROR(validate(old, added));
    auto next = std::make_shared<internal::v1::StoredExamples>(old);
    added_result.id = added.name();
    added_result.created = true;
    *next->add_examples() = std::move(added);
    added_result.example_count = next->examples_size();
    return next;
  };
  ASSIGN_OR_RETURN(std::shared_ptr<const internal::v1::StoredExamples> stored, Update(rig_id, tenant, change));
  Remember(std::move(stored));
  return added_result;
}

absl::StatusOr<int> ExampleStore::Remove(const std::string& rig_id, const std::string& tenant,
                                         const std::string& id) {
  RETURN_IF_ERROR(CheckTenantScope(rig_id, tenant));
  std::lock_guard<std::mutex> lock(SetMutex(rig_id, tenant));
  auto change = [&](const internal::v1::StoredExamples& old) -> absl::StatusOr<std::shared_ptr<internal::v1::StoredExamples>> {
    auto next = std::make_shared<internal::v1::StoredExamples>(old);
    next->clear_examples();
    for (const v1::Example& e : old.examples())
      if (e.name() != id) *next->add_examples() = e;
    if (next->examples_size() == old.examples_size())
      return absl::NotFoundError(absl::StrFormat("%s has no example '%s' (%d examples)", DescribeTenantScope(rig_id, tenant), id,
                                                 old.examples_size()));
    return next;
  };
  ASSIGN_OR_RETURN(std::shared_ptr<const internal::v1::StoredExamples> stored, Update(rig_id, tenant, change));
  const int left = stored->examples_size();
  Remember(std::move(stored));
  return left;
}

absl::Status ExampleStore::DeleteAll(const std::string& rig_id, const std::string& tenant) {
  RETURN_IF_ERROR(CheckTenantScope(rig_id, tenant));
  std::lock_guard<std::mutex> lock(SetMutex(rig_id, tenant));
  // The revision blob stays (a few bytes) and is bumped, so that a rig registered again
  // continues the count: a revision number never names two different sets.
  auto change = [&](const internal::v1::StoredExamples& old) -> absl::StatusOr<std::shared_ptr<internal::v1::StoredExamples>> {
    if (old.examples_size() == 0) return nullptr;
    return std::make_shared<internal::v1::StoredExamples>();  // no rig id: delete the set
  };
  absl::StatusOr<std::shared_ptr<const internal::v1::StoredExamples>> stored = Update(rig_id, tenant, change);
  cache_.Erase(SetKey(rig_id, tenant));
  return stored.status();
}

absl::Status ExampleStore::DeleteEveryTenant(const std::string& rig_id) {
  RETURN_IF_ERROR(DeleteAll(rig_id, ""));
  const std::string prefix = absl::StrCat("examples/", rig_id, "/");
  ASSIGN_OR_RETURN(const std::vector<std::string> keys, blobs_->List(prefix));
  for (const std::string& key : keys) {
    if (!absl::EndsWith(key, ".pb")) continue;
    RETURN_IF_ERROR(DeleteAll(rig_id, key.substr(prefix.size(), key.size() - prefix.size() - 3)));
  }
  return absl::OkStatus();
}

}  // namespace skinning
