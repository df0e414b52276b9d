// A glTF file loaded by tinygltf itself, independently of ReadGltf, for tests that check what a
// writer put in a file or that edit a file.
#ifndef SKINNING_TESTS_SUPPORT_TINYGLTF_LOAD_H_
#define SKINNING_TESTS_SUPPORT_TINYGLTF_LOAD_H_

#include <tiny_gltf.h>

#include <string>

#include "absl/status/statusor.h"

namespace skinning::testing {

// `path` as a tinygltf model: binary when the file starts with the "glTF" magic, else JSON.
// Images are not decoded. INVALID_ARGUMENT carries tinygltf's error.
absl::StatusOr<tinygltf::Model> LoadTinyGltf(const std::string& path);

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_TINYGLTF_LOAD_H_
