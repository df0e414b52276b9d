// Bake options as the server keeps them: every default filled in and every range checked (the
// same request is then the same bake), the bake id over them, and the core options they mean.
#ifndef SKINNING_SERVER_BAKE_BAKE_OPTIONS_H_
#define SKINNING_SERVER_BAKE_BAKE_OPTIONS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/weights/bake.h"
#include "server/bake/recipe.h"
#include "skinning/v1/bake.pb.h"

namespace skinning {

struct NormalizedBakeOptions {
  v1::BakeOptions options;        // the method's oneof set, defaults filled in
  const Recipe* recipe = nullptr;  // the method's recipe
};

// Fills defaults and checks ranges, naming the field: no method means `bbw`; influence_count 0
// means 4 (0 for methods without sparse weights); a volumetric method gets voxel_resolution 64
// unless it has a tet mesh (checked: shape, finite positions, indices in range); a surface
// method refuses a tet mesh and drops the resolution; then the recipe's own Normalize.
// INVALID_ARGUMENT such as "options.domain.voxel_resolution = 300 is outside the limits [8, 256]".
absl::StatusOr<NormalizedBakeOptions> NormalizeBakeOptions(const v1::BakeOptions& options,
                                                           const RecipeRegistry& recipes = RecipeRegistry::Default());

// "bake-" + 32 hex digits of SHA-256 over the rig id and the normalized options (deterministic
// serialization): the bake's content address.
std::string BakeId(const std::string& rig_id, const v1::BakeOptions& normalized);

// The core options of normalized options for `rig`: influences, domain (voxel grid or tet mesh),
// the recipe's own fields, and as non-deforming joints those that the rig's own weights never
// use (none when the rig has no weights). The source weights of the methods that need them are
// the caller's.
BakeOptions CoreBakeOptions(const v1::BakeOptions& normalized, const Recipe& recipe, const LoadedRig& rig);

// The joints that no vertex of the rig's own weights uses; empty for a rig without weights.
std::vector<int> UnweightedJoints(const LoadedRig& rig);

}  // namespace skinning

#endif  // SKINNING_SERVER_BAKE_BAKE_OPTIONS_H_
