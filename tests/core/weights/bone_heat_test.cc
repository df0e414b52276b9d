#include "core/weights/bone_heat.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "core/io/dmat.h"
#include "core/io/obj.h"
#include "core/io/tgf.h"
#include "core/rig/bones.h"
#include "tests/support/data.h"
#include "tests/support/fixtures.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::DataPath;

// A closed tube along +x: `rings` rings of `segments` vertices at x in [0, length], radius
// `radius`, closed by cones whose apexes sit `cap` beyond each end on the axis. Every quad is
// split along the same diagonal, so a rotation by 2π/segments about the axis maps the mesh
// onto itself, and so does the half-turn about the y-axis through x = length/2 (composed with
// that reflection of the ring index) — the heat system inherits both symmetries.
Mesh CappedTube(int rings, int segments, double length, double radius, double cap) {
  Mesh mesh;
  const int nv = rings * segments + 2;
  mesh.V.resize(nv, 3);
  for (int r = 0; r < rings; ++r)
    for (int s = 0; s < segments; ++s) {
      const double a = 2 * M_PI * s / segments;
      mesh.V.row(r * segments + s) << length * r / (rings - 1), radius * std::cos(a),
          radius * std::sin(a);
    }
  const int apex0 = rings * segments, apex1 = apex0 + 1;
  mesh.V.row(apex0) << -cap, 0, 0;
  mesh.V.row(apex1) << length + cap, 0, 0;
  std::vector<Eigen::Vector3i> f;
  for (int r = 0; r + 1 < rings; ++r)
    for (int s = 0; s < segments; ++s) {
      const int a = r * segments + s, b = r * segments + (s + 1) % segments;
      const int c = a + segments, d = b + segments;
      f.push_back({a, b, d});
      f.push_back({a, d, c});
    }
  for (int s = 0; s < segments; ++s) {
    const int s1 = (s + 1) % segments;
    f.push_back({apex0, s1, s});
    f.push_back({apex1, (rings - 1) * segments + s, (rings - 1) * segments + s1});
  }
  mesh.F = testing::TriangleRows(f);
  return mesh;
}

JointHandle BoneHandle(int joint, const Eigen::Vector3d& a, const Eigen::Vector3d& b) {
  JointHandle h;
  h.joint = joint;
  h.segments.push_back({a, b});
  return h;
}

// Bones [i, i+1] along the x-axis, i = 0 .. n-1.
std::vector<JointHandle> ChainAlongX(int n) {
  std::vector<JointHandle> handles;
  for (int i = 0; i < n; ++i)
    handles.push_back(BoneHandle(i, Eigen::Vector3d(i, 0, 0), Eigen::Vector3d(i + 1, 0, 0)));
  return handles;
}

// The closed surface of a union of unit cells (each face split into `sub`² quads, two
// triangles each), cells given by a predicate on integer cell coordinates in [0, dims).
// The faces between an occupied and an empty (or outside) cell, outward oriented.
template <typename Inside>
Mesh CellUnionSurface(const Eigen::Vector3i& dims, int sub, Inside inside) {
  std::map<std::tuple<int, int, int>, int> index;
  std::vector<Eigen::Vector3d> v;
  std::vector<Eigen::Vector3i> f;
  auto vertex = [&](const Eigen::Vector3i& fine) {
    const auto key = std::make_tuple(fine.x(), fine.y(), fine.z());
    auto it = index.find(key);
    if (it != index.end()) return it->second;
    v.push_back(fine.cast<double>() / sub);
    return index[key] = static_cast<int>(v.size()) - 1;
  };
  auto occupied = [&](const Eigen::Vector3i& c) {
    return (c.array() >= 0).all() && (c.array() < dims.array()).all() &&
           inside(c.x(), c.y(), c.z());
  };
  for (int z = 0; z < dims.z(); ++z)
    for (int y = 0; y < dims.y(); ++y)
      for (int x = 0; x < dims.x(); ++x) {
        const Eigen::Vector3i cell(x, y, z);
        if (!occupied(cell)) continue;
        for (int k = 0; k < 3; ++k)
          for (int sign : {-1, 1}) {
            Eigen::Vector3i neighbour = cell;
            neighbour[k] += sign;
            if (occupied(neighbour)) continue;
            const int u = (k + 1) % 3, w = (k + 2) % 3;  // e_u × e_w = e_k
            Eigen::Vector3i base = cell * sub;
            if (sign > 0) base[k] += sub;
            for (int i = 0; i < sub; ++i)
              for (int j = 0; j < sub; ++j) {
                Eigen::Vector3i p00 = base, p10, p01, p11;
                p00[u] += i;
                p00[w] += j;
                p10 = p00, p01 = p00;
                p10[u] += 1;
                p01[w] += 1;
                p11 = p10;
                p11[w] += 1;
                const int a = vertex(p00), b = vertex(p10), c = vertex(p11), d = vertex(p01);
                if (sign > 0) {
                  f.push_back({a, b, c});
                  f.push_back({a, c, d});
                } else {
                  f.push_back({a, c, b});
                  f.push_back({a, d, c});
                }
              }
          }
      }
  Mesh mesh;
  mesh.V = testing::PositionRows(v);
  mesh.F = testing::TriangleRows(f);
  return mesh;
}

// A U in the xy-plane, 2 thick in z: arms x in [0, 3) and [4, 7), y in [0, 8); the base
// y in [0, 2) joins them. The gap between the arms is x in [3, 4), y ≥ 2.
Mesh UShape() {
  return CellUnionSurface(Eigen::Vector3i(7, 8, 2), 2,
                          [](int x, int y, int) { return x < 3 || x >= 4 || y < 2; });
}

int FindVertex(const Mesh& mesh, const Eigen::Vector3d& p) {
  for (int i = 0; i < mesh.V.rows(); ++i)
    if ((mesh.V.row(i).transpose() - p).norm() < 1e-12) return i;
  return -1;
}

void ExpectPartitionOfUnity(const Eigen::MatrixXd& W) {
  EXPECT_GE(W.minCoeff(), 0.0);
  EXPECT_LE(W.maxCoeff(), 1.0);
  EXPECT_LT((W.rowwise().sum().array() - 1.0).abs().maxCoeff(), 1e-12);
}

TEST(BoneHeatTest, TwoBoneTubeWeightsArePartitionOfUnityAndFollowTheBones) {
  const int rings = 41, segments = 16;
  const Mesh tube = CappedTube(rings, segments, 2.0, 0.25, 0.25);
  BoneHeatReport report;
  const absl::StatusOr<Eigen::MatrixXd> W = BoneHeatWeights(tube, ChainAlongX(2), {}, &report);
  ASSERT_TRUE(W.ok()) << W.status();
  ASSERT_EQ(W->rows(), tube.V.rows());
  ASSERT_EQ(W->cols(), 2);
  ExpectPartitionOfUnity(*W);
  EXPECT_EQ(report.vertices_without_visible_bone, 0);
  EXPECT_EQ(report.zero_rows, 0);
  // Near the ends one bone dominates.
  EXPECT_GT((*W)(0, 0), 0.95);                       // ring at x = 0
  EXPECT_GT((*W)((rings - 1) * segments, 1), 0.95);  // ring at x = 2
  EXPECT_GT((*W)(rings * segments, 0), 0.95);        // apex at x = -0.25
  EXPECT_GT((*W)(rings * segments + 1, 1), 0.95);    // apex at x = 2.25
  // At the joint (x = 1) both bones are equally near: half and half.
  EXPECT_NEAR((*W)((rings / 2) * segments, 0), 0.5, 1e-6);
  // Monotone along a surface line (s = 0), and the same on every vertex of a ring.
  for (int r = 0; r + 1 < rings; ++r)
    EXPECT_GE((*W)(r * segments, 0), (*W)((r + 1) * segments, 0) - 1e-12) << "ring " << r;
  double ring_spread = 0;
  for (int r = 0; r < rings; ++r)
    for (int s = 1; s < segments; ++s)
      ring_spread =
          std::max(ring_spread, std::abs((*W)(r * segments + s, 0) - (*W)(r * segments, 0)));
  EXPECT_LT(ring_spread, 1e-6);
  // The half-turn about the joint swaps the bones: w_0(x) = w_1(2 - x).
  for (int r = 0; r < rings; ++r)
    EXPECT_NEAR((*W)(r * segments, 0), (*W)((rings - 1 - r) * segments, 1), 1e-6);
  // The transition is smooth, not a step: some vertices are well mixed.
  int mixed = 0;
  for (int i = 0; i < W->rows(); ++i) mixed += (*W)(i, 0) > 0.2 && (*W)(i, 0) < 0.8;
  EXPECT_GE(mixed, 2 * segments);
  std::printf("[ values ] tube w0 along x:");
  for (int r = 0; r < rings; r += 5) std::printf(" %.3f", (*W)(r * segments, 0));
  std::printf("\n");
}

TEST(BoneHeatTest, NearestBoneBehindAWallIsReplacedByTheVisibleOne) {
  const Mesh u = UShape();
  ASSERT_TRUE(ValidateMesh(u).ok());
  // Bone A down the middle of the left arm; bone B inside the right arm, close to the gap.
  const std::vector<JointHandle> handles = {
      BoneHandle(0, Eigen::Vector3d(1.5, 1, 1), Eigen::Vector3d(1.5, 7, 1)),
      BoneHandle(1, Eigen::Vector3d(4.3, 1, 1), Eigen::Vector3d(4.3, 7, 1))};
  // On the left arm's wall facing the gap: 1.5 from A, only 1.3 from B, but B is behind the
  // right arm's wall at x = 4.
  const int behind = FindVertex(u, Eigen::Vector3d(3, 5, 1));
  ASSERT_GE(behind, 0);
  // On the right arm's wall facing the gap: 0.3 from B, visible.
  const int facing = FindVertex(u, Eigen::Vector3d(4, 5, 1));
  ASSERT_GE(facing, 0);
  BoneHeatOptions options;
  options.heat_coefficient = 1.0;
  options.nearest_must_be_visible = false;  // the nearest visible bone (the paper's words)
  const BoneHeatSources sources = NearestVisibleBones(u.V, u.F, handles, options);
  EXPECT_EQ(sources.nearest_any(behind), 1);   // the nearest bone is B ...
  EXPECT_EQ(sources.nearest(behind, 0), 1.0);  // ... but the visible one is A
  EXPECT_EQ(sources.nearest(behind, 1), 0.0);
  EXPECT_NEAR(sources.heat(behind), 1.0 / (1.5 * 1.5), 1e-12);
  EXPECT_EQ(sources.nearest(facing, 1), 1.0);
  EXPECT_NEAR(sources.heat(facing), 1.0 / (0.3 * 0.3), 1e-9);
  // From the geometry of this U: on the arms' side walls between y = 2.5 and the bones' ends
  // (x = 0 or 3 on the left arm, 4 or 7 on the right, 0 < z < 2), each vertex sees only its own
  // arm's bone, whichever bone is nearer.
  for (int i = 0; i < u.V.rows(); ++i) {
    const Eigen::Vector3d p = u.V.row(i).transpose();
    if (p.y() < 2.5 - 1e-12 || p.y() > 7 + 1e-12 || p.z() <= 1e-12 || p.z() >= 2 - 1e-12) continue;
    if (p.x() <= 3 + 1e-12) {
      EXPECT_EQ(sources.nearest(i, 0), 1.0) << p.transpose();
    } else if (p.x() >= 4 - 1e-12) {
      EXPECT_EQ(sources.nearest(i, 1), 1.0) << p.transpose();
    }
  }
  const absl::StatusOr<Eigen::MatrixXd> W = BoneHeatWeights(u, handles, options);
  ASSERT_TRUE(W.ok()) << W.status();
  ExpectPartitionOfUnity(*W);
  EXPECT_GT((*W)(behind, 0), 0.9);
  EXPECT_GT((*W)(facing, 1), 0.9);
}

// The default rule (Blender's): a vertex whose nearest bone is hidden gets no heat of its own and
// takes its neighbours' — here, the left arm's bone A.
TEST(BoneHeatTest, AVertexWhoseNearestBoneIsHiddenTakesItsNeighboursHeat) {
  const Mesh u = UShape();
  const std::vector<JointHandle> handles = {
      BoneHandle(0, Eigen::Vector3d(1.5, 1, 1), Eigen::Vector3d(1.5, 7, 1)),
      BoneHandle(1, Eigen::Vector3d(4.3, 1, 1), Eigen::Vector3d(4.3, 7, 1))};
  const int behind = FindVertex(u, Eigen::Vector3d(3, 5, 1));  // nearest B, behind the wall
  const int facing = FindVertex(u, Eigen::Vector3d(4, 5, 1));  // nearest B, visible
  ASSERT_GE(behind, 0);
  ASSERT_GE(facing, 0);
  const BoneHeatOptions options;
  ASSERT_TRUE(options.nearest_must_be_visible);
  const BoneHeatSources sources = NearestVisibleBones(u.V, u.F, handles, options);
  EXPECT_EQ(sources.nearest_any(behind), 1);
  EXPECT_EQ(sources.heat(behind), 0.0);
  EXPECT_EQ(sources.nearest(behind, 0), 0.0);
  EXPECT_EQ(sources.nearest(behind, 1), 0.0);
  EXPECT_EQ(sources.nearest(facing, 1), 1.0);
  EXPECT_NEAR(sources.heat(facing), options.heat_coefficient / (0.3 * 0.3), 1e-9);
  const absl::StatusOr<Eigen::MatrixXd> W = BoneHeatWeights(u, handles, options);
  ASSERT_TRUE(W.ok()) << W.status();
  ExpectPartitionOfUnity(*W);
  EXPECT_GT((*W)(behind, 0), 0.9) << "its neighbours on the left arm are heated by A";
  EXPECT_GT((*W)(facing, 1), 0.9);
}

TEST(BoneHeatTest, TiedBonesShareTheHeat) {
  const Mesh tube = CappedTube(21, 12, 2.0, 0.25, 0.25);
  const BoneHeatSources sources = NearestVisibleBones(tube.V, tube.F, ChainAlongX(2));
  const int joint_ring = 10 * 12;  // x = 1
  EXPECT_EQ(sources.nearest(joint_ring, 0), 0.5);
  EXPECT_EQ(sources.nearest(joint_ring, 1), 0.5);
  const double c = BoneHeatOptions().heat_coefficient;
  EXPECT_NEAR(sources.heat(joint_ring), 2.0 * c / (0.25 * 0.25), 1e-9);  // h·c/d², h = 2
  EXPECT_NEAR(sources.heat(0), c / (0.25 * 0.25), 1e-9);
}

// Blender's normal-weighted distance (an option, off by default): on a tube around its bones
// every normal points away from the bone, cos θ = 1, so d becomes d / (½ · 2.001).
TEST(BoneHeatTest, NormalWeightedDistanceDividesByHalfOfCosinePlusOne) {
  const Mesh tube = CappedTube(21, 12, 2.0, 0.25, 0.25);
  BoneHeatOptions options;
  options.normal_weighted_distance = true;
  const BoneHeatSources sources = NearestVisibleBones(tube.V, tube.F, ChainAlongX(2), options);
  const int ring = 5 * 12;  // x = 0.5, on bone 0 only
  // The vertex normal of a ring vertex of this tube is radial up to the discretization.
  const double d = 0.25 / (0.5 * (1.0 + 1.001));
  EXPECT_NEAR(sources.heat(ring), options.heat_coefficient / (d * d), 1e-3 * options.heat_coefficient / (d * d));
  EXPECT_EQ(sources.nearest(ring, 0), 1.0);
}

TEST(BoneHeatTest, NonDeformingJointsGetZeroColumnsAndPointHandlesWork) {
  const int rings = 21, segments = 12;
  const Mesh tube = CappedTube(rings, segments, 2.0, 0.25, 0.25);
  std::vector<JointHandle> handles(3);
  handles[0] = BoneHandle(0, Eigen::Vector3d(0, 0, 0), Eigen::Vector3d(1, 0, 0));
  handles[1] = BoneHandle(1, Eigen::Vector3d(0, 0, 0), Eigen::Vector3d(2, 0, 0));
  handles[1].deforms = false;  // would be the nearest bone everywhere if it counted
  handles[2].joint = 2;
  handles[2].segments.push_back({Eigen::Vector3d(2, 0, 0), Eigen::Vector3d(2, 0, 0)});  // a point
  const absl::StatusOr<Eigen::MatrixXd> W = BoneHeatWeights(tube, handles);
  ASSERT_TRUE(W.ok()) << W.status();
  ExpectPartitionOfUnity(*W);
  EXPECT_EQ(W->col(1).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_GT((*W)(rings * segments + 1, 2), 0.9);  // apex beyond x = 2
  EXPECT_GT((*W)(0, 0), 0.9);
}

TEST(BoneHeatTest, ArmWeightsAreCloseToLibiglReference) {
  const std::string obj = DataPath("libigl/arm/arm.obj"), tgf = DataPath("libigl/arm/arm.tgf"),
                    dmat = DataPath("libigl/arm/arm-weights.dmat");
  SKINNING_REQUIRE_DATA(obj);
  SKINNING_REQUIRE_DATA(tgf);
  SKINNING_REQUIRE_DATA(dmat);
  const absl::StatusOr<Mesh> mesh = ReadObj(obj);
  ASSERT_TRUE(mesh.ok()) << mesh.status();
  const absl::StatusOr<TgfGraph> graph = ReadTgf(tgf);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const absl::StatusOr<Skeleton> skeleton = SkeletonFromBones(*graph);
  ASSERT_TRUE(skeleton.ok()) << skeleton.status();
  const absl::StatusOr<std::vector<JointHandle>> handles = JointHandles(*skeleton);
  ASSERT_TRUE(handles.ok()) << handles.status();
  const absl::StatusOr<Eigen::MatrixXd> reference = ReadDmat(dmat);
  ASSERT_TRUE(reference.ok()) << reference.status();
  BoneHeatReport report;
  const absl::StatusOr<Eigen::MatrixXd> W = BoneHeatWeights(*mesh, *handles, {}, &report);
  ASSERT_TRUE(W.ok()) << W.status();
  ASSERT_EQ(W->rows(), reference->rows());
  ASSERT_EQ(W->cols(), reference->cols());
  ExpectPartitionOfUnity(*W);
  const Eigen::ArrayXXd diff = (*W - *reference).array().abs();
  int same_argmax = 0;
  for (int i = 0; i < W->rows(); ++i) {
    int a, b;
    W->row(i).maxCoeff(&a);
    reference->row(i).maxCoeff(&b);
    same_argmax += a == b;
  }
  std::printf(
      "[ values ] arm bone heat vs arm-weights.dmat: mean |diff| %.4f, max |diff| %.4f, "
      "dominant bone agrees on %.1f%% of %d vertices; %d vertices see no bone, %d zero rows\n",
      diff.mean(), diff.maxCoeff(), 100.0 * same_argmax / W->rows(), static_cast<int>(W->rows()),
      report.vertices_without_visible_bone, report.zero_rows);
  std::printf("[ timing ] arm bone heat %.3f s (visibility %.3f, factorize %.3f, solve %.3f)\n",
              report.seconds, report.visibility_seconds, report.factorize_seconds,
              report.solve_seconds);
  EXPECT_LT(diff.mean(), 0.15);
  EXPECT_GT(same_argmax, W->rows() * 7 / 10);
}

TEST(BoneHeatTest, TenThousandVerticesAndTwentyBonesGiveAPartitionOfUnity) {
  constexpr int kRings = 626, kSegments = 16;
  const Mesh tube = CappedTube(kRings, kSegments, 20.0, 0.4, 0.3);  // 10,018 vertices
  ASSERT_GE(tube.V.rows(), 10000);
  BoneHeatReport report;
  const absl::StatusOr<Eigen::MatrixXd> W = BoneHeatWeights(tube, ChainAlongX(20), {}, &report);
  ASSERT_TRUE(W.ok()) << W.status();
  ExpectPartitionOfUnity(*W);
  // Along the middle half of bone j (x in [j + 1/4, j + 3/4]) j is the one nearest bone, and the
  // heat it puts on the skin there outweighs what diffuses from its neighbours: j dominates.
  int checked = 0;
  for (int v = 0; v < kRings * kSegments; ++v) {  // the rings; the two apexes follow them
    const double x = tube.V(v, 0), offset = x - std::floor(x);
    if (offset < 0.25 || offset > 0.75) continue;
    Eigen::Index dominant = 0;
    W->row(v).maxCoeff(&dominant);
    EXPECT_EQ(dominant, static_cast<Eigen::Index>(std::floor(x))) << "vertex " << v << " at x = " << x;
    ++checked;
  }
  EXPECT_GT(checked, 4000);
  std::printf(
      "[ timing ] bone heat, %d vertices, 20 bones: %.3f s (visibility %.3f, factorize %.3f, "
      "solve %.3f)\n",
      static_cast<int>(tube.V.rows()), report.seconds, report.visibility_seconds,
      report.factorize_seconds, report.solve_seconds);
  // How fast is a benchmark's question (bench/bake_bench --methods=bone_heat), not this test's.
}

TEST(BoneHeatTest, ReportsStagesAndHonoursCancellation) {
  const Mesh tube = CappedTube(21, 12, 2.0, 0.25, 0.25);
  std::vector<std::string> stages;
  std::vector<double> fractions;
  std::atomic<bool> cancel{false};
  const Progress progress(
      [&](const std::string& stage, double f) {
        stages.push_back(stage);
        fractions.push_back(f);
      },
      &cancel);
  ASSERT_TRUE(BoneHeatWeights(tube, ChainAlongX(2), {}, nullptr, progress).ok());
  auto seen = [&](const std::string& prefix) {
    for (const std::string& s : stages)
      if (s.rfind(prefix, 0) == 0) return true;
    return false;
  };
  EXPECT_TRUE(seen("visibility"));
  EXPECT_TRUE(seen("factorize"));
  EXPECT_TRUE(seen("solve joint 2/2"));
  for (size_t i = 1; i < fractions.size(); ++i) EXPECT_GE(fractions[i], fractions[i - 1]);
  cancel = true;
  const absl::StatusOr<Eigen::MatrixXd> W =
      BoneHeatWeights(tube, ChainAlongX(2), {}, nullptr, progress);
  EXPECT_EQ(W.status().code(), absl::StatusCode::kCancelled);
}

TEST(BoneHeatTest, RejectsSkeletonWithoutBonesAndInvalidMesh) {
  const Mesh tube = CappedTube(5, 6, 1.0, 0.25, 0.25);
  std::vector<JointHandle> none(1);
  none[0].deforms = false;
  EXPECT_EQ(BoneHeatWeights(tube, none).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BoneHeatWeights(tube, {}).status().code(), absl::StatusCode::kInvalidArgument);
  Mesh broken = tube;
  broken.F(0, 1) = 1000;
  EXPECT_EQ(BoneHeatWeights(broken, ChainAlongX(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(BoneHeatTest, ComponentThatSeesNoBoneFallsBackToNearestBone) {
  // A tube with its bone inside a separate closed box: the tube's wall hides the bone from every
  // corner of the box, so the box (its own connected component) sees no bone at all.
  const Mesh tube = CappedTube(11, 8, 1.0, 0.25, 0.25);
  const Mesh cube =
      CellUnionSurface(Eigen::Vector3i(1, 1, 1), 1, [](int, int, int) { return true; });
  Mesh both;
  both.V.resize(tube.V.rows() + cube.V.rows(), 3);
  both.V << tube.V, ((3.0 * cube.V).rowwise() + Eigen::RowVector3d(-1, -1.5, -1.5));
  both.F.resize(tube.F.rows() + cube.F.rows(), 3);
  both.F << tube.F, (cube.F.array() + static_cast<int>(tube.V.rows())).matrix();
  ASSERT_EQ(cube.V.rows(), 8);
  BoneHeatReport report;
  const absl::StatusOr<Eigen::MatrixXd> W = BoneHeatWeights(both, ChainAlongX(1), {}, &report);
  ASSERT_TRUE(W.ok()) << W.status();
  ExpectPartitionOfUnity(*W);
  EXPECT_EQ(report.vertices_without_visible_bone, 8);  // the box's corners
  EXPECT_EQ(report.vertices_heated_by_neighbours, 0);
  EXPECT_EQ(report.zero_rows, 0);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
