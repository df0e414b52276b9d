// A bounding-volume hierarchy over the triangles of a mesh: segment crossing (line-of-sight),
// closest-point and generalized winding number queries.
#ifndef SKINNING_CORE_GEOMETRY_BVH_H_
#define SKINNING_CORE_GEOMETRY_BVH_H_

#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "core/geometry/mesh.h"

namespace skinning {

class TriangleBvh {
 public:
  // Builds the hierarchy in O(#F log #F) (median splits along the longest axis of the triangle
  // centroids, up to kLeafSize triangles per leaf). Copies the triangles' corners, so V and F
  // may go away afterwards. Every node keeps its box (segment and closest-point queries) and its
  // dipole (winding numbers).
  //   V  #V by 3 vertex positions
  //   F  #F by 3 triangle vertex indices; precondition: all in [0, #V) (CheckTriangleIndices)
  TriangleBvh(const RowMatrixX3d& V, const RowMatrixX3i& F);

  // Whether the segment a–b crosses (or touches) a triangle at a point farther than `epsilon`
  // (a length, in the units of V) from both a and b. Hits within epsilon of an end point are
  // ignored, so a segment that starts on the surface (at a mesh vertex) and leaves it at once
  // does not count as crossing. Segments lying in a triangle's plane never hit it. A segment
  // no longer than 2·epsilon never hits.
  bool SegmentHitsSurface(const Eigen::Vector3d& a, const Eigen::Vector3d& b, double epsilon) const;

  struct ClosestPointResult {
    int triangle = -1;  // index into F, -1 when the hierarchy has no triangles
    Eigen::Vector3d point = Eigen::Vector3d::Zero();  // closest point on that triangle
    double squared_distance = 0.0;
  };
  // The point of the surface closest to p (ties: any of the closest triangles).
  ClosestPointResult ClosestPoint(const Eigen::Vector3d& p) const;

  // The generalized winding number w(q) = Σ_f Ω_f(q) / 4π (Jacobson, Kavan, Sorkine-Hornung
  // 2013; Ω_f the signed solid angle of triangle f seen from q, Van Oosterom–Strackee), fast as
  // in Barill et al. 2018 (first order): a node whose area-weighted centre is farther from q than
  // `beta` × its radius counts as one dipole Σ(area vectors)·(centre − q) / |centre − q|³;
  // nearer nodes are opened and leaves summed exactly. beta = +∞ gives the exact sum.
  // ≈ 1 inside a closed counter-clockwise mesh, 0 outside.
  double WindingNumber(const Eigen::Vector3d& q, double beta = 2.0) const;

  int num_triangles() const { return static_cast<int>(triangle_index_.size()); }

  static constexpr int kLeafSize = 8;

 private:
  struct Node {
    Eigen::Vector3d lo, hi;  // bounding box
    int32_t left = -1;       // child nodes (internal), or -1 for a leaf
    int32_t right = -1;
    int32_t begin = 0, end = 0;  // triangles [begin, end) in leaf order
    // The node's dipole: area-weighted centroid (the plain centroid when the area is 0), the sum
    // of its triangles' area vectors ½ (b − a) × (c − a), and the largest corner distance from
    // the centre.
    Eigen::Vector3d centre, area;
    double radius = 0.0;
  };
  // Builds the subtree over triangle_index_[begin, end) and returns its node index. sums[f]:
  // the sum of triangle f's corners (the split key).
  int Build(int begin, int end, const std::vector<Eigen::Vector3d>& sums);

  std::vector<Node> nodes_;
  // Leaf order: corners of triangle t are corners_[3t .. 3t+2]; its index in F is
  // triangle_index_[t].
  std::vector<Eigen::Vector3d> corners_;
  std::vector<int32_t> triangle_index_;
};

// Closest point to p on the triangle (a, b, c) (degenerate triangles included).
Eigen::Vector3d ClosestPointOnTriangle(const Eigen::Vector3d& p, const Eigen::Vector3d& a,
                                       const Eigen::Vector3d& b, const Eigen::Vector3d& c);

}  // namespace skinning

#endif  // SKINNING_CORE_GEOMETRY_BVH_H_
