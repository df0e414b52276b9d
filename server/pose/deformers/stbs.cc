// Stretchable, twistable bones (Jacobson & Sorkine 2011) over LBS or DQS, with an endpoint bake's
// bone weights and endpoint weights.
#include "absl/strings/str_cat.h"
#include "core/skinning/stbs.h"
#include "core/util/status_macros.h"
#include "server/bake/recipes/endpoint.h"
#include "server/pose/deformers/deformers.h"

namespace skinning {
namespace {

class StbsDeformer final : public Deformer {
 public:
  explicit StbsDeformer(bool dqs) : dqs_(dqs) {}
  v1::Deformer kind() const override { return dqs_ ? v1::DEFORMER_STBS_DQS : v1::DEFORMER_STBS_LBS; }
  const char* bake_method() const override { return "endpoint"; }
  bool TakesStretchTwist() const override { return true; }
  bool UsesDqsLaneOrder() const override { return true; }

  // Transforms alone need no bake (without stretch or twist they are the plain ones).
  absl::Status CheckTarget(const PoseTarget& target, bool geometry) const override {
    if (geometry)
      RETURN_IF_ERROR(NeedsBake(*this, target));
    return NeedsBoneWeights(*this, target, geometry);
  }

  absl::StatusOr<std::vector<Eigen::Affine3d>> Transforms(const PoseTarget& target, const Pose& pose,
                                                          const BoneStretchTwist& st,
                                                          const char* field) const override {
    const Rig& rig = target.rig->rig;
    const EndpointPayload* endpoint = target.bake ? target.bake->payload_as<EndpointPayload>() : nullptr;
    if (endpoint == nullptr) {
      if (!st.stretch.empty() || !st.twist_a.empty())
        return absl::FailedPreconditionError(absl::StrCat(
            DeformerName(kind()), " with bone_stretch / bone_twist needs an endpoint bake as `bake`"));
      return Deformer::Transforms(target, pose, st, field);
    }
    RETURN_IF_ERROR(ValidateStretchTwist(rig.skeleton, endpoint->bones, st, field));
    return StretchedSkinningTransforms(rig.skeleton, target.rig->order, pose, endpoint->bones, st);
  }

  absl::Status Deform(const PoseTarget& target, const FrameInput& frame, FrameOutput* out) const override {
    const LoadedBake& bake = *target.bake;
    const EndpointPayload& endpoint = *bake.payload_as<EndpointPayload>();
    const StbsFrameFloat prepared = PrepareStbsFloat(endpoint.bones, frame.transforms, frame.stretch_twist);
    // The bake's vertex order where it groups vertices by joint set (CesiumMan in
    // bench/deformers_bench: a quarter to a third less time a frame); the file's order otherwise.
    const DqsLaneOrder* lanes = frame.dqs_lanes;
    if (lanes != nullptr && static_cast<int>(lanes->order.size()) == out->vertex_count &&
        StbsFloat(frame.positions, *lanes, endpoint.lane_aligned, prepared, dqs_, out->positions))
      return absl::OkStatus();
    StbsFloat(frame.positions, out->vertex_count, bake.sparse, endpoint.aligned, prepared, dqs_,
              out->positions);
    return absl::OkStatus();
  }

 private:
  const bool dqs_;
};

}  // namespace

std::unique_ptr<Deformer> NewStbsDeformer(bool dqs) { return std::make_unique<StbsDeformer>(dqs); }

}  // namespace skinning
