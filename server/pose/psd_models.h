// The models of pose space deformation (DEFORMER_PSD_*, core/skinning/psd.h) over the callers'
// stored examples (store/example_store.h): built on first use, kept in memory; and the check of a
// new example against the ones stored (the same conversion of stored examples to core ones).
#ifndef SKINNING_SERVER_POSE_PSD_MODELS_H_
#define SKINNING_SERVER_POSE_PSD_MODELS_H_

#include <array>
#include <memory>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/skinning/psd.h"
#include "server/store/example_store.h"
#include "server/store/lru_cache.h"
#include "server/store/rig_store.h"
#include "skinning/v1/pose.pb.h"

namespace skinning {

// The ExampleStore::Validator of CreateExample: INVALID_ARGUMENT when `added` has the pose of one of
// `existing`'s examples ("example 'b' has the pose of example 'a'"), or when the whole set fails
// ValidateExamples (core/skinning/psd.h). `added` is already resolved (ResolveExample).
absl::Status ValidateNewExample(const LoadedRig& rig, const internal::v1::StoredExamples& existing,
                                const v1::Example& added);

// The PSD models of the rigs being posed: built lazily, cached by bytes (LRU).
class PsdModels {
 public:
  // `examples` is where the rigs' examples are read (not owned).
  explicit PsdModels(ExampleStore* examples, size_t cache_bytes = size_t{512} << 20);

  // The model for posing `rig` for `tenant` with the PSD deformer `kind` and `weights` (the rig's
  // own when `bake` is empty, else that bake's; the key of the model includes it). Built from the
  // tenant's current examples of the rig on first use (one build at a time per key), then served
  // from memory under (tenant, rig id, examples fingerprint, weights source, deformer). nullptr
  // when the rig has no examples, `weights` is nullptr or `kind` is no PSD deformer: the frame is
  // then posed as plain LBS / DQS (which reports missing weights). Build errors (e.g.
  // FAILED_PRECONDITION: no joint qualifies for a support joint) are returned with the deformer
  // named; INVALID_ARGUMENT and FAILED_PRECONDITION depend only on the key's inputs, so they are
  // remembered (up to kRememberedFailures keys) and answered again without rebuilding — a client
  // retrying every frame does not re-voxelize.
  absl::StatusOr<std::shared_ptr<const PsdModel>> Get(const LoadedRig& rig, const std::string& tenant,
                                                      const SparseWeights* weights, const std::string& bake,
                                                      v1::Deformer kind);

  // Whether Get for the rig and tenant asks the store nothing now (the examples' copy is fresh:
  // ExampleStore::Resident).
  bool Resident(const std::string& rig_id, const std::string& tenant) { return examples_->Resident(rig_id, tenant); }

  CacheStats cache_stats() const { return cache_.stats(); }
  // Models built so far (cache misses that built one).
  uint64_t builds() const;
  // Builds that failed (each key at most once while it is remembered).
  uint64_t failed_builds() const;
  static constexpr size_t kRememberedFailures = 1024;

 private:
  ExampleStore* examples_;
  LruCache<PsdModel> cache_;
  std::array<std::mutex, 16> build_mu_;  // one build at a time per key stripe
  mutable std::mutex stats_mu_;
  uint64_t builds_ = 0;
  uint64_t failed_builds_ = 0;
  absl::flat_hash_map<std::string, absl::Status> failures_;  // under stats_mu_
};

}  // namespace skinning

#endif  // SKINNING_SERVER_POSE_PSD_MODELS_H_
