// Test data for pose space deformation: the cylinder arm bent at the elbow, and a synthetic
// "elastic-like" ground truth for the bend that linear blend skinning cannot represent.
#ifndef SKINNING_TESTS_SUPPORT_PSD_FIXTURES_H_
#define SKINNING_TESTS_SUPPORT_PSD_FIXTURES_H_

#include <vector>

#include "core/rig/pose.h"
#include "core/skinning/psd.h"
#include "server/convert/rig.h"

namespace skinning::testing {

// MakeCylinderRig(rings, segments, 2.0, 0.25) — joint 0 "root" at the origin, joint 1 "elbow" at
// (1, 0, 0), tail (1.9, 0, 0) — with smooth analytic weights (k = 2): the elbow's weight is
// smoothstep(u) = u²(3 − 2u), u = clamp((x − (1 − blend)) / (2 blend), 0, 1), the root's 1 − that.
Rig MakePsdArm(int rings = 41, int segments = 24, double blend = 0.2);

// The pose with the elbow's local rotation R_y(bend) · R_x(twist) (radians; twist is about the
// forearm's own axis) and every other joint at rest.
Pose ElbowPose(const Skeleton& skeleton, double bend, double twist = 0.0);

struct ElbowTruthOptions {
  double elbow_x = 1.0;     // the elbow joint's x
  double half_width = 0.35; // the bend spans x ∈ [elbow_x − half_width, elbow_x + half_width]
  double radius = 0.25;     // the arm's radius (scales the bulge profile)
  double bulge = 0.3;       // inner bulge amplitude (relative radial growth at sin|bend| = 1)
};

// A synthetic elastic-like bend of the straight arm V (#V by 3, along +x) by `bend` about y with
// `twist` about the forearm axis. A sweep: the centreline is straight up to a = elbow_x −
// half_width, then a circular fillet arc that is tangent to the upper arm and to the forearm line
// through the elbow (radius half_width / tan(bend/2)), then the forearm line itself; arc-length
// parameter x ∈ [a, a + 2·half_width] is mapped linearly onto the arc and the cross-section frame
// turns by bend·t (t = (x − a)/(2·half_width)), twisting by twist·t. Cross-sections stay
// perpendicular to the centreline (no LBS candy-wrapper or elbow collapse). On the inner side of
// the bend the cross-section grows radially by bulge · sin|bend| · sin²(π t) · max(0, inner
// offset / radius), standing in for the volume the compressed inner side pushes out. Beyond the
// bend the result is exactly the rigid forearm motion of ElbowPose, so the truth agrees with
// skinning away from the elbow.
RowMatrixX3d ElbowTruth(const RowMatrixX3d& V, double bend, double twist = 0.0,
                        const ElbowTruthOptions& options = {});

// Examples at the given bends (degrees, no twist): name "bend-<deg>", pose ElbowPose, V ElbowTruth.
std::vector<PsdExample> ElbowExamples(const Rig& rig, const std::vector<double>& bends_deg,
                                      const ElbowTruthOptions& options = {});

// Root-mean-square distance between corresponding rows of A and B (#V by 3 each).
double RmsDistance(const RowMatrixX3d& A, const RowMatrixX3d& B);

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_PSD_FIXTURES_H_
