// Internal helpers shared by the core/io readers and writers: whole-file I/O, cursors over lines
// and whitespace-separated tokens that remember the line number, strict number parsing and
// shortest round-trip number printing. Not part of the public API.
#ifndef SKINNING_CORE_IO_TEXT_IO_H_
#define SKINNING_CORE_IO_TEXT_IO_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace skinning::io_internal {

// The bytes of `path`. NotFound when it does not exist, other errno-derived codes otherwise.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);
// Writes `contents` to `path` whole or not at all: into a temporary file beside it (flushed to
// disk), then renamed over it, so a full disk or a crash never leaves a cut-off file at `path` or
// destroys the one there. A device or pipe (/dev/stdout) is written in place.
absl::Status WriteStringToFile(const std::string& path, absl::string_view contents);

// InvalidArgument "<name>:<line>: <message>".
absl::Status LineError(absl::string_view name, int line, absl::string_view message);

// Walks a text line by line ('\n' ends a line; a trailing '\r' stays and counts as blank space).
class LineCursor {
 public:
  explicit LineCursor(absl::string_view text) : text_(text) {}
  // The next line, without its '\n'; false at the end of the text.
  bool Next(absl::string_view* line);
  // 1-based number of the line last returned (0 before the first).
  int number() const { return number_; }
  // Byte offset just past the line last returned.
  size_t offset() const { return pos_; }

 private:
  absl::string_view text_;
  size_t pos_ = 0;
  int number_ = 0;
};

// Pops the next token (a run of non-blank characters) off the front of `rest`; empty when `rest`
// holds only blanks (space, tab, '\r', '\v', '\f').
absl::string_view PopToken(absl::string_view* rest);

// Tokens of a whole text regardless of line breaks, for formats that are token streams (MEDIT,
// DMAT). With `hash_comments`, a token starting with '#' drops the rest of its line.
class TokenCursor {
 public:
  TokenCursor(absl::string_view text, bool hash_comments)
      : lines_(text), comments_(hash_comments) {}
  // The next token; false at the end of the text.
  bool Next(absl::string_view* token);
  // Line of the token last returned (the last line once the text is exhausted).
  int line() const { return lines_.number(); }

 private:
  LineCursor lines_;
  absl::string_view rest_;
  bool comments_;
};

// Whole-token parses: "1.5x" and "" fail. ParseDouble accepts a leading '+', "nan" and "inf";
// an underflow gives the nearest subnormal or zero, an overflow fails. ParseInt fails outside
// the int32 range.
bool ParseDouble(absl::string_view token, double* value);
bool ParseInt(absl::string_view token, int32_t* value);

// Appends the shortest decimal text that reads back as exactly `value`.
void AppendDouble(double value, std::string* out);

}  // namespace skinning::io_internal

#endif  // SKINNING_CORE_IO_TEXT_IO_H_
