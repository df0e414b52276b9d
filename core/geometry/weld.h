// Welding: one vertex per point. Exported characters often repeat a point (non-indexed
// triangles, UV or normal seams); methods that work on the surface's connectivity would give
// the copies different weights, and the posed mesh would tear along them.
#ifndef SKINNING_CORE_GEOMETRY_WELD_H_
#define SKINNING_CORE_GEOMETRY_WELD_H_

#include <vector>

#include "core/geometry/mesh.h"

namespace skinning {

struct WeldedMesh {
  Mesh mesh;                // positions of the kept vertices, triangles re-indexed (no normals)
  std::vector<int> of;      // of[i]: the welded vertex of original vertex i
  bool changed = false;     // whether any two vertices were merged
};

// Merges vertices whose positions are within `relative_tolerance` × the bounding-box diagonal
// of one another (transitively: chains of near points become one vertex, at the position of
// the first). Triangles that collapse (two corners merged) are dropped. The default merges only
// exact or near-exact copies. Then DropUnreferenced.
WeldedMesh Weld(const Mesh& mesh, double relative_tolerance = 1e-7);

// Vertices that no triangle uses (stray points) are left out of the mesh and mapped to the
// nearest vertex that one does, so they get its results: kept, a far one stretched the voxel
// grid of the volumetric methods (coarsening it), and one off the surface lay in no handle's
// reach (BBW failed). Nothing changes when every vertex is used, when none is, or past 4e8
// distance tests (unused × used).
void DropUnreferenced(WeldedMesh* w);

// Rows of M (one per welded vertex) back to the original vertices: row i = M.row(of[i]).
template <typename Matrix>
Matrix Unweld(const Matrix& M, const std::vector<int>& of) {
  Matrix out(static_cast<Eigen::Index>(of.size()), M.cols());
  for (size_t i = 0; i < of.size(); ++i) out.row(static_cast<Eigen::Index>(i)) = M.row(of[i]);
  return out;
}

}  // namespace skinning

#endif  // SKINNING_CORE_GEOMETRY_WELD_H_
