// Fuzz targets: skinctl's JSON inputs from bytes — pose files (SKINNING_FUZZ_JSON=1: the pose and
// its morph weights) and FAST constraint files (=2) — against a three-joint skeleton (root, elbow,
// hand), as skinctl reads them before anything reaches the server.
#include <cstdint>

#include "client/skinctl/inputs.h"

namespace {

const skinning::Skeleton& Arm() {
  static const skinning::Skeleton* arm = [] {
    auto* s = new skinning::Skeleton;
    const char* names[] = {"root", "elbow", "hand"};
    for (int j = 0; j < 3; ++j) {
      skinning::Joint joint;
      joint.name = names[j];
      joint.parent = j - 1;
      if (j > 0) joint.rest.translation = Eigen::Vector3d(1, 0, 0);
      joint.inverse_bind = Eigen::Translation3d(-j, 0, 0);
      s->joints.push_back(joint);
    }
    return s;
  }();
  return *arm;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
#if SKINNING_FUZZ_JSON == 1
  (void)skinning::ParsePoseJson(text, Arm(), "pose.json");
  skinning::v1::Pose pose;
  (void)skinning::ParsePoseJsonMorphWeights(text, "pose.json", &pose);
#else
  (void)skinning::ParseConstraintsJson(text, Arm(), "constraints.json");
#endif
  return 0;
}
