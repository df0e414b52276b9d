// What tinygltf 2.7 (Debian's) refuses in compressed glTF files, or drops of animation pointers,
// rewritten before it parses them.
// Internal to core/io (gltf_read.cc).
#ifndef SKINNING_CORE_IO_GLTF_PATCH_H_
#define SKINNING_CORE_IO_GLTF_PATCH_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace skinning::gltf_internal {

// Where a file's JSON text is in `bytes`: a .glb's first chunk (when `binary`; its header checked
// by the caller), or the whole .gltf. Offsets [begin, end).
struct JsonText {
  size_t begin = 0;
  size_t end = 0;
};
JsonText FindJsonText(const std::vector<unsigned char>& bytes, bool binary);

// `bytes` (a .glb when `binary`, its header checked, else .gltf text) with
//  - EXT_meshopt_compression fallback buffers (declared to hold the decoded data, with no data of
//    their own: no uri in a .glb, a file of zeros or none in a .gltf) turned into a one-byte
//    embedded buffer: tinygltf wants every buffer's bytes; DecodeMeshoptViews sizes them;
//  - KHR_draco_mesh_compression primitives' indices accessors, which have no bufferView (their
//    data is in the Draco stream), given the stream's view: tinygltf wants one on every indices
//    accessor; DecodeDracoPrimitives replaces it;
//  - KHR_animation_pointer channels (path "pointer", no node) whose pointer names a node's
//    translation, rotation, scale or weights, given that node and path: tinygltf drops a channel
//    without a node, and the extension says the two are the same animation. The extension stays,
//    so that messages can quote the pointer.
// nullopt when nothing needs rewriting (or the JSON does not parse: the parser then says why).
std::optional<std::vector<unsigned char>> PatchForParser(const std::vector<unsigned char>& bytes, bool binary);

// What a KHR_animation_pointer pointer names when it is a node's translation, rotation, scale or
// weights ("/nodes/3/rotation"): the node (the index as written, INT32_MAX past it: no file has
// that many nodes) and the path; nullopt for any other pointer (a material's, a camera's, ...) and
// for an index with a leading zero or a sign, which JSON Pointer does not allow.
struct NodePointer {
  int node = 0;
  std::string path;
};
std::optional<NodePointer> ParseNodePointer(std::string_view pointer);

}  // namespace skinning::gltf_internal

#endif  // SKINNING_CORE_IO_GLTF_PATCH_H_
