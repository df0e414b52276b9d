// The main of every gtest suite. The tests' temporary files (stores, certificates, exports,
// browser profiles, redis folders) go in one folder per test process, which is removed when the
// process's tests are done, pass or fail, instead of piling up in /tmp run after run.
//
// The folder is made under $TMPDIR (or /tmp) and handed to the tests and to every process they
// start (servers, redis, skinctl, chromium) as TMPDIR and TEST_TMPDIR, which is where
// ::testing::TempDir(), std::filesystem::temp_directory_path() and mkstemp-style helpers look.
// SKINNING_KEEP_TEST_TMP=1 keeps it and prints where it is (to look at a failure's files).
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

#include <gtest/gtest.h>

#include "core/util/blas_kernels.h"

namespace {

constexpr char kRootVariable[] = "SKINNING_TEST_TMP_ROOT";

// Makes the folder and points the environment at it. Returns "" (and changes nothing) when this
// process is itself started by a test process, which owns the folder it inherited.
std::string MakeTestTempRoot() {
  if (const char* inherited = std::getenv(kRootVariable); inherited != nullptr && inherited[0] != '\0') return "";
  const char* base = std::getenv("TMPDIR");
  std::string pattern = (base != nullptr && base[0] != '\0' ? std::string(base) : std::string("/tmp")) +
                        "/skinning-test-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    std::fprintf(stderr, "cannot make a temporary folder from %s: %s\n", pattern.c_str(), std::strerror(errno));
    std::exit(2);
  }
  setenv("TMPDIR", pattern.c_str(), 1);
  setenv("TEST_TMPDIR", pattern.c_str(), 1);
  setenv(kRootVariable, pattern.c_str(), 1);
  return pattern;
}

}  // namespace

int main(int argc, char** argv) {
  // The suites run CHOLMOD on the kernels the server would use (may re-execute this process).
  skinning::UseFastestBlasKernels(argv);
  ::testing::InitGoogleTest(&argc, argv);
  // Listing the tests (CTest's discovery) writes nothing.
  const std::string root = GTEST_FLAG_GET(list_tests) ? std::string() : MakeTestTempRoot();
  const int result = RUN_ALL_TESTS();
  if (!root.empty()) {
    const char* keep = std::getenv("SKINNING_KEEP_TEST_TMP");
    if (keep != nullptr && keep[0] != '\0' && std::strcmp(keep, "0") != 0) {
      std::fprintf(stderr, "kept the tests' temporary files in %s\n", root.c_str());
    } else {
      std::error_code ec;
      std::filesystem::remove_all(root, ec);
      if (ec) std::fprintf(stderr, "cannot remove the tests' temporary folder %s: %s\n", root.c_str(), ec.message().c_str());
    }
  }
  return result;
}
