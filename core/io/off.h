// Object File Format (.off, ASCII): polygon meshes as used by Geomview and the Botsch & Sorkine
// deformation benchmark.
#ifndef SKINNING_CORE_IO_OFF_H_
#define SKINNING_CORE_IO_OFF_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/geometry/mesh.h"

namespace skinning {

// Reads `OFF` (or `COFF`/`NOFF`/`CNOFF`: per-vertex colours or normals after x y z are ignored),
// then `nV nF [nE]` (may share the header line), nV lines `x y z ...`, nF lines
// `n i0 .. i(n-1) [colour]` with 0-based indices. Polygons are fan-triangulated around i0, so
// Mesh::F has sum(n - 2) rows; Mesh::N is empty. `#` starts a comment. Errors name the line:
// "bar.off:7000: face index 6084 is out of range (6084 vertices)".
absl::StatusOr<Mesh> ReadOff(const std::string& path);
// ReadOff of a file's text; `name` starts every message.
absl::StatusOr<Mesh> ParseOff(absl::string_view text, const std::string& name = "off");

// Writes `OFF`, `nV nF 0`, the vertices (full double precision) and `3 i j k` triangles.
absl::Status WriteOff(const std::string& path, const Mesh& mesh);

}  // namespace skinning

#endif  // SKINNING_CORE_IO_OFF_H_
