// KHR_draco_mesh_compression: a primitive's geometry stored as one Draco-compressed mesh,
// decoded before anything reads its accessors. Internal to core/io (gltf_read.cc).
#ifndef SKINNING_CORE_IO_GLTF_DRACO_H_
#define SKINNING_CORE_IO_GLTF_DRACO_H_

#include <tiny_gltf.h>

#include "absl/status/status.h"

namespace skinning::gltf_internal {

inline constexpr char kDracoExtension[] = "KHR_draco_mesh_compression";

// For every primitive with KHR_draco_mesh_compression: decodes its buffer view with Debian's
// libdraco and points the accessors the extension names (and the primitive's indices) at the
// decoded data, in a buffer appended to the model, written in each accessor's own component
// type (indices as UNSIGNED_INT). The accessors' counts must match the decoded mesh: points for
// the attributes, three per face for the indices. INVALID_ARGUMENT naming the primitive for a
// malformed extension, data that does not decode, counts or component counts that disagree, an
// attribute the primitive does not have, or a decoded size more than 256 times the compressed
// one (checked on the accessors' counts before decoding; Draco allocates for the counts in its
// own stream, which are compared with the accessors' afterwards). Nothing to do without the
// extension.
absl::Status DecodeDracoPrimitives(tinygltf::Model* model);

}  // namespace skinning::gltf_internal

#endif  // SKINNING_CORE_IO_GLTF_DRACO_H_
