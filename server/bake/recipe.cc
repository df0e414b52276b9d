#include "server/bake/recipe.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"
#include "server/names.h"

namespace skinning {

const RecipeRegistry& RecipeRegistry::Default() {
  static const RecipeRegistry* registry = [] {
    auto* r = new RecipeRegistry();
    AddAllRecipes(r);
    return r;
  }();
  return *registry;
}

absl::Status RecipeRegistry::Add(std::unique_ptr<Recipe> recipe) {
  if (Find(recipe->method_case()) != nullptr || Find(recipe->name()) != nullptr)
    return absl::InvalidArgumentError(absl::StrCat("bake method '", recipe->name(), "' is registered twice"));
  recipes_.push_back(std::move(recipe));
  return absl::OkStatus();
}

const Recipe* RecipeRegistry::Find(v1::BakeOptions::MethodCase method_case) const {
  for (const auto& r : recipes_)
    if (r->method_case() == method_case) return r.get();
  return nullptr;
}

const Recipe* RecipeRegistry::Find(absl::string_view name) const {
  for (const auto& r : recipes_)
    if (name == r->name()) return r.get();
  return nullptr;
}

absl::StatusOr<BakeResult> Recipe::Run(const v1::BakeOptions& options, const BakeOptions& core, const LoadedRig& rig,
                                       const Progress& progress) const {
  return Bake(rig.rig.mesh, rig.rig.skeleton, core, progress);
}

absl::StatusOr<std::shared_ptr<LoadedBake>> PrepareBake(const Recipe& recipe,
                                                        std::shared_ptr<const internal::v1::StoredBake> header,
                                                        BakeResult result, const LoadedRig& rig) {
  auto bake = std::make_shared<LoadedBake>();
  bake->name = BakeName(header->rig_id(), header->bake_id());
  bake->bake_id = header->bake_id();
  bake->rig_id = header->rig_id();
  bake->recipe = &recipe;
  bake->bone_weights = recipe.HasBoneWeights();
  bake->header = std::move(header);
  RETURN_IF_ERROR(recipe.Prepare(std::move(result), rig, bake.get()));
  return bake;
}

void StoreMatrix(const Eigen::MatrixXd& D, v1::DenseWeights* out) {
  out->set_joint_count(static_cast<int>(D.cols()));
  out->mutable_values()->Resize(static_cast<int>(D.size()), 0.0);
  double* values = out->mutable_values()->mutable_data();
  for (int i = 0; i < D.rows(); ++i)
    for (int j = 0; j < D.cols(); ++j) values[i * D.cols() + j] = D(i, j);
}

absl::StatusOr<Eigen::MatrixXd> RestoreMatrix(const v1::DenseWeights& stored, const LoadedRig& rig,
                                              const internal::v1::StoredBake& bake, const char* what) {
  const int nv = static_cast<int>(rig.rig.mesh.V.rows()), nj = rig.rig.skeleton.size();
  if (stored.joint_count() != nj || stored.values_size() != nv * nj)
    return absl::DataLossError(absl::StrFormat("stored bake '%s' has %d %s values for %d joints, expected %d x %d",
                                               BakeName(bake.rig_id(), bake.bake_id()), stored.values_size(), what,
                                               stored.joint_count(), nv, nj));
  Eigen::MatrixXd D(nv, nj);
  for (int i = 0; i < nv; ++i)
    for (int j = 0; j < nj; ++j) D(i, j) = stored.values(i * nj + j);
  if (!D.allFinite())
    return absl::DataLossError(
        absl::StrFormat("stored bake '%s': non-finite %s", BakeName(bake.rig_id(), bake.bake_id()), what));
  return D;
}

absl::StatusOr<Eigen::MatrixXd> RestoreChannel(const internal::v1::StoredBake& bake, const LoadedRig& rig,
                                               const std::string& name) {
  auto it = bake.artifact().channels().find(name);
  if (it == bake.artifact().channels().end())
    return absl::DataLossError(absl::StrFormat("stored bake '%s' has no %s values",
                                               BakeName(bake.rig_id(), bake.bake_id()), name));
  return RestoreMatrix(it->second, rig, bake, name.c_str());
}

absl::StatusOr<Eigen::MatrixXd> RestoreBoneWeights(const internal::v1::StoredBake& bake, const LoadedRig& rig) {
  ASSIGN_OR_RETURN(Eigen::MatrixXd W, RestoreMatrix(bake.artifact().weights(), rig, bake, "weight"));
  if (absl::Status s = ValidateWeights(W, static_cast<int>(W.rows()), static_cast<int>(W.cols()), "stored bake weights");
      !s.ok())
    return absl::DataLossError(absl::StrCat("bake '", BakeName(bake.rig_id(), bake.bake_id()), "': ", s.message()));
  return W;
}

void SetWeights(Eigen::MatrixXd dense, LoadedBake* bake, size_t extra_bytes) {
  const int k = std::min(bake->options().influence_count(), static_cast<int>(dense.cols()));
  bake->sparse = TopK(dense, std::max(k, 1));
  bake->dense = std::move(dense);
  bake->bytes = sizeof(LoadedBake) + static_cast<size_t>(bake->dense.size()) * 8 +
                static_cast<size_t>(bake->sparse.joints.size()) * 8 + extra_bytes;
}

}  // namespace skinning
