// A finished bake in memory: the stored header, the weights GetWeights returns and the method's
// own part (BakePayload), built by the method's recipe (recipe.h).
#ifndef SKINNING_SERVER_BAKE_LOADED_BAKE_H_
#define SKINNING_SERVER_BAKE_LOADED_BAKE_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include <Eigen/Core>

#include "core/skinning/dqs.h"
#include "core/skinning/weights.h"
#include "skinning/internal/v1/store.pb.h"

namespace skinning {

class Recipe;

// What a method adds to a loaded bake beyond bone weights (a reduced model, per-joint channels,
// per-frame layouts). Each recipe that has one subclasses it; consumers ask for their type with
// LoadedBake::payload_as.
class BakePayload {
 public:
  virtual ~BakePayload() = default;
  // Called once, when the bake's DQS vertex order for `sparse` is prepared (BakeStore::DqsLanes),
  // before any frame gets the order: a payload with per-vertex data in `sparse`'s slots lays it
  // out in the order's rows and slots too, and returns the bytes that took (counted by the cache).
  virtual size_t PrepareForLaneOrder(const DqsLaneOrder& lanes, const SparseWeights& sparse) const { return 0; }
  // Memory the payload has taken since the load for what it builds as it is used (a FAST model's
  // constraint-set operators): the most it has held at once, so never falling. The cache counts
  // it (BakeStore::ChargeGrowth).
  virtual size_t GrownBytes() const { return 0; }
};

// A finished bake, ready for posing, GetWeights and FAST solves; immutable and shared (but for
// dqs_lanes, which the first DQS or STBS frame with vertices prepares once, thread-safely, with
// the payload's layout in it).
struct LoadedBake {
  std::string name;    // "rigs/{rig}/bakes/{bake}"
  std::string bake_id;
  std::string rig_id;
  const Recipe* recipe = nullptr;
  // The stored bake without its artifact: options (filled in), report, times.
  std::shared_ptr<const internal::v1::StoredBake> header;
  // What GetWeights returns: #V by #columns dense weights and their sparse form (top
  // options.influence_count, or every non-zero for a FAST model). Empty for an elastic model.
  Eigen::MatrixXd dense;
  SparseWeights sparse;
  // DEFORMER_DQS's and _STBS_*'s vertex order for bone weights, prepared by the first such frame with vertices
  // (BakeStore::DqsLanes).
  LazyDqsLaneOrder dqs_lanes;
  // Whether dense/sparse are per-joint bone weights that posing and other bakes can use
  // (Recipe::HasBoneWeights).
  bool bone_weights = false;
  std::shared_ptr<const BakePayload> payload;  // the method's own part, or null
  size_t bytes = 0;                            // approximate memory footprint at load, for the cache
  mutable std::atomic<size_t> charged_growth{0};  // the payload's GrownBytes the cache counts already

  const v1::BakeOptions& options() const { return header->options(); }
  const v1::BakeReport& report() const { return header->report(); }
  // The payload as a recipe's type, or nullptr when the bake has none of that type.
  template <typename T>
  const T* payload_as() const {
    return dynamic_cast<const T*>(payload.get());
  }
};

}  // namespace skinning

#endif  // SKINNING_SERVER_BAKE_LOADED_BAKE_H_
