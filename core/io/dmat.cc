#include "core/io/dmat.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "core/io/text_io.h"
#include "core/util/status_macros.h"

namespace skinning {
namespace {

using io_internal::LineError;

// Parses a `cols rows` header line into non-negative counts.
absl::Status ParseHeader(absl::string_view line, const std::string& name, int number, int32_t* cols,
                         int32_t* rows) {
  absl::string_view rest = line;
  const absl::string_view a = io_internal::PopToken(&rest);
  const absl::string_view b = io_internal::PopToken(&rest);
  const absl::string_view extra = io_internal::PopToken(&rest);
  if (!io_internal::ParseInt(a, cols) || !io_internal::ParseInt(b, rows) || !extra.empty() ||
      *cols < 0 || *rows < 0)
    return LineError(name, number,
                     absl::StrCat("expected a header 'cols rows' of two non-negative integers, "
                                  "found '",
                                  line, "'"));
  return absl::OkStatus();
}

bool OnlyBlanks(absl::string_view s) {
  absl::string_view rest = s;
  return io_internal::PopToken(&rest).empty();
}

absl::StatusOr<Eigen::MatrixXd> ParseBinary(absl::string_view text, const std::string& name) {
  io_internal::LineCursor lines(text);
  absl::string_view line;
  lines.Next(&line);  // `0 0`, already checked
  if (!lines.Next(&line))
    return LineError(name, 1, "binary DMAT: missing the 'cols rows' line after '0 0'");
  int32_t cols, rows;
  RETURN_IF_ERROR(ParseHeader(line, name, 2, &cols, &rows));
  const absl::string_view data = text.substr(std::min(lines.offset(), text.size()));
  const uint64_t expected = static_cast<uint64_t>(cols) * static_cast<uint64_t>(rows) * 8u;
  if (data.size() != expected)
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: binary DMAT %s: %d cols x %d rows need %d bytes of float64 data, found %d", name,
        data.size() < expected ? "is truncated" : "has trailing bytes", cols, rows, expected,
        data.size()));
  Eigen::MatrixXd M(rows, cols);
  double* out = M.data();  // column-major, as on disk
  for (uint64_t i = 0; i < expected / 8; ++i) {
    uint64_t bits = 0;
    for (int b = 0; b < 8; ++b)
      bits |= static_cast<uint64_t>(static_cast<unsigned char>(data[8 * i + b])) << (8 * b);
    std::memcpy(&out[i], &bits, sizeof(double));
  }
  return M;
}

}  // namespace

absl::StatusOr<Eigen::MatrixXd> ReadDmat(const std::string& path) {
  ASSIGN_OR_RETURN(std::string file, io_internal::ReadFileToString(path));
  return ParseDmat(file, path);
}

absl::StatusOr<Eigen::MatrixXd> ParseDmat(absl::string_view text, const std::string& name) {

  io_internal::LineCursor lines(text);
  absl::string_view header;
  if (!lines.Next(&header)) return LineError(name, 1, "empty file, expected 'cols rows'");
  int32_t cols, rows;
  RETURN_IF_ERROR(ParseHeader(header, name, 1, &cols, &rows));
  // `0 0` starts the binary form, unless nothing follows (an empty ASCII matrix).
  if (cols == 0 && rows == 0) {
    if (OnlyBlanks(text.substr(std::min(lines.offset(), text.size()))))
      return Eigen::MatrixXd(0, 0);
    return ParseBinary(text, name);
  }

  const int64_t expected = static_cast<int64_t>(cols) * rows;
  // Each number takes at least two bytes (a digit and a separator): refuse absurd headers
  // before allocating.
  if (expected > static_cast<int64_t>(text.size()))
    return LineError(name, 1,
                     absl::StrFormat("header promises %d cols x %d rows = %d numbers but the "
                                     "file has only %d bytes (truncated?)",
                                     cols, rows, expected, text.size()));
  Eigen::MatrixXd M(rows, cols);
  double* out = M.data();  // column-major, as in the file
  int64_t count = 0;
  io_internal::TokenCursor tokens(text.substr(std::min(lines.offset(), text.size())),
                                  /*hash_comments=*/false);
  absl::string_view token;
  while (tokens.Next(&token)) {
    const int number = tokens.line() + 1;  // the cursor starts on the file's line 2
    if (count == expected)
      return LineError(name, number,
                       absl::StrFormat("extra value '%s' after the %d cols x %d rows = %d numbers",
                                       token, cols, rows, expected));
    if (!io_internal::ParseDouble(token, &out[count]))
      return LineError(name, number, absl::StrCat("'", token, "' is not a number"));
    ++count;
  }
  if (count < expected)
    return LineError(name, tokens.line() + 1,
                     absl::StrFormat("truncated: expected %d cols x %d rows = %d numbers, found %d",
                                     cols, rows, expected, count));
  return M;
}

absl::Status WriteDmat(const std::string& path, const Eigen::MatrixXd& M, bool ascii) {
  const Eigen::Index rows = M.rows(), cols = M.cols();
  std::string out;
  if (ascii) {
    out.reserve(static_cast<size_t>(24 * rows * cols + 32));
    absl::StrAppend(&out, cols, " ", rows, "\n");
    for (Eigen::Index j = 0; j < cols; ++j)
      for (Eigen::Index i = 0; i < rows; ++i) {
        io_internal::AppendDouble(M(i, j), &out);
        out += '\n';
      }
  } else {
    absl::StrAppend(&out, "0 0\n", cols, " ", rows, "\n");
    out.reserve(out.size() + static_cast<size_t>(8 * rows * cols));
    for (Eigen::Index j = 0; j < cols; ++j)
      for (Eigen::Index i = 0; i < rows; ++i) {
        const double value = M(i, j);
        uint64_t bits;
        std::memcpy(&bits, &value, sizeof(bits));
        for (int b = 0; b < 8; ++b) out += static_cast<char>((bits >> (8 * b)) & 0xffu);
      }
  }
  return io_internal::WriteStringToFile(path, out);
}

}  // namespace skinning
