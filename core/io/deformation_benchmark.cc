#include "core/io/deformation_benchmark.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "core/io/text_io.h"
#include "core/util/status_macros.h"

namespace skinning {

using io_internal::LineError;

absl::StatusOr<std::vector<int>> ReadSel(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, io_internal::ReadFileToString(path));
  std::vector<int> status;
  io_internal::LineCursor lines(text);
  absl::string_view line;
  while (lines.Next(&line)) {
    absl::string_view rest = line;
    const absl::string_view token = io_internal::PopToken(&rest);
    if (token.empty() || token[0] == '#') continue;
    int32_t value;
    if (!io_internal::ParseInt(token, &value))
      return LineError(path, lines.number(), absl::StrCat("'", token, "' is not an integer"));
    if (const absl::string_view extra = io_internal::PopToken(&rest); !extra.empty())
      return LineError(path, lines.number(),
                       absl::StrCat("expected one integer per line, found also '", extra, "'"));
    status.push_back(value);
  }
  return status;
}

absl::StatusOr<Eigen::Affine3d> ReadDef(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, io_internal::ReadFileToString(path));
  io_internal::TokenCursor tokens(text, /*hash_comments=*/true);
  Eigen::Matrix4d M;
  absl::string_view token;
  for (int k = 0; k < 16; ++k) {
    if (!tokens.Next(&token))
      return LineError(path, tokens.line(),
                       absl::StrFormat("truncated: expected 16 matrix entries, found %d", k));
    double value;
    if (!io_internal::ParseDouble(token, &value) || !std::isfinite(value))
      return LineError(path, tokens.line(), absl::StrCat("'", token, "' is not a finite number"));
    M(k / 4, k % 4) = value;  // row-major in the file
  }
  if (tokens.Next(&token))
    return LineError(path, tokens.line(),
                     absl::StrCat("extra value '", token, "' after the 4x4 matrix"));
  if ((M.row(3) - Eigen::RowVector4d(0, 0, 0, 1)).cwiseAbs().maxCoeff() > 1e-9)
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: the last matrix row is (%g %g %g %g), not (0 0 0 1): not an affine transform", path,
        M(3, 0), M(3, 1), M(3, 2), M(3, 3)));
  Eigen::Affine3d A;
  A.matrix() = M;
  A.matrix().row(3) << 0, 0, 0, 1;
  return A;
}

}  // namespace skinning
