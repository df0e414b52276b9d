#include "server/fast/fast_solver.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/math/finite.h"
#include "core/rig/skeleton.h"
#include "core/skinning/lbs.h"
#include "core/util/status_macros.h"
#include "server/bake/recipes/fast_model.h"

namespace skinning {
namespace {

constexpr int kDefaultIterations = 15;
constexpr int kMaxIterations = 1000;
// Unary solves of more iterations than this run in chunks of it, checking between chunks whether
// the caller still wants the answer. Each chunk warm-starts from the last one's (snapped) result.
constexpr int kSolveChunk = 50;

}  // namespace

absl::StatusOr<std::unique_ptr<FastFrameSolver>> FastFrameSolver::Open(std::shared_ptr<const LoadedBake> bake,
                                                                      std::shared_ptr<const LoadedRig> rig) {
  const FastModelPayload* payload = bake->payload_as<FastModelPayload>();
  if (payload == nullptr)
    return absl::FailedPreconditionError(
        absl::StrCat("bake '", bake->name, "' is a ", bake->report().method(),
                     " bake, not a FAST model: run StartBake with options.fast_model and solve with its name"));
  std::unique_ptr<FastFrameSolver> s(new FastFrameSolver());
  s->model_ = payload->model.get();
  s->handle_joints_ = payload->handle_joints;
  s->solver_ = std::make_unique<FastSolver>(payload->model);
  const int m = FastModelHandles(*s->model_);
  int max_joint = 0;
  for (int j : s->handle_joints_) max_joint = std::max(max_joint, j);
  s->handle_of_joint_.assign(max_joint + 1, -1);
  for (int h = 0; h < m; ++h) s->handle_of_joint_[s->handle_joints_[h]] = h;
  const Skeleton& skeleton = rig->rig.skeleton;
  for (int j = 0; j < skeleton.size(); ++j) s->joint_points_.push_back(BindPosition(skeleton, j));
  s->constraints_.resize(m);
  s->targets_.assign(m, Affine34::Zero());
  s->bake_ = std::move(bake);
  s->rig_ = std::move(rig);
  return s;
}

absl::Status FastFrameSolver::WarmStart(const google::protobuf::RepeatedField<float>& values) {
  const int total = FastModelTotalHandles(*model_);
  if (values.size() != 12 * total)
    return absl::InvalidArgumentError(
        absl::StrFormat("warm_start has %d values, expected %d (12 per handle)", values.size(), 12 * total));
  for (int i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]))
      return absl::InvalidArgumentError(
          absl::StrFormat("warm_start[%d] (handle %d) = %g is not finite", i, i / 12, values[i]));
  transforms_.assign(total, Affine34::Zero());
  for (int h = 0; h < total; ++h)
    for (int r = 0; r < 3; ++r)
      for (int k = 0; k < 4; ++k) transforms_[h](r, k) = values[12 * h + 4 * r + k];
  return absl::OkStatus();
}

absl::Status FastFrameSolver::ReadConstraints(
    const google::protobuf::RepeatedPtrField<v1::HandleConstraint>& constraints) {
  for (auto& c : constraints_) c = HandleConstraint();
  std::vector<int> constrained_by(constraints_.size(), -1);  // per handle: the constraint that set it
  for (int i = 0; i < constraints.size(); ++i) {
    const v1::HandleConstraint& c = constraints[i];
    const std::string where = absl::StrFormat("constraints[%d]", i);
    if (c.joint() < 0 || c.joint() >= static_cast<int>(handle_of_joint_.size()) || handle_of_joint_[c.joint()] < 0)
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s.joint = %d is not a handle of this model (a joint with weights)", where, c.joint()));
    const int h = handle_of_joint_[c.joint()];
    // Two constraints on one joint: the last silently won.
    if (constrained_by[h] >= 0)
      return absl::InvalidArgumentError(absl::StrFormat("%s.joint = %d is constrained already by constraints[%d]",
                                                        where, c.joint(), constrained_by[h]));
    constrained_by[h] = i;
    HandleConstraint& hc = constraints_[h];
    switch (c.kind()) {
      case v1::HandleConstraint::KIND_UNSPECIFIED:
        break;
      case v1::HandleConstraint::KIND_POSITION:
        if (c.target_size() != 3)
          return absl::InvalidArgumentError(
              absl::StrFormat("%s.target has %d values, KIND_POSITION needs 3", where, c.target_size()));
        if (c.point_size() != 0 && c.point_size() != 3)
          return absl::InvalidArgumentError(
              absl::StrFormat("%s.point has %d values, expected 3 or none", where, c.point_size()));
        hc.kind = HandleConstraint::Kind::kPosition;
        hc.point = c.point_size() == 3 ? Eigen::Vector3d(c.point(0), c.point(1), c.point(2)) : joint_points_[c.joint()];
        targets_[h].col(3) = Eigen::Vector3d(c.target(0), c.target(1), c.target(2));
        break;
      case v1::HandleConstraint::KIND_TRANSFORM:
        if (c.target_size() != 12)
          return absl::InvalidArgumentError(absl::StrFormat(
              "%s.target has %d values, KIND_TRANSFORM needs 12 (3x4 row-major)", where, c.target_size()));
        hc.kind = HandleConstraint::Kind::kFull;
        for (int r = 0; r < 3; ++r)
          for (int k = 0; k < 4; ++k) targets_[h](r, k) = c.target(4 * r + k);
        break;
      default:
        return absl::InvalidArgumentError(
            absl::StrFormat("%s.kind = %d is not a constraint kind", where, static_cast<int>(c.kind())));
    }
    if (!targets_[h].allFinite() || !hc.point.allFinite())
      return absl::InvalidArgumentError(absl::StrCat(where, " has a non-finite value"));
  }
  return absl::OkStatus();
}

absl::Status FastFrameSolver::Solve(const google::protobuf::RepeatedPtrField<v1::HandleConstraint>& constraints,
                                    int iteration_count, const v1::PoseOutputs& outputs,
                                    const std::function<absl::Status()>& still_wanted, v1::FastSolution* out) {
  RETURN_IF_ERROR(ReadConstraints(constraints));
  // A new constraint set may take a second to factor (256 extra weights) and cannot be stopped:
  // not started for a call whose deadline passed or a session that closed meanwhile.
  if (still_wanted) RETURN_IF_ERROR(still_wanted());
  RETURN_IF_ERROR(solver_->SetConstraints(constraints_));
  if (iteration_count < 0 || iteration_count > kMaxIterations)
    return absl::InvalidArgumentError(
        absl::StrFormat("iteration_count = %d is outside [0, %d]", iteration_count, kMaxIterations));
  const int iterations = iteration_count == 0 ? kDefaultIterations : iteration_count;
  // Targets each finite can still overflow where they combine (±3e38 on two handles): the frame is
  // refused as Pose refuses one, and the session goes on from the transforms it had (kept in a
  // buffer of the session's: no allocation per frame).
  before_ = transforms_;
  auto overflow = [&](const std::string& what) {
    transforms_.swap(before_);
    return absl::InvalidArgumentError(absl::StrCat(
        what, " of the solution is not finite: the constraints' targets overflow float (±3.4e38) where they combine"));
  };
  if (still_wanted) {
    RETURN_IF_ERROR(still_wanted());
    for (int done = 0; done < iterations; done += kSolveChunk) {
      RETURN_IF_ERROR(solver_->Solve(targets_, &transforms_, std::min(kSolveChunk, iterations - done)));
      if (absl::Status s = still_wanted(); !s.ok())
        return absl::Status(s.code(), absl::StrFormat("after %d of %d iterations: %s",
                                                      std::min(done + kSolveChunk, iterations), iterations, s.message()));
    }
  } else {
    RETURN_IF_ERROR(solver_->Solve(targets_, &transforms_, iterations));
  }
  const double energy = solver_->Energy(transforms_);
  for (size_t h = 0; h < transforms_.size(); ++h)
    if (!transforms_[h].cast<float>().allFinite()) return overflow(absl::StrCat("handle ", h));
  if (!std::isfinite(energy)) return overflow("the energy");
  out->set_handle_count(FastModelHandles(*model_));
  out->set_extra_handle_count(FastModelTotalHandles(*model_) - FastModelHandles(*model_));
  out->mutable_handle_joints()->Clear();
  out->mutable_handle_joints()->Add(handle_joints_.begin(), handle_joints_.end());
  out->mutable_transforms()->Resize(static_cast<int>(12 * transforms_.size()), 0.f);
  float* T = out->mutable_transforms()->mutable_data();
  for (size_t h = 0; h < transforms_.size(); ++h)
    for (int r = 0; r < 3; ++r)
      for (int k = 0; k < 4; ++k) T[12 * h + 4 * r + k] = static_cast<float>(transforms_[h](r, k));
  out->set_energy(energy);
  if (outputs.vertices()) {
    const int n = static_cast<int>(rig_->positions.size() / 3);
    const SparseWeights& W = bake_->sparse;
    out->mutable_vertices()->Resize(3 * n, 0.f);
    float* v = out->mutable_vertices()->mutable_data();
    LbsFloat(rig_->positions.data(), n, W.joints.data(), W.weights.data(), W.k(), T, v);
    if (const int64_t at = FirstNonFinite(v, 3 * static_cast<size_t>(n)); at >= 0)
      return overflow(absl::StrCat("vertex ", at / 3));
  }
  return absl::OkStatus();
}

}  // namespace skinning
