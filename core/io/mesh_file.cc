#include "core/io/mesh_file.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/io/medit.h"
#include "core/io/obj.h"
#include "core/io/off.h"
#include "core/util/status_macros.h"

namespace skinning {
namespace {

// Lower-cased extension with its dot (".obj"), or "" when the file name has none.
std::string Extension(const std::string& path) {
  const size_t slash = path.find_last_of("/\\");
  const size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  return absl::AsciiStrToLower(path.substr(dot));
}

absl::Status Unsupported(const std::string& path, const std::string& extension) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": unsupported mesh file extension '",
                                                 extension, "' (expected .obj, .off or .mesh)"));
}

}  // namespace

absl::StatusOr<Mesh> ReadMeshFile(const std::string& path) {
  const std::string extension = Extension(path);
  if (extension == ".obj") return ReadObj(path);
  if (extension == ".off") return ReadOff(path);
  if (extension == ".mesh") {
    ASSIGN_OR_RETURN(TetMesh tet, ReadMedit(path));
    Mesh mesh;
    mesh.V = std::move(tet.V);
    mesh.F = std::move(tet.F);
    return mesh;
  }
  return Unsupported(path, extension);
}

absl::Status WriteMeshFile(const std::string& path, const Mesh& mesh) {
  const std::string extension = Extension(path);
  if (extension == ".obj") return WriteObj(path, mesh);
  if (extension == ".off") return WriteOff(path, mesh);
  if (extension == ".mesh") {
    TetMesh tet;
    tet.V = mesh.V;
    tet.F = mesh.F;
    return WriteMedit(path, tet);
  }
  return Unsupported(path, extension);
}

}  // namespace skinning
