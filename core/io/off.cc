#include "core/io/off.h"

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

// The next line with a token on it, with any `#` comment removed; false at the end.
bool NextContentLine(io_internal::LineCursor* lines, absl::string_view* line) {
  while (lines->Next(line)) {
    if (const size_t hash = line->find('#'); hash != absl::string_view::npos)
      *line = line->substr(0, hash);
    absl::string_view probe = *line;
    if (!PopToken(&probe).empty()) return true;
  }
  return false;
}

absl::StatusOr<Mesh> ParseOffText(absl::string_view text, const std::string& name) {
  io_internal::LineCursor lines(text);
  absl::string_view line;
  if (!NextContentLine(&lines, &line)) return LineError(name, 1, "empty file, expected 'OFF'");
  absl::string_view rest = line;
  const absl::string_view magic = PopToken(&rest);
  if (magic != "OFF" && magic != "COFF" && magic != "NOFF" && magic != "CNOFF")
    return LineError(name, lines.number(),
                     absl::StrCat("expected 'OFF' (or COFF, NOFF, CNOFF), found '", magic, "'"));
  // The counts may follow the keyword on the same line.
  if (absl::string_view probe = rest; PopToken(&probe).empty()) {
    if (!NextContentLine(&lines, &line))
      return LineError(name, lines.number(), "missing the 'nV nF nE' line");
    rest = line;
  }
  int32_t counts[2];
  for (int32_t& count : counts) {
    const absl::string_view token = PopToken(&rest);
    if (!io_internal::ParseInt(token, &count) || count < 0)
      return LineError(
          name, lines.number(),
          absl::StrCat("expected non-negative counts 'nV nF nE', found '", token, "'"));
  }
  const int32_t nv = counts[0], nf = counts[1];
  // Every vertex and face needs at least one line: refuse absurd counts before allocating.
  if (static_cast<int64_t>(nv) + nf > static_cast<int64_t>(text.size()))
    return LineError(
        name, lines.number(),
        absl::StrFormat("counts %d vertices and %d faces exceed what the file holds", nv, nf));

  Mesh mesh;
  mesh.V.resize(nv, 3);
  for (int32_t i = 0; i < nv; ++i) {
    if (!NextContentLine(&lines, &line))
      return LineError(name, lines.number(),
                       absl::StrFormat("truncated: found %d of %d vertices", i, nv));
    rest = line;
    for (int a = 0; a < 3; ++a) {
      const absl::string_view token = PopToken(&rest);
      if (token.empty()) return LineError(name, lines.number(), "a vertex line needs 'x y z'");
      if (!io_internal::ParseDouble(token, &mesh.V(i, a)))
        return LineError(name, lines.number(), absl::StrCat("'", token, "' is not a number"));
    }
  }
  std::vector<int32_t> triangles;
  triangles.reserve(3 * static_cast<size_t>(nf));
  std::vector<int32_t> polygon;
  for (int32_t f = 0; f < nf; ++f) {
    if (!NextContentLine(&lines, &line))
      return LineError(name, lines.number(),
                       absl::StrFormat("truncated: found %d of %d faces", f, nf));
    rest = line;
    const absl::string_view size_token = PopToken(&rest);
    int32_t n;
    if (!io_internal::ParseInt(size_token, &n) || n < 3)
      return LineError(
          name, lines.number(),
          absl::StrCat("expected a corner count of at least 3, found '", size_token, "'"));
    polygon.clear();
    for (int32_t k = 0; k < n; ++k) {
      const absl::string_view token = PopToken(&rest);
      int32_t index;
      if (token.empty())
        return LineError(name, lines.number(),
                         absl::StrFormat("face lists %d of its %d corners", k, n));
      if (!io_internal::ParseInt(token, &index))
        return LineError(name, lines.number(), absl::StrCat("'", token, "' is not a face index"));
      if (index < 0 || index >= nv)
        return LineError(name, lines.number(),
                         absl::StrFormat("face index %d is out of range (%d vertices)", index, nv));
      polygon.push_back(index);
    }
    // Anything after the corners (a face colour) is ignored.
    for (int32_t k = 1; k + 1 < n; ++k)
      triangles.insert(triangles.end(), {polygon[0], polygon[k], polygon[k + 1]});
  }
  mesh.F = Eigen::Map<const RowMatrixX3i>(triangles.data(),
                                          static_cast<Eigen::Index>(triangles.size() / 3), 3);
  return mesh;
}

}  // namespace

absl::StatusOr<Mesh> ParseOff(absl::string_view text, const std::string& name) { return ParseOffText(text, name); }

absl::StatusOr<Mesh> ReadOff(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, io_internal::ReadFileToString(path));
  return ParseOff(text, path);
}

absl::Status WriteOff(const std::string& path, const Mesh& mesh) {
  const Eigen::Index nv = mesh.V.rows();
  RETURN_IF_ERROR(CheckTriangleIndices(mesh.F, nv));
  std::string out;
  absl::StrAppend(&out, "OFF\n", nv, " ", mesh.F.rows(), " 0\n");
  for (Eigen::Index i = 0; i < nv; ++i) {
    for (int a = 0; a < 3; ++a) {
      if (a > 0) out += ' ';
      io_internal::AppendDouble(mesh.V(i, a), &out);
    }
    out += '\n';
  }
  for (Eigen::Index f = 0; f < mesh.F.rows(); ++f)
    absl::StrAppend(&out, "3 ", mesh.F(f, 0), " ", mesh.F(f, 1), " ", mesh.F(f, 2), "\n");
  return io_internal::WriteStringToFile(path, out);
}

}  // namespace skinning
