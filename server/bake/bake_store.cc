#include "server/bake/bake_store.h"

#include <chrono>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/process_stats.h"
#include "core/util/status_macros.h"
#include "google/protobuf/util/time_util.h"
#include "server/bake/bake_options.h"
#include "server/names.h"

namespace skinning {
namespace {

using google::protobuf::util::TimeUtil;

constexpr absl::string_view kBakeKeyPrefix = "bakes/", kBakeKeySuffix = ".pb";
std::string BakeKey(const std::string& bake_id) { return absl::StrCat(kBakeKeyPrefix, bake_id, kBakeKeySuffix); }
// The rig's index of its stored bakes: an empty marker per bake, so that deleting the rig finds
// them without reading every stored bake.
std::string RigBakesPrefix(const std::string& rig_id) { return absl::StrCat("rig-bakes/", rig_id, "/"); }
std::string RigBakeKey(const std::string& rig_id, const std::string& bake_id) {
  return absl::StrCat(RigBakesPrefix(rig_id), bake_id);
}

constexpr absl::string_view kPendingPrefix = "bakejobs/", kPendingSuffix = ".pb";
std::string PendingKey(const std::string& bake_id) { return absl::StrCat(kPendingPrefix, bake_id, kPendingSuffix); }

// Headers are small (options and report; a tet mesh in the options is the exception).
constexpr size_t kHeaderCacheBytes = size_t{16} << 20;

// What a cached header costs in memory: the message as it lies in memory (SpaceUsedLong, several
// times its serialized size), the key twice (list entry and index) and the nodes and control
// block around them. Counting the serialized size let the cache hold 5× its budget.
size_t HeaderBytes(const std::string& bake_id, const internal::v1::StoredBake& header) {
  return header.SpaceUsedLong() + 2 * bake_id.size() + 160;
}

}  // namespace

std::shared_ptr<const internal::v1::StoredBake> StoredBakeHeader(const internal::v1::StoredBake& stored) {
  auto header = std::make_shared<internal::v1::StoredBake>();
  // Every field but the artifact, without copying the artifact first.
  header->set_format_version(stored.format_version());
  header->set_bake_id(stored.bake_id());
  header->set_rig_id(stored.rig_id());
  *header->mutable_options() = stored.options();
  *header->mutable_report() = stored.report();
  header->set_created_unix_ms(stored.created_unix_ms());
  header->set_tenant(stored.tenant());
  if (stored.has_create_time()) *header->mutable_create_time() = stored.create_time();
  if (stored.has_start_time()) *header->mutable_start_time() = stored.start_time();
  return header;
}

BakeStore::BakeStore(std::shared_ptr<BlobStore> blobs, RigStore* rigs, const RecipeRegistry* recipes,
                     size_t cache_bytes, BakeLoadObserver* observer)
    : blobs_(std::move(blobs)),
      rigs_(rigs),
      recipes_(recipes),
      observer_(observer),
      loaded_(cache_bytes),
      headers_(kHeaderCacheBytes) {}

absl::Status BakeStore::Put(const internal::v1::StoredBake& stored, std::shared_ptr<const LoadedBake> loaded) {
  // The index entry first: a bake is never stored without it (a crash between the two leaves an
  // entry without its bake, which DeleteForRig passes over).
  RETURN_IF_ERROR(blobs_->Put(RigBakeKey(stored.rig_id(), stored.bake_id()), ""));
  RETURN_IF_ERROR(blobs_->Put(BakeKey(stored.bake_id()), stored.SerializeAsString()));
  headers_.Insert(stored.bake_id(), loaded->header, HeaderBytes(stored.bake_id(), *loaded->header));
  loaded_.Insert(stored.bake_id(), loaded, loaded->bytes);
  return absl::OkStatus();
}

absl::StatusOr<bool> BakeStore::Stored(const std::string& bake_id) { return blobs_->Exists(BakeKey(bake_id)); }

absl::StatusOr<std::string> BakeStore::PutPending(const std::string& bake_id,
                                                  const internal::v1::PendingBake& pending) {
  std::string bytes = pending.SerializeAsString();
  RETURN_IF_ERROR(blobs_->Put(PendingKey(bake_id), bytes));
  return bytes;
}

absl::StatusOr<bool> BakeStore::UpdatePending(const std::string& bake_id, const std::string& expected,
                                              const internal::v1::PendingBake& pending, std::string* written) {
  *written = pending.SerializeAsString();
  const std::string key = PendingKey(bake_id);
  return blobs_->WriteIf(key, expected, {BlobStore::Write{key, *written}});
}

absl::Status BakeStore::DeletePending(const std::string& bake_id) { return blobs_->Delete(PendingKey(bake_id)).status(); }

absl::StatusOr<std::vector<BakeStore::PendingRecord>> BakeStore::Pending() {
  ASSIGN_OR_RETURN(const std::vector<std::string> keys, blobs_->List(std::string(kPendingPrefix)));
  std::vector<PendingRecord> out;
  for (const std::string& key : keys) {
    absl::string_view id = key;
    if (!absl::ConsumePrefix(&id, kPendingPrefix) || !absl::ConsumeSuffix(&id, kPendingSuffix)) continue;
    ASSIGN_OR_RETURN(std::optional<PendingRecord> record, PendingOf(std::string(id)));
    if (record) out.push_back(*std::move(record));  // (none: ended meanwhile, or did not parse)
  }
  return out;
}

absl::StatusOr<std::optional<BakeStore::PendingRecord>> BakeStore::PendingOf(const std::string& bake_id) {
  const std::string key = PendingKey(bake_id);
  absl::StatusOr<std::string> bytes = blobs_->Get(key);
  if (absl::IsNotFound(bytes.status())) return std::nullopt;
  RETURN_IF_ERROR(bytes.status());
  PendingRecord record;
  if (!record.bake.ParseFromString(*bytes)) {
    (void)blobs_->Delete(key);
    return std::nullopt;
  }
  record.bake_id = bake_id;
  record.bytes = *std::move(bytes);
  return record;
}

bool QueuedByARunningServerHere(const internal::v1::PendingBake& record) {
  return record.host() == HostName() && !record.writer().empty() && !WriterEnded(record.writer());
}

std::string WriterPid(const std::string& writer) { return writer.substr(0, writer.find('-')); }

absl::StatusOr<bool> BakeStore::ClaimPending(const PendingRecord& record) {
  internal::v1::PendingBake mine = record.bake;
  mine.set_host(HostName());
  mine.set_writer(ThisProcessWriter());
  const std::string key = PendingKey(record.bake_id);
  return blobs_->WriteIf(key, record.bytes, {BlobStore::Write{key, mine.SerializeAsString()}});
}

absl::StatusOr<bool> BakeStore::Delete(const std::string& rig_id, const std::string& bake_id) {
  loaded_.Erase(bake_id);
  headers_.Erase(bake_id);
  ASSIGN_OR_RETURN(const bool had, blobs_->Delete(BakeKey(bake_id)));
  RETURN_IF_ERROR(blobs_->Delete(RigBakeKey(rig_id, bake_id)).status());  // after the bake: never a bake without it
  return had;
}

absl::StatusOr<int> BakeStore::DeleteForRig(const std::string& rig_id) {
  RETURN_IF_ERROR(CheckRigId(rig_id));
  const std::string prefix = RigBakesPrefix(rig_id);
  ASSIGN_OR_RETURN(const std::vector<std::string> keys, blobs_->List(prefix));
  int deleted = 0;
  for (const std::string& key : keys) {
    const std::string bake_id = key.substr(prefix.size());
    if (!IsBakeId(bake_id)) continue;  // not an entry this server wrote
    ASSIGN_OR_RETURN(const bool had, Delete(rig_id, bake_id));
    deleted += had ? 1 : 0;
  }
  return deleted;
}

absl::StatusOr<BakeStore::OlderBakes> BakeStore::IndexOlderBakes() {
  ASSIGN_OR_RETURN(const std::vector<std::string> entries, blobs_->List("rig-bakes/"));
  absl::flat_hash_set<std::string> indexed;
  for (const std::string& key : entries) indexed.insert(key.substr(key.rfind('/') + 1));
  ASSIGN_OR_RETURN(const std::vector<std::string> keys, blobs_->List(std::string(kBakeKeyPrefix)));
  OlderBakes older;
  for (const std::string& key : keys) {
    absl::string_view id = key;  // BakeKey's inverse
    if (!absl::ConsumePrefix(&id, kBakeKeyPrefix) || !absl::ConsumeSuffix(&id, kBakeKeySuffix)) continue;
    const std::string bake_id(id);
    if (!IsBakeId(bake_id) || indexed.contains(bake_id)) continue;
    absl::StatusOr<std::shared_ptr<internal::v1::StoredBake>> stored = Read(bake_id);
    if (absl::IsNotFound(stored.status())) continue;  // deleted since the listing
    if (absl::IsDataLoss(stored.status())) {
      ++older.unreadable;
      continue;
    }
    RETURN_IF_ERROR(stored.status());
    const std::string& rig_id = (*stored)->rig_id();
    ASSIGN_OR_RETURN(const bool rig_stored, rigs_->Stored(rig_id));
    if (rig_stored) {
      RETURN_IF_ERROR(blobs_->Put(RigBakeKey(rig_id, bake_id), ""));
      // A DeleteRig on another replica between the check above and this entry listed the rig's
      // bakes without this one: checked again, as BakeRunner does after storing a bake.
      ASSIGN_OR_RETURN(const bool still_stored, rigs_->Stored(rig_id));
      if (!still_stored) {
        RETURN_IF_ERROR(Delete(rig_id, bake_id).status());
        ++older.deleted;
        continue;
      }
      ++older.indexed;
    } else {
      RETURN_IF_ERROR(Delete(rig_id, bake_id).status());
      ++older.deleted;
    }
  }
  return older;
}

absl::StatusOr<std::shared_ptr<internal::v1::StoredBake>> BakeStore::Read(const std::string& bake_id) {
  ASSIGN_OR_RETURN(const std::string bytes, blobs_->Get(BakeKey(bake_id)));
  auto stored = std::make_shared<internal::v1::StoredBake>();
  const std::string what = absl::StrCat("stored bake '", bake_id, "'");
  if (!stored->ParseFromString(bytes)) return absl::DataLossError(absl::StrCat(what, " is corrupt (does not parse)"));
  if (stored->format_version() != kBakeFormatVersion)
    return absl::DataLossError(absl::StrFormat("%s has format version %d, this server reads %d", what,
                                               stored->format_version(), kBakeFormatVersion));
  if (stored->bake_id() != bake_id || BakeId(stored->rig_id(), stored->options()) != bake_id)
    return absl::DataLossError(absl::StrCat(what, " does not match its content address"));
  if (recipes_->Find(stored->options().method_case()) == nullptr)
    return absl::DataLossError(absl::StrCat(what, " is of a method this server does not know"));
  return stored;
}

absl::StatusOr<std::shared_ptr<const internal::v1::StoredBake>> BakeStore::Header(const std::string& bake_id) {
  if (std::shared_ptr<const internal::v1::StoredBake> hit = headers_.Find(bake_id)) {
    // Still stored? Another replica may have deleted it with its rig (DeleteForRig); one EXISTS
    // per status call, none per frame (Load answers from its cache).
    ASSIGN_OR_RETURN(const bool stored, blobs_->Exists(BakeKey(bake_id)));
    if (stored) return hit;
    headers_.Erase(bake_id);
    loaded_.Erase(bake_id);
    return absl::NotFoundError(absl::StrCat("stored bake '", bake_id, "' not found"));
  }
  ASSIGN_OR_RETURN(std::shared_ptr<internal::v1::StoredBake> stored, Read(bake_id));
  std::shared_ptr<const internal::v1::StoredBake> header = StoredBakeHeader(*stored);
  headers_.Insert(bake_id, header, HeaderBytes(bake_id, *header));
  return header;
}

absl::StatusOr<std::shared_ptr<const LoadedBake>> BakeStore::Load(const std::string& bake_id) {
  if (std::shared_ptr<const LoadedBake> hit = loaded_.Find(bake_id)) return hit;
  const auto t0 = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(std::shared_ptr<internal::v1::StoredBake> stored, Read(bake_id));
  absl::StatusOr<std::shared_ptr<const LoadedRig>> rig = rigs_->Get(stored->rig_id());
  if (!rig.ok())
    return absl::Status(rig.status().code(), absl::StrCat("bake '", BakeName(stored->rig_id(), bake_id),
                                                          "': ", rig.status().message()));
  const Recipe& recipe = *recipes_->Find(stored->options().method_case());
  ASSIGN_OR_RETURN(BakeResult result, recipe.Restore(*stored, **rig));
  ASSIGN_OR_RETURN(std::shared_ptr<const LoadedBake> loaded,
                   PrepareBake(recipe, StoredBakeHeader(*stored), std::move(result), **rig));
  loaded_.Insert(bake_id, loaded, loaded->bytes);
  headers_.Insert(bake_id, loaded->header, HeaderBytes(bake_id, *loaded->header));  // read once for both
  ++loads_;
  if (observer_ != nullptr)
    observer_->OnBakeLoad(recipe.name(),
                          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return loaded;
}

const DqsLaneOrder& BakeStore::DqsLanes(const LoadedBake& bake) {
  size_t prepared = 0;
  const DqsLaneOrder& lanes = bake.dqs_lanes.Get(bake.sparse, &prepared, [&bake](const DqsLaneOrder& order) {
    return bake.payload != nullptr ? bake.payload->PrepareForLaneOrder(order, bake.sparse) : size_t{0};
  });
  if (prepared > 0) loaded_.Grow(bake.bake_id, &bake, prepared);
  return lanes;
}

void BakeStore::ChargeGrowth(const LoadedBake& bake) {
  if (bake.payload == nullptr) return;
  const size_t now = bake.payload->GrownBytes();
  size_t was = bake.charged_growth.load();
  while (now > was) {
    if (bake.charged_growth.compare_exchange_weak(was, now)) {
      loaded_.Grow(bake.bake_id, &bake, now - was);
      return;
    }
  }
}

v1::Bake BakeFromStored(const internal::v1::StoredBake& header) {
  v1::Bake bake;
  bake.set_name(BakeName(header.rig_id(), header.bake_id()));
  *bake.mutable_options() = header.options();
  v1::BakeMetadata& m = *bake.mutable_metadata();
  m.set_state(v1::BAKE_STATE_SUCCEEDED);
  m.set_stage("done");
  m.set_progress_fraction(1.0);
  *m.mutable_elapsed() = header.report().total_duration();
  *m.mutable_estimated_remaining() = TimeUtil::SecondsToDuration(0);
  *m.mutable_end_time() = TimeUtil::MillisecondsToTimestamp(header.created_unix_ms());
  *m.mutable_create_time() = header.has_create_time() ? header.create_time() : m.end_time();
  if (header.has_start_time()) *m.mutable_start_time() = header.start_time();
  bake.set_done(true);
  *bake.mutable_response()->mutable_report() = header.report();
  return bake;
}

bool BakeEnded(v1::BakeState s) {
  return s == v1::BAKE_STATE_SUCCEEDED || s == v1::BAKE_STATE_FAILED || s == v1::BAKE_STATE_CANCELLED;
}

v1::Bake JobBake(const std::string& name, const v1::BakeOptions& options, const BakeJobState& job) {
  // Before this fraction the remaining time is not estimated.
  constexpr double kMinFractionForEstimate = 0.02;
  const auto seconds = [](double s) { return TimeUtil::NanosecondsToDuration(static_cast<int64_t>(s * 1e9)); };
  v1::Bake bake;
  bake.set_name(name);
  *bake.mutable_options() = options;
  v1::BakeMetadata& m = *bake.mutable_metadata();
  m.set_state(job.state);
  m.set_stage(job.stage);
  m.set_progress_fraction(job.fraction);
  *m.mutable_create_time() = job.create_time;
  if (job.start_time) *m.mutable_start_time() = *job.start_time;
  const double elapsed = std::max(0.0, job.elapsed_seconds);
  *m.mutable_elapsed() = seconds(elapsed);
  const bool ended = BakeEnded(job.state);
  if (ended) {
    if (job.end_time) *m.mutable_end_time() = *job.end_time;
    *m.mutable_estimated_remaining() = seconds(0);
  } else if (job.state == v1::BAKE_STATE_RUNNING && job.fraction > kMinFractionForEstimate) {
    *m.mutable_estimated_remaining() = seconds(elapsed * (1 - job.fraction) / job.fraction);
  }
  if (job.state == v1::BAKE_STATE_QUEUED && job.queue_position) m.set_queue_position(*job.queue_position);
  bake.set_done(ended);
  if (job.state == v1::BAKE_STATE_FAILED) {
    const absl::StatusCode code = job.error.ok() ? absl::StatusCode::kInternal : job.error.code();
    bake.mutable_error()->set_code(static_cast<int>(code));
    bake.mutable_error()->set_message(std::string(job.error.message()));
  } else if (job.state == v1::BAKE_STATE_CANCELLED) {
    bake.mutable_error()->set_code(static_cast<int>(absl::StatusCode::kCancelled));
    bake.mutable_error()->set_message(job.error.message().empty() ? "cancelled" : std::string(job.error.message()));
  }
  return bake;
}

absl::StatusOr<v1::Bake> StoredBakeResource(BakeStore& store, const BakeRef& bake) {
  absl::StatusOr<std::shared_ptr<const internal::v1::StoredBake>> header = store.Header(bake.bake_id);
  if (absl::IsNotFound(header.status()) || (header.ok() && (*header)->rig_id() != bake.rig_id))
    return absl::NotFoundError(absl::StrCat("bake '", bake.name(), "' not found"));
  RETURN_IF_ERROR(header.status());
  return BakeFromStored(**header);
}

absl::StatusOr<v1::Bake> StoredAndReadable(BakeStore& store, const BakeRef& bake, const Recipe* recipe) {
  // A bake damaged inside its artifact (a flipped byte that still parses) would otherwise answer
  // SUCCEEDED to every StartBake and DATA_LOSS to every use. Loaded first, so that the header
  // below is the one Load read (a stored bake is read once, not once for each).
  if (recipe != nullptr && !recipe->RestoreRebuilds()) {
    const absl::Status loaded = store.Load(bake.bake_id).status();
    if (absl::IsDataLoss(loaded)) return loaded;
  }
  return StoredBakeResource(store, bake);
}

}  // namespace skinning
