#include "core/skinning/psd.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>

#include <Eigen/LU>
#include <Eigen/QR>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/skinning/dqs.h"
#include "core/skinning/lbs.h"
#include "core/skinning/support_joints.h"
#include "core/util/option_checks.h"
#include "core/util/status_macros.h"

namespace skinning {

namespace {

using Matrix34d = Eigen::Matrix<double, 3, 4>;

// Two poses are the same when every joint's rotation differs by less than this (radians) and
// translations and scales agree within kSameValue (relative to 1 + magnitude).
constexpr double kSameAngle = 1e-6;
constexpr double kSameValue = 1e-9;
// Restricted pose distances below this make two RBF centres coincide.
constexpr double kCoincident = 1e-9;
// |δ_ik| at or below this fraction of the bounding-box diagonal is rounding noise of the inverse
// solve and is not stored.
constexpr double kZeroDisplacement = 1e-12;

double AngleBetween(const Eigen::Quaterniond& a, const Eigen::Quaterniond& b) {
  const Eigen::Quaterniond q = a.normalized().conjugate() * b.normalized();
  return 2.0 * std::atan2(q.vec().norm(), std::abs(q.w()));
}

bool SamePose(const std::vector<Transform>& a, const std::vector<Transform>& b) {
  for (size_t j = 0; j < a.size(); ++j) {
    if (AngleBetween(a[j].rotation, b[j].rotation) >= kSameAngle) return false;
    const double st = 1.0 + std::max(a[j].translation.cwiseAbs().maxCoeff(),
                                     b[j].translation.cwiseAbs().maxCoeff());
    if ((a[j].translation - b[j].translation).cwiseAbs().maxCoeff() > kSameValue * st)
      return false;
    const double ss =
        1.0 + std::max(a[j].scale.cwiseAbs().maxCoeff(), b[j].scale.cwiseAbs().maxCoeff());
    if ((a[j].scale - b[j].scale).cwiseAbs().maxCoeff() > kSameValue * ss) return false;
  }
  return true;
}

// d_j(a, b)² (see psd.h).
double JointDistance2(const Transform& a, const Transform& b, double inv_len2) {
  const double th = AngleBetween(a.rotation, b.rotation);
  const double dt = (a.translation - b.translation).squaredNorm() * inv_len2;
  const Eigen::Array3d la = a.scale.cwiseAbs().array().log();
  const Eigen::Array3d lb = b.scale.cwiseAbs().array().log();
  return th * th + dt + (la - lb).matrix().squaredNorm();
}

struct Interpolant {
  std::vector<int> joints;  // skeleton joint indices (a subset of the active joints)
  double sigma = 1.0;       // Gaussian width
  Eigen::MatrixXd C;        // #centres × #centres: r = C φ(P)
  double residual = 0.0;    // ‖Φ C − I‖_max
};

// Displacements of one example, grouped by interpolant.
struct ExampleDisplacements {
  struct Block {
    int interp = 0;
    int begin = 0, end = 0;  // range in idx / d / df
  };
  std::vector<int32_t> idx;
  std::vector<Eigen::Vector3d> d;
  std::vector<float> df;  // 3 per entry
  std::vector<Block> blocks;
};

struct SupportData {
  SupportJoint joint;
  int interp = 0;
  std::vector<double> x_centre;  // per centre (the rest centre holds the mean)
  double x_mean = 0.5;
};

}  // namespace

struct PsdModelData {
  PsdOptions options;
  Skeleton skeleton;
  std::vector<int> order;
  int n = 0;
  RowMatrixX3d V;
  std::vector<float> Vf;
  SparseWeights W;
  double inv_len2 = 1.0;
  std::vector<int> active;                      // active joints
  std::vector<std::vector<Transform>> centres;  // full local poses of the RBF centres
  std::vector<int> centre_example;              // example index, or -1 for the implicit rest
  int num_examples = 0;
  std::vector<Interpolant> interps;
  std::vector<int> vertex_interp;            // #V
  std::vector<ExampleDisplacements> disp;    // per centre
  std::vector<SupportData> supports;
  Eigen::MatrixXd WS;                        // #V × #support
  Eigen::VectorXd ws_sum;                    // #V
  std::vector<int> support_vertices;         // vertices with ws_sum > 0
  RowMatrixXi joints_ext;                    // LBS + support: #V × (k + #support)
  RowMatrixXf weights_ext;

  // Per-frame data.
  struct Frame {
    std::vector<Eigen::Affine3d> T;   // #joints skinning transforms
    std::vector<Eigen::Affine3d> TS;  // #support transforms
    Eigen::MatrixXd r;                // #interps × #centres RBF weights
  };
  absl::StatusOr<Frame> Prepare(const Pose& pose) const;
  // Per-vertex affine maps A_i (base blend, then the support blend).
  std::vector<Matrix34d> BaseMaps(const std::vector<Eigen::Affine3d>& T) const;
  void AddSupport(const std::vector<Eigen::Affine3d>& TS, std::vector<Matrix34d>* M) const;
  // X = V + Σ_k r δ_k (double).
  void Displaced(const Eigen::MatrixXd& r, RowMatrixX3d* X) const;
  // RBF weights of all interpolants at a full local pose.
  Eigen::MatrixXd RbfWeights(const std::vector<Transform>& locals) const;
};

namespace {

void ApplyMaps(const std::vector<Matrix34d>& M, const RowMatrixX3d& X, RowMatrixX3d* U) {
  U->resize(X.rows(), 3);
  for (Eigen::Index i = 0; i < X.rows(); ++i)
    U->row(i) = (M[i].leftCols<3>() * X.row(i).transpose() + M[i].col(3)).transpose();
}

}  // namespace

std::vector<Matrix34d> PsdModelData::BaseMaps(const std::vector<Eigen::Affine3d>& T) const {
  std::vector<Matrix34d> M(n);
  if (options.base == PsdBase::kLbs) {
    for (int i = 0; i < n; ++i) {
      Matrix34d m = Matrix34d::Zero();
      for (int c = 0; c < W.k(); ++c) {
        const double w = W.weights(i, c);
        if (w == 0) continue;
        m.noalias() += w * T[W.joints(i, c)].matrix().topRows<3>();
      }
      M[i] = m;
    }
  } else {
    // DQS is affine in the position for fixed weights: read the map off the images of 0 and
    // the unit vectors, computed by the library's own Dqs.
    RowMatrixX3d P = RowMatrixX3d::Zero(n, 3), U0, U;
    Dqs(P, W, T, &U0);
    for (int i = 0; i < n; ++i) M[i].col(3) = U0.row(i).transpose();
    for (int a = 0; a < 3; ++a) {
      P.setZero();
      P.col(a).setOnes();
      Dqs(P, W, T, &U);
      for (int i = 0; i < n; ++i) M[i].col(a) = (U.row(i) - U0.row(i)).transpose();
    }
  }
  return M;
}

void PsdModelData::AddSupport(const std::vector<Eigen::Affine3d>& TS,
                              std::vector<Matrix34d>* M) const {
  AddSupportMaps(WS, ws_sum, support_vertices, TS, M);
}

Eigen::MatrixXd PsdModelData::RbfWeights(const std::vector<Transform>& locals) const {
  const int nc = static_cast<int>(centres.size());
  // Per joint squared distances to the centres.
  std::vector<Eigen::VectorXd> dj2(skeleton.size());
  for (int j : active) {
    dj2[j].resize(nc);
    for (int c = 0; c < nc; ++c) dj2[j][c] = JointDistance2(locals[j], centres[c][j], inv_len2);
  }
  Eigen::MatrixXd r(interps.size(), nc);
  for (size_t q = 0; q < interps.size(); ++q) {
    const Interpolant& I = interps[q];
    Eigen::VectorXd D2 = Eigen::VectorXd::Zero(nc);
    for (int j : I.joints) D2 += dj2[j];
    const Eigen::VectorXd phi = (-D2 / (I.sigma * I.sigma)).array().exp().matrix();
    r.row(q) = (I.C * phi).transpose();
  }
  return r;
}

absl::StatusOr<PsdModelData::Frame> PsdModelData::Prepare(const Pose& pose) const {
  RETURN_IF_ERROR(ValidatePose(skeleton, pose));
  Frame f;
  ASSIGN_OR_RETURN(f.T, SkinningTransforms(skeleton, order, pose));
  f.r = RbfWeights(PoseLocals(skeleton, pose));
  for (const SupportData& s : supports) {
    double x = s.x_mean;
    for (size_t c = 0; c < centres.size(); ++c) x += f.r(s.interp, c) * (s.x_centre[c] - s.x_mean);
    x = std::clamp(x, 0.0, 1.0);
    f.TS.push_back(SupportJointTransform(s.joint, f.T, x));
  }
  return f;
}

void PsdModelData::Displaced(const Eigen::MatrixXd& r, RowMatrixX3d* X) const {
  *X = V;
  for (size_t c = 0; c < disp.size(); ++c) {
    const ExampleDisplacements& D = disp[c];
    for (const auto& b : D.blocks) {
      const double coef = r(b.interp, c);
      if (coef == 0) continue;
      for (int e = b.begin; e < b.end; ++e) X->row(D.idx[e]) += coef * D.d[e].transpose();
    }
  }
}

absl::Status PsdOptions::Validate() const {
  if (base != PsdBase::kLbs && base != PsdBase::kDqs)
    return absl::InvalidArgumentError(absl::StrFormat("options.base = %d is not a PSD base", static_cast<int>(base)));
  RETURN_IF_ERROR(CheckPositive("options.rbf_width", rbf_width));
  if (support_joints) return SupportJointFitOptionsOf(*this).Validate();
  return absl::OkStatus();
}

std::string PsdReport::BriefReport() const {
  std::string out = absl::StrFormat("%d examples, %d regions, max reproduction error %.3g, %.3g s", examples, regions,
                                    max_reproduction_error, seconds);
  if (!detail.empty()) absl::StrAppend(&out, "; ", detail);
  return out;
}

absl::Status ValidateExamples(const Skeleton& skeleton, int num_vertices,
                              const std::vector<PsdExample>& examples, const char* field) {
  std::vector<std::vector<Transform>> locals;
  for (size_t k = 0; k < examples.size(); ++k) {
    const PsdExample& ex = examples[k];
    if (ex.V.rows() != num_vertices)
      return absl::InvalidArgumentError(absl::StrFormat("%s[%d].positions: %d vertices, the rig has %d",
                                                        field, k, ex.V.rows(), num_vertices));
    for (Eigen::Index i = 0; i < ex.V.rows(); ++i)
      for (int a = 0; a < 3; ++a)
        if (!std::isfinite(ex.V(i, a)))
          return absl::InvalidArgumentError(absl::StrFormat(
              "%s[%d].positions[%d].%c is not finite", field, k, i, "xyz"[a]));
    const std::string pose_field = absl::StrFormat("%s[%d].pose", field, k);
    RETURN_IF_ERROR(ValidatePose(skeleton, ex.pose, pose_field.c_str()));
    locals.push_back(PoseLocals(skeleton, ex.pose));
    for (size_t l = 0; l < k; ++l)
      if (SamePose(locals[l], locals[k]))
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s[%d] has the same pose as %s[%d] ('%s')", field, k, field, l, examples[l].name));
  }
  return absl::OkStatus();
}

PsdModel::PsdModel() : d_(std::make_unique<PsdModelData>()) {}
PsdModel::~PsdModel() = default;

int PsdModel::num_examples() const { return d_->num_examples; }
int PsdModel::num_vertices() const { return d_->n; }
int PsdModel::num_support_joints() const { return static_cast<int>(d_->supports.size()); }
const PsdOptions& PsdModel::options() const { return d_->options; }
const Eigen::MatrixXd& PsdModel::support_weights() const { return d_->WS; }

std::vector<int> PsdModel::support_joint_bent_joints() const {
  std::vector<int> out;
  for (const auto& s : d_->supports) out.push_back(s.joint.joint);
  return out;
}

absl::StatusOr<std::vector<double>> PsdModel::SupportSlides(const Pose& pose) const {
  ASSIGN_OR_RETURN(auto f, d_->Prepare(pose));
  std::vector<double> out;
  for (const auto& s : d_->supports) {
    double x = s.x_mean;
    for (size_t c = 0; c < d_->centres.size(); ++c)
      x += f.r(s.interp, c) * (s.x_centre[c] - s.x_mean);
    out.push_back(std::clamp(x, 0.0, 1.0));
  }
  return out;
}

absl::Status PsdModel::Deform(const Pose& pose, RowMatrixX3d* U) const {
  ASSIGN_OR_RETURN(auto f, d_->Prepare(pose));
  RowMatrixX3d X;
  d_->Displaced(f.r, &X);
  std::vector<Matrix34d> M = d_->BaseMaps(f.T);
  d_->AddSupport(f.TS, &M);
  ApplyMaps(M, X, U);
  return absl::OkStatus();
}

absl::Status PsdModel::DeformFloat(const Pose& pose, float* U) const {
  ASSIGN_OR_RETURN(auto f, d_->Prepare(pose));
  const PsdModelData& d = *d_;
  thread_local std::vector<float> X;
  X.assign(d.Vf.begin(), d.Vf.end());
  for (size_t c = 0; c < d.disp.size(); ++c) {
    const ExampleDisplacements& D = d.disp[c];
    for (const auto& b : D.blocks) {
      const float coef = static_cast<float>(f.r(b.interp, c));
      if (coef == 0.f) continue;
      const int32_t* __restrict idx = D.idx.data();
      const float* __restrict df = D.df.data();
      float* __restrict x = X.data();
      for (int e = b.begin; e < b.end; ++e) {
        float* xi = x + 3 * static_cast<std::ptrdiff_t>(idx[e]);
        xi[0] += coef * df[3 * e];
        xi[1] += coef * df[3 * e + 1];
        xi[2] += coef * df[3 * e + 2];
      }
    }
  }
  if (d.options.base == PsdBase::kLbs) {
    if (d.supports.empty()) {
      const std::vector<float> T34 = ToRowMajor34(f.T);
      LbsFloat(X.data(), d.n, d.W.joints.data(), d.W.weights.data(), d.W.k(), T34.data(), U);
    } else {
      std::vector<Eigen::Affine3d> all = f.T;
      all.insert(all.end(), f.TS.begin(), f.TS.end());
      const std::vector<float> T34 = ToRowMajor34(all);
      LbsFloat(X.data(), d.n, d.joints_ext.data(), d.weights_ext.data(),
               static_cast<int>(d.joints_ext.cols()), T34.data(), U);
    }
  } else {
    const DqsTransformsFloat prepared = PrepareDqsFloat(f.T);
    DqsFloat(X.data(), d.n, d.W.joints.data(), d.W.weights.data(), d.W.k(), prepared, U);
    if (!d.supports.empty()) {
      const std::vector<float> TS34 = ToRowMajor34(f.TS);
      for (int i : d.support_vertices) {
        const float* x = X.data() + 3 * static_cast<std::ptrdiff_t>(i);
        float* u = U + 3 * static_cast<std::ptrdiff_t>(i);
        const float keep = static_cast<float>(1.0 - d.ws_sum[i]);
        float acc[3] = {keep * u[0], keep * u[1], keep * u[2]};
        for (size_t s = 0; s < d.supports.size(); ++s) {
          const float w = static_cast<float>(d.WS(i, s));
          if (w == 0.f) continue;
          const float* m = TS34.data() + 12 * s;
          for (int r = 0; r < 3; ++r)
            acc[r] += w * (m[4 * r] * x[0] + m[4 * r + 1] * x[1] + m[4 * r + 2] * x[2] + m[4 * r + 3]);
        }
        u[0] = acc[0];
        u[1] = acc[1];
        u[2] = acc[2];
      }
    }
  }
  return absl::OkStatus();
}

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
  RETURN_IF_ERROR(ValidateExamples(skeleton, n, examples));
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
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    report->detail = detail;
  }
  progress.Report("psd: done", 1.0);
  return std::shared_ptr<const PsdModel>(std::move(model));
}

}  // namespace skinning
