// Endpoint weights for stretchable, twistable bones (Jacobson & Sorkine 2011), stored with the
// bone weights they pose with (DEFORMER_STBS_LBS / _DQS): options `endpoint {weights_bake, method}`.
#ifndef SKINNING_SERVER_BAKE_RECIPES_ENDPOINT_H_
#define SKINNING_SERVER_BAKE_RECIPES_ENDPOINT_H_

#include <cstddef>
#include <vector>

#include <Eigen/Core>

#include "core/skinning/stbs.h"
#include "server/bake/loaded_bake.h"

namespace skinning {

// The bake's dense/sparse weights are the bone weights (the rig's own or the weights bake's).
struct EndpointPayload : BakePayload {
  Eigen::MatrixXd endpoint;  // e, #V by #J
  RowMatrixXf aligned;       // e in the slots of the sparse bone weights (#V by k)
  std::vector<StbsBone> bones;
  // `aligned` in the rows and slots of the bake's DQS vertex order (LaneEndpointWeights), made
  // with the order by its first frame (BakeStore::DqsLanes, which calls PrepareForLaneOrder once
  // before any frame gets the order); empty until then and where the order is empty.
  mutable RowMatrixXf lane_aligned;
  size_t PrepareForLaneOrder(const DqsLaneOrder& lanes, const SparseWeights& sparse) const override {
    if (lanes.empty()) return 0;
    lane_aligned = LaneEndpointWeights(sparse, aligned, lanes);
    return static_cast<size_t>(lane_aligned.size()) * sizeof(float);
  }
};

}  // namespace skinning

#endif  // SKINNING_SERVER_BAKE_RECIPES_ENDPOINT_H_
