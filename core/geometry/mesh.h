// Triangle meshes: the plain data every method reads, and its validation.
#ifndef SKINNING_CORE_GEOMETRY_MESH_H_
#define SKINNING_CORE_GEOMETRY_MESH_H_

#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "absl/status/status.h"

namespace skinning {

// Row-major so that a #V by 3 matrix is xyz interleaved, as on the wire.
using RowMatrixX3d = Eigen::Matrix<double, Eigen::Dynamic, 3, Eigen::RowMajor>;
using RowMatrixX3f = Eigen::Matrix<float, Eigen::Dynamic, 3, Eigen::RowMajor>;
using RowMatrixX3i = Eigen::Matrix<int32_t, Eigen::Dynamic, 3, Eigen::RowMajor>;

struct Mesh {
  RowMatrixX3d V;  // #V by 3 rest (bind-space) positions
  RowMatrixX3i F;  // #F by 3 triangle vertex indices, 0-based, counter-clockwise
  RowMatrixX3d N;  // #V by 3 unit vertex normals, or 0 rows when the mesh has none
};

// A named, contiguous range of a mesh's vertices: one mesh node of a file with several (a glTF
// character's skinned nodes), kept so that posed output can keep the meshes apart. A mesh
// without parts is one part.
struct MeshPart {
  std::string name;
  int first_vertex = 0;
  int num_vertices = 0;
};

// A morph target (glTF: a blend shape): per-vertex position deltas, and normal deltas when
// given, added to the mesh times a weight before skinning (morphed V = V + Σ wₜ dVₜ).
struct MorphTarget {
  std::string name;
  RowMatrixX3d dV;               // #V by 3 position deltas
  RowMatrixX3d dN;               // #V by 3 normal deltas, or 0 rows
  double default_weight = 0.0;   // the weight a pose that sets none uses
};

// Parts must follow one another from vertex 0 and cover every vertex (so first_vertex is
// implied), each with at least one vertex, and no triangle may join two parts. Errors name the
// field: "mesh.parts[2]: 0 vertices", "mesh.triangles[7] joins parts 0 and 1".
absl::Status ValidateMeshParts(const std::vector<MeshPart>& parts, const Mesh& mesh,
                               const char* field = "mesh");

// Every target has #V by 3 finite position deltas, normal deltas of the same shape or none, and
// a finite default weight: "rig.morph_targets[1].position_deltas has 30 rows, expected 32".
absl::Status ValidateMorphTargets(const std::vector<MorphTarget>& targets, const Mesh& mesh,
                                  const char* field = "morph_targets");

// The rows of F in each part, in order (the part of a triangle's first vertex; after
// ValidateMeshParts all three agree); one list of every row when `parts` is empty.
std::vector<std::vector<int>> TrianglesByPart(const std::vector<MeshPart>& parts,
                                              const RowMatrixX3i& F);

// Each part as a mesh of its own (its vertices, normals and triangles, indices made local), in
// order; the whole mesh when `parts` is empty. Assumes ValidateMeshParts.
std::vector<Mesh> SplitByParts(const Mesh& mesh, const std::vector<MeshPart>& parts);

// Checks what every method assumes of a mesh. Errors name the field and index, e.g.
// "mesh.vertices[12].y is NaN", "mesh.triangles[3][1] = 900 is out of range (500 vertices)".
// `field` prefixes the messages ("mesh" unless the caller says otherwise).
absl::Status ValidateMesh(const Mesh& mesh, const char* field = "mesh");

// Checks that every index of F (#F by 3) is in [0, num_vertices):
// "mesh.triangles[3][1] = 900 is out of range (500 vertices)".
absl::Status CheckTriangleIndices(const RowMatrixX3i& F, int64_t num_vertices,
                                  const char* field = "mesh");

// Axis-aligned bounding box diagonal length of V (#V by 3); 0 for an empty matrix.
double BoundingBoxDiagonal(const RowMatrixX3d& V);

// Area-weighted per-vertex normals of a triangle mesh: #V by 3, unit length (zero rows for
// vertices on no triangle of non-zero area).
RowMatrixX3d PerVertexNormals(const RowMatrixX3d& V, const RowMatrixX3i& F);

// Signed volume enclosed by a closed triangle mesh (divergence theorem: Σ v0 · (v1 × v2) / 6);
// positive for outward-facing (counter-clockwise seen from outside) triangles.
double SignedVolume(const RowMatrixX3d& V, const RowMatrixX3i& F);

}  // namespace skinning

#endif  // SKINNING_CORE_GEOMETRY_MESH_H_
