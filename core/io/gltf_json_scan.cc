#include "core/io/gltf_json_scan.h"

#include <tiny_gltf.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <string_view>

#include "core/io/gltf_draco.h"
#include "core/io/gltf_meshopt.h"

namespace skinning::gltf_internal {
namespace {

constexpr int kObjects = static_cast<int>(GltfObject::kCount);

// sizeof of tinygltf's struct for each GltfObject (a morph target is a map of attribute names).
constexpr int64_t kStructSize[kObjects] = {
    sizeof(tinygltf::Node),      sizeof(tinygltf::Accessor),         sizeof(tinygltf::Mesh),
    sizeof(tinygltf::Primitive), sizeof(std::map<std::string, int>), sizeof(tinygltf::Skin),
    sizeof(tinygltf::Animation), sizeof(tinygltf::AnimationChannel), sizeof(tinygltf::AnimationSampler),
    sizeof(tinygltf::Buffer),    sizeof(tinygltf::BufferView),       sizeof(tinygltf::Scene),
    // A map entry: its key and value, and the tree node's three links and color.
    sizeof(std::pair<const std::string, int>) + 32};

constexpr const char* kObjectName[kObjects] = {
    "nodes",           "accessors",          "meshes",  "mesh primitives", "morph targets", "skins",
    "animations",      "animation channels", "animation samplers", "buffers", "buffer views", "scenes",
    "primitive attributes"};

// What a JSON value is to the reader, decided by where it is.
enum class Role {
  kRoot,        // the top object
  kArray,       // an array of GltfObject `kind`
  kItem,        // one GltfObject `kind`
  kExtensions,  // an `extensions` object
  kAttributes,  // a primitive's `attributes`
  kMeshExtras,  // a mesh's `extras`: only `targetNames` is kept
  kOther,       // anything else that is read (or may be)
  kUnread,      // blanked
  kDropped,     // a member of a mesh's `extras` other than `targetNames`: dropped with it
};

struct Frame {
  bool object = false;
  Role role = Role::kOther;
  GltfObject kind = GltfObject::kCount;
  std::string key;        // the member being read (objects); longer keys are left empty
  bool expect_key = false;
  size_t begin = 0;       // where the value opens
  // kMeshExtras: where the member being read starts (its key), the targetNames member, and
  // whether there is any other.
  size_t member_begin = 0, keep_begin = 0, keep_end = 0;
  bool others = false;
};

struct Child {
  Role role = Role::kOther;
  GltfObject kind = GltfObject::kCount;
};

// The arrays of the top object that hold GltfObjects, and the members the reader never uses.
Child TopMember(std::string_view key) {
  static constexpr std::pair<std::string_view, GltfObject> kArrays[] = {
      {"nodes", GltfObject::kNode},     {"accessors", GltfObject::kAccessor},   {"meshes", GltfObject::kMesh},
      {"skins", GltfObject::kSkin},     {"animations", GltfObject::kAnimation}, {"buffers", GltfObject::kBuffer},
      {"bufferViews", GltfObject::kBufferView}, {"scenes", GltfObject::kScene}};
  for (const auto& [name, kind] : kArrays)
    if (key == name) return {Role::kArray, kind};
  for (std::string_view unread : {"materials", "textures", "images", "samplers", "cameras", "extras"})
    if (key == unread) return {Role::kUnread};
  if (key == "extensions") return {Role::kExtensions};
  return {};
}

// The role of the value that starts now inside `parent` (at parent.key when it is an object).
Child ChildOf(const Frame& parent) {
  if (!parent.object) return parent.role == Role::kArray ? Child{Role::kItem, parent.kind} : Child{};
  const std::string& key = parent.key;
  switch (parent.role) {
    case Role::kRoot:
      return TopMember(key);
    case Role::kExtensions:
      return key == kDracoExtension || key == kMeshoptExtension ? Child{} : Child{Role::kUnread};
    case Role::kMeshExtras:
      return key == "targetNames" ? Child{} : Child{Role::kDropped};
    case Role::kItem:
      if (key == "extras") return parent.kind == GltfObject::kMesh ? Child{Role::kMeshExtras} : Child{Role::kUnread};
      if (parent.kind == GltfObject::kMesh && key == "primitives") return {Role::kArray, GltfObject::kPrimitive};
      if (parent.kind == GltfObject::kPrimitive && key == "attributes") return {Role::kAttributes};
      if (parent.kind == GltfObject::kPrimitive && key == "targets") return {Role::kArray, GltfObject::kMorphTarget};
      if (parent.kind == GltfObject::kAnimation && key == "channels") return {Role::kArray, GltfObject::kChannel};
      if (parent.kind == GltfObject::kAnimation && key == "samplers") return {Role::kArray, GltfObject::kSampler};
      break;
    default:
      if (key == "extras") return {Role::kUnread};
      break;
  }
  if (key == "extensions") return {Role::kExtensions};
  return {};
}

bool IsSpace(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The index just past the string that opens at `i`, or `size` when it is not closed.
size_t SkipString(const unsigned char* text, size_t size, size_t i) {
  for (++i; i < size; ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == '"') {
      return i + 1;
    }
  }
  return size;
}

// The index just past the array or object that opens at `i`, or kUnclosed.
constexpr size_t kUnclosed = ~size_t{0};
size_t SkipContainer(const unsigned char* text, size_t size, size_t i) {
  int depth = 0;
  while (i < size) {
    const unsigned char c = text[i];
    if (c == '"') {
      i = SkipString(text, size, i);
      continue;
    }
    if (c == '[' || c == '{') ++depth;
    if ((c == ']' || c == '}') && --depth == 0) return i + 1;
    ++i;
  }
  return kUnclosed;
}

// A member of a mesh's extras ends at `end`: the targetNames member is kept (the last one, as
// the parser would take it).
void ValueEnds(Frame* extras, size_t end) {
  if (extras->key == "targetNames") {
    extras->keep_begin = extras->member_begin;
    extras->keep_end = end;
  }
}

}  // namespace

JsonShape ScanJson(const unsigned char* text, size_t size) {
  JsonShape shape;
  int depth = 0;
  bool opened = false;
  size_t i = 0;
  while (i < size) {
    const unsigned char c = text[i];
    if (IsSpace(c)) {
      ++i;
      continue;
    }
    if (shape.values == 0) shape.values = 1;  // the top value
    if (opened) {
      opened = false;
      if (c != ']' && c != '}') ++shape.values;
    }
    switch (c) {
      case '"':
        i = SkipString(text, size, i);
        continue;
      case '[':
      case '{':
        opened = true;
        shape.depth = std::max(shape.depth, ++depth);
        if (depth > kMaxJsonDepth) return shape;
        break;
      case ']':
      case '}':
        --depth;
        break;
      case ',':
        ++shape.values;
        break;
      default:
        break;
    }
    ++i;
  }
  return shape;
}

const char* GltfObjectName(GltfObject o) { return kObjectName[static_cast<int>(o)]; }

GltfJsonLayout ScanGltfJson(const unsigned char* text, size_t size) {
  GltfJsonLayout layout;
  auto add = [&layout](GltfObject kind) {
    const int k = static_cast<int>(kind);
    ++layout.counts[k];
    layout.struct_bytes += kStructSize[k];
  };
  std::vector<Frame> stack;
  bool top_seen = false;
  size_t i = 0;
  while (i < size) {
    const unsigned char c = text[i];
    if (c == '"') {
      const size_t end = SkipString(text, size, i);
      if (!stack.empty() && stack.back().object && stack.back().expect_key) {
        Frame& f = stack.back();
        f.member_begin = i;
        if (f.role == Role::kAttributes || (f.role == Role::kItem && f.kind == GltfObject::kMorphTarget)) {
          add(GltfObject::kAttribute);
        }
        const size_t length = end - i >= 2 ? end - i - 2 : 0;
        // Every key the roles look at is short; a long one is kept as "" (no role).
        if (length <= 64) {
          f.key.assign(reinterpret_cast<const char*>(text) + i + 1, length);
        } else {
          f.key.clear();
        }
        f.expect_key = false;
        if (f.role == Role::kMeshExtras) f.others = f.others || f.key != "targetNames";
      } else if (!stack.empty() && stack.back().role == Role::kMeshExtras) {
        ValueEnds(&stack.back(), end);
      }
      i = end;
      continue;
    }
    if (c == ',') {
      if (!stack.empty() && stack.back().object) stack.back().expect_key = true;
    } else if (c == ']' || c == '}') {
      if (!stack.empty()) {
        const Frame f = std::move(stack.back());
        stack.pop_back();
        if (f.role == Role::kMeshExtras && f.object && f.others) {
          layout.unread.push_back({f.begin, i + 1, f.keep_begin, f.keep_end});
        }
        if (!stack.empty() && stack.back().role == Role::kMeshExtras) ValueEnds(&stack.back(), i + 1);
      }
    } else if (c == '[' || c == '{') {
      Child child{Role::kOther};
      if (stack.empty()) {
        child.role = top_seen ? Role::kOther : Role::kRoot;
        top_seen = true;
      } else {
        child = ChildOf(stack.back());
      }
      if (child.role == Role::kUnread || child.role == Role::kDropped) {
        const size_t end = SkipContainer(text, size, i);
        // Only a closed value: blanking part of malformed text could make it parse.
        if (end == kUnclosed) break;
        if (child.role == Role::kUnread) layout.unread.push_back({i, end});
        i = end;
        continue;
      }
      if (child.role == Role::kItem) add(child.kind);
      Frame f;
      f.object = c == '{';
      f.role = child.role;
      f.kind = child.kind;
      f.expect_key = f.object;
      f.begin = i;
      stack.push_back(std::move(f));
    } else if (!stack.empty() && stack.back().role == Role::kMeshExtras && !IsSpace(c) && c != ':') {
      // A number or literal: it ends at the next delimiter.
      size_t end = i;
      while (end < size && !IsSpace(text[end]) && text[end] != ',' && text[end] != '}' && text[end] != ']') ++end;
      ValueEnds(&stack.back(), end);
      i = end;
      continue;
    }
    ++i;
  }
  return layout;
}

void BlankUnread(const std::vector<UnreadValue>& unread, size_t offset, std::vector<unsigned char>* bytes) {
  unsigned char* p = bytes->data() + offset;
  for (const UnreadValue& u : unread) {
    const bool array = p[u.begin] == '[';
    size_t at = u.begin + 1;
    if (u.keep_end > u.keep_begin) {
      const size_t n = u.keep_end - u.keep_begin;
      std::memmove(p + at, p + u.keep_begin, n);
      at += n;
    }
    std::memset(p + at, ' ', u.end - 1 - at);
    p[u.end - 1] = array ? ']' : '}';
  }
}

}  // namespace skinning::gltf_internal
