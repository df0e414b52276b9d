#include "tests/support/fixtures.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace skinning::testing {

Rig MakeTwoBoneTube(int rings, int segments, double length, double radius) {
  Rig rig;
  rig.name = "two-bone-tube";
  const int nv = rings * segments;
  rig.mesh.V.resize(nv, 3);
  rig.mesh.N.resize(nv, 3);
  SparseWeights W;
  W.joints.resize(nv, 2);
  W.weights.resize(nv, 2);
  const double mid = length / 2, half_band = length / 10;
  for (int r = 0; r < rings; ++r) {
    const double x = length * r / (rings - 1);
    const double b = std::clamp((x - (mid - half_band)) / (2 * half_band), 0.0, 1.0);
    for (int s = 0; s < segments; ++s) {
      const double a = 2 * M_PI * s / segments;
      const int i = r * segments + s;
      rig.mesh.V.row(i) << x, radius * std::cos(a), radius * std::sin(a);
      rig.mesh.N.row(i) << 0, std::cos(a), std::sin(a);
      W.joints.row(i) << 0, 1;
      W.weights.row(i) << static_cast<float>(1 - b), static_cast<float>(b);
    }
  }
  const int nf = 2 * (rings - 1) * segments;
  rig.mesh.F.resize(nf, 3);
  int f = 0;
  for (int r = 0; r + 1 < rings; ++r)
    for (int s = 0; s < segments; ++s) {
      const int a = r * segments + s, b = r * segments + (s + 1) % segments;
      const int c = a + segments, d = b + segments;
      rig.mesh.F.row(f++) << a, b, d;
      rig.mesh.F.row(f++) << a, d, c;
    }
  rig.skeleton.joints.resize(2);
  rig.skeleton.joints[0].name = "root";
  rig.skeleton.joints[0].parent = -1;
  rig.skeleton.joints[1].name = "elbow";
  rig.skeleton.joints[1].parent = 0;
  rig.skeleton.joints[1].rest.translation = Eigen::Vector3d(mid, 0, 0);
  rig.skeleton.joints[1].inverse_bind.translation() = Eigen::Vector3d(-mid, 0, 0);
  rig.sparse_weights = std::move(W);
  return rig;
}

Rig MakeTubeForBaking() {
  Rig rig = MakeTwoBoneTube(41, 24);
  rig.sparse_weights.reset();
  rig.skeleton.joints[0].tail = Eigen::Vector3d(1.0, 0, 0);
  rig.skeleton.joints[1].tail = Eigen::Vector3d(1.9, 0, 0);
  return rig;
}

RandomSkinningData RandomRig(int n, int joints, int k, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  RandomSkinningData r;
  r.V.resize(n, 3);
  r.N.resize(n, 3);
  for (int i = 0; i < n; ++i) {
    r.V.row(i) << u(gen), u(gen), u(gen);
    Eigen::Vector3d nn(u(gen), u(gen), u(gen));
    if (nn.norm() < 1e-3) nn = Eigen::Vector3d::UnitZ();
    r.N.row(i) = nn.normalized().transpose();
  }
  Eigen::MatrixXd D(n, joints);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < joints; ++j) D(i, j) = 0.5 * (u(gen) + 1.0);
  r.W = TopK(D, k);
  return r;
}

}  // namespace skinning::testing
