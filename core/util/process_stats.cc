#include "core/util/process_stats.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>

#include <cstdio>
#include <cstring>
#include <string>

namespace skinning {
namespace {

// The number after `format`'s key on its line of /proc/<pid>/status; -1 when not there.
int64_t StatusField(pid_t pid, const char* format) {
  if (pid <= 0) return -1;
  std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/status").c_str(), "r");
  if (f == nullptr) return -1;
  char line[256];
  int64_t result = -1;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    long long value = 0;
    if (std::sscanf(line, format, &value) == 1) {
      result = value;
      break;
    }
  }
  std::fclose(f);
  return result;
}

}  // namespace

int64_t ResidentBytes(pid_t pid) {
  const int64_t kib = StatusField(pid, "VmRSS: %lld kB");
  return kib < 0 ? -1 : kib * 1024;
}

int64_t PeakResidentBytes(pid_t pid) {
  const int64_t kib = StatusField(pid, "VmHWM: %lld kB");
  return kib < 0 ? -1 : kib * 1024;
}

int ThreadCount(pid_t pid) { return static_cast<int>(StatusField(pid, "Threads: %lld")); }

int OpenDescriptorCount(pid_t pid) {
  if (pid <= 0) return -1;
  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (d == nullptr) return -1;
  int count = 0;
  while (const dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++count;
  closedir(d);
  return count;
}

int64_t ProcessStartTicks(pid_t pid) {
  if (pid <= 0) return -1;
  std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (f == nullptr) return -1;
  char stat[1024];
  const size_t n = std::fread(stat, 1, sizeof stat - 1, f);
  std::fclose(f);
  stat[n] = '\0';
  // The command name (field 2) may hold spaces and parentheses: fields 3.. follow its last ')'.
  const char* p = std::strrchr(stat, ')');
  if (p == nullptr) return -1;
  ++p;
  for (int field = 3; field < 22; ++field) {  // skip to field 22
    while (*p == ' ') ++p;
    while (*p != ' ' && *p != '\0') ++p;
  }
  long long ticks = -1;
  return std::sscanf(p, " %lld", &ticks) == 1 ? ticks : -1;
}

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "host";
  std::string host(name);
  for (char& c : host)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.')) c = '_';
  return host;
}

std::string ThisProcessWriter() {
  static const std::string id = std::to_string(::getpid()) + "-" + std::to_string(ProcessStartTicks(::getpid()));
  return id;
}

bool WriterEnded(const std::string& writer) {
  const size_t dash = writer.find('-');
  if (dash == std::string::npos || dash == 0 || dash > 9 || dash + 1 == writer.size()) return false;
  for (size_t i = 0; i < writer.size(); ++i)
    if (i != dash && !(writer[i] >= '0' && writer[i] <= '9')) return false;
  const pid_t pid = static_cast<pid_t>(std::stol(writer.substr(0, dash)));
  const int64_t start = ProcessStartTicks(pid);
  if (start < 0) return ::kill(pid, 0) != 0 && errno == ESRCH;  // no /proc: the pid alone
  return std::to_string(start) != writer.substr(dash + 1);
}

}  // namespace skinning
