// Support joints (Yamamoto et al., WSCG 2011, Sec. 4–5; /work/shared/papers/003_*.txt): a virtual
// joint that slides along the parent bone of a bent joint and re-aims at the bent joint's child,
// used by PSD (psd.h) to reduce the volume loss of skinning near bent joints.
#ifndef SKINNING_CORE_SKINNING_SUPPORT_JOINTS_H_
#define SKINNING_CORE_SKINNING_SUPPORT_JOINTS_H_

#include <vector>

#include <Eigen/Core>
#include <Eigen/Geometry>

#include "absl/status/statusor.h"
#include "core/geometry/volume_domain.h"
#include "core/rig/skeleton.h"
#include "core/rig/transform.h"

namespace skinning {

struct SupportJoint {
  int joint = -1;   // the bent joint j
  int parent = -1;  // its parent joint p
  // Bind-space positions: j, p, and the child end point c (the first child joint in index order
  // not at j's position, else j's explicit tail).
  Eigen::Vector3d joint_position = Eigen::Vector3d::Zero();
  Eigen::Vector3d parent_position = Eigen::Vector3d::Zero();
  Eigen::Vector3d child_position = Eigen::Vector3d::Zero();
  double parent_length() const { return (parent_position - joint_position).norm(); }
};

// The support joints for a set of poses: one per deforming joint j whose local rotation differs
// from its bind-pose local rotation (BindPoseLocals) by more than 1e-6 rad in one of `poses`
// (each a full list of #joints local transforms), that has a deforming parent p at a different
// position and a child end point. Ordered by joint index.
std::vector<SupportJoint> FindSupportJoints(const Skeleton& skeleton,
                                            const std::vector<std::vector<Transform>>& poses);

// The support joint's skinning transform (bind → posed) at slide x ∈ [0, 1]:
//   s = j + x (p − j),  s' = T_p s,  T^S(y) = s' + R_min L_p (y − s)
// where L_p is the linear part of T_p and R_min the smallest rotation taking L_p (c − s) to
// T_j c − s' (Eigen::Quaterniond::FromTwoVectors). T: #joints skinning transforms
// (SkinningTransforms). At the bind pose (identity T) it is the identity for every x.
Eigen::Affine3d SupportJointTransform(const SupportJoint& support,
                                      const std::vector<Eigen::Affine3d>& T, double x);

// Geodesic volumetric distance (Yamamoto Sec. 5) from a bind-space point to every mesh vertex:
// Dijkstra over the domain's node graph (26-neighbourhood for voxels; edge length = Euclidean
// distance of the node centres) from the nodes within PointReach(domain) of `point`,
// then interpolated to the vertices with domain.to_mesh. Vertices in a part of the
// domain the point does not reach get +infinity.
//   domain  a VolumeDomain (BuildVoxelDomain) of the mesh
// Returns #V distances. FAILED_PRECONDITION when the point lies outside the domain.
absl::StatusOr<Eigen::VectorXd> GeodesicVertexDistances(const VolumeDomain& domain,
                                                        const Eigen::Vector3d& point);

}  // namespace skinning

#endif  // SKINNING_CORE_SKINNING_SUPPORT_JOINTS_H_
