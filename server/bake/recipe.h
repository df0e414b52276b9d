// A bake method on the server: how its options are filled in and checked, how it runs (the core
// Bake), what of the result is stored and how it is loaded back, and what GetWeights returns.
// One Recipe per method in server/bake/recipes/, each listed once in recipes/all_recipes.cc.
#ifndef SKINNING_SERVER_BAKE_RECIPE_H_
#define SKINNING_SERVER_BAKE_RECIPE_H_

#include <memory>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/skinning/weights.h"
#include "core/util/progress.h"
#include "core/weights/bake.h"
#include "server/bake/loaded_bake.h"
#include "server/store/rig_store.h"
#include "skinning/internal/v1/store.pb.h"
#include "skinning/v1/bake_service.pb.h"

namespace skinning {

class Recipe {
 public:
  virtual ~Recipe() = default;

  // The method's name as the report, the metrics (label `method`) and messages show it, e.g.
  // "bbw", "fast_model".
  virtual const char* name() const = 0;
  // The BakeOptions oneof case this recipe handles.
  virtual v1::BakeOptions::MethodCase method_case() const = 0;

  // Options. NormalizeBakeOptions (bake_options.h) fills the common fields and asks these.
  // Fills the defaults of the method's own oneof message (present) and checks it; messages name
  // the field ("options.swing_twist.max_iteration_count = 900 is over the limit (500)").
  virtual absl::Status Normalize(v1::BakeOptions* options) const { return absl::OkStatus(); }
  // Whether these normalized options run on a volume (options.domain); surface methods refuse a
  // tet mesh and ignore the voxel resolution.
  virtual bool Volumetric(const v1::BakeOptions& options) const { return true; }
  // Whether the sparse weights keep options.influence_count influences (else it is 0).
  virtual bool UsesInfluences() const { return true; }
  // Methods that build on bone weights: the options field naming the weights bake ("" in the
  // options = the rig's own weights); nullptr for the others.
  virtual const char* WeightsSourceField() const { return nullptr; }
  virtual std::string WeightsSource(const v1::BakeOptions& options) const { return ""; }

  // Running. ToCore sets the method's part of the core options (CoreBakeOptions sets the common
  // part and calls it); Run computes the bake from them (`core` also holds the source weights of
  // the methods that build on bone weights). The default Run is the core Bake.
  virtual void ToCore(const v1::BakeOptions& options, BakeOptions* core) const = 0;
  virtual absl::StatusOr<BakeResult> Run(const v1::BakeOptions& options, const BakeOptions& core,
                                         const LoadedRig& rig, const Progress& progress) const;

  // Storing and loading. Store keeps what Restore needs to give back an equivalent result;
  // Prepare turns a result (fresh, or restored) into the loaded form (dense, sparse, payload,
  // bytes). Restore may rebuild what is not stored (the elastic model).
  virtual void Store(const BakeResult& result, internal::v1::BakeArtifact* artifact) const = 0;
  virtual absl::StatusOr<BakeResult> Restore(const internal::v1::StoredBake& stored, const LoadedRig& rig) const = 0;
  // `bake` has its names, recipe and header set.
  virtual absl::Status Prepare(BakeResult result, const LoadedRig& rig, LoadedBake* bake) const = 0;
  // Whether Restore computes the result again from the options (the elastic model: nothing of
  // it is stored that could be damaged, and restoring costs a bake).
  virtual bool RestoreRebuilds() const { return false; }

  // Consumers. Whether the bake's dense/sparse weights are per-joint bone weights, usable for
  // posing and as the source of other bakes (LoadedBake::bone_weights).
  virtual bool HasBoneWeights() const { return true; }
  // OK when a Pose call may name this bake (deformers then say what they need);
  // INVALID_ARGUMENT saying what to do with it instead.
  virtual absl::Status CheckPoseable(const LoadedBake& bake) const { return absl::OkStatus(); }
  // GetWeights: the method's extra channels (swing, twist, endpoint), or FAILED_PRECONDITION for
  // a bake without weights. `response` already holds name, weights and report.
  virtual absl::Status FillWeights(const LoadedBake& bake, v1::GetWeightsResponse* response) const {
    return absl::OkStatus();
  }
};

// The recipes by oneof case and by name.
class RecipeRegistry {
 public:
  // Every method of this server: AddAllRecipes.
  static const RecipeRegistry& Default();

  // INVALID_ARGUMENT when a recipe for the same case or name is there already.
  absl::Status Add(std::unique_ptr<Recipe> recipe);
  // nullptr when unknown.
  const Recipe* Find(v1::BakeOptions::MethodCase method_case) const;
  const Recipe* Find(absl::string_view name) const;
  const std::vector<std::unique_ptr<Recipe>>& all() const { return recipes_; }

 private:
  std::vector<std::unique_ptr<Recipe>> recipes_;
};

// A bake's loaded form: names, recipe and `header` (the stored bake without its artifact), then
// recipe.Prepare(result). The one way to build a LoadedBake, fresh or from the store.
absl::StatusOr<std::shared_ptr<LoadedBake>> PrepareBake(const Recipe& recipe,
                                                        std::shared_ptr<const internal::v1::StoredBake> header,
                                                        BakeResult result, const LoadedRig& rig);

// Adds the recipe of every bake method (recipes/all_recipes.cc, one line per method).
void AddAllRecipes(RecipeRegistry* registry);

// Helpers for recipes that store dense per-vertex matrices.

// `D` (#V by #cols) into `out`, row-major.
void StoreMatrix(const Eigen::MatrixXd& D, v1::DenseWeights* out);
// A stored #V by #J matrix (`what` names it in messages) back, checking its shape against the
// rig and that it is finite: DATA_LOSS naming the bake otherwise.
absl::StatusOr<Eigen::MatrixXd> RestoreMatrix(const v1::DenseWeights& stored, const LoadedRig& rig,
                                              const internal::v1::StoredBake& bake, const char* what);
// The artifact's channel `name` (e.g. "swing"): RestoreMatrix; DATA_LOSS when it is missing.
absl::StatusOr<Eigen::MatrixXd> RestoreChannel(const internal::v1::StoredBake& bake, const LoadedRig& rig,
                                               const std::string& name);
// The artifact's bone weights: RestoreMatrix, then rows that sum to one (ValidateWeights).
absl::StatusOr<Eigen::MatrixXd> RestoreBoneWeights(const internal::v1::StoredBake& bake, const LoadedRig& rig);
// Sets dense, its top-k sparse form (k = options.influence_count, at most #cols) and bytes (the
// matrices' memory plus `extra_bytes`).
void SetWeights(Eigen::MatrixXd dense, LoadedBake* bake, size_t extra_bytes = 0);

}  // namespace skinning

#endif  // SKINNING_SERVER_BAKE_RECIPE_H_
