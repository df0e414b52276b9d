#include "core/skinning/psd.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/skinning/dqs.h"
#include "core/skinning/lbs.h"
#include "core/skinning/psd_model.h"
#include "core/skinning/support_joints.h"
#include "core/util/option_checks.h"
#include "core/util/status_macros.h"

namespace skinning {
namespace {

// Two poses are the same when every joint's rotation differs by less than this (radians) and
// translations and scales agree within kSameValue (relative to 1 + magnitude).
constexpr double kSameAngle = 1e-6;
constexpr double kSameValue = 1e-9;

double AngleBetween(const Eigen::Quaterniond& a, const Eigen::Quaterniond& b) {
  const Eigen::Quaterniond q = a.normalized().conjugate() * b.normalized();
  return 2.0 * std::atan2(q.vec().norm(), std::abs(q.w()));
}

}  // namespace

namespace psd_internal {

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

double JointDistance2(const Transform& a, const Transform& b, double inv_len2) {
  const double th = AngleBetween(a.rotation, b.rotation);
  const double dt = (a.translation - b.translation).squaredNorm() * inv_len2;
  const Eigen::Array3d la = a.scale.cwiseAbs().array().log();
  const Eigen::Array3d lb = b.scale.cwiseAbs().array().log();
  return th * th + dt + (la - lb).matrix().squaredNorm();
}

void ApplyMaps(const std::vector<Matrix34d>& M, const RowMatrixX3d& X, RowMatrixX3d* U) {
  U->resize(X.rows(), 3);
  for (Eigen::Index i = 0; i < X.rows(); ++i)
    U->row(i) = (M[i].leftCols<3>() * X.row(i).transpose() + M[i].col(3)).transpose();
}

}  // namespace psd_internal

using namespace psd_internal;  // the model's helpers (psd_model.h)

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
                              const std::vector<PsdExample>& examples, double diagonal, const char* field) {
  std::vector<std::vector<Transform>> locals;
  const std::vector<Transform> bind = BindPoseLocals(skeleton);
  const double inv_len2 = 1.0 / std::max(diagonal * diagonal, 1e-300);
  // Pose-space distance of two full poses (psd.h: every joint counts).
  auto distance = [&](const std::vector<Transform>& a, const std::vector<Transform>& b) {
    double d2 = 0;
    for (size_t j = 0; j < a.size(); ++j) d2 += JointDistance2(a[j], b[j], inv_len2);
    return std::sqrt(d2);
  };
  auto too_near = [&](size_t k, double d, const std::string& other) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s[%d] ('%s') is %.3g from %s in pose space, under %g: between two shapes this near the interpolation "
        "has the slope of their difference over that distance, and amplifies it at every other pose; pose "
        "them further apart or delete one",
        field, k, examples[k].name, d, other, kMinExampleDistance));
  };
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
    for (size_t l = 0; l < k; ++l) {
      if (SamePose(locals[l], locals[k]))
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s[%d] has the same pose as %s[%d] ('%s')", field, k, field, l, examples[l].name));
      if (const double d = distance(locals[l], locals[k]); d < kMinExampleDistance)
        return too_near(k, d, absl::StrFormat("%s[%d] ('%s')", field, l, examples[l].name));
    }
    if (!SamePose(locals[k], bind))
      if (const double d = distance(locals[k], bind); d < kMinExampleDistance)
        return too_near(k, d, "the rest pose");
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

absl::Status PsdModel::DeformFloat(const Pose& pose, float* U, const float* rest) const {
  ASSIGN_OR_RETURN(auto f, d_->Prepare(pose));
  const PsdModelData& d = *d_;
  thread_local std::vector<float> X;
  if (rest != nullptr) {
    X.assign(rest, rest + d.Vf.size());
  } else {
    X.assign(d.Vf.begin(), d.Vf.end());
  }
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
    if (!d.dqs_lanes.empty()) {
      DqsFloat(X.data(), d.dqs_lanes, prepared, U);
    } else {
      DqsFloat(X.data(), d.n, d.W.joints.data(), d.W.weights.data(), d.W.k(), prepared, U);
    }
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

}  // namespace skinning
