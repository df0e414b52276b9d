// Runs the Khronos glTF Validator (npm package gltf-validator, installed into tests/node_modules
// by scripts/install-deps.sh) on glTF files the tests write, through tests/tools/validate_gltf.js.
#ifndef SKINNING_TESTS_SUPPORT_GLTF_VALIDATOR_H_
#define SKINNING_TESTS_SUPPORT_GLTF_VALIDATOR_H_

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/support/data.h"

namespace skinning::testing {

struct GltfValidation {
  bool available = false;  // node and the validator package were found
  bool passed = false;     // every file: zero errors
  std::string report;      // the validator's lines (counts per file, each error and warning)
};

// Validates the given .glb/.gltf files in one run of the validator.
GltfValidation ValidateGltfFiles(const std::vector<std::string>& paths);

// Every .glb and .gltf file directly in `dir`, sorted.
std::vector<std::string> GltfFilesIn(const std::string& dir);

}  // namespace skinning::testing

// Expects that the validator reports no error for the files (a std::vector<std::string>), and
// prints its report. Without node or the package: fails in CI, otherwise adds a note and passes
// (the install script installs both).
#define SKINNING_EXPECT_VALID_GLTF(paths)                                                     \
  do {                                                                                      \
    const ::skinning::testing::GltfValidation _v = ::skinning::testing::ValidateGltfFiles(paths); \
    if (!_v.available) {                                                                    \
      if (::skinning::testing::InCi()) {                                                    \
        ADD_FAILURE() << "glTF validator not installed in CI: " << _v.report;              \
      } else {                                                                              \
        std::printf("glTF validator not installed (CI is unset, so not checked): %s\n",     \
                    _v.report.c_str());                                                     \
      }                                                                                     \
    } else {                                                                                \
      std::printf("%s", _v.report.c_str());                                                 \
      EXPECT_TRUE(_v.passed) << _v.report;                                                  \
    }                                                                                       \
  } while (0)

#endif  // SKINNING_TESTS_SUPPORT_GLTF_VALIDATOR_H_
