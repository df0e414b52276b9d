// The tetrahedral volume domain of a given tet mesh (BuildTetDomain).
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "core/geometry/volume_domain.h"

namespace skinning {

using Eigen::Vector3d;

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

}  // namespace skinning
