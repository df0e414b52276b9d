// The JSON inputs skinctl reads from files (pose files, FAST constraints), parsed from text so
// that the fuzz targets (tests/fuzz) reach them without files. `where` names the input in errors
// (the file name).
#ifndef SKINNING_CLIENT_SKINCTL_INPUTS_H_
#define SKINNING_CLIENT_SKINCTL_INPUTS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/rig/pose.h"
#include "core/rig/skeleton.h"
#include "skinning/v1/fast_service.pb.h"
#include "skinning/v1/pose.pb.h"

namespace skinning {

// {"joints": [{"name"|"index", "rotation": [x,y,z,w], "translation": [..], "scale": [..]}]}:
// absolute local transforms; joints not listed (or no "joints" at all) keep their rest
// transform, fields not given keep the rest value. Each entry is validated as it is read
// (ValidatePose's checks, named "<where>: joints[i] (joint 'elbow')..."); text that is not JSON
// gets the parser's words.
absl::StatusOr<Pose> ParsePoseJson(absl::string_view text, const Skeleton& skeleton, const std::string& where);

// The "morph_weights" of a JSON pose, into `pose`: an object by target name (into
// named_morph_weights) or an array by index (into morph_weights). Nothing when there are none or
// the text is not a JSON object (ParsePoseJson reports that).
absl::Status ParsePoseJsonMorphWeights(absl::string_view text, const std::string& where, v1::Pose* pose);

// {"constraints": [{"joint": NAME or INDEX, "transform": [12 numbers, 3x4 row-major]} or
//                  {"joint": ..., "position": [x, y, z], "point": [x, y, z] (optional)}]}
// A constraint with neither leaves the handle free.
absl::StatusOr<v1::SolveRequest> ParseConstraintsJson(absl::string_view text, const Skeleton& skeleton,
                                                      const std::string& where);

}  // namespace skinning

#endif  // SKINNING_CLIENT_SKINCTL_INPUTS_H_
