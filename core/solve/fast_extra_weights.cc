// Extra weights of the FAST model (paper Sec. 3.3): cubic B-splines around optimized farthest
// points in weight space.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/solve/fast_model.h"

namespace skinning::fast_internal {
namespace {

// The cubic B-spline basis B: [0, 1] → [0, 1], B(0) = 1, B(1) = 0, C²: the uniform cubic
// B-spline centred at 0 (support [−2, 2]) at u = 2t, divided by its peak 2/3.
double CubicBSpline(double t) {
  const double u = 2.0 * std::abs(t);
  if (u >= 2.0) return 0.0;
  const double n = u < 1.0 ? (4.0 - 6.0 * u * u + 3.0 * u * u * u) / 6.0
                           : (2.0 - u) * (2.0 - u) * (2.0 - u) / 6.0;
  return 1.5 * n;
}

// ½ min_k ‖x − e_k‖ for a weight vector x (e_k the unit simplex corners).
double HalfCornerDistance(const Eigen::Ref<const Eigen::RowVectorXd>& x) {
  const double d2 = x.squaredNorm() - 2.0 * x.maxCoeff() + 1.0;
  return 0.5 * std::sqrt(std::max(0.0, d2));
}

}  // namespace

void PlaceSeeds(const Eigen::MatrixXd& C, int p, Eigen::MatrixXd* seeds, Eigen::VectorXd* radii) {
  const int nc = static_cast<int>(C.rows());
  Eigen::VectorXd corner(nc);
  for (int x = 0; x < nc; ++x) corner(x) = HalfCornerDistance(C.row(x));
  Eigen::MatrixXd D(nc, p);  // D(x, i) = ‖C_x − s_i‖
  std::vector<int> at(p, -1);
  auto column = [&](int i, int x0) {
    for (int x = 0; x < nc; ++x) D(x, i) = (C.row(x) - C.row(x0)).norm();
  };
  // Greedy: seed i at the argmax of min(corner, distance to seeds 0..i−1).
  Eigen::VectorXd nearest = corner;
  for (int i = 0; i < p; ++i) {
    int best = 0;
    for (int x = 1; x < nc; ++x) {
      if (nearest(x) > nearest(best)) best = x;
    }
    at[i] = best;
    column(i, best);
    nearest = nearest.cwiseMin(D.col(i));
  }
  // Sweeps (the smallest pairwise distance never decreases, so this terminates).
  for (int sweep = 0; sweep < 100; ++sweep) {
    bool moved = false;
    for (int i = 0; i < p; ++i) {
      int best = at[i];
      double best_d = -1.0;
      for (int x = 0; x < nc; ++x) {
        double d = corner(x);
        for (int j = 0; j < p; ++j) {
          if (j != i) d = std::min(d, D(x, j));
        }
        if (d > best_d + 1e-14) {
          best_d = d;
          best = x;
        }
      }
      if (best != at[i]) {
        // Move only on a strict improvement, so ties never oscillate.
        double cur = corner(at[i]);
        for (int j = 0; j < p; ++j) {
          if (j != i) cur = std::min(cur, D(at[i], j));
        }
        if (best_d > cur + 1e-14) {
          at[i] = best;
          column(i, best);
          moved = true;
        }
      }
    }
    if (!moved) break;
  }
  seeds->resize(p, C.cols());
  radii->resize(p);
  for (int i = 0; i < p; ++i) {
    seeds->row(i) = C.row(at[i]);
    double d = corner(at[i]);
    for (int j = 0; j < p; ++j) {
      if (j != i) d = std::min(d, D(at[i], j));
    }
    (*radii)(i) = 2.0 * d;
  }
}

Eigen::MatrixXd AppendExtraWeights(const Eigen::MatrixXd& W, const Eigen::MatrixXd& seeds,
                                   const Eigen::VectorXd& radii) {
  const int n = static_cast<int>(W.rows()), m = static_cast<int>(W.cols());
  const int p = static_cast<int>(seeds.rows());
  Eigen::MatrixXd out(n, m + p);
  for (int i = 0; i < n; ++i) {
    double sum = 1.0;
    const bool at_corner = W.row(i).maxCoeff() >= 1.0 - 1e-9;
    for (int s = 0; s < p; ++s) {
      double e = 0.0;
      if (!at_corner && radii(s) > 0.0) {
        e = CubicBSpline((W.row(i) - seeds.row(s)).norm() / radii(s));
      }
      out(i, m + s) = e;
      sum += e;
    }
    out.row(i).head(m) = W.row(i);
    out.row(i) /= sum;
  }
  return out;
}

}  // namespace skinning::fast_internal
