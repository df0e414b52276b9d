// PsdModel::Build: the RBF centres, the base maps, the support joints, the regions and their
// interpolants, and the inverse-skinned example displacements.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include <Eigen/LU>
#include <Eigen/QR>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/skinning/psd.h"
#include "core/skinning/psd_model.h"
#include "core/skinning/support_joints.h"
#include "core/util/status_macros.h"
#include "core/util/timing.h"

namespace skinning {
namespace {

using namespace psd_internal;  // the model's helpers (psd_model.h)

// Restricted pose distances below this make two RBF centres coincide.
constexpr double kCoincident = 1e-9;

// |δ_ik| at or below this fraction of the bounding-box diagonal is rounding noise of the inverse
// solve and is not stored.
constexpr double kZeroDisplacement = 1e-12;

}  // namespace

absl::StatusOr<std::shared_ptr<const PsdModel>> PsdModel::Build(
    const Mesh& mesh, const Skeleton& skeleton, const SparseWeights& weights,
    const std::vector<PsdExample>& examples, const PsdOptions& options, PsdReport* report,
    const Progress& progress) {
  const auto start = std::chrono::steady_clock::now();
  // ---- validation ---------------------------------------------------------------------------
  RETURN_IF_ERROR(options.Validate());
  RETURN_IF_ERROR(ValidateSkeleton(skeleton, "skeleton"));
  const int n = static_cast<int>(mesh.V.rows());
  if (n == 0) return absl::InvalidArgumentError("mesh has no vertices");
  if (!mesh.V.allFinite()) return absl::InvalidArgumentError("mesh.vertices are not all finite");
  RETURN_IF_ERROR(ValidateWeights(weights, n, skeleton.size(), "weights"));
  if (examples.empty())
    return absl::InvalidArgumentError("examples: at least one example shape is required");
  RETURN_IF_ERROR(ValidateExamples(skeleton, n, examples, BoundingBoxDiagonal(mesh.V)));
  ASSIGN_OR_RETURN(auto order, TopologicalOrder(skeleton));

  std::shared_ptr<PsdModel> model(new PsdModel());
  PsdModelData& d = *model->d_;
  d.options = options;
  d.skeleton = skeleton;
  d.order = order;
  d.n = n;
  d.V = mesh.V;
  d.Vf.assign(mesh.V.data(), mesh.V.data() + 3 * static_cast<std::ptrdiff_t>(n));
  d.W = weights;  // as given (rows sum to 1 within kWeightSumTolerance), like plain skinning
  if (options.base == PsdBase::kDqs) d.dqs_lanes = PrepareDqsLaneOrder(d.W);
  const double diag = std::max(BoundingBoxDiagonal(mesh.V), 1e-300);
  d.inv_len2 = 1.0 / (diag * diag);
  d.num_examples = static_cast<int>(examples.size());
  const int J = skeleton.size();

  // ---- centres --------------------------------------------------------------------------------
  const std::vector<Transform> bind = BindPoseLocals(skeleton);
  bool rest_given = false;
  for (size_t k = 0; k < examples.size(); ++k) {
    d.centres.push_back(PoseLocals(skeleton, examples[k].pose));
    d.centre_example.push_back(static_cast<int>(k));
    if (SamePose(d.centres.back(), bind)) rest_given = true;
  }
  if (!rest_given) {
    d.centres.push_back(bind);
    d.centre_example.push_back(-1);
  }
  const int nc = static_cast<int>(d.centres.size());
  // Pairwise per-joint squared distances between centres.
  std::vector<Eigen::MatrixXd> pd2(J, Eigen::MatrixXd::Zero(nc, nc));
  for (int j = 0; j < J; ++j) {
    bool differs = false;
    for (int a = 0; a < nc; ++a)
      for (int b = a + 1; b < nc; ++b) {
        const double v = JointDistance2(d.centres[a][j], d.centres[b][j], d.inv_len2);
        pd2[j](a, b) = pd2[j](b, a) = v;
        if (v > kCoincident * kCoincident) differs = true;
      }
    if (differs) d.active.push_back(j);
  }

  // ---- base maps per example ------------------------------------------------------------------
  std::vector<std::vector<Eigen::Affine3d>> Tk(examples.size());
  std::vector<std::vector<Matrix34d>> Mk(examples.size());
  for (size_t k = 0; k < examples.size(); ++k) {
    ASSIGN_OR_RETURN(Tk[k], SkinningTransforms(skeleton, d.order, examples[k].pose));
    Mk[k] = d.BaseMaps(Tk[k]);
  }
  progress.Report("psd: base skinning", 0.05);
  RETURN_IF_ERROR(progress.CheckCancelled());

  // ---- support joints -------------------------------------------------------------------------
  std::vector<std::vector<double>> slides(examples.size());
  std::string detail;
  if (options.support_joints) {
    std::vector<std::vector<Transform>> example_locals(d.centres.begin(),
                                                       d.centres.begin() + examples.size());
    const std::vector<SupportJoint> found = FindSupportJoints(skeleton, example_locals);
    if (found.empty())
      return absl::FailedPreconditionError(
          "support joints: no example bends a joint that has a parent bone and a child");
    ASSIGN_OR_RETURN(SupportJointFit fit, FitSupportJoints(mesh, skeleton, examples, found, Tk,
                                                           SupportJointFitOptionsOf(options), progress, &Mk));
    d.WS = std::move(fit.weights);
    d.ws_sum = std::move(fit.weight_sums);
    d.support_vertices = std::move(fit.vertices);
    slides = std::move(fit.slides);
    const VoxelGridReport& vreport = fit.grid;
    const int S = static_cast<int>(found.size());
    for (int s = 0; s < S; ++s) {
      SupportData sd;
      sd.joint = found[s];
      // Where the bent joint is at its bind rotation (and its parent unposed) T^S does not depend
      // on x: such an example's slide is arbitrary, so it takes the mean of the others and does
      // not pull the interpolation.
      std::vector<char> bent(examples.size(), 0);
      double mean = 0;
      int count = 0;
      for (size_t k = 0; k < examples.size(); ++k) {
        const Eigen::Affine3d A0 = SupportJointTransform(found[s], Tk[k], 0.0);
        const Eigen::Affine3d A1 = SupportJointTransform(found[s], Tk[k], 1.0);
        bent[k] = !A0.matrix().isApprox(A1.matrix(), 1e-12);
        if (bent[k]) mean += slides[k][s], ++count;
      }
      sd.x_mean = count > 0 ? mean / count : 0.5;
      for (size_t k = 0; k < examples.size(); ++k)
        if (!bent[k]) slides[k][s] = sd.x_mean;
      sd.x_centre.assign(nc, sd.x_mean);
      for (int c = 0; c < nc; ++c)
        if (d.centre_example[c] >= 0) sd.x_centre[c] = slides[d.centre_example[c]][s];
      d.supports.push_back(std::move(sd));
    }
    detail += absl::StrFormat("%d support joint(s), grid %dx%dx%d (spacing %.4g), %d support vertices; ",
                              S, vreport.cells.x(), vreport.cells.y(), vreport.cells.z(),
                              vreport.spacing, static_cast<int>(d.support_vertices.size()));
  } else {
    d.WS = Eigen::MatrixXd::Zero(n, 0);
    d.ws_sum = Eigen::VectorXd::Zero(n);
  }

  // ---- regions and interpolants -----------------------------------------------------------------
  std::vector<std::vector<int>> children(J);
  for (int j = 0; j < J; ++j)
    if (skeleton.joints[j].parent >= 0) children[skeleton.joints[j].parent].push_back(j);
  std::vector<char> is_active(J, 0);
  for (int j : d.active) is_active[j] = 1;
  std::map<std::vector<int>, int> interp_of_key;
  auto get_interp = [&](std::vector<int> key) -> int {
    // Fall back to all active joints when the restriction makes two centres coincide.
    auto coincide = [&](const std::vector<int>& joints) {
      for (int a = 0; a < nc; ++a)
        for (int b = a + 1; b < nc; ++b) {
          double D2 = 0;
          for (int j : joints) D2 += pd2[j](a, b);
          if (D2 <= kCoincident * kCoincident) return true;
        }
      return false;
    };
    if (coincide(key)) key = d.active;
    auto it = interp_of_key.find(key);
    if (it != interp_of_key.end()) return it->second;
    Interpolant I;
    I.joints = key;
    Eigen::MatrixXd D2 = Eigen::MatrixXd::Zero(nc, nc);
    for (int j : key) D2 += pd2[j];
    double mean_nn = 0;
    for (int a = 0; a < nc; ++a) {
      double nn = std::numeric_limits<double>::infinity();
      for (int b = 0; b < nc; ++b)
        if (b != a) nn = std::min(nn, std::sqrt(D2(a, b)));
      mean_nn += nn;
    }
    mean_nn /= nc;
    I.sigma = (nc > 1 && std::isfinite(mean_nn) && mean_nn > 0) ? options.rbf_width * mean_nn : 1.0;
    const Eigen::MatrixXd Phi = (-D2 / (I.sigma * I.sigma)).array().exp().matrix();
    I.C = Phi.fullPivLu().solve(Eigen::MatrixXd::Identity(nc, nc));
    I.residual = (Phi * I.C - Eigen::MatrixXd::Identity(nc, nc)).cwiseAbs().maxCoeff();
    const int id = static_cast<int>(d.interps.size());
    d.interps.push_back(std::move(I));
    interp_of_key.emplace(key, id);
    return id;
  };
  d.vertex_interp.resize(n);
  for (int i = 0; i < n; ++i) {
    std::vector<char> inf(J, 0);
    for (int c = 0; c < d.W.k(); ++c) {
      if (d.W.weights(i, c) <= 0) continue;
      const int j = d.W.joints(i, c);
      inf[j] = 1;
      for (int ch : children[j]) inf[ch] = 1;
    }
    for (size_t s = 0; s < d.supports.size(); ++s)
      if (d.WS(i, s) > 0) inf[d.supports[s].joint.joint] = 1;
    std::vector<int> key;
    for (int j = 0; j < J; ++j)
      if (inf[j] && is_active[j]) key.push_back(j);
    d.vertex_interp[i] = get_interp(std::move(key));
  }
  for (SupportData& s : d.supports) {
    std::vector<int> key;
    if (is_active[s.joint.joint]) key.push_back(s.joint.joint);
    s.interp = get_interp(std::move(key));
  }

  // ---- inverse skinning ----------------------------------------------------------------------------
  d.disp.resize(nc);
  const double zero = kZeroDisplacement * diag;
  for (size_t k = 0; k < examples.size(); ++k) {
    int c = static_cast<int>(k);  // example k is centre k
    std::vector<std::vector<std::pair<int, Eigen::Vector3d>>> by_interp(d.interps.size());
    for (int i = 0; i < n; ++i) {
      const Eigen::Matrix3d A = Mk[k][i].leftCols<3>();
      const Eigen::Vector3d rhs = examples[k].V.row(i).transpose() - Mk[k][i].col(3);
      Eigen::FullPivLU<Eigen::Matrix3d> lu(A);
      Eigen::Vector3d base;
      if (lu.isInvertible())
        base = lu.solve(rhs);
      else
        base = A.completeOrthogonalDecomposition().solve(rhs);
      const Eigen::Vector3d delta = base - mesh.V.row(i).transpose();
      if (delta.norm() > zero) by_interp[d.vertex_interp[i]].emplace_back(i, delta);
    }
    ExampleDisplacements& D = d.disp[c];
    for (size_t q = 0; q < by_interp.size(); ++q) {
      if (by_interp[q].empty()) continue;
      ExampleDisplacements::Block b;
      b.interp = static_cast<int>(q);
      b.begin = static_cast<int>(D.idx.size());
      for (const auto& [i, delta] : by_interp[q]) {
        D.idx.push_back(i);
        D.d.push_back(delta);
        for (int a = 0; a < 3; ++a) D.df.push_back(static_cast<float>(delta[a]));
      }
      b.end = static_cast<int>(D.idx.size());
      D.blocks.push_back(b);
    }
  }
  progress.Report("psd: inverse skinning", 0.9);

  // Extended LBS weights for the float path with support joints.
  if (!d.supports.empty()) {
    const int k = d.W.k(), S = static_cast<int>(d.supports.size());
    d.joints_ext = RowMatrixXi::Zero(n, k + S);
    d.weights_ext = RowMatrixXf::Zero(n, k + S);
    for (int i = 0; i < n; ++i) {
      const double keep = 1.0 - d.ws_sum[i];
      for (int c = 0; c < k; ++c) {
        d.joints_ext(i, c) = d.W.joints(i, c);
        d.weights_ext(i, c) = static_cast<float>(keep * d.W.weights(i, c));
      }
      for (int s = 0; s < S; ++s) {
        d.joints_ext(i, k + s) = J + s;
        d.weights_ext(i, k + s) = static_cast<float>(d.WS(i, s));
      }
    }
  }

  // ---- report ---------------------------------------------------------------------------------
  double max_err = 0;
  for (size_t k = 0; k < examples.size(); ++k) {
    RowMatrixX3d U;
    RETURN_IF_ERROR(model->Deform(examples[k].pose, &U));
    max_err = std::max(max_err, (U - examples[k].V).rowwise().norm().maxCoeff());
  }
  size_t nnz = 0;
  double worst_residual = 0;
  for (const auto& D : d.disp) nnz += D.idx.size();
  for (const auto& I : d.interps) worst_residual = std::max(worst_residual, I.residual);
  detail += absl::StrFormat(
      "%d examples + %s, %d active joint(s), %d region interpolant(s), %d stored displacements "
      "(%.1f%% of #V x #examples), RBF residual %.2g, max reproduction error %.3g (%.2g of the "
      "diagonal)",
      d.num_examples, rest_given ? "an example at the rest pose" : "the implicit rest example",
      static_cast<int>(d.active.size()), static_cast<int>(d.interps.size()),
      static_cast<int>(nnz), 100.0 * nnz / (static_cast<double>(n) * d.num_examples),
      worst_residual, max_err, max_err / diag);
  if (report) {
    report->examples = d.num_examples;
    report->regions = static_cast<int>(d.interps.size());
    report->support_slide = options.support_joints ? slides : std::vector<std::vector<double>>{};
    report->max_reproduction_error = max_err;
    report->seconds =
        SecondsSince(start);
    report->detail = detail;
  }
  progress.Report("psd: done", 1.0);
  return std::shared_ptr<const PsdModel>(std::move(model));
}

}  // namespace skinning
