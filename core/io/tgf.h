// libigl's .tgf "control handle graph": joint positions and bone edges.
#ifndef SKINNING_CORE_IO_TGF_H_
#define SKINNING_CORE_IO_TGF_H_

#include <cstdint>
#include <string>

#include <Eigen/Core>

#include "absl/status/statusor.h"
#include "core/geometry/mesh.h"
#include "core/rig/skeleton.h"

namespace skinning {

struct TgfGraph {
  RowMatrixX3d C;                                              // #C by 3 joint positions
  Eigen::Matrix<int32_t, Eigen::Dynamic, 2, Eigen::RowMajor> E;  // #E by 2 (parent point, child point), 0-based
};

// Section 1: `index x y z [ignored extra columns]`; a line `#`; section 2: `source dest [flags]`
// (1-based); further `#` sections ignored. Every edge is a bone (libigl's readTGF(file, C, E)).
absl::StatusOr<TgfGraph> ReadTgf(const std::string& path);
absl::StatusOr<TgfGraph> ParseTgf(const std::string& text, const std::string& name = "tgf");
absl::Status WriteTgf(const std::string& path, const TgfGraph& graph);

// A skeleton with one joint per bone, in edge order, so weight column j is bone j (libigl's
// convention). Joint j sits at C[E(j,0)] with identity orientation; its parent is the bone whose
// child point is E(j,0), or -1. rest.translation is the offset from the parent joint (from the
// origin for roots); inverse_bind translates by -C[E(j,0)]. Names are "bone<j>".
// A local rotation q at joint j then rotates the bone about its tail, exactly as libigl's
// forward_kinematics with relative rotations dQ. Fails on a zero-length bone, an edge index out
// of range, a point that is the child of two bones, a cycle of bones, or an empty graph.
absl::StatusOr<Skeleton> SkeletonFromBones(const TgfGraph& graph);

}  // namespace skinning

#endif  // SKINNING_CORE_IO_TGF_H_
