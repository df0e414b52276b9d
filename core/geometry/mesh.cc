#include "core/geometry/mesh.h"

#include <Eigen/Geometry>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"

namespace skinning {

absl::Status CheckTriangleIndices(const RowMatrixX3i& F, int64_t num_vertices, const char* field) {
  for (Eigen::Index f = 0; f < F.rows(); ++f)
    for (int c = 0; c < 3; ++c) {
      const int idx = F(f, c);
      if (idx < 0 || idx >= num_vertices)
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s.triangles[%d][%d] = %d is out of range (%d vertices)", field, f, c, idx, num_vertices));
    }
  return absl::OkStatus();
}

absl::Status ValidateMesh(const Mesh& mesh, const char* field) {
  const int nv = static_cast<int>(mesh.V.rows());
  if (nv == 0) return absl::InvalidArgumentError(absl::StrFormat("%s has no vertices", field));
  if (mesh.F.rows() == 0) return absl::InvalidArgumentError(absl::StrFormat("%s has no triangles", field));
  static const char* kAxis[3] = {"x", "y", "z"};
  for (int i = 0; i < nv; ++i)
    for (int a = 0; a < 3; ++a)
      if (!std::isfinite(mesh.V(i, a)))
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s.vertices[%d].%s is %s", field, i, kAxis[a],
            std::isnan(mesh.V(i, a)) ? "NaN" : "infinite"));
  RETURN_IF_ERROR(CheckTriangleIndices(mesh.F, nv, field));
  if (mesh.N.rows() != 0) {
    if (mesh.N.rows() != nv)
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s.normals has %d rows, expected %d (one per vertex)", field, mesh.N.rows(), nv));
    for (int i = 0; i < nv; ++i)
      if (!mesh.N.row(i).allFinite())
        return absl::InvalidArgumentError(
            absl::StrFormat("%s.normals[%d] is not finite", field, i));
  }
  return absl::OkStatus();
}

absl::Status ValidateMeshParts(const std::vector<MeshPart>& parts, const Mesh& mesh,
                               const char* field) {
  if (parts.empty()) return absl::OkStatus();
  const int nv = static_cast<int>(mesh.V.rows());
  std::vector<int> part_of(nv, -1);
  int next = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    const MeshPart& part = parts[p];
    if (part.num_vertices < 1)
      return absl::InvalidArgumentError(
          absl::StrFormat("%s.parts[%d]: %d vertices", field, p, part.num_vertices));
    if (part.first_vertex != next || next + static_cast<int64_t>(part.num_vertices) > nv)
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s.parts[%d]: vertices %d to %d do not follow the previous part (next vertex %d of %d)",
          field, p, part.first_vertex, part.first_vertex + part.num_vertices - 1, next, nv));
    for (int v = next; v < next + part.num_vertices; ++v) part_of[v] = static_cast<int>(p);
    next += part.num_vertices;
  }
  if (next != nv)
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s.parts: the parts hold %d vertices but the mesh has %d", field, next, nv));
  for (int f = 0; f < mesh.F.rows(); ++f) {
    const int a = part_of[mesh.F(f, 0)], b = part_of[mesh.F(f, 1)], c = part_of[mesh.F(f, 2)];
    if (a != b || a != c)
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s.triangles[%d] joins parts %d and %d", field, f, std::min({a, b, c}),
          std::max({a, b, c})));
  }
  return absl::OkStatus();
}

absl::Status ValidateMorphTargets(const std::vector<MorphTarget>& targets, const Mesh& mesh,
                                  const char* field) {
  const Eigen::Index nv = mesh.V.rows();
  for (size_t t = 0; t < targets.size(); ++t) {
    const MorphTarget& m = targets[t];
    if (m.dV.rows() != nv)
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s[%d].position_deltas has %d rows, expected %d", field, t, m.dV.rows(), nv));
    if (m.dN.rows() != 0 && m.dN.rows() != nv)
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s[%d].normal_deltas has %d rows, expected %d or none", field, t, m.dN.rows(), nv));
    if (!m.dV.allFinite() || !m.dN.allFinite() || !std::isfinite(m.default_weight))
      return absl::InvalidArgumentError(
          absl::StrFormat("%s[%d] has a value that is not finite", field, t));
  }
  return absl::OkStatus();
}

std::vector<std::vector<int>> TrianglesByPart(const std::vector<MeshPart>& parts,
                                              const RowMatrixX3i& F) {
  std::vector<int> part_of;
  for (size_t p = 0; p < parts.size(); ++p) {
    part_of.resize(part_of.size() + parts[p].num_vertices, static_cast<int>(p));
  }
  std::vector<std::vector<int>> rows(std::max<size_t>(parts.size(), 1));
  for (int f = 0; f < F.rows(); ++f) rows[parts.empty() ? 0 : part_of[F(f, 0)]].push_back(f);
  return rows;
}

std::vector<Mesh> SplitByParts(const Mesh& mesh, const std::vector<MeshPart>& parts) {
  if (parts.empty()) return {mesh};
  const std::vector<std::vector<int>> rows = TrianglesByPart(parts, mesh.F);
  std::vector<Mesh> out(parts.size());
  for (size_t p = 0; p < parts.size(); ++p) {
    const MeshPart& part = parts[p];
    out[p].V = mesh.V.middleRows(part.first_vertex, part.num_vertices);
    if (mesh.N.rows() == mesh.V.rows()) {
      out[p].N = mesh.N.middleRows(part.first_vertex, part.num_vertices);
    } else {
      out[p].N.resize(0, 3);
    }
    out[p].F.resize(static_cast<int>(rows[p].size()), 3);
    for (size_t i = 0; i < rows[p].size(); ++i) {
      out[p].F.row(static_cast<int>(i)) = mesh.F.row(rows[p][i]).array() - part.first_vertex;
    }
  }
  return out;
}

double BoundingBoxDiagonal(const RowMatrixX3d& V) {
  if (V.rows() == 0) return 0.0;
  return (V.colwise().maxCoeff() - V.colwise().minCoeff()).norm();
}

RowMatrixX3d PerVertexNormals(const RowMatrixX3d& V, const RowMatrixX3i& F) {
  RowMatrixX3d N = RowMatrixX3d::Zero(V.rows(), 3);
  for (int f = 0; f < F.rows(); ++f) {
    const Eigen::Vector3d a = V.row(F(f, 0)), b = V.row(F(f, 1)), c = V.row(F(f, 2));
    const Eigen::Vector3d n = (b - a).cross(c - a);  // length = 2 × area
    for (int k = 0; k < 3; ++k) N.row(F(f, k)) += n.transpose();
  }
  for (int i = 0; i < N.rows(); ++i) {
    const double len = N.row(i).norm();
    if (len > 0) N.row(i) /= len;
  }
  return N;
}

double SignedVolume(const RowMatrixX3d& V, const RowMatrixX3i& F) {
  double sum = 0.0;
  for (int f = 0; f < F.rows(); ++f) {
    const Eigen::Vector3d a = V.row(F(f, 0)), b = V.row(F(f, 1)), c = V.row(F(f, 2));
    sum += a.dot(b.cross(c));
  }
  return sum / 6.0;
}

}  // namespace skinning
