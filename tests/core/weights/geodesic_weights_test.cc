#include "core/weights/geodesic_weights.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

// Nodes at the lattice points (x, y, z)·spacing, 0 ≤ x < dims.x() etc., for which `inside` holds,
// joined to their (up to) 26 lattice neighbours that are also inside, as VolumeDomain's CSR graph.
struct GridDomain {
  VolumeDomain domain;
  Eigen::Vector3i dims;
  std::vector<int> index;  // lattice point → node, or -1
  int Node(int x, int y, int z) const { return index[x + dims.x() * (y + dims.y() * z)]; }
};

GridDomain MakeGridDomain(const Eigen::Vector3i& dims, double spacing,
                          const std::function<bool(int, int, int)>& inside) {
  GridDomain g;
  g.dims = dims;
  g.index.assign(dims.prod(), -1);
  std::vector<Eigen::Vector3i> points;
  for (int z = 0; z < dims.z(); ++z)
    for (int y = 0; y < dims.y(); ++y)
      for (int x = 0; x < dims.x(); ++x)
        if (inside(x, y, z)) {
          g.index[x + dims.x() * (y + dims.y() * z)] = static_cast<int>(points.size());
          points.emplace_back(x, y, z);
        }
  VolumeDomain& d = g.domain;
  d.kind = VolumeDomain::Kind::kVoxelGrid;
  d.spacing = spacing;
  d.nodes.resize(points.size(), 3);
  d.graph_offsets.push_back(0);
  for (size_t i = 0; i < points.size(); ++i) {
    const Eigen::Vector3i p = points[i];
    d.nodes.row(i) = spacing * p.cast<double>().transpose();
    for (int dz = -1; dz <= 1; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          if (dx == 0 && dy == 0 && dz == 0) continue;
          const Eigen::Vector3i q = p + Eigen::Vector3i(dx, dy, dz);
          if ((q.array() < 0).any() || (q.array() >= dims.array()).any()) continue;
          const int j = g.Node(q.x(), q.y(), q.z());
          if (j < 0) continue;
          d.graph_targets.push_back(j);
          d.graph_lengths.push_back(spacing * std::sqrt(double(dx * dx + dy * dy + dz * dz)));
        }
    d.graph_offsets.push_back(static_cast<int32_t>(d.graph_targets.size()));
  }
  return g;
}

// Shortest 26-neighbour path length between lattice points in a convex (box) region: with the
// offsets sorted a ≥ b ≥ c, c diagonal steps (√3), b − c face-diagonal steps (√2), a − b straight.
double LatticePathLength(const Eigen::Vector3i& p, const Eigen::Vector3i& q, double spacing) {
  int d[3] = {std::abs(p.x() - q.x()), std::abs(p.y() - q.y()), std::abs(p.z() - q.z())};
  std::sort(d, d + 3);
  return spacing * (std::sqrt(3.0) * d[0] + std::sqrt(2.0) * (d[1] - d[0]) + (d[2] - d[1]));
}

double HalfMeanEdge(const VolumeDomain& d) {
  double sum = 0;
  for (double l : d.graph_lengths) sum += l;
  return 0.5 * sum / d.graph_lengths.size();
}

void ExpectRowsSumToOne(const Eigen::MatrixXd& W) {
  EXPECT_GE(W.minCoeff(), 0.0);
  EXPECT_LE(W.maxCoeff(), 1.0 + 1e-15);
  EXPECT_LT((W.rowwise().sum().array() - 1.0).abs().maxCoeff(), 1e-12);
}

// A U of nodes in a 13 × 13 × 2 lattice: arms x ≤ 3 and x ≥ 9, base y ≤ 3.
GridDomain UDomain() {
  return MakeGridDomain(Eigen::Vector3i(13, 13, 2), 1.0,
                        [](int x, int y, int) { return x <= 3 || x >= 9 || y <= 3; });
}

std::vector<int> NodesWhere(const GridDomain& g, const std::function<bool(int, int, int)>& pred) {
  std::vector<int> nodes;
  for (int z = 0; z < g.dims.z(); ++z)
    for (int y = 0; y < g.dims.y(); ++y)
      for (int x = 0; x < g.dims.x(); ++x)
        if (g.Node(x, y, z) >= 0 && pred(x, y, z)) nodes.push_back(g.Node(x, y, z));
  return nodes;
}

TEST(GeodesicWeightsTest, DistanceInABoxIsTheShortestLatticePath) {
  const double h = 0.25;
  const GridDomain g =
      MakeGridDomain(Eigen::Vector3i(6, 5, 4), h, [](int, int, int) { return true; });
  GeodesicWeightsReport report;
  ASSERT_TRUE(GeodesicVoxelWeights(g.domain, {{g.Node(0, 0, 0)}}, {}, &report).ok());
  EXPECT_NEAR(report.max_finite_distance,
              LatticePathLength(Eigen::Vector3i(0, 0, 0), Eigen::Vector3i(5, 4, 3), h), 1e-12);
  EXPECT_EQ(report.unreachable_nodes, 0);
}

// A 7 × 6 × 3 box of spacing h with three one-node handles: every node's weights equal
// `weight(lattice path length + ε)` of each handle, normalized.
constexpr double kBoxSpacing = 0.5;
GridDomain Box() { return MakeGridDomain(Eigen::Vector3i(7, 6, 3), kBoxSpacing, [](int, int, int) { return true; }); }

void ExpectBoxWeights(const GeodesicWeightsOptions& options, const std::function<double(double)>& weight,
                      const std::string& what) {
  const GridDomain g = Box();
  const Eigen::Vector3i a(0, 0, 0), b(6, 5, 2), c(3, 0, 2);
  const absl::StatusOr<Eigen::MatrixXd> W = GeodesicVoxelWeights(
      g.domain, {{g.Node(a.x(), a.y(), a.z())}, {g.Node(b.x(), b.y(), b.z())}, {g.Node(c.x(), c.y(), c.z())}},
      options);
  ASSERT_TRUE(W.ok()) << W.status();
  ExpectRowsSumToOne(*W);
  const double eps = HalfMeanEdge(g.domain);
  for (int z = 0; z < 3; ++z)
    for (int y = 0; y < 6; ++y)
      for (int x = 0; x < 7; ++x) {
        const Eigen::Vector3i p(x, y, z);
        if (p == a || p == b || p == c) continue;
        Eigen::Vector3d w(weight(LatticePathLength(p, a, kBoxSpacing) + eps),
                          weight(LatticePathLength(p, b, kBoxSpacing) + eps),
                          weight(LatticePathLength(p, c, kBoxSpacing) + eps));
        w /= w.sum();
        const int i = g.Node(x, y, z);
        for (int k = 0; k < 3; ++k) EXPECT_NEAR((*W)(i, k), w(k), 1e-12) << what << " at " << p.transpose();
      }
}

TEST(GeodesicWeightsTest, WeightsInABoxAreNormalizedInverseDistancePowers) {
  for (double falloff : {1.0, 2.0, 3.5}) {
    GeodesicWeightsOptions options;
    options.falloff = falloff;
    ExpectBoxWeights(options, [&](double d) { return std::pow(d, -falloff); }, "falloff " + std::to_string(falloff));
  }
}

// Dionne & de Lasa's weight function: w ∝ (1 / ((1 − α) d̂ + α d̂²))², d̂ = (d + ε) / D with D the
// diagonal of the nodes' bounding box, against the lattice path lengths.
TEST(GeodesicWeightsTest, DionneFalloffWeightsInABoxFollowThePapersFunction) {
  const double D = kBoxSpacing * std::sqrt(6.0 * 6.0 + 5.0 * 5.0 + 2.0 * 2.0);
  for (double alpha : {0.0, 0.3, 1.0}) {
    GeodesicWeightsOptions options;
    options.dionne_falloff = alpha;
    ExpectBoxWeights(options, [&](double d) {
      const double n = d / D;
      return 1.0 / std::pow((1 - alpha) * n + alpha * n * n, 2);
    }, "alpha " + std::to_string(alpha));
  }
  const GridDomain g = Box();
  GeodesicWeightsOptions bad;
  for (double alpha : {1.5, std::nan("")}) {
    bad.dionne_falloff = alpha;
    const absl::Status s = GeodesicVoxelWeights(g.domain, {{0}}, bad).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("dionne_falloff"), std::string::npos) << s;
  }
}

TEST(GeodesicWeightsTest, KeepsExactlyTheNearestHandlesInABox) {
  // Seven single-node handles, three influences: every node's weights come from its three
  // nearest handles by closed-form lattice distance (nodes with a tie at the third place are
  // skipped, as either handle may be kept).
  const double h = 1.0;
  const GridDomain g =
      MakeGridDomain(Eigen::Vector3i(10, 9, 4), h, [](int, int, int) { return true; });
  const std::vector<Eigen::Vector3i> sites = {{0, 0, 0}, {9, 8, 3}, {4, 4, 1}, {9, 0, 2},
                                              {0, 8, 3}, {6, 2, 0}, {2, 6, 2}};
  std::vector<std::vector<int>> handles;
  for (const auto& p : sites) handles.push_back({g.Node(p.x(), p.y(), p.z())});
  GeodesicWeightsOptions options;
  options.max_influences = 3;
  options.falloff = 2.0;
  const absl::StatusOr<Eigen::MatrixXd> W = GeodesicVoxelWeights(g.domain, handles, options);
  ASSERT_TRUE(W.ok()) << W.status();
  ExpectRowsSumToOne(*W);
  const double eps = HalfMeanEdge(g.domain);
  int checked = 0;
  for (int z = 0; z < 4; ++z)
    for (int y = 0; y < 9; ++y)
      for (int x = 0; x < 10; ++x) {
        const Eigen::Vector3i p(x, y, z);
        std::vector<std::pair<double, int>> d;
        for (int s = 0; s < static_cast<int>(sites.size()); ++s)
          d.push_back({LatticePathLength(p, sites[s], h), s});
        std::sort(d.begin(), d.end());
        if (d[0].first == 0 || std::abs(d[2].first - d[3].first) < 1e-9) continue;
        Eigen::VectorXd expected = Eigen::VectorXd::Zero(sites.size());
        for (int r = 0; r < 3; ++r) expected(d[r].second) = std::pow(d[r].first + eps, -2.0);
        expected /= expected.sum();
        const int i = g.Node(x, y, z);
        for (int s = 0; s < static_cast<int>(sites.size()); ++s)
          ASSERT_NEAR((*W)(i, s), expected(s), 1e-12) << p.transpose() << " handle " << s;
        ++checked;
      }
  EXPECT_GT(checked, 200);
}

// Σ over the graph's edges (each once) of |w_i − w_j|²: what a smoothing pass lowers.
double GraphEnergy(const VolumeDomain& d, const Eigen::MatrixXd& W) {
  double e = 0.0;
  for (int i = 0; i < d.num_nodes(); ++i)
    for (int k = d.graph_offsets[i]; k < d.graph_offsets[i + 1]; ++k)
      if (d.graph_targets[k] > i) e += (W.row(i) - W.row(d.graph_targets[k])).squaredNorm();
  return e;
}

// Smoothing, with as many influences as handles (no truncation): one pass is, at every node off
// the handles, half its weights plus half its neighbours' mean, computed here from the unsmoothed
// weights; handle nodes keep theirs; every pass lowers the graph energy.
TEST(GeodesicWeightsTest, SmoothingPassesAverageWithTheNeighboursAndLowerTheGraphEnergy) {
  const GridDomain g = Box();
  const std::vector<std::vector<int>> handles = {{g.Node(0, 0, 0), g.Node(1, 0, 0)}, {g.Node(6, 5, 2)}, {g.Node(6, 0, 1)}};
  GeodesicWeightsOptions options;
  options.max_influences = 3;
  const absl::StatusOr<Eigen::MatrixXd> plain = GeodesicVoxelWeights(g.domain, handles, options);
  ASSERT_TRUE(plain.ok()) << plain.status();
  std::vector<bool> on_handle(g.domain.num_nodes(), false);
  for (const auto& nodes : handles)
    for (int node : nodes) on_handle[node] = true;
  Eigen::MatrixXd expected = *plain;
  for (int i = 0; i < g.domain.num_nodes(); ++i) {
    if (on_handle[i]) continue;
    Eigen::RowVectorXd mean = Eigen::RowVectorXd::Zero(3);
    const int begin = g.domain.graph_offsets[i], end = g.domain.graph_offsets[i + 1];
    for (int k = begin; k < end; ++k) mean += plain->row(g.domain.graph_targets[k]);
    expected.row(i) = 0.5 * plain->row(i) + 0.5 * mean / (end - begin);
  }
  options.smoothing = 1;
  const absl::StatusOr<Eigen::MatrixXd> once = GeodesicVoxelWeights(g.domain, handles, options);
  ASSERT_TRUE(once.ok()) << once.status();
  EXPECT_LT((*once - expected).cwiseAbs().maxCoeff(), 1e-14);
  double energy = GraphEnergy(g.domain, *plain);
  for (int passes : {1, 2, 5, 20}) {
    options.smoothing = passes;
    const absl::StatusOr<Eigen::MatrixXd> W = GeodesicVoxelWeights(g.domain, handles, options);
    ASSERT_TRUE(W.ok()) << W.status();
    const double e = GraphEnergy(g.domain, *W);
    EXPECT_LT(e, energy) << passes << " passes";
    energy = e;
    EXPECT_LT((W->rowwise().sum().array() - 1).abs().maxCoeff(), 1e-12) << passes;
    EXPECT_GE(W->minCoeff(), 0.0);
    for (int i = 0; i < g.domain.num_nodes(); ++i) {
      if (on_handle[i]) {
        EXPECT_EQ(W->row(i), plain->row(i)) << "node " << i;
      }
    }
  }
}

// With fewer influences than handles a smoothed node keeps its largest weights only, scaled to
// sum to 1 (a mean over neighbours whose two handles differ would hold three or four); out-of-range
// pass counts are refused, naming the field.
TEST(GeodesicWeightsTest, SmoothingKeepsTheInfluenceCountAndRefusesBadPassCounts) {
  const GridDomain g = Box();
  const std::vector<std::vector<int>> handles = {{g.Node(0, 0, 0)}, {g.Node(6, 5, 2)}, {g.Node(6, 0, 1)}, {g.Node(0, 5, 2)}};
  GeodesicWeightsOptions options;
  options.max_influences = 2;
  options.smoothing = 10;
  const absl::StatusOr<Eigen::MatrixXd> W = GeodesicVoxelWeights(g.domain, handles, options);
  ASSERT_TRUE(W.ok()) << W.status();
  for (int i = 0; i < W->rows(); ++i) {
    EXPECT_LE((W->row(i).array() > 0).count(), 2) << "node " << i << ": " << W->row(i);
    EXPECT_NEAR(W->row(i).sum(), 1.0, 1e-12);
  }
  for (int passes : {-1, GeodesicWeightsOptions::kMaxSmoothing + 1}) {
    options.smoothing = passes;
    const absl::Status s = GeodesicVoxelWeights(g.domain, handles, options).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << passes;
    EXPECT_NE(s.message().find("options.geodesic.smoothing"), std::string::npos) << s;
  }
}

TEST(GeodesicWeightsTest, GeodesicDistanceAroundTheUIsLongerThanEuclidean) {
  const GridDomain g = UDomain();
  const std::vector<int> top_right =
      NodesWhere(g, [](int x, int y, int) { return x >= 9 && y == 12; });
  GeodesicWeightsReport report;
  ASSERT_TRUE(GeodesicVoxelWeights(g.domain, {top_right}, {}, &report).ok());
  double max_euclidean = 0;
  for (int i = 0; i < g.domain.num_nodes(); ++i)
    for (int s : top_right)
      max_euclidean =
          std::max(max_euclidean, (g.domain.nodes.row(i) - g.domain.nodes.row(s)).norm());
  // The top of the left arm is ≥ 9 down, ≥ 5 across and ≥ 9 up away along the U, but at most
  // √(12² + 12² + 1) = 17 away in a straight line.
  EXPECT_GT(report.max_finite_distance, 20.0);
  EXPECT_LE(max_euclidean, 17.0 + 1e-12);
  EXPECT_GT(report.max_finite_distance, max_euclidean);
}

TEST(GeodesicWeightsTest, WeightsFollowTheGeodesicAcrossTheGapOfTheU) {
  const GridDomain g = UDomain();
  // A: across the left arm at y = 4. B: the top of the right arm.
  const std::vector<int> a = NodesWhere(g, [](int x, int y, int) { return x <= 3 && y == 4; });
  const std::vector<int> b = NodesWhere(g, [](int x, int y, int) { return x >= 9 && y == 12; });
  const absl::StatusOr<Eigen::MatrixXd> W = GeodesicVoxelWeights(g.domain, {a, b});
  ASSERT_TRUE(W.ok()) << W.status();
  ExpectRowsSumToOne(*W);
  // The top inner corner of the left arm: 6 from B straight across the gap, 8 from A — but 8
  // from A along the arm and more than 20 from B around the U.
  const int p = g.Node(3, 12, 0);
  EXPECT_LT((g.domain.nodes.row(p) - g.domain.nodes.row(g.Node(9, 12, 0))).norm(),
            (g.domain.nodes.row(p) - g.domain.nodes.row(g.Node(3, 4, 0))).norm());
  EXPECT_GT((*W)(p, 0), 0.8);
  EXPECT_LT((*W)(p, 1), 0.2);
  // The whole left arm above A belongs to A, the right arm's top half to B.
  for (int y = 5; y <= 12; ++y) EXPECT_GT((*W)(g.Node(3, y, 1), 0), 0.5) << "y " << y;
  for (int y = 8; y <= 12; ++y) EXPECT_GT((*W)(g.Node(9, y, 1), 1), 0.5) << "y " << y;
}

TEST(GeodesicWeightsTest, OwnHandleNodesAreExactlyOneAndZero) {
  const GridDomain g = UDomain();
  const std::vector<int> a = NodesWhere(g, [](int x, int y, int) { return x <= 3 && y == 4; });
  const std::vector<int> b = NodesWhere(g, [](int x, int y, int) { return x >= 9 && y >= 11; });
  const std::vector<int> c = NodesWhere(g, [](int x, int y, int) { return x == 6 && y <= 1; });
  const absl::StatusOr<Eigen::MatrixXd> W = GeodesicVoxelWeights(g.domain, {a, b, c});
  ASSERT_TRUE(W.ok()) << W.status();
  const std::vector<std::vector<int>> handles = {a, b, c};
  for (int h = 0; h < 3; ++h)
    for (int node : handles[h])
      for (int k = 0; k < 3; ++k) EXPECT_EQ((*W)(node, k), k == h ? 1.0 : 0.0);
  // Everywhere else every handle has some influence (3 ≤ max_influences).
  for (int i = 0; i < W->rows(); ++i) {
    if (W->row(i).maxCoeff() < 1.0) {
      EXPECT_GT(W->row(i).minCoeff(), 0.0) << i;
    }
  }
}

TEST(GeodesicWeightsTest, LargerFalloffGivesSharperWeights) {
  const GridDomain g = UDomain();
  const std::vector<std::vector<int>> handles = {
      NodesWhere(g, [](int x, int y, int) { return x <= 3 && y == 8; }),
      NodesWhere(g, [](int x, int y, int) { return x >= 9 && y == 8; }),
      NodesWhere(g, [](int x, int y, int) { return x == 6 && y == 1; })};
  Eigen::VectorXd previous;
  for (double falloff : {1.0, 2.0, 4.0, 8.0}) {
    GeodesicWeightsOptions options;
    options.falloff = falloff;
    const absl::StatusOr<Eigen::MatrixXd> W = GeodesicVoxelWeights(g.domain, handles, options);
    ASSERT_TRUE(W.ok()) << W.status();
    ExpectRowsSumToOne(*W);
    const Eigen::VectorXd max_weight = W->rowwise().maxCoeff();
    if (previous.size() > 0) {
      EXPECT_GE((max_weight - previous).minCoeff(), -1e-12) << "falloff " << falloff;
      EXPECT_GT(max_weight.mean(), previous.mean() + 1e-3) << "falloff " << falloff;
    }
    previous = max_weight;
  }
}

TEST(GeodesicWeightsTest, MaxInfluencesKeepsOnlyTheNearestHandles) {
  const GridDomain g =
      MakeGridDomain(Eigen::Vector3i(9, 9, 3), 1.0, [](int, int, int) { return true; });
  const std::vector<std::vector<int>> handles = {{g.Node(0, 0, 1)},
                                                 {g.Node(8, 0, 1)},
                                                 {g.Node(0, 8, 1)},
                                                 {g.Node(8, 8, 1)},
                                                 {g.Node(4, 4, 1)}};
  GeodesicWeightsOptions options;
  options.max_influences = 2;
  const absl::StatusOr<Eigen::MatrixXd> W = GeodesicVoxelWeights(g.domain, handles, options);
  ASSERT_TRUE(W.ok()) << W.status();
  ExpectRowsSumToOne(*W);
  for (int i = 0; i < W->rows(); ++i) EXPECT_LE((W->row(i).array() > 0).count(), 2) << i;
  // Near the corner (1, 0, 1): the corner handle and the centre one, by closed-form distances.
  const int p = g.Node(1, 0, 1);
  EXPECT_GT((*W)(p, 0), 0.0);
  EXPECT_GT((*W)(p, 4), 0.0);
  EXPECT_EQ((*W)(p, 1), 0.0);
  options.max_influences = 1;
  const absl::StatusOr<Eigen::MatrixXd> W1 = GeodesicVoxelWeights(g.domain, handles, options);
  ASSERT_TRUE(W1.ok());
  for (int i = 0; i < W1->rows(); ++i) EXPECT_EQ(W1->row(i).maxCoeff(), 1.0);
}

TEST(GeodesicWeightsTest, UnreachableNodesCopyTheNearestReachedNode) {
  // Two blocks with a two-node gap: x ≤ 4 and x ≥ 7. Handles only in the first.
  const GridDomain g = MakeGridDomain(Eigen::Vector3i(9, 4, 2), 1.0,
                                      [](int x, int, int) { return x <= 4 || x >= 7; });
  const std::vector<std::vector<int>> handles = {{g.Node(0, 0, 0)}, {g.Node(4, 3, 1)}};
  GeodesicWeightsReport report;
  const absl::StatusOr<Eigen::MatrixXd> W = GeodesicVoxelWeights(g.domain, handles, {}, &report);
  ASSERT_TRUE(W.ok()) << W.status();
  ExpectRowsSumToOne(*W);
  EXPECT_EQ(report.unreachable_nodes, 2 * 4 * 2);
  for (int z = 0; z < 2; ++z)
    for (int y = 0; y < 4; ++y)
      for (int x = 7; x <= 8; ++x) {
        // The nearest reached node is straight across the gap at x = 4.
        EXPECT_EQ(W->row(g.Node(x, y, z)), W->row(g.Node(4, y, z))) << x << " " << y << " " << z;
      }
}

TEST(GeodesicWeightsTest, EmptyHandleGetsZeroColumn) {
  const GridDomain g = UDomain();
  const absl::StatusOr<Eigen::MatrixXd> W =
      GeodesicVoxelWeights(g.domain, {{g.Node(0, 0, 0)}, {}, {g.Node(12, 12, 1)}});
  ASSERT_TRUE(W.ok()) << W.status();
  ExpectRowsSumToOne(*W);
  EXPECT_EQ(W->col(1).cwiseAbs().maxCoeff(), 0.0);
}

TEST(GeodesicWeightsTest, RejectsMalformedInput) {
  const GridDomain g =
      MakeGridDomain(Eigen::Vector3i(3, 3, 3), 1.0, [](int, int, int) { return true; });
  EXPECT_EQ(GeodesicVoxelWeights(g.domain, {{27}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GeodesicVoxelWeights(g.domain, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GeodesicVoxelWeights(g.domain, {{}, {}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  GeodesicWeightsOptions options;
  options.max_influences = 0;
  EXPECT_EQ(GeodesicVoxelWeights(g.domain, {{0}}, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  VolumeDomain broken = g.domain;
  broken.graph_targets[5] = 99;
  const absl::Status s = GeodesicVoxelWeights(broken, {{0}}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("graph_targets[5]"), std::string::npos) << s;
  broken = g.domain;
  broken.graph_offsets.pop_back();
  EXPECT_EQ(GeodesicVoxelWeights(broken, {{0}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(GeodesicWeightsTest, ReportsProgressAndHonoursCancellation) {
  const GridDomain g = UDomain();
  std::vector<std::string> stages;
  std::atomic<bool> cancel{false};
  const Progress progress([&](const std::string& stage, double) { stages.push_back(stage); },
                          &cancel);
  ASSERT_TRUE(
      GeodesicVoxelWeights(g.domain, {{0}, {g.domain.num_nodes() - 1}}, {}, nullptr, progress)
          .ok());
  EXPECT_FALSE(stages.empty());
  cancel = true;
  EXPECT_EQ(GeodesicVoxelWeights(g.domain, {{0}}, {}, nullptr, progress).status().code(),
            absl::StatusCode::kCancelled);
}

// The solve at the scale of a character's grid (its time is bench/bake_bench's): every row a
// partition of unity, each handle's own nodes bound to it alone.
TEST(GeodesicWeightsTest, TwentyHandlesOnAHundredThousandNodesGiveAPartitionOfUnity) {
  const int n = 48;  // 110,592 nodes, ~2.8M directed edges
  const GridDomain g =
      MakeGridDomain(Eigen::Vector3i(n, n, n), 1.0 / n, [](int, int, int) { return true; });
  std::vector<std::vector<int>> handles;
  for (int h = 0; h < 20; ++h) {
    std::vector<int> nodes;
    for (int y = 2; y < n - 2; ++y) nodes.push_back(g.Node((h * 47) % n, y, (h * 13) % n));
    handles.push_back(nodes);
  }
  const absl::StatusOr<Eigen::MatrixXd> W = GeodesicVoxelWeights(g.domain, handles);
  ASSERT_TRUE(W.ok()) << W.status();
  ExpectRowsSumToOne(*W);
  for (int h = 0; h < 20; ++h) {
    for (int v : handles[h]) ASSERT_NEAR((*W)(v, h), 1.0, 1e-12) << "handle " << h << " node " << v;
  }
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
