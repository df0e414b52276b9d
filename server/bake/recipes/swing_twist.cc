#include "server/bake/recipes/swing_twist.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "core/rig/bones.h"
#include "core/util/status_macros.h"
#include "core/weights/emw.h"
#include "server/bake/recipe.h"

namespace skinning {
namespace {

constexpr int kMaxIterations = 500;

class SwingTwistRecipe final : public Recipe {
 public:
  const char* name() const override { return "swing_twist"; }
  v1::BakeOptions::MethodCase method_case() const override { return v1::BakeOptions::kSwingTwist; }
  bool HasBoneWeights() const override { return false; }

  absl::Status Normalize(v1::BakeOptions* options) const override {
    v1::SwingTwistOptions& o = *options->mutable_swing_twist();
    if (o.max_iteration_count() == 0) o.set_max_iteration_count(EmwOptions().max_iterations);
    if (o.max_iteration_count() < 1 || o.max_iteration_count() > kMaxIterations)
      return absl::InvalidArgumentError(absl::StrFormat("options.swing_twist.max_iteration_count = %d is outside [1, %d]",
                                                        o.max_iteration_count(), kMaxIterations));
    return absl::OkStatus();
  }

  void ToCore(const v1::BakeOptions& options, BakeOptions* core) const override {
    core->method = BakeMethod::kSwingTwist;
    core->emw.max_iterations = options.swing_twist().max_iteration_count();
  }

  void Store(const BakeResult& result, internal::v1::BakeArtifact* artifact) const override {
    StoreMatrix(result.weights, artifact->mutable_weights());
    StoreMatrix(result.swing, &(*artifact->mutable_channels())["swing"]);
    StoreMatrix(result.twist, &(*artifact->mutable_channels())["twist"]);
  }

  absl::StatusOr<BakeResult> Restore(const internal::v1::StoredBake& stored, const LoadedRig& rig) const override {
    BakeResult result;
    ASSIGN_OR_RETURN(result.weights, RestoreBoneWeights(stored, rig));
    ASSIGN_OR_RETURN(result.swing, RestoreChannel(stored, rig, "swing"));
    ASSIGN_OR_RETURN(result.twist, RestoreChannel(stored, rig, "twist"));
    return result;
  }

  absl::Status Prepare(BakeResult result, const LoadedRig& rig, LoadedBake* bake) const override {
    ASSIGN_OR_RETURN(const std::vector<JointHandle> handles, JointHandles(rig.rig.skeleton));
    auto payload = std::make_shared<SwingTwistPayload>();
    payload->frames = JointFrames(rig.rig.skeleton, handles);
    const int k = std::min(bake->options().influence_count(), rig.rig.skeleton.size());
    payload->weights = MakeSwingTwistWeights(result.weights, result.swing, result.twist, k);
    payload->swing = std::move(result.swing);
    payload->twist = std::move(result.twist);
    SetWeights(std::move(result.weights), bake, static_cast<size_t>(payload->swing.size() + payload->twist.size()) * 8);
    bake->payload = std::move(payload);
    return absl::OkStatus();
  }

  absl::Status FillWeights(const LoadedBake& bake, v1::GetWeightsResponse* response) const override {
    const auto* p = bake.payload_as<SwingTwistPayload>();
    StoreMatrix(p->swing, response->mutable_swing());
    StoreMatrix(p->twist, response->mutable_twist());
    return absl::OkStatus();
  }

};

}  // namespace

std::unique_ptr<Recipe> NewSwingTwistRecipe() { return std::make_unique<SwingTwistRecipe>(); }

}  // namespace skinning
