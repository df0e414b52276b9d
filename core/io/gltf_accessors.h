// glTF 2.0 accessors for the reader: each checked against its buffer view and buffer, then
// decoded to doubles. Internal to core/io (gltf_read.cc).
#ifndef SKINNING_CORE_IO_GLTF_ACCESSORS_H_
#define SKINNING_CORE_IO_GLTF_ACCESSORS_H_

#include <tiny_gltf.h>

#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace skinning::gltf_internal {

// INVALID_ARGUMENT with `message`: every malformed-file error.
absl::Status Invalid(const std::string& message);

// Bytes of one component of a glTF 2.0 accessor componentType; 0 for any other value.
int ComponentSize(int component_type);
// Components of an accessor type (SCALAR 1 … MAT4 16); 0 for an unknown type.
int NumComponents(int type);
// bufferViews[view] (in range) against its buffer: the buffer exists and holds the view's bytes,
// and a byteStride is a multiple of 4 in [4, 252].
absl::Status CheckBufferView(const tinygltf::Model& model, int view);

// Which component types an accessor may use in a given role.
enum class Components {
  kFloat,                      // FLOAT only (positions, normals, times, matrices, T/S keys)
  kFloatOrNormalizedUnsigned,  // FLOAT, normalized UNSIGNED_BYTE/SHORT (WEIGHTS_n)
  kFloatOrNormalized,          // FLOAT, normalized (UNSIGNED_)BYTE/SHORT (rotation keys)
  kJointIndices,               // UNSIGNED_BYTE/SHORT, not normalized (JOINTS_n)
  kVertexIndices,              // UNSIGNED_BYTE/SHORT/INT, not normalized (indices)
  // KHR_mesh_quantization (only where a file declares it):
  kQuantizedPosition,        // FLOAT, (UNSIGNED_)BYTE/SHORT normalized or not (POSITION)
  kQuantizedTargetPosition,  // FLOAT, BYTE/SHORT normalized or not (a morph target's POSITION)
  kQuantizedNormal,          // FLOAT, normalized BYTE/SHORT (NORMAL, a morph target's NORMAL)
};

// An accessor's elements decoded to doubles (integers exactly, normalized integers to [0, 1] or
// [-1, 1]), count × components numbers, element-major.
struct Decoded {
  std::vector<double> data;
  size_t count = 0;
  int components = 0;
  double at(size_t i, int c) const { return data[i * components + c]; }
};

// Every buffer view and every accessor of the file (a sparse one's indices and values too), used
// or not.
absl::Status CheckAllAccessors(const tinygltf::Model& model);

// Validates accessors[index] for the given role (`type`, `allowed` component types) against its
// buffer view and buffer, then decodes it; a sparse accessor's listed elements replace those of
// its base (zeros without a buffer view), at indices that must strictly increase and stay below
// its count. `use` says where the accessor is referenced from. Only the first `max_elements`
// elements are decoded (Decoded::count is then the smaller count): an inverse-bind accessor may
// hold more matrices than its skin has joints, and several skins may share one.
absl::StatusOr<Decoded> ReadAccessor(const tinygltf::Model& model, int index, int type,
                                     Components allowed, const std::string& use,
                                     size_t max_elements = std::numeric_limits<size_t>::max());

}  // namespace skinning::gltf_internal

#endif  // SKINNING_CORE_IO_GLTF_ACCESSORS_H_
