#include "server/bake/bake_options.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"
#include "server/convert/convert.h"

namespace skinning {
namespace {

constexpr int kDefaultInfluences = 4;

// Shape, finite positions and indices in range of a tet mesh the client sent.
absl::Status CheckTetMesh(const v1::TetMesh& t) {
  if (t.positions_size() % 3 != 0 || t.tets_size() % 4 != 0 || t.tets_size() == 0)
    return absl::InvalidArgumentError(absl::StrFormat(
        "options.domain.tet_mesh has %d positions and %d tet indices (need multiples of 3 and 4, some tets)",
        t.positions_size(), t.tets_size()));
  for (int i = 0; i < t.positions_size(); ++i)
    if (!std::isfinite(t.positions(i)))
      return absl::InvalidArgumentError(
          absl::StrFormat("options.domain.tet_mesh.positions[%d] is %f, not finite", i, t.positions(i)));
  const int nv = t.positions_size() / 3;
  for (int i = 0; i < t.tets_size(); ++i)
    if (t.tets(i) < 0 || t.tets(i) >= nv)
      return absl::InvalidArgumentError(absl::StrFormat(
          "options.domain.tet_mesh.tets[%d][%d] = %d is out of range (%d vertices)", i / 4, i % 4, t.tets(i), nv));
  return absl::OkStatus();
}

// The domain of normalized options for `recipe`: a checked tet mesh, or a voxel resolution (64
// by default) within the limits; nothing for surface methods.
absl::Status NormalizeDomain(const Recipe& recipe, v1::BakeOptions* o) {
  v1::Domain& d = *o->mutable_domain();
  if (!recipe.Volumetric(*o)) {
    if (d.has_tet_mesh())
      return absl::InvalidArgumentError(absl::StrCat(
          "options.domain.tet_mesh: ", recipe.name(), " with these options works on the surface and takes no tet mesh"));
    o->clear_domain();
    return absl::OkStatus();
  }
  if (d.has_tet_mesh()) {
    if (d.voxel_resolution() != 0)
      return absl::InvalidArgumentError(absl::StrFormat(
          "options.domain.voxel_resolution = %d with a tet mesh: give one or the other", d.voxel_resolution()));
    return CheckTetMesh(d.tet_mesh());
  }
  if (d.voxel_resolution() == 0) d.set_voxel_resolution(VoxelGridOptions().resolution);
  if (d.voxel_resolution() < VoxelGridOptions::kMinResolution || d.voxel_resolution() > VoxelGridOptions::kMaxResolution)
    return absl::InvalidArgumentError(absl::StrFormat(
        "options.domain.voxel_resolution = %d is outside the limits [%d, %d]", d.voxel_resolution(),
        VoxelGridOptions::kMinResolution, VoxelGridOptions::kMaxResolution));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<NormalizedBakeOptions> NormalizeBakeOptions(const v1::BakeOptions& options,
                                                           const RecipeRegistry& recipes) {
  NormalizedBakeOptions n;
  n.options = options;
  v1::BakeOptions& o = n.options;
  if (o.method_case() == v1::BakeOptions::METHOD_NOT_SET) o.mutable_bbw();
  n.recipe = recipes.Find(o.method_case());
  if (n.recipe == nullptr)
    return absl::InvalidArgumentError(
        absl::StrFormat("options: method %d has no recipe on this server", static_cast<int>(o.method_case())));
  if (!n.recipe->UsesInfluences()) {
    o.set_influence_count(0);
  } else {
    if (o.influence_count() == 0) o.set_influence_count(kDefaultInfluences);
    if (o.influence_count() < 1 || o.influence_count() > BakeOptions::kMaxInfluences)
      return absl::InvalidArgumentError(absl::StrFormat("options.influence_count = %d must be in [1, %d]",
                                                        o.influence_count(), BakeOptions::kMaxInfluences));
  }
  RETURN_IF_ERROR(n.recipe->Normalize(&o));
  RETURN_IF_ERROR(NormalizeDomain(*n.recipe, &o));
  return n;
}

std::string BakeId(const std::string& rig_id, const v1::BakeOptions& normalized) {
  return ContentAddress("bake-", rig_id + "\n", normalized);
}

std::vector<int> UnweightedJoints(const LoadedRig& rig) {
  std::vector<int> unweighted;
  const SparseWeights& W = rig.weights;
  if (W.rows() == 0) return unweighted;
  std::vector<bool> used(static_cast<size_t>(rig.rig.skeleton.size()), false);
  for (int i = 0; i < W.rows(); ++i)
    for (int c = 0; c < W.k(); ++c)
      if (W.weights(i, c) > 0) used[W.joints(i, c)] = true;
  for (size_t j = 0; j < used.size(); ++j)
    if (!used[j]) unweighted.push_back(static_cast<int>(j));
  return unweighted;
}

BakeOptions CoreBakeOptions(const v1::BakeOptions& normalized, const Recipe& recipe, const LoadedRig& rig) {
  BakeOptions core;
  core.non_deforming_joints = UnweightedJoints(rig);
  if (normalized.influence_count() > 0) core.influences = normalized.influence_count();
  const v1::Domain& d = normalized.domain();
  if (d.voxel_resolution() > 0) core.domain.voxel.resolution = d.voxel_resolution();
  if (d.has_tet_mesh()) {
    const v1::TetMesh& t = d.tet_mesh();
    TetDomainInput in;
    in.TV.resize(t.positions_size() / 3, 3);
    for (int i = 0; i < t.positions_size(); ++i) in.TV.data()[i] = t.positions(i);
    in.TT.resize(t.tets_size() / 4, 4);
    for (int i = 0; i < t.tets_size(); ++i) in.TT.data()[i] = t.tets(i);
    core.domain.tet_mesh = std::move(in);
  }
  recipe.ToCore(normalized, &core);
  return core;
}

}  // namespace skinning
