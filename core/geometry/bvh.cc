#include "core/geometry/bvh.h"

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace skinning {
namespace {

constexpr double kPi = 3.14159265358979323846;

// Signed solid angle of triangle (a, b, c) seen from q (Van Oosterom & Strackee 1983):
// tan(Ω/2) = a·(b×c) / (|a||b||c| + (a·b)|c| + (b·c)|a| + (c·a)|b|), with a, b, c relative to q.
// Positive when q is on the back side of a counter-clockwise triangle (inside a closed mesh).
double SolidAngle(const Eigen::Vector3d& a0, const Eigen::Vector3d& b0, const Eigen::Vector3d& c0,
                  const Eigen::Vector3d& q) {
  const Eigen::Vector3d a = a0 - q, b = b0 - q, c = c0 - q;
  const double la = a.norm(), lb = b.norm(), lc = c.norm();
  const double num = a.dot(b.cross(c));
  // q in the triangle's plane: 0 outside the triangle, and on it the mean of the two sides.
  if (num == 0.0) return 0.0;
  const double den = la * lb * lc + a.dot(b) * lc + b.dot(c) * la + c.dot(a) * lb;
  return 2.0 * std::atan2(num, den);
}

Eigen::Vector3d ClosestPointOnSegment(const Eigen::Vector3d& p, const Eigen::Vector3d& a,
                                      const Eigen::Vector3d& b) {
  const Eigen::Vector3d d = b - a;
  const double len2 = d.squaredNorm();
  if (len2 == 0) return a;
  const double t = std::clamp((p - a).dot(d) / len2, 0.0, 1.0);
  return a + t * d;
}

// Squared distance from p to the box [lo, hi] (0 inside).
double BoxSquaredDistance(const Eigen::Vector3d& p, const Eigen::Vector3d& lo,
                          const Eigen::Vector3d& hi) {
  double d2 = 0;
  for (int k = 0; k < 3; ++k) {
    const double e = p[k] < lo[k] ? lo[k] - p[k] : p[k] > hi[k] ? p[k] - hi[k] : 0.0;
    d2 += e * e;
  }
  return d2;
}

// Whether a + t·dir meets the box for some t in [t_lo, t_hi] (slab test); inv_dir = 1 / dir
// componentwise (±∞ for a zero component).
bool SegmentMeetsBox(const Eigen::Vector3d& a, const Eigen::Vector3d& dir,
                     const Eigen::Vector3d& inv_dir, double t_lo, double t_hi,
                     const Eigen::Vector3d& lo, const Eigen::Vector3d& hi) {
  for (int k = 0; k < 3; ++k) {
    if (dir[k] == 0) {
      if (a[k] < lo[k] || a[k] > hi[k]) return false;
      continue;
    }
    double t0 = (lo[k] - a[k]) * inv_dir[k], t1 = (hi[k] - a[k]) * inv_dir[k];
    if (t0 > t1) std::swap(t0, t1);
    t_lo = std::max(t_lo, t0);
    t_hi = std::min(t_hi, t1);
    if (t_lo > t_hi) return false;
  }
  return true;
}

// Möller–Trumbore: whether a + t·dir crosses the triangle (v0, v1, v2) (edges included) for
// some t in the open interval (t_lo, t_hi). A segment parallel to the triangle's plane misses.
// dir2 = |dir|².
bool SegmentCrossesTriangle(const Eigen::Vector3d& a, const Eigen::Vector3d& dir, double dir2,
                            double t_lo, double t_hi, const Eigen::Vector3d& v0,
                            const Eigen::Vector3d& v1, const Eigen::Vector3d& v2) {
  const Eigen::Vector3d e1 = v1 - v0, e2 = v2 - v0;
  const Eigen::Vector3d pvec = dir.cross(e2);
  const double det = e1.dot(pvec);
  // |det| = |dir · (e1 × e2)|; relative to |dir||e1||e2| it is the sine of the angle between the
  // segment and the plane (times a shape factor): ~0 means parallel.
  if (det * det <= 1e-28 * dir2 * e1.squaredNorm() * e2.squaredNorm()) return false;
  const double inv = 1.0 / det;
  const Eigen::Vector3d s = a - v0;
  const double u = s.dot(pvec) * inv;
  if (u < 0.0 || u > 1.0) return false;
  const Eigen::Vector3d q = s.cross(e1);
  const double v = dir.dot(q) * inv;
  if (v < 0.0 || u + v > 1.0) return false;
  const double t = e2.dot(q) * inv;
  return t > t_lo && t < t_hi;
}

}  // namespace

Eigen::Vector3d ClosestPointOnTriangle(const Eigen::Vector3d& p, const Eigen::Vector3d& a,
                                       const Eigen::Vector3d& b, const Eigen::Vector3d& c) {
  const Eigen::Vector3d ab = b - a, ac = c - a;
  const Eigen::Vector3d n = ab.cross(ac);
  const double n2 = n.squaredNorm();
  if (!(n2 > 1e-28 * ab.squaredNorm() * ac.squaredNorm()) || n2 == 0) {
    // Degenerate (a segment or a point): the closest of the three edges.
    Eigen::Vector3d best = ClosestPointOnSegment(p, a, b);
    for (const Eigen::Vector3d& q :
         {ClosestPointOnSegment(p, b, c), ClosestPointOnSegment(p, c, a)})
      if ((q - p).squaredNorm() < (best - p).squaredNorm()) best = q;
    return best;
  }
  // Project p onto the plane; if inside the triangle that is the answer, otherwise the closest
  // point lies on one of the edges (the triangle is convex).
  const Eigen::Vector3d q = p - n * (n.dot(p - a) / n2);
  const double wa = (b - q).cross(c - q).dot(n), wb = (c - q).cross(a - q).dot(n),
               wc = (a - q).cross(b - q).dot(n);
  if (wa >= 0 && wb >= 0 && wc >= 0) return q;
  Eigen::Vector3d best = ClosestPointOnSegment(p, a, b);
  for (const Eigen::Vector3d& e : {ClosestPointOnSegment(p, b, c), ClosestPointOnSegment(p, c, a)})
    if ((e - p).squaredNorm() < (best - p).squaredNorm()) best = e;
  return best;
}

TriangleBvh::TriangleBvh(const RowMatrixX3d& V, const RowMatrixX3i& F) {
  const int n = static_cast<int>(F.rows());
  corners_.resize(3 * static_cast<size_t>(n));
  std::vector<Eigen::Vector3d> sums(n);
  triangle_index_.resize(n);
  for (int f = 0; f < n; ++f) {
    for (int c = 0; c < 3; ++c) corners_[3 * f + c] = V.row(F(f, c)).transpose();
    sums[f] = corners_[3 * f] + corners_[3 * f + 1] + corners_[3 * f + 2];
    triangle_index_[f] = f;
  }
  if (n == 0) return;
  nodes_.reserve(2 * (n / kLeafSize + 1));
  Build(0, n, sums);
  // Store the corners in leaf order so that a leaf reads contiguous memory.
  std::vector<Eigen::Vector3d> ordered(corners_.size());
  for (int t = 0; t < n; ++t)
    for (int c = 0; c < 3; ++c) ordered[3 * t + c] = corners_[3 * triangle_index_[t] + c];
  corners_ = std::move(ordered);
}

int TriangleBvh::Build(int begin, int end, const std::vector<Eigen::Vector3d>& sums) {
  const int index = static_cast<int>(nodes_.size());
  nodes_.emplace_back();
  Eigen::Vector3d lo = Eigen::Vector3d::Constant(std::numeric_limits<double>::infinity());
  Eigen::Vector3d hi = -lo;
  Eigen::Vector3d area = Eigen::Vector3d::Zero(), weighted = Eigen::Vector3d::Zero(),
                  plain = Eigen::Vector3d::Zero();
  double total = 0.0;
  Eigen::AlignedBox3d centroid_box;
  for (int k = begin; k < end; ++k) {
    const int f = triangle_index_[k];
    const Eigen::Vector3d& a = corners_[3 * f];
    const Eigen::Vector3d& b = corners_[3 * f + 1];
    const Eigen::Vector3d& c = corners_[3 * f + 2];
    for (int i = 0; i < 3; ++i) {
      lo = lo.cwiseMin(corners_[3 * f + i]);
      hi = hi.cwiseMax(corners_[3 * f + i]);
    }
    const Eigen::Vector3d n = 0.5 * (b - a).cross(c - a);
    const Eigen::Vector3d centroid = (a + b + c) / 3.0;
    area += n;
    weighted += n.norm() * centroid;
    total += n.norm();
    plain += centroid;
    centroid_box.extend(centroid);
  }
  Node& node = nodes_[index];
  // Pad the box a little so that rounding in the slab test never loses a touching segment.
  const double pad =
      1e-9 * ((hi - lo).norm() + hi.cwiseAbs().maxCoeff() + lo.cwiseAbs().maxCoeff());
  node.lo = lo - Eigen::Vector3d::Constant(pad);
  node.hi = hi + Eigen::Vector3d::Constant(pad);
  node.centre = total > 0 ? Eigen::Vector3d(weighted / total) : Eigen::Vector3d(plain / (end - begin));
  node.area = area;
  for (int k = begin; k < end; ++k)
    for (int i = 0; i < 3; ++i)
      node.radius = std::max(node.radius, (corners_[3 * triangle_index_[k] + i] - node.centre).norm());
  node.begin = begin;
  node.end = end;
  if (end - begin <= kLeafSize) return index;
  int axis = 0;
  centroid_box.sizes().maxCoeff(&axis);
  const int mid = (begin + end) / 2;
  // Median split (equal centroids split arbitrarily, which still halves the range).
  std::nth_element(triangle_index_.begin() + begin, triangle_index_.begin() + mid,
                   triangle_index_.begin() + end,
                   [&](int32_t x, int32_t y) { return sums[x][axis] < sums[y][axis]; });
  const int left = Build(begin, mid, sums);
  const int right = Build(mid, end, sums);
  nodes_[index].left = left;
  nodes_[index].right = right;
  return index;
}

bool TriangleBvh::SegmentHitsSurface(const Eigen::Vector3d& a, const Eigen::Vector3d& b,
                                     double epsilon) const {
  if (nodes_.empty()) return false;
  const Eigen::Vector3d dir = b - a;
  const double len = dir.norm();
  if (!(len > 2 * epsilon) || len == 0) return false;
  const double t_lo = epsilon / len, t_hi = 1.0 - epsilon / len;
  const double dir2 = len * len;
  const Eigen::Vector3d inv_dir = dir.cwiseInverse();
  int stack[128];
  int top = 0;
  stack[top++] = 0;
  while (top > 0) {
    const Node& node = nodes_[stack[--top]];
    if (!SegmentMeetsBox(a, dir, inv_dir, t_lo, t_hi, node.lo, node.hi)) continue;
    if (node.left < 0) {
      for (int t = node.begin; t < node.end; ++t)
        if (SegmentCrossesTriangle(a, dir, dir2, t_lo, t_hi, corners_[3 * t], corners_[3 * t + 1],
                                   corners_[3 * t + 2]))
          return true;
      continue;
    }
    stack[top++] = node.left;
    stack[top++] = node.right;
  }
  return false;
}

TriangleBvh::ClosestPointResult TriangleBvh::ClosestPoint(const Eigen::Vector3d& p) const {
  ClosestPointResult best;
  if (nodes_.empty()) return best;
  best.squared_distance = std::numeric_limits<double>::infinity();
  std::pair<double, int> stack[128];  // (squared distance to the box, node)
  int top = 0;
  stack[top++] = {BoxSquaredDistance(p, nodes_[0].lo, nodes_[0].hi), 0};
  while (top > 0) {
    const auto [box_d2, index] = stack[--top];
    if (box_d2 >= best.squared_distance) continue;
    const Node& node = nodes_[index];
    if (node.left < 0) {
      for (int t = node.begin; t < node.end; ++t) {
        const Eigen::Vector3d q =
            ClosestPointOnTriangle(p, corners_[3 * t], corners_[3 * t + 1], corners_[3 * t + 2]);
        const double d2 = (q - p).squaredNorm();
        if (d2 < best.squared_distance) {
          best.squared_distance = d2;
          best.point = q;
          best.triangle = triangle_index_[t];
        }
      }
      continue;
    }
    const double dl = BoxSquaredDistance(p, nodes_[node.left].lo, nodes_[node.left].hi);
    const double dr = BoxSquaredDistance(p, nodes_[node.right].lo, nodes_[node.right].hi);
    // Push the farther child first so the nearer one is searched first.
    if (dl < dr) {
      stack[top++] = {dr, node.right};
      stack[top++] = {dl, node.left};
    } else {
      stack[top++] = {dl, node.left};
      stack[top++] = {dr, node.right};
    }
  }
  return best;
}

double TriangleBvh::WindingNumber(const Eigen::Vector3d& q, double beta) const {
  if (nodes_.empty()) return 0.0;
  double omega = 0.0;
  int stack[128];
  int top = 0;
  stack[top++] = 0;
  while (top > 0) {
    const Node& n = nodes_[stack[--top]];
    const Eigen::Vector3d d = n.centre - q;
    const double dist = d.norm();
    if (dist > beta * n.radius) {
      omega += n.area.dot(d) / (dist * dist * dist);
    } else if (n.left < 0) {
      for (int t = n.begin; t < n.end; ++t)
        omega += SolidAngle(corners_[3 * t], corners_[3 * t + 1], corners_[3 * t + 2], q);
    } else {
      stack[top++] = n.left;
      stack[top++] = n.right;
    }
  }
  return omega / (4.0 * kPi);
}

}  // namespace skinning
