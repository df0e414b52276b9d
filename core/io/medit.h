// MEDIT .mesh (INRIA, ASCII): tetrahedral meshes with their boundary triangles.
#ifndef SKINNING_CORE_IO_MEDIT_H_
#define SKINNING_CORE_IO_MEDIT_H_

#include <Eigen/Core>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/geometry/mesh.h"

namespace skinning {

struct TetMesh {
  RowMatrixX3d V;                                                // #V by 3 vertex positions
  Eigen::Matrix<int32_t, Eigen::Dynamic, 4, Eigen::RowMajor> T;  // #T by 4 tetrahedra, 0-based
  RowMatrixX3i F;  // #F by 3 triangles (usually the boundary), 0-based, as stored
};

// Reads the keywords MeshVersionFormatted, Dimension (must be 3), Vertices (`x y z ref`),
// Triangles (`i j k ref`), Tetrahedra (`i j k l ref`), Edges (read and dropped) and End; `#`
// starts a comment. Indices are 1-based in the file and 0-based in the result; refs are dropped.
// Any other keyword is an error. Errors name the line: "hand.mesh:9000: tetrahedron 12 corner 3
// = 7300 is out of range (7234 vertices)".
absl::StatusOr<TetMesh> ReadMedit(const std::string& path);
// ReadMedit of a file's text; `name` starts every message.
absl::StatusOr<TetMesh> ParseMedit(absl::string_view text, const std::string& name = "mesh");

// Writes MeshVersionFormatted 1, Dimension 3, Vertices, Triangles (when F has rows), Tetrahedra
// (when T has rows) and End, with ref 0 and full double precision. Fails on an out-of-range index.
absl::Status WriteMedit(const std::string& path, const TetMesh& mesh);

}  // namespace skinning

#endif  // SKINNING_CORE_IO_MEDIT_H_
