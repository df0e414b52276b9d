#include "core/io/obj.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "core/io/text_io.h"
#include "core/util/status_macros.h"

namespace skinning {
namespace {

using io_internal::LineError;
using io_internal::PopToken;

// One face corner as written: a vertex index and an optional normal index, both resolved to
// 0-based (negative = relative to the elements read so far). Positive indices are checked once
// the whole file is read, since a face may name a vertex listed after it.
struct Corner {
  int32_t v;
  int32_t n;  // -1 when the corner names no normal
};

// Resolves an OBJ index token (1-based, or negative = relative to the `count` elements read so
// far) to 0-based. `what` names the index ("face"), `elements` what it counts ("vertices").
absl::Status ResolveIndex(absl::string_view token, const char* what, const char* elements,
                          int64_t count, const std::string& name, int line, int32_t* index) {
  int32_t i;
  if (!io_internal::ParseInt(token, &i))
    return LineError(name, line, absl::StrFormat("'%s' is not a %s index", token, what));
  if (i == 0)
    return LineError(name, line,
                     absl::StrFormat("%s index 0 is invalid (indices start at 1)", what));
  if (i < 0) {
    if (-static_cast<int64_t>(i) > count)
      return LineError(name, line,
                       absl::StrFormat("%s index %d is out of range (%d %s before this line)", what,
                                       i, count, elements));
    *index = static_cast<int32_t>(count + i);
  } else {
    *index = i - 1;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Mesh> ParseObj(const std::string& text, const std::string& name) {
  std::vector<double> positions;  // xyz per vertex
  std::vector<double> normals;    // xyz per `vn`
  std::vector<Corner> corners;    // 3 per triangle
  std::vector<int> triangle_line;
  bool every_corner_has_normal = true;

  io_internal::LineCursor lines(text);
  absl::string_view line;
  std::vector<Corner> polygon;
  while (lines.Next(&line)) {
    const int number = lines.number();
    if (const size_t hash = line.find('#'); hash != absl::string_view::npos)
      line = line.substr(0, hash);
    absl::string_view rest = line;
    const absl::string_view key = PopToken(&rest);
    if (key == "v" || key == "vn") {
      std::vector<double>& out = key == "v" ? positions : normals;
      for (int a = 0; a < 3; ++a) {
        const absl::string_view token = PopToken(&rest);
        double value;
        if (token.empty())
          return LineError(name, number, absl::StrCat("'", key, "' needs 3 coordinates"));
        if (!io_internal::ParseDouble(token, &value))
          return LineError(name, number, absl::StrCat("'", token, "' is not a number"));
        out.push_back(value);
      }
      // Further columns (a `w`, or vertex colours) are ignored.
    } else if (key == "f") {
      polygon.clear();
      const int64_t nv = static_cast<int64_t>(positions.size() / 3);
      const int64_t nn = static_cast<int64_t>(normals.size() / 3);
      for (absl::string_view token = PopToken(&rest); !token.empty(); token = PopToken(&rest)) {
        // i, i/t, i//n, i/t/n
        const size_t slash1 = token.find('/');
        absl::string_view normal_token;
        if (slash1 != absl::string_view::npos) {
          const size_t slash2 = token.find('/', slash1 + 1);
          if (slash2 != absl::string_view::npos) normal_token = token.substr(slash2 + 1);
        }
        Corner c{-1, -1};
        RETURN_IF_ERROR(
            ResolveIndex(token.substr(0, slash1), "face", "vertices", nv, name, number, &c.v));
        if (normal_token.empty()) {
          every_corner_has_normal = false;
        } else
          RETURN_IF_ERROR(ResolveIndex(normal_token, "normal", "normals", nn, name, number, &c.n));
        polygon.push_back(c);
      }
      if (polygon.size() < 3)
        return LineError(name, number,
                         absl::StrFormat("face has %d corners, needs at least 3", polygon.size()));
      for (size_t k = 1; k + 1 < polygon.size(); ++k) {  // fan around the first corner
        corners.push_back(polygon[0]);
        corners.push_back(polygon[k]);
        corners.push_back(polygon[k + 1]);
        triangle_line.push_back(number);
      }
    }
    // Anything else (vt, vp, l, o, g, s, mtllib, usemtl, ...) carries nothing we keep.
  }

  const int64_t nv = static_cast<int64_t>(positions.size() / 3);
  const int64_t nn = static_cast<int64_t>(normals.size() / 3);
  Mesh mesh;
  mesh.V = Eigen::Map<const RowMatrixX3d>(positions.data(), nv, 3);
  mesh.F.resize(static_cast<Eigen::Index>(triangle_line.size()), 3);
  for (size_t t = 0; t < triangle_line.size(); ++t) {
    for (int k = 0; k < 3; ++k) {
      const Corner& c = corners[3 * t + k];
      if (c.v >= nv)
        return LineError(
            name, triangle_line[t],
            absl::StrFormat("face index %d is out of range (%d vertices)", c.v + 1, nv));
      if (c.n >= nn)
        return LineError(
            name, triangle_line[t],
            absl::StrFormat("normal index %d is out of range (%d normals)", c.n + 1, nn));
      mesh.F(static_cast<Eigen::Index>(t), k) = c.v;
    }
  }

  // Per-vertex normals only when they are unambiguous.
  if (nn > 0 && every_corner_has_normal && !corners.empty()) {
    std::vector<int32_t> normal_of(nv, -1);
    bool consistent = true;
    for (const Corner& c : corners) {
      int32_t& assigned = normal_of[c.v];
      if (assigned < 0) {
        assigned = c.n;
      } else if (assigned != c.n) {
        for (int a = 0; a < 3; ++a)
          consistent = consistent && normals[3 * assigned + a] == normals[3 * c.n + a];
      }
      if (!consistent) break;
    }
    if (consistent) {
      mesh.N = RowMatrixX3d::Zero(nv, 3);
      for (int64_t i = 0; i < nv; ++i) {
        if (normal_of[i] < 0) continue;
        const Eigen::Vector3d n(normals[3 * normal_of[i]], normals[3 * normal_of[i] + 1],
                                normals[3 * normal_of[i] + 2]);
        const double length = n.norm();
        if (length > 0) mesh.N.row(i) = n.transpose() / length;
      }
    }
  }
  return mesh;
}

absl::StatusOr<Mesh> ReadObj(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, io_internal::ReadFileToString(path));
  return ParseObj(text, path);
}

absl::Status WriteObj(const std::string& path, const Mesh& mesh,
                      const std::vector<MeshPart>& parts) {
  const int64_t nv = mesh.V.rows();
  const bool with_normals = mesh.N.rows() > 0;
  if (with_normals && mesh.N.rows() != nv)
    return absl::InvalidArgumentError(absl::StrFormat(
        "mesh.normals has %d rows, expected %d (one per vertex)", mesh.N.rows(), nv));
  RETURN_IF_ERROR(CheckTriangleIndices(mesh.F, nv));
  RETURN_IF_ERROR(ValidateMeshParts(parts, mesh));
  const std::vector<std::vector<int>> faces = TrianglesByPart(parts, mesh.F);

  std::string out;
  out.reserve(static_cast<size_t>(64 * (nv * (with_normals ? 2 : 1) + mesh.F.rows())));
  auto append_rows = [&out](const char* key, const RowMatrixX3d& M) {
    for (Eigen::Index i = 0; i < M.rows(); ++i) {
      out += key;
      for (int a = 0; a < 3; ++a) {
        out += ' ';
        io_internal::AppendDouble(M(i, a), &out);
      }
      out += '\n';
    }
  };
  append_rows("v", mesh.V);
  if (with_normals) append_rows("vn", mesh.N);
  for (size_t p = 0; p < faces.size(); ++p) {
    if (!parts.empty()) {
      const std::string& name = parts[p].name;
      const bool one_word = !name.empty() && name.find_first_of(" \t\r\n#") == std::string::npos;
      absl::StrAppend(&out, "o ", one_word ? name : absl::StrCat("part", p), "\n");
    }
    for (int f : faces[p]) {
      out += 'f';
      for (int k = 0; k < 3; ++k) {
        const std::string index = absl::StrCat(mesh.F(f, k) + 1);
        absl::StrAppend(&out, " ", index);
        if (with_normals) absl::StrAppend(&out, "//", index);
      }
      out += '\n';
    }
  }
  return io_internal::WriteStringToFile(path, out);
}

}  // namespace skinning
