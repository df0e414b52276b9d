// Fuzz target: a .glb / .gltf's bytes through the validated reader the server uses for
// CreateRig (ReadGltfBytes with its size limits, no filesystem access; static meshes skipped for
// odd-length inputs, scene 1 asked for by some), then the import into a rig and its validation, as CreateRig does.
#include <cstdint>

#include "core/io/gltf.h"
#include "server/convert/gltf_import.h"
#include "server/convert/rig.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // With the limits the server holds an upload to (its default rig limits); inputs of odd length
  // leave static meshes out (CreateRigRequest.skip_static_meshes), the others refuse them; those
  // of length 2 or 3 modulo 4 ask for scene 1 (CreateRigRequest.scene), the others the default.
  skinning::GltfReadOptions options;
  options.skip_static_meshes = size % 2 == 1;
  if (size % 4 >= 2) options.scene = 1;
  auto character = skinning::ReadGltfBytes(absl::string_view(reinterpret_cast<const char*>(data), size), "gltf",
                                           skinning::UploadLimits(skinning::RigLimits{}), options);
  if (!character.ok()) return 0;
  skinning::GltfImport imported = skinning::ImportGltf(*std::move(character));
  (void)skinning::ValidateRig(imported.rig);
  return 0;
}
