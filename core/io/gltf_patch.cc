#include "core/io/gltf_patch.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "core/io/gltf_draco.h"
#include "core/io/gltf_json_scan.h"
#include "core/io/gltf_meshopt.h"

namespace skinning::gltf_internal {

JsonText FindJsonText(const std::vector<unsigned char>& bytes, bool binary) {
  if (!binary) return {0, bytes.size()};
  uint32_t length;
  std::memcpy(&length, bytes.data() + 12, 4);
  return {20, 20 + static_cast<size_t>(length)};
}

std::optional<NodePointer> ParseNodePointer(std::string_view pointer) {
  constexpr std::string_view kNodes = "/nodes/";
  if (pointer.substr(0, kNodes.size()) != kNodes) return std::nullopt;
  pointer.remove_prefix(kNodes.size());
  const size_t slash = pointer.find('/');
  const std::string_view index = pointer.substr(0, slash);
  if (slash == std::string_view::npos || index.empty() || (index.size() > 1 && index[0] == '0')) return std::nullopt;
  int64_t node = 0;
  for (const char c : index) {
    if (c < '0' || c > '9') return std::nullopt;
    node = std::min<int64_t>(node * 10 + (c - '0'), std::numeric_limits<int32_t>::max());
  }
  const std::string_view path = pointer.substr(slash + 1);
  if (path != "translation" && path != "rotation" && path != "scale" && path != "weights") return std::nullopt;
  return NodePointer{static_cast<int>(node), std::string(path)};
}

std::optional<std::vector<unsigned char>> PatchForParser(const std::vector<unsigned char>& bytes, bool binary) {
  auto u32 = [&](size_t offset) {
    uint32_t v;
    std::memcpy(&v, bytes.data() + offset, 4);
    return v;
  };
  // Not a structured binding: clang (the fuzz build) refuses to capture one in a lambda in C++17.
  const JsonText text = FindJsonText(bytes, binary);
  const size_t json_begin = text.begin, json_end = text.end;
  // Only a file that names one of the extensions is parsed here (a second time).
  auto mentions = [&](const std::string& needle) {
    return std::search(bytes.begin() + json_begin, bytes.begin() + json_end, needle.begin(), needle.end()) !=
           bytes.begin() + json_end;
  };
  if (!mentions(kMeshoptExtension) && !mentions(kDracoExtension) && !mentions(kAnimationPointerExtension))
    return std::nullopt;
  nlohmann::json doc = nlohmann::json::parse(bytes.begin() + json_begin, bytes.begin() + json_end, nullptr,
                                             /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return std::nullopt;  // the parser names what is wrong
  bool patched = false;
  // The extension object `name` of `object`, or null.
  auto extension = [](nlohmann::json& object, const char* name) -> nlohmann::json* {
    if (!object.is_object()) return nullptr;
    const auto extensions = object.find("extensions");
    if (extensions == object.end() || !extensions->is_object()) return nullptr;
    const auto ext = extensions->find(name);
    return ext == extensions->end() || !ext->is_object() ? nullptr : &*ext;
  };
  // Meshopt fallback buffers: one zero byte each.
  if (auto buffers = doc.find("buffers"); buffers != doc.end() && buffers->is_array()) {
    for (nlohmann::json& buffer : *buffers) {
      const nlohmann::json* ext = extension(buffer, kMeshoptExtension);
      if (ext == nullptr) continue;
      const auto fallback = ext->find("fallback");
      if (fallback == ext->end() || !fallback->is_boolean() || !fallback->get<bool>()) continue;
      buffer["uri"] = "data:application/octet-stream;base64,AA==";
      buffer["byteLength"] = 1;
      patched = true;
    }
  }
  // Draco primitives: tinygltf wants a bufferView on every indices accessor; the Draco stream's
  // view stands in until DecodeDracoPrimitives points the accessor at the decoded faces.
  auto meshes = doc.find("meshes");
  auto accessors = doc.find("accessors");
  if (meshes != doc.end() && meshes->is_array() && accessors != doc.end() && accessors->is_array()) {
    for (nlohmann::json& mesh : *meshes) {
      if (!mesh.is_object() || !mesh.contains("primitives") || !mesh["primitives"].is_array()) continue;
      for (nlohmann::json& primitive : mesh["primitives"]) {
        const nlohmann::json* ext = extension(primitive, kDracoExtension);
        if (ext == nullptr || !ext->contains("bufferView") || !(*ext)["bufferView"].is_number_integer()) continue;
        if (!primitive.contains("indices") || !primitive["indices"].is_number_integer()) continue;
        const int64_t index = primitive["indices"].get<int64_t>();
        if (index < 0 || static_cast<size_t>(index) >= accessors->size()) continue;
        nlohmann::json& accessor = (*accessors)[static_cast<size_t>(index)];
        if (!accessor.is_object() || accessor.contains("bufferView")) continue;
        accessor["bufferView"] = (*ext)["bufferView"];
        patched = true;
      }
    }
  }
  // KHR_animation_pointer channels of a node's transform or weights: the node and path they equal.
  if (auto animations = doc.find("animations"); animations != doc.end() && animations->is_array()) {
    for (nlohmann::json& animation : *animations) {
      if (!animation.is_object() || !animation.contains("channels") || !animation["channels"].is_array()) continue;
      for (nlohmann::json& channel : animation["channels"]) {
        if (!channel.is_object() || !channel.contains("target")) continue;
        nlohmann::json& target = channel["target"];
        if (!target.is_object() || target.contains("node") || !target.contains("path") ||
            target["path"] != nlohmann::json("pointer"))
          continue;
        const nlohmann::json* ext = extension(target, kAnimationPointerExtension);
        if (ext == nullptr || !ext->contains("pointer") || !(*ext)["pointer"].is_string()) continue;
        const std::optional<NodePointer> node = ParseNodePointer((*ext)["pointer"].get<std::string>());
        if (!node) continue;
        target["node"] = node->node;
        target["path"] = node->path;
        patched = true;
      }
    }
  }
  if (!patched) return std::nullopt;
  std::string json = doc.dump();
  std::vector<unsigned char> out;
  if (!binary) {
    out.assign(json.begin(), json.end());
    return out;
  }
  while (json.size() % 4 != 0) json.push_back(' ');
  const size_t rest_begin = json_end;  // the chunks after JSON (BIN), as they are
  const size_t rest_bytes = std::min<size_t>(u32(8), bytes.size()) - std::min<size_t>(rest_begin, u32(8));
  const uint32_t total = static_cast<uint32_t>(20 + json.size() + rest_bytes);
  out.resize(total);
  std::memcpy(out.data(), bytes.data(), 8);  // magic and version
  std::memcpy(out.data() + 8, &total, 4);
  const uint32_t json_length = static_cast<uint32_t>(json.size());
  std::memcpy(out.data() + 12, &json_length, 4);
  std::memcpy(out.data() + 16, bytes.data() + 16, 4);  // "JSON"
  std::memcpy(out.data() + 20, json.data(), json.size());
  if (rest_bytes > 0) std::memcpy(out.data() + 20 + json.size(), bytes.data() + rest_begin, rest_bytes);
  return out;
}

}  // namespace skinning::gltf_internal
