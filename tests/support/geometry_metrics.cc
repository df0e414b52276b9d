#include "tests/support/geometry_metrics.h"

#include <algorithm>
#include <cmath>

#include <Eigen/Geometry>

namespace skinning::testing {

double ConvexHullArea(std::vector<Eigen::Vector2d> p) {
  if (p.size() < 3) return 0.0;
  std::sort(p.begin(), p.end(), [](const auto& a, const auto& b) { return a.x() < b.x() || (a.x() == b.x() && a.y() < b.y()); });
  auto cross = [](const Eigen::Vector2d& o, const Eigen::Vector2d& a, const Eigen::Vector2d& b) {
    return (a.x() - o.x()) * (b.y() - o.y()) - (a.y() - o.y()) * (b.x() - o.x());
  };
  std::vector<Eigen::Vector2d> hull(2 * p.size());
  size_t k = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    while (k >= 2 && cross(hull[k - 2], hull[k - 1], p[i]) <= 0) --k;
    hull[k++] = p[i];
  }
  for (size_t i = p.size() - 1, t = k + 1; i > 0; --i) {
    while (k >= t && cross(hull[k - 2], hull[k - 1], p[i - 1]) <= 0) --k;
    hull[k++] = p[i - 1];
  }
  hull.resize(k - 1);
  double area = 0;
  for (size_t i = 0; i < hull.size(); ++i) {
    const auto& a = hull[i];
    const auto& b = hull[(i + 1) % hull.size()];
    area += a.x() * b.y() - b.x() * a.y();
  }
  return std::abs(area) / 2;
}

double SlabCrossSectionArea(const std::vector<Eigen::Vector3d>& P, const Eigen::Vector3d& o,
                            const Eigen::Vector3d& n, double half_thickness) {
  // An orthonormal basis (u, v) of the plane.
  const Eigen::Vector3d u = n.unitOrthogonal();
  const Eigen::Vector3d v = n.cross(u);
  std::vector<Eigen::Vector2d> q;
  for (const auto& p : P) {
    const Eigen::Vector3d d = p - o;
    if (std::abs(d.dot(n)) <= half_thickness) q.emplace_back(d.dot(u), d.dot(v));
  }
  return ConvexHullArea(std::move(q));
}

}  // namespace skinning::testing
