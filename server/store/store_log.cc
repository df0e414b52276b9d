#include "server/store/store_log.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"

namespace skinning {

void LogStoreFailure(absl::string_view kind, const absl::Status& status, absl::string_view hint) {
  struct Kind {
    std::chrono::steady_clock::time_point next;
    int64_t unprinted = 0;
  };
  static std::mutex mu;
  static std::map<std::string, Kind, std::less<>> kinds;
  std::lock_guard<std::mutex> lock(mu);
  const auto now = std::chrono::steady_clock::now();
  auto it = kinds.find(kind);
  if (it == kinds.end()) {
    if (kinds.size() >= 64) kinds.clear();  // the kinds are few; bounded all the same
    it = kinds.emplace(std::string(kind), Kind{}).first;
  }
  int64_t& unprinted = it->second.unprinted;
  if (now < it->second.next) {
    ++unprinted;
    return;
  }
  std::printf("skinning-server store: %s: %s%s%s\n", absl::StatusCodeToString(status.code()).c_str(),
              std::string(status.message()).c_str(), std::string(hint).c_str(),
              unprinted > 0 ? absl::StrCat(" (and ", unprinted, " more store failures in the last 10 s)").c_str() : "");
  std::fflush(stdout);
  unprinted = 0;
  it->second.next = now + std::chrono::seconds(10);
}

}  // namespace skinning
