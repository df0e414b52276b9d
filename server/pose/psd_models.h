// Pose space deformation on the server: METHOD_PSD_LBS, METHOD_PSD_DQS, METHOD_PSD_SUPPORT_LBS
// and METHOD_PSD_SUPPORT_DQS over a rig's stored examples (server/example_store.h), with the
// models (core/skinning/psd.h) built on first use and kept in memory.
#ifndef SKINNING_SERVER_POSE_PSD_POSING_H_
#define SKINNING_SERVER_POSE_PSD_POSING_H_

#include <array>
#include <memory>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/store/example_store.h"
#include "server/store/lru_cache.h"
#include "server/pose/posing.h"
#include "server/store/rig_store.h"
#include "skinning/v1/skinning.pb.h"

namespace skinning {

// Whether `method` is one of the METHOD_PSD_* methods.
bool IsPsdMethod(v1::Method method);
// The plain method a PSD method builds on: METHOD_LBS or METHOD_DQS (METHOD_LBS for others).
v1::Method PsdBaseMethod(v1::Method method);

// The ExampleStore::Validator of AddExample: INVALID_ARGUMENT when `added` has the pose of one of
// `existing`'s examples ("example 'b' has the pose of example 'a'"), or when the whole set fails
// ValidateExamples (core/skinning/psd.h). `added` is already resolved (ResolveExample).
absl::Status ValidateNewExample(const LoadedRig& rig, const v1::StoredExamples& existing,
                                const v1::Example& added);

// The PSD models of the rigs being posed: built lazily, cached by bytes (LRU).
class PsdModels {
 public:
  // `examples` is where the rigs' examples are read (not owned).
  explicit PsdModels(ExampleStore* examples, size_t cache_bytes = size_t{512} << 20);

  // The model for posing `rig` for `tenant` with PSD method `method` and `weights` (the rig's own
  // when `bake_id` is empty, else that bake's; the key of the model includes it). Built from the
  // tenant's current examples of the rig on first use (one build at a time per key), then served
  // from memory under (tenant, rig id, examples fingerprint, weights source, method variant). nullptr when the rig
  // has no examples or `weights` is nullptr: the frame is then posed as plain LBS / DQS (which
  // reports missing weights). Build errors (e.g. FAILED_PRECONDITION: no joint qualifies for a
  // support joint) are returned with the method named; INVALID_ARGUMENT and FAILED_PRECONDITION
  // depend only on the key's inputs, so they are remembered (up to kRememberedFailures keys) and
  // answered again without rebuilding — a client retrying every frame does not re-voxelize.
  absl::StatusOr<std::shared_ptr<const PsdModel>> Get(const LoadedRig& rig, const std::string& tenant,
                                                      const SparseWeights* weights, const std::string& bake_id,
                                                      v1::Method method);

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

// PoseFrame (server/posing.h) for the METHOD_PSD_* methods: with `ctx.psd` the vertices are the
// model's (PsdModel::DeformFloat), normals (when asked and the rig has normals) are recomputed
// from the posed mesh (area-weighted, PerVertexNormals), transforms are the skeleton's skinning
// transforms as for LBS. Without `ctx.psd` (no examples) the frame is posed by plain LBS / DQS.
// INVALID_ARGUMENT for a bad pose (messages start with `field`) or bone_stretch / bone_twist
// values; FAILED_PRECONDITION when vertices are asked and the rig has no weights.
absl::Status PosePsdFrame(const PoseContext& ctx, const v1::Pose& pose, v1::Method method,
                          const v1::PoseOutputs& outputs, v1::PosedFrame* out, const char* field = "pose");

}  // namespace skinning

#endif  // SKINNING_SERVER_POSE_PSD_POSING_H_
