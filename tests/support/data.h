// Locating ../shared/data from tests and benchmarks.
#ifndef SKINNING_TESTS_SUPPORT_DATA_H_
#define SKINNING_TESTS_SUPPORT_DATA_H_

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

namespace skinning::testing {

// The shared data folder: $SKINNING_DATA_DIR, else the path configured at build time.
inline std::string DataDir() {
  if (const char* env = std::getenv("SKINNING_DATA_DIR"); env && *env) return env;
  return SKINNING_DATA_DIR;
}
inline std::string DataPath(const std::string& relative) { return DataDir() + "/" + relative; }
// A test name from a shared-data path: its file name without extension
// ("gltf/CesiumMan/CesiumMan.glb" → "CesiumMan"), for INSTANTIATE_TEST_SUITE_P.
inline std::string DataFileTestName(const std::string& path) {
  const std::string name = path.substr(path.rfind('/') + 1);
  return name.substr(0, name.find('.'));
}
// A file's whole contents, as bytes ("" when it cannot be read).
inline std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
inline bool InCi() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

}  // namespace skinning::testing

// Skips the test when a shared data file is missing — but only outside CI, where ../shared/data
// is always present; in CI a missing file fails the test.
#define SKINNING_REQUIRE_DATA(path)                                                         \
  do {                                                                                      \
    if (!std::filesystem::exists(path)) {                                                   \
      if (::skinning::testing::InCi()) FAIL() << "shared data file missing in CI: " << (path); \
      GTEST_SKIP() << "shared data file missing (CI is unset, so skipping): " << (path);    \
    }                                                                                       \
  } while (0)

// The same for a tool the test needs (a browser, node, installed node modules): `missing` names
// what is missing, or is empty when nothing is. In CI, where scripts/install-deps.sh installs
// all of them, a missing tool fails the test.
#define SKINNING_REQUIRE_TOOL(missing)                                                       \
  do {                                                                                       \
    if (const std::string missing_tool = (missing); !missing_tool.empty()) {                 \
      if (::skinning::testing::InCi()) FAIL() << "missing in CI: " << missing_tool;          \
      GTEST_SKIP() << "missing (CI is unset, so skipping): " << missing_tool;                \
    }                                                                                        \
  } while (0)

#endif  // SKINNING_TESTS_SUPPORT_DATA_H_
