// Characters generated in code for the benchmarks (pose_latency, load).
#ifndef SKINNING_BENCH_BENCH_RIGS_H_
#define SKINNING_BENCH_BENCH_RIGS_H_

#include <algorithm>
#include <cmath>
#include <string>

#include "server/convert/rig.h"

namespace skinning {

// A tube along +x from 0 to 10 (radius 0.5) with `joints` joints in a chain, joint j at
// x = 10 j / joints, each a child of the one before. `rings` rings of `segments` vertices:
// #V = rings × segments, #F = 2 (rings − 1) segments (open ends, no normals). Each vertex is
// blended between its two nearest joints, stored as glTF characters store them: k = 4 with two
// unused slots.
inline Rig MakeChainTube(int rings, int segments, int joints) {
  Rig rig;
  rig.name = "bench-tube";
  const double length = 10.0, radius = 0.5;
  const int nv = rings * segments;
  rig.mesh.V.resize(nv, 3);
  SparseWeights W;
  W.joints = RowMatrixXi::Zero(nv, 4);
  W.weights = RowMatrixXf::Zero(nv, 4);
  const double spacing = length / joints;
  for (int r = 0; r < rings; ++r) {
    const double x = length * r / (rings - 1);
    const double u = std::clamp(x / spacing - 0.5, 0.0, joints - 1.0);
    const int j0 = std::min(static_cast<int>(u), joints - 1), j1 = std::min(j0 + 1, joints - 1);
    const float b = static_cast<float>(u - j0);
    for (int s = 0; s < segments; ++s) {
      const double a = 2 * M_PI * s / segments;
      const int i = r * segments + s;
      rig.mesh.V.row(i) << x, radius * std::cos(a), radius * std::sin(a);
      W.joints.row(i) << j0, j1, 0, 0;
      W.weights.row(i) << 1 - b, b, 0, 0;
    }
  }
  rig.mesh.F.resize(2 * (rings - 1) * segments, 3);
  int f = 0;
  for (int r = 0; r + 1 < rings; ++r)
    for (int s = 0; s < segments; ++s) {
      const int a = r * segments + s, b = r * segments + (s + 1) % segments;
      rig.mesh.F.row(f++) << a, b, b + segments;
      rig.mesh.F.row(f++) << a, b + segments, a + segments;
    }
  rig.skeleton.joints.resize(joints);
  for (int j = 0; j < joints; ++j) {
    Joint& joint = rig.skeleton.joints[j];
    joint.name = "j" + std::to_string(j);
    joint.parent = j - 1;
    joint.rest.translation = Eigen::Vector3d(j == 0 ? 0.0 : spacing, 0, 0);
    joint.inverse_bind.translation() = Eigen::Vector3d(-spacing * j, 0, 0);
  }
  rig.sparse_weights = std::move(W);
  return rig;
}

// MakeChainTube closed by two caps (a centre vertex and a fan at each end, facing out), without
// weights, the last joint's bone ending just inside the far cap, scaled along x by `stretch`
// (so several of them are different rigs): a rig to bake.
inline Rig MakeClosedChainTube(int rings, int segments, int joints, double stretch = 1.0) {
  Rig rig = MakeChainTube(rings, segments, joints);
  rig.name = "bench-closed-tube";
  rig.sparse_weights.reset();
  const int nv = static_cast<int>(rig.mesh.V.rows());
  const double length = 10.0 * stretch;
  rig.mesh.V.col(0) *= stretch;
  rig.mesh.V.conservativeResize(nv + 2, 3);
  rig.mesh.V.row(nv) << 0, 0, 0;
  rig.mesh.V.row(nv + 1) << length, 0, 0;
  const int nf = static_cast<int>(rig.mesh.F.rows());
  rig.mesh.F.conservativeResize(nf + 2 * segments, 3);
  const int last = (rings - 1) * segments;
  for (int s = 0; s < segments; ++s) {
    const int a = s, b = (s + 1) % segments;
    rig.mesh.F.row(nf + s) << nv, b, a;
    rig.mesh.F.row(nf + segments + s) << nv + 1, last + a, last + b;
  }
  for (Joint& joint : rig.skeleton.joints) {
    joint.rest.translation.x() *= stretch;
    joint.inverse_bind.translation().x() *= stretch;
  }
  rig.skeleton.joints.back().tail = Eigen::Vector3d(0.98 * length, 0, 0);
  return rig;
}

}  // namespace skinning

#endif  // SKINNING_BENCH_BENCH_RIGS_H_
