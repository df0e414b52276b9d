// Rotation clusters of the FAST model (paper Sec. 3.2): k-means in weight space.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "core/solve/fast_model.h"

namespace skinning::fast_internal {

std::vector<int> KMeans(const Eigen::MatrixXd& X, int k, int iterations, unsigned seed,
                        int* k_out) {
  const int n = static_cast<int>(X.rows()), dim = static_cast<int>(X.cols());
  std::vector<int> label(n, 0);
  if (k >= n) {
    for (int i = 0; i < n; ++i) label[i] = i;
    *k_out = n;
    return label;
  }
  std::mt19937 rng(seed);
  auto uniform = [&rng]() { return static_cast<double>(rng()) / 4294967296.0; };
  // Row-major copy for cache-friendly distance loops.
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> P = X;
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> centers(k, dim);
  Eigen::VectorXd d2(n);
  centers.row(0) = P.row(std::min(n - 1, static_cast<int>(uniform() * n)));
  for (int i = 0; i < n; ++i) d2(i) = (P.row(i) - centers.row(0)).squaredNorm();
  int kc = 1;
  for (; kc < k; ++kc) {
    const double total = d2.sum();
    if (!(total > 0.0)) break;  // fewer distinct points than k
    double target = uniform() * total;
    int pick = n - 1;
    for (int i = 0; i < n; ++i) {
      target -= d2(i);
      if (target < 0.0) {
        pick = i;
        break;
      }
    }
    if (d2(pick) <= 0.0) {  // rounding landed on a covered point: take the farthest instead
      d2.maxCoeff(&pick);
    }
    centers.row(kc) = P.row(pick);
    for (int i = 0; i < n; ++i) d2(i) = std::min(d2(i), (P.row(i) - centers.row(kc)).squaredNorm());
  }
  k = kc;
  std::vector<int> count(k);
  for (int it = 0; it < std::max(1, iterations); ++it) {
    bool changed = it == 0;
    for (int i = 0; i < n; ++i) {
      int best = 0;
      double best_d = std::numeric_limits<double>::infinity();
      for (int c = 0; c < k; ++c) {
        const double d = (P.row(i) - centers.row(c)).squaredNorm();
        if (d < best_d) {
          best_d = d;
          best = c;
        }
      }
      if (label[i] != best) changed = true;
      label[i] = best;
    }
    if (!changed) break;
    centers.setZero();
    std::fill(count.begin(), count.end(), 0);
    for (int i = 0; i < n; ++i) {
      centers.row(label[i]) += P.row(i);
      ++count[label[i]];
    }
    for (int c = 0; c < k; ++c) {
      if (count[c] > 0) centers.row(c) /= count[c];
    }
  }
  // Compact (drop empty clusters).
  std::vector<int> remap(k, -1);
  int used = 0;
  for (int i = 0; i < n; ++i) {
    if (remap[label[i]] < 0) remap[label[i]] = used++;
    label[i] = remap[label[i]];
  }
  *k_out = used;
  return label;
}

}  // namespace skinning::fast_internal
