// A large skinned character that is quick to make: a flat grid of n × n vertices in one joint's
// skin, as a .glb (n = 1000: 1M vertices, 44 MB). For tests and benchmarks of big uploads.
#ifndef SKINNING_TESTS_SUPPORT_GRID_GLB_H_
#define SKINNING_TESTS_SUPPORT_GRID_GLB_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "tests/support/glb.h"

namespace skinning::testing {

// Positions, JOINTS_0 and normalized WEIGHTS_0 as bytes (all weight on joint 0), 32-bit indices,
// one inverse bind matrix (the identity).
inline std::string GridGlb(int n) {
  std::string bin;
  auto put = [&bin](const void* p, size_t size) { bin.append(static_cast<const char*>(p), size); };
  std::vector<std::pair<size_t, size_t>> views;  // offset, length
  auto view = [&](const std::function<void()>& write) {
    const size_t begin = bin.size();
    write();
    views.emplace_back(begin, bin.size() - begin);
    while (bin.size() % 4 != 0) bin.push_back('\0');
  };
  const int v = n * n;
  view([&] {
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        const float p[3] = {static_cast<float>(i) / n, static_cast<float>(j) / n, 0.0f};
        put(p, sizeof p);
      }
  });
  view([&] { bin.append(4 * static_cast<size_t>(v), '\0'); });
  view([&] {
    for (int k = 0; k < v; ++k) bin.append("\xff\0\0\0", 4);
  });
  view([&] {
    for (int j = 0; j + 1 < n; ++j)
      for (int i = 0; i + 1 < n; ++i) {
        const uint32_t a = j * n + i, t[6] = {a, a + 1, a + n + 1, a, a + n + 1, a + n};
        put(t, sizeof t);
      }
  });
  view([&] {
    const float identity[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    put(identity, sizeof identity);
  });
  std::string json = absl::StrFormat(
      R"({"asset":{"version":"2.0"},"scene":0,"scenes":[{"nodes":[0,1]}],"nodes":[{"name":"bone"},{"mesh":0,"skin":0}],)"
      R"("meshes":[{"primitives":[{"attributes":{"POSITION":0,"JOINTS_0":1,"WEIGHTS_0":2},"indices":3}]}],)"
      R"("skins":[{"joints":[0],"inverseBindMatrices":4}],"accessors":[)"
      R"({"bufferView":0,"componentType":5126,"count":%d,"type":"VEC3","min":[0,0,0],"max":[1,1,0]},)"
      R"({"bufferView":1,"componentType":5121,"count":%d,"type":"VEC4"},)"
      R"({"bufferView":2,"componentType":5121,"normalized":true,"count":%d,"type":"VEC4"},)"
      R"({"bufferView":3,"componentType":5125,"count":%d,"type":"SCALAR"},)"
      R"({"bufferView":4,"componentType":5126,"count":1,"type":"MAT4"}],"bufferViews":[)",
      v, v, v, 6 * (n - 1) * (n - 1));
  for (size_t k = 0; k < views.size(); ++k)
    json += absl::StrFormat(R"(%s{"buffer":0,"byteOffset":%d,"byteLength":%d})", k ? "," : "", views[k].first,
                            views[k].second);
  json += absl::StrFormat(R"(],"buffers":[{"byteLength":%d}]})", bin.size());
  const uint32_t chunk[2] = {static_cast<uint32_t>(bin.size()), 0x004E4942u /* BIN */};
  return JoinGlb(json, std::string(reinterpret_cast<const char*>(chunk), sizeof chunk) + bin);
}

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_GRID_GLB_H_
