#include "core/weights/bone_heat.h"

#include <Eigen/CholmodSupport>
#include <Eigen/Geometry>
#include <Eigen/SparseCore>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/geometry/bvh.h"
#include "core/geometry/cotangent_laplacian.h"
#include "core/util/option_checks.h"
#include "core/util/status_macros.h"
#include "core/util/timing.h"

namespace skinning {
namespace {

using Clock = std::chrono::steady_clock;

struct Bone {
  int joint;
  Eigen::Vector3d a, b;
};

Eigen::Vector3d ClosestPointOnBone(const Eigen::Vector3d& p, const Bone& bone) {
  const Eigen::Vector3d d = bone.b - bone.a;
  const double len2 = d.squaredNorm();
  if (len2 == 0) return bone.a;
  return bone.a + std::clamp((p - bone.a).dot(d) / len2, 0.0, 1.0) * d;
}

std::vector<Bone> CollectBones(const std::vector<JointHandle>& handles) {
  std::vector<Bone> bones;
  for (int j = 0; j < static_cast<int>(handles.size()); ++j) {
    if (!handles[j].deforms) continue;
    for (const Segment& s : handles[j].segments) bones.push_back({j, s.a, s.b});
  }
  return bones;
}

constexpr double kRelativeEpsilon = 1e-6;  // of the bounding-box diagonal

// NearestVisibleBones, with cancellation: returns false when cancelled. Runs on two threads.
bool ComputeSources(const RowMatrixX3d& V, const RowMatrixX3i& F,
                    const std::vector<JointHandle>& handles, const BoneHeatOptions& options,
                    const Progress& progress, BoneHeatSources* out) {
  const int nv = static_cast<int>(V.rows());
  const int nj = static_cast<int>(handles.size());
  out->heat = Eigen::VectorXd::Zero(nv);
  out->nearest = Eigen::MatrixXd::Zero(nv, nj);
  out->nearest_any = Eigen::VectorXi::Constant(nv, -1);
  const std::vector<Bone> bones = CollectBones(handles);
  if (bones.empty() || nv == 0) return true;
  const double diag = BoundingBoxDiagonal(V);
  const double epsilon = kRelativeEpsilon * diag;
  const double floor = diag > 0 ? kRelativeEpsilon * diag : 1e-12;
  const TriangleBvh bvh(V, F);
  const double factor = 1.0 + std::max(0.0, options.tie_tolerance);
  const RowMatrixX3d N = options.normal_weighted_distance ? PerVertexNormals(V, F) : RowMatrixX3d();
  // The distance from p (vertex i) to its closest point q on a bone.
  auto distance = [&](int i, const Eigen::Vector3d& p, const Eigen::Vector3d& q) {
    const double d = (q - p).norm();
    if (!options.normal_weighted_distance || d <= 0) return d;
    const double cosine = (p - q).dot(N.row(i).transpose()) / d;
    return d / (0.5 * (cosine + 1.001));
  };

  std::atomic<bool> cancelled{false};
  std::atomic<int> done{0};
  constexpr int kChunk = 64;
  std::atomic<int> next_chunk{0};
  auto worker = [&](bool reports) {
    std::vector<std::pair<double, int>> order(bones.size());  // (distance, bone)
    std::vector<int> tied;
    while (!cancelled.load(std::memory_order_relaxed)) {
      const int begin = kChunk * next_chunk.fetch_add(1);
      if (begin >= nv) break;
      const int end = std::min(nv, begin + kChunk);
      for (int i = begin; i < end; ++i) {
        const Eigen::Vector3d p = V.row(i).transpose();
        for (size_t b = 0; b < bones.size(); ++b)
          order[b] = {distance(i, p, ClosestPointOnBone(p, bones[b])), static_cast<int>(b)};
        std::sort(order.begin(), order.end());
        out->nearest_any(i) = bones[order[0].second].joint;
        double nearest = options.nearest_must_be_visible ? order[0].first : std::numeric_limits<double>::infinity();
        tied.clear();
        for (const auto& [dist, b] : order) {
          if (dist > nearest * factor) break;
          const int joint = bones[b].joint;
          if (std::find(tied.begin(), tied.end(), joint) != tied.end()) continue;
          const Eigen::Vector3d q = ClosestPointOnBone(p, bones[b]);
          if (bvh.SegmentHitsSurface(p, q, epsilon)) continue;
          if (tied.empty() && !options.nearest_must_be_visible) nearest = dist;
          tied.push_back(joint);
        }
        if (tied.empty()) continue;
        const double d = std::max(nearest, floor);
        const double h = static_cast<double>(tied.size());
        out->heat(i) = h * options.heat_coefficient / (d * d);
        for (int joint : tied) out->nearest(i, joint) = 1.0 / h;
      }
      const int finished = done.fetch_add(end - begin) + (end - begin);
      if (progress.Cancelled()) cancelled = true;
      if (reports) progress.Report("visibility", static_cast<double>(finished) / nv);
    }
  };
  std::thread helper;
  if (nv >= 2 * kChunk) helper = std::thread(worker, false);
  worker(true);
  if (helper.joinable()) helper.join();
  // The helper thread may have taken every chunk: report the stage's end from here.
  if (!cancelled.load()) progress.Report("visibility", 1.0);
  return !cancelled.load();
}

// Connected components of the vertices through the triangles of positive area (union–find),
// the components on which K's null space is the constants; vertices on no such triangle are
// their own component.
std::vector<int> ComponentLabels(const RowMatrixX3d& V, const RowMatrixX3i& F) {
  const int nv = static_cast<int>(V.rows());
  std::vector<int> parent(nv);
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (Eigen::Index f = 0; f < F.rows(); ++f) {
    const Eigen::Vector3d e1 = (V.row(F(f, 1)) - V.row(F(f, 0))).transpose();
    const Eigen::Vector3d e2 = (V.row(F(f, 2)) - V.row(F(f, 0))).transpose();
    if (!(e1.cross(e2).norm() > 0.0)) continue;
    for (int c = 1; c < 3; ++c) {
      const int a = find(F(f, 0)), b = find(F(f, c));
      if (a != b) parent[std::max(a, b)] = std::min(a, b);
    }
  }
  std::vector<int> label(nv);
  for (int i = 0; i < nv; ++i) label[i] = find(i);
  return label;
}

}  // namespace

BoneHeatSources NearestVisibleBones(const RowMatrixX3d& V, const RowMatrixX3i& F,
                                    const std::vector<JointHandle>& handles,
                                    const BoneHeatOptions& options) {
  BoneHeatSources sources;
  ComputeSources(V, F, handles, options, Progress(), &sources);
  return sources;
}

absl::Status BoneHeatOptions::Validate() const {
  RETURN_IF_ERROR(CheckPositive("options.bone_heat.heat_coefficient", heat_coefficient));
  return CheckNonNegative("options.bone_heat.tie_tolerance", tie_tolerance);
}

std::string BoneHeatReport::BriefReport() const {
  return absl::StrFormat("%d vertices without a visible bone, %.3g s",
                         vertices_without_visible_bone, seconds);
}

absl::StatusOr<Eigen::MatrixXd> BoneHeatWeights(const Mesh& mesh,
                                                const std::vector<JointHandle>& handles,
                                                const BoneHeatOptions& options,
                                                BoneHeatReport* report, const Progress& progress) {
  const Clock::time_point start = Clock::now();
  RETURN_IF_ERROR(options.Validate());
  RETURN_IF_ERROR(ValidateMesh(mesh));
  if (handles.empty()) return absl::InvalidArgumentError("skeleton has no joints");
  bool any_bone = false;
  for (int j = 0; j < static_cast<int>(handles.size()); ++j) {
    if (!handles[j].deforms) continue;
    for (const Segment& s : handles[j].segments) {
      if (!s.a.allFinite() || !s.b.allFinite())
        return absl::InvalidArgumentError(
            absl::StrFormat("skeleton.joints[%d]: bone end point is not finite", j));
      any_bone = true;
    }
  }
  if (!any_bone) return absl::InvalidArgumentError("skeleton has no deforming joint with a bone");
  RETURN_IF_ERROR(progress.CheckCancelled());

  const RowMatrixX3d& V = mesh.V;
  const RowMatrixX3i& F = mesh.F;
  const int nv = static_cast<int>(V.rows());
  const int nj = static_cast<int>(handles.size());
  BoneHeatReport local_report;
  BoneHeatReport& rep = report ? *report : local_report;
  rep = BoneHeatReport();

  // 1. Heat sources: nearest visible bones.
  Clock::time_point stage = Clock::now();
  BoneHeatSources sources;
  if (!ComputeSources(V, F, handles, options, progress.Sub(0.0, 0.4), &sources))
    return absl::CancelledError("cancelled");
  rep.visibility_seconds = SecondsSince(stage);

  // 2. Fallbacks: a component that sees no bone at all, and vertices of zero mass (on no
  // triangle of positive area), take their nearest bone regardless of visibility.
  const Eigen::VectorXd mass = LumpedMass(V, F, MassLumping::kVoronoi);
  const std::vector<int> label = ComponentLabels(V, F);
  std::vector<uint8_t> component_heated(nv, 0);
  for (int i = 0; i < nv; ++i)
    if (sources.heat(i) > 0 && mass(i) > 0) component_heated[label[i]] = 1;
  const double diag = BoundingBoxDiagonal(V);
  const double floor = diag > 0 ? kRelativeEpsilon * diag : 1e-12;
  const std::vector<Bone> bones = CollectBones(handles);
  std::vector<uint8_t> pinned(nv, 0);  // zero-mass vertices: w_i = p_i directly
  for (int i = 0; i < nv; ++i) {
    const bool sees_none = sources.heat(i) == 0;
    if (sees_none) ++rep.vertices_without_visible_bone;
    if (mass(i) <= 0) {
      pinned[i] = 1;
    } else if (!sees_none || component_heated[label[i]]) {
      if (sees_none) ++rep.vertices_heated_by_neighbours;
      continue;
    }
    if (!sees_none && pinned[i]) continue;  // keeps its visible sources' p
    const Eigen::Vector3d p = V.row(i).transpose();
    double d = std::numeric_limits<double>::infinity();
    for (const Bone& b : bones) d = std::min(d, (ClosestPointOnBone(p, b) - p).norm());
    d = std::max(d, floor);
    sources.heat(i) = options.heat_coefficient / (d * d);
    sources.nearest.row(i).setZero();
    sources.nearest(i, sources.nearest_any(i)) = 1.0;
  }
  RETURN_IF_ERROR(progress.CheckCancelled());

  // 3. (K + M H) w_j = M H p_j, one factorization.
  stage = Clock::now();
  progress.Report("factorize", 0.4);
  Eigen::SparseMatrix<double> A = CotangentStiffness(V, F);
  Eigen::VectorXd diagonal(nv);
  for (int i = 0; i < nv; ++i) diagonal(i) = pinned[i] ? 1.0 : mass(i) * sources.heat(i);
  {
    Eigen::SparseMatrix<double> D(nv, nv);
    std::vector<Eigen::Triplet<double>> t;
    t.reserve(nv);
    for (int i = 0; i < nv; ++i) t.emplace_back(i, i, diagonal(i));
    D.setFromTriplets(t.begin(), t.end());
    A += D;
  }
  A.makeCompressed();
  Eigen::CholmodDecomposition<Eigen::SparseMatrix<double>, Eigen::Lower> solver;
  solver.compute(A);
  if (solver.info() != Eigen::Success)
    return absl::InternalError(
        "bone heat: CHOLMOD could not factor the heat system (K + MH is not positive definite)");
  rep.factorize_seconds = SecondsSince(stage);
  RETURN_IF_ERROR(progress.CheckCancelled());

  stage = Clock::now();
  Eigen::MatrixXd W = Eigen::MatrixXd::Zero(nv, nj);
  std::vector<int> deforming;
  for (int j = 0; j < nj; ++j)
    if (handles[j].deforms && !handles[j].segments.empty()) deforming.push_back(j);
  for (size_t k = 0; k < deforming.size(); ++k) {
    const int j = deforming[k];
    progress.Sub(0.5, 1.0).Report(absl::StrFormat("solve joint %d/%d", k + 1, deforming.size()),
                                  static_cast<double>(k) / deforming.size());
    const Eigen::VectorXd rhs = diagonal.cwiseProduct(sources.nearest.col(j));
    if (rhs.isZero(0)) continue;
    W.col(j) = solver.solve(rhs);
    if (solver.info() != Eigen::Success)
      return absl::InternalError(
          absl::StrFormat("bone heat: CHOLMOD solve failed for joint %d", j));
    RETURN_IF_ERROR(progress.CheckCancelled());
  }
  rep.solve_seconds = SecondsSince(stage);

  // 4. Clamp to [0, 1] and normalize.
  W = W.cwiseMax(0.0).cwiseMin(1.0);
  for (int i = 0; i < nv; ++i) {
    const double sum = W.row(i).sum();
    if (sum > 0) {
      W.row(i) /= sum;
    } else {
      ++rep.zero_rows;
      W(i, sources.nearest_any(i)) = 1.0;
    }
  }
  progress.Report("done", 1.0);
  rep.seconds = SecondsSince(start);
  return W;
}

}  // namespace skinning
