// Conversions between the wire messages (skinning.v1) and core types, one place per message
// family. Every From* function validates shapes and names the offending field and index.
#ifndef SKINNING_SERVER_CONVERT_CONVERT_H_
#define SKINNING_SERVER_CONVERT_CONVERT_H_

#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "core/rig/pose.h"
#include "core/weights/bake_report.h"
#include "server/convert/rig.h"
#include "skinning/v1/bake.pb.h"
#include "skinning/v1/pose.pb.h"
#include "skinning/v1/rig.pb.h"

namespace skinning {

// Size limits checked while converting (RESOURCE_EXHAUSTED when exceeded).
struct RigLimits {
  int max_vertices = 2'000'000;
  int max_triangles = 4'000'000;
  int max_joints = 1024;
  int max_influences = 32;
};

// The limits for reading a rig a server already stored (GetRig's answer): none beyond the
// format's, since the server checked its own when the rig was created.
inline constexpr RigLimits kStoredRigLimits{1 << 30, 1 << 30, 1 << 20, 1 << 10};

// Wire rig → core rig: checks array lengths, then ValidateRig. Errors name fields such as
// "rig.mesh.positions" or "rig.skeleton.joints[3].parent".
absl::StatusOr<Rig> RigFromProto(const v1::Rig& proto, const RigLimits& limits = {});
// Core rig → wire rig, every field explicit (so the result is canonical for hashing).
v1::Rig RigToProto(const Rig& rig);

// INVALID_ARGUMENT naming where() unless translation/rotation/scale have 3/4/3 values or none.
// where() is called only for the error (posing checks every joint of every frame).
absl::Status TransformLengths(const v1::Transform& t, absl::FunctionRef<std::string()> where);
Transform TransformFromProto(const v1::Transform& proto);  // caller validates the lengths
void TransformToProto(const Transform& t, v1::Transform* proto);

// Wire pose → core pose for a skeleton of `num_joints` joints (0 joints = bind pose).
absl::StatusOr<Pose> PoseFromProto(const v1::Pose& proto, const Skeleton& skeleton,
                                   const char* field = "pose");
v1::Pose PoseToProto(const Pose& pose);

// #rows by #cols row-major weights (bakes' stored and returned dense weights).
void DenseToProto(const Eigen::MatrixXd& D, v1::DenseWeights* out);
// Sparse weights as they travel: k, then #V·k joints and weights.
void SparseToProto(const SparseWeights& W, v1::SparseWeights* out);

// A bake's report (every method's, from the core Bake) as the API shows it.
v1::BakeReport BakeReportToProto(const BakeReport& report);

// The content address of a rig: "rig-" + 32 hex digits of SHA-256 over the canonical
// (RigToProto ∘ RigFromProto) deterministic serialization of mesh, skeleton and weights (the
// display name and the output-only fields left out). Unchanged by the v1 API's renames: the
// renamed fields kept their numbers and wire types.
std::string RigId(const v1::Rig& canonical);
// `prefix` + 32 hex digits of SHA-256 over `leading` and the deterministic serialization of `m`
// (RigId; the server's bake ids).
std::string ContentAddress(absl::string_view prefix, absl::string_view leading, const google::protobuf::Message& m);

}  // namespace skinning

#endif  // SKINNING_SERVER_CONVERT_CONVERT_H_
