// The reduced model of fast automatic skinning transformations (Jacobson et al. 2012), what
// FastService solves with: options `fast_model {weights_bake, energy, cluster_count,
// extra_weight_count}`.
#ifndef SKINNING_SERVER_BAKE_RECIPES_FAST_MODEL_H_
#define SKINNING_SERVER_BAKE_RECIPES_FAST_MODEL_H_

#include <vector>

#include "core/solve/fast_skinning.h"
#include "server/bake/loaded_bake.h"

namespace skinning {

// A FAST bake's model. The bake's dense/sparse weights are the model's #V by (m + extra) handle
// weights (not bone weights).
struct FastModelPayload : BakePayload {
  FastModelPtr model;
  std::vector<int> handle_joints;  // the joint of each of the model's m handles
  // The model's cached constraint-set operators (up to 4 sets, 20 MB each with 256 extra weights).
  size_t GrownBytes() const override { return model != nullptr ? FastModelOperatorBytes(*model) : 0; }
};

}  // namespace skinning

#endif  // SKINNING_SERVER_BAKE_RECIPES_FAST_MODEL_H_
