// Every bake method's recipe, one line each. A new method: its recipe file in this folder
// (defining New<Name>Recipe()), its options in BakeOptions' oneof, and one line here.
#include "server/bake/recipe.h"

// Every line ends in a backslash, so that a method is added (or removed) as one line.
#define SKINNING_BAKE_RECIPES(X) \
  X(Bbw)                         \
  X(BoneHeat)                    \
  X(GeodesicVoxel)               \
  X(FastModel)                   \
  X(SwingTwist)                  \
  X(Endpoint)                    \
  X(ElasticModel)                \
  /* the end of the list */

namespace skinning {

#define SKINNING_DECLARE_RECIPE(Name) std::unique_ptr<Recipe> New##Name##Recipe();
SKINNING_BAKE_RECIPES(SKINNING_DECLARE_RECIPE)
#undef SKINNING_DECLARE_RECIPE

// A method listed twice is refused by RecipeRegistry::Add (and caught by recipe_test).
void AddAllRecipes(RecipeRegistry* registry) {
#define SKINNING_ADD_RECIPE(Name) registry->Add(New##Name##Recipe()).IgnoreError();
  SKINNING_BAKE_RECIPES(SKINNING_ADD_RECIPE)
#undef SKINNING_ADD_RECIPE
}

}  // namespace skinning
