// Linear blend skinning: v'_i = Σ_j w_ij T_j v_i.
#ifndef SKINNING_CORE_SKINNING_LBS_H_
#define SKINNING_CORE_SKINNING_LBS_H_

#include <vector>

#include <Eigen/Geometry>

#include "core/geometry/mesh.h"
#include "core/skinning/weights.h"

namespace skinning {

// Reference path (double).
//   V  #V by 3 bind-space positions
//   W  sparse (#V by k) or dense (#V by #T) weights, rows sum to one
//   T  #T skinning transforms (world pose · inverse bind)
//   N  #V by 3 bind-space normals, or 0 rows
// Outputs U (#V by 3) and, when N has rows, NU (#V by 3, unit length; transformed by the
// inverse transpose of each vertex's blended matrix).
void Lbs(const RowMatrixX3d& V, const SparseWeights& W, const std::vector<Eigen::Affine3d>& T,
         RowMatrixX3d* U);
void Lbs(const RowMatrixX3d& V, const Eigen::MatrixXd& W, const std::vector<Eigen::Affine3d>& T,
         RowMatrixX3d* U);
void LbsNormals(const RowMatrixX3d& N, const SparseWeights& W,
                const std::vector<Eigen::Affine3d>& T, RowMatrixX3d* NU);

// float32 fast path over raw arrays, the server's per-frame kernel.
//   V        n*3 floats, xyz interleaved
//   joints   n*k joint indices, weights n*k floats (rows sum to one)
//   T34      #T*12 floats: 3x4 row-major matrices
//   U        n*3 floats out (may not alias V)
//   N, NU    optional n*3 normals in and out (nullptr to skip)
void LbsFloat(const float* V, int n, const int32_t* joints, const float* weights, int k,
              const float* T34, float* U, const float* N = nullptr, float* NU = nullptr);

// 3x4 row-major float copies of affine transforms (#T*12 floats).
std::vector<float> ToRowMajor34(const std::vector<Eigen::Affine3d>& T);

}  // namespace skinning

#endif  // SKINNING_CORE_SKINNING_LBS_H_
