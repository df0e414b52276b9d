#include "server/api/client_errors.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace skinning {
namespace {

// The log's descriptor, opened once (O_APPEND: each line is one write, whole, even with several
// processes on one file); -1 when the variable is unset or the file cannot be opened.
int LogFd() {
  static const int fd = [] {
    const char* path = std::getenv("SKINNING_CLIENT_ERROR_LOG");
    if (path == nullptr || *path == '\0') return -1;
    return ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  }();
  return fd;
}

}  // namespace

void NoteClientError(absl::string_view door, const absl::Status& status) {
  if (status.ok()) return;
  const int fd = LogFd();
  if (fd < 0) return;
  const std::string line = absl::StrCat(door, "\t", absl::StatusCodeToString(status.code()), "\t",
                                        absl::StrReplaceAll(status.message(), {{"\n", "\\n"}}), "\n");
  // Best effort: a short write only loses a line of a test aid.
  [[maybe_unused]] const ssize_t written = ::write(fd, line.data(), line.size());
}

}  // namespace skinning
