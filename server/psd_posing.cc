#include "server/psd_posing.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/geometry/mesh.h"
#include "core/skinning/lbs.h"
#include "core/skinning/psd.h"
#include "server/convert/convert.h"

namespace skinning {
namespace {

// Two stored (float) poses are the same pose when every joint's local transform agrees to
// within float rounding: rotations within kSamePoseRadians (q and −q are the same rotation),
// translations and scales within kSamePoseTolerance.
constexpr double kSamePoseRadians = 1e-6;
constexpr double kSamePoseTolerance = 1e-6;

bool SamePose(const Pose& a, const Pose& b) {
  if (a.local.size() != b.local.size()) return false;
  for (size_t j = 0; j < a.local.size(); ++j) {
    const Transform& s = a.local[j];
    const Transform& t = b.local[j];
    if (s.rotation.angularDistance(t.rotation) > kSamePoseRadians) return false;
    if ((s.translation - t.translation).norm() > kSamePoseTolerance * std::max(1.0, s.translation.norm())) return false;
    if ((s.scale - t.scale).norm() > kSamePoseTolerance * std::max(1.0, s.scale.norm())) return false;
  }
  return true;
}

// A stored example as core data (its pose was validated when it was added).
absl::StatusOr<PsdExample> ToPsdExample(const v1::Example& e, const Skeleton& skeleton, const std::string& field) {
  PsdExample out;
  out.name = e.name();
  absl::StatusOr<Pose> pose = PoseFromProto(e.pose(), skeleton, field.c_str());
  if (!pose.ok()) return pose.status();
  out.pose = *std::move(pose);
  const int n = e.positions_size() / 3;
  out.V.resize(n, 3);
  for (int i = 0; i < 3 * n; ++i) out.V.data()[i] = e.positions(i);
  return out;
}

// Non-default stretch or twist: PSD poses plain skeletons.
absl::Status CheckNoStretchOrTwist(const v1::Pose& pose, const char* field) {
  for (int j = 0; j < pose.bone_stretch_size(); ++j)
    if (pose.bone_stretch(j) != 1.f)
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s.bone_stretch[%d] = %g: stretchable bones are METHOD_STBS_*, not the PSD methods", field, j,
          pose.bone_stretch(j)));
  for (int j = 0; j < pose.bone_twist_size(); ++j)
    if (pose.bone_twist(j) != 0.f)
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s.bone_twist[%d] = %g: twistable bones are METHOD_STBS_*, not the PSD methods", field, j,
          pose.bone_twist(j)));
  return absl::OkStatus();
}

const char* MethodName(v1::Method m) {
  switch (m) {
    case v1::METHOD_PSD_LBS:
      return "METHOD_PSD_LBS";
    case v1::METHOD_PSD_DQS:
      return "METHOD_PSD_DQS";
    case v1::METHOD_PSD_SUPPORT_LBS:
      return "METHOD_PSD_SUPPORT_LBS";
    case v1::METHOD_PSD_SUPPORT_DQS:
      return "METHOD_PSD_SUPPORT_DQS";
    default:
      return "?";
  }
}

}  // namespace

bool IsPsdMethod(v1::Method method) {
  return method == v1::METHOD_PSD_LBS || method == v1::METHOD_PSD_DQS || method == v1::METHOD_PSD_SUPPORT_LBS ||
         method == v1::METHOD_PSD_SUPPORT_DQS;
}

v1::Method PsdBaseMethod(v1::Method method) {
  return method == v1::METHOD_PSD_DQS || method == v1::METHOD_PSD_SUPPORT_DQS ? v1::METHOD_DQS : v1::METHOD_LBS;
}

absl::Status ValidateNewExample(const LoadedRig& rig, const v1::StoredExamples& existing, const v1::Example& added) {
  const Skeleton& skeleton = rig.rig.skeleton;
  std::vector<PsdExample> all;
  all.reserve(existing.examples_size() + 1);
  for (int k = 0; k < existing.examples_size(); ++k) {
    absl::StatusOr<PsdExample> e =
        ToPsdExample(existing.examples(k), skeleton, absl::StrFormat("stored examples[%d].pose", k));
    if (!e.ok()) return absl::DataLossError(absl::StrCat("rig '", rig.id, "': ", e.status().message()));
    all.push_back(*std::move(e));
  }
  absl::StatusOr<PsdExample> e = ToPsdExample(added, skeleton, "example.pose");
  if (!e.ok()) return e.status();
  for (const PsdExample& old : all)
    if (SamePose(old.pose, e->pose))
      return absl::InvalidArgumentError(absl::StrCat(
          "example.pose: example '", added.name(), "' has the pose of example '", old.name,
          "' (two shapes at one pose cannot both be interpolated; remove that example first)"));
  all.push_back(*std::move(e));
  if (absl::Status s = ValidateExamples(skeleton, static_cast<int>(rig.positions.size() / 3), all, "examples");
      !s.ok())
    return absl::Status(s.code(), absl::StrFormat("example '%s' (examples[%d] with the rig's %d examples): %s",
                                                  added.name(), existing.examples_size(),
                                                  existing.examples_size(), s.message()));
  return absl::OkStatus();
}

PsdModels::PsdModels(ExampleStore* examples, size_t cache_bytes) : examples_(examples), cache_(cache_bytes) {}

uint64_t PsdModels::builds() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  return builds_;
}

uint64_t PsdModels::failed_builds() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  return failed_builds_;
}

absl::StatusOr<std::shared_ptr<const PsdModel>> PsdModels::Get(const LoadedRig& rig, const std::string& tenant,
                                                                const SparseWeights* weights, const std::string& bake_id,
                                                                v1::Method method) {
  if (weights == nullptr || !IsPsdMethod(method)) return std::shared_ptr<const PsdModel>();
  absl::StatusOr<ExampleSet> set = examples_->Get(rig.id, tenant);
  if (!set.ok()) return set.status();
  if (set->stored->examples_size() == 0) return std::shared_ptr<const PsdModel>();
  const std::string key = absl::StrCat(tenant, "|", rig.id, "|", set->fingerprint, "|",
                                       bake_id.empty() ? "rig" : bake_id, "|", static_cast<int>(method));
  if (std::shared_ptr<const PsdModel> hit = cache_.Find(key)) return hit;
  std::lock_guard<std::mutex> lock(build_mu_[std::hash<std::string>()(key) % build_mu_.size()]);
  if (std::shared_ptr<const PsdModel> hit = cache_.Find(key)) return hit;  // built meanwhile
  {
    std::lock_guard<std::mutex> stats(stats_mu_);
    if (auto it = failures_.find(key); it != failures_.end()) return it->second;
  }

  const v1::StoredExamples& stored = *set->stored;
  std::vector<PsdExample> examples;
  for (int k = 0; k < stored.examples_size(); ++k) {
    absl::StatusOr<PsdExample> e =
        ToPsdExample(stored.examples(k), rig.rig.skeleton, absl::StrFormat("stored examples[%d].pose", k));
    if (!e.ok()) return absl::DataLossError(absl::StrCat("rig '", rig.id, "': ", e.status().message()));
    examples.push_back(*std::move(e));
  }
  PsdOptions options;
  options.base = PsdBaseMethod(method) == v1::METHOD_DQS ? PsdBase::kDqs : PsdBase::kLbs;
  options.support_joints = method == v1::METHOD_PSD_SUPPORT_LBS || method == v1::METHOD_PSD_SUPPORT_DQS;
  PsdReport report;
  absl::StatusOr<std::shared_ptr<const PsdModel>> model =
      PsdModel::Build(rig.rig.mesh, rig.rig.skeleton, *weights, examples, options, &report);
  if (!model.ok()) {
    absl::Status failed(model.status().code(), absl::StrCat(MethodName(method), " with the ", examples.size(),
                                                            " examples of rig '", rig.id, "': ", model.status().message()));
    if (absl::IsInvalidArgument(failed) || absl::IsFailedPrecondition(failed)) {
      std::lock_guard<std::mutex> stats(stats_mu_);
      if (failures_.size() >= kRememberedFailures) failures_.clear();
      failures_.emplace(key, failed);
      ++failed_builds_;
    }
    return failed;
  }
  // Displacements (sparse, at most #V per example) plus the model's copies of the mesh.
  const size_t n = rig.positions.size() / 3;
  const size_t bytes = sizeof(PsdModel) + n * 3 * 8 * (examples.size() + 4) + n * (weights->k() * 8 + 64);
  cache_.Insert(key, *model, bytes);
  {
    std::lock_guard<std::mutex> stats(stats_mu_);
    ++builds_;
  }
  return model;
}

absl::Status PosePsdFrame(const PoseContext& ctx, const v1::Pose& pose_proto, v1::Method method,
                          const v1::PoseOutputs& outputs, v1::PosedFrame* out, const char* field) {
  if (auto s = CheckNoStretchOrTwist(pose_proto, field); !s.ok()) return s;
  if (ctx.psd == nullptr) return PoseFrame(ctx, pose_proto, PsdBaseMethod(method), outputs, out, field);
  const LoadedRig& rig = *ctx.rig;
  const bool want_transforms = outputs.transforms();
  const bool want_normals = outputs.normals() && !rig.normals.empty();
  const bool want_vertices = outputs.vertices() || (!want_transforms && !outputs.normals());
  absl::StatusOr<Pose> pose = PoseFromProto(pose_proto, rig.rig.skeleton, field);
  if (!pose.ok()) return pose.status();
  if (want_transforms) {
    absl::StatusOr<std::vector<Eigen::Affine3d>> T = SkinningTransforms(rig.rig.skeleton, rig.order, *pose);
    if (!T.ok()) return T.status();
    SetTransforms(ToRowMajor34(*T), out);
  }
  if (!want_vertices && !want_normals) return absl::OkStatus();
  const int n = static_cast<int>(rig.positions.size() / 3);
  std::vector<float> scratch;
  float* U = PositionsOutput(n, want_vertices, out, &scratch);
  if (auto s = ctx.psd->DeformFloat(*pose, U); !s.ok()) return s;
  if (want_normals) {
    out->mutable_normals()->Resize(3 * n, 0.f);
    NormalsOfPositions(U, n, rig.rig.mesh.F, out->mutable_normals()->mutable_data());
  }
  return absl::OkStatus();
}

}  // namespace skinning
