#include "server/convert/convert.h"

#include <openssl/sha.h>

#include <cmath>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/time_util.h"

namespace skinning {
namespace {

absl::Status CheckLength(const char* field, int got, int want_multiple_of_or_exact, bool exact) {
  if (exact ? got != want_multiple_of_or_exact : got % want_multiple_of_or_exact != 0)
    return absl::InvalidArgumentError(
        exact ? absl::StrFormat("%s has %d values, expected %d", field, got, want_multiple_of_or_exact)
              : absl::StrFormat("%s has %d values, not a multiple of %d", field, got, want_multiple_of_or_exact));
  return absl::OkStatus();
}

// Canonical float for hashing: the value as float32, with −0 folded into +0.
inline float Canon(double x) { return static_cast<float>(x) + 0.0f; }

}  // namespace

absl::Status TransformLengths(const v1::Transform& t, absl::FunctionRef<std::string()> where) {
  if (t.translation_size() != 0 && t.translation_size() != 3)
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s.translation has %d values, expected 3 (or none)", where(), t.translation_size()));
  if (t.rotation_size() != 0 && t.rotation_size() != 4)
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s.rotation has %d values, expected 4 (x, y, z, w) or none", where(), t.rotation_size()));
  if (t.scale_size() != 0 && t.scale_size() != 3)
    return absl::InvalidArgumentError(
        absl::StrFormat("%s.scale has %d values, expected 3 (or none)", where(), t.scale_size()));
  return absl::OkStatus();
}

Transform TransformFromProto(const v1::Transform& p) {
  Transform t;
  if (p.translation_size() == 3) t.translation = {p.translation(0), p.translation(1), p.translation(2)};
  if (p.rotation_size() == 4) t.rotation = Eigen::Quaterniond(p.rotation(3), p.rotation(0), p.rotation(1), p.rotation(2));
  if (p.scale_size() == 3) t.scale = {p.scale(0), p.scale(1), p.scale(2)};
  return t;
}

void TransformToProto(const Transform& t, v1::Transform* p) {
  p->clear_translation();
  p->clear_rotation();
  p->clear_scale();
  for (int a = 0; a < 3; ++a) p->add_translation(Canon(t.translation(a)));
  const Eigen::Vector4d q = t.rotation.coeffs();  // x, y, z, w
  for (int a = 0; a < 4; ++a) p->add_rotation(Canon(q(a)));
  for (int a = 0; a < 3; ++a) p->add_scale(Canon(t.scale(a)));
}

absl::StatusOr<Rig> RigFromProto(const v1::Rig& proto, const RigLimits& limits) {
  Rig rig;
  rig.name = proto.display_name();
  const v1::Mesh& m = proto.mesh();
  RETURN_IF_ERROR(CheckLength("rig.mesh.positions", m.positions_size(), 3, false));
  RETURN_IF_ERROR(CheckLength("rig.mesh.triangles", m.triangles_size(), 3, false));
  const int nv = m.positions_size() / 3;
  const int nf = m.triangles_size() / 3;
  if (nv > limits.max_vertices)
    return absl::ResourceExhaustedError(absl::StrFormat(
        "rig.mesh.positions: %d vertices exceed the server limit of %d", nv, limits.max_vertices));
  if (nf > limits.max_triangles)
    return absl::ResourceExhaustedError(absl::StrFormat(
        "rig.mesh.triangles: %d triangles exceed the server limit of %d", nf, limits.max_triangles));
  if (m.normals_size() != 0) {
    RETURN_IF_ERROR(CheckLength("rig.mesh.normals", m.normals_size(), 3 * nv, true));
  }
  rig.mesh.V.resize(nv, 3);
  for (int i = 0; i < 3 * nv; ++i) rig.mesh.V.data()[i] = m.positions(i);
  rig.mesh.F.resize(nf, 3);
  for (int i = 0; i < 3 * nf; ++i) {
    const int32_t idx = m.triangles(i);
    if (idx < 0 || idx >= nv)
      return absl::InvalidArgumentError(absl::StrFormat(
          "rig.mesh.triangles[%d][%d] = %d is out of range (%d vertices)", i / 3, i % 3, idx, nv));
    rig.mesh.F.data()[i] = idx;
  }
  if (m.normals_size() != 0) {
    rig.mesh.N.resize(nv, 3);
    for (int i = 0; i < 3 * nv; ++i) rig.mesh.N.data()[i] = m.normals(i);
  }
  if (proto.morph_targets_size() > limits.max_joints)
    return absl::ResourceExhaustedError(absl::StrFormat(
        "rig.morph_targets: %d targets exceed the server limit of %d (the joint limit)",
        proto.morph_targets_size(), limits.max_joints));
  for (int t = 0; t < proto.morph_targets_size(); ++t) {
    const v1::MorphTarget& pt = proto.morph_targets(t);
    const std::string where = absl::StrFormat("rig.morph_targets[%d]", t);
    RETURN_IF_ERROR(CheckLength((where + ".position_deltas").c_str(), pt.position_deltas_size(),
                                3 * nv, true));
    if (pt.normal_deltas_size() != 0) {
      RETURN_IF_ERROR(CheckLength((where + ".normal_deltas").c_str(), pt.normal_deltas_size(),
                                  3 * nv, true));
    }
    MorphTarget target;
    target.name = pt.name();
    target.default_weight = pt.default_weight();
    target.dV.resize(nv, 3);
    for (int i = 0; i < 3 * nv; ++i) target.dV.data()[i] = pt.position_deltas(i);
    if (pt.normal_deltas_size() != 0) {
      target.dN.resize(nv, 3);
      for (int i = 0; i < 3 * nv; ++i) target.dN.data()[i] = pt.normal_deltas(i);
    } else {
      target.dN.resize(0, 3);
    }
    rig.morph_targets.push_back(std::move(target));
  }
  if (m.parts_size() > nv)
    return absl::InvalidArgumentError(absl::StrFormat(
        "rig.mesh.parts: %d parts for %d vertices", m.parts_size(), nv));
  int first = 0;
  for (const v1::MeshPart& part : m.parts()) {
    rig.mesh_parts.push_back(MeshPart{part.name(), first, part.vertex_count()});
    if (part.vertex_count() > 0)
      first = static_cast<int>(std::min<int64_t>(int64_t{first} + part.vertex_count(), nv + 1));
  }

  const int nj = proto.skeleton().joints_size();
  if (nj > limits.max_joints)
    return absl::ResourceExhaustedError(absl::StrFormat(
        "rig.skeleton.joints: %d joints exceed the server limit of %d", nj, limits.max_joints));
  rig.skeleton.joints.resize(nj);
  for (int j = 0; j < nj; ++j) {
    const v1::Joint& pj = proto.skeleton().joints(j);
    const std::string where = absl::StrFormat("rig.skeleton.joints[%d]", j);
    RETURN_IF_ERROR(TransformLengths(pj.rest(), [&] { return where + ".rest"; }));
    Joint& joint = rig.skeleton.joints[j];
    joint.name = pj.name();
    joint.parent = pj.parent();
    joint.rest = TransformFromProto(pj.rest());
    joint.deforms = !pj.non_deforming();
    if (pj.tail_size() == 3) {
      joint.tail = Eigen::Vector3d(pj.tail(0), pj.tail(1), pj.tail(2));
    } else if (pj.tail_size() != 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s.tail has %d values, expected 3 or none", where, pj.tail_size()));
    }
    if (pj.inverse_bind_size() != 0 && pj.inverse_bind_size() != 12)
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s.inverse_bind has %d values, expected 12 (3x4 row-major) or none", where,
          pj.inverse_bind_size()));
  }
  // Inverse binds: given, or the inverse of the rest pose's world transform.
  {
    absl::StatusOr<std::vector<int>> order = TopologicalOrder(rig.skeleton);
    if (!order.ok())
      return absl::InvalidArgumentError(absl::StrFormat("rig.skeleton.%s", order.status().message()));
    std::vector<Transform> rest;
    for (const Joint& j : rig.skeleton.joints) rest.push_back(j.rest);
    const std::vector<Eigen::Affine3d> world = ForwardKinematics(rig.skeleton, *order, rest);
    for (int j = 0; j < nj; ++j) {
      const v1::Joint& pj = proto.skeleton().joints(j);
      Eigen::Affine3d& ib = rig.skeleton.joints[j].inverse_bind;
      if (pj.inverse_bind_size() == 12) {
        ib.matrix().setIdentity();
        for (int r = 0; r < 3; ++r)
          for (int c = 0; c < 4; ++c) ib.matrix()(r, c) = pj.inverse_bind(4 * r + c);
      } else {
        ib = world[j].inverse(Eigen::Affine);
      }
    }
  }

  if (proto.has_weights()) {
    const v1::Weights& w = proto.weights();
    if (w.has_sparse()) {
      const v1::SparseWeights& s = w.sparse();
      const int k = s.influence_count();
      if (k <= 0 || k > limits.max_influences)
        return absl::InvalidArgumentError(absl::StrFormat(
            "rig.weights.sparse.influence_count = %d must be in [1, %d]", k,
            limits.max_influences));
      if (auto st = CheckLength("rig.weights.sparse.joints", s.joints_size(), nv * k, true); !st.ok())
        return st;
      if (auto st = CheckLength("rig.weights.sparse.weights", s.weights_size(), nv * k, true); !st.ok())
        return st;
      SparseWeights W;
      W.joints.resize(nv, k);
      W.weights.resize(nv, k);
      for (int i = 0; i < nv * k; ++i) {
        const int32_t jj = s.joints(i);
        if (jj < 0 || jj >= nj)
          return absl::InvalidArgumentError(absl::StrFormat(
              "rig.weights.sparse.joints[%d] (vertex %d) = %d is out of range (%d joints)", i,
              i / k, jj, nj));
        W.joints.data()[i] = jj;
        W.weights.data()[i] = s.weights(i);
      }
      rig.sparse_weights = std::move(W);
    } else if (w.has_dense()) {
      const v1::DenseWeights& d = w.dense();
      if (d.joint_count() != nj)
        return absl::InvalidArgumentError(absl::StrFormat(
            "rig.weights.dense.joint_count = %d, the skeleton has %d joints", d.joint_count(), nj));
      if (auto st = CheckLength("rig.weights.dense.values", d.values_size(), nv * nj, true); !st.ok())
        return st;
      Eigen::MatrixXd D(nv, nj);
      for (int i = 0; i < nv; ++i)
        for (int j = 0; j < nj; ++j) D(i, j) = d.values(i * nj + j);
      rig.dense_weights = std::move(D);
    }
  }
  RETURN_IF_ERROR(ValidateRig(rig));
  return rig;
}

v1::Rig RigToProto(const Rig& rig) {
  v1::Rig p;
  p.set_display_name(rig.name);
  v1::Mesh* m = p.mutable_mesh();
  const int nv = static_cast<int>(rig.mesh.V.rows());
  m->mutable_positions()->Reserve(3 * nv);
  for (int i = 0; i < 3 * nv; ++i) m->add_positions(Canon(rig.mesh.V.data()[i]));
  for (int i = 0; i < rig.mesh.F.size(); ++i) m->add_triangles(rig.mesh.F.data()[i]);
  for (int i = 0; i < rig.mesh.N.size(); ++i) m->add_normals(Canon(rig.mesh.N.data()[i]));
  for (const MorphTarget& target : rig.morph_targets) {
    v1::MorphTarget* pt = p.add_morph_targets();
    pt->set_name(target.name);
    pt->set_default_weight(static_cast<float>(target.default_weight));
    for (int i = 0; i < target.dV.size(); ++i) pt->add_position_deltas(Canon(target.dV.data()[i]));
    for (int i = 0; i < target.dN.size(); ++i) pt->add_normal_deltas(Canon(target.dN.data()[i]));
  }
  for (const MeshPart& part : rig.mesh_parts) {
    v1::MeshPart* pp = m->add_parts();
    pp->set_name(part.name);
    pp->set_vertex_count(part.num_vertices);
  }
  for (const Joint& j : rig.skeleton.joints) {
    v1::Joint* pj = p.mutable_skeleton()->add_joints();
    pj->set_name(j.name);
    pj->set_parent(j.parent);
    TransformToProto(j.rest, pj->mutable_rest());
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 4; ++c) pj->add_inverse_bind(Canon(j.inverse_bind.matrix()(r, c)));
    pj->set_non_deforming(!j.deforms);
    if (j.tail)
      for (int a = 0; a < 3; ++a) pj->add_tail(Canon((*j.tail)(a)));
  }
  if (rig.sparse_weights) {
    const SparseWeights& W = *rig.sparse_weights;
    v1::SparseWeights* s = p.mutable_weights()->mutable_sparse();
    s->set_influence_count(W.k());
    for (int i = 0; i < W.joints.size(); ++i) s->add_joints(W.joints.data()[i]);
    for (int i = 0; i < W.weights.size(); ++i) s->add_weights(Canon(W.weights.data()[i]));
  } else if (rig.dense_weights) {
    const Eigen::MatrixXd& D = *rig.dense_weights;
    v1::DenseWeights* d = p.mutable_weights()->mutable_dense();
    d->set_joint_count(static_cast<int>(D.cols()));
    for (int i = 0; i < D.rows(); ++i)
      for (int j = 0; j < D.cols(); ++j) d->add_values(D(i, j) + 0.0);  // −0 → +0
  }
  return p;
}

absl::StatusOr<Pose> PoseFromProto(const v1::Pose& proto, const Skeleton& skeleton,
                                   const char* field) {
  Pose pose;
  if (proto.joints_size() == 0) return pose;
  if (proto.joints_size() != skeleton.size())
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s.joints has %d entries, the rig's skeleton has %d joints", field, proto.joints_size(),
        skeleton.size()));
  pose.local.resize(proto.joints_size());
  for (int j = 0; j < proto.joints_size(); ++j) {
    RETURN_IF_ERROR(TransformLengths(proto.joints(j), [&] { return absl::StrFormat("%s.joints[%d]", field, j); }));
    pose.local[j] = TransformFromProto(proto.joints(j));
  }
  RETURN_IF_ERROR(ValidatePose(skeleton, pose, field));
  return pose;
}

v1::Pose PoseToProto(const Pose& pose) {
  v1::Pose p;
  for (const Transform& t : pose.local) TransformToProto(t, p.add_joints());
  return p;
}

std::string ContentAddress(absl::string_view prefix, absl::string_view leading, const google::protobuf::Message& m) {
  std::string bytes(leading);
  {
    google::protobuf::io::StringOutputStream sos(&bytes);
    google::protobuf::io::CodedOutputStream cos(&sos);
    cos.SetSerializationDeterministic(true);
    m.SerializeToCodedStream(&cos);
  }
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest);
  return absl::StrCat(prefix, absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), 16)));
}

std::string RigId(const v1::Rig& canonical) {
  // Only mesh, skeleton and weights count: not the display name, not the output-only fields.
  v1::Rig copy;
  *copy.mutable_mesh() = canonical.mesh();
  *copy.mutable_skeleton() = canonical.skeleton();
  if (canonical.has_weights()) *copy.mutable_weights() = canonical.weights();
  *copy.mutable_morph_targets() = canonical.morph_targets();
  return ContentAddress("rig-", "", copy);
}

void DenseToProto(const Eigen::MatrixXd& D, v1::DenseWeights* out) {
  out->set_joint_count(static_cast<int>(D.cols()));
  out->mutable_values()->Reserve(static_cast<int>(D.size()));
  for (int i = 0; i < D.rows(); ++i)
    for (int j = 0; j < D.cols(); ++j) out->add_values(D(i, j));
}

void SparseToProto(const SparseWeights& W, v1::SparseWeights* out) {
  out->set_influence_count(W.k());
  out->mutable_joints()->Add(W.joints.data(), W.joints.data() + W.joints.size());
  out->mutable_weights()->Add(W.weights.data(), W.weights.data() + W.weights.size());
}

v1::BakeReport BakeReportToProto(const BakeReport& r) {
  using google::protobuf::util::TimeUtil;
  auto duration = [](double seconds) { return TimeUtil::NanosecondsToDuration(static_cast<int64_t>(seconds * 1e9)); };
  v1::BakeReport report;
  report.set_method(r.method);
  report.set_domain(r.domain);
  report.set_domain_node_count(r.domain_nodes);
  *report.mutable_domain_duration() = duration(r.domain_seconds);
  *report.mutable_solve_duration() = duration(r.solve_seconds);
  *report.mutable_total_duration() = duration(r.total_seconds);
  report.set_detail(r.detail);
  return report;
}

}  // namespace skinning
