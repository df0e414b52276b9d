#include "server/bake/recipes/endpoint.h"

#include "absl/strings/str_format.h"
#include "core/rig/bones.h"
#include "core/util/status_macros.h"
#include "server/bake/recipe.h"
#include "server/names.h"

namespace skinning {
namespace {

class EndpointRecipe final : public Recipe {
 public:
  const char* name() const override { return "endpoint"; }
  v1::BakeOptions::MethodCase method_case() const override { return v1::BakeOptions::kEndpoint; }
  // Joint BBW needs the volume; projection onto the bones does not.
  bool Volumetric(const v1::BakeOptions& options) const override {
    return options.endpoint().method() != v1::ENDPOINT_METHOD_PROJECTION;
  }
  const char* WeightsSourceField() const override { return "options.endpoint.weights_bake"; }
  std::string WeightsSource(const v1::BakeOptions& options) const override { return options.endpoint().weights_bake(); }

  absl::Status Normalize(v1::BakeOptions* options) const override {
    const v1::EndpointOptions& o = options->endpoint();
    if (!v1::EndpointMethod_IsValid(o.method()))
      return absl::InvalidArgumentError(
          absl::StrFormat("options.endpoint.method = %d is not an EndpointMethod", static_cast<int>(o.method())));
    if (!o.weights_bake().empty()) RETURN_IF_ERROR(ParseBakeName(o.weights_bake(), WeightsSourceField()).status());
    return absl::OkStatus();
  }

  void ToCore(const v1::BakeOptions& options, BakeOptions* core) const override {
    core->method = BakeMethod::kEndpoint;
    core->endpoint_method = options.endpoint().method() == v1::ENDPOINT_METHOD_PROJECTION
                                ? EndpointMethod::kProjection
                                : EndpointMethod::kJointBbw;
  }

  void Store(const BakeResult& result, internal::v1::BakeArtifact* artifact) const override {
    StoreMatrix(result.weights, artifact->mutable_weights());
    StoreMatrix(result.endpoint, &(*artifact->mutable_channels())["endpoint"]);
  }

  absl::StatusOr<BakeResult> Restore(const internal::v1::StoredBake& stored, const LoadedRig& rig) const override {
    BakeResult result;
    ASSIGN_OR_RETURN(result.weights, RestoreBoneWeights(stored, rig));
    ASSIGN_OR_RETURN(result.endpoint, RestoreChannel(stored, rig, "endpoint"));
    return result;
  }

  absl::Status Prepare(BakeResult result, const LoadedRig& rig, LoadedBake* bake) const override {
    ASSIGN_OR_RETURN(const std::vector<JointHandle> handles, JointHandles(rig.rig.skeleton));
    auto payload = std::make_shared<EndpointPayload>();
    payload->bones = StbsBones(handles);
    payload->endpoint = std::move(result.endpoint);
    SetWeights(std::move(result.weights), bake, static_cast<size_t>(payload->endpoint.size()) * 8);
    payload->aligned = AlignEndpointWeights(bake->sparse, payload->endpoint);
    bake->bytes += static_cast<size_t>(payload->aligned.size()) * 4;
    bake->payload = std::move(payload);
    return absl::OkStatus();
  }

  absl::Status FillWeights(const LoadedBake& bake, v1::GetWeightsResponse* response) const override {
    StoreMatrix(bake.payload_as<EndpointPayload>()->endpoint, response->mutable_endpoint());
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Recipe> NewEndpointRecipe() { return std::make_unique<EndpointRecipe>(); }

}  // namespace skinning
