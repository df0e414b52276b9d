// The voxel-grid volume domain, in stages: the grid, the surface cells, inside/outside labels by
// generalized winding numbers, then node numbering and assembly of K, mass, graph and to_mesh.
#include <Eigen/Geometry>
#include <Eigen/SparseCore>
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "core/geometry/bvh.h"
#include "core/geometry/volume_domain.h"
#include "core/util/parallel.h"
#include "core/util/status_macros.h"
#include "core/util/timing.h"

namespace skinning {
namespace {

using Eigen::Vector3d;

// Threads for the winding-number evaluations (at most).
constexpr int kWindingThreads = 4;

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

// Whether cell (x, y, z) is in the grid and in the domain.
bool InDomain(const Grid& g, const std::vector<uint8_t>& inside, int x, int y, int z) {
  return x >= 0 && y >= 0 && z >= 0 && x < g.nx && y < g.ny && z < g.nz && inside[g.Cell(x, y, z)];
}

Eigen::Vector3i CellOf(const Grid& g, const Vector3d& p) {
  const Vector3d t = (p - g.origin) / g.h;
  const int n[3] = {g.nx, g.ny, g.nz};
  Eigen::Vector3i c;
  for (int a = 0; a < 3; ++a) c[a] = std::clamp(static_cast<int>(std::floor(t[a])), 0, n[a] - 1);
  return c;
}

// The grid: the mesh's bounding box padded by at least one cell per side, centred on the box,
// with cells of side longest side / resolution.
absl::StatusOr<Grid> MakeGrid(const Mesh& mesh, int res) {
  const Vector3d lo = mesh.V.colwise().minCoeff().transpose();
  const Vector3d hi = mesh.V.colwise().maxCoeff().transpose();
  const Vector3d extent = hi - lo;
  const double longest = extent.maxCoeff();
  if (!(longest > 0.0))
    return absl::InvalidArgumentError("mesh: all its vertices coincide (no volume and no surface to embed)");
  Grid g;
  g.h = longest / res;
  int n[3];
  for (int a = 0; a < 3; ++a)
    n[a] = std::max(1, static_cast<int>(std::ceil(extent[a] / g.h - 1e-9))) + 2;
  g.nx = n[0];
  g.ny = n[1];
  g.nz = n[2];
  g.origin = 0.5 * (lo + hi) - 0.5 * g.h * Vector3d(n[0], n[1], n[2]);
  return g;
}

// Stage 1: the surface cells: every cell a triangle overlaps, and every cell holding a vertex.
absl::StatusOr<std::vector<uint8_t>> SurfaceCells(const Mesh& mesh, const Grid& g,
                                                  const Progress& progress) {
  const int n[3] = {g.nx, g.ny, g.nz};
  const int64_t num_cells = g.num_cells();
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
  return surface;
}

// The 6-connected components of the non-surface cells.
struct CellComponents {
  std::vector<int64_t> order;  // non-surface cells grouped by component, each in BFS order
  std::vector<int64_t> start;  // component c is order[start[c], start[c + 1])
  int count() const { return static_cast<int>(start.size()) - 1; }
};

// Stage 2: the components, in BFS order.
absl::StatusOr<CellComponents> NonSurfaceComponents(const Grid& g, const std::vector<uint8_t>& surface,
                                                    const Progress& progress) {
  const int n[3] = {g.nx, g.ny, g.nz};
  const int64_t num_cells = g.num_cells();
  progress.Report("voxelize: classify cells", 0.0);
  std::vector<int32_t> component(num_cells, -1);
  CellComponents out;
  std::vector<int64_t>& order = out.order;
  std::vector<int64_t>& component_start = out.start;
  component_start = {0};
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
  return out;
}

struct Labels {
  std::vector<uint8_t> inside;  // per cell: in the domain (surface cells always are)
  int64_t surface_cells = 0;
  int64_t winding_evaluations = 0;
  bool surface_only = false;  // no cell centre is inside: the domain is the surface cells alone
};

// Stage 3: inside/outside labels.
absl::StatusOr<Labels> LabelInside(const Mesh& mesh, const Grid& g, const std::vector<uint8_t>& surface,
                                   const CellComponents& components, double threshold,
                                   const Progress& progress) {
  const int n[3] = {g.nx, g.ny, g.nz};
  const int64_t num_cells = g.num_cells();
  const int64_t stride[3] = {1, g.nx, int64_t{g.nx} * g.ny};
  // (3) Inside/outside. No triangle separates two adjacent non-surface cells (it would overlap
  // one of them), so within a component the winding number varies continuously: a component
  // bounded by a closed surface is wholly inside or outside, and only a leaking hole puts the
  // level set |w| = threshold through a component. Every region of constant inside/outside
  // reaches the surface (w is harmonic, so it has no interior extremum), so we evaluate w at the
  // "shell" (non-surface cells next to a surface cell; one cell for a component without any),
  // give every other cell the label of its nearest evaluated cell (multi-source BFS), and then
  // evaluate each inferred cell that borders a different label, until none does. A component
  // without a leak thus costs only its shell.
  const TriangleBvh bvh(mesh.V, mesh.F);
  auto centre_of = [&](int64_t cell) {
    return g.CellCentre(static_cast<int>(cell % g.nx), static_cast<int>((cell / g.nx) % g.ny),
                        static_cast<int>(cell / (int64_t{g.nx} * g.ny)));
  };
  // Far-field approximation first; closer to the threshold, a tighter one, then exact.
  auto winding_inside = [&](int64_t cell) -> uint8_t {
    const Vector3d q = centre_of(cell);
    double w = std::abs(bvh.WindingNumber(q, 2.0));
    if (std::abs(w - threshold) < 0.15) w = std::abs(bvh.WindingNumber(q, 6.0));
    if (std::abs(w - threshold) < 0.03)
      w = std::abs(bvh.WindingNumber(q, std::numeric_limits<double>::infinity()));
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
  Labels out;
  int64_t& evaluations = out.winding_evaluations;
  auto evaluate = [&](const std::vector<int64_t>& cells) {
    std::vector<uint8_t> result(cells.size());
    if (!ParallelFor(static_cast<int>(cells.size()), kWindingThreads, progress,
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
    for (int c = 0; c < components.count(); ++c) {
      const size_t before = shell.size();
      for (int64_t i = components.start[c]; i < components.start[c + 1]; ++i) {
        bool next_to_surface = false;
        for_each_neighbour(components.order[i], [&](int64_t nb) { next_to_surface |= surface[nb] != 0; });
        if (next_to_surface) shell.push_back(components.order[i]);
      }
      if (shell.size() == before) shell.push_back(components.order[components.start[c]]);
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
  std::vector<uint8_t>& inside = out.inside;
  inside.resize(num_cells);
  int64_t inside_non_surface = 0;
  for (int64_t cell = 0; cell < num_cells; ++cell) {
    inside[cell] = surface[cell] || label[cell];
    inside_non_surface += !surface[cell] && label[cell];
  }
  int64_t& num_surface = out.surface_cells;
  for (int64_t cell = 0; cell < num_cells; ++cell) num_surface += surface[cell];
  if (inside_non_surface == 0) {
    // Every enclosed cell may be a surface cell (a thin closed shell at a coarse resolution):
    // the mesh has an inside when some surface cell's centre does.
    std::vector<int64_t> surface_cells;
    for (int64_t cell = 0; cell < num_cells; ++cell)
      if (surface[cell]) surface_cells.push_back(cell);
    std::atomic<bool> found{false};
    if (!ParallelFor(static_cast<int>(surface_cells.size()), kWindingThreads, progress, [&](int i) {
          if (!found.load(std::memory_order_relaxed) && winding_inside(surface_cells[i]))
            found = true;
        }))
      return absl::CancelledError("cancelled while voxelizing");
    evaluations += static_cast<int64_t>(surface_cells.size());
    // An open or flat surface that encloses no volume (a flat cut-out character, a sheet of
    // cloth): the domain is the cells it passes through, a sheet one or two cells thick, as
    // geodesic voxel binding voxelizes open meshes.
    out.surface_only = !found;
  }
  return out;
}

// Stage 4: nodes (the corners of domain cells, numbered in corner order) and elements. Returns
// the number of domain cells.
absl::StatusOr<int64_t> NumberNodes(const Grid& g, const std::vector<uint8_t>& inside, VolumeDomain* domain) {
  domain->grid_node.assign(g.num_corners(), -1);
  int64_t num_domain_cells = 0;
  for (int z = 0; z < g.nz; ++z)
    for (int y = 0; y < g.ny; ++y)
      for (int x = 0; x < g.nx; ++x) {
        if (!inside[g.Cell(x, y, z)]) continue;
        ++num_domain_cells;
        for (int k = 0; k < 8; ++k)
          domain->grid_node[g.Corner(x + (k & 1), y + ((k >> 1) & 1), z + (k >> 2))] = 0;
      }
  int32_t num_nodes = 0;
  for (int32_t& id : domain->grid_node)
    if (id == 0) id = num_nodes++;
  if (int64_t{num_nodes} > std::numeric_limits<int32_t>::max() / 32)
    return absl::InvalidArgumentError("voxel grid has too many nodes");

  domain->nodes.resize(num_nodes, 3);
  domain->elements.resize(num_domain_cells, 8);
  {
    int64_t e = 0;
    for (int z = 0; z <= g.nz; ++z)
      for (int y = 0; y <= g.ny; ++y)
        for (int x = 0; x <= g.nx; ++x) {
          const int32_t id = domain->grid_node[g.Corner(x, y, z)];
          if (id >= 0) domain->nodes.row(id) = (g.origin + g.h * Vector3d(x, y, z)).transpose();
          if (x < g.nx && y < g.ny && z < g.nz && inside[g.Cell(x, y, z)]) {
            for (int k = 0; k < 8; ++k)
              domain->elements(e, k) =
                  domain->grid_node[g.Corner(x + (k & 1), y + ((k >> 1) & 1), z + (k >> 2))];
            ++e;
          }
        }
  }
  return num_domain_cells;
}

// Stage 5: K, mass and the node graph.
absl::Status AssembleOperators(const Grid& g, const std::vector<uint8_t>& inside, const Progress& progress,
                               VolumeDomain* domain) {
  const int32_t num_nodes = domain->num_nodes();
  // K, mass and graph in one pass over each node's 27-neighbourhood. Nodes p and p + o share
  // the domain cells c with c ≤ min(p, p + o) and c + 1 ≥ max(p, p + o) per axis, all among
  // the 8 cells around p; each shared cell adds h × kUnitCubeStiffness[#non-zero components of
  // o] to K(p, p + o), and any shared cell makes a graph edge. Neighbours come in increasing
  // node order, so K (symmetric: column i = row i) is filled column by column.
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
  domain->mass.resize(num_nodes);
  domain->graph_offsets.assign(1, 0);
  domain->graph_offsets.reserve(num_nodes + 1);
  domain->graph_targets.reserve(static_cast<size_t>(num_nodes) * 26);
  domain->graph_lengths.reserve(static_cast<size_t>(num_nodes) * 26);
  domain->K.resize(num_nodes, num_nodes);
  domain->K.reserve(static_cast<Eigen::Index>(num_nodes) * 19);
  const double h3 = g.h * g.h * g.h;
  for (int z = 0; z <= g.nz; ++z) {
    if (progress.Cancelled()) return absl::CancelledError("cancelled while voxelizing");
    for (int y = 0; y <= g.ny; ++y)
      for (int x = 0; x <= g.nx; ++x) {
        const int32_t i = domain->grid_node[g.Corner(x, y, z)];
        if (i < 0) continue;
        int around = 0;
        for (int b = 0; b < 8; ++b)
          if (InDomain(g, inside, x - 1 + (b & 1), y - 1 + ((b >> 1) & 1), z - 1 + (b >> 2))) around |= 1 << b;
        domain->K.startVec(i);
        for (int o = 0; o < 27; ++o) {
          const int ox = o % 3 - 1, oy = (o / 3) % 3 - 1, oz = o / 9 - 1;
          const int shared = __builtin_popcount(around & shared_mask[o]);
          if (shared == 0) continue;
          // A shared domain cell means both corners are nodes.
          const int32_t j = domain->grid_node[g.Corner(x + ox, y + oy, z + oz)];
          const int d = std::abs(ox) + std::abs(oy) + std::abs(oz);
          if (d == 0) {
            domain->mass[i] = shared * h3 / 8.0;
          } else {
            domain->graph_targets.push_back(j);
            domain->graph_lengths.push_back(g.h * std::sqrt(static_cast<double>(d)));
          }
          if (kUnitCubeStiffness[d] != 0.0)
            domain->K.insertBack(j, i) = shared * g.h * kUnitCubeStiffness[d];
        }
        domain->graph_offsets.push_back(static_cast<int32_t>(domain->graph_targets.size()));
      }
  }
  domain->K.finalize();
  return absl::OkStatus();
}

// Stage 6: trilinear interpolation in the domain cell holding each vertex.
absl::Status InterpolateToMesh(const Mesh& mesh, const Grid& g, const std::vector<uint8_t>& inside,
                               VolumeDomain* domain) {
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
            if (!InDomain(g, inside, q.x(), q.y(), q.z())) continue;
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
      map.emplace_back(v, domain->grid_node[g.Corner(c.x() + bx, c.y() + by, c.z() + bz)], w);
    }
  }
  domain->to_mesh.resize(nv, domain->num_nodes());
  domain->to_mesh.setFromTriplets(map.begin(), map.end());
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<VolumeDomain> BuildVoxelDomain(const Mesh& mesh, const VoxelGridOptions& options,
                                              VoxelGridReport* report, const Progress& progress) {
  const auto start_time = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(options.Validate());
  const int res = options.resolution;
  RETURN_IF_ERROR(ValidateMesh(mesh));
  ASSIGN_OR_RETURN(const Grid g, MakeGrid(mesh, res));
  ASSIGN_OR_RETURN(const std::vector<uint8_t> surface, SurfaceCells(mesh, g, progress));
  ASSIGN_OR_RETURN(const CellComponents components, NonSurfaceComponents(g, surface, progress));
  ASSIGN_OR_RETURN(const Labels labels,
                   LabelInside(mesh, g, surface, components, options.winding_threshold, progress));
  if (progress.Cancelled()) return absl::CancelledError("cancelled while voxelizing");

  progress.Report("voxelize: assemble", 0.0);
  VolumeDomain domain;
  domain.kind = VolumeDomain::Kind::kVoxelGrid;
  domain.origin = g.origin;
  domain.spacing = g.h;
  domain.cells = Eigen::Vector3i(g.nx, g.ny, g.nz);
  ASSIGN_OR_RETURN(const int64_t num_domain_cells, NumberNodes(g, labels.inside, &domain));
  domain.cell_inside = labels.inside;
  RETURN_IF_ERROR(AssembleOperators(g, labels.inside, progress, &domain));
  progress.Report("voxelize: assemble", 0.8);
  RETURN_IF_ERROR(InterpolateToMesh(mesh, g, labels.inside, &domain));
  progress.Report("voxelize: assemble", 1.0);

  if (report != nullptr) {
    report->resolution = res;
    report->cells = domain.cells;
    report->inside_cells = static_cast<int>(num_domain_cells);
    report->surface_cells = static_cast<int>(labels.surface_cells);
    report->nodes = domain.num_nodes();
    report->spacing = g.h;
    report->components = components.count();
    report->winding_evaluations = static_cast<int>(labels.winding_evaluations);
    report->surface_only = labels.surface_only;
    report->seconds =
        SecondsSince(start_time);
  }
  return domain;
}

}  // namespace skinning
