// A .glb split into its JSON chunk and the bytes after it, and put back together, for tests that
// edit a file's JSON.
#ifndef SKINNING_TESTS_SUPPORT_GLB_H_
#define SKINNING_TESTS_SUPPORT_GLB_H_

#include <cstdint>
#include <cstring>
#include <string>

namespace skinning::testing {

// A .glb's JSON chunk text (as stored, padding included) and the chunks after it (BIN), as
// they are.
struct GlbChunks {
  std::string json;
  std::string rest;
};

inline GlbChunks SplitGlb(const std::string& glb) {
  uint32_t json_length = 0;
  std::memcpy(&json_length, glb.data() + 12, 4);
  return GlbChunks{glb.substr(20, json_length), glb.substr(20 + json_length)};
}

// A .glb of `json` (padded with spaces to 4 bytes) followed by `rest`.
inline std::string JoinGlb(const std::string& json, const std::string& rest = "") {
  std::string chunk = json;
  while (chunk.size() % 4 != 0) chunk.push_back(' ');
  const uint32_t header[5] = {0x46546C67u /* glTF */, 2, static_cast<uint32_t>(20 + chunk.size() + rest.size()),
                              static_cast<uint32_t>(chunk.size()), 0x4E4F534Au /* JSON */};
  return std::string(reinterpret_cast<const char*>(header), sizeof(header)) + chunk + rest;
}

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_GLB_H_
