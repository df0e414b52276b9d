#include "server/posing.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/skinning/dqs.h"
#include "core/skinning/lbs.h"
#include "server/convert.h"
#include "server/psd_posing.h"

namespace skinning {

absl::Status PoseFrame(const PoseContext& ctx, const v1::Pose& pose_proto, v1::Method method,
                       const v1::PoseOutputs& outputs, v1::PosedFrame* out, const char* field) {
  // Pose space deformation (its own file; falls back to LBS / DQS without examples).
  if (IsPsdMethod(method)) return PosePsdFrame(ctx, pose_proto, method, outputs, out, field);
  const LoadedRig& rig = *ctx.rig;
  const SparseWeights* weights = ctx.weights;
  if (method != v1::METHOD_UNSPECIFIED && method != v1::METHOD_LBS && method != v1::METHOD_DQS)
    return absl::InvalidArgumentError(absl::StrFormat("method %d is not supported (LBS or DQS)", method));
  const bool want_transforms = outputs.transforms();
  const bool want_normals = outputs.normals();
  const bool want_vertices = outputs.vertices() || (!want_transforms && !want_normals);
  if ((want_vertices || want_normals) && weights == nullptr)
    return absl::FailedPreconditionError(absl::StrCat(
        "rig '", rig.id,
        "' has no skinning weights: bake them first (StartBake with rig_id '", rig.id,
        "', method BBW, bone heat or geodesic voxel; or skinctl bake) and pose with the bake's "
        "bake_id"));
  absl::StatusOr<Pose> pose = PoseFromProto(pose_proto, rig.rig.skeleton, field);
  if (!pose.ok()) return pose.status();
  absl::StatusOr<std::vector<Eigen::Affine3d>> T = SkinningTransforms(rig.rig.skeleton, rig.order, *pose);
  if (!T.ok()) return T.status();
  const std::vector<float> T34 = ToRowMajor34(*T);
  if (want_transforms) {
    out->mutable_transforms()->Resize(static_cast<int>(T34.size()), 0.f);
    std::copy(T34.begin(), T34.end(), out->mutable_transforms()->mutable_data());
  }
  if (!want_vertices && !want_normals) return absl::OkStatus();

  const int n = static_cast<int>(rig.positions.size() / 3);
  const bool normals = want_normals && !rig.normals.empty();
  std::vector<float> scratch;
  float* U;
  if (want_vertices) {
    out->mutable_vertices()->Resize(3 * n, 0.f);
    U = out->mutable_vertices()->mutable_data();
  } else {
    scratch.resize(3 * n);
    U = scratch.data();
  }
  float* NU = nullptr;
  if (normals) {
    out->mutable_normals()->Resize(3 * n, 0.f);
    NU = out->mutable_normals()->mutable_data();
  }
  const float* N = normals ? rig.normals.data() : nullptr;
  // Every transform exactly the identity (the bind pose): the output is the input, bit for bit
  // (blending identities with float weights would be off by rounding).
  const bool identity = std::all_of(T->begin(), T->end(), [](const Eigen::Affine3d& t) {
    return t.matrix() == Eigen::Matrix4d::Identity();
  });
  if (identity) {
    std::copy(rig.positions.begin(), rig.positions.end(), U);
    if (NU) std::copy(rig.normals.begin(), rig.normals.end(), NU);
    return absl::OkStatus();
  }
  const SparseWeights& W = *weights;
  if (method == v1::METHOD_DQS) {
    const DqsTransformsFloat prepared = PrepareDqsFloat(*T);
    DqsFloat(rig.positions.data(), n, W.joints.data(), W.weights.data(), W.k(), prepared, U, N, NU);
  } else {
    LbsFloat(rig.positions.data(), n, W.joints.data(), W.weights.data(), W.k(), T34.data(), U, N, NU);
  }
  return absl::OkStatus();
}

}  // namespace skinning
