// Fuzz target: serialized CreateRigRequest messages (mutations of valid ones) through the
// server's conversion and validation of a rig (RigFromProto with the default limits: every
// array length, index, weight and transform checked), and the glTF path when the request
// carries a file instead.
#include <cstdint>

#include "core/io/gltf.h"
#include "server/convert/convert.h"
#include "server/convert/gltf_import.h"
#include "skinning/v1/rig_service.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  skinning::v1::CreateRigRequest req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return 0;
  if (req.has_rig()) {
    (void)skinning::RigFromProto(req.rig(), skinning::RigLimits{});
  } else if (req.has_gltf()) {
    auto character = skinning::ReadGltfBytes(req.gltf(), "gltf");
    if (character.ok()) (void)skinning::ValidateRig(skinning::ImportGltf(*std::move(character)).rig);
  }
  return 0;
}
