#include "tests/support/psd_fixtures.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "tests/support/fixtures.h"

namespace skinning::testing {

Rig MakePsdArm(int rings, int segments, double blend) {
  Rig rig = MakeCylinderRig(rings, segments, 2.0, 0.25);
  const int n = static_cast<int>(rig.mesh.V.rows());
  SparseWeights W;
  W.joints.resize(n, 2);
  W.weights.resize(n, 2);
  for (int i = 0; i < n; ++i) {
    const double u = std::clamp((rig.mesh.V(i, 0) - (1.0 - blend)) / (2 * blend), 0.0, 1.0);
    const double w1 = u * u * (3 - 2 * u);
    W.joints(i, 0) = 0;
    W.joints(i, 1) = 1;
    W.weights(i, 0) = static_cast<float>(1.0 - w1);
    W.weights(i, 1) = static_cast<float>(w1);
  }
  rig.sparse_weights = W;
  return rig;
}

Pose ElbowPose(const Skeleton& skeleton, double bend, double twist) {
  Pose pose = RestPose(skeleton);
  pose.local[1].rotation = pose.local[1].rotation *
                           Eigen::AngleAxisd(bend, Eigen::Vector3d::UnitY()) *
                           Eigen::AngleAxisd(twist, Eigen::Vector3d::UnitX());
  return pose;
}

RowMatrixX3d ElbowTruth(const RowMatrixX3d& V, double bend, double twist,
                        const ElbowTruthOptions& o) {
  const double c = o.elbow_x, b = o.half_width, a = c - b;
  const double theta = bend;
  RowMatrixX3d U(V.rows(), 3);
  for (Eigen::Index i = 0; i < V.rows(); ++i) {
    const double x = V(i, 0);
    const double t = std::clamp((x - a) / (2 * b), 0.0, 1.0);
    const double phi = theta * t;
    Eigen::Vector3d centre;
    if (x <= a) {
      centre = Eigen::Vector3d(x, 0, 0);
    } else if (x >= a + 2 * b) {
      centre = Eigen::Vector3d(c, 0, 0) +
               (x - c) * Eigen::Vector3d(std::cos(theta), 0, -std::sin(theta));
    } else if (std::abs(theta) < 1e-9) {
      centre = Eigen::Vector3d(x, 0, 0);
    } else {
      // Fillet arc of signed radius R = b / tan(θ/2), from (a, 0, 0) tangent to +x.
      const double R = b / std::tan(theta / 2);
      centre = Eigen::Vector3d(a + R * std::sin(phi), 0, -R * (1 - std::cos(phi)));
    }
    Eigen::Vector3d offset(0, V(i, 1), V(i, 2));
    offset = Eigen::AngleAxisd(twist * t, Eigen::Vector3d::UnitX()) * offset;
    // Inner side: local −z for a positive bend about y.
    const double inner = std::max(0.0, -(theta >= 0 ? 1.0 : -1.0) * offset.z() / o.radius);
    const double s = std::sin(M_PI * t);
    offset *= 1.0 + o.bulge * std::abs(std::sin(theta)) * s * s * inner;
    U.row(i) = (centre + Eigen::AngleAxisd(phi, Eigen::Vector3d::UnitY()) * offset).transpose();
  }
  return U;
}

std::vector<PsdExample> ElbowExamples(const Rig& rig, const std::vector<double>& bends_deg,
                                      const ElbowTruthOptions& options) {
  std::vector<PsdExample> out;
  for (double deg : bends_deg) {
    PsdExample ex;
    ex.name = "bend-" + std::to_string(static_cast<int>(std::lround(deg)));
    ex.pose = ElbowPose(rig.skeleton, deg * M_PI / 180);
    ex.V = ElbowTruth(rig.mesh.V, deg * M_PI / 180, 0.0, options);
    out.push_back(std::move(ex));
  }
  return out;
}

double RmsDistance(const RowMatrixX3d& A, const RowMatrixX3d& B) {
  return std::sqrt((A - B).rowwise().squaredNorm().mean());
}

}  // namespace skinning::testing
