// The prefactored elastic gold-standard model (full corotational elasticity with the bones'
// nodes pinned), what DEFORMER_ELASTIC poses with: options `elastic_model {}`.
#ifndef SKINNING_SERVER_BAKE_RECIPES_ELASTIC_MODEL_H_
#define SKINNING_SERVER_BAKE_RECIPES_ELASTIC_MODEL_H_

#include <memory>

#include "core/solve/elastic.h"
#include "server/bake/loaded_bake.h"

namespace skinning {

// The bake holds no weights.
struct ElasticModelPayload : BakePayload {
  std::shared_ptr<const ElasticModel> model;
};

}  // namespace skinning

#endif  // SKINNING_SERVER_BAKE_RECIPES_ELASTIC_MODEL_H_
