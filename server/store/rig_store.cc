#include "server/store/rig_store.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"
#include "google/protobuf/util/time_util.h"
#include "server/names.h"

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

// "rig 'rigs/<id>'" in messages.
std::string Quoted(const std::string& id) { return absl::StrCat("rig '", RigName(id), "'"); }

// The summary in `bytes` when it reads as the summary of rig `id`.
std::optional<internal::v1::StoredRigSummary> ParseSummary(const std::string& id, const std::string& bytes) {
  internal::v1::StoredRigSummary summary;
  if (!summary.ParseFromString(bytes) || summary.rig_id() != id) return std::nullopt;
  return summary;
}

}  // namespace

internal::v1::StoredRigSummary StoredSummary(const std::string& id, const Rig& rig, int64_t created_unix_ms,
                                             size_t stored_bytes) {
  internal::v1::StoredRigSummary summary;
  summary.set_rig_id(id);
  summary.set_display_name(rig.name);
  summary.set_vertex_count(static_cast<int>(rig.mesh.V.rows()));
  summary.set_triangle_count(static_cast<int>(rig.mesh.F.rows()));
  summary.set_joint_count(rig.skeleton.size());
  summary.set_has_weights(rig.has_weights());
  if (rig.sparse_weights) summary.set_influence_count(rig.sparse_weights->k());
  if (rig.dense_weights) summary.set_influence_count(rig.skeleton.size());
  for (const Joint& j : rig.skeleton.joints) summary.add_joint_names(j.name);
  summary.set_created_unix_ms(created_unix_ms);
  summary.set_stored_bytes(static_cast<int64_t>(stored_bytes));
  return summary;
}

v1::Rig SummaryFromStored(const internal::v1::StoredRigSummary& stored) {
  v1::Rig summary;
  summary.set_name(RigName(stored.rig_id()));
  summary.set_display_name(stored.display_name());
  summary.set_vertex_count(stored.vertex_count());
  summary.set_triangle_count(stored.triangle_count());
  summary.set_joint_count(stored.joint_count());
  if (stored.has_weights()) summary.set_influence_count(stored.influence_count());
  *summary.mutable_joint_names() = stored.joint_names();
  *summary.mutable_create_time() = google::protobuf::util::TimeUtil::MillisecondsToTimestamp(stored.created_unix_ms());
  summary.set_size_bytes(stored.stored_bytes());
  return summary;
}

std::shared_ptr<LoadedRig> PrepareRig(const std::string& id, Rig rig, v1::Rig summary) {
  auto loaded = std::make_shared<LoadedRig>();
  loaded->id = id;
  loaded->summary = std::move(summary);
  loaded->order = *TopologicalOrder(rig.skeleton);  // the rig was validated
  if (rig.has_weights()) loaded->weights = ExactSparseWeights(rig);
  const int nv = static_cast<int>(rig.mesh.V.rows());
  loaded->positions.resize(3 * nv);
  for (int i = 0; i < 3 * nv; ++i) loaded->positions[i] = static_cast<float>(rig.mesh.V.data()[i]);
  if (rig.mesh.N.rows() == nv) {
    loaded->normals.resize(3 * nv);
    for (int i = 0; i < 3 * nv; ++i) loaded->normals[i] = static_cast<float>(rig.mesh.N.data()[i]);
  }
  size_t morph_bytes = 0;
  for (const MorphTarget& t : rig.morph_targets) {
    std::vector<float> dv(3 * nv), dn;
    for (int i = 0; i < 3 * nv; ++i) dv[i] = static_cast<float>(t.dV.data()[i]);
    if (!loaded->normals.empty() && t.dN.rows() == nv) {
      dn.resize(3 * nv);
      for (int i = 0; i < 3 * nv; ++i) dn[i] = static_cast<float>(t.dN.data()[i]);
    }
    morph_bytes += (dv.size() + dn.size()) * 4 + t.dV.size() * 8 + t.dN.size() * 8;
    loaded->morph_positions.push_back(std::move(dv));
    loaded->morph_normals.push_back(std::move(dn));
  }
  loaded->rig = std::move(rig);
  const Rig& r = loaded->rig;
  loaded->bytes = sizeof(LoadedRig) + r.mesh.V.size() * 8 + r.mesh.F.size() * 4 + r.mesh.N.size() * 8 +
                  (r.sparse_weights ? r.sparse_weights->joints.size() * 8 : 0) +
                  (r.dense_weights ? r.dense_weights->size() * 8 : 0) +
                  loaded->weights.joints.size() * 8 + loaded->positions.size() * 4 +
                  loaded->normals.size() * 4 + r.skeleton.joints.size() * 256 + morph_bytes;
  return loaded;
}

RigStore::RigStore(std::shared_ptr<BlobStore> blobs, size_t cache_capacity_bytes, RigLimits limits)
    : blobs_(std::move(blobs)), limits_(limits), cache_(cache_capacity_bytes) {}

namespace {

// A joint marked non-deforming (Joint.non_deforming: it never receives weights) that the rig's
// own weights weight contradicts itself: refused when registered (stored rigs still load).
absl::Status CheckNonDeformingJointsHaveNoWeight(const Rig& rig) {
  const Skeleton& sk = rig.skeleton;
  auto refuse = [&](int j, int vertex) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "rig.skeleton.joints[%d] ('%s') is non_deforming, but rig.weights give it weight at vertex %d; clear "
        "non_deforming or its weights",
        j, sk.joints[j].name, vertex));
  };
  if (rig.sparse_weights) {
    const SparseWeights& W = *rig.sparse_weights;
    for (Eigen::Index i = 0; i < W.joints.rows(); ++i)
      for (Eigen::Index c = 0; c < W.joints.cols(); ++c)
        if (W.weights(i, c) > 0 && !sk.joints[W.joints(i, c)].deforms)
          return refuse(W.joints(i, c), static_cast<int>(i));
  } else if (rig.dense_weights) {
    const Eigen::MatrixXd& D = *rig.dense_weights;
    for (Eigen::Index j = 0; j < D.cols(); ++j) {
      if (sk.joints[j].deforms) continue;
      for (Eigen::Index i = 0; i < D.rows(); ++i)
        if (D(i, j) > 0) return refuse(static_cast<int>(j), static_cast<int>(i));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RegisterResult> RigStore::Register(const v1::Rig& proto, const std::string& tenant,
                                                  const std::function<absl::Status()>& still_wanted) {
  ASSIGN_OR_RETURN(Rig rig, RigFromProto(proto, limits_));
  RETURN_IF_ERROR(CheckNonDeformingJointsHaveNoWeight(rig));
  if (still_wanted) RETURN_IF_ERROR(still_wanted());
  internal::v1::StoredRig stored;
  stored.set_format_version(kRigFormatVersion);
  *stored.mutable_rig() = RigToProto(rig);
  const std::string id = RigId(stored.rig());
  stored.set_rig_id(id);
  if (still_wanted) RETURN_IF_ERROR(still_wanted());

  RegisterResult result;
  result.rig_id = id;
  ASSIGN_OR_RETURN(const bool exists, blobs_->Exists(RigKey(id)));
  bool stored_now = true;
  if (exists) {
    absl::StatusOr<std::shared_ptr<const LoadedRig>> loaded = Get(id);
    if (loaded.ok()) {
      result.summary = (*loaded)->summary;
      stored_now = false;
      // The summary is written after the artifact: a process that died, or a disk that filled,
      // between the two writes left the rig without it (unlisted), and registering it again
      // writes it.
      absl::StatusOr<std::string> info = blobs_->Get(InfoKey(id));
      if (!info.ok() && !absl::IsNotFound(info.status()) && !absl::IsDataLoss(info.status())) return info.status();
      if (!info.ok() || !ParseSummary(id, *info)) RETURN_IF_ERROR(PutSummary(**loaded));
    }
    // A stored artifact that no longer reads is replaced below.
  }
  if (stored_now) {
    stored.set_created_unix_ms(NowUnixMs());
    const std::string bytes = stored.SerializeAsString();
    RETURN_IF_ERROR(blobs_->Put(RigKey(id), bytes));
    const internal::v1::StoredRigSummary summary = StoredSummary(id, rig, stored.created_unix_ms(), bytes.size());
    RETURN_IF_ERROR(blobs_->Put(InfoKey(id), summary.SerializeAsString()));
    result.created = true;
    result.summary = SummaryFromStored(summary);
    CacheInsert(PrepareRig(id, std::move(rig), result.summary));
  }
  if (tenant.empty()) return result;
  // The marker is written after the artifact, so a marker never precedes its rig.
  ASSIGN_OR_RETURN(const bool owned, blobs_->Exists(OwnerKey(id, tenant)));
  if (!owned) {
    RETURN_IF_ERROR(blobs_->Put(OwnerKey(id, tenant), ""));
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
  ASSIGN_OR_RETURN(const bool exists, blobs_->Exists(RigKey(id)));
  if (exists) return absl::PermissionDeniedError(absl::StrCat(Quoted(id), " belongs to another tenant"));
  return absl::NotFoundError(absl::StrCat(Quoted(id), " not found"));
}

absl::Status RigStore::CheckAccess(const std::string& id, const std::string& tenant) {
  RETURN_IF_ERROR(CheckRigId(id));
  if (OwnershipCached(id, tenant)) return absl::OkStatus();
  if (tenant.empty()) {
    // Without tenants a rig in the cache is checked against the store as an owned one is (at most
    // kOwnershipCacheTtl old): deleted on another replica, or the store emptied, it was served
    // from the cache for as long as it stayed there. A rig not in the cache is read from the store.
    if (cache_.Find(id) == nullptr) return absl::OkStatus();
    ASSIGN_OR_RETURN(const bool stored, blobs_->Exists(RigKey(id)));
    if (!stored) {
      cache_.Erase(id);
      return absl::NotFoundError(absl::StrCat(Quoted(id), " not found"));
    }
    CacheOwnership(id, tenant);
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const bool owned, blobs_->Exists(OwnerKey(id, tenant)));
  if (!owned) return NotOwned(id);
  CacheOwnership(id, tenant);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const LoadedRig>> RigStore::GetForTenant(const std::string& id,
                                                                        const std::string& tenant) {
  RETURN_IF_ERROR(CheckAccess(id, tenant));
  return Get(id);
}

bool RigStore::Resident(const std::string& id, const std::string& tenant) {
  if (!CheckRigId(id).ok()) return true;
  return OwnershipCached(id, tenant) && cache_.Peek(id) != nullptr;
}

absl::StatusOr<std::shared_ptr<const LoadedRig>> RigStore::Get(const std::string& id) {
  RETURN_IF_ERROR(CheckRigId(id));
  if (auto hit = cache_.Find(id)) return hit;
  absl::StatusOr<std::string> bytes = blobs_->Get(RigKey(id));
  if (absl::IsNotFound(bytes.status())) return absl::NotFoundError(absl::StrCat(Quoted(id), " not found"));
  RETURN_IF_ERROR(bytes.status());
  const std::string what = absl::StrCat("stored ", Quoted(id));
  internal::v1::StoredRig stored;
  if (!stored.ParseFromString(*bytes)) return absl::DataLossError(absl::StrCat(what, " is corrupt (does not parse)"));
  if (stored.format_version() != kRigFormatVersion)
    return absl::DataLossError(absl::StrFormat("%s has format version %d, this server reads %d", what,
                                               stored.format_version(), kRigFormatVersion));
  if (stored.rig_id() != id) return absl::DataLossError(absl::StrCat(what, " holds rig '", stored.rig_id(), "'"));
  absl::StatusOr<Rig> rig = RigFromProto(stored.rig(), limits_);
  if (!rig.ok()) return absl::DataLossError(absl::StrCat(what, " is invalid: ", rig.status().message()));
  if (RigId(RigToProto(*rig)) != id)
    return absl::DataLossError(absl::StrCat(what, " does not match its content address"));
  v1::Rig summary = SummaryFromStored(StoredSummary(id, *rig, stored.created_unix_ms(), bytes->size()));
  std::shared_ptr<const LoadedRig> loaded = PrepareRig(id, *std::move(rig), std::move(summary));
  CacheInsert(loaded);
  return loaded;
}

const DqsLaneOrder& RigStore::DqsLanes(const LoadedRig& rig) {
  size_t prepared = 0;
  const DqsLaneOrder& lanes = rig.dqs_lanes.Get(rig.weights, &prepared);
  if (prepared > 0) cache_.Grow(rig.id, &rig, prepared);
  return lanes;
}

absl::StatusOr<bool> RigStore::Stored(const std::string& id) {
  RETURN_IF_ERROR(CheckRigId(id));
  return blobs_->Exists(RigKey(id));
}

absl::StatusOr<bool> RigStore::Delete(const std::string& id, const std::string& tenant) {
  RETURN_IF_ERROR(CheckRigId(id));
  if (!tenant.empty()) {
    ForgetOwnership(id, tenant);
    ASSIGN_OR_RETURN(const bool had, blobs_->Delete(OwnerKey(id, tenant)));
    if (!had) {
      absl::Status not_owned = NotOwned(id);
      if (absl::IsNotFound(not_owned)) return false;
      return not_owned;
    }
    // The stored rig stays while another tenant owns it. (Listing every marker is linear in
    // the number of markers; deletes are rare.)
    ASSIGN_OR_RETURN(const std::vector<std::string> markers, blobs_->List(kTenantsPrefix));
    const std::string suffix = absl::StrCat("/rigs/", id);
    for (const std::string& key : markers)
      if (absl::EndsWith(key, suffix)) return true;
  }
  cache_.Erase(id);
  ForgetOwnership(id, "");
  ASSIGN_OR_RETURN(const bool removed, blobs_->Delete(RigKey(id)));
  RETURN_IF_ERROR(blobs_->Delete(InfoKey(id)).status());
  return tenant.empty() ? removed : true;
}

absl::Status RigStore::PutSummary(const LoadedRig& rig) {
  const internal::v1::StoredRigSummary summary =
      StoredSummary(rig.id, rig.rig, google::protobuf::util::TimeUtil::TimestampToMilliseconds(rig.summary.create_time()),
                    static_cast<size_t>(rig.summary.size_bytes()));
  return blobs_->Put(InfoKey(rig.id), summary.SerializeAsString());
}

absl::StatusOr<std::vector<v1::Rig>> RigStore::List(const std::string& tenant) {
  std::vector<std::string> ids;
  if (tenant.empty()) {
    // Rigs are the artifacts; a summary without its artifact (a delete that stopped half way) is
    // not listed.
    ASSIGN_OR_RETURN(const std::vector<std::string> keys, blobs_->List("rigs/"));
    for (const std::string& key : keys)
      if (absl::EndsWith(key, ".pb")) ids.push_back(key.substr(5, key.size() - 8));
  } else {
    const std::string prefix = OwnerPrefix(tenant);
    ASSIGN_OR_RETURN(const std::vector<std::string> keys, blobs_->List(prefix));
    for (const std::string& key : keys) ids.push_back(key.substr(prefix.size()));
  }
  std::sort(ids.begin(), ids.end());
  std::vector<v1::Rig> summaries;
  for (const std::string& id : ids) {
    absl::StatusOr<std::string> bytes = blobs_->Get(InfoKey(id));
    if (!bytes.ok() && !absl::IsNotFound(bytes.status()) && !absl::IsDataLoss(bytes.status())) return bytes.status();
    if (bytes.ok()) {
      if (std::optional<internal::v1::StoredRigSummary> stored = ParseSummary(id, *bytes)) {
        summaries.push_back(SummaryFromStored(*stored));
        continue;
      }
    }
    // No summary, or one that does not read (see Register): written again from the rig, which
    // is listed if it loads. One that does not (deleted meanwhile, or damaged: GetRig says so)
    // is left out.
    absl::StatusOr<std::shared_ptr<const LoadedRig>> rig = Get(id);
    if (!rig.ok()) continue;
    summaries.push_back((*rig)->summary);
    (void)PutSummary(**rig);  // listed either way; the next list or register tries again
  }
  return summaries;
}

}  // namespace skinning
