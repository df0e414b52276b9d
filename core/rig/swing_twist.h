// Swing/twist decomposition of a rotation about a given axis (Baerlocher 2001; used by the
// swing/twist joint deformer of Kavan & Sorkine 2012, Sec. 3.4).
#ifndef SKINNING_CORE_RIG_SWING_TWIST_H_
#define SKINNING_CORE_RIG_SWING_TWIST_H_

#include <Eigen/Geometry>

namespace skinning {

// Splits q = swing · twist, twist about the unit `axis`, swing about an axis ⟂ `axis`
// (Baerlocher 2001). twist_angle in (−π, π] (q and −q give the same result). When the twist is
// undefined (q's components along w and axis both ~0: a 180° swing) the twist is the identity.
//   q           rotation (normalized internally; need not be exactly unit)
//   axis        unit twist axis (3)
//   swing       out: unit quaternion whose vector part is ⟂ axis, w ≥ 0
//   twist_angle out: radians, right-handed about `axis`, in (−π, π]
void SwingTwistSplit(const Eigen::Quaterniond& q, const Eigen::Vector3d& axis,
                     Eigen::Quaterniond* swing, double* twist_angle);

}  // namespace skinning

#endif  // SKINNING_CORE_RIG_SWING_TWIST_H_
