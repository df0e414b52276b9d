#include "core/skinning/weights.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "absl/strings/str_format.h"

namespace skinning {

SparseWeights TopK(const Eigen::MatrixXd& W, int k) {
  const int n = static_cast<int>(W.rows());
  const int m = static_cast<int>(W.cols());
  SparseWeights S;
  S.joints = RowMatrixXi::Zero(n, k);
  S.weights = RowMatrixXf::Zero(n, k);
  std::vector<int> idx(m);
  for (int i = 0; i < n; ++i) {
    std::iota(idx.begin(), idx.end(), 0);
    const int kk = std::min(k, m);
    std::partial_sort(idx.begin(), idx.begin() + kk, idx.end(), [&](int a, int b) {
      return W(i, a) > W(i, b) || (W(i, a) == W(i, b) && a < b);
    });
    double sum = 0;
    for (int c = 0; c < kk; ++c) sum += std::max(0.0, W(i, idx[c]));
    for (int c = 0; c < kk; ++c) {
      S.joints(i, c) = idx[c];
      S.weights(i, c) = sum > 0 ? static_cast<float>(std::max(0.0, W(i, idx[c])) / sum) : 0.f;
    }
  }
  return S;
}

SparseWeights ExactSparse(const Eigen::MatrixXd& W) {
  int k = 1;
  for (int i = 0; i < W.rows(); ++i)
    k = std::max(k, static_cast<int>((W.row(i).array() > 0).count()));
  return TopK(W, k);
}

Eigen::MatrixXd ToDense(const SparseWeights& W, int num_joints) {
  Eigen::MatrixXd D = Eigen::MatrixXd::Zero(W.rows(), num_joints);
  for (int i = 0; i < W.rows(); ++i)
    for (int c = 0; c < W.k(); ++c) D(i, W.joints(i, c)) += W.weights(i, c);
  return D;
}

absl::Status ValidateWeights(const SparseWeights& W, int num_vertices, int num_joints,
                             const char* field) {
  if (W.k() <= 0) return absl::InvalidArgumentError(absl::StrFormat("%s: k must be positive", field));
  if (W.rows() != num_vertices || W.weights.rows() != num_vertices || W.weights.cols() != W.k())
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s has %d rows of %d influences, expected %d rows (one per vertex)", field, W.rows(),
        W.k(), num_vertices));
  for (int i = 0; i < num_vertices; ++i) {
    double sum = 0;
    for (int c = 0; c < W.k(); ++c) {
      const int j = W.joints(i, c);
      const float w = W.weights(i, c);
      if (!std::isfinite(w))
        return absl::InvalidArgumentError(
            absl::StrFormat("%s[%d][%d]: weight is not finite", field, i, c));
      if (w < 0)
        return absl::InvalidArgumentError(
            absl::StrFormat("%s[%d][%d]: weight %g is negative", field, i, c, w));
      if (j < 0 || j >= num_joints)
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s[%d][%d]: joint %d is out of range (%d joints)", field, i, c, j, num_joints));
      sum += w;
    }
    if (std::abs(sum - 1.0) > kWeightSumTolerance)
      return absl::InvalidArgumentError(
          absl::StrFormat("%s[%d]: row sums to %g, not 1", field, i, sum));
  }
  return absl::OkStatus();
}

absl::Status ValidateWeights(const Eigen::MatrixXd& W, int num_vertices, int num_joints,
                             const char* field) {
  if (W.rows() != num_vertices || W.cols() != num_joints)
    return absl::InvalidArgumentError(absl::StrFormat("%s is %d by %d, expected %d by %d", field,
                                                      W.rows(), W.cols(), num_vertices,
                                                      num_joints));
  for (int i = 0; i < num_vertices; ++i) {
    double sum = 0;
    for (int j = 0; j < num_joints; ++j) {
      const double w = W(i, j);
      if (!std::isfinite(w))
        return absl::InvalidArgumentError(
            absl::StrFormat("%s[%d][%d]: weight is not finite", field, i, j));
      if (w < 0)
        return absl::InvalidArgumentError(
            absl::StrFormat("%s[%d][%d]: weight %g is negative", field, i, j, w));
      sum += w;
    }
    if (std::abs(sum - 1.0) > kWeightSumTolerance)
      return absl::InvalidArgumentError(
          absl::StrFormat("%s[%d]: row sums to %g, not 1", field, i, sum));
  }
  return absl::OkStatus();
}

void NormalizeRows(SparseWeights* W) {
  // A row divided by its sum and rounded to float sums to 1 within k · 2^-25 (rounding moves each
  // weight ≤ 1 by at most half a float ulp, ≤ 2^-25); dividing it again would move some weights
  // by an ulp. Rows within k · 2^-24 are left as they are, so that normalizing twice gives the
  // bits of normalizing once (a rig exported and read again keeps its content address).
  const double tolerance = W->k() * std::ldexp(1.0, -24);
  for (int i = 0; i < W->rows(); ++i) {
    const double sum = W->weights.row(i).cast<double>().sum();
    if (sum > 0 && std::abs(sum - 1.0) > tolerance)
      W->weights.row(i) = (W->weights.row(i).cast<double>() / sum).cast<float>();
  }
}

void NormalizeRows(Eigen::MatrixXd* W) {
  for (int i = 0; i < W->rows(); ++i) {
    const double sum = W->row(i).sum();
    if (sum > 0) W->row(i) /= sum;
  }
}

}  // namespace skinning
