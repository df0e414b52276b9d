// What tinygltf 2.7 (Debian's) refuses in compressed glTF files, rewritten before it parses them.
// Internal to core/io (gltf_read.cc).
#ifndef SKINNING_CORE_IO_GLTF_PATCH_H_
#define SKINNING_CORE_IO_GLTF_PATCH_H_

#include <cstddef>
#include <optional>
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
//    accessor; DecodeDracoPrimitives replaces it.
// nullopt when nothing needs rewriting (or the JSON does not parse: the parser then says why).
std::optional<std::vector<unsigned char>> PatchForParser(const std::vector<unsigned char>& bytes, bool binary);

}  // namespace skinning::gltf_internal

#endif  // SKINNING_CORE_IO_GLTF_PATCH_H_
