#include "server/example_store.h"

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
#include "server/auth.h"
#include "server/convert/convert.h"

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
uint64_t RevisionNumber(const std::optional<std::string>& text) {
  uint64_t revision = 0;
  if (!text.has_value() || !absl::SimpleAtoi(*text, &revision)) return 0;
  return revision;
}
// Where the examples of tenant `tenant` of rig `rig_id` are described in messages.
std::string Describe(const std::string& rig_id, const std::string& tenant) {
  return tenant.empty() ? absl::StrCat("rig '", rig_id, "'") : absl::StrCat("rig '", rig_id, "' (tenant ", tenant, ")");
}

absl::Status CheckScope(const std::string& rig_id, const std::string& tenant) {
  if (auto s = RigStore::CheckRigId(rig_id); !s.ok()) return s;
  if (!tenant.empty())
    if (auto s = CheckTenantName(tenant); !s.ok()) return s;
  return absl::OkStatus();
}

size_t CachedBytes(const v1::StoredExamples& stored) { return stored.ByteSizeLong() * 2 + 256; }

absl::Status CheckName(const std::string& name) {
  if (name.size() > kMaxExampleNameBytes)
    return absl::InvalidArgumentError(absl::StrFormat("example.name has %d bytes, at most %d are allowed",
                                                      name.size(), kMaxExampleNameBytes));
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c == 0x7f)
      return absl::InvalidArgumentError(
          absl::StrFormat("example.name[%d] is control character 0x%02x", i, static_cast<int>(c)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::Example> ResolveExample(const LoadedRig& rig, const v1::AddExampleRequest& req) {
  const v1::Example& in = req.example();
  const Skeleton& skeleton = rig.rig.skeleton;
  if (auto s = CheckName(in.name()); !s.ok()) return s;
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
      if (auto s = TransformLengths(t, where); !s.ok()) return s;
      // Fields given replace the rest value; fields left empty keep it.
      Transform& local = pose.local[j];
      if (t.translation_size() == 3) local.translation = Eigen::Vector3d(t.translation(0), t.translation(1), t.translation(2));
      if (t.rotation_size() == 4) local.rotation = Eigen::Quaterniond(t.rotation(3), t.rotation(0), t.rotation(1), t.rotation(2));
      if (t.scale_size() == 3) local.scale = Eigen::Vector3d(t.scale(0), t.scale(1), t.scale(2));
    }
    if (auto s = ValidatePose(skeleton, pose, "joints_by_name"); !s.ok()) return s;
  } else if (in.pose().joints_size() == 0) {
    pose = RestPose(skeleton);
  } else {
    absl::StatusOr<Pose> p = PoseFromProto(in.pose(), skeleton, "example.pose");
    if (!p.ok()) return p.status();
    pose = *std::move(p);
  }

  v1::Example out;
  out.set_name(in.name());
  *out.mutable_pose() = PoseToProto(pose);
  // The canonical (float) pose must still be valid: re-read it as the poser will.
  if (absl::StatusOr<Pose> again = PoseFromProto(out.pose(), skeleton, "example.pose"); !again.ok())
    return again.status();
  *out.mutable_positions() = in.positions();
  return out;
}

ExampleStore::ExampleStore(std::shared_ptr<BlobStore> blobs, size_t cache_bytes)
    : blobs_(std::move(blobs)), cache_(cache_bytes) {}

std::mutex& ExampleStore::SetMutex(const std::string& rig_id, const std::string& tenant) {
  return rig_mu_[std::hash<std::string>()(SetKey(rig_id, tenant)) % rig_mu_.size()];
}

absl::StatusOr<std::shared_ptr<const v1::StoredExamples>> ExampleStore::Load(const std::string& rig_id,
                                                                             const std::string& tenant,
                                                                             std::optional<uint64_t> absent_revision) {
  auto stored = std::make_shared<v1::StoredExamples>();
  absl::StatusOr<std::string> bytes = blobs_->Get(ExamplesKey(rig_id, tenant));
  if (absl::IsNotFound(bytes.status())) {
    stored->set_format_version(kExamplesFormatVersion);
    stored->set_rig_id(rig_id);
    stored->set_tenant(tenant);
    // Kept by DeleteAll: revisions never repeat.
    stored->set_revision(absent_revision.has_value() ? *absent_revision : StoredRevision(rig_id, tenant));
    return std::shared_ptr<const v1::StoredExamples>(std::move(stored));
  }
  if (!bytes.ok()) return bytes.status();
  const std::string what = Describe(rig_id, tenant);
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
  return std::shared_ptr<const v1::StoredExamples>(std::move(stored));
}

absl::StatusOr<std::optional<std::string>> ExampleStore::ReadRevision(const std::string& rig_id,
                                                                     const std::string& tenant) {
  absl::StatusOr<std::string> text = blobs_->Get(RevisionKey(rig_id, tenant));
  if (absl::IsNotFound(text.status())) return std::nullopt;
  if (!text.ok()) return text.status();
  return std::optional<std::string>(*std::move(text));
}

uint64_t ExampleStore::StoredRevision(const std::string& rig_id, const std::string& tenant) {
  return RevisionNumber(ReadRevision(rig_id, tenant).value_or(std::nullopt));
}

ExampleSet ExampleStore::Remember(std::shared_ptr<const v1::StoredExamples> stored) {
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

absl::StatusOr<ExampleSet> ExampleStore::Get(const std::string& rig_id, const std::string& tenant) {
  if (auto s = CheckScope(rig_id, tenant); !s.ok()) return s;
  if (std::shared_ptr<const Cached> hit = cache_.Find(SetKey(rig_id, tenant))) {
    if (std::chrono::steady_clock::now() - hit->checked < kRecheck) return hit->set;
    if (StoredRevision(rig_id, tenant) == hit->set.stored->revision()) {
      Recheck(hit->set);  // still current: trust it for another kRecheck
      return hit->set;
    }
  }
  absl::StatusOr<std::shared_ptr<const v1::StoredExamples>> loaded = Load(rig_id, tenant);
  if (!loaded.ok()) return loaded.status();
  return Remember(*std::move(loaded));
}

absl::StatusOr<std::shared_ptr<const v1::StoredExamples>> ExampleStore::Update(const std::string& rig_id,
                                                                               const std::string& tenant,
                                                                               const Change& change) {
  const std::string rev_key = RevisionKey(rig_id, tenant);
  for (int attempt = 0; attempt < kUpdateAttempts; ++attempt) {
    // The guard first, then the set: a writer that lands in between changes the guard.
    absl::StatusOr<std::optional<std::string>> guard = ReadRevision(rig_id, tenant);
    if (!guard.ok()) return guard.status();
    const uint64_t guard_revision = RevisionNumber(*guard);
    absl::StatusOr<std::shared_ptr<const v1::StoredExamples>> current = Load(rig_id, tenant, guard_revision);
    if (!current.ok()) return current.status();
    // Both counts only grow; a crash between the two writes of the filesystem store may leave the
    // set one ahead of its .rev, so the next revision is past both.
    const uint64_t next_revision = std::max(guard_revision, (*current)->revision()) + 1;
    absl::StatusOr<std::shared_ptr<v1::StoredExamples>> next = change(**current);
    if (!next.ok()) return next.status();
    if (*next == nullptr) return *current;
    v1::StoredExamples& set = **next;
    const bool remove = set.rig_id().empty();  // DeleteAll's answer: delete the set's blob
    set.set_format_version(kExamplesFormatVersion);
    set.set_rig_id(rig_id);
    set.set_tenant(tenant);
    set.set_revision(next_revision);
    std::vector<BlobStore::Write> writes;
    writes.push_back({ExamplesKey(rig_id, tenant), remove ? std::nullopt : std::optional(set.SerializeAsString())});
    writes.push_back({rev_key, absl::StrCat(next_revision)});
    absl::StatusOr<bool> written = blobs_->WriteIf(rev_key, *guard, writes);
    if (!written.ok()) {
      cache_.Erase(SetKey(rig_id, tenant));  // the store may hold either version now
      return written.status();
    }
    if (*written) return std::shared_ptr<const v1::StoredExamples>(*std::move(next));
  }
  cache_.Erase(SetKey(rig_id, tenant));
  return absl::AbortedError(absl::StrFormat("the examples of %s changed under %d attempts to change them; retry",
                                            Describe(rig_id, tenant), kUpdateAttempts));
}

absl::StatusOr<v1::AddExampleResponse> ExampleStore::Add(const std::string& rig_id, const std::string& tenant,
                                                         v1::Example example, const Validator& validate) {
  if (auto s = CheckScope(rig_id, tenant); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(SetMutex(rig_id, tenant));
  const std::string what = Describe(rig_id, tenant);
  v1::AddExampleResponse resp;
  // Runs on the stored set itself (not the cache): another replica may have changed it.
  auto change = [&](const v1::StoredExamples& old) -> absl::StatusOr<std::shared_ptr<v1::StoredExamples>> {
    resp.Clear();
    // A retried call: the same name (or, for an unnamed example, any name) with the same pose and
    // positions is already there.
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
            what, " already has an example named '", example.name(),
            "' with a different pose or shape; remove it first or choose another name"));
      }
      resp.set_name(e.name());
      resp.set_example_count(static_cast<uint32_t>(old.examples_size()));
      resp.set_created(false);
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
    if (validate)
      if (auto s = validate(old, added); !s.ok()) return s;
    auto next = std::make_shared<v1::StoredExamples>(old);
    resp.set_name(added.name());
    resp.set_created(true);
    *next->add_examples() = std::move(added);
    resp.set_example_count(static_cast<uint32_t>(next->examples_size()));
    return next;
  };
  absl::StatusOr<std::shared_ptr<const v1::StoredExamples>> stored = Update(rig_id, tenant, change);
  if (!stored.ok()) return stored.status();
  Remember(*std::move(stored));
  return resp;
}

absl::StatusOr<v1::RemoveExampleResponse> ExampleStore::Remove(const std::string& rig_id, const std::string& tenant,
                                                               const std::string& name) {
  if (auto s = CheckScope(rig_id, tenant); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(SetMutex(rig_id, tenant));
  auto change = [&](const v1::StoredExamples& old) -> absl::StatusOr<std::shared_ptr<v1::StoredExamples>> {
    auto next = std::make_shared<v1::StoredExamples>(old);
    next->clear_examples();
    for (const v1::Example& e : old.examples())
      if (e.name() != name) *next->add_examples() = e;
    if (next->examples_size() == old.examples_size())
      return absl::NotFoundError(absl::StrFormat("%s has no example named '%s' (%d examples)",
                                                 Describe(rig_id, tenant), name, old.examples_size()));
    return next;
  };
  absl::StatusOr<std::shared_ptr<const v1::StoredExamples>> stored = Update(rig_id, tenant, change);
  if (!stored.ok()) return stored.status();
  v1::RemoveExampleResponse resp;
  resp.set_removed(true);
  resp.set_example_count(static_cast<uint32_t>((*stored)->examples_size()));
  Remember(*std::move(stored));
  return resp;
}

absl::Status ExampleStore::DeleteAll(const std::string& rig_id, const std::string& tenant) {
  if (auto s = CheckScope(rig_id, tenant); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(SetMutex(rig_id, tenant));
  // The revision blob stays (a few bytes) and is bumped, so that a rig registered again
  // continues the count: a revision number never names two different sets.
  auto change = [&](const v1::StoredExamples& old) -> absl::StatusOr<std::shared_ptr<v1::StoredExamples>> {
    if (old.examples_size() == 0) return nullptr;
    return std::make_shared<v1::StoredExamples>();  // no rig id: delete the set
  };
  absl::StatusOr<std::shared_ptr<const v1::StoredExamples>> stored = Update(rig_id, tenant, change);
  cache_.Erase(SetKey(rig_id, tenant));
  return stored.status();
}

absl::Status ExampleStore::DeleteEveryTenant(const std::string& rig_id) {
  if (auto s = DeleteAll(rig_id, ""); !s.ok()) return s;
  const std::string prefix = absl::StrCat("examples/", rig_id, "/");
  absl::StatusOr<std::vector<std::string>> keys = blobs_->List(prefix);
  if (!keys.ok()) return keys.status();
  for (const std::string& key : *keys) {
    if (!absl::EndsWith(key, ".pb")) continue;
    const std::string tenant = key.substr(prefix.size(), key.size() - prefix.size() - 3);
    if (auto s = DeleteAll(rig_id, tenant); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace skinning
