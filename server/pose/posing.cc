#include "server/pose/posing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/geometry/mesh.h"
#include "core/math/finite.h"
#include "core/skinning/lbs.h"
#include "core/util/status_macros.h"
#include "server/convert/convert.h"
#include "server/names.h"

namespace skinning {
namespace {

// Stretch and twist from the wire; values other than 1 / 0 only for deformers that take them.
absl::StatusOr<BoneStretchTwist> StretchTwistFromProto(const v1::Pose& pose, int num_joints, bool allowed,
                                                      const char* field) {
  BoneStretchTwist st;
  if (pose.bone_stretch_size() != 0 && pose.bone_stretch_size() != num_joints)
    return absl::InvalidArgumentError(absl::StrFormat("%s.bone_stretch has %d values for %d joints", field,
                                                      pose.bone_stretch_size(), num_joints));
  if (pose.bone_twist_size() != 0 && pose.bone_twist_size() != 2 * num_joints)
    return absl::InvalidArgumentError(absl::StrFormat("%s.bone_twist has %d values, expected 2 x %d joints", field,
                                                      pose.bone_twist_size(), num_joints));
  bool non_default = false;
  for (float s : pose.bone_stretch()) non_default |= s != 1.0f;
  for (float t : pose.bone_twist()) non_default |= t != 0.0f;
  if (non_default && !allowed)
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s.bone_stretch / bone_twist are only used by DEFORMER_STBS_LBS and DEFORMER_STBS_DQS", field));
  if (pose.bone_stretch_size() > 0) st.stretch.assign(pose.bone_stretch().begin(), pose.bone_stretch().end());
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

// The rest geometry of a frame: the rig's, or morphed by the pose's weights (empty: the
// targets' defaults). INVALID_ARGUMENT for a wrong count or a non-finite weight, and for
// weights that morph the mesh with a deformer that does not take morph targets.
absl::Status MorphFrame(const LoadedRig& rig, const Deformer& deformer, const v1::Pose& pose,
                        const char* field, FrameInput* frame) {
  frame->positions = rig.positions.data();
  frame->normals = rig.normals.empty() ? nullptr : rig.normals.data();
  const int nt = static_cast<int>(rig.morph_positions.size());
  if (pose.morph_weights_size() != 0 && pose.morph_weights_size() != nt)
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s.morph_weights has %d values; the rig has %d morph targets (give none or one each)",
        field, pose.morph_weights_size(), nt));
  const std::vector<MorphTarget>& targets = rig.rig.morph_targets;
  std::vector<float> weights(nt);
  for (int t = 0; t < nt; ++t) {
    weights[t] = pose.morph_weights_size() != 0 ? pose.morph_weights(t)
                                                : static_cast<float>(targets[t].default_weight);
    if (!std::isfinite(weights[t]))
      return absl::InvalidArgumentError(
          absl::StrFormat("%s.morph_weights[%d] is not finite", field, t));
  }
  for (const auto& [name, value] : pose.named_morph_weights()) {
    const auto it = std::find_if(targets.begin(), targets.end(),
                                 [&name = name](const MorphTarget& t) { return t.name == name; });
    if (it == targets.end())
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s.named_morph_weights: the rig has no morph target named '%s'", field, name));
    if (!std::isfinite(value))
      return absl::InvalidArgumentError(
          absl::StrFormat("%s.named_morph_weights['%s'] is not finite", field, name));
    weights[it - targets.begin()] = value;
  }
  bool any = false;
  for (float w : weights) any = any || w != 0.f;
  if (!any) return absl::OkStatus();
  if (!deformer.TakesMorphTargets())
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s.morph_weights: %s does not take morph targets yet; pose with all morph weights 0 "
        "(give them: the defaults are not all 0)",
        field, DeformerName(deformer.kind())));
  frame->morphed = true;
  frame->morphed_positions = rig.positions;
  bool normals = !rig.normals.empty();
  if (normals) frame->morphed_normals = rig.normals;
  for (int t = 0; t < nt; ++t) {
    const float w = weights[t];
    if (w == 0.f) continue;
    const std::vector<float>& dv = rig.morph_positions[t];
    for (size_t i = 0; i < dv.size(); ++i) frame->morphed_positions[i] += w * dv[i];
    const std::vector<float>& dn = rig.morph_normals[t];
    if (normals && !dn.empty()) {
      for (size_t i = 0; i < dn.size(); ++i) frame->morphed_normals[i] += w * dn[i];
    }
  }
  if (normals) {
    for (size_t i = 0; i + 2 < frame->morphed_normals.size(); i += 3) {
      float* n = &frame->morphed_normals[i];
      const float len = std::sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
      if (len > 0.f) n[0] /= len, n[1] /= len, n[2] /= len;
    }
    frame->normals = frame->morphed_normals.data();
  }
  frame->positions = frame->morphed_positions.data();
  return absl::OkStatus();
}

// A frame whose values, each in range, overflow float where they combine (scales of 1e20 down a
// chain, translations near 3.4e38, morph deltas, example corrections): INVALID_ARGUMENT naming
// the first joint or vertex, instead of an answer of infinities and NaNs.
absl::Status CheckFinite(const float* v, size_t n, int stride, const char* field, const char* what,
                         const Skeleton* skeleton = nullptr) {
  const int64_t at = FirstNonFinite(v, n);
  if (at < 0) return absl::OkStatus();
  const int64_t item = at / stride;
  const std::string name = skeleton != nullptr ? absl::StrCat(" (", skeleton->joints[item].name, ")") : "";
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s: the %s of %s %d%s is not finite: the pose's scales, translations, stretches or morph weights, "
      "or the rig's values, overflow float (±3.4e38) where they combine",
      field, what, skeleton != nullptr ? "joint" : "vertex", item, name));
}

// Every transform exactly the identity and no twist: the bind pose.
bool IsBindPose(const FrameInput& frame) {
  const auto zero = [](double a) { return a == 0; };
  return std::all_of(frame.transforms.begin(), frame.transforms.end(),
                     [](const Eigen::Affine3d& t) { return t.matrix() == Eigen::Matrix4d::Identity(); }) &&
         std::all_of(frame.stretch_twist.twist_a.begin(), frame.stretch_twist.twist_a.end(), zero) &&
         std::all_of(frame.stretch_twist.twist_b.begin(), frame.stretch_twist.twist_b.end(), zero);
}

}  // namespace

absl::StatusOr<PoseTarget> Poser::Open(const std::string& tenant, const std::string& rig, const std::string& bake,
                                       const char* rig_field, const char* bake_field) {
  ASSIGN_OR_RETURN(const std::string rig_id, ParseRigName(rig, rig_field));
  PoseTarget target;
  ASSIGN_OR_RETURN(target.rig, rigs_->GetForTenant(rig_id, tenant));
  if (bake.empty()) {
    if (target.rig->rig.has_weights()) target.weights = &target.rig->weights;
    return target;
  }
  ASSIGN_OR_RETURN(const BakeRef ref, ParseBakeName(bake, bake_field));
  if (ref.rig_id != rig_id)
    return absl::InvalidArgumentError(
        absl::StrCat(bake_field, " '", bake, "' belongs to rig '", RigName(ref.rig_id), "', not '", rig, "'"));
  ASSIGN_OR_RETURN(target.bake, bakes_->Result(ref));
  RETURN_IF_ERROR(target.bake->recipe->CheckPoseable(*target.bake));
  // Bakes without bone weights (swing/twist, elastic) are for the deformers that read them.
  if (target.bake->bone_weights) target.weights = &target.bake->sparse;
  return target;
}

bool Poser::Resident(const std::string& tenant, const std::string& rig, const std::string& bake,
                      v1::Deformer kind) {
  // A malformed name is refused without the store.
  absl::StatusOr<std::string> rig_id = ParseRigName(rig, "rig");
  if (!rig_id.ok()) return true;
  if (!rigs_->Resident(*rig_id, tenant)) return false;
  if (!bake.empty()) {
    absl::StatusOr<BakeRef> ref = ParseBakeName(bake, "bake");
    if (ref.ok() && ref->rig_id == *rig_id && !bakes_->Resident(tenant, *ref)) return false;
  }
  return PsdResident(tenant, *rig_id, kind);
}

bool Poser::Resident(const std::string& tenant, const PoseTarget& target, v1::Deformer kind) {
  return target.rig != nullptr && PsdResident(tenant, target.rig->id, kind);
}

bool Poser::PsdResident(const std::string& tenant, const std::string& rig_id, v1::Deformer kind) {
  if (psd_ == nullptr) return true;
  absl::StatusOr<const Deformer*> deformer = deformers_->Find(kind);
  return !deformer.ok() || !(*deformer)->UsesPsdModel() || psd_->Resident(rig_id, tenant);
}

absl::Status Poser::StillStored(const PoseTarget& target, const std::string& tenant) {
  return bakes_->StillStored(tenant, target.rig->id, target.bake ? target.bake->bake_id : "");
}

absl::StatusOr<const Deformer*> Poser::Use(v1::Deformer kind, const std::string& tenant, PoseTarget* target) {
  ASSIGN_OR_RETURN(const Deformer* deformer, deformers_->Find(kind));
  target->psd.reset();
  if (psd_ != nullptr && deformer->UsesPsdModel()) {
    ASSIGN_OR_RETURN(target->psd, psd_->Get(*target->rig, tenant, target->weights,
                                            target->bake ? target->bake->name : "", kind));
  }
  return deformer;
}

absl::Status Poser::Frame(const PoseTarget& target, const Deformer& deformer, const v1::Pose& pose,
                          const v1::PoseOutputs& outputs, v1::PosedFrame* out, const char* field,
                          FrameMemory* memory) const {
  if (frames_ == nullptr) return FrameUntimed(target, deformer, pose, outputs, out, field, memory);
  const auto start = std::chrono::steady_clock::now();
  absl::Status s = FrameUntimed(target, deformer, pose, outputs, out, field, memory);
  if (s.ok())
    frames_->OnFrame(deformer.kind(), std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return s;
}

absl::Status Poser::FrameUntimed(const PoseTarget& target, const Deformer& deformer, const v1::Pose& pose_proto,
                                 const v1::PoseOutputs& outputs, v1::PosedFrame* out, const char* field,
                                 FrameMemory* memory) const {
  const LoadedRig& rig = *target.rig;
  const bool want_transforms = outputs.transforms();
  const bool want_vertices = outputs.vertices() || (!want_transforms && !outputs.normals());
  const bool want_geometry = want_vertices || outputs.normals();
  RETURN_IF_ERROR(deformer.CheckTarget(target, want_geometry));

  // The pose, decoded once.
  FrameInput frame;
  frame.memory = memory;
  ASSIGN_OR_RETURN(frame.pose, PoseFromProto(pose_proto, rig.rig.skeleton, field));
  ASSIGN_OR_RETURN(frame.stretch_twist,
                   StretchTwistFromProto(pose_proto, rig.rig.skeleton.size(), deformer.TakesStretchTwist(), field));
  ASSIGN_OR_RETURN(frame.transforms, deformer.Transforms(target, frame.pose, frame.stretch_twist, field));
  frame.transforms34 = ToRowMajor34(frame.transforms);
  RETURN_IF_ERROR(CheckFinite(frame.transforms34.data(), frame.transforms34.size(), 12, field, "skinning transform",
                              &rig.rig.skeleton));
  RETURN_IF_ERROR(MorphFrame(rig, deformer, pose_proto, field, &frame));
  if (frame.morphed)
    RETURN_IF_ERROR(CheckFinite(frame.morphed_positions.data(), frame.morphed_positions.size(), 3, field,
                                "morphed position"));
  if (want_transforms) {
    out->mutable_transforms()->Resize(static_cast<int>(frame.transforms34.size()), 0.f);
    std::copy(frame.transforms34.begin(), frame.transforms34.end(), out->mutable_transforms()->mutable_data());
  }
  if (!want_geometry) return absl::OkStatus();
  // Prepared here, by the first frame that skins vertices, not by transforms-only frames.
  if (deformer.UsesDqsLaneOrder() && target.weights != nullptr)
    frame.dqs_lanes = target.bake ? &bakes_->store().DqsLanes(*target.bake) : &rigs_->DqsLanes(*target.rig);

  FrameOutput geometry;
  geometry.vertex_count = static_cast<int>(rig.positions.size() / 3);
  const int n3 = 3 * geometry.vertex_count;
  std::vector<float> scratch;  // positions that are not returned (normals only)
  if (want_vertices) {
    out->mutable_vertices()->Resize(n3, 0.f);
    geometry.positions = out->mutable_vertices()->mutable_data();
  } else {
    scratch.resize(n3);
    geometry.positions = scratch.data();
  }
  if (outputs.normals() && !rig.normals.empty()) {
    out->mutable_normals()->Resize(n3, 0.f);
    geometry.normals = out->mutable_normals()->mutable_data();
  }
  // The bind pose gives the input back bit for bit (blending identities with float weights
  // would be off by rounding).
  if (deformer.KeepsBindPose(target) && IsBindPose(frame)) {
    std::copy(frame.positions, frame.positions + n3, geometry.positions);
    if (geometry.normals != nullptr) std::copy(frame.normals, frame.normals + n3, geometry.normals);
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(deformer.Deform(target, frame, &geometry));
  RETURN_IF_ERROR(CheckFinite(geometry.positions, n3, 3, field, "posed position"));
  if (geometry.normals != nullptr && !geometry.normals_written) {
    // Area-weighted normals of the posed surface.
    RowMatrixX3d P(geometry.vertex_count, 3);
    for (int i = 0; i < n3; ++i) P.data()[i] = geometry.positions[i];
    const RowMatrixX3d N = PerVertexNormals(P, rig.rig.mesh.F);
    for (int i = 0; i < n3; ++i) geometry.normals[i] = static_cast<float>(N.data()[i]);
  }
  if (geometry.normals != nullptr) RETURN_IF_ERROR(CheckFinite(geometry.normals, n3, 3, field, "posed normal"));
  return absl::OkStatus();
}

}  // namespace skinning
