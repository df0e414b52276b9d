// Small characters generated in code.
#ifndef SKINNING_TESTS_SUPPORT_FIXTURES_H_
#define SKINNING_TESTS_SUPPORT_FIXTURES_H_

#include <functional>
#include <vector>

#include <Eigen/Core>
#include <Eigen/Geometry>

#include "absl/status/statusor.h"
#include "core/geometry/mesh.h"
#include "server/convert/rig.h"

namespace skinning::testing {

// A capped tube along +x from 0 to `length`, `rings` rings of `segments` vertices, radius
// `radius`; two joints: joint 0 at the origin (root), joint 1 at x = length/2 (its child).
// Weights blend linearly from joint 0 to joint 1 over the middle fifth of the length; vertices
// outside it have a single influence. Sparse, k = 2. Normals included.
Rig MakeTwoBoneTube(int rings = 21, int segments = 16, double length = 2.0, double radius = 0.25);

// MakeTwoBoneTube() with six more joints, "extra2" to "extra7" (children of joint 1 at its place),
// and k = 4 weights whose file order interleaves two joint sets: even vertices 0.25 on each of
// joints 0-3, odd ones on 4-7. Every block of 8 vertices holds 8 distinct joints, 4 once sorted by
// joint set, so the DQS vertex order (PrepareDqsLaneOrder) pays.
Rig MakeInterleavedJointSetsTube();

// MakeTwoBoneTube(41, 24) without weights, its bones ending at explicit tails (so the second
// bone is a segment, not a point): a rig to bake weights for.
Rig MakeTubeForBaking();

// Generated test shapes for the elasticity-inspired deformers, without weights (rigs to bake):
// a closed cylinder along +x from 0 to `length` of radius `radius` (`rings` rings of `segments`
// vertices plus one centre vertex per cap), and a closed box [0, length] × [-h, h]² triangulated
// on a regular lattice (`nx` by `nyz` by `nyz` lattice points). Both have the same two-bone
// skeleton: joint 0 "root" at the origin with tail (length/2, 0, 0), joint 1 "elbow" at
// (length/2, 0, 0) with tail (0.95 · length, 0, 0). Outward-facing triangles, no normals.
Rig MakeCylinderRig(int rings = 41, int segments = 24, double length = 2.0, double radius = 0.25);
Rig MakeBoxRig(int nx = 41, int nyz = 7, double length = 2.0, double h = 0.25);

// CesiumMan (shared data) with a new root joint 0, "_rootJoint", that no vertex weights: the
// old roots become its children (the other joints shift by one, world bind transforms kept),
// it sits a tenth of the diagonal outside the mesh's box, and its bone (a tail) points further
// out. Dense weights with column 0 all zero. NOT_FOUND when the data is missing.
absl::StatusOr<Rig> CesiumManWithUnweightedRoot();

// Random skinning data: #V positions in [-1, 1]³ with unit normals, and k-sparse weights (the
// top k of random dense weights over `joints` joints, renormalized). Deterministic in `seed`.
struct RandomSkinningData {
  RowMatrixX3d V, N;
  SparseWeights W;
};
RandomSkinningData RandomRig(int n, int joints, int k, unsigned seed);
// m random rigid transforms: translations in [-1, 1]³, rotations from random quaternions.
// Deterministic in `seed`.
std::vector<Eigen::Affine3d> RandomRigids(int m, unsigned seed);

// Rows of a matrix from a list (the generators build lists): positions and triangles.
RowMatrixX3d PositionRows(const std::vector<Eigen::Vector3d>& v);
RowMatrixX3i TriangleRows(const std::vector<Eigen::Vector3i>& f);

// Orients every triangle so that its normal points away from core(centroid).
void OrientOutward(Mesh* mesh, const std::function<Eigen::Vector3d(const Eigen::Vector3d&)>& core);

// A latitude/longitude sphere, outward-facing: nu segments around, nv rings from pole to pole.
Mesh MakeSphere(const Eigen::Vector3d& centre, double r, int nu = 48, int nv = 24);

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_FIXTURES_H_
