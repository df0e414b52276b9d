// PSD's model data, shared by the builder (psd_build.cc) and the per-frame evaluation (psd.cc).
// Internal to core/skinning; the API is psd.h.
#ifndef SKINNING_CORE_SKINNING_PSD_MODEL_H_
#define SKINNING_CORE_SKINNING_PSD_MODEL_H_

#include <cstdint>
#include <vector>

#include <Eigen/Core>
#include <Eigen/Geometry>

#include "absl/status/statusor.h"
#include "core/rig/pose.h"
#include "core/rig/skeleton.h"
#include "core/skinning/dqs.h"
#include "core/skinning/psd.h"
#include "core/skinning/support_joints.h"
#include "core/skinning/weights.h"

namespace skinning {
namespace psd_internal {

using Matrix34d = Eigen::Matrix<double, 3, 4>;

struct Interpolant {
  std::vector<int> joints;  // skeleton joint indices (a subset of the active joints)
  double sigma = 1.0;       // Gaussian width
  Eigen::MatrixXd C;        // #centres × #centres: r = C φ(P)
  double residual = 0.0;    // ‖Φ C − I‖_max
};

// Displacements of one example, grouped by interpolant.
struct ExampleDisplacements {
  struct Block {
    int interp = 0;
    int begin = 0, end = 0;  // range in idx / d / df
  };
  std::vector<int32_t> idx;
  std::vector<Eigen::Vector3d> d;
  std::vector<float> df;  // 3 per entry
  std::vector<Block> blocks;
};

struct SupportData {
  SupportJoint joint;
  int interp = 0;
  std::vector<double> x_centre;  // per centre (the rest centre holds the mean)
  double x_mean = 0.5;
};

// Whether two full local poses are the same (rotations within 1e-6 rad, translations and
// scales within 1e-9 relative).
bool SamePose(const std::vector<Transform>& a, const std::vector<Transform>& b);
// d_j(a, b)² (see psd.h).
double JointDistance2(const Transform& a, const Transform& b, double inv_len2);
// U_i = M_i (X_i, 1).
void ApplyMaps(const std::vector<Matrix34d>& M, const RowMatrixX3d& X, RowMatrixX3d* U);

}  // namespace psd_internal

struct PsdModelData {
  using Matrix34d = psd_internal::Matrix34d;
  using Interpolant = psd_internal::Interpolant;
  using ExampleDisplacements = psd_internal::ExampleDisplacements;
  using SupportData = psd_internal::SupportData;

  PsdOptions options;
  Skeleton skeleton;
  std::vector<int> order;
  int n = 0;
  RowMatrixX3d V;
  std::vector<float> Vf;
  SparseWeights W;
  DqsLaneOrder dqs_lanes;  // PrepareDqsLaneOrder(W) over a DQS base, or empty
  double inv_len2 = 1.0;
  std::vector<int> active;                      // active joints
  std::vector<std::vector<Transform>> centres;  // full local poses of the RBF centres
  std::vector<int> centre_example;              // example index, or -1 for the implicit rest
  int num_examples = 0;
  std::vector<Interpolant> interps;
  std::vector<int> vertex_interp;            // #V
  std::vector<ExampleDisplacements> disp;    // per centre
  std::vector<SupportData> supports;
  Eigen::MatrixXd WS;                        // #V × #support
  Eigen::VectorXd ws_sum;                    // #V
  std::vector<int> support_vertices;         // vertices with ws_sum > 0
  RowMatrixXi joints_ext;                    // LBS + support: #V × (k + #support)
  RowMatrixXf weights_ext;

  // Per-frame data.
  struct Frame {
    std::vector<Eigen::Affine3d> T;   // #joints skinning transforms
    std::vector<Eigen::Affine3d> TS;  // #support transforms
    Eigen::MatrixXd r;                // #interps × #centres RBF weights
  };
  absl::StatusOr<Frame> Prepare(const Pose& pose) const;
  // Per-vertex affine maps A_i (base blend, then the support blend).
  std::vector<Matrix34d> BaseMaps(const std::vector<Eigen::Affine3d>& T) const;
  void AddSupport(const std::vector<Eigen::Affine3d>& TS, std::vector<Matrix34d>* M) const;
  // X = V + Σ_k r δ_k (double).
  void Displaced(const Eigen::MatrixXd& r, RowMatrixX3d* X) const;
  // RBF weights of all interpolants at a full local pose.
  Eigen::MatrixXd RbfWeights(const std::vector<Transform>& locals) const;
};

}  // namespace skinning

#endif  // SKINNING_CORE_SKINNING_PSD_MODEL_H_
