// Algorithm 1 of Kavan & Sorkine 2012 (d, s, t per joint) and the gold-standard model bake.
#include "core/weights/swing_twist_bake.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "core/rig/bones.h"
#include "core/util/status_macros.h"
#include "core/util/timing.h"
#include "core/weights/bbw_coarse_start.h"
#include "core/weights/geodesic_weights.h"
#include "core/weights/handles.h"

namespace skinning {

namespace {

using Clock = std::chrono::steady_clock;

// The validated input, the domain and its bone nodes.
struct PreparedDomain {
  std::vector<JointHandle> handles;
  VolumeDomain domain;
  std::vector<std::vector<int>> bone_nodes;
  std::string description;
};

absl::StatusOr<PreparedDomain> PrepareDomain(const Mesh& mesh, const Skeleton& skeleton,
                                             const DomainOptions& options,
                                             const Progress& progress) {
  RETURN_IF_ERROR(ValidateMesh(mesh));
  RETURN_IF_ERROR(ValidateSkeleton(skeleton));
  ASSIGN_OR_RETURN(std::vector<JointHandle> handles, JointHandles(skeleton));
  int deforming = 0;
  for (const JointHandle& h : handles) deforming += h.deforms;
  if (deforming == 0) return absl::InvalidArgumentError("skeleton has no deforming joint to bake weights for");
  PreparedDomain out;
  out.handles = std::move(handles);
  progress.Report("voxelize", 0.0);
  DomainReport report;
  ASSIGN_OR_RETURN(out.domain, BuildDomain(mesh, options, &report, progress));
  out.description = report.BriefReport();
  ASSIGN_OR_RETURN(out.bone_nodes, RasterizeRigidBones(out.domain, out.handles));
  progress.Report("voxelize", 1.0);
  return out;
}

}  // namespace

absl::Status SwingTwistBakeOptions::Validate() const {
  RETURN_IF_ERROR(domain.Validate());
  RETURN_IF_ERROR(emw.Validate());
  return bbw.Validate();
}

absl::StatusOr<SwingTwistBakeResult> BakeSwingTwist(const Mesh& mesh, const Skeleton& skeleton,
                                                    const SwingTwistBakeOptions& options,
                                                    const Progress& progress) {
  const auto t0 = Clock::now();
  RETURN_IF_ERROR(options.Validate());
  ASSIGN_OR_RETURN(PreparedDomain prepared,
                   PrepareDomain(mesh, skeleton, options.domain, progress.Sub(0.0, 0.1)));
  RETURN_IF_ERROR(progress.CheckCancelled());
  SwingTwistBakeResult result;
  result.report.method = "swing_twist";
  result.report.domain = prepared.description;
  result.report.domain_nodes = prepared.domain.num_nodes();
  result.report.domain_seconds = SecondsSince(t0);
  const auto t1 = Clock::now();
  const VolumeDomain& domain = prepared.domain;
  const int J = static_cast<int>(skeleton.joints.size());
  const int N = domain.num_nodes();

  // Deformer weights: point BBW at the joints.
  const Progress dprog = progress.Sub(0.1, 0.3);
  dprog.Report("deformer weights", 0.0);
  const std::vector<JointHandle> points = JointPointHandles(skeleton);
  const HandleNodesOn point_nodes_on = [&points](const VolumeDomain& d) { return RasterizeHandles(d, points); };
  ASSIGN_OR_RETURN(std::vector<std::vector<int>> point_nodes, point_nodes_on(domain));
  const auto deformer_start = Clock::now();
  std::string coarse;
  ASSIGN_OR_RETURN(Eigen::MatrixXd d, BbwFromCoarseStart(mesh, options.domain.voxel, domain, point_nodes,
                                                         point_nodes_on, options.bbw, nullptr, dprog, &coarse));
  const double deformer_seconds = SecondsSince(deformer_start);  // with the coarse start
  const std::string deformer_start_detail =
      coarse.empty() ? "" : absl::StrCat(" (", absl::StripSuffix(coarse, "; "), ")");
  dprog.Report("deformer weights", 1.0);
  RETURN_IF_ERROR(progress.CheckCancelled());

  // Swing and twist weights per joint with a deformer.
  result.frames = JointFrames(skeleton, prepared.handles);
  result.node_swing = Eigen::MatrixXd::Zero(N, J);
  result.node_twist = Eigen::MatrixXd::Zero(N, J);
  result.swing_reports.assign(J, EmwReport());
  result.twist_reports.assign(J, EmwReport());
  int deformers = 0;
  for (int j = 0; j < J; ++j) deformers += result.frames[j].deformer;
  const Progress sprog = progress.Sub(0.3, 1.0);
  sprog.Report("swing/twist weights", 0.0);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  int done = 0;
  if (deformers > 0) {
    ASSIGN_OR_RETURN(ElasticEnergy energy, BuildElasticEnergy(domain));
    for (int j = 0; j < J; ++j) {
      if (!result.frames[j].deformer) continue;
      std::vector<int> moving, fixed;
      for (int other = 0; other < J; ++other) {
        std::vector<int>& dst = InSubtree(skeleton, other, j) ? moving : fixed;
        dst.insert(dst.end(), prepared.bone_nodes[other].begin(), prepared.bone_nodes[other].end());
      }
      const double f0 = static_cast<double>(done) / deformers, f1 = static_cast<double>(done + 1) / deformers;
      ASSIGN_OR_RETURN(EmwSwingTwist st,
                       EnergyMinimizingSwingTwistWeights(
                           energy, result.frames[j], moving, fixed, options.emw,
                           &result.swing_reports[j], &result.twist_reports[j], sprog.Sub(f0, f1)));
      const Eigen::VectorXd* s = &st.swing;
      const Eigen::VectorXd* t = &st.twist;
      result.node_swing.col(j) = *s;
      result.node_twist.col(j) = *t;
      lo = std::min({lo, s->minCoeff(), t->minCoeff()});
      hi = std::max({hi, s->maxCoeff(), t->maxCoeff()});
      ++done;
      sprog.Report("swing/twist weights", f1);
      RETURN_IF_ERROR(progress.CheckCancelled());
    }
  }
  result.node_deformer = std::move(d);
  result.deformer = domain.to_mesh * result.node_deformer;
  result.swing = domain.to_mesh * result.node_swing;
  result.twist = domain.to_mesh * result.node_twist;
  // Partition of unity of d on the vertices exactly (interpolation keeps it up to rounding).
  result.deformer = result.deformer.cwiseMax(0.0).cwiseMin(1.0);
  for (int i = 0; i < result.deformer.rows(); ++i) {
    const double sum = result.deformer.row(i).sum();
    if (!(sum > 0)) return absl::InternalError(absl::StrFormat("vertex %d received no deformer weight", i));
    result.deformer.row(i) /= sum;
  }
  result.report.solve_seconds = SecondsSince(t1);
  double emw_seconds = 0.0;
  for (int j = 0; j < J; ++j) emw_seconds += result.swing_reports[j].seconds + result.twist_reports[j].seconds;
  if (done > 0) {
    result.report.detail = absl::StrFormat(
        "%d deformers; per joint s+t %.3g s; weights in [%.4g, %.4g]; deformer BBW %.3g s%s", done,
        emw_seconds / done, lo, hi, deformer_seconds, deformer_start_detail);
  } else {
    result.report.detail =
        absl::StrFormat("no joint with a deformer; deformer BBW %.3g s%s", deformer_seconds, deformer_start_detail);
  }
  result.domain = std::move(prepared.domain);
  result.report.total_seconds = SecondsSince(t0);
  progress.Report("done", 1.0);
  return result;
}

absl::StatusOr<std::shared_ptr<const ElasticModel>> BuildElasticModel(const Mesh& mesh,
                                                                      const Skeleton& skeleton,
                                                                      const DomainOptions& domain,
                                                                      BakeReport* report,
                                                                      const Progress& progress) {
  const auto t0 = Clock::now();
  ASSIGN_OR_RETURN(PreparedDomain prepared,
                   PrepareDomain(mesh, skeleton, domain, progress.Sub(0.0, 0.5)));
  RETURN_IF_ERROR(progress.CheckCancelled());
  const double domain_seconds = SecondsSince(t0);
  const auto t1 = Clock::now();
  ASSIGN_OR_RETURN(Eigen::MatrixXd start_weights,
                   GeodesicVoxelWeights(prepared.domain, prepared.bone_nodes));
  const int nodes = prepared.domain.num_nodes();
  const int elements = static_cast<int>(prepared.domain.elements.rows());
  int pinned = 0;
  for (const std::vector<int>& bone : prepared.bone_nodes) pinned += static_cast<int>(bone.size());
  ASSIGN_OR_RETURN(std::shared_ptr<const ElasticModel> model,
                   ElasticModel::Create(std::move(prepared.domain), std::move(prepared.bone_nodes),
                                        std::move(start_weights), progress.Sub(0.5, 1.0)));
  if (report != nullptr) {
    report->method = "elastic_model";
    report->domain = prepared.description;
    report->domain_nodes = nodes;
    report->domain_seconds = domain_seconds;
    report->solve_seconds = SecondsSince(t1);
    report->total_seconds = SecondsSince(t0);
    report->detail = absl::StrFormat("%d elements, %d pinned bone nodes", elements, pinned);
  }
  return model;
}

}  // namespace skinning
