#include "core/weights/bake.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "core/geometry/weld.h"
#include "core/rig/bones.h"
#include "core/util/status_macros.h"
#include "core/util/timing.h"
#include "core/weights/bbw_coarse_start.h"
#include "core/weights/handles.h"
#include "core/weights/swing_twist_bake.h"

namespace skinning {
namespace {

bool Volumetric(const BakeOptions& o) {
  switch (o.method) {
    case BakeMethod::kBoneHeat:
      return false;
    case BakeMethod::kFastModel:
      return o.fast.energy == FastEnergy::kVolumetric;
    case BakeMethod::kEndpoint:
      return o.endpoint_method == EndpointMethod::kJointBbw;
    default:
      return true;
  }
}

// Geodesic voxel or BBW weights on the domain's nodes, mapped to the mesh vertices.
absl::StatusOr<Eigen::MatrixXd> VolumetricBoneWeights(const Mesh& mesh,
                                                      const std::vector<JointHandle>& handles,
                                                      const BakeOptions& options,
                                                      const Progress& progress,
                                                      BakeReport* report) {
  const auto t0 = std::chrono::steady_clock::now();
  DomainReport domain_report;
  ASSIGN_OR_RETURN(const VolumeDomain domain,
                   BuildDomain(mesh, options.domain, &domain_report, progress.Sub(0.0, 0.1)));
  report->domain = domain_report.BriefReport();
  report->domain_nodes = domain.num_nodes();
  ASSIGN_OR_RETURN(std::vector<std::vector<int>> pinned, RasterizeHandles(domain, handles));
  int shared = 0;
  if (options.method == BakeMethod::kBbw) {
    ASSIGN_OR_RETURN(shared, SplitSharedJoints(domain, handles, &pinned));
  }
  report->domain_seconds = SecondsSince(t0);
  const auto t1 = std::chrono::steady_clock::now();
  Eigen::MatrixXd node_weights;
  if (options.method == BakeMethod::kBbw) {
    const HandleNodesOn bone_nodes = [&handles](const VolumeDomain& d) -> absl::StatusOr<std::vector<std::vector<int>>> {
      ASSIGN_OR_RETURN(std::vector<std::vector<int>> nodes, RasterizeHandles(d, handles));
      RETURN_IF_ERROR(SplitSharedJoints(d, handles, &nodes).status());
      return nodes;
    };
    std::string coarse;
    BbwReport r;
    ASSIGN_OR_RETURN(node_weights, BbwFromCoarseStart(mesh, options.domain.voxel, domain, pinned, bone_nodes,
                                                      options.bbw, &r, progress.Sub(0.1, 1.0), &coarse));
    report->detail = absl::StrFormat("%d nodes shared at joints, %s%s", shared, coarse, r.BriefReport());
  } else {
    GeodesicWeightsReport r;
    ASSIGN_OR_RETURN(node_weights, GeodesicVoxelWeights(domain, pinned, options.geodesic, &r,
                                                        progress.Sub(0.1, 1.0)));
    report->detail = options.geodesic.dionne_falloff >= 0
                         ? absl::StrFormat("Dionne & de Lasa falloff %g, ", options.geodesic.dionne_falloff)
                         : absl::StrFormat("falloff %g, ", options.geodesic.falloff);
    if (options.geodesic.smoothing > 0) absl::StrAppendFormat(&report->detail, "%d smoothing passes, ", options.geodesic.smoothing);
    report->detail += r.BriefReport();
  }
  report->solve_seconds = SecondsSince(t1);
  // To the mesh: interpolation keeps rows summing to one and entries in [0, 1].
  Eigen::MatrixXd W = domain.to_mesh * node_weights;
  return W;
}

// Bone heat, geodesic voxel or BBW weights: #V by #J, clamped to [0, 1], rows summing to 1.
absl::Status BakeBoneWeights(const Mesh& mesh, const std::vector<JointHandle>& handles,
                             const BakeOptions& options, const Progress& progress,
                             BakeResult* result) {
  Eigen::MatrixXd W;
  if (options.method == BakeMethod::kBoneHeat) {
    result->report.domain = "surface";
    result->report.domain_nodes = static_cast<int>(mesh.V.rows());
    BoneHeatReport r;
    const auto t1 = std::chrono::steady_clock::now();
    ASSIGN_OR_RETURN(W, BoneHeatWeights(mesh, handles, options.bone_heat, &r, progress));
    result->report.solve_seconds = SecondsSince(t1);
    result->report.detail = r.BriefReport();
  } else {
    ASSIGN_OR_RETURN(W, VolumetricBoneWeights(mesh, handles, options, progress, &result->report));
  }
  RETURN_IF_ERROR(progress.CheckCancelled());
  // Exact partition of unity and bounds on the vertices (interpolation keeps them up to rounding).
  W = W.cwiseMax(0.0).cwiseMin(1.0);
  for (int i = 0; i < W.rows(); ++i) {
    const double sum = W.row(i).sum();
    if (!(sum > 0))
      return absl::InternalError(
          absl::StrFormat("vertex %d received no weight from %s", i, result->report.method));
    W.row(i) /= sum;
  }
  result->sparse = TopK(W, std::min<int>(options.influences, static_cast<int>(W.cols())));
  result->weights = std::move(W);
  return absl::OkStatus();
}

// The FAST model on the source weights' handle columns (joints with a positive weight).
absl::Status BakeFastModel(const Mesh& mesh, const BakeOptions& options, const Progress& progress,
                           BakeResult* result) {
  const Eigen::MatrixXd& W = options.source_weights;
  for (int j = 0; j < W.cols(); ++j)
    if (W.col(j).maxCoeff() > 0) result->fast_handle_joints.push_back(j);
  Eigen::MatrixXd Wh(W.rows(), result->fast_handle_joints.size());
  for (size_t h = 0; h < result->fast_handle_joints.size(); ++h)
    Wh.col(h) = W.col(result->fast_handle_joints[h]);
  FastOptions fast = options.fast;
  fast.domain = options.domain;
  FastReport r;
  ASSIGN_OR_RETURN(result->fast_model, PrecomputeFast(mesh, Wh, fast, &r, progress));
  const bool volumetric = fast.energy == FastEnergy::kVolumetric;
  result->report.domain = volumetric ? r.domain.BriefReport() : "surface (spokes and rims)";
  result->report.domain_nodes = volumetric ? r.domain.nodes : static_cast<int>(mesh.V.rows());
  result->report.domain_seconds = volumetric ? r.domain.seconds : 0.0;
  result->report.solve_seconds = r.seconds - result->report.domain_seconds;
  result->report.detail = r.BriefReport();
  result->weights = FastModelWeights(*result->fast_model);
  result->sparse = ExactSparse(result->weights);
  return absl::OkStatus();
}

}  // namespace

const char* BakeMethodName(BakeMethod method) {
  switch (method) {
    case BakeMethod::kBoneHeat:
      return "bone_heat";
    case BakeMethod::kGeodesicVoxel:
      return "geodesic_voxel";
    case BakeMethod::kBbw:
      return "bbw";
    case BakeMethod::kFastModel:
      return "fast_model";
    case BakeMethod::kSwingTwist:
      return "swing_twist";
    case BakeMethod::kEndpoint:
      return "endpoint";
    case BakeMethod::kElasticModel:
      return "elastic_model";
  }
  return "unknown";
}

absl::Status BakeOptions::Validate() const {
  if (static_cast<int>(method) < static_cast<int>(BakeMethod::kBoneHeat) ||
      static_cast<int>(method) > static_cast<int>(BakeMethod::kElasticModel))
    return absl::InvalidArgumentError(
        absl::StrFormat("options.method = %d is not a bake method", static_cast<int>(method)));
  if (method != BakeMethod::kFastModel && method != BakeMethod::kElasticModel &&
      (influences < 1 || influences > kMaxInfluences))
    return absl::InvalidArgumentError(
        absl::StrFormat("options.influences = %d must be in [1, %d]", influences, kMaxInfluences));
  if (domain.tet_mesh && !Volumetric(*this)) {
    switch (method) {
      case BakeMethod::kBoneHeat:
        return absl::InvalidArgumentError(
            "options.tet_mesh: bone heat works on the surface and takes no tet mesh");
      case BakeMethod::kFastModel:
        return absl::InvalidArgumentError(
            "options.tet_mesh: the surface FAST energy takes no tet mesh");
      default:
        return absl::InvalidArgumentError(
            "options.tet_mesh: projected endpoint weights need no volume and take no tet mesh");
    }
  }
  if (Volumetric(*this)) RETURN_IF_ERROR(domain.Validate());
  switch (method) {
    case BakeMethod::kBoneHeat:
      RETURN_IF_ERROR(bone_heat.Validate());
      break;
    case BakeMethod::kGeodesicVoxel:
      RETURN_IF_ERROR(geodesic.Validate());
      break;
    case BakeMethod::kBbw:
      RETURN_IF_ERROR(bbw.Validate());
      break;
    case BakeMethod::kSwingTwist:
      RETURN_IF_ERROR(emw.Validate());
      RETURN_IF_ERROR(bbw.Validate());
      break;
    case BakeMethod::kEndpoint:
      if (endpoint_method == EndpointMethod::kJointBbw) RETURN_IF_ERROR(bbw.Validate());
      break;
    case BakeMethod::kFastModel: {
      FastOptions f = fast;
      f.domain = domain;  // Bake runs FAST on `domain`
      RETURN_IF_ERROR(f.Validate());
      break;
    }
    case BakeMethod::kElasticModel:
      break;
  }
  if (method == BakeMethod::kFastModel || method == BakeMethod::kEndpoint) {
    if (source_weights.size() == 0)
      return absl::InvalidArgumentError(absl::StrFormat(
          "options.source_weights is empty: %s builds on bone weights", BakeMethodName(method)));
    if (!source_weights.allFinite())
      return absl::InvalidArgumentError("options.source_weights has a non-finite entry");
  }
  return absl::OkStatus();
}

// Bake() on a mesh without repeated points.
static absl::StatusOr<BakeResult> BakeWelded(const Mesh& mesh, const Skeleton& skeleton, const BakeOptions& options,
                                             const Progress& progress);

namespace {

// Whether the method's per-vertex results come from the surface or a volume around it, so that
// it can run on the welded mesh and map back (the FAST and elastic models are built on the
// mesh's own vertices and keep them).
bool WeldsTheMesh(BakeMethod method) {
  return method != BakeMethod::kFastModel && method != BakeMethod::kElasticModel;
}

// The per-vertex results of a bake on the welded mesh, back on the original vertices.
void UnweldResult(const WeldedMesh& welded, BakeResult* result) {
  for (Eigen::MatrixXd* M : {&result->weights, &result->swing, &result->twist, &result->endpoint})
    if (M->rows() == welded.mesh.V.rows() && M->size() > 0) *M = Unweld(*M, welded.of);
  SparseWeights& sw = result->sparse;
  if (sw.rows() == welded.mesh.V.rows() && sw.rows() > 0) {
    sw.joints = Unweld(sw.joints, welded.of);
    sw.weights = Unweld(sw.weights, welded.of);
  }
}

}  // namespace

absl::StatusOr<BakeResult> Bake(const Mesh& mesh, const Skeleton& given_skeleton,
                                const BakeOptions& options, const Progress& progress) {
  RETURN_IF_ERROR(ValidateMesh(mesh));
  Skeleton skeleton = given_skeleton;
  for (size_t n = 0; n < options.non_deforming_joints.size(); ++n) {
    const int j = options.non_deforming_joints[n];
    if (j < 0 || j >= skeleton.size())
      return absl::InvalidArgumentError(absl::StrFormat(
          "options.non_deforming_joints[%d] = %d is out of range (%d joints)", n, j, skeleton.size()));
    skeleton.joints[j].deforms = false;
  }
  if (WeldsTheMesh(options.method)) {
    // Copies of one point (seams, non-indexed triangles) must get one set of weights: bake the
    // welded mesh and give each copy its point's results.
    const WeldedMesh welded = Weld(mesh);
    if (welded.mesh.F.rows() == 0 && mesh.F.rows() > 0)
      return absl::InvalidArgumentError(absl::StrFormat(
          "mesh: all %d triangles are degenerate once vertices within 1e-7 of the bounding-box diagonal are "
          "merged (%d vertices, %d distinct points)",
          mesh.F.rows(), mesh.V.rows(), welded.mesh.V.rows()));
    if (welded.changed) {
      BakeOptions on_welded = options;
      if (on_welded.source_weights.rows() == mesh.V.rows()) {
        Eigen::MatrixXd first(welded.mesh.V.rows(), on_welded.source_weights.cols());
        for (int i = static_cast<int>(welded.of.size()) - 1; i >= 0; --i)
          first.row(welded.of[i]) = on_welded.source_weights.row(i);  // the first copy's row
        on_welded.source_weights = std::move(first);
      }
      ASSIGN_OR_RETURN(BakeResult result, BakeWelded(welded.mesh, skeleton, on_welded, progress));
      UnweldResult(welded, &result);
      if (options.method == BakeMethod::kEndpoint) result.weights = options.source_weights;
      result.report.detail = absl::StrFormat("welded %d vertices to %d; %s", mesh.V.rows(),
                                             welded.mesh.V.rows(), result.report.detail);
      return result;
    }
  }
  return BakeWelded(mesh, skeleton, options, progress);
}

static absl::StatusOr<BakeResult> BakeWelded(const Mesh& mesh, const Skeleton& skeleton, const BakeOptions& options,
                                             const Progress& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(options.Validate());
  RETURN_IF_ERROR(ValidateMesh(mesh));
  RETURN_IF_ERROR(ValidateSkeleton(skeleton));
  ASSIGN_OR_RETURN(const std::vector<JointHandle> handles, JointHandles(skeleton));
  const int nv = static_cast<int>(mesh.V.rows()), nj = skeleton.size();
  if ((options.method == BakeMethod::kFastModel || options.method == BakeMethod::kEndpoint) &&
      (options.source_weights.rows() != nv || options.source_weights.cols() != nj))
    return absl::InvalidArgumentError(absl::StrFormat(
        "options.source_weights is %d by %d; expected %d by %d (vertices by joints)",
        options.source_weights.rows(), options.source_weights.cols(), nv, nj));
  const int k = std::min(options.influences, nj);

  BakeResult result;
  switch (options.method) {
    case BakeMethod::kBoneHeat:
    case BakeMethod::kGeodesicVoxel:
    case BakeMethod::kBbw: {
      int deforming = 0;
      for (const JointHandle& h : handles) deforming += h.deforms;
      if (deforming == 0)
        return absl::InvalidArgumentError("skeleton has no deforming joint to bake weights for");
      // Measured: the same character scaled by 1e-6 to 1e30 bakes the same weights (within 3e-7);
      // at 1e-7 geodesic voxel's, and at 1e-9 every method's, came out different, unannounced.
      if (const double diag = BoundingBoxDiagonal(mesh.V); diag < kMinBakeDiagonal)
        return absl::InvalidArgumentError(absl::StrFormat(
            "the mesh's bounding-box diagonal is %g; %s weights need at least %g (scale the character up: the "
            "weights do not depend on its scale above that)",
            diag, BakeMethodName(options.method), kMinBakeDiagonal));
      result.report.method = BakeMethodName(options.method);
      RETURN_IF_ERROR(BakeBoneWeights(mesh, handles, options, progress, &result));
      break;
    }
    case BakeMethod::kFastModel:
      result.report.method = BakeMethodName(options.method);
      RETURN_IF_ERROR(BakeFastModel(mesh, options, progress, &result));
      break;
    case BakeMethod::kSwingTwist: {
      ASSIGN_OR_RETURN(SwingTwistBakeResult st,
                       BakeSwingTwist(mesh, skeleton, {options.domain, options.emw, options.bbw}, progress));
      result.report = std::move(st.report);
      result.weights = std::move(st.deformer);
      result.swing = std::move(st.swing);
      result.twist = std::move(st.twist);
      break;
    }
    case BakeMethod::kEndpoint: {
      ASSIGN_OR_RETURN(EndpointBakeResult e,
                       BakeEndpointWeights(mesh, skeleton, {options.endpoint_method, options.domain, options.bbw},
                                           progress));
      result.report = std::move(e.report);
      result.endpoint = std::move(e.endpoint);
      result.weights = options.source_weights;
      break;
    }
    case BakeMethod::kElasticModel:
      ASSIGN_OR_RETURN(result.elastic_model,
                       BuildElasticModel(mesh, skeleton, options.domain, &result.report, progress));
      break;
  }
  // Swing/twist keeps the deformer weights' top k, endpoint weights the source weights'.
  if (options.method == BakeMethod::kSwingTwist || options.method == BakeMethod::kEndpoint)
    result.sparse = TopK(result.weights, k);
  RETURN_IF_ERROR(progress.CheckCancelled());
  result.report.total_seconds = SecondsSince(t0);
  progress.Report("done", 1.0);
  return result;
}

}  // namespace skinning
