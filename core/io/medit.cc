#include "core/io/medit.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "core/io/text_io.h"
#include "core/util/status_macros.h"

namespace skinning {
namespace {

using io_internal::LineError;

// Reads MEDIT's token stream, remembering lines for messages.
class MeditParser {
 public:
  MeditParser(absl::string_view text, const std::string& name)
      : tokens_(text, /*hash_comments=*/true), name_(name), text_size_(text.size()) {}

  absl::StatusOr<TetMesh> Parse() {
    std::vector<double> vertices;
    std::vector<int32_t> triangles, tets;
    std::vector<int> triangle_lines, tet_lines;
    absl::string_view keyword;
    bool dimension_seen = false;
    while (tokens_.Next(&keyword)) {
      const int line = tokens_.line();
      if (keyword == "End") break;
      int32_t value;
      if (keyword == "MeshVersionFormatted") {
        RETURN_IF_ERROR(Int("the version", &value));
      } else if (keyword == "Dimension") {
        RETURN_IF_ERROR(Int("the dimension", &value));
        if (value != 3)
          return LineError(name_, tokens_.line(),
                           absl::StrFormat("Dimension %d is not supported (only 3)", value));
        dimension_seen = true;
      } else if (keyword == "Vertices") {
        int32_t count;
        RETURN_IF_ERROR(Count("Vertices", 4, &count));
        vertices.reserve(vertices.size() + 3 * static_cast<size_t>(count));
        for (int32_t i = 0; i < count; ++i) {
          for (int a = 0; a < 3; ++a) {
            double x;
            RETURN_IF_ERROR(Double(&x));
            vertices.push_back(x);
          }
          RETURN_IF_ERROR(Int("a vertex ref", &value));
        }
      } else if (keyword == "Triangles" || keyword == "Tetrahedra" || keyword == "Edges") {
        const int corners = keyword == "Triangles" ? 3 : keyword == "Tetrahedra" ? 4 : 2;
        std::vector<int32_t>* out = keyword == "Triangles"    ? &triangles
                                    : keyword == "Tetrahedra" ? &tets
                                                              : nullptr;
        std::vector<int>* lines = keyword == "Triangles"    ? &triangle_lines
                                  : keyword == "Tetrahedra" ? &tet_lines
                                                            : nullptr;
        int32_t count;
        RETURN_IF_ERROR(Count(keyword, corners + 1, &count));
        for (int32_t i = 0; i < count; ++i) {
          for (int c = 0; c < corners; ++c) {
            RETURN_IF_ERROR(Int("a vertex index", &value));
            if (out != nullptr) {
              out->push_back(value - 1);
              if (c == 0) lines->push_back(tokens_.line());
            }
          }
          RETURN_IF_ERROR(Int("an element ref", &value));
        }
      } else {
        return LineError(name_, line, absl::StrCat("unsupported MEDIT keyword '", keyword, "'"));
      }
    }
    if (!dimension_seen && !vertices.empty())
      return LineError(name_, tokens_.line(), "missing 'Dimension 3'");

    const int64_t nv = static_cast<int64_t>(vertices.size() / 3);
    auto check = [&](const std::vector<int32_t>& indices, int corners,
                     const std::vector<int>& lines, const char* what) -> absl::Status {
      for (size_t k = 0; k < indices.size(); ++k)
        if (indices[k] < 0 || indices[k] >= nv)
          return LineError(name_, lines[k / corners],
                           absl::StrFormat("%s %d corner %d = %d is out of range (%d vertices, "
                                           "1-based)",
                                           what, k / corners, k % corners, indices[k] + 1, nv));
      return absl::OkStatus();
    };
    RETURN_IF_ERROR(check(triangles, 3, triangle_lines, "triangle"));
    RETURN_IF_ERROR(check(tets, 4, tet_lines, "tetrahedron"));

    TetMesh mesh;
    mesh.V = Eigen::Map<const RowMatrixX3d>(vertices.data(), nv, 3);
    mesh.F = Eigen::Map<const RowMatrixX3i>(triangles.data(),
                                            static_cast<Eigen::Index>(triangles.size() / 3), 3);
    mesh.T = Eigen::Map<const Eigen::Matrix<int32_t, Eigen::Dynamic, 4, Eigen::RowMajor>>(
        tets.data(), static_cast<Eigen::Index>(tets.size() / 4), 4);
    return mesh;
  }

 private:
  absl::Status Next(const char* what, absl::string_view* token) {
    if (!tokens_.Next(token))
      return LineError(name_, tokens_.line(),
                       absl::StrCat("unexpected end of file, expected ", what));
    return absl::OkStatus();
  }
  absl::Status Int(const char* what, int32_t* value) {
    absl::string_view token;
    RETURN_IF_ERROR(Next(what, &token));
    if (!io_internal::ParseInt(token, value))
      return LineError(name_, tokens_.line(),
                       absl::StrCat("expected ", what, ", found '", token, "'"));
    return absl::OkStatus();
  }
  absl::Status Double(double* value) {
    absl::string_view token;
    RETURN_IF_ERROR(Next("a coordinate", &token));
    if (!io_internal::ParseDouble(token, value))
      return LineError(name_, tokens_.line(), absl::StrCat("'", token, "' is not a number"));
    return absl::OkStatus();
  }
  // An element count; refuses counts the rest of the file cannot hold (`per` tokens each).
  absl::Status Count(absl::string_view keyword, int per, int32_t* count) {
    const std::string what = absl::StrCat("the number of ", keyword);
    RETURN_IF_ERROR(Int(what.c_str(), count));
    if (*count < 0 || static_cast<int64_t>(*count) * per * 2 > static_cast<int64_t>(text_size_))
      return LineError(name_, tokens_.line(),
                       absl::StrFormat("%s count %d is negative or larger than the file can hold",
                                       keyword, *count));
    return absl::OkStatus();
  }

  io_internal::TokenCursor tokens_;
  const std::string& name_;
  size_t text_size_;
};

}  // namespace

absl::StatusOr<TetMesh> ParseMedit(absl::string_view text, const std::string& name) {
  return MeditParser(text, name).Parse();
}

absl::StatusOr<TetMesh> ReadMedit(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, io_internal::ReadFileToString(path));
  return ParseMedit(text, path);
}

absl::Status WriteMedit(const std::string& path, const TetMesh& mesh) {
  const Eigen::Index nv = mesh.V.rows();
  RETURN_IF_ERROR(CheckTriangleIndices(mesh.F, nv, "tet_mesh"));
  for (Eigen::Index t = 0; t < mesh.T.rows(); ++t)
    for (int k = 0; k < 4; ++k)
      if (mesh.T(t, k) < 0 || mesh.T(t, k) >= nv)
        return absl::InvalidArgumentError(
            absl::StrFormat("tet_mesh.tetrahedra[%d][%d] = %d is out of range (%d vertices)", t, k,
                            mesh.T(t, k), nv));
  std::string out = "MeshVersionFormatted 1\nDimension 3\n";
  absl::StrAppend(&out, "Vertices\n", nv, "\n");
  for (Eigen::Index i = 0; i < nv; ++i) {
    for (int a = 0; a < 3; ++a) {
      io_internal::AppendDouble(mesh.V(i, a), &out);
      out += ' ';
    }
    out += "0\n";
  }
  if (mesh.F.rows() > 0) {
    absl::StrAppend(&out, "Triangles\n", mesh.F.rows(), "\n");
    for (Eigen::Index f = 0; f < mesh.F.rows(); ++f)
      absl::StrAppend(&out, mesh.F(f, 0) + 1, " ", mesh.F(f, 1) + 1, " ", mesh.F(f, 2) + 1, " 0\n");
  }
  if (mesh.T.rows() > 0) {
    absl::StrAppend(&out, "Tetrahedra\n", mesh.T.rows(), "\n");
    for (Eigen::Index t = 0; t < mesh.T.rows(); ++t)
      absl::StrAppend(&out, mesh.T(t, 0) + 1, " ", mesh.T(t, 1) + 1, " ", mesh.T(t, 2) + 1, " ",
                      mesh.T(t, 3) + 1, " 0\n");
  }
  out += "End\n";
  return io_internal::WriteStringToFile(path, out);
}

}  // namespace skinning
