// Swing/twist deformers with energy-minimizing weights (Kavan & Sorkine 2012), what
// DEFORMER_SWING_TWIST poses with: options `swing_twist {max_iteration_count}`.
#ifndef SKINNING_SERVER_BAKE_RECIPES_SWING_TWIST_H_
#define SKINNING_SERVER_BAKE_RECIPES_SWING_TWIST_H_

#include <vector>

#include <Eigen/Core>

#include "core/rig/joint_frames.h"
#include "core/skinning/swing_twist.h"
#include "server/bake/loaded_bake.h"

namespace skinning {

// The bake's dense/sparse weights are the deformer weights d (rows sum to one).
struct SwingTwistPayload : BakePayload {
  Eigen::MatrixXd swing, twist;   // s and t, #V by #J
  SwingTwistWeights weights;      // the per-frame layout: top-k deformers with their s and t
  std::vector<JointFrame> frames;  // the joints' bind frames (twist axis = z)
};

}  // namespace skinning

#endif  // SKINNING_SERVER_BAKE_RECIPES_SWING_TWIST_H_
