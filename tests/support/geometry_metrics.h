// Measurements used by skinning tests: convex cross-section areas.
#ifndef SKINNING_TESTS_SUPPORT_GEOMETRY_METRICS_H_
#define SKINNING_TESTS_SUPPORT_GEOMETRY_METRICS_H_

#include <vector>

#include <Eigen/Core>

namespace skinning::testing {

// Area of the convex hull of 2D points (Andrew's monotone chain).
double ConvexHullArea(std::vector<Eigen::Vector2d> points);

// Area of the convex hull of the points among P (#P by 3, as a list of rows) whose signed
// distance to the plane (origin o, unit normal n) is at most `half_thickness`, projected onto
// that plane.
double SlabCrossSectionArea(const std::vector<Eigen::Vector3d>& P, const Eigen::Vector3d& o,
                            const Eigen::Vector3d& n, double half_thickness);

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_GEOMETRY_METRICS_H_
