// KHR_draco_mesh_compression: a primitive's geometry stored as one Draco-compressed mesh,
// decoded before anything reads its accessors. Internal to core/io (gltf_read.cc).
#ifndef SKINNING_CORE_IO_GLTF_DRACO_H_
#define SKINNING_CORE_IO_GLTF_DRACO_H_

#include <tiny_gltf.h>

#include <cstddef>
#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace skinning::gltf_internal {

inline constexpr char kDracoExtension[] = "KHR_draco_mesh_compression";

// What a Draco mesh stream declares in its header (bitstream 2.2, the version
// KHR_draco_mesh_compression is written against), read before anything is decoded.
struct DracoStreamCounts {
  bool edgebreaker = false;  // else sequential
  uint32_t faces = 0;
  uint32_t vertices = 0;  // edgebreaker: the connectivity's vertices; sequential: the points
  uint32_t attribute_seams = 0;  // edgebreaker: seam tables, one per attribute but the position
};
// INVALID_ARGUMENT saying why (without naming the primitive) for data that does not start with
// "DRACO", a bitstream other than 2.2, a point cloud, an unknown encoding method, or a header or
// metadata section cut short.
absl::StatusOr<DracoStreamCounts> ReadDracoStreamCounts(const unsigned char* data, size_t size);

// For every primitive with KHR_draco_mesh_compression: decodes its buffer view with Debian's
// libdraco and points the accessors the extension names (and the primitive's indices) at the
// decoded data, in a buffer appended to the model, written in each accessor's own component
// type (indices as UNSIGNED_INT). The accessors' counts must match the decoded mesh: points for
// the attributes, three per face for the indices. INVALID_ARGUMENT naming the primitive for a
// malformed extension, data that does not decode, counts or component counts that disagree, an
// attribute the primitive does not have, or a decoded size more than 256 times the compressed
// one. Both are checked before decoding: the accessors' counts against the compressed size, then
// the counts the stream's header declares (ReadDracoStreamCounts, which Draco allocates for)
// against the accessors' (and an edgebreaker stream's seam tables against the extension's
// attributes). RESOURCE_EXHAUSTED when the primitives' accessors together declare more than
// `max_bytes`, and when a stream's attributes would take more than 8 times the bytes of the
// accessors they fill (plus 1 MiB) to decode, checked once its connectivity is decoded and
// before libdraco allocates for any attribute's values. Nothing to do without the extension.
absl::Status DecodeDracoPrimitives(tinygltf::Model* model, double max_bytes = std::numeric_limits<double>::infinity());

}  // namespace skinning::gltf_internal

#endif  // SKINNING_CORE_IO_GLTF_DRACO_H_
