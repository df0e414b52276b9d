// The cotangent Laplacian of a triangle mesh (linear finite elements on the surface): the
// stiffness matrix K and a lumped (diagonal) mass M, so that Δ ≈ −M⁻¹K.
#ifndef SKINNING_CORE_GEOMETRY_COTANGENT_LAPLACIAN_H_
#define SKINNING_CORE_GEOMETRY_COTANGENT_LAPLACIAN_H_

#include <Eigen/Core>
#include <Eigen/SparseCore>

#include "core/geometry/mesh.h"

namespace skinning {

// The stiffness matrix of piecewise-linear functions on the mesh.
//   V  #V by 3 vertex positions
//   F  #F by 3 triangle vertex indices (must be in range; see CheckTriangleIndices)
// Returns K, #V by #V, symmetric positive semi-definite with rows summing to 0:
//   K_ij = −½ (cot α_ij + cot β_ij) for an edge ij (α, β the angles opposite it; one angle on a
//   boundary edge), K_ii = −Σ_j K_ij, and fᵀ K f = ∫ |∇f|² (the Dirichlet energy, doubled) for
//   the piecewise-linear f with vertex values f. Note the sign: K = −L for libigl's cotmatrix L.
// Triangles of zero area (degenerate) contribute nothing. Vertices on no triangle have empty rows.
Eigen::SparseMatrix<double> CotangentStiffness(const RowMatrixX3d& V, const RowMatrixX3i& F);

enum class MassLumping {
  // Each triangle gives a third of its area to each of its corners. Always positive on vertices
  // of a non-degenerate triangle, simplest.
  kBarycentric,
  // The "mixed Voronoi" area of Meyer, Desbrun, Schröder & Barr 2003: the Voronoi region of
  // each corner inside a non-obtuse triangle; for an obtuse triangle half its area to the obtuse
  // corner and a quarter to each other corner. Sums to the total area like kBarycentric, but
  // approximates the Laplace–Beltrami operator better on irregular meshes.
  kVoronoi,
};

// Lumped mass: #V per-vertex areas (sum = total surface area); 0 for vertices on no triangle.
//   V  #V by 3 vertex positions
//   F  #F by 3 triangle vertex indices (in range)
Eigen::VectorXd LumpedMass(const RowMatrixX3d& V, const RowMatrixX3i& F,
                           MassLumping lumping = MassLumping::kVoronoi);

// Convenience names: LumpedMass(V, F, kVoronoi) and LumpedMass(V, F, kBarycentric).
inline Eigen::VectorXd VoronoiMass(const RowMatrixX3d& V, const RowMatrixX3i& F) {
  return LumpedMass(V, F, MassLumping::kVoronoi);
}
inline Eigen::VectorXd BarycentricMass(const RowMatrixX3d& V, const RowMatrixX3i& F) {
  return LumpedMass(V, F, MassLumping::kBarycentric);
}

}  // namespace skinning

#endif  // SKINNING_CORE_GEOMETRY_COTANGENT_LAPLACIAN_H_
