#include "server/store/rig_store.h"

#include <chrono>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "skinning/v1/store.pb.h"

namespace skinning {
namespace {

std::string RigKey(const std::string& id) { return absl::StrCat("rigs/", id, ".pb"); }
std::string InfoKey(const std::string& id) { return absl::StrCat("rigs/", id, ".info"); }
// Ownership markers: tenants/<tenant>/rigs/<rig id>, empty.
constexpr char kTenantsPrefix[] = "tenants/";
std::string OwnerPrefix(const std::string& tenant) {
  return absl::StrCat(kTenantsPrefix, tenant, "/rigs/");
}
std::string OwnerKey(const std::string& id, const std::string& tenant) {
  return OwnerPrefix(tenant) + id;
}

// The ownership cache is cleared when it grows past this many entries.
constexpr size_t kMaxOwnershipEntries = 100000;

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

v1::RigInfo MakeInfo(const std::string& id, const Rig& rig, int64_t created_ms, size_t stored_bytes) {
  v1::RigInfo info;
  info.set_rig_id(id);
  info.set_name(rig.name);
  info.set_vertex_count(static_cast<uint32_t>(rig.mesh.V.rows()));
  info.set_triangle_count(static_cast<uint32_t>(rig.mesh.F.rows()));
  info.set_joint_count(static_cast<uint32_t>(rig.skeleton.size()));
  info.set_has_weights(rig.has_weights());
  if (rig.sparse_weights) info.set_influences_per_vertex(rig.sparse_weights->k());
  if (rig.dense_weights) info.set_influences_per_vertex(static_cast<uint32_t>(rig.skeleton.size()));
  for (const Joint& j : rig.skeleton.joints) info.add_joint_names(j.name);
  info.set_created_unix_ms(created_ms);
  info.set_stored_bytes(stored_bytes);
  return info;
}

}  // namespace

std::shared_ptr<LoadedRig> PrepareRig(const std::string& id, Rig rig, v1::RigInfo info) {
  auto loaded = std::make_shared<LoadedRig>();
  loaded->id = id;
  loaded->info = std::move(info);
  loaded->order = *TopologicalOrder(rig.skeleton);  // the rig was validated
  if (rig.has_weights()) loaded->weights = ExactSparseWeights(rig);
  const int nv = static_cast<int>(rig.mesh.V.rows());
  loaded->positions.resize(3 * nv);
  for (int i = 0; i < 3 * nv; ++i) loaded->positions[i] = static_cast<float>(rig.mesh.V.data()[i]);
  if (rig.mesh.N.rows() == nv) {
    loaded->normals.resize(3 * nv);
    for (int i = 0; i < 3 * nv; ++i) loaded->normals[i] = static_cast<float>(rig.mesh.N.data()[i]);
  }
  loaded->rig = std::move(rig);
  const Rig& r = loaded->rig;
  loaded->bytes = sizeof(LoadedRig) + r.mesh.V.size() * 8 + r.mesh.F.size() * 4 + r.mesh.N.size() * 8 +
                  (r.sparse_weights ? r.sparse_weights->joints.size() * 8 : 0) +
                  (r.dense_weights ? r.dense_weights->size() * 8 : 0) +
                  loaded->weights.joints.size() * 8 + loaded->positions.size() * 4 +
                  loaded->normals.size() * 4 + r.skeleton.joints.size() * 256;
  return loaded;
}

RigStore::RigStore(std::shared_ptr<BlobStore> blobs, size_t cache_capacity_bytes, RigLimits limits)
    : blobs_(std::move(blobs)), limits_(limits), cache_(cache_capacity_bytes) {}

absl::Status RigStore::CheckRigId(const std::string& id) {
  bool ok = id.size() == 36 && absl::StartsWith(id, "rig-");
  for (size_t i = 4; ok && i < id.size(); ++i)
    ok = (id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f');
  if (!ok)
    return absl::InvalidArgumentError(
        absl::StrCat("rig_id '", id.substr(0, 64), "' is malformed (expected rig- and 32 hex digits)"));
  return absl::OkStatus();
}

absl::StatusOr<RegisterResult> RigStore::Register(const v1::Rig& proto, const std::string& tenant,
                                                  const std::function<absl::Status()>& still_wanted) {
  absl::StatusOr<Rig> rig = RigFromProto(proto, limits_);
  if (!rig.ok()) return rig.status();
  if (still_wanted)
    if (absl::Status s = still_wanted(); !s.ok()) return s;
  v1::StoredRig stored;
  stored.set_format_version(kRigFormatVersion);
  *stored.mutable_rig() = RigToProto(*rig);
  const std::string id = RigId(stored.rig());
  stored.set_rig_id(id);
  if (still_wanted)
    if (absl::Status s = still_wanted(); !s.ok()) return s;

  RegisterResult result;
  result.rig_id = id;
  absl::StatusOr<bool> exists = blobs_->Exists(RigKey(id));
  if (!exists.ok()) return exists.status();
  bool stored_now = true;
  if (*exists) {
    absl::StatusOr<std::shared_ptr<const LoadedRig>> loaded = Get(id);
    if (loaded.ok()) {
      result.info = (*loaded)->info;
      stored_now = false;
    }
    // A stored artifact that no longer reads is replaced below.
  }
  if (stored_now) {
    stored.set_created_unix_ms(NowUnixMs());
    const std::string bytes = stored.SerializeAsString();
    if (auto s = blobs_->Put(RigKey(id), bytes); !s.ok()) return s;
    v1::RigInfo info = MakeInfo(id, *rig, stored.created_unix_ms(), bytes.size());
    if (auto s = blobs_->Put(InfoKey(id), info.SerializeAsString()); !s.ok()) return s;
    result.created = true;
    result.info = info;
    CacheInsert(PrepareRig(id, *std::move(rig), std::move(info)));
  }
  if (tenant.empty()) return result;
  // The marker is written after the artifact, so a marker never precedes its rig.
  absl::StatusOr<bool> owned = blobs_->Exists(OwnerKey(id, tenant));
  if (!owned.ok()) return owned.status();
  if (!*owned) {
    if (auto s = blobs_->Put(OwnerKey(id, tenant), ""); !s.ok()) return s;
    result.created = true;
  }
  CacheOwnership(id, tenant);
  return result;
}

bool RigStore::OwnershipCached(const std::string& id, const std::string& tenant) {
  std::lock_guard<std::mutex> lock(ownership_mu_);
  auto it = ownership_.find(absl::StrCat(tenant, "/", id));
  if (it == ownership_.end()) return false;
  if (it->second > std::chrono::steady_clock::now()) return true;
  ownership_.erase(it);
  return false;
}

void RigStore::CacheOwnership(const std::string& id, const std::string& tenant) {
  std::lock_guard<std::mutex> lock(ownership_mu_);
  if (ownership_.size() >= kMaxOwnershipEntries) ownership_.clear();
  ownership_[absl::StrCat(tenant, "/", id)] = std::chrono::steady_clock::now() + kOwnershipCacheTtl;
}

void RigStore::ForgetOwnership(const std::string& id, const std::string& tenant) {
  std::lock_guard<std::mutex> lock(ownership_mu_);
  ownership_.erase(absl::StrCat(tenant, "/", id));
}

absl::Status RigStore::NotOwned(const std::string& id) {
  absl::StatusOr<bool> exists = blobs_->Exists(RigKey(id));
  if (!exists.ok()) return exists.status();
  if (*exists)
    return absl::PermissionDeniedError(absl::StrCat("rig '", id, "' belongs to another tenant"));
  return absl::NotFoundError(absl::StrCat("rig '", id, "' not found"));
}

absl::Status RigStore::CheckAccess(const std::string& id, const std::string& tenant) {
  if (auto s = CheckRigId(id); !s.ok()) return s;
  if (tenant.empty() || OwnershipCached(id, tenant)) return absl::OkStatus();
  absl::StatusOr<bool> owned = blobs_->Exists(OwnerKey(id, tenant));
  if (!owned.ok()) return owned.status();
  if (!*owned) return NotOwned(id);
  CacheOwnership(id, tenant);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const LoadedRig>> RigStore::GetForTenant(const std::string& id,
                                                                        const std::string& tenant) {
  if (auto s = CheckAccess(id, tenant); !s.ok()) return s;
  return Get(id);
}

absl::StatusOr<std::shared_ptr<const LoadedRig>> RigStore::Get(const std::string& id) {
  if (auto s = CheckRigId(id); !s.ok()) return s;
  if (auto hit = cache_.Find(id)) return hit;
  absl::StatusOr<std::string> bytes = blobs_->Get(RigKey(id));
  if (!bytes.ok()) {
    if (absl::IsNotFound(bytes.status()))
      return absl::NotFoundError(absl::StrCat("rig '", id, "' not found"));
    return bytes.status();
  }
  v1::StoredRig stored;
  if (!stored.ParseFromString(*bytes))
    return absl::DataLossError(absl::StrCat("stored rig '", id, "' is corrupt (does not parse)"));
  if (stored.format_version() != kRigFormatVersion)
    return absl::DataLossError(absl::StrFormat("stored rig '%s' has format version %d, this server reads %d",
                                               id, stored.format_version(), kRigFormatVersion));
  if (stored.rig_id() != id)
    return absl::DataLossError(absl::StrCat("stored rig '", id, "' holds rig '", stored.rig_id(), "'"));
  absl::StatusOr<Rig> rig = RigFromProto(stored.rig(), limits_);
  if (!rig.ok())
    return absl::DataLossError(absl::StrCat("stored rig '", id, "' is invalid: ", rig.status().message()));
  if (RigId(RigToProto(*rig)) != id)
    return absl::DataLossError(absl::StrCat("stored rig '", id, "' does not match its content address"));
  v1::RigInfo info = MakeInfo(id, *rig, stored.created_unix_ms(), bytes->size());
  std::shared_ptr<const LoadedRig> loaded = PrepareRig(id, *std::move(rig), std::move(info));
  CacheInsert(loaded);
  return loaded;
}

absl::StatusOr<bool> RigStore::Delete(const std::string& id, const std::string& tenant) {
  if (auto s = CheckRigId(id); !s.ok()) return s;
  if (!tenant.empty()) {
    ForgetOwnership(id, tenant);
    absl::StatusOr<bool> had = blobs_->Delete(OwnerKey(id, tenant));
    if (!had.ok()) return had.status();
    if (!*had) {
      absl::Status not_owned = NotOwned(id);
      if (absl::IsNotFound(not_owned)) return false;
      return not_owned;
    }
    // The stored rig stays while another tenant owns it. (Listing every marker is linear in
    // the number of markers; deletes are rare.)
    absl::StatusOr<std::vector<std::string>> markers = blobs_->List(kTenantsPrefix);
    if (!markers.ok()) return markers.status();
    const std::string suffix = absl::StrCat("/rigs/", id);
    for (const std::string& key : *markers)
      if (absl::EndsWith(key, suffix)) return true;
  }
  cache_.Erase(id);
  absl::StatusOr<bool> removed = blobs_->Delete(RigKey(id));
  if (!removed.ok()) return removed.status();
  absl::StatusOr<bool> info_removed = blobs_->Delete(InfoKey(id));
  if (!info_removed.ok()) return info_removed.status();
  return tenant.empty() ? *removed : true;
}

absl::StatusOr<std::vector<v1::RigInfo>> RigStore::List(const std::string& tenant) {
  std::vector<std::string> info_keys;
  if (tenant.empty()) {
    absl::StatusOr<std::vector<std::string>> keys = blobs_->List("rigs/");
    if (!keys.ok()) return keys.status();
    for (std::string& key : *keys)
      if (absl::EndsWith(key, ".info")) info_keys.push_back(std::move(key));
  } else {
    const std::string prefix = OwnerPrefix(tenant);
    absl::StatusOr<std::vector<std::string>> keys = blobs_->List(prefix);
    if (!keys.ok()) return keys.status();
    for (const std::string& key : *keys) info_keys.push_back(InfoKey(key.substr(prefix.size())));
  }
  std::vector<v1::RigInfo> infos;
  for (const std::string& key : info_keys) {
    absl::StatusOr<std::string> bytes = blobs_->Get(key);
    if (!bytes.ok()) continue;  // deleted meanwhile
    v1::RigInfo info;
    if (info.ParseFromString(*bytes)) infos.push_back(std::move(info));
  }
  return infos;
}

}  // namespace skinning
