#include "core/io/tgf.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "core/io/text_io.h"
#include "core/util/status_macros.h"

namespace skinning {

using io_internal::LineError;
using io_internal::PopToken;

absl::StatusOr<TgfGraph> ParseTgf(const std::string& text, const std::string& name) {
  std::vector<double> points;  // xyz per joint line
  std::vector<int32_t> edges;  // (source, dest) 0-based per edge line
  int section = 0;             // 0: joints, 1: edges; later sections are ignored
  io_internal::LineCursor lines(text);
  absl::string_view line;
  while (section < 2 && lines.Next(&line)) {
    const int number = lines.number();
    absl::string_view rest = line;
    const absl::string_view first = PopToken(&rest);
    if (first.empty()) continue;
    if (first[0] == '#') {
      ++section;
      continue;
    }
    if (section == 0) {
      // `index x y z [extra columns]`: libigl ignores the index and everything after z.
      double index;
      if (!io_internal::ParseDouble(first, &index))
        return LineError(name, number, absl::StrCat("joint index '", first, "' is not a number"));
      for (int a = 0; a < 3; ++a) {
        const absl::string_view token = PopToken(&rest);
        double value;
        if (token.empty()) return LineError(name, number, "a joint line needs 'index x y z'");
        if (!io_internal::ParseDouble(token, &value))
          return LineError(name, number, absl::StrCat("'", token, "' is not a number"));
        if (!std::isfinite(value))
          return LineError(name, number,
                           absl::StrCat("joint coordinate '", token, "' is not finite"));
        points.push_back(value);
      }
    } else {
      // `source dest [is_bone is_pseudo_edge is_cage_edge ...]`, 1-based; flags are ignored.
      const int64_t np = static_cast<int64_t>(points.size() / 3);
      absl::string_view tokens[2] = {first, PopToken(&rest)};
      for (const absl::string_view token : tokens) {
        int32_t index;
        if (token.empty()) return LineError(name, number, "an edge line needs 'source dest'");
        if (!io_internal::ParseInt(token, &index))
          return LineError(name, number, absl::StrCat("'", token, "' is not a point index"));
        if (index < 1 || index > np)
          return LineError(
              name, number,
              absl::StrFormat("point index %d is out of range (%d points, 1-based)", index, np));
        edges.push_back(index - 1);
      }
    }
  }
  TgfGraph graph;
  graph.C = Eigen::Map<const RowMatrixX3d>(points.data(),
                                           static_cast<Eigen::Index>(points.size() / 3), 3);
  graph.E = Eigen::Map<const Eigen::Matrix<int32_t, Eigen::Dynamic, 2, Eigen::RowMajor>>(
      edges.data(), static_cast<Eigen::Index>(edges.size() / 2), 2);
  return graph;
}

absl::StatusOr<TgfGraph> ReadTgf(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, io_internal::ReadFileToString(path));
  return ParseTgf(text, path);
}

absl::Status WriteTgf(const std::string& path, const TgfGraph& graph) {
  const Eigen::Index np = graph.C.rows();
  for (Eigen::Index e = 0; e < graph.E.rows(); ++e)
    for (int k = 0; k < 2; ++k)
      if (graph.E(e, k) < 0 || graph.E(e, k) >= np)
        return absl::InvalidArgumentError(absl::StrFormat(
            "tgf.E(%d, %d) = %d is out of range (%d points)", e, k, graph.E(e, k), np));
  std::string out;
  for (Eigen::Index i = 0; i < np; ++i) {
    absl::StrAppend(&out, i + 1);
    for (int a = 0; a < 3; ++a) {
      out += ' ';
      io_internal::AppendDouble(graph.C(i, a), &out);
    }
    out += '\n';
  }
  out += "#\n";
  for (Eigen::Index e = 0; e < graph.E.rows(); ++e)
    absl::StrAppend(&out, graph.E(e, 0) + 1, " ", graph.E(e, 1) + 1, "\n");
  out += "#\n";
  return io_internal::WriteStringToFile(path, out);
}

absl::StatusOr<Skeleton> SkeletonFromBones(const TgfGraph& graph) {
  const int np = static_cast<int>(graph.C.rows());
  const int nb = static_cast<int>(graph.E.rows());
  if (nb == 0) return absl::InvalidArgumentError("tgf graph has no bones");
  if (!graph.C.allFinite())
    return absl::InvalidArgumentError("tgf graph has a non-finite point coordinate");
  std::vector<int> bone_ending_at(np, -1);  // the bone whose child point is i, or -1
  for (int j = 0; j < nb; ++j) {
    for (int k = 0; k < 2; ++k) {
      const int p = graph.E(j, k);
      if (p < 0 || p >= np)
        return absl::InvalidArgumentError(
            absl::StrFormat("bones[%d]: %s point %d is out of range (%d points)", j,
                            k == 0 ? "parent" : "child", p, np));
    }
    if ((graph.C.row(graph.E(j, 1)) - graph.C.row(graph.E(j, 0))).norm() == 0.0)
      return absl::InvalidArgumentError(absl::StrFormat(
          "bones[%d]: zero length (points %d and %d coincide)", j, graph.E(j, 0), graph.E(j, 1)));
    int& owner = bone_ending_at[graph.E(j, 1)];
    if (owner >= 0)
      return absl::InvalidArgumentError(absl::StrFormat(
          "bones[%d]: point %d is already the child of bones[%d]", j, graph.E(j, 1), owner));
    owner = j;
  }

  Skeleton skeleton;
  skeleton.joints.resize(nb);
  for (int j = 0; j < nb; ++j) {
    Joint& joint = skeleton.joints[j];
    const Eigen::Vector3d head = graph.C.row(graph.E(j, 0)).transpose();
    joint.name = absl::StrCat("bone", j);
    joint.parent = bone_ending_at[graph.E(j, 0)];
    const Eigen::Vector3d parent_head =
        joint.parent < 0 ? Eigen::Vector3d::Zero()
                         : Eigen::Vector3d(graph.C.row(graph.E(joint.parent, 0)).transpose());
    joint.rest.translation = head - parent_head;
    joint.inverse_bind = Eigen::Translation3d(-head);
    joint.tail = Eigen::Vector3d(graph.C.row(graph.E(j, 1)).transpose());
  }
  if (absl::StatusOr<std::vector<int>> order = TopologicalOrder(skeleton); !order.ok())
    return absl::InvalidArgumentError(
        absl::StrCat("tgf bones form a cycle: ", order.status().message()));
  return skeleton;
}

}  // namespace skinning
