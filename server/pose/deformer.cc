#include "server/pose/deformer.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "server/bake/recipe.h"
#include "server/names.h"
#include "server/pose/deformers/deformers.h"

namespace skinning {

std::string DeformerName(v1::Deformer kind) {
  if (kind == v1::DEFORMER_UNSPECIFIED) return "DEFORMER_UNSPECIFIED (LBS)";
  if (!v1::Deformer_IsValid(kind)) return absl::StrCat("deformer ", static_cast<int>(kind));
  return v1::Deformer_Name(kind);
}

std::string DeformerLabel(v1::Deformer kind) {
  if (kind == v1::DEFORMER_UNSPECIFIED) return "lbs";
  if (!v1::Deformer_IsValid(kind)) return absl::StrCat("deformer_", static_cast<int>(kind));
  absl::string_view name = v1::Deformer_Name(kind);
  absl::ConsumePrefix(&name, "DEFORMER_");
  return absl::AsciiStrToLower(name);
}

absl::StatusOr<std::vector<Eigen::Affine3d>> Deformer::Transforms(const PoseTarget& target, const Pose& pose,
                                                                  const BoneStretchTwist& stretch_twist,
                                                                  const char* field) const {
  return SkinningTransforms(target.rig->rig.skeleton, target.rig->order, pose);
}

absl::Status NeedsBoneWeights(const Deformer& deformer, const PoseTarget& target, bool geometry) {
  if (target.bake != nullptr && !target.bake->bone_weights) {
    const Deformer* user = DeformerRegistry::Default().ForBakeMethod(target.bake->recipe->name());
    return absl::InvalidArgumentError(absl::StrCat(
        "bake '", target.bake->name, "' is a ", target.bake->recipe->name(), " bake without bone weights",
        user != nullptr ? absl::StrCat(": pose it with ", DeformerName(user->kind())) : "",
        " (or give a weights bake for ", DeformerName(deformer.kind()), ")"));
  }
  if (geometry && target.weights == nullptr) {
    const std::string rig = RigName(target.rig->id);
    return absl::FailedPreconditionError(absl::StrCat(
        "rig '", rig, "' has no skinning weights: bake them first (StartBake with parent '", rig,
        "' and options bbw, bone_heat or geodesic_voxel; or skinctl bake) and pose with the bake's name as `bake`"));
  }
  return absl::OkStatus();
}

absl::Status NeedsBake(const Deformer& deformer, const PoseTarget& target) {
  const std::string method = deformer.bake_method();
  if (target.bake != nullptr && method == target.bake->recipe->name()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      DeformerName(deformer.kind()), " needs a bake of rig '", RigName(target.rig->id), "' with options.", method,
      ": run StartBake with options.", method, " and pose with its name as `bake`",
      target.bake != nullptr
          ? absl::StrCat(" (bake '", target.bake->name, "' is a ", target.bake->recipe->name(), " bake)")
          : ""));
}

void AddAllDeformers(DeformerRegistry* registry) {
  std::unique_ptr<Deformer> lbs = NewLbsDeformer(), dqs = NewDqsDeformer();
  registry->Add(NewPsdDeformer(v1::DEFORMER_PSD_LBS, lbs.get()));
  registry->Add(NewPsdDeformer(v1::DEFORMER_PSD_SUPPORT_LBS, lbs.get()));
  registry->Add(NewPsdDeformer(v1::DEFORMER_PSD_DQS, dqs.get()));
  registry->Add(NewPsdDeformer(v1::DEFORMER_PSD_SUPPORT_DQS, dqs.get()));
  registry->Add(std::move(lbs));
  registry->Add(std::move(dqs));
  registry->Add(NewStbsDeformer(/*dqs=*/false));
  registry->Add(NewStbsDeformer(/*dqs=*/true));
  registry->Add(NewSwingTwistDeformer());
  registry->Add(NewElasticDeformer());
}

const DeformerRegistry& DeformerRegistry::Default() {
  static const DeformerRegistry* registry = [] {
    auto* r = new DeformerRegistry();
    AddAllDeformers(r);
    return r;
  }();
  return *registry;
}

absl::StatusOr<const Deformer*> DeformerRegistry::Find(v1::Deformer kind, const char* field) const {
  for (const auto& d : deformers_)
    if (d->kind() == kind) return d.get();
  return absl::InvalidArgumentError(absl::StrFormat("%s = %d is not a Deformer", field, static_cast<int>(kind)));
}

const Deformer* DeformerRegistry::ForBakeMethod(const std::string& method) const {
  for (const auto& d : deformers_)
    if (d->bake_method() != nullptr && method == d->bake_method()) return d.get();
  return nullptr;
}

}  // namespace skinning
