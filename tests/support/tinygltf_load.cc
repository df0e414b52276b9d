#include "tests/support/tinygltf_load.h"

#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace skinning::testing {
namespace {

bool SkipImage(tinygltf::Image*, const int, std::string*, std::string*, int, int, const unsigned char*, int,
               void*) {
  return true;
}

}  // namespace

absl::StatusOr<tinygltf::Model> LoadTinyGltf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  char magic[4] = {0, 0, 0, 0};
  in.read(magic, 4);
  const bool binary = in.gcount() == 4 && std::memcmp(magic, "glTF", 4) == 0;
  in.close();

  tinygltf::TinyGLTF loader;
  loader.SetImageLoader(&SkipImage, nullptr);
  tinygltf::Model model;
  std::string err;
  std::string warn;
  const bool ok = binary ? loader.LoadBinaryFromFile(&model, &err, &warn, path)
                         : loader.LoadASCIIFromFile(&model, &err, &warn, path);
  if (!ok)
    return absl::InvalidArgumentError(absl::StrCat("tinygltf failed to load ", path, ": ", err.empty() ? warn : err));
  return model;
}

}  // namespace skinning::testing
