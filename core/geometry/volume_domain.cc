#include "core/geometry/volume_domain.h"

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"

namespace skinning {
namespace {

using Eigen::Vector3d;

constexpr double kPi = 3.14159265358979323846;

// ---------------------------------------------------------------------------------------------
// Generalized winding number (Jacobson, Kavan, Sorkine-Hornung 2013): w(q) = Σ_f Ω_f(q) / 4π.

// Signed solid angle of triangle (a, b, c) seen from q (Van Oosterom & Strackee 1983):
// tan(Ω/2) = a·(b×c) / (|a||b||c| + (a·b)|c| + (b·c)|a| + (c·a)|b|), with a, b, c relative to q.
// Positive when q is on the back side of a counter-clockwise triangle (inside a closed mesh).
double SolidAngle(const Vector3d& a0, const Vector3d& b0, const Vector3d& c0, const Vector3d& q) {
  const Vector3d a = a0 - q, b = b0 - q, c = c0 - q;
  const double la = a.norm(), lb = b.norm(), lc = c.norm();
  const double num = a.dot(b.cross(c));
  // q in the triangle's plane: 0 outside the triangle, and on it the mean of the two sides.
  if (num == 0.0) return 0.0;
  const double den = la * lb * lc + a.dot(b) * lc + b.dot(c) * la + c.dot(a) * lb;
  return 2.0 * std::atan2(num, den);
}

// A bounding-volume hierarchy over the triangles for fast winding numbers (after Barill et al.
// 2018, first order): a cluster whose centre is farther than kBeta × its radius from q counts as
// one dipole Σ(area vectors)·(centre − q) / |centre − q|³; nearer clusters are opened, and
// leaves are summed exactly.
class WindingBvh {
 public:
  WindingBvh(const RowMatrixX3d& V, const RowMatrixX3i& F) {
    const int nf = static_cast<int>(F.rows());
    tris_.resize(nf);
    for (int f = 0; f < nf; ++f)
      tris_[f] = {V.row(F(f, 0)).transpose(), V.row(F(f, 1)).transpose(),
                  V.row(F(f, 2)).transpose()};
    if (nf > 0) {
      nodes_.reserve(2 * (nf / kLeafSize + 1));
      Build(0, nf);
    }
  }

  double Evaluate(const Vector3d& q, double beta = kBeta) const {
    if (nodes_.empty()) return 0.0;
    double omega = 0.0;
    int stack[128];
    int top = 0;
    stack[top++] = 0;
    while (top > 0) {
      const Node& n = nodes_[stack[--top]];
      const Vector3d d = n.centre - q;
      const double dist = d.norm();
      if (dist > beta * n.radius) {
        omega += n.area.dot(d) / (dist * dist * dist);
      } else if (n.left < 0) {
        for (int t = n.begin; t < n.end; ++t)
          omega += SolidAngle(tris_[t][0], tris_[t][1], tris_[t][2], q);
      } else {
        stack[top++] = n.left;
        stack[top++] = n.right;
      }
    }
    return omega / (4.0 * kPi);
  }

 private:
  static constexpr int kLeafSize = 8;
  static constexpr double kBeta = 2.0;

  struct Node {
    Vector3d centre;  // area-weighted centroid (plain centroid when the area is 0)
    Vector3d area;    // Σ ½ (b − a) × (c − a)
    double radius = 0.0;
    int begin = 0, end = 0;
    int left = -1, right = -1;
  };

  int Build(int begin, int end) {
    const int id = static_cast<int>(nodes_.size());
    nodes_.emplace_back();
    Vector3d area = Vector3d::Zero(), weighted = Vector3d::Zero(), plain = Vector3d::Zero();
    double total = 0.0;
    Eigen::AlignedBox3d box;
    for (int t = begin; t < end; ++t) {
      const auto& tri = tris_[t];
      const Vector3d n = 0.5 * (tri[1] - tri[0]).cross(tri[2] - tri[0]);
      const Vector3d centroid = (tri[0] + tri[1] + tri[2]) / 3.0;
      area += n;
      weighted += n.norm() * centroid;
      total += n.norm();
      plain += centroid;
      box.extend(centroid);
    }
    const Vector3d centre =
        total > 0 ? Vector3d(weighted / total) : Vector3d(plain / (end - begin));
    double radius = 0.0;
    for (int t = begin; t < end; ++t)
      for (int k = 0; k < 3; ++k) radius = std::max(radius, (tris_[t][k] - centre).norm());
    {
      Node& n = nodes_[id];
      n.centre = centre;
      n.area = area;
      n.radius = radius;
      n.begin = begin;
      n.end = end;
    }
    if (end - begin > kLeafSize) {
      int axis;
      box.sizes().maxCoeff(&axis);
      const int mid = (begin + end) / 2;
      std::nth_element(tris_.begin() + begin, tris_.begin() + mid, tris_.begin() + end,
                       [axis](const Tri& x, const Tri& y) {
                         return x[0][axis] + x[1][axis] + x[2][axis] <
                                y[0][axis] + y[1][axis] + y[2][axis];
                       });
      const int left = Build(begin, mid);
      const int right = Build(mid, end);
      nodes_[id].left = left;
      nodes_[id].right = right;
    }
    return id;
  }

  using Tri = std::array<Vector3d, 3>;
  std::vector<Tri> tris_;
  std::vector<Node> nodes_;
};

// Runs fn(i) for i in [0, n) on a few threads. Stops early (returns false) when cancelled.
template <typename Fn>
bool ParallelFor(int n, const Progress& progress, Fn fn) {
  constexpr int kChunk = 256;
  const int hw = static_cast<int>(std::thread::hardware_concurrency());
  const int threads = std::max(1, std::min({hw, 4, (n + kChunk - 1) / kChunk}));
  std::atomic<int> next{0};
  std::atomic<bool> stop{false};
  auto work = [&]() {
    while (!stop.load(std::memory_order_relaxed)) {
      const int begin = next.fetch_add(kChunk);
      if (begin >= n) break;
      if (progress.Cancelled()) {
        stop = true;
        break;
      }
      const int end = std::min(n, begin + kChunk);
      for (int i = begin; i < end; ++i) fn(i);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  return !stop.load();
}

// ---------------------------------------------------------------------------------------------
// Voxel grid.

// Exact triangle / axis-aligned box overlap by the separating axis theorem: the box's 3 axes,
// the triangle's normal, and the 9 cross products of box axes with triangle edges. `half` is
// the box's half size; a, b, c are relative to the box centre. Touching counts as overlapping.
bool TriangleOverlapsBox(const Vector3d& a, const Vector3d& b, const Vector3d& c,
                         const Vector3d& half) {
  for (int i = 0; i < 3; ++i) {
    if (std::min({a[i], b[i], c[i]}) > half[i] || std::max({a[i], b[i], c[i]}) < -half[i])
      return false;
  }
  const Vector3d e[3] = {b - a, c - b, a - c};
  const Vector3d n = e[0].cross(c - a);
  if (std::abs(n.dot(a)) > half.dot(n.cwiseAbs())) return false;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      const Vector3d axis = Vector3d::Unit(i).cross(e[j]);
      const double pa = axis.dot(a), pb = axis.dot(b), pc = axis.dot(c);
      const double r = half.dot(axis.cwiseAbs());
      if (std::min({pa, pb, pc}) > r || std::max({pa, pb, pc}) < -r) return false;
    }
  }
  return true;
}

// ∫ ∇N_i·∇N_j over the unit cube for trilinear shape functions N_i, N_j of corners i, j, as a
// function of how many coordinates the corners differ in (0..3). From the 1D integrals
// ∫φ_a φ_b = 1/3 (a = b) or 1/6, ∫φ_a' φ_b' = ±1: d = 0: 3·1·(1/3)² = 1/3; d = 1:
// −1/9 + 2·(1/6)(1/3) = 0; d = 2: 2·(−1)(1/6)(1/3) + (1/6)² = −1/12; d = 3: 3·(−1)(1/6)² = −1/12.
// A cube of side h scales this by h (gradients 1/h each, volume h³).
constexpr double kUnitCubeStiffness[4] = {1.0 / 3.0, 0.0, -1.0 / 12.0, -1.0 / 12.0};

struct Grid {
  Vector3d origin;
  double h = 0;
  int nx = 0, ny = 0, nz = 0;
  int64_t Cell(int x, int y, int z) const { return x + int64_t{nx} * (y + int64_t{ny} * z); }
  int64_t Corner(int x, int y, int z) const {
    return x + int64_t{nx + 1} * (y + int64_t{ny + 1} * z);
  }
  Vector3d CellCentre(int x, int y, int z) const {
    return origin + h * Vector3d(x + 0.5, y + 0.5, z + 0.5);
  }
  int64_t num_cells() const { return int64_t{nx} * ny * nz; }
  int64_t num_corners() const { return int64_t{nx + 1} * (ny + 1) * (nz + 1); }
};

Eigen::Vector3i CellOf(const Grid& g, const Vector3d& p) {
  const Vector3d t = (p - g.origin) / g.h;
  const int n[3] = {g.nx, g.ny, g.nz};
  Eigen::Vector3i c;
  for (int a = 0; a < 3; ++a) c[a] = std::clamp(static_cast<int>(std::floor(t[a])), 0, n[a] - 1);
  return c;
}

}  // namespace

absl::StatusOr<VolumeDomain> BuildVoxelDomain(const Mesh& mesh, const VoxelGridOptions& options,
                                              VoxelGridReport* report, const Progress& progress) {
  const auto start_time = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(options.Validate());
  const int res = options.resolution;
  RETURN_IF_ERROR(ValidateMesh(mesh));

  // Grid: bounding box padded by ≥ 1 cell per side, centred on the box.
  const Vector3d lo = mesh.V.colwise().minCoeff().transpose();
  const Vector3d hi = mesh.V.colwise().maxCoeff().transpose();
  const Vector3d extent = hi - lo;
  const double longest = extent.maxCoeff();
  if (!(longest > 0.0))
    return absl::InvalidArgumentError("mesh has no inside: all its vertices coincide");
  Grid g;
  g.h = longest / res;
  int n[3];
  for (int a = 0; a < 3; ++a)
    n[a] = std::max(1, static_cast<int>(std::ceil(extent[a] / g.h - 1e-9))) + 2;
  g.nx = n[0];
  g.ny = n[1];
  g.nz = n[2];
  g.origin = 0.5 * (lo + hi) - 0.5 * g.h * Vector3d(n[0], n[1], n[2]);
  const int64_t num_cells = g.num_cells();

  // (1) Surface cells: every cell a triangle overlaps, and every cell holding a vertex.
  progress.Report("voxelize: rasterize surface", 0.0);
  std::vector<uint8_t> surface(num_cells, 0);
  const Vector3d half = Vector3d::Constant(0.5 * g.h * (1.0 + 1e-6));
  const int nf = static_cast<int>(mesh.F.rows());
  for (int f = 0; f < nf; ++f) {
    if ((f & 1023) == 0) {
      if (progress.Cancelled()) return absl::CancelledError("cancelled while voxelizing");
      progress.Report("voxelize: rasterize surface", static_cast<double>(f) / nf);
    }
    const Vector3d a = mesh.V.row(mesh.F(f, 0)), b = mesh.V.row(mesh.F(f, 1)),
                   c = mesh.V.row(mesh.F(f, 2));
    const Vector3d tlo = (a.cwiseMin(b).cwiseMin(c) - g.origin) / g.h;
    const Vector3d thi = (a.cwiseMax(b).cwiseMax(c) - g.origin) / g.h;
    int c0[3], c1[3];
    for (int k = 0; k < 3; ++k) {
      c0[k] = std::clamp(static_cast<int>(std::floor(tlo[k] - 1e-6)), 0, n[k] - 1);
      c1[k] = std::clamp(static_cast<int>(std::floor(thi[k] + 1e-6)), 0, n[k] - 1);
    }
    for (int z = c0[2]; z <= c1[2]; ++z)
      for (int y = c0[1]; y <= c1[1]; ++y)
        for (int x = c0[0]; x <= c1[0]; ++x) {
          const int64_t cell = g.Cell(x, y, z);
          if (surface[cell]) continue;
          const Vector3d centre = g.CellCentre(x, y, z);
          if (TriangleOverlapsBox(a - centre, b - centre, c - centre, half)) surface[cell] = 1;
        }
  }
  for (Eigen::Index v = 0; v < mesh.V.rows(); ++v) {
    const Eigen::Vector3i c = CellOf(g, mesh.V.row(v).transpose());
    surface[g.Cell(c.x(), c.y(), c.z())] = 1;
  }

  // (2) 6-connected components of the other cells, in BFS order.
  progress.Report("voxelize: classify cells", 0.0);
  std::vector<int32_t> component(num_cells, -1);
  std::vector<int64_t> order;  // non-surface cells grouped by component, each in BFS order
  std::vector<int64_t> component_start = {0};
  order.reserve(num_cells);
  const int64_t stride[3] = {1, g.nx, int64_t{g.nx} * g.ny};
  for (int64_t seed = 0; seed < num_cells; ++seed) {
    if (surface[seed] || component[seed] >= 0) continue;
    if (progress.Cancelled()) return absl::CancelledError("cancelled while voxelizing");
    const int32_t id = static_cast<int32_t>(component_start.size()) - 1;
    component[seed] = id;
    size_t head = order.size();
    order.push_back(seed);
    while (head < order.size()) {
      const int64_t cell = order[head++];
      int64_t rest = cell;
      const int coord[3] = {static_cast<int>(rest % g.nx), static_cast<int>((rest / g.nx) % g.ny),
                            static_cast<int>(rest / (int64_t{g.nx} * g.ny))};
      for (int a = 0; a < 3; ++a)
        for (int s = -1; s <= 1; s += 2) {
          const int k = coord[a] + s;
          if (k < 0 || k >= n[a]) continue;
          const int64_t nb = cell + s * stride[a];
          if (surface[nb] || component[nb] >= 0) continue;
          component[nb] = id;
          order.push_back(nb);
        }
    }
    component_start.push_back(static_cast<int64_t>(order.size()));
  }
  const int num_components = static_cast<int>(component_start.size()) - 1;

  // (3) Inside/outside. No triangle separates two adjacent non-surface cells (it would overlap
  // one of them), so within a component the winding number varies continuously: a component
  // bounded by a closed surface is wholly inside or outside, and only a leaking hole puts the
  // level set |w| = threshold through a component. Every region of constant inside/outside
  // reaches the surface (w is harmonic, so it has no interior extremum), so we evaluate w at the
  // "shell" (non-surface cells next to a surface cell; one cell for a component without any),
  // give every other cell the label of its nearest evaluated cell (multi-source BFS), and then
  // evaluate each inferred cell that borders a different label, until none does. A component
  // without a leak thus costs only its shell.
  const WindingBvh bvh(mesh.V, mesh.F);
  const double threshold = options.winding_threshold;
  auto centre_of = [&](int64_t cell) {
    return g.CellCentre(static_cast<int>(cell % g.nx), static_cast<int>((cell / g.nx) % g.ny),
                        static_cast<int>(cell / (int64_t{g.nx} * g.ny)));
  };
  // Far-field approximation first; closer to the threshold, a tighter one, then exact.
  auto winding_inside = [&](int64_t cell) -> uint8_t {
    const Vector3d q = centre_of(cell);
    double w = std::abs(bvh.Evaluate(q, 2.0));
    if (std::abs(w - threshold) < 0.15) w = std::abs(bvh.Evaluate(q, 6.0));
    if (std::abs(w - threshold) < 0.03)
      w = std::abs(bvh.Evaluate(q, std::numeric_limits<double>::infinity()));
    return w >= threshold;
  };
  auto for_each_neighbour = [&](int64_t cell, auto fn) {
    const int coord[3] = {static_cast<int>(cell % g.nx), static_cast<int>((cell / g.nx) % g.ny),
                          static_cast<int>(cell / (int64_t{g.nx} * g.ny))};
    for (int a = 0; a < 3; ++a)
      for (int s = -1; s <= 1; s += 2) {
        const int k = coord[a] + s;
        if (k >= 0 && k < n[a]) fn(cell + s * stride[a]);
      }
  };
  enum : uint8_t { kUnvisited = 0, kInferred = 1, kEvaluated = 2, kSurface = 3 };
  std::vector<uint8_t> state(num_cells, kUnvisited), label(num_cells, 0);
  for (int64_t cell = 0; cell < num_cells; ++cell)
    if (surface[cell]) state[cell] = kSurface;
  int64_t evaluations = 0;
  auto evaluate = [&](const std::vector<int64_t>& cells) {
    std::vector<uint8_t> result(cells.size());
    if (!ParallelFor(static_cast<int>(cells.size()), progress,
                     [&](int i) { result[i] = winding_inside(cells[i]); }))
      return false;
    for (size_t i = 0; i < cells.size(); ++i) {
      state[cells[i]] = kEvaluated;
      label[cells[i]] = result[i];
    }
    evaluations += static_cast<int64_t>(cells.size());
    return true;
  };
  {
    std::vector<int64_t> shell;
    for (int c = 0; c < num_components; ++c) {
      const size_t before = shell.size();
      for (int64_t i = component_start[c]; i < component_start[c + 1]; ++i) {
        bool next_to_surface = false;
        for_each_neighbour(order[i], [&](int64_t nb) { next_to_surface |= surface[nb] != 0; });
        if (next_to_surface) shell.push_back(order[i]);
      }
      if (shell.size() == before) shell.push_back(order[component_start[c]]);
    }
    if (!evaluate(shell)) return absl::CancelledError("cancelled while voxelizing");
    progress.Report("voxelize: classify cells", 0.5);

    std::vector<int64_t> queue = shell;
    for (size_t head = 0; head < queue.size(); ++head) {
      const int64_t cell = queue[head];
      for_each_neighbour(cell, [&](int64_t nb) {
        if (state[nb] != kUnvisited) return;
        state[nb] = kInferred;
        label[nb] = label[cell];
        queue.push_back(nb);
      });
    }
    std::vector<uint8_t> queued(num_cells, 0);
    std::vector<int64_t> frontier;
    for (int64_t cell = 0; cell < num_cells; ++cell) {
      if (state[cell] != kInferred) continue;
      bool differs = false;
      for_each_neighbour(
          cell, [&](int64_t nb) { differs |= state[nb] != kSurface && label[nb] != label[cell]; });
      if (differs) frontier.push_back(cell), queued[cell] = 1;
    }
    while (!frontier.empty()) {
      if (!evaluate(frontier)) return absl::CancelledError("cancelled while voxelizing");
      std::vector<int64_t> next;
      for (int64_t cell : frontier)
        for_each_neighbour(cell, [&](int64_t nb) {
          if (state[nb] == kInferred && !queued[nb] && label[nb] != label[cell])
            next.push_back(nb), queued[nb] = 1;
        });
      frontier = std::move(next);
    }
  }
  std::vector<uint8_t> inside(num_cells);
  int64_t inside_non_surface = 0;
  for (int64_t cell = 0; cell < num_cells; ++cell) {
    inside[cell] = surface[cell] || label[cell];
    inside_non_surface += !surface[cell] && label[cell];
  }
  int64_t num_surface = 0;
  for (int64_t cell = 0; cell < num_cells; ++cell) num_surface += surface[cell];
  if (inside_non_surface == 0) {
    // Every enclosed cell may be a surface cell (a thin closed shell at a coarse resolution):
    // the mesh has an inside when some surface cell's centre does.
    std::vector<int64_t> surface_cells;
    for (int64_t cell = 0; cell < num_cells; ++cell)
      if (surface[cell]) surface_cells.push_back(cell);
    std::atomic<bool> found{false};
    if (!ParallelFor(static_cast<int>(surface_cells.size()), progress, [&](int i) {
          if (!found.load(std::memory_order_relaxed) && winding_inside(surface_cells[i]))
            found = true;
        }))
      return absl::CancelledError("cancelled while voxelizing");
    evaluations += static_cast<int64_t>(surface_cells.size());
    if (!found)
      return absl::InvalidArgumentError(absl::StrFormat(
          "mesh has no inside: no cell centre has a winding number of magnitude >= %g at "
          "resolution %d (an open or flat surface encloses no volume)",
          threshold, res));
  }
  if (progress.Cancelled()) return absl::CancelledError("cancelled while voxelizing");

  // Nodes: the corners of domain cells, numbered in corner order.
  progress.Report("voxelize: assemble", 0.0);
  VolumeDomain domain;
  domain.kind = VolumeDomain::Kind::kVoxelGrid;
  domain.origin = g.origin;
  domain.spacing = g.h;
  domain.cells = Eigen::Vector3i(g.nx, g.ny, g.nz);
  domain.grid_node.assign(g.num_corners(), -1);
  int64_t num_domain_cells = 0;
  for (int z = 0; z < g.nz; ++z)
    for (int y = 0; y < g.ny; ++y)
      for (int x = 0; x < g.nx; ++x) {
        if (!inside[g.Cell(x, y, z)]) continue;
        ++num_domain_cells;
        for (int k = 0; k < 8; ++k)
          domain.grid_node[g.Corner(x + (k & 1), y + ((k >> 1) & 1), z + (k >> 2))] = 0;
      }
  int32_t num_nodes = 0;
  for (int32_t& id : domain.grid_node)
    if (id == 0) id = num_nodes++;
  if (int64_t{num_nodes} > std::numeric_limits<int32_t>::max() / 32)
    return absl::InvalidArgumentError("voxel grid has too many nodes");

  domain.nodes.resize(num_nodes, 3);
  domain.elements.resize(num_domain_cells, 8);
  {
    int64_t e = 0;
    for (int z = 0; z <= g.nz; ++z)
      for (int y = 0; y <= g.ny; ++y)
        for (int x = 0; x <= g.nx; ++x) {
          const int32_t id = domain.grid_node[g.Corner(x, y, z)];
          if (id >= 0) domain.nodes.row(id) = (g.origin + g.h * Vector3d(x, y, z)).transpose();
          if (x < g.nx && y < g.ny && z < g.nz && inside[g.Cell(x, y, z)]) {
            for (int k = 0; k < 8; ++k)
              domain.elements(e, k) =
                  domain.grid_node[g.Corner(x + (k & 1), y + ((k >> 1) & 1), z + (k >> 2))];
            ++e;
          }
        }
  }
  domain.cell_inside = inside;

  // K, mass and graph in one pass over each node's 27-neighbourhood. Nodes p and p + o share
  // the domain cells c with c ≤ min(p, p + o) and c + 1 ≥ max(p, p + o) per axis, all among
  // the 8 cells around p; each shared cell adds h × kUnitCubeStiffness[#non-zero components of
  // o] to K(p, p + o), and any shared cell makes a graph edge. Neighbours come in increasing
  // node order, so K (symmetric: column i = row i) is filled column by column.
  auto cell_in = [&](int x, int y, int z) {
    return x >= 0 && y >= 0 && z >= 0 && x < g.nx && y < g.ny && z < g.nz &&
           inside[g.Cell(x, y, z)];
  };
  // For offset o (index (oz+1)·9 + (oy+1)·3 + ox+1), the mask of the cells around p (bit
  // bx + 2·by + 4·bz for cell p − 1 + b) that hold both p and p + o.
  std::array<uint8_t, 27> shared_mask{};
  for (int o = 0; o < 27; ++o) {
    const int off[3] = {o % 3 - 1, (o / 3) % 3 - 1, o / 9 - 1};
    for (int b = 0; b < 8; ++b) {
      bool ok = true;
      for (int a = 0; a < 3; ++a) {
        const int bit = (b >> a) & 1;  // 0: cell p − 1 on this axis, 1: cell p
        ok &= off[a] == 0 || (off[a] > 0 ? bit == 1 : bit == 0);
      }
      if (ok) shared_mask[o] |= static_cast<uint8_t>(1 << b);
    }
  }
  domain.mass.resize(num_nodes);
  domain.graph_offsets.assign(1, 0);
  domain.graph_offsets.reserve(num_nodes + 1);
  domain.graph_targets.reserve(static_cast<size_t>(num_nodes) * 26);
  domain.graph_lengths.reserve(static_cast<size_t>(num_nodes) * 26);
  domain.K.resize(num_nodes, num_nodes);
  domain.K.reserve(static_cast<Eigen::Index>(num_nodes) * 19);
  const double h3 = g.h * g.h * g.h;
  for (int z = 0; z <= g.nz; ++z) {
    if (progress.Cancelled()) return absl::CancelledError("cancelled while voxelizing");
    for (int y = 0; y <= g.ny; ++y)
      for (int x = 0; x <= g.nx; ++x) {
        const int32_t i = domain.grid_node[g.Corner(x, y, z)];
        if (i < 0) continue;
        int around = 0;
        for (int b = 0; b < 8; ++b)
          if (cell_in(x - 1 + (b & 1), y - 1 + ((b >> 1) & 1), z - 1 + (b >> 2))) around |= 1 << b;
        domain.K.startVec(i);
        for (int o = 0; o < 27; ++o) {
          const int ox = o % 3 - 1, oy = (o / 3) % 3 - 1, oz = o / 9 - 1;
          const int shared = __builtin_popcount(around & shared_mask[o]);
          if (shared == 0) continue;
          // A shared domain cell means both corners are nodes.
          const int32_t j = domain.grid_node[g.Corner(x + ox, y + oy, z + oz)];
          const int d = std::abs(ox) + std::abs(oy) + std::abs(oz);
          if (d == 0) {
            domain.mass[i] = shared * h3 / 8.0;
          } else {
            domain.graph_targets.push_back(j);
            domain.graph_lengths.push_back(g.h * std::sqrt(static_cast<double>(d)));
          }
          if (kUnitCubeStiffness[d] != 0.0)
            domain.K.insertBack(j, i) = shared * g.h * kUnitCubeStiffness[d];
        }
        domain.graph_offsets.push_back(static_cast<int32_t>(domain.graph_targets.size()));
      }
  }
  domain.K.finalize();

  // Trilinear interpolation in the domain cell holding each vertex.
  progress.Report("voxelize: assemble", 0.8);
  const int nv = static_cast<int>(mesh.V.rows());
  std::vector<Eigen::Triplet<double>> map;
  map.reserve(static_cast<size_t>(nv) * 8);
  for (int v = 0; v < nv; ++v) {
    const Vector3d p = mesh.V.row(v).transpose();
    Eigen::Vector3i c = CellOf(g, p);
    if (!inside[g.Cell(c.x(), c.y(), c.z())]) {
      // Not expected (vertex cells are surface cells); take the nearest domain neighbour cell.
      double best = std::numeric_limits<double>::infinity();
      Eigen::Vector3i best_cell = c;
      for (int oz = -1; oz <= 1; ++oz)
        for (int oy = -1; oy <= 1; ++oy)
          for (int ox = -1; ox <= 1; ++ox) {
            const Eigen::Vector3i q = c + Eigen::Vector3i(ox, oy, oz);
            if (!cell_in(q.x(), q.y(), q.z())) continue;
            const Vector3d centre = g.CellCentre(q.x(), q.y(), q.z());
            const double dist = (p - centre).cwiseAbs().maxCoeff();
            if (dist < best) best = dist, best_cell = q;
          }
      if (!std::isfinite(best))
        return absl::InternalError(absl::StrFormat("mesh.vertices[%d] is in no domain cell", v));
      c = best_cell;
    }
    const Vector3d t = ((p - g.origin) / g.h - c.cast<double>()).cwiseMax(0.0).cwiseMin(1.0);
    for (int k = 0; k < 8; ++k) {
      const int bx = k & 1, by = (k >> 1) & 1, bz = k >> 2;
      const double w =
          (bx ? t.x() : 1 - t.x()) * (by ? t.y() : 1 - t.y()) * (bz ? t.z() : 1 - t.z());
      if (w == 0.0) continue;
      map.emplace_back(v, domain.grid_node[g.Corner(c.x() + bx, c.y() + by, c.z() + bz)], w);
    }
  }
  domain.to_mesh.resize(nv, num_nodes);
  domain.to_mesh.setFromTriplets(map.begin(), map.end());
  progress.Report("voxelize: assemble", 1.0);

  if (report != nullptr) {
    report->resolution = res;
    report->cells = domain.cells;
    report->inside_cells = static_cast<int>(num_domain_cells);
    report->surface_cells = static_cast<int>(num_surface);
    report->nodes = num_nodes;
    report->spacing = g.h;
    report->components = num_components;
    report->winding_evaluations = static_cast<int>(evaluations);
    report->seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
  }
  return domain;
}

// ---------------------------------------------------------------------------------------------
// Tetrahedral mesh.

namespace {

// A uniform grid of buckets over a box, for point location.
class BucketGrid {
 public:
  // About `target` buckets over the box [lo, hi].
  BucketGrid(const Vector3d& lo, const Vector3d& hi, int64_t target) : lo_(lo) {
    const Vector3d extent = (hi - lo).cwiseMax(0.0);
    const double diag = std::max(extent.norm(), 1e-300);
    const double volume = std::max(extent.prod(), 1e-30 * diag * diag * diag);
    size_ = std::max(std::cbrt(volume / std::max<int64_t>(target, 1)), diag / 256.0);
    for (int a = 0; a < 3; ++a)
      dims_[a] = std::clamp(static_cast<int>(std::ceil(extent[a] / size_)), 1, 256);
    offsets_.assign(static_cast<size_t>(dims_[0]) * dims_[1] * dims_[2] + 1, 0);
  }

  // Range of buckets overlapping [lo, hi] (clamped).
  void Range(const Vector3d& lo, const Vector3d& hi, int b0[3], int b1[3]) const {
    for (int a = 0; a < 3; ++a) {
      b0[a] = std::clamp(static_cast<int>(std::floor((lo[a] - lo_[a]) / size_)), 0, dims_[a] - 1);
      b1[a] = std::clamp(static_cast<int>(std::floor((hi[a] - lo_[a]) / size_)), 0, dims_[a] - 1);
    }
  }
  int64_t Bucket(int x, int y, int z) const {
    return x + int64_t{dims_[0]} * (y + int64_t{dims_[1]} * z);
  }

  // Fills the buckets from items' boxes: boxes(i) gives item i's [lo, hi].
  template <typename Boxes>
  void Fill(int num_items, Boxes boxes) {
    for (int pass = 0; pass < 2; ++pass) {
      std::vector<int64_t> cursor;
      if (pass == 1) {
        std::partial_sum(offsets_.begin(), offsets_.end(), offsets_.begin());
        items_.resize(offsets_.back());
        cursor.assign(offsets_.begin(), offsets_.end() - 1);
      }
      for (int i = 0; i < num_items; ++i) {
        Vector3d lo, hi;
        boxes(i, &lo, &hi);
        int b0[3], b1[3];
        Range(lo, hi, b0, b1);
        for (int z = b0[2]; z <= b1[2]; ++z)
          for (int y = b0[1]; y <= b1[1]; ++y)
            for (int x = b0[0]; x <= b1[0]; ++x) {
              if (pass == 0)
                ++offsets_[Bucket(x, y, z) + 1];
              else
                items_[cursor[Bucket(x, y, z)]++] = i;
            }
      }
    }
  }

  // Calls fn(item) for the items of every bucket overlapping [lo, hi] (an item may repeat).
  template <typename Fn>
  void Visit(const Vector3d& lo, const Vector3d& hi, Fn fn) const {
    int b0[3], b1[3];
    Range(lo, hi, b0, b1);
    for (int z = b0[2]; z <= b1[2]; ++z)
      for (int y = b0[1]; y <= b1[1]; ++y)
        for (int x = b0[0]; x <= b1[0]; ++x) {
          const int64_t b = Bucket(x, y, z);
          for (int64_t k = offsets_[b]; k < offsets_[b + 1]; ++k) fn(items_[k]);
        }
  }

 private:
  Vector3d lo_;
  double size_ = 1.0;
  int dims_[3] = {1, 1, 1};
  std::vector<int64_t> offsets_;
  std::vector<int32_t> items_;
};

}  // namespace

absl::StatusOr<VolumeDomain> BuildTetDomain(const RowMatrixX3d& TV, const RowMatrixX4i& TT,
                                            const RowMatrixX3d& V, const Progress& progress) {
  const int ntv = static_cast<int>(TV.rows());
  const int nt = static_cast<int>(TT.rows());
  const int nv = static_cast<int>(V.rows());
  if (ntv == 0) return absl::InvalidArgumentError("tet mesh has no vertices");
  if (nt == 0) return absl::InvalidArgumentError("tet mesh has no tetrahedra");
  for (int i = 0; i < ntv; ++i)
    if (!TV.row(i).allFinite())
      return absl::InvalidArgumentError(absl::StrFormat("tet_mesh.vertices[%d] is not finite", i));
  for (int i = 0; i < nv; ++i)
    if (!V.row(i).allFinite())
      return absl::InvalidArgumentError(absl::StrFormat("mesh.vertices[%d] is not finite", i));
  for (int t = 0; t < nt; ++t)
    for (int k = 0; k < 4; ++k)
      if (TT(t, k) < 0 || TT(t, k) >= ntv)
        return absl::InvalidArgumentError(absl::StrFormat(
            "tet_mesh.tetrahedra[%d][%d] = %d is out of range (%d vertices)", t, k, TT(t, k), ntv));
  progress.Report("tet domain: assemble", 0.0);

  // Per kept tet: the inverse of D = [x1 − x0, x2 − x0, x3 − x0]; its rows are the gradients of
  // the barycentric coordinates λ1..λ3 (∇λ0 = −Σ). K_e = |vol| · G Gᵀ with G the 4 gradients.
  std::vector<int32_t> kept;
  std::vector<Eigen::Matrix3d> inverse;
  kept.reserve(nt);
  inverse.reserve(nt);
  std::vector<Eigen::Triplet<double>> triplets;
  triplets.reserve(static_cast<size_t>(nt) * 16);
  VolumeDomain domain;
  domain.kind = VolumeDomain::Kind::kTetMesh;
  domain.nodes = TV;
  domain.mass = Eigen::VectorXd::Zero(ntv);
  for (int t = 0; t < nt; ++t) {
    if ((t & 4095) == 0 && progress.Cancelled())
      return absl::CancelledError("cancelled while building the tet domain");
    Vector3d x[4];
    for (int k = 0; k < 4; ++k) x[k] = TV.row(TT(t, k)).transpose();
    Eigen::Matrix3d D;
    D << x[1] - x[0], x[2] - x[0], x[3] - x[0];
    double longest = 0.0;
    for (int a = 0; a < 4; ++a)
      for (int b = a + 1; b < 4; ++b) longest = std::max(longest, (x[a] - x[b]).norm());
    const double det = D.determinant();
    if (!(std::abs(det) > 1e-12 * longest * longest * longest)) continue;  // degenerate: skip
    const Eigen::Matrix3d Dinv = D.inverse();
    const double volume = std::abs(det) / 6.0;
    Eigen::Matrix<double, 4, 3> G;
    G.bottomRows<3>() = Dinv;
    G.row(0) = -Dinv.colwise().sum();
    const Eigen::Matrix4d Ke = volume * G * G.transpose();
    for (int a = 0; a < 4; ++a) {
      domain.mass[TT(t, a)] += volume / 4.0;
      for (int b = 0; b < 4; ++b) triplets.emplace_back(TT(t, a), TT(t, b), Ke(a, b));
    }
    kept.push_back(t);
    inverse.push_back(Dinv);
  }
  for (int i = 0; i < ntv; ++i)
    if (!(domain.mass[i] > 0.0))
      return absl::InvalidArgumentError(
          absl::StrFormat("tet_mesh.vertices[%d] is on no tetrahedron of non-zero volume", i));
  const int nk = static_cast<int>(kept.size());
  domain.K.resize(ntv, ntv);
  domain.K.setFromTriplets(triplets.begin(), triplets.end());
  triplets.clear();
  triplets.shrink_to_fit();
  domain.elements.resize(nk, 4);
  for (int e = 0; e < nk; ++e) domain.elements.row(e) = TT.row(kept[e]);

  // Graph: the unique tet edges.
  {
    std::vector<std::pair<int32_t, int32_t>> edges;
    edges.reserve(static_cast<size_t>(nk) * 12);
    for (int e = 0; e < nk; ++e)
      for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 4; ++b)
          if (a != b) edges.emplace_back(domain.elements(e, a), domain.elements(e, b));
    std::sort(edges.begin(), edges.end());
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    domain.graph_offsets.assign(ntv + 1, 0);
    for (const auto& [i, j] : edges) ++domain.graph_offsets[i + 1];
    std::partial_sum(domain.graph_offsets.begin(), domain.graph_offsets.end(),
                     domain.graph_offsets.begin());
    domain.graph_targets.reserve(edges.size());
    domain.graph_lengths.reserve(edges.size());
    for (const auto& [i, j] : edges) {
      domain.graph_targets.push_back(j);
      domain.graph_lengths.push_back((TV.row(i) - TV.row(j)).norm());
    }
  }
  progress.Report("tet domain: locate vertices", 0.0);

  // Locate V: a coincident tet vertex, else the containing tet.
  const Vector3d lo = TV.colwise().minCoeff().transpose();
  const Vector3d hi = TV.colwise().maxCoeff().transpose();
  const double tol = 1e-9 * (hi - lo).norm();
  const Vector3d pad = Vector3d::Constant(tol);
  BucketGrid vertex_grid(lo, hi, ntv);
  vertex_grid.Fill(ntv, [&](int i, Vector3d* a, Vector3d* b) { *a = *b = TV.row(i).transpose(); });
  BucketGrid tet_grid(lo, hi, nk);
  tet_grid.Fill(nk, [&](int e, Vector3d* a, Vector3d* b) {
    Eigen::AlignedBox3d box;
    for (int k = 0; k < 4; ++k) box.extend(TV.row(domain.elements(e, k)).transpose());
    *a = box.min() - pad;
    *b = box.max() + pad;
  });
  constexpr double kBarycentricTolerance = 1e-8;
  std::vector<Eigen::Triplet<double>> map;
  map.reserve(static_cast<size_t>(nv) * 4);
  for (int v = 0; v < nv; ++v) {
    if ((v & 4095) == 0) {
      if (progress.Cancelled())
        return absl::CancelledError("cancelled while building the tet domain");
      progress.Report("tet domain: locate vertices", static_cast<double>(v) / nv);
    }
    const Vector3d p = V.row(v).transpose();
    int nearest = -1;
    double nearest_dist = tol;
    vertex_grid.Visit(p - pad, p + pad, [&](int i) {
      const double d = (TV.row(i).transpose() - p).norm();
      if (d < nearest_dist || (d == nearest_dist && (nearest < 0 || i < nearest)))
        nearest = i, nearest_dist = d;
    });
    if (nearest >= 0) {
      map.emplace_back(v, nearest, 1.0);
      continue;
    }
    int best = -1;
    Eigen::Vector4d best_lambda;
    double best_min = -std::numeric_limits<double>::infinity();
    tet_grid.Visit(p, p, [&](int e) {
      const Vector3d l = inverse[e] * (p - TV.row(domain.elements(e, 0)).transpose());
      const Eigen::Vector4d lambda(1.0 - l.sum(), l.x(), l.y(), l.z());
      const double m = lambda.minCoeff();
      if (m > best_min || (m == best_min && e < best)) best = e, best_min = m, best_lambda = lambda;
    });
    if (best < 0 || best_min < -kBarycentricTolerance)
      return absl::InvalidArgumentError(
          absl::StrFormat("mesh.vertices[%d] = (%g, %g, %g) lies outside every tetrahedron", v,
                          p.x(), p.y(), p.z()));
    best_lambda = best_lambda.cwiseMax(0.0);
    best_lambda /= best_lambda.sum();
    for (int k = 0; k < 4; ++k)
      if (best_lambda[k] != 0.0) map.emplace_back(v, domain.elements(best, k), best_lambda[k]);
  }
  domain.to_mesh.resize(nv, ntv);
  domain.to_mesh.setFromTriplets(map.begin(), map.end());
  progress.Report("tet domain: locate vertices", 1.0);
  return domain;
}

// ---------------------------------------------------------------------------------------------
// Options, reports, the domain builder and node lookup.

absl::Status VoxelGridOptions::Validate() const {
  if (resolution < kMinResolution || resolution > kMaxResolution)
    return absl::InvalidArgumentError(
        absl::StrFormat("options.voxel.resolution = %d is outside [%d, %d]", resolution,
                        kMinResolution, kMaxResolution));
  if (!(winding_threshold > 0.0) || !std::isfinite(winding_threshold))
    return absl::InvalidArgumentError(absl::StrFormat(
        "options.voxel.winding_threshold = %g must be positive and finite", winding_threshold));
  return absl::OkStatus();
}

std::string VoxelGridReport::BriefReport() const {
  return absl::StrFormat("voxel grid %d (%dx%dx%d cells, %d in the domain, %d nodes, spacing %g)",
                         resolution, cells.x(), cells.y(), cells.z(), inside_cells, nodes, spacing);
}

absl::Status DomainOptions::Validate() const {
  if (tet_mesh) return absl::OkStatus();
  return voxel.Validate();
}

std::string DomainReport::BriefReport() const {
  if (kind == VolumeDomain::Kind::kVoxelGrid) return voxel.BriefReport();
  return absl::StrFormat("tet mesh (%d nodes, %d tets)", nodes, tets);
}

absl::StatusOr<VolumeDomain> BuildDomain(const Mesh& mesh, const DomainOptions& options,
                                         DomainReport* report, const Progress& progress) {
  const auto start_time = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(options.Validate());
  DomainReport r;
  VolumeDomain domain;
  if (options.tet_mesh) {
    r.kind = VolumeDomain::Kind::kTetMesh;
    r.tets = static_cast<int>(options.tet_mesh->TT.rows());
    ASSIGN_OR_RETURN(domain,
                     BuildTetDomain(options.tet_mesh->TV, options.tet_mesh->TT, mesh.V, progress));
  } else {
    r.kind = VolumeDomain::Kind::kVoxelGrid;
    ASSIGN_OR_RETURN(domain, BuildVoxelDomain(mesh, options.voxel, &r.voxel, progress));
  }
  r.nodes = domain.num_nodes();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
  if (report != nullptr) *report = std::move(r);
  return domain;
}

absl::StatusOr<double> PointReach(const VolumeDomain& domain) {
  if (domain.kind == VolumeDomain::Kind::kVoxelGrid) {
    if (!(domain.spacing > 0.0))
      return absl::InvalidArgumentError("voxel domain has no spacing (not built?)");
    return 0.5 * std::sqrt(3.0) * domain.spacing;
  }
  return 1e-6 * BoundingBoxDiagonal(domain.nodes);
}

std::vector<int> NodesNear(const VolumeDomain& domain, const Eigen::Vector3d& point,
                           double radius) {
  const double reach = radius * (1.0 + 1e-9);
  std::vector<int> out;
  for (int i = 0; i < domain.num_nodes(); ++i)
    if ((domain.nodes.row(i).transpose() - point).norm() <= reach) out.push_back(i);
  return out;
}

}  // namespace skinning
