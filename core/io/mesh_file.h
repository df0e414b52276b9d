// Reading and writing a triangle Mesh in whichever format a file name's extension says.
#ifndef SKINNING_CORE_IO_MESH_FILE_H_
#define SKINNING_CORE_IO_MESH_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/geometry/mesh.h"

namespace skinning {

// By extension, case-insensitive: `.obj` (ReadObj), `.off` (ReadOff), `.mesh` (ReadMedit).
// For a MEDIT tet mesh the result is its stored triangles (usually the boundary) over ALL of its
// vertices, so interior vertices stay in V unreferenced by F (hand.mesh: 7,234 vertices of
// which the triangles use 4,780). Vertex indices thus match the tet mesh's. Any other extension
// is INVALID_ARGUMENT naming it.
absl::StatusOr<Mesh> ReadMeshFile(const std::string& path);

// By extension as above; `.mesh` writes vertices and triangles (no tetrahedra). Normals are
// written only to `.obj`.
absl::Status WriteMeshFile(const std::string& path, const Mesh& mesh);

}  // namespace skinning

#endif  // SKINNING_CORE_IO_MESH_FILE_H_
