#include "core/geometry/weld.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <unordered_map>

namespace skinning {
namespace {

// Union-find over vertex indices; the representative of a set is its smallest index.
int Find(std::vector<int>& parent, int i) {
  while (parent[i] != i) {
    parent[i] = parent[parent[i]];
    i = parent[i];
  }
  return i;
}

void Union(std::vector<int>& parent, int a, int b) {
  a = Find(parent, a);
  b = Find(parent, b);
  if (a == b) return;
  if (a < b) parent[b] = a;
  else parent[a] = b;
}

struct CellHash {
  size_t operator()(const Eigen::Vector3i& c) const {
    return static_cast<size_t>(c.x()) * 73856093u ^ static_cast<size_t>(c.y()) * 19349663u ^
           static_cast<size_t>(c.z()) * 83492791u;
  }
};
struct CellEq {
  bool operator()(const Eigen::Vector3i& a, const Eigen::Vector3i& b) const { return a == b; }
};

}  // namespace

WeldedMesh Weld(const Mesh& mesh, double relative_tolerance) {
  const int n = static_cast<int>(mesh.V.rows());
  WeldedMesh out;
  out.of.resize(n);
  if (n == 0) return out;
  const Eigen::RowVector3d lo = mesh.V.colwise().minCoeff(), hi = mesh.V.colwise().maxCoeff();
  const double tol = std::max(relative_tolerance * (hi - lo).norm(), 1e-300);
  // Points within tol of each other lie in the same or neighbouring cells of side tol.
  std::unordered_map<Eigen::Vector3i, std::vector<int>, CellHash, CellEq> cells;
  cells.reserve(static_cast<size_t>(n));
  auto cell_of = [&](int i) -> Eigen::Vector3i {
    return ((mesh.V.row(i) - lo) / tol).array().floor().cast<int>().transpose();
  };
  std::vector<int> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  const double tol2 = tol * tol;
  for (int i = 0; i < n; ++i) {
    const Eigen::Vector3i c = cell_of(i);
    for (int dx = -1; dx <= 1; ++dx)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dz = -1; dz <= 1; ++dz) {
          auto it = cells.find(c + Eigen::Vector3i(dx, dy, dz));
          if (it == cells.end()) continue;
          for (int j : it->second)
            if ((mesh.V.row(i) - mesh.V.row(j)).squaredNorm() <= tol2) Union(parent, i, j);
        }
    cells[c].push_back(i);
  }
  // Kept vertices in original order: each set's smallest index.
  std::vector<int> index(n, -1);
  int kept = 0;
  for (int i = 0; i < n; ++i)
    if (Find(parent, i) == i) index[i] = kept++;
  out.changed = kept < n;
  out.mesh.V.resize(kept, 3);
  for (int i = 0; i < n; ++i) {
    out.of[i] = index[Find(parent, i)];
    if (index[i] >= 0) out.mesh.V.row(index[i]) = mesh.V.row(i);
  }
  std::vector<Eigen::Vector3i> tris;
  tris.reserve(static_cast<size_t>(mesh.F.rows()));
  for (Eigen::Index f = 0; f < mesh.F.rows(); ++f) {
    const Eigen::Vector3i t(out.of[mesh.F(f, 0)], out.of[mesh.F(f, 1)], out.of[mesh.F(f, 2)]);
    if (t[0] == t[1] || t[1] == t[2] || t[0] == t[2]) continue;
    tris.push_back(t);
  }
  out.mesh.F.resize(static_cast<Eigen::Index>(tris.size()), 3);
  for (size_t f = 0; f < tris.size(); ++f) out.mesh.F.row(static_cast<Eigen::Index>(f)) = tris[f].transpose();
  DropUnreferenced(&out);
  return out;
}

void DropUnreferenced(WeldedMesh* w) {
  const int n = static_cast<int>(w->mesh.V.rows());
  std::vector<char> used(n, 0);
  for (Eigen::Index i = 0; i < w->mesh.F.size(); ++i) used[w->mesh.F.data()[i]] = 1;
  const int num_used = static_cast<int>(std::count(used.begin(), used.end(), 1));
  const int64_t unused = n - num_used;
  // None to drop, nothing to map them to, or too many for the search below (a point cloud).
  if (unused == 0 || num_used == 0 || unused * num_used > int64_t{400000000}) return;
  std::vector<int> index(n, -1);
  RowMatrixX3d V(num_used, 3);
  for (int v = 0, k = 0; v < n; ++v)
    if (used[v]) V.row(index[v] = k++) = w->mesh.V.row(v);
  for (int v = 0; v < n; ++v) {
    if (used[v]) continue;
    Eigen::Index nearest = 0;
    (V.rowwise() - w->mesh.V.row(v)).rowwise().squaredNorm().minCoeff(&nearest);
    index[v] = static_cast<int>(nearest);
  }
  for (Eigen::Index i = 0; i < w->mesh.F.size(); ++i) w->mesh.F.data()[i] = index[w->mesh.F.data()[i]];
  for (int& o : w->of) o = index[o];
  w->mesh.V = std::move(V);
  w->changed = true;
}

}  // namespace skinning
