#include "server/protobuf_log.h"

#include <google/protobuf/stubs/logging.h>

#include <cstdio>
#include <mutex>
#include <string>

#include "absl/time/clock.h"

namespace skinning {
namespace {

struct Limit {
  std::mutex mu;
  int lines = 10;
  absl::Duration window = absl::Seconds(10);
  absl::Time window_start = absl::InfinitePast();  // guarded by mu
  int written = 0;                                 // in this window; guarded by mu
  long dropped = 0;                                // in this window; guarded by mu
};

Limit& TheLimit() {
  static Limit* limit = new Limit;
  return *limit;
}

const char* LevelName(google::protobuf::LogLevel level) {
  switch (level) {
    case google::protobuf::LOGLEVEL_INFO: return "INFO";
    case google::protobuf::LOGLEVEL_WARNING: return "WARNING";
    case google::protobuf::LOGLEVEL_ERROR: return "ERROR";
    case google::protobuf::LOGLEVEL_FATAL: return "FATAL";
  }
  return "?";
}

void Write(google::protobuf::LogLevel level, const char* filename, int line, const std::string& message) {
  std::fprintf(stderr, "[libprotobuf %s %s:%d] %s\n", LevelName(level), filename, line, message.c_str());
}

void LimitedHandler(google::protobuf::LogLevel level, const char* filename, int line, const std::string& message) {
  if (level == google::protobuf::LOGLEVEL_FATAL) {
    Write(level, filename, line, message);
    return;
  }
  Limit& limit = TheLimit();
  std::lock_guard<std::mutex> lock(limit.mu);
  const absl::Time now = absl::Now();
  if (now - limit.window_start >= limit.window) {
    if (limit.dropped > 0)
      std::fprintf(stderr, "skinning-server: %ld protobuf log lines dropped in %s\n", limit.dropped,
                   absl::FormatDuration(limit.window).c_str());
    limit.window_start = now;
    limit.written = 0;
    limit.dropped = 0;
  }
  if (limit.written < limit.lines) {
    ++limit.written;
    Write(level, filename, line, message);
    return;
  }
  if (limit.dropped++ == 0)
    std::fprintf(stderr, "skinning-server: more than %d protobuf log lines in %s (bad requests?): the rest are dropped\n",
                 limit.lines, absl::FormatDuration(limit.window).c_str());
}

}  // namespace

void LimitProtobufLogging(int lines, absl::Duration window) {
  Limit& limit = TheLimit();
  {
    std::lock_guard<std::mutex> lock(limit.mu);
    limit.lines = lines;
    limit.window = window;
  }
  google::protobuf::SetLogHandler(&LimitedHandler);
}

}  // namespace skinning
