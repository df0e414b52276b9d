// EXT_meshopt_compression (gltfpack -c): buffer views stored compressed by meshoptimizer's codecs,
// decoded in place before anything reads them. Internal to core/io (gltf_read.cc).
#ifndef SKINNING_CORE_IO_GLTF_MESHOPT_H_
#define SKINNING_CORE_IO_GLTF_MESHOPT_H_

#include <tiny_gltf.h>

#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace skinning::gltf_internal {

// A file whose EXT_meshopt_compression fallback buffers (declared to hold the decoded data, but
// with no data of their own: no uri in a .glb, a file of zeros or none in a .gltf) are rewritten
// to a one-byte embedded buffer, so that the glTF parser, which wants every buffer's bytes,
// accepts the file; DecodeMeshoptViews then gives them their size. `bytes` is a .glb (`binary`)
// or .gltf whose header was checked. nullopt when nothing needs rewriting (no fallback buffer).
absl::StatusOr<std::optional<std::vector<unsigned char>>> PatchMeshoptFallbackBuffers(
    const std::vector<unsigned char>& bytes, bool binary);

// Decodes every buffer view that carries EXT_meshopt_compression into its own place (its buffer,
// byteOffset): a fallback buffer (no data of its own) is first allocated with zeros. Modes
// ATTRIBUTES, TRIANGLES and INDICES; filters NONE, OCTAHEDRAL, QUATERNION and EXPONENTIAL.
// INVALID_ARGUMENT naming the view for a field out of range, data that does not decode, a
// decoded size more than 128 times its compressed size (meshoptimizer's codecs reach about 64 at
// best; beyond that a small file would claim a huge allocation), or a view without the
// extension that points into a fallback buffer (it has no data). Nothing to do without the
// extension.
absl::Status DecodeMeshoptViews(tinygltf::Model* model);

}  // namespace skinning::gltf_internal

#endif  // SKINNING_CORE_IO_GLTF_MESHOPT_H_
