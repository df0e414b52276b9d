#include "tests/support/gltf_validator.h"

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace skinning::testing {
namespace {

// Single-quoted for /bin/sh.
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace

std::vector<std::string> GltfFilesIn(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string ext = e.path().extension().string();
    if (ext == ".glb" || ext == ".gltf") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

GltfValidation ValidateGltfFiles(const std::vector<std::string>& paths) {
  GltfValidation v;
  const std::string tests = std::string(SKINNING_SOURCE_DIR) + "/tests";
  if (!std::filesystem::exists(tests + "/node_modules/gltf-validator/package.json")) {
    v.report = "tests/node_modules/gltf-validator is missing (run scripts/install-deps.sh)";
    return v;
  }
  if (std::system("command -v node >/dev/null 2>&1") != 0) {
    v.report = "node is not on PATH (run scripts/install-deps.sh)";
    return v;
  }
  v.available = true;
  if (paths.empty()) {
    v.report = "no glTF files to validate\n";
    return v;
  }
  std::string command = "node " + Quote(tests + "/tools/validate_gltf.js");
  for (const std::string& p : paths) command += " " + Quote(p);
  command += " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    v.report = "cannot start node";
    return v;
  }
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) v.report.append(buffer.data(), n);
  const int status = pclose(pipe);
  v.passed = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return v;
}

}  // namespace skinning::testing
