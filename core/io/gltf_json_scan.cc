#include "core/io/gltf_json_scan.h"

#include <tiny_gltf.h>

#include <algorithm>
#include <iterator>
#include <cstring>
#include <map>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
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
  kRoot,            // the top object
  kArray,           // an array of GltfObject `kind`
  kItem,            // one GltfObject `kind`
  kExtensions,      // an `extensions` object
  kAttributes,      // a primitive's `attributes` (each member a map entry of tinygltf's)
  kMeshExtras,      // a mesh's or a primitive's `extras`: only `targetNames` is kept
  kAsset,           // the top `asset`
  kSparse,          // an accessor's `sparse`
  kSparseIndices,   // its `indices`
  kSparseValues,    // its `values`
  kChannelTarget,   // an animation channel's `target`
  kDraco,           // a primitive's KHR_draco_mesh_compression
  kMeshopt,         // a buffer view's or buffer's EXT_meshopt_compression
  kAnimationPointer,  // a channel target's KHR_animation_pointer
  kExtensionsUsed,  // the top `extensionsUsed`
  kMap,             // an object whose every member is read (Draco's `attributes`)
  kOther,           // anything else; only its `extras` goes
};

constexpr size_t kNone = ~size_t{0};

struct Frame {
  bool object = false;
  Role role = Role::kOther;
  GltfObject kind = GltfObject::kCount;
  std::string key;        // the member being read (objects); longer keys are left empty
  int64_t commas = 0;     // commas so far (arrays: the index of the element being read)
  bool expect_key = false;
  bool kept = false;      // a member (element) of this container was kept
  size_t comma = kNone;   // the comma after the last member (element), until the next one starts

  // A member (element) is kept: a later one removed takes the comma before it.
  void Keep() {
    kept = true;
    comma = kNone;
  }
};

struct Child {
  Role role = Role::kOther;
  GltfObject kind = GltfObject::kCount;
};

// Objects whose members are names (of attributes), every one read: a primitive's `attributes`, a
// morph target, Draco's `attributes`.
bool IsMap(const Frame& f) {
  return f.role == Role::kAttributes || f.role == Role::kMap ||
         (f.role == Role::kItem && f.kind == GltfObject::kMorphTarget);
}

// What the spec says a member is when it is an integer: one non-negative integer, or an array
// of them.
enum class Integers { kNone, kOne, kArray };

// A member the reader reads (tinygltf's parser, then ours) in an object of some role: whether the
// spec makes it an index, count, offset, length or enum (Integers), and the role of its value when
// that is a container the scan looks into.
struct Member {
  std::string_view key;
  Integers integers = Integers::kNone;
  Child child = {};
};
constexpr Integers kInt = Integers::kOne, kInts = Integers::kArray, kNo = Integers::kNone;
constexpr Child kArrayOf(GltfObject kind) { return {Role::kArray, kind}; }

// The members the Parse* functions of tinygltf 2.7 (Debian 12's libtinygltf-dev) look up in each
// glTF object, and the members of the three extensions the reader decodes. Any other member is
// removed before parsing.
constexpr Member kRootMembers[] = {
    {"asset", kNo, {Role::kAsset}},
    {"scene", kInt},
    {"scenes", kNo, kArrayOf(GltfObject::kScene)},
    {"nodes", kNo, kArrayOf(GltfObject::kNode)},
    {"meshes", kNo, kArrayOf(GltfObject::kMesh)},
    {"accessors", kNo, kArrayOf(GltfObject::kAccessor)},
    {"bufferViews", kNo, kArrayOf(GltfObject::kBufferView)},
    {"buffers", kNo, kArrayOf(GltfObject::kBuffer)},
    {"skins", kNo, kArrayOf(GltfObject::kSkin)},
    {"animations", kNo, kArrayOf(GltfObject::kAnimation)},
    {"extensions"},
    {"extensionsUsed", kNo, {Role::kExtensionsUsed}},
    {"extensionsRequired"}};
constexpr Member kExtensionsMembers[] = {{kDracoExtension, kNo, {Role::kDraco}},
                                         {kMeshoptExtension, kNo, {Role::kMeshopt}},
                                         {kAnimationPointerExtension, kNo, {Role::kAnimationPointer}}};
constexpr Member kMeshExtrasMembers[] = {{"targetNames"}};
constexpr Member kAssetMembers[] = {{"version"}, {"generator"}, {"minVersion"}, {"copyright"}, {"extensions"}};
constexpr Member kSparseMembers[] = {
    {"count", kInt}, {"indices", kNo, {Role::kSparseIndices}}, {"values", kNo, {Role::kSparseValues}}, {"extensions"}};
constexpr Member kSparseIndicesMembers[] = {
    {"bufferView", kInt}, {"byteOffset", kInt}, {"componentType", kInt}, {"extensions"}};
constexpr Member kSparseValuesMembers[] = {{"bufferView", kInt}, {"byteOffset", kInt}, {"extensions"}};
constexpr Member kChannelTargetMembers[] = {{"node", kInt}, {"path"}, {"extensions"}};
constexpr Member kDracoMembers[] = {{"bufferView"}, {"attributes", kNo, {Role::kMap}}};
constexpr Member kMeshoptMembers[] = {{"buffer"}, {"byteOffset"}, {"byteLength"}, {"byteStride"},
                                      {"count"},  {"mode"},       {"filter"},     {"fallback"}};
constexpr Member kAnimationPointerMembers[] = {{"pointer"}};
constexpr Member kNodeMembers[] = {{"camera", kInt}, {"children", kInts}, {"skin", kInt},    {"matrix"},
                                   {"mesh", kInt},   {"rotation"},        {"scale"},         {"translation"},
                                   {"weights"},      {"name"},            {"extensions"}};
constexpr Member kAccessorMembers[] = {
    {"bufferView", kInt}, {"byteOffset", kInt}, {"componentType", kInt}, {"normalized"},
    {"count", kInt},      {"type"},             {"max"},                 {"min"},
    {"sparse", kNo, {Role::kSparse}},           {"name"},                {"extensions"}};
constexpr Member kMeshMembers[] = {{"primitives", kNo, kArrayOf(GltfObject::kPrimitive)},
                                   {"weights"},
                                   {"name"},
                                   {"extensions"},
                                   {"extras", kNo, {Role::kMeshExtras}}};
constexpr Member kPrimitiveMembers[] = {{"attributes", kNo, {Role::kAttributes}},
                                        {"indices", kInt},
                                        {"material", kInt},
                                        {"mode", kInt},
                                        {"targets", kNo, kArrayOf(GltfObject::kMorphTarget)},
                                        {"extensions"},
                                        // UniVRM (VRM 0.x avatars) names the targets here
                                        {"extras", kNo, {Role::kMeshExtras}}};
constexpr Member kSkinMembers[] = {
    {"inverseBindMatrices", kInt}, {"skeleton", kInt}, {"joints", kInts}, {"name"}, {"extensions"}};
constexpr Member kAnimationMembers[] = {{"channels", kNo, kArrayOf(GltfObject::kChannel)},
                                        {"samplers", kNo, kArrayOf(GltfObject::kSampler)},
                                        {"name"},
                                        {"extensions"}};
constexpr Member kChannelMembers[] = {{"sampler", kInt}, {"target", kNo, {Role::kChannelTarget}}, {"extensions"}};
constexpr Member kSamplerMembers[] = {{"input", kInt}, {"interpolation"}, {"output", kInt}, {"extensions"}};
constexpr Member kBufferMembers[] = {{"uri"}, {"byteLength", kInt}, {"name"}, {"extensions"}};
constexpr Member kBufferViewMembers[] = {{"buffer", kInt},     {"byteOffset", kInt}, {"byteLength", kInt},
                                         {"byteStride", kInt}, {"target", kInt},     {"name"},
                                         {"extensions"}};
constexpr Member kSceneMembers[] = {{"nodes", kInts}, {"name"}, {"extensions"}};

// The member table of an object in `parent`'s role; none (an empty span) for maps and for objects
// that are not glTF objects.
absl::Span<const Member> MembersOf(const Frame& parent) {
  switch (parent.role) {
    case Role::kRoot: return kRootMembers;
    case Role::kExtensions: return kExtensionsMembers;
    case Role::kMeshExtras: return kMeshExtrasMembers;
    case Role::kAsset: return kAssetMembers;
    case Role::kSparse: return kSparseMembers;
    case Role::kSparseIndices: return kSparseIndicesMembers;
    case Role::kSparseValues: return kSparseValuesMembers;
    case Role::kChannelTarget: return kChannelTargetMembers;
    case Role::kDraco: return kDracoMembers;
    case Role::kMeshopt: return kMeshoptMembers;
    case Role::kAnimationPointer: return kAnimationPointerMembers;
    case Role::kItem:
      switch (parent.kind) {
        case GltfObject::kNode: return kNodeMembers;
        case GltfObject::kAccessor: return kAccessorMembers;
        case GltfObject::kMesh: return kMeshMembers;
        case GltfObject::kPrimitive: return kPrimitiveMembers;
        case GltfObject::kSkin: return kSkinMembers;
        case GltfObject::kAnimation: return kAnimationMembers;
        case GltfObject::kChannel: return kChannelMembers;
        case GltfObject::kSampler: return kSamplerMembers;
        case GltfObject::kBuffer: return kBufferMembers;
        case GltfObject::kBufferView: return kBufferViewMembers;
        case GltfObject::kScene: return kSceneMembers;
        default: return {};
      }
    default: return {};
  }
}

// What the reader makes of member `key` of an object in `parent`'s role.
struct Reading {
  bool read = false;
  Integers integers = Integers::kNone;
  Child child = {};
};
Reading ReadingOf(const Frame& parent, std::string_view key) {
  // A map's members are names, every one read: of a primitive's `attributes` and of a morph
  // target, each an accessor.
  if (IsMap(parent)) return {true, parent.role == Role::kMap ? kNo : kInt};
  const absl::Span<const Member> members = MembersOf(parent);
  if (members.empty()) {
    // Not a glTF object: everything is read but `extras`; an `extensions` is one.
    return {key != "extras", kNo, key == "extensions" ? Child{Role::kExtensions} : Child{}};
  }
  for (const Member& m : members) {
    if (m.key == key) {
      // An `extensions` in a glTF object holds extensions (one in `extensions` is an extension).
      const Child child = key == "extensions" && parent.role != Role::kExtensions ? Child{Role::kExtensions} : m.child;
      return {true, m.integers, child};
    }
  }
  return {};
}

// The role of the value that starts now inside `parent` (at parent.key when it is an object).
Child ChildOf(const Frame& parent) {
  if (!parent.object) return parent.role == Role::kArray ? Child{Role::kItem, parent.kind} : Child{};
  return ReadingOf(parent, parent.key).child;
}

bool IsSpace(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t SkipSpace(const unsigned char* text, size_t size, size_t i) {
  while (i < size && IsSpace(text[i])) ++i;
  return i;
}

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

// The four hex digits of a \u escape at text[i, i + 4) as *value, when they lie before `end`
// (the string's closing quote) and are hex digits.
bool Hex4(const unsigned char* text, size_t i, size_t end, unsigned* value) {
  if (i + 4 > end) return false;
  *value = 0;
  for (size_t k = i; k < i + 4; ++k) {
    const unsigned char c = text[k];
    const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                                 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (digit < 0) return false;
    *value = *value * 16 + static_cast<unsigned>(digit);
  }
  return true;
}

// Whether the string text[begin, end) (quotes included) is one the parser accepts: UTF-8, no
// control characters, valid escapes (\u surrogates paired). A member whose key is not is left to
// the parser, so that a corrupted key is refused as before rather than removed as unknown.
bool ValidString(const unsigned char* text, size_t begin, size_t end) {
  if (end - begin < 2 || text[begin] != '"' || text[end - 1] != '"') return false;
  auto hex4 = [&](size_t i, unsigned* value) { return Hex4(text, i, end - 1, value); };
  for (size_t i = begin + 1; i < end - 1;) {
    const unsigned char c = text[i];
    if (c < 0x20) return false;
    if (c == '\\') {
      if (i + 1 >= end - 1) return false;
      const unsigned char e = text[i + 1];
      if (e == 'u') {
        unsigned u = 0;
        if (!hex4(i + 2, &u)) return false;
        i += 6;
        if (u >= 0xDC00 && u <= 0xDFFF) return false;  // a low surrogate first
        if (u >= 0xD800 && u <= 0xDBFF) {              // a high one: its low one follows
          unsigned low = 0;
          if (i + 1 >= end - 1 || text[i] != '\\' || text[i + 1] != 'u' || !hex4(i + 2, &low) || low < 0xDC00 ||
              low > 0xDFFF) {
            return false;
          }
          i += 6;
        }
        continue;
      }
      if (std::strchr("\"\\/bfnrt", e) == nullptr || e == 0) return false;
      i += 2;
      continue;
    }
    if (c < 0x80) {
      ++i;
      continue;
    }
    // UTF-8: the lead byte's length, no overlong forms, no surrogates, at most U+10FFFF.
    int n = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (i + static_cast<size_t>(n) >= end - 1) return false;  // cut short by the closing quote
    for (int k = 1; k <= n; ++k) {
      const unsigned char t = text[i + k];
      if (k == 1 ? (t < lo || t > hi) : (t < 0x80 || t > 0xBF)) return false;
    }
    i += static_cast<size_t>(n) + 1;
  }
  return true;
}

// The string text[begin, end) (quotes included, ValidString) decoded as the parser decodes it:
// its escapes replaced by what they stand for (\u as UTF-8). A key may spell a member the reader
// reads with escapes ("\u0063hildren" is "children"); matched raw, it was removed as unknown and
// the file read without it.
std::string DecodedString(const unsigned char* text, size_t begin, size_t end) {
  std::string out;
  auto hex4 = [&](size_t i) {
    unsigned v = 0;
    Hex4(text, i, end - 1, &v);  // ValidString checked it
    return v;
  };
  auto utf8 = [&](unsigned u) {
    if (u < 0x80) {
      out += static_cast<char>(u);
    } else if (u < 0x800) {
      out += static_cast<char>(0xC0 | (u >> 6));
      out += static_cast<char>(0x80 | (u & 0x3F));
    } else if (u < 0x10000) {
      out += static_cast<char>(0xE0 | (u >> 12));
      out += static_cast<char>(0x80 | ((u >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (u & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (u >> 18));
      out += static_cast<char>(0x80 | ((u >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((u >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (u & 0x3F));
    }
  };
  for (size_t i = begin + 1; i + 1 < end;) {
    if (text[i] != '\\') {
      out += static_cast<char>(text[i++]);
      continue;
    }
    const unsigned char e = text[i + 1];
    if (e == 'u') {
      unsigned u = hex4(i + 2);
      i += 6;
      if (u >= 0xD800 && u <= 0xDBFF) {  // ValidString checked that its low surrogate follows
        u = 0x10000 + ((u - 0xD800) << 10) + (hex4(i + 2) - 0xDC00);
        i += 6;
      }
      utf8(u);
      continue;
    }
    const char* from = "\"\\/bfnrt";
    const char* to = "\"\\/\b\f\n\r\t";
    out += to[std::strchr(from, e) - from];
    i += 2;
  }
  return out;
}

// The index just past the non-negative integer written at `i` (digits, as JSON writes an
// integer: no sign, fraction or exponent; at most 15 digits), or kNone.
size_t IntegerEnd(const unsigned char* text, size_t size, size_t i) {
  size_t e = i;
  while (e < size && text[e] >= '0' && text[e] <= '9') ++e;
  if (e == i || e - i > 15) return kNone;
  if (e < size && (text[e] == '.' || text[e] == 'e' || text[e] == 'E' || text[e] == '-' || text[e] == '+'))
    return kNone;
  return e;
}

// Whether the value at `i` is what `want` says: a non-negative integer, or an array of them.
bool IsIntegers(const unsigned char* text, size_t size, size_t i, Integers want) {
  i = SkipSpace(text, size, i);
  if (want == Integers::kOne) return IntegerEnd(text, size, i) != kNone;
  if (i >= size || text[i] != '[') return false;
  i = SkipSpace(text, size, i + 1);
  if (i < size && text[i] == ']') return true;
  for (;;) {
    const size_t e = IntegerEnd(text, size, i);
    if (e == kNone) return false;
    i = SkipSpace(text, size, e);
    if (i < size && text[i] == ']') return true;
    if (i >= size || text[i] != ',') return false;
    i = SkipSpace(text, size, i + 1);
  }
}

// "nodes[3].children" for the member being read in the innermost object of `stack`.
std::string MemberPath(const std::vector<Frame>& stack) {
  std::string path;
  for (const Frame& f : stack) {
    if (f.object) {
      if (!path.empty()) path += '.';
      path += f.key;
    } else {
      path += "[" + std::to_string(f.commas) + "]";
    }
  }
  return path;
}

// The index just past the array or object that opens at `i`, or kNone when it is not closed.
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
  return kNone;
}

// The index just past the value that starts at `i` (white space skipped first), or kNone when
// there is none or it is not closed.
size_t ValueEnd(const unsigned char* text, size_t size, size_t i) {
  i = SkipSpace(text, size, i);
  if (i >= size) return kNone;
  const unsigned char c = text[i];
  if (c == '"') {
    const size_t end = SkipString(text, size, i);
    return end <= size && text[end - 1] == '"' && end - i >= 2 ? end : kNone;
  }
  if (c == '[' || c == '{') return SkipContainer(text, size, i);
  size_t end = i;
  while (end < size && !IsSpace(text[end]) && text[end] != ',' && text[end] != '}' && text[end] != ']' &&
         text[end] != ':' && text[end] != '"' && text[end] != '[' && text[end] != '{') {
    ++end;
  }
  return end > i ? end : kNone;
}

// The text to remove for the member or element of `f` at [begin, end), with its comma: from the
// comma before it when a kept one precedes it (f.comma, seen since the last one ended), else to
// just past the comma after it, or just itself when it is the container's last. False when there
// is no such comma: the text is malformed and is left to the parser as it is.
bool RemovalSpan(const unsigned char* text, size_t size, const Frame& f, size_t begin, size_t end, Unread* span) {
  if (f.kept) {
    *span = {f.comma, end};
    return f.comma != kNone;
  }
  const size_t k = SkipSpace(text, size, end);
  if (k < size && text[k] == ',') {
    *span = {begin, k + 1};
    return true;
  }
  *span = {begin, end};
  return k < size && text[k] == (f.object ? '}' : ']');
}

}  // namespace

bool SupportedExtension(std::string_view name) {
  return name == kMeshQuantizationExtension || name == kMeshoptExtension || name == kDracoExtension ||
         name == kAnimationPointerExtension;
}

bool UnreadExtension(std::string_view name) {
  static constexpr std::string_view kUnread[] = {
      "KHR_texture_basisu",  "KHR_texture_transform",  "EXT_texture_webp", "EXT_texture_avif",
      "KHR_lights_punctual", "EXT_lights_image_based", "KHR_xmp_json_ld"};
  constexpr std::string_view kMaterials = "KHR_materials_";
  if (name.size() > kMaterials.size() && name.substr(0, kMaterials.size()) == kMaterials) return true;
  return std::find(std::begin(kUnread), std::end(kUnread), name) != std::end(kUnread);
}

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
  // Removes [begin, end) from container f with its comma, and returns where the scan goes on
  // (past the comma after it, when that went too); kNone for malformed text. A span that follows
  // the last one with only white space between is merged into it (1M unknown members make one).
  auto remove = [&](Frame& f, size_t begin, size_t end) {
    Unread span;
    if (!RemovalSpan(text, size, f, begin, end, &span)) return kNone;
    f.comma = kNone;
    std::vector<Unread>& unread = layout.unread;
    if (!unread.empty() && SkipSpace(text, span.begin, unread.back().end) == span.begin) {
      unread.back().end = span.end;
    } else {
      unread.push_back(span);
    }
    return span.end;
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
        f.expect_key = false;
        if (f.role == Role::kAttributes || (f.role == Role::kItem && f.kind == GltfObject::kMorphTarget)) {
          add(GltfObject::kAttribute);
        }
        const size_t length = end - i >= 2 ? end - i - 2 : 0;
        // Every key the roles look at is short; a long one is kept as "", which no role reads but
        // a map's and kOther's.
        const bool valid = ValidString(text, i, end);
        if (length <= 64) {
          f.key.assign(reinterpret_cast<const char*>(text) + i + 1, length);
          if (valid && f.key.find('\\') != std::string::npos) f.key = DecodedString(text, i, end);
        } else {
          f.key.clear();
        }
        if (const Integers want = ReadingOf(f, f.key).integers; want != Integers::kNone && layout.not_an_integer.empty()) {
          const size_t colon = SkipSpace(text, size, end);
          if (colon < size && text[colon] == ':' && !IsIntegers(text, size, colon + 1, want)) {
            const size_t v = SkipSpace(text, size, colon + 1);
            const size_t v_end = ValueEnd(text, size, v);
            std::string value(reinterpret_cast<const char*>(text) + v,
                              std::min<size_t>(v_end == kNone ? size - v : v_end - v, 40));
            if (v_end != kNone && v_end - v > 40) value += "...";
            layout.not_an_integer =
                absl::StrCat(MemberPath(stack), " is ", value, ", not ",
                             want == Integers::kOne ? "a non-negative integer" : "an array of non-negative integers");
          }
        }
        if (!ReadingOf(f, f.key).read && valid) {
          // The whole member goes: its key, its value and a comma.
          const size_t colon = SkipSpace(text, size, end);
          const size_t value_end = colon < size && text[colon] == ':' ? ValueEnd(text, size, colon + 1) : kNone;
          const size_t next = value_end == kNone ? kNone : remove(f, i, value_end);
          if (next == kNone) break;  // malformed: left to the parser
          f.expect_key = text[next - 1] == ',';  // the comma after it went with it
          i = next;
          continue;
        }
        f.Keep();
      } else if (!stack.empty() && stack.back().role == Role::kExtensionsUsed) {
        Frame& f = stack.back();
        if (ValidString(text, i, end) && !SupportedExtension(DecodedString(text, i, end))) {
          const size_t next = remove(f, i, end);
          if (next == kNone) break;
          i = next;
          continue;
        }
        f.Keep();
      }
      i = end;
      continue;
    }
    if (c == ',') {
      if (!stack.empty()) {
        ++stack.back().commas;
        stack.back().comma = i;
        if (stack.back().object) stack.back().expect_key = true;
      }
    } else if (c == ']' || c == '}') {
      if (!stack.empty()) stack.pop_back();
    } else if (c == '[' || c == '{') {
      Child child{Role::kOther};
      if (stack.empty()) {
        child.role = top_seen ? Role::kOther : Role::kRoot;
        top_seen = true;
      } else {
        child = ChildOf(stack.back());
        if (!stack.back().object) stack.back().Keep();
      }
      if (child.role == Role::kItem) add(child.kind);
      Frame f;
      f.object = c == '{';
      f.role = child.role;
      f.kind = child.kind;
      f.expect_key = f.object;
      stack.push_back(std::move(f));
    } else if (!stack.empty() && !stack.back().object && !IsSpace(c)) {
      stack.back().Keep();  // a number or literal element
    }
    ++i;
  }
  return layout;
}

void BlankUnread(const std::vector<Unread>& unread, size_t offset, std::vector<unsigned char>* bytes) {
  unsigned char* p = bytes->data() + offset;
  for (const Unread& u : unread) std::memset(p + u.begin, ' ', u.end - u.begin);
}

}  // namespace skinning::gltf_internal
