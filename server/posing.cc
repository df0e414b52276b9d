#include "server/posing.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/geometry/mesh.h"
#include "core/skinning/dqs.h"
#include "core/skinning/lbs.h"
#include "core/skinning/stbs.h"
#include "core/skinning/swing_twist.h"
#include "core/solve/elastic.h"
#include "server/convert/convert.h"
#include "server/psd_posing.h"

namespace skinning {
namespace {

bool IsStbs(v1::Method m) { return m == v1::METHOD_STBS_LBS || m == v1::METHOD_STBS_DQS; }

// Whether the method can run with what the context has; FAILED_PRECONDITION names the bake to run.
absl::Status CheckMethodInputs(const PoseContext& ctx, v1::Method method, bool want_geometry) {
  const LoadedRig& rig = *ctx.rig;
  const LoadedBake* bake = ctx.bake;
  const std::string bake_id = bake ? bake->bake_id : "";
  auto needs = [&](const char* method_name, const char* bake_method) {
    return absl::FailedPreconditionError(absl::StrCat(
        method_name, " needs a ", bake_method, " bake of rig '", rig.id, "': run StartBake with method ", bake_method,
        " and pose with its bake_id", bake ? absl::StrCat(" (bake_id '", bake_id, "' is a ", bake->report.method(), " bake)") : ""));
  };
  if (method == v1::METHOD_SWING_TWIST) {
    if (!bake || !bake->swing_twist) return needs("METHOD_SWING_TWIST", "BAKE_METHOD_SWING_TWIST");
    return absl::OkStatus();
  }
  if (method == v1::METHOD_ELASTIC) {
    if (!bake || !bake->elastic) return needs("METHOD_ELASTIC", "BAKE_METHOD_ELASTIC_MODEL");
    return absl::OkStatus();
  }
  if (IsStbs(method) && want_geometry && (!bake || bake->endpoint_aligned.rows() == 0))
    return needs(v1::Method_Name(method).c_str(), "BAKE_METHOD_ENDPOINT");
  if (bake && !bake->has_weights())
    return absl::InvalidArgumentError(absl::StrCat(
        "bake_id '", bake_id, "' is a ", bake->report.method(), " bake without bone weights: pose it with ",
        bake->swing_twist ? "METHOD_SWING_TWIST" : "METHOD_ELASTIC", " (or give a weights bake for ",
        v1::Method_Name(method), ")"));
  if (want_geometry && ctx.weights == nullptr)
    return absl::FailedPreconditionError(absl::StrCat(
        "rig '", rig.id,
        "' has no skinning weights: bake them first (StartBake with rig_id '", rig.id,
        "', method BBW, bone heat or geodesic voxel; or skinctl bake) and pose with the bake's "
        "bake_id"));
  return absl::OkStatus();
}

// Stretch and twist from the wire. Only the STBS methods take non-default values.
absl::StatusOr<BoneStretchTwist> StretchTwistFromProto(const v1::Pose& pose, int num_joints, bool stbs,
                                                      const char* field) {
  BoneStretchTwist st;
  if (pose.bone_stretch_size() != 0 && pose.bone_stretch_size() != num_joints)
    return absl::InvalidArgumentError(absl::StrFormat("%s.bone_stretch has %d values for %d joints", field,
                                                      pose.bone_stretch_size(), num_joints));
  if (pose.bone_twist_size() != 0 && pose.bone_twist_size() != 2 * num_joints)
    return absl::InvalidArgumentError(absl::StrFormat("%s.bone_twist has %d values, expected 2 x %d joints", field,
                                                      pose.bone_twist_size(), num_joints));
  bool non_default = false;
  for (int j = 0; j < pose.bone_stretch_size(); ++j) non_default |= pose.bone_stretch(j) != 1.0f;
  for (int j = 0; j < pose.bone_twist_size(); ++j) non_default |= pose.bone_twist(j) != 0.0f;
  if (non_default && !stbs)
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s.bone_stretch / bone_twist are only used by METHOD_STBS_LBS and METHOD_STBS_DQS", field));
  if (pose.bone_stretch_size() > 0) {
    st.stretch.resize(num_joints);
    for (int j = 0; j < num_joints; ++j) st.stretch[j] = pose.bone_stretch(j);
  }
  if (pose.bone_twist_size() > 0) {
    st.twist_a.resize(num_joints);
    st.twist_b.resize(num_joints);
    for (int j = 0; j < num_joints; ++j) {
      st.twist_a[j] = pose.bone_twist(2 * j);
      st.twist_b[j] = pose.bone_twist(2 * j + 1);
    }
  }
  return st;
}

void CopyToFloats(const RowMatrixX3d& U, float* out) {
  for (int i = 0; i < U.size(); ++i) out[i] = static_cast<float>(U.data()[i]);
}

}  // namespace

absl::Status PoseFrame(const PoseContext& ctx, const v1::Pose& pose_proto, v1::Method method,
                       const v1::PoseOutputs& outputs, v1::PosedFrame* out, const char* field) {
  const LoadedRig& rig = *ctx.rig;
  if (!v1::Method_IsValid(method))
    return absl::InvalidArgumentError(absl::StrFormat("method %d is not a pose method", method));
  // Pose space deformation (its own file; falls back to LBS / DQS without examples).
  if (IsPsdMethod(method)) {
    absl::StatusOr<BoneStretchTwist> st =
        StretchTwistFromProto(pose_proto, rig.rig.skeleton.size(), /*stbs=*/false, field);
    if (!st.ok()) return st.status();
    return PosePsdFrame(ctx, pose_proto, method, outputs, out, field);
  }
  const bool want_transforms = outputs.transforms();
  const bool want_normals = outputs.normals();
  const bool want_vertices = outputs.vertices() || (!want_transforms && !want_normals);
  const bool want_geometry = want_vertices || want_normals;
  if (auto s = CheckMethodInputs(ctx, method, want_geometry); !s.ok()) return s;
  absl::StatusOr<Pose> pose = PoseFromProto(pose_proto, rig.rig.skeleton, field);
  if (!pose.ok()) return pose.status();
  const int num_joints = rig.rig.skeleton.size();
  absl::StatusOr<BoneStretchTwist> st = StretchTwistFromProto(pose_proto, num_joints, IsStbs(method), field);
  if (!st.ok()) return st.status();
  absl::StatusOr<std::vector<Eigen::Affine3d>> T = absl::InternalError("unset");
  if (IsStbs(method) && ctx.bake != nullptr && !ctx.bake->bones.empty()) {
    if (auto s = ValidateStretchTwist(rig.rig.skeleton, ctx.bake->bones, *st, field); !s.ok()) return s;
    T = StretchedSkinningTransforms(rig.rig.skeleton, rig.order, *pose, ctx.bake->bones, *st);
  } else {
    if (IsStbs(method) && (!st->stretch.empty() || !st->twist_a.empty()))
      return absl::FailedPreconditionError(absl::StrCat(
          v1::Method_Name(method), " with bone_stretch / bone_twist needs a BAKE_METHOD_ENDPOINT bake_id"));
    T = SkinningTransforms(rig.rig.skeleton, rig.order, *pose);
  }
  if (!T.ok()) return T.status();
  const std::vector<float> T34 = ToRowMajor34(*T);
  if (want_transforms) SetTransforms(T34, out);
  if (!want_geometry) return absl::OkStatus();

  const int n = static_cast<int>(rig.positions.size() / 3);
  const bool normals = want_normals && !rig.normals.empty();
  std::vector<float> scratch;
  float* U = PositionsOutput(n, want_vertices, out, &scratch);
  float* NU = nullptr;
  if (normals) {
    out->mutable_normals()->Resize(3 * n, 0.f);
    NU = out->mutable_normals()->mutable_data();
  }
  const float* N = normals ? rig.normals.data() : nullptr;
  // Every transform exactly the identity and no stretch or twist (the bind pose): the output is
  // the input, bit for bit (blending identities with float weights would be off by rounding).
  const bool identity =
      std::all_of(T->begin(), T->end(),
                  [](const Eigen::Affine3d& t) { return t.matrix() == Eigen::Matrix4d::Identity(); }) &&
      std::all_of(st->twist_a.begin(), st->twist_a.end(), [](double a) { return a == 0; }) &&
      std::all_of(st->twist_b.begin(), st->twist_b.end(), [](double a) { return a == 0; });
  if (identity) {
    std::copy(rig.positions.begin(), rig.positions.end(), U);
    if (NU) std::copy(rig.normals.begin(), rig.normals.end(), NU);
    return absl::OkStatus();
  }
  // The LBS and DQS kernels transform normals themselves; the other methods recompute them from
  // the posed surface.
  bool recompute_normals = normals;
  switch (method) {
    case v1::METHOD_DQS: {
      const SparseWeights& W = *ctx.weights;
      const DqsTransformsFloat prepared = PrepareDqsFloat(*T);
      DqsFloat(rig.positions.data(), n, W.joints.data(), W.weights.data(), W.k(), prepared, U, N, NU);
      recompute_normals = false;
      break;
    }
    case v1::METHOD_STBS_LBS:
    case v1::METHOD_STBS_DQS: {
      const LoadedBake& b = *ctx.bake;
      const StbsFrameFloat frame = PrepareStbsFloat(b.bones, *T, *st);
      StbsFloat(rig.positions.data(), n, b.sparse, b.endpoint_aligned, frame, method == v1::METHOD_STBS_DQS, U);
      break;
    }
    case v1::METHOD_SWING_TWIST: {
      const LoadedBake& b = *ctx.bake;
      const SwingTwistFrameFloat frame = PrepareSwingTwistFloat(b.frames, *T);
      SwingTwistFloat(rig.positions.data(), n, *b.swing_twist, frame, U);
      break;
    }
    case v1::METHOD_ELASTIC: {
      const ElasticModel& model = *ctx.bake->elastic;
      absl::StatusOr<RowMatrixX3d> X = model.Solve(*T, nullptr, ElasticOptions());
      if (!X.ok()) return X.status();
      CopyToFloats(model.ToMesh(*X), U);
      break;
    }
    default: {  // LBS
      const SparseWeights& W = *ctx.weights;
      LbsFloat(rig.positions.data(), n, W.joints.data(), W.weights.data(), W.k(), T34.data(), U, N, NU);
      recompute_normals = false;
    }
  }
  if (recompute_normals) NormalsOfPositions(U, n, rig.rig.mesh.F, NU);
  return absl::OkStatus();
}

void SetTransforms(const std::vector<float>& T34, v1::PosedFrame* out) {
  out->mutable_transforms()->Resize(static_cast<int>(T34.size()), 0.f);
  std::copy(T34.begin(), T34.end(), out->mutable_transforms()->mutable_data());
}

float* PositionsOutput(int n, bool returned, v1::PosedFrame* out, std::vector<float>* scratch) {
  if (!returned) {
    scratch->resize(3 * static_cast<size_t>(n));
    return scratch->data();
  }
  out->mutable_vertices()->Resize(3 * n, 0.f);
  return out->mutable_vertices()->mutable_data();
}

void NormalsOfPositions(const float* U, int n, const RowMatrixX3i& F, float* NU) {
  RowMatrixX3d P(n, 3);
  for (int i = 0; i < 3 * n; ++i) P.data()[i] = U[i];
  const RowMatrixX3d PN = PerVertexNormals(P, F);
  for (int i = 0; i < 3 * n; ++i) NU[i] = static_cast<float>(PN.data()[i]);
}

}  // namespace skinning
