#include "core/skinning/support_joints.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "core/rig/bones.h"
#include "core/util/option_checks.h"
#include "core/util/status_macros.h"

namespace skinning {

namespace {

// Angle of the rotation a⁻¹ b (q and −q are the same rotation).
double AngleBetween(const Eigen::Quaterniond& a, const Eigen::Quaterniond& b) {
  const Eigen::Quaterniond q = a.normalized().conjugate() * b.normalized();
  return 2.0 * std::atan2(q.vec().norm(), std::abs(q.w()));
}

}  // namespace

std::vector<SupportJoint> FindSupportJoints(const Skeleton& skeleton,
                                            const std::vector<std::vector<Transform>>& poses) {
  const std::vector<Transform> bind = BindPoseLocals(skeleton);
  std::vector<SupportJoint> out;
  for (int j = 0; j < skeleton.size(); ++j) {
    const Joint& joint = skeleton.joints[j];
    if (!joint.deforms || joint.parent < 0 || !skeleton.joints[joint.parent].deforms) continue;
    bool bent = false;
    for (const auto& pose : poses)
      if (static_cast<int>(pose.size()) == skeleton.size() &&
          AngleBetween(bind[j].rotation, pose[j].rotation) > 1e-6)
        bent = true;
    if (!bent) continue;
    SupportJoint s;
    s.joint = j;
    s.parent = joint.parent;
    s.joint_position = BindPosition(skeleton, j);
    s.parent_position = BindPosition(skeleton, joint.parent);
    if (s.parent_length() <= 0) continue;
    bool has_child = false;
    for (int c = 0; c < skeleton.size() && !has_child; ++c) {
      if (skeleton.joints[c].parent != j) continue;
      const Eigen::Vector3d p = BindPosition(skeleton, c);
      if ((p - s.joint_position).norm() > 1e-12) {
        s.child_position = p;
        has_child = true;
      }
    }
    if (!has_child && joint.tail && (*joint.tail - s.joint_position).norm() > 1e-12) {
      s.child_position = *joint.tail;
      has_child = true;
    }
    if (has_child) out.push_back(s);
  }
  return out;
}

Eigen::Affine3d SupportJointTransform(const SupportJoint& support,
                                      const std::vector<Eigen::Affine3d>& T, double x) {
  const Eigen::Affine3d& Tp = T[support.parent];
  const Eigen::Affine3d& Tj = T[support.joint];
  const Eigen::Vector3d s =
      support.joint_position + x * (support.parent_position - support.joint_position);
  const Eigen::Vector3d s_posed = Tp * s;
  const Eigen::Matrix3d Lp = Tp.linear();
  const Eigen::Vector3d rest_bone = Lp * (support.child_position - s);
  const Eigen::Vector3d posed_bone = Tj * support.child_position - s_posed;
  Eigen::Matrix3d R = Eigen::Matrix3d::Identity();
  if (rest_bone.norm() > 0 && posed_bone.norm() > 0)
    R = Eigen::Quaterniond::FromTwoVectors(rest_bone, posed_bone).toRotationMatrix();
  Eigen::Affine3d out = Eigen::Affine3d::Identity();
  out.linear() = R * Lp;
  out.translation() = s_posed - out.linear() * s;
  return out;
}

absl::StatusOr<Eigen::VectorXd> GeodesicVertexDistances(const VolumeDomain& domain,
                                                        const Eigen::Vector3d& point) {
  ASSIGN_OR_RETURN(const double reach, PointReach(domain));
  const std::vector<int> seeds = NodesNear(domain, point, reach);
  const int N = domain.num_nodes();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> dist(N, kInf);
  using Entry = std::pair<double, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  for (int n : seeds) {
    // Start at the node's Euclidean distance from the point, so the field is continuous.
    const double d0 = (domain.nodes.row(n).transpose() - point).norm();
    if (d0 < dist[n]) {
      dist[n] = d0;
      queue.emplace(d0, n);
    }
  }
  if (queue.empty())
    return absl::FailedPreconditionError("support joint: the joint lies outside the voxel domain");
  while (!queue.empty()) {
    const auto [d, v] = queue.top();
    queue.pop();
    if (d > dist[v]) continue;
    for (int e = domain.graph_offsets[v]; e < domain.graph_offsets[v + 1]; ++e) {
      const int u = domain.graph_targets[e];
      const double nd = d + domain.graph_lengths[e];
      if (nd < dist[u]) {
        dist[u] = nd;
        queue.emplace(nd, u);
      }
    }
  }
  // Interpolate; a vertex touching an unreached node is unreached.
  Eigen::VectorXd out = Eigen::VectorXd::Zero(domain.to_mesh.rows());
  for (int i = 0; i < domain.to_mesh.outerSize(); ++i)
    for (Eigen::SparseMatrix<double, Eigen::RowMajor>::InnerIterator it(domain.to_mesh, i); it;
         ++it) {
      if (it.value() == 0) continue;
      out[i] += it.value() * dist[it.col()];
    }
  return out;
}

void AddSupportMaps(const Eigen::MatrixXd& weights, const Eigen::VectorXd& weight_sums,
                    const std::vector<int>& vertices, const std::vector<Eigen::Affine3d>& TS,
                    std::vector<Eigen::Matrix<double, 3, 4>>* M) {
  for (int i : vertices) {
    Eigen::Matrix<double, 3, 4> m = (1.0 - weight_sums[i]) * (*M)[i];
    for (size_t s = 0; s < TS.size(); ++s)
      if (weights(i, s) > 0) m.noalias() += weights(i, s) * TS[s].matrix().topRows<3>();
    (*M)[i] = m;
  }
}

absl::Status SupportJointFitOptions::Validate() const {
  RETURN_IF_ERROR(CheckPositive("options.support_sigma", sigma));
  RETURN_IF_ERROR(CheckAtLeast("options.support_coarse_samples", coarse_samples, 2));
  RETURN_IF_ERROR(CheckAtLeast("options.support_refine_iterations", refine_iterations, 0));
  RETURN_IF_ERROR(CheckAtLeast("options.support_sweeps", sweeps, 1));
  return voxel.Validate();
}

SupportJointFitOptions SupportJointFitOptionsOf(const PsdOptions& options) {
  SupportJointFitOptions fit;
  fit.voxel = options.voxel;
  fit.sigma = options.support_sigma;
  fit.coarse_samples = options.support_coarse_samples;
  fit.refine_iterations = options.support_refine_iterations;
  fit.sweeps = options.support_sweeps;
  return fit;
}

absl::StatusOr<SupportJointFit> FitSupportJoints(
    const Mesh& mesh, const Skeleton& skeleton, const std::vector<PsdExample>& examples,
    const std::vector<SupportJoint>& found, const std::vector<std::vector<Eigen::Affine3d>>& T,
    const SupportJointFitOptions& options, const Progress& progress,
    std::vector<std::vector<Eigen::Matrix<double, 3, 4>>>* base_maps) {
  RETURN_IF_ERROR(options.Validate());
  const int n = static_cast<int>(mesh.V.rows());
  SupportJointFit fit;
  fit.slides.resize(examples.size());
  DomainOptions domain_options;
  domain_options.voxel = options.voxel;
  DomainReport domain_report;
  auto domain = BuildDomain(mesh, domain_options, &domain_report, progress.Sub(0.05, 0.4));
  if (!domain.ok()) {
    if (absl::IsCancelled(domain.status())) return domain.status();
    return absl::FailedPreconditionError("support joints: voxel grid for geodesic distances: " +
                                         std::string(domain.status().message()));
  }
  // Normalized example error of the base skinning, e_i.
  Eigen::VectorXd err = Eigen::VectorXd::Zero(n);
  for (size_t k = 0; k < examples.size(); ++k)
    for (int i = 0; i < n; ++i) {
      const Eigen::Vector3d base =
          (*base_maps)[k][i].leftCols<3>() * mesh.V.row(i).transpose() + (*base_maps)[k][i].col(3);
      err[i] = std::max(err[i], (examples[k].V.row(i).transpose() - base).norm());
    }
  const double emax = err.maxCoeff();
  if (emax > 0) err /= emax;
  const int S = static_cast<int>(found.size());
  fit.weights = Eigen::MatrixXd::Zero(n, S);
  for (int s = 0; s < S; ++s) {
    auto g = GeodesicVertexDistances(*domain, found[s].joint_position);
    if (!g.ok())
      return absl::FailedPreconditionError(absl::StrFormat(
          "support joint at skeleton.joints[%d] (%s): %s", found[s].joint,
          skeleton.joints[found[s].joint].name, g.status().message()));
    const double sigma = options.sigma * found[s].parent_length();
    for (int i = 0; i < n; ++i) {
      const double gi = (*g)[i];
      const double w = std::isfinite(gi) ? std::exp(-gi * gi / (2 * sigma * sigma)) * err[i] : 0.0;
      fit.weights(i, s) = w;
    }
  }
  fit.weight_sums = fit.weights.rowwise().sum();
  for (int i = 0; i < n; ++i) {
    if (fit.weight_sums[i] > 1.0) {
      fit.weights.row(i) /= fit.weight_sums[i];
      fit.weight_sums[i] = 1.0;
    }
    if (fit.weight_sums[i] > 0) fit.vertices.push_back(i);
  }
  progress.Report("psd: support weights", 0.45);

  // Slide optimization per example (coarse search + golden section, cyclic over supports).
  for (size_t k = 0; k < examples.size(); ++k) {
    std::vector<double> x(S, 0.5);
    std::vector<Eigen::Affine3d> TS(S);
    for (int s = 0; s < S; ++s) TS[s] = SupportJointTransform(found[s], T[k], x[s]);
    for (int sweep = 0; sweep < (S > 1 ? options.sweeps : 1); ++sweep) {
      for (int s = 0; s < S; ++s) {
        std::vector<int> verts;
        std::vector<Eigen::Vector3d> target;  // example − everything but support s
        for (int i : fit.vertices) {
          if (fit.weights(i, s) <= 0) continue;
          const Eigen::Vector3d v = mesh.V.row(i).transpose();
          Eigen::Vector3d other =
              (1.0 - fit.weight_sums[i]) * ((*base_maps)[k][i].leftCols<3>() * v + (*base_maps)[k][i].col(3));
          for (int t = 0; t < S; ++t)
            if (t != s && fit.weights(i, t) > 0) other += fit.weights(i, t) * (TS[t] * v);
          verts.push_back(i);
          target.push_back(examples[k].V.row(i).transpose() - other);
        }
        auto energy = [&](double xs) {
          const Eigen::Affine3d A = SupportJointTransform(found[s], T[k], xs);
          double e = 0;
          for (size_t q = 0; q < verts.size(); ++q) {
            const int i = verts[q];
            e += (target[q] - fit.weights(i, s) * (A * mesh.V.row(i).transpose())).squaredNorm();
          }
          return e;
        };
        const int M = options.coarse_samples;
        int best = 0;
        double best_e = std::numeric_limits<double>::infinity();
        for (int m = 0; m < M; ++m) {
          const double e = energy(static_cast<double>(m) / (M - 1));
          if (e < best_e) best_e = e, best = m;
        }
        double lo = std::max(0, best - 1) / static_cast<double>(M - 1);
        double hi = std::min(M - 1, best + 1) / static_cast<double>(M - 1);
        double best_x = static_cast<double>(best) / (M - 1);
        const double g = (std::sqrt(5.0) - 1) / 2;
        double a = hi - g * (hi - lo), b = lo + g * (hi - lo);
        double ea = energy(a), eb = energy(b);
        for (int it = 0; it < options.refine_iterations; ++it) {
          if (ea < eb) {
            hi = b, b = a, eb = ea, a = hi - g * (hi - lo), ea = energy(a);
          } else {
            lo = a, a = b, ea = eb, b = lo + g * (hi - lo), eb = energy(b);
          }
        }
        if (ea < best_e) best_e = ea, best_x = a;
        if (eb < best_e) best_e = eb, best_x = b;
        x[s] = best_x;
        TS[s] = SupportJointTransform(found[s], T[k], x[s]);
      }
    }
    fit.slides[k] = x;
    AddSupportMaps(fit.weights, fit.weight_sums, fit.vertices, TS, &(*base_maps)[k]);
    progress.Report("psd: support slides", 0.45 + 0.35 * (k + 1) / examples.size());
    RETURN_IF_ERROR(progress.CheckCancelled());
  }
  fit.grid = domain_report.voxel;
  return fit;
}

}  // namespace skinning
