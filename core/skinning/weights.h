// Skinning weights: sparse top-k influences per vertex (the wire and glTF form) and dense.
#ifndef SKINNING_CORE_SKINNING_WEIGHTS_H_
#define SKINNING_CORE_SKINNING_WEIGHTS_H_

#include <cstdint>

#include <Eigen/Core>

#include "absl/status/status.h"

namespace skinning {

using RowMatrixXi = Eigen::Matrix<int32_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowMatrixXf = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// k influences per vertex. Unused slots have weight 0 and joint 0. Rows sum to one.
struct SparseWeights {
  RowMatrixXi joints;   // #V by k joint indices
  RowMatrixXf weights;  // #V by k weights in [0, 1]
  int k() const { return static_cast<int>(joints.cols()); }
  int rows() const { return static_cast<int>(joints.rows()); }
};

// Tolerance on |sum - 1| accepted from callers before exact renormalization.
inline constexpr double kWeightSumTolerance = 1e-3;

// Keeps the k largest weights of each row of W (#V by #J, rows sum to one) and renormalizes.
SparseWeights TopK(const Eigen::MatrixXd& W, int k);

// Every positive weight of each row: TopK with k = the most positive entries in a row (at
// least 1), so nothing is truncated.
SparseWeights ExactSparse(const Eigen::MatrixXd& W);

// #V by num_joints dense matrix of a sparse one.
Eigen::MatrixXd ToDense(const SparseWeights& W, int num_joints);

// Checks shapes, joint indices in [0, num_joints), finite non-negative entries and rows summing
// to one within kWeightSumTolerance: "weights[17]: row sums to 0.5, not 1".
absl::Status ValidateWeights(const SparseWeights& W, int num_vertices, int num_joints,
                             const char* field = "weights");
absl::Status ValidateWeights(const Eigen::MatrixXd& W, int num_vertices, int num_joints,
                             const char* field = "weights");

// Divides every row by its sum (rows must have a positive sum). Sparse (float) rows that already
// sum to 1 within k float ulps are left unchanged, so that normalizing is idempotent.
void NormalizeRows(SparseWeights* W);
void NormalizeRows(Eigen::MatrixXd* W);

}  // namespace skinning

#endif  // SKINNING_CORE_SKINNING_WEIGHTS_H_
