// Bounded biharmonic weights (Jacobson et al. 2011), the default bake method: options `bbw {}`.
#include "server/bake/recipes/bone_weights.h"

namespace skinning {
namespace {

class BbwRecipe final : public BoneWeightsRecipe {
 public:
  const char* name() const override { return "bbw"; }
  v1::BakeOptions::MethodCase method_case() const override { return v1::BakeOptions::kBbw; }
  void ToCore(const v1::BakeOptions& options, BakeOptions* core) const override { core->method = BakeMethod::kBbw; }
};

}  // namespace

std::unique_ptr<Recipe> NewBbwRecipe() { return std::make_unique<BbwRecipe>(); }

}  // namespace skinning
