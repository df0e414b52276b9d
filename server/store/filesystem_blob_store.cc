#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "core/util/process_stats.h"
#include "core/util/status_macros.h"
#include "server/store/blob_framing.h"
#include "server/store/blob_store.h"
#include "server/store/store_log.h"

namespace skinning {
namespace {

namespace fs = std::filesystem;

// The lock file of WriteIf, in the root (not a valid key of anyone's: keys are namespaced).
constexpr char kLockName[] = ".write-lock";
// Temporary files older than this when a store opens are leftovers of a crash, whoever wrote them.
constexpr std::chrono::minutes kLeftoverAge{10};

// A temporary file "<target>.tmp.<host>.<pid>-<start>.<counter>" of a write that no longer
// runs: this host's, and no process <pid> started at <start> exists. Other hosts' files (a
// shared volume) and files of older forms wait for kLeftoverAge.
bool WriterGone(const std::string& filename, const std::string& host) {
  const size_t at = filename.find(".tmp.");
  if (at == std::string::npos) return false;
  const std::string rest = filename.substr(at + 5);  // host.pid-start.counter
  const size_t counter_dot = rest.rfind('.');
  if (counter_dot == std::string::npos || counter_dot == 0) return false;
  const size_t writer_dot = rest.rfind('.', counter_dot - 1);
  if (writer_dot == std::string::npos || rest.substr(0, writer_dot) != host) return false;
  return WriterEnded(rest.substr(writer_dot + 1, counter_dot - writer_dot - 1));
}

// Removes the files (collected first: removing while a directory is iterated invalidates the
// iterator). A file already gone is no error.
void RemoveFiles(const std::vector<fs::path>& files) {
  for (const fs::path& p : files) {
    std::error_code rm;
    fs::remove(p, rm);
  }
}

absl::Status CheckKey(const std::string& key) {
  if (key.empty() || key.front() == '/' || absl::StrContains(key, ".."))
    return absl::InvalidArgumentError(absl::StrCat("invalid store key '", key, "'"));
  for (char c : key) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/'))
      return absl::InvalidArgumentError(absl::StrCat("invalid store key '", key, "'"));
  }
  return absl::OkStatus();
}

// A failed system call on the artifact `key`, as callers (and clients) see it: the key, never
// the store's directory, so no server path reaches a client. A full disk or quota is
// RESOURCE_EXHAUSTED; anything else INTERNAL. Printed for the operator too (LogStoreFailure, at
// most a line every 10 s per error): a full or read-only disk failed every bake without a line.
absl::Status Errno(const std::string& what, const std::string& key, int err = errno) {
  const std::string message = absl::StrFormat("store: cannot %s '%s': %s", what, key, std::strerror(err));
  absl::Status status = absl::InternalError(message);
  if (err == ENOSPC || err == EDQUOT) status = absl::ResourceExhaustedError(message);
  // A disk the kernel remounted read-only (after I/O errors) or mounted so: not the server's
  // bug but the store being unavailable for writes until an operator mends it; another replica
  // may take the call.
  if (err == EROFS) status = absl::UnavailableError(message);
  LogStoreFailure(absl::StrCat("errno ", err), status);
  return status;
}

class FilesystemBlobStore : public BlobStore {
 public:
  FilesystemBlobStore(fs::path root, std::string host) : root_(std::move(root)), host_(std::move(host)) {}

  absl::Status Put(const std::string& key, const std::string& bytes) override {
    RETURN_IF_ERROR(CheckKey(key));
    const fs::path target = root_ / key;
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (ec) return Errno("create the folder of", key, ec.value());
    // Unique per host, process and write: two store objects on one directory in one process
    // must not share a temporary file, and a store opening knows whose leftovers it sees.
    static std::atomic<uint64_t> counter{0};
    const std::string tmp = absl::StrFormat("%s.tmp.%s.%s.%d", target.string(), host_, ThisProcessWriter(), counter++);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return Errno("create", key);
    const std::string header = BlobHeader(bytes);
    for (const absl::string_view part : {absl::string_view(header), absl::string_view(bytes)}) {
      size_t done = 0;
      while (done < part.size()) {
        const ssize_t n = ::write(fd, part.data() + done, part.size() - done);
        if (n < 0) {
          if (errno == EINTR) continue;
          const absl::Status s = Errno("write", key);
          ::close(fd);
          ::unlink(tmp.c_str());
          return s;
        }
        done += static_cast<size_t>(n);
      }
    }
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
      const absl::Status s = Errno("flush", key);
      ::unlink(tmp.c_str());
      return s;
    }
    if (::rename(tmp.c_str(), target.c_str()) != 0) {
      const absl::Status s = Errno("commit", key);
      ::unlink(tmp.c_str());
      return s;
    }
    const int dfd = ::open(target.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Get(const std::string& key) override {
    RETURN_IF_ERROR(CheckKey(key));
    const fs::path path = root_ / key;
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      if (!fs::exists(path)) return absl::NotFoundError(absl::StrCat("no stored object '", key, "'"));
      return Errno("open", key);
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) return Errno("read", key);
    std::string value = ss.str();
    if (!LooksFramed(value)) return value;  // written before the framing
    ASSIGN_OR_RETURN(const absl::string_view payload, BlobPayload(value, absl::StrCat("stored object '", key, "'")));
    value.erase(0, payload.data() - value.data());
    return value;
  }

  absl::StatusOr<bool> Exists(const std::string& key) override {
    RETURN_IF_ERROR(CheckKey(key));
    std::error_code ec;
    return fs::exists(root_ / key, ec);
  }

  absl::StatusOr<bool> Delete(const std::string& key) override {
    RETURN_IF_ERROR(CheckKey(key));
    std::error_code ec;
    const bool removed = fs::remove(root_ / key, ec);
    if (ec) return Errno("delete", key, ec.value());
    return removed;
  }

  absl::StatusOr<std::vector<std::string>> List(const std::string& prefix) override {
    std::vector<std::string> keys;
    std::error_code ec;
    // Only the folder the prefix names can hold its keys ("bakejobs/" lists bakejobs/, not the
    // whole store: the start-up's listings walked every rig and bake).
    const size_t slash = prefix.rfind('/');
    const fs::path start =
        slash == std::string::npos || absl::StrContains(prefix, "..") ? root_ : root_ / prefix.substr(0, slash);
    if (!fs::is_directory(start, ec)) return keys;
    // Temporary files of writes whose writer is gone (WriterGone) are removed as they are passed:
    // a server killed while it rewrote a record would otherwise leave its file until a store
    // opens, and a running server lists the bakes' records every few seconds.
    std::vector<fs::path> leftovers;
    for (auto it = fs::recursive_directory_iterator(start, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (!it->is_regular_file()) continue;
      std::string key = fs::relative(it->path(), root_).generic_string();
      if (absl::StrContains(key, ".tmp.")) {  // an interrupted or running write, never a key
        if (WriterGone(it->path().filename().string(), host_)) leftovers.push_back(it->path());
        continue;
      }
      if (key == kLockName) continue;  // WriteIf's lock file
      if (absl::StartsWith(key, prefix)) keys.push_back(std::move(key));
    }
    if (ec) return Errno("list", prefix, ec.value());
    RemoveFiles(leftovers);
    std::sort(keys.begin(), keys.end());
    return keys;
  }

  absl::StatusOr<bool> WriteIf(const std::string& guard, const std::optional<std::string>& expected,
                               const std::vector<Write>& writes) override {
    RETURN_IF_ERROR(CheckKey(guard));
    for (const Write& w : writes)
      RETURN_IF_ERROR(CheckKey(w.key));
    // flock locks belong to the open file description: threads of this process take turns on
    // the mutex, processes on the lock.
    std::lock_guard<std::mutex> in_process(write_mu_);
    const std::string lock_path = (root_ / kLockName).string();
    const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Errno("open the lock of", guard);
    while (::flock(fd, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      const absl::Status s = Errno("lock", guard);
      ::close(fd);
      return s;
    }
    absl::StatusOr<bool> result = [&]() -> absl::StatusOr<bool> {
      absl::StatusOr<std::string> current = Get(guard);
      if (!current.ok() && !absl::IsNotFound(current.status())) return current.status();
      const bool matches = expected.has_value() ? current.ok() && *current == *expected : !current.ok();
      if (!matches) return false;
      for (const Write& w : writes) {
        if (w.bytes.has_value()) {
          RETURN_IF_ERROR(Put(w.key, *w.bytes));
        } else if (absl::StatusOr<bool> d = Delete(w.key); !d.ok()) {
          return d.status();
        }
      }
      return true;
    }();
    ::flock(fd, LOCK_UN);
    ::close(fd);
    return result;
  }

 private:
  fs::path root_;
  const std::string host_;  // HostName(), in temporary files' names (WriterGone)
  std::mutex write_mu_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<BlobStore>> OpenFilesystemBlobStore(const std::string& root) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return absl::FailedPreconditionError(absl::StrCat("cannot create store directory ", root, ": ", ec.message()));
  // Remove leftovers of writes interrupted by a crash: those whose writer is gone (WriterGone),
  // and any old one. Another server sharing the directory may be writing a temporary file now.
  std::vector<fs::path> leftovers;
  const auto now = fs::file_time_type::clock::now();
  const std::string host = HostName();
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file() || !absl::StrContains(it->path().filename().string(), ".tmp.")) continue;
    std::error_code age;
    const auto written = fs::last_write_time(it->path(), age);
    if (WriterGone(it->path().filename().string(), host) || (!age && now - written > kLeftoverAge))
      leftovers.push_back(it->path());
  }
  RemoveFiles(leftovers);
  return std::unique_ptr<BlobStore>(new FilesystemBlobStore(root, host));
}

}  // namespace skinning
