#include "server/pose/psd_models.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/geometry/mesh.h"
#include "core/skinning/psd.h"
#include "core/util/status_macros.h"
#include "server/convert/convert.h"
#include "server/names.h"
#include "server/pose/deformer.h"

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
  ASSIGN_OR_RETURN(out.pose, PoseFromProto(e.pose(), skeleton, field.c_str()));
  const int n = e.positions_size() / 3;
  out.V.resize(n, 3);
  for (int i = 0; i < 3 * n; ++i) out.V.data()[i] = e.positions(i);
  return out;
}

// The core options of a PSD deformer; false for other deformers.
bool PsdOptionsOf(v1::Deformer kind, PsdOptions* options) {
  switch (kind) {
    case v1::DEFORMER_PSD_LBS:
    case v1::DEFORMER_PSD_SUPPORT_LBS:
      options->base = PsdBase::kLbs;
      break;
    case v1::DEFORMER_PSD_DQS:
    case v1::DEFORMER_PSD_SUPPORT_DQS:
      options->base = PsdBase::kDqs;
      break;
    default:
      return false;
  }
  options->support_joints = kind == v1::DEFORMER_PSD_SUPPORT_LBS || kind == v1::DEFORMER_PSD_SUPPORT_DQS;
  return true;
}

}  // namespace

absl::Status ValidateNewExample(const LoadedRig& rig, const internal::v1::StoredExamples& existing,
                                const v1::Example& added) {
  const Skeleton& skeleton = rig.rig.skeleton;
  std::vector<PsdExample> all;
  all.reserve(existing.examples_size() + 1);
  for (int k = 0; k < existing.examples_size(); ++k) {
    absl::StatusOr<PsdExample> e =
        ToPsdExample(existing.examples(k), skeleton, absl::StrFormat("stored examples[%d].pose", k));
    if (!e.ok()) return absl::DataLossError(absl::StrCat("rig '", RigName(rig.id), "': ", e.status().message()));
    all.push_back(*std::move(e));
  }
  ASSIGN_OR_RETURN(PsdExample e, ToPsdExample(added, skeleton, "example.pose"));
  for (const PsdExample& old : all)
    if (SamePose(old.pose, e.pose))
      return absl::InvalidArgumentError(absl::StrCat(
          "example.pose: example '", added.name(), "' has the pose of example '", old.name,
          "' (two shapes at one pose cannot both be interpolated; delete that example first)"));
  all.push_back(std::move(e));
  if (absl::Status s = ValidateExamples(skeleton, static_cast<int>(rig.positions.size() / 3), all,
                                        BoundingBoxDiagonal(rig.rig.mesh.V), "examples");
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
                                                                const SparseWeights* weights, const std::string& bake,
                                                                v1::Deformer kind) {
  PsdOptions options;
  if (weights == nullptr || !PsdOptionsOf(kind, &options)) return std::shared_ptr<const PsdModel>();
  ASSIGN_OR_RETURN(const ExampleSet set, examples_->Get(rig.id, tenant));
  if (set.stored->examples_size() == 0) return std::shared_ptr<const PsdModel>();
  const std::string key = absl::StrCat(tenant, "|", rig.id, "|", set.fingerprint, "|", bake.empty() ? "rig" : bake,
                                       "|", static_cast<int>(kind));
  if (std::shared_ptr<const PsdModel> hit = cache_.Find(key)) return hit;
  std::lock_guard<std::mutex> lock(build_mu_[std::hash<std::string>()(key) % build_mu_.size()]);
  if (std::shared_ptr<const PsdModel> hit = cache_.Find(key)) return hit;  // built meanwhile
  {
    std::lock_guard<std::mutex> stats(stats_mu_);
    if (auto it = failures_.find(key); it != failures_.end()) return it->second;
  }

  const internal::v1::StoredExamples& stored = *set.stored;
  std::vector<PsdExample> examples;
  for (int k = 0; k < stored.examples_size(); ++k) {
    absl::StatusOr<PsdExample> e =
        ToPsdExample(stored.examples(k), rig.rig.skeleton, absl::StrFormat("stored examples[%d].pose", k));
    if (!e.ok()) return absl::DataLossError(absl::StrCat("rig '", RigName(rig.id), "': ", e.status().message()));
    examples.push_back(*std::move(e));
  }
  PsdReport report;
  absl::StatusOr<std::shared_ptr<const PsdModel>> model =
      PsdModel::Build(rig.rig.mesh, rig.rig.skeleton, *weights, examples, options, &report);
  if (!model.ok()) {
    absl::Status failed(model.status().code(),
                        absl::StrCat(DeformerName(kind), " with the ", examples.size(), " examples of rig '",
                                     RigName(rig.id), "': ", model.status().message()));
    if (absl::IsInvalidArgument(failed) || absl::IsFailedPrecondition(failed)) {
      std::lock_guard<std::mutex> stats(stats_mu_);
      if (failures_.size() >= kRememberedFailures) failures_.clear();
      failures_.emplace(key, failed);
      ++failed_builds_;
    }
    return failed;
  }
  // Displacements (sparse, at most #V per example) plus the model's copies of the mesh and weights
  // (and, over DQS, the weights again in their lane order).
  const size_t n = rig.positions.size() / 3;
  const size_t bytes = sizeof(PsdModel) + n * 3 * 8 * (examples.size() + 4) + n * (weights->k() * 16 + 68);
  cache_.Insert(key, *model, bytes);
  {
    std::lock_guard<std::mutex> stats(stats_mu_);
    ++builds_;
  }
  return model;
}

}  // namespace skinning
