// EXT_meshopt_compression (gltfpack -c): buffer views stored compressed by meshoptimizer's codecs,
// decoded in place before anything reads them (PatchForParser first makes the file acceptable to
// tinygltf). Internal to core/io (gltf_read.cc).
#ifndef SKINNING_CORE_IO_GLTF_MESHOPT_H_
#define SKINNING_CORE_IO_GLTF_MESHOPT_H_

#include <tiny_gltf.h>

#include <limits>

#include "absl/status/status.h"

namespace skinning::gltf_internal {

inline constexpr char kMeshoptExtension[] = "EXT_meshopt_compression";

// Decodes every buffer view that carries EXT_meshopt_compression into its own place (its buffer,
// byteOffset): a fallback buffer (no data of its own) is first allocated with zeros. Modes
// ATTRIBUTES, TRIANGLES and INDICES; filters NONE, OCTAHEDRAL, QUATERNION and EXPONENTIAL.
// INVALID_ARGUMENT naming the view for a field out of range, data that does not decode, a
// decoded size more than 128 times its compressed size (meshoptimizer's codecs reach about 64 at
// best; beyond that a small file would claim a huge allocation), or a view without the
// extension that points into a fallback buffer (it has no data); also when all the views together
// would decode to more than 128 times the file's buffers (views may share one compressed source).
// RESOURCE_EXHAUSTED when they would decode to more than `max_bytes` in all.
// `decoded_bytes`, when given, gets what they decode to. Nothing to do without the extension.
absl::Status DecodeMeshoptViews(tinygltf::Model* model,
                                double max_bytes = std::numeric_limits<double>::infinity(),
                                double* decoded_bytes = nullptr);

}  // namespace skinning::gltf_internal

#endif  // SKINNING_CORE_IO_GLTF_MESHOPT_H_
