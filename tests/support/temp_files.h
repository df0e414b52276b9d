// Temporary files for tests.
#ifndef SKINNING_TESTS_SUPPORT_TEMP_FILES_H_
#define SKINNING_TESTS_SUPPORT_TEMP_FILES_H_

#include <unistd.h>

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace skinning::testing {

// A path in the test temp directory unique to the running test and process, ending in `suffix`.
inline std::string TempPath(const std::string& suffix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + "/" + info->test_suite_name() + "_" + info->name() + "_" +
         std::to_string(getpid()) + suffix;
}

// Writes `text` to `path` (binary), failing the test if the file cannot be opened.
inline void WriteText(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_TEMP_FILES_H_
