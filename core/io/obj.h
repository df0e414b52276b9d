// Wavefront OBJ: positions, optional normals, polygon faces (fan-triangulated on read).
#ifndef SKINNING_CORE_IO_OBJ_H_
#define SKINNING_CORE_IO_OBJ_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/geometry/mesh.h"

namespace skinning {

// Reads `v` and `f` lines (indices 1-based or negative/relative; `i`, `i/t`, `i//n`, `i/t/n`).
// Polygons are fan-triangulated. Normals are kept only when every face corner names a normal
// and each vertex always gets the same one; otherwise Mesh::N is empty. Unknown lines (`vt`,
// `mtllib`, `usemtl`, `o`, `g`, `s`) are ignored; a missing .mtl is not an error.
// Errors name the line: "arm.obj:12: face index 9000 is out of range (8311 vertices)".
absl::StatusOr<Mesh> ReadObj(const std::string& path);
absl::StatusOr<Mesh> ParseObj(const std::string& text, const std::string& name = "obj");

// Writes `v` (and `vn` when N has rows) and triangle `f` lines, full float precision. With
// `parts` (ValidateMeshParts), each part's faces follow an `o <name>` line (`o part<i>` when the
// name is empty or not one word), so viewers keep the meshes apart.
absl::Status WriteObj(const std::string& path, const Mesh& mesh,
                      const std::vector<MeshPart>& parts = {});

}  // namespace skinning

#endif  // SKINNING_CORE_IO_OBJ_H_
