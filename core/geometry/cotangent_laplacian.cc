#include "core/geometry/cotangent_laplacian.h"

#include <Eigen/Geometry>
#include <vector>

namespace skinning {

Eigen::SparseMatrix<double> CotangentStiffness(const RowMatrixX3d& V, const RowMatrixX3i& F) {
  const Eigen::Index n = V.rows();
  std::vector<Eigen::Triplet<double>> triplets;
  triplets.reserve(static_cast<size_t>(F.rows()) * 12);
  for (Eigen::Index f = 0; f < F.rows(); ++f) {
    const int idx[3] = {F(f, 0), F(f, 1), F(f, 2)};
    const Eigen::Vector3d p[3] = {V.row(idx[0]).transpose(), V.row(idx[1]).transpose(),
                                  V.row(idx[2]).transpose()};
    const double double_area = (p[1] - p[0]).cross(p[2] - p[0]).norm();
    if (!(double_area > 0.0)) continue;  // degenerate: the cotangents are unbounded
    for (int c = 0; c < 3; ++c) {
      // The corner c is opposite the edge (i, j).
      const int i = idx[(c + 1) % 3], j = idx[(c + 2) % 3];
      const Eigen::Vector3d u = p[(c + 1) % 3] - p[c], v = p[(c + 2) % 3] - p[c];
      // cot = cos / sin = (u·v) / |u×v|, and |u×v| is twice the area for every corner.
      const double half_cot = 0.5 * u.dot(v) / double_area;
      triplets.emplace_back(i, j, -half_cot);
      triplets.emplace_back(j, i, -half_cot);
      triplets.emplace_back(i, i, half_cot);
      triplets.emplace_back(j, j, half_cot);
    }
  }
  Eigen::SparseMatrix<double> K(n, n);
  K.setFromTriplets(triplets.begin(), triplets.end());
  return K;
}

Eigen::VectorXd LumpedMass(const RowMatrixX3d& V, const RowMatrixX3i& F, MassLumping lumping) {
  Eigen::VectorXd M = Eigen::VectorXd::Zero(V.rows());
  for (Eigen::Index f = 0; f < F.rows(); ++f) {
    const int idx[3] = {F(f, 0), F(f, 1), F(f, 2)};
    const Eigen::Vector3d p[3] = {V.row(idx[0]).transpose(), V.row(idx[1]).transpose(),
                                  V.row(idx[2]).transpose()};
    const double double_area = (p[1] - p[0]).cross(p[2] - p[0]).norm();
    if (!(double_area > 0.0)) continue;
    const double area = 0.5 * double_area;
    if (lumping == MassLumping::kBarycentric) {
      for (int c = 0; c < 3; ++c) M(idx[c]) += area / 3.0;
      continue;
    }
    // Mixed Voronoi: find an obtuse corner, if any (u·v < 0 at that corner).
    int obtuse = -1;
    double half_cot[3];  // ½ cot of the angle at each corner
    for (int c = 0; c < 3; ++c) {
      const Eigen::Vector3d u = p[(c + 1) % 3] - p[c], v = p[(c + 2) % 3] - p[c];
      const double dot = u.dot(v);
      if (dot < 0) obtuse = c;
      half_cot[c] = 0.5 * dot / double_area;
    }
    if (obtuse >= 0) {
      for (int c = 0; c < 3; ++c) M(idx[c]) += (c == obtuse ? 0.5 : 0.25) * area;
      continue;
    }
    // Voronoi area of corner c: (1/8) Σ over its two edges |e|² cot(opposite angle).
    for (int c = 0; c < 3; ++c) {
      const int a = (c + 1) % 3, b = (c + 2) % 3;
      // Edge c–a is opposite corner b; edge c–b is opposite corner a.
      M(idx[c]) += 0.25 * ((p[a] - p[c]).squaredNorm() * half_cot[b] +
                           (p[b] - p[c]).squaredNorm() * half_cot[a]);
    }
  }
  return M;
}

}  // namespace skinning
