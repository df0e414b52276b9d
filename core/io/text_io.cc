#include "core/io/text_io.h"

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace skinning::io_internal {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", path));
  std::string text;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) text.append(buffer, n);
  const int error = std::ferror(file) ? (errno != 0 ? errno : EIO) : 0;
  std::fclose(file);
  if (error != 0) return absl::ErrnoToStatus(error, absl::StrCat("cannot read ", path));
  return text;
}

absl::Status WriteStringToFile(const std::string& path, absl::string_view contents) {
  // A device, pipe or other special file (/dev/stdout) is written in place: renaming over it
  // would replace it.
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  const bool in_place = !ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status);
  static std::atomic<int> counter{0};
  const std::string temp = in_place ? path : absl::StrCat(path, ".tmp.", ::getpid(), ".", counter++);
  std::FILE* file = std::fopen(temp.c_str(), "wb");
  if (file == nullptr) return absl::ErrnoToStatus(errno, absl::StrCat("cannot create ", path));
  const bool written = std::fwrite(contents.data(), 1, contents.size(), file) == contents.size();
  int error = written ? 0 : (errno != 0 ? errno : EIO);
  if (error == 0 && std::fflush(file) != 0) error = errno != 0 ? errno : EIO;
  if (error == 0 && !in_place && ::fsync(::fileno(file)) != 0) error = errno != 0 ? errno : EIO;
  if (std::fclose(file) != 0 && error == 0) error = errno != 0 ? errno : EIO;
  if (error == 0 && !in_place && std::rename(temp.c_str(), path.c_str()) != 0) error = errno != 0 ? errno : EIO;
  if (error != 0) {
    if (!in_place) std::remove(temp.c_str());
    return absl::ErrnoToStatus(error, absl::StrCat("cannot write ", path));
  }
  return absl::OkStatus();
}

absl::Status LineError(absl::string_view name, int line, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(name, ":", line, ": ", message));
}

bool LineCursor::Next(absl::string_view* line) {
  if (pos_ >= text_.size()) return false;
  size_t end = text_.find('\n', pos_);
  if (end == absl::string_view::npos) end = text_.size();
  *line = text_.substr(pos_, end - pos_);
  pos_ = end + 1;
  ++number_;
  return true;
}

absl::string_view PopToken(absl::string_view* rest) {
  size_t begin = 0;
  while (begin < rest->size() && IsBlank((*rest)[begin])) ++begin;
  size_t end = begin;
  while (end < rest->size() && !IsBlank((*rest)[end])) ++end;
  const absl::string_view token = rest->substr(begin, end - begin);
  rest->remove_prefix(end);
  return token;
}

bool TokenCursor::Next(absl::string_view* token) {
  while (true) {
    *token = PopToken(&rest_);
    if (!token->empty() && !(comments_ && (*token)[0] == '#')) return true;
    if (!lines_.Next(&rest_)) return false;
  }
}

bool ParseDouble(absl::string_view token, double* value) {
  if (!token.empty() && token[0] == '+') token.remove_prefix(1);
  if (token.empty()) return false;
  const char* end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(token.data(), end, *value);
  if (ptr != end) return false;
  if (ec == std::errc::result_out_of_range) {
    // from_chars reports underflow too; strtod gives the nearest subnormal (or zero) for it.
    const std::string copy(token);
    const double v = std::strtod(copy.c_str(), nullptr);
    if (!std::isfinite(v)) return false;
    *value = v;
    return true;
  }
  return ec == std::errc();
}

bool ParseInt(absl::string_view token, int32_t* value) {
  if (!token.empty() && token[0] == '+') token.remove_prefix(1);
  if (token.empty()) return false;
  const char* end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(token.data(), end, *value);
  return ptr == end && ec == std::errc();
}

void AppendDouble(double value, std::string* out) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out->append(buffer, result.ptr);
}

}  // namespace skinning::io_internal
