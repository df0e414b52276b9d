// Solving FAST frames (Jacobson et al. 2012) on a fast_model bake: the request's joint-indexed
// constraints become the solver's handle-indexed ones, the reduced ARAP solve runs (in chunks, so
// a unary call can stop when nobody waits), and every handle's transform is returned. A unary
// Solve uses one FastFrameSolver once; a SolveSession keeps one for its warm start and its
// factored constraint set.
#ifndef SKINNING_SERVER_FAST_FAST_SOLVER_H_
#define SKINNING_SERVER_FAST_FAST_SOLVER_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/solve/fast_skinning.h"
#include "server/bake/loaded_bake.h"
#include "server/store/rig_store.h"
#include "skinning/v1/fast.pb.h"
#include "skinning/v1/pose.pb.h"

namespace skinning {

class FastFrameSolver {
 public:
  // A solver of `bake`'s model for `rig` (the bake's rig). FAILED_PRECONDITION naming the bake to
  // run when the bake is not a fast_model bake.
  static absl::StatusOr<std::unique_ptr<FastFrameSolver>> Open(std::shared_ptr<const LoadedBake> bake,
                                                               std::shared_ptr<const LoadedRig> rig);

  // Starts the next solve from these transforms: 12 floats (3x4 row-major) per handle, extra
  // handles included; INVALID_ARGUMENT for another count.
  absl::Status WarmStart(const google::protobuf::RepeatedField<float>& transforms);
  // One frame. `iteration_count` 0 means 15, at most 1000. `still_wanted` (may be empty: sessions
  // answer every frame) is asked after the constraint set is factored and between chunks of
  // iterations; its error stops the solve. INVALID_ARGUMENT naming the constraint at fault.
  absl::Status Solve(const google::protobuf::RepeatedPtrField<v1::HandleConstraint>& constraints, int iteration_count,
                     const v1::PoseOutputs& outputs, const std::function<absl::Status()>& still_wanted,
                     v1::FastSolution* out);

  const LoadedBake& bake() const { return *bake_; }

 private:
  FastFrameSolver() = default;
  // The request's constraints (joint-indexed) into constraints_ and targets_ (handle-indexed).
  absl::Status ReadConstraints(const google::protobuf::RepeatedPtrField<v1::HandleConstraint>& constraints);

  std::shared_ptr<const LoadedBake> bake_;
  std::shared_ptr<const LoadedRig> rig_;
  const FastModel* model_ = nullptr;
  std::vector<int> handle_joints_;       // the joint of each handle
  std::unique_ptr<FastSolver> solver_;
  std::vector<int> handle_of_joint_;     // joint → handle, -1 for joints without weight
  std::vector<Eigen::Vector3d> joint_points_;  // bind positions of the joints
  std::vector<HandleConstraint> constraints_;
  std::vector<Affine34> targets_;
  std::vector<Affine34> transforms_;     // the last solve's (the warm start of the next)
  std::vector<Affine34> before_;         // transforms_ before the frame (kept if it overflows)
};

}  // namespace skinning

#endif  // SKINNING_SERVER_FAST_FAST_SOLVER_H_
