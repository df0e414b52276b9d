// What a glTF's JSON would cost tinygltf, and the parts of it the reader never uses, found in one
// pass over the text before it is parsed. Internal to core/io (gltf_read.cc).
#ifndef SKINNING_CORE_IO_GLTF_JSON_SCAN_H_
#define SKINNING_CORE_IO_GLTF_JSON_SCAN_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace skinning::gltf_internal {

// Deepest nesting of arrays and objects a glTF's JSON may have. Parsing it and copying it into
// tinygltf's values recurse once per level, so without a bound a 200 kB file of nested brackets
// overflowed the stack; real files stay under 10.
inline constexpr int kMaxJsonDepth = 64;

// The JSON values of a glTF's JSON text (the top one, every array element and every object
// member's value) and its deepest nesting, counted in one pass without parsing: strings are
// skipped with their escapes, and each container adds its first element on the first character
// after its opening bracket that is not white space or its closing bracket, then one more per
// comma. Stops counting once deeper than kMaxJsonDepth. Malformed text is left to the parser.
struct JsonShape {
  int64_t values = 0;
  int depth = 0;
};
JsonShape ScanJson(const unsigned char* text, size_t size);

// The objects of a glTF that tinygltf parses into a struct of its own each.
enum class GltfObject {
  kNode, kAccessor, kMesh, kPrimitive, kMorphTarget, kSkin, kAnimation, kChannel, kSampler, kBuffer,
  kBufferView, kScene,
  kAttribute,  // a member of a primitive's `attributes` or of a morph target: a map entry each
  kCount
};

// The extension KHR_mesh_quantization, which the reader supports (listed in `extensionsUsed`).
inline constexpr char kMeshQuantizationExtension[] = "KHR_mesh_quantization";
// KHR_animation_pointer: an animation channel whose target is a JSON pointer. Those that point at
// a node's translation, rotation, scale or weights are read as the core channels they equal
// (PatchForParser); the rest animate materials, cameras, lights and the like, nothing of a rig.
inline constexpr char kAnimationPointerExtension[] = "KHR_animation_pointer";

// Whether the reader supports extension `name`: KHR_mesh_quantization, EXT_meshopt_compression,
// KHR_draco_mesh_compression or KHR_animation_pointer (required ones are refused otherwise;
// other used ones are removed).
bool SupportedExtension(std::string_view name);

// Whether extension `name` extends only what the reader never reads: materials (KHR_materials_*),
// textures and images (KHR_texture_basisu, KHR_texture_transform, EXT_texture_webp,
// EXT_texture_avif), lights (KHR_lights_punctual, EXT_lights_image_based) and metadata
// (KHR_xmp_json_ld). A file that requires one has the same meshes, skins and animations without
// it, so it is read (a file requiring any other unsupported extension is refused).
bool UnreadExtension(std::string_view name);

// Text to remove, [begin, end) as offsets into the JSON text: members of an object (each from its
// key through its value) or elements of an array that the reader never uses, with the comma that
// goes with each (the one before it when a kept one precedes it, else the one after it) and the
// white space between them.
struct Unread {
  size_t begin = 0, end = 0;
};

struct GltfJsonLayout {
  // Per GltfObject: how many the JSON holds (elements of its arrays: `nodes`, ...,
  // `meshes[].primitives`, `meshes[].primitives[].targets`, `animations[].channels`, ...).
  int64_t counts[static_cast<int>(GltfObject::kCount)] = {};
  // Σ counts × the size of tinygltf's struct for each: what parsing allocates for them at least
  // (1M empty nodes in a 3 MB file took 600 MB).
  int64_t struct_bytes = 0;
  // What the reader never uses, in text order (none inside another, adjacent ones merged):
  //  - every member that tinygltf's parser does not look up in the object it sits in (the
  //    top-level `materials`, `textures`, `images`, `samplers` and `cameras` among them: 1M empty
  //    materials took 2.4 GB parsed, and embedded images were decoded from base64; unknown members
  //    of a node or the root, 1M of them, took 165 MB);
  //  - every `extras`, but a mesh's `targetNames` (which names its morph targets);
  //  - every extension other than KHR_draco_mesh_compression, EXT_meshopt_compression and
  //    KHR_animation_pointer, and their members that the reader does not decode;
  //  - every `extensionsUsed` entry other than those three and KHR_mesh_quantization.
  // Objects whose members are all read: a primitive's `attributes`, a morph target, Draco's
  // `attributes`; anywhere else (not a glTF object), only `extras` goes.
  std::vector<Unread> unread;
  // The first member that the spec makes an index, count, offset, length or enum (a non-negative
  // integer: an accessor's `count`, a buffer view's `byteOffset`, a node's `mesh`, an attribute,
  // ...) or an array of indices (`children`, `joints`, a scene's `nodes`) and the text gives
  // something else, e.g. "bufferViews[2].byteOffset is -4, not a non-negative integer"; empty
  // when there is none. The parser would take the default for it (a negative or fractional
  // byteOffset read as 0, so WEIGHTS_0 read POSITION's bytes; `"children": {}` dropped the
  // hierarchy).
  std::string not_an_integer;
};

// The name of `o` in messages, plural ("nodes", "mesh primitives", ...).
const char* GltfObjectName(GltfObject o);

// One pass over JSON text whose nesting was checked (ScanJson: ≤ kMaxJsonDepth) by the caller; strings are
// skipped with their escapes. Malformed text gives some layout and is left to the parser.
GltfJsonLayout ScanGltfJson(const unsigned char* text, size_t size);

// Removes the text of `unread` (offsets relative to `offset` bytes into `bytes`: a .glb's JSON chunk
// starts after its headers) by overwriting it with spaces in place, so the text keeps its length:
// a .glb's chunk lengths and the offsets into its binary chunk are unchanged.
void BlankUnread(const std::vector<Unread>& unread, size_t offset, std::vector<unsigned char>* bytes);

}  // namespace skinning::gltf_internal

#endif  // SKINNING_CORE_IO_GLTF_JSON_SCAN_H_
