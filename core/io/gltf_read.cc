#include "core/io/gltf.h"

#include <tiny_gltf.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/io/gltf_accessors.h"
#include "core/io/gltf_draco.h"
#include "core/io/gltf_json_scan.h"
#include "core/io/gltf_meshopt.h"
#include "core/io/gltf_patch.h"
#include "core/rig/pose.h"
#include "core/rig/transform.h"
#include "core/io/text_io.h"
#include "core/util/status_macros.h"

namespace skinning {
namespace {

using gltf_internal::CheckAllAccessors;
using gltf_internal::Components;
using gltf_internal::Decoded;
using gltf_internal::Invalid;
using gltf_internal::NumComponents;
using gltf_internal::ReadAccessor;

// One skin's view of the rig: rig joint of each of its joints, and the transform D_s its mesh
// vertices take so that the rig's inverse bind matrices pose them (identity for most files).
struct SkinMap {
  std::vector<int> joint;
  Eigen::Affine3d offset = Eigen::Affine3d::Identity();
};

// Images are never decoded: textures are irrelevant to skinning, and a decoder is attack surface.
bool SkipImage(tinygltf::Image* /*image*/, const int /*image_idx*/, std::string* /*err*/,
               std::string* /*warn*/, int /*req_width*/, int /*req_height*/,
               const unsigned char* /*bytes*/, int /*size*/, void* /*user_data*/) {
  return true;
}

absl::Status CheckGlbHeader(const std::vector<unsigned char>& bytes) {
  auto u32 = [&](size_t offset) {
    uint32_t v;
    std::memcpy(&v, bytes.data() + offset, 4);
    return v;
  };
  if (bytes.size() < 20)
    return Invalid(
        absl::StrFormat("glb: %d bytes is too short for a header and a JSON chunk", bytes.size()));
  if (u32(4) != 2)
    return Invalid(absl::StrFormat("glb: version %d is not supported (expected 2)", u32(4)));
  const uint64_t length = u32(8);
  if (length > bytes.size())
    return Invalid(
        absl::StrFormat("glb: header length is %d bytes but the file has %d "
                        "(truncated?)",
                        length, bytes.size()));
  const uint64_t json_length = u32(12);
  if (u32(16) != 0x4E4F534Au) return Invalid("glb: the first chunk is not JSON");
  if (json_length == 0 || 20 + json_length > length)
    return Invalid(absl::StrFormat("glb: JSON chunk of %d bytes does not fit in %d bytes",
                                   json_length, length));
  const uint64_t bin_start = 20 + json_length;
  if (bin_start < length) {
    if (bin_start + 8 > length)
      return Invalid(absl::StrFormat("glb: truncated chunk header at offset %d", bin_start));
    const uint64_t bin_length = u32(bin_start);
    if (bin_start + 8 + bin_length > length)
      return Invalid(
          absl::StrFormat("glb: BIN chunk of %d bytes at offset %d exceeds the %d-byte "
                          "file",
                          bin_length, bin_start, length));
  }
  return absl::OkStatus();
}

// Filesystem access of a file read from memory (a request's bytes): none. Every external URI
// is refused and remembered for the error message.
struct NoFiles {
  std::vector<std::string> asked;
};

tinygltf::FsCallbacks NoFileCallbacks(NoFiles* no_files) {
  tinygltf::FsCallbacks fs;
  fs.FileExists = [](const std::string& name, void* user) {
    static_cast<NoFiles*>(user)->asked.push_back(name);
    return false;
  };
  fs.ExpandFilePath = [](const std::string& path, void*) { return path; };
  fs.ReadWholeFile = [](std::vector<unsigned char>*, std::string* err, const std::string& name, void*) {
    if (err != nullptr) *err = "external file '" + name + "' refused";
    return false;
  };
  fs.WriteWholeFile = [](std::string* err, const std::string&, const std::vector<unsigned char>&, void*) {
    if (err != nullptr) *err = "writing refused";
    return false;
  };
  fs.user_data = no_files;
  return fs;
}

// The JSON of a .glb (its first chunk; the header is checked) or a .gltf (all of it) held to
// gltf_internal::kMaxJsonDepth (INVALID_ARGUMENT) and to `max_values` values when it is not 0
// (RESOURCE_EXHAUSTED): each value costs 200 to 400 bytes once parsed (tinygltf keeps `extras`
// and unknown extensions as trees of its own values), so 25M of them in a 50 MB upload took
// 4.8 GB.
absl::Status CheckJsonShape(const std::vector<unsigned char>& bytes, const gltf_internal::JsonText& json,
                            int64_t max_values) {
  const gltf_internal::JsonShape shape = gltf_internal::ScanJson(bytes.data() + json.begin, json.end - json.begin);
  if (shape.depth > gltf_internal::kMaxJsonDepth)
    return Invalid(
        absl::StrFormat("its JSON nests arrays and objects deeper than %d levels", gltf_internal::kMaxJsonDepth));
  if (max_values > 0 && shape.values > max_values)
    return absl::ResourceExhaustedError(
        absl::StrFormat("its JSON has %d values, more than the limit of %d", shape.values, max_values));
  return absl::OkStatus();
}

// Parses a .glb or .gltf held in memory; `label` prefixes every message. `base_dir` is where
// external buffers are looked up, or nullopt for bytes from a request (external URIs refused).
absl::StatusOr<tinygltf::Model> LoadModelFromBytes(std::vector<unsigned char> bytes, const std::string& label,
                                                   const std::optional<std::string>& base_dir,
                                                   const GltfSizeLimits& limits = {}) {
  if (bytes.empty()) return Invalid(absl::StrFormat("%s: the file is empty", label));
  if (bytes.size() > std::numeric_limits<unsigned int>::max())
    return Invalid(absl::StrFormat("%s: files of 4 GiB or more are not supported", label));
  const bool binary = bytes.size() >= 4 && std::memcmp(bytes.data(), "glTF", 4) == 0;
  if (binary) {
    if (absl::Status s = CheckGlbHeader(bytes); !s.ok())
      return Invalid(absl::StrFormat("%s: %s", label, s.message()));
  }
  const gltf_internal::JsonText json = gltf_internal::FindJsonText(bytes, binary);
  if (absl::Status s = CheckJsonShape(bytes, json, limits.max_json_values); !s.ok())
    return absl::Status(s.code(), absl::StrFormat("%s: %s", label, s.message()));
  const gltf_internal::GltfJsonLayout layout = gltf_internal::ScanGltfJson(bytes.data() + json.begin, json.end - json.begin);
  if (limits.max_struct_bytes > 0 && layout.struct_bytes > limits.max_struct_bytes) {
    const int64_t* most = std::max_element(std::begin(layout.counts), std::end(layout.counts));
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%s: its JSON's objects (%d %s, and others) would take %d bytes parsed, more than the limit of %d", label, *most,
        gltf_internal::GltfObjectName(static_cast<gltf_internal::GltfObject>(most - std::begin(layout.counts))),
        layout.struct_bytes, limits.max_struct_bytes));
  }
  // What the reader never uses (members tinygltf does not look up, extras, other extensions),
  // overwritten with spaces in place.
  gltf_internal::BlankUnread(layout.unread, json.begin, &bytes);
  // What tinygltf refuses in compressed files, rewritten next (the parser reads `input`).
  const std::optional<std::vector<unsigned char>> patched = gltf_internal::PatchForParser(bytes, binary);
  const std::vector<unsigned char>& input = patched ? *patched : bytes;
  tinygltf::Model model;
  tinygltf::TinyGLTF loader;
  loader.SetImageLoader(&SkipImage, nullptr);
  NoFiles no_files;
  if (!base_dir) loader.SetFsCallbacks(NoFileCallbacks(&no_files));
  const std::string dir = base_dir.value_or("");
  std::string err, warn;
  bool ok = false;
  try {
    const auto size = static_cast<unsigned int>(input.size());
    if (binary) {
      ok = loader.LoadBinaryFromMemory(&model, &err, &warn, input.data(), size, dir);
    } else {
      ok = loader.LoadASCIIFromString(&model, &err, &warn, reinterpret_cast<const char*>(input.data()), size, dir);
    }
  } catch (const std::exception& e) {
    return Invalid(absl::StrFormat("%s: not a valid glTF file: %s", label, e.what()));
  } catch (...) {
    return Invalid(absl::StrFormat("%s: not a valid glTF file", label));
  }
  if (!ok) {
    if (!no_files.asked.empty())
      return Invalid(absl::StrFormat(
          "%s: refers to the external file '%s'; send a .glb, or a .gltf whose buffers are embedded "
          "(data: URIs)",
          label, no_files.asked.front()));
    std::string message(absl::StripAsciiWhitespace(err));
    // The parser's word for a member of the wrong type is vague ("unknown parse error", or a
    // missing member it then looked for): the scan names it.
    if (!layout.not_an_integer.empty()) message = layout.not_an_integer;
    if (message.empty()) message = "unknown parse error";
    return Invalid(absl::StrFormat("%s: not a valid glTF file: %s", label, message));
  }
  // Valid JSON that the parser read with a default in place of what the file gives.
  if (!layout.not_an_integer.empty())
    return Invalid(absl::StrFormat("%s: not a valid glTF file: %s", label, layout.not_an_integer));
  return model;
}

absl::StatusOr<tinygltf::Model> LoadModel(const std::string& path) {
  // (Not istreambuf_iterator: libstdc++ throws from it on a read error, e.g. a directory.)
  ASSIGN_OR_RETURN(const std::string text, io_internal::ReadFileToString(path));
  std::vector<unsigned char> bytes(text.begin(), text.end());
  return LoadModelFromBytes(std::move(bytes), path, std::filesystem::path(path).parent_path().string());
}

// A node's `matrix` (column-major, 16 finite numbers).
absl::StatusOr<Eigen::Affine3d> NodeMatrix(const tinygltf::Node& node, int index) {
  if (node.matrix.size() != 16)
    return Invalid(absl::StrFormat("nodes[%d].matrix has %d numbers, expected 16", index,
                                   node.matrix.size()));
  Eigen::Affine3d A = Eigen::Affine3d::Identity();
  for (int c = 0; c < 4; ++c)
    for (int r = 0; r < 3; ++r) A.matrix()(r, c) = node.matrix[c * 4 + r];  // column-major
  if (!A.matrix().allFinite())
    return Invalid(absl::StrFormat("nodes[%d].matrix is not finite", index));
  // The spec: a node's matrix decomposes into translation, rotation and scale (no projection, no
  // shear). Such matrices were read as their nearest T·R·S, or as given, without a word.
  if (node.matrix[3] != 0 || node.matrix[7] != 0 || node.matrix[11] != 0 || node.matrix[15] != 1)
    return Invalid(absl::StrFormat("nodes[%d].matrix's last row is (%g, %g, %g, %g), not (0, 0, 0, 1): a node "
                                   "matrix is a translation, rotation and scale",
                                   index, node.matrix[3], node.matrix[7], node.matrix[11], node.matrix[15]));
  // R·S has orthogonal columns; a shear does not (checked to float rounding of the columns).
  const Eigen::Matrix3d L = A.linear();
  for (int i = 0; i < 3; ++i)
    for (int j = i + 1; j < 3; ++j) {
      const double cosine = L.col(i).dot(L.col(j)), scale = L.col(i).norm() * L.col(j).norm();
      if (std::abs(cosine) > 1e-4 * scale)
        return Invalid(absl::StrFormat("nodes[%d].matrix shears (its columns %d and %d are not orthogonal: cosine "
                                       "%.3g): a node matrix is a translation, rotation and scale",
                                       index, i, j, cosine / scale));
    }
  return A;
}

// The translation, rotation and scale of a node matrix (NodeMatrix: orthogonal columns): the
// scales are the columns' lengths, one negated for a mirror. (The polar decomposition can take a
// mirrored matrix's scale along other axes than its columns'.)
Transform MatrixTransform(const Eigen::Affine3d& A) {
  const Eigen::Matrix3d L = A.linear();
  Eigen::Vector3d s(L.col(0).norm(), L.col(1).norm(), L.col(2).norm());
  // Without a mirror the polar decomposition is that (as before, to the bit); with a zero scale
  // any rotation will do.
  if (!(L.determinant() < 0) || !(s.minCoeff() > 1e-12)) return DecomposeAffine(A);
  s(0) = -s(0);
  Transform t;
  t.translation = A.translation();
  t.rotation = Eigen::Quaterniond(Eigen::Matrix3d(L * s.cwiseInverse().asDiagonal())).normalized();
  t.scale = s;
  return t;
}

absl::StatusOr<Transform> NodeTransform(const tinygltf::Node& node, int index) {
  Transform t;
  if (!node.matrix.empty()) {
    ASSIGN_OR_RETURN(const Eigen::Affine3d A, NodeMatrix(node, index));
    return MatrixTransform(A);
  }
  if (!node.translation.empty()) {
    if (node.translation.size() != 3)
      return Invalid(absl::StrFormat("nodes[%d].translation has %d numbers, expected 3", index,
                                     node.translation.size()));
    t.translation = Eigen::Vector3d(node.translation[0], node.translation[1], node.translation[2]);
    if (!t.translation.allFinite())
      return Invalid(absl::StrFormat("nodes[%d].translation is not finite", index));
  }
  if (!node.rotation.empty()) {
    if (node.rotation.size() != 4)
      return Invalid(absl::StrFormat("nodes[%d].rotation has %d numbers, expected 4", index,
                                     node.rotation.size()));
    Eigen::Quaterniond q(node.rotation[3], node.rotation[0], node.rotation[1], node.rotation[2]);
    const double norm = q.norm();
    if (!std::isfinite(norm) || norm < 1e-12)
      return Invalid(absl::StrFormat("nodes[%d].rotation is not a valid quaternion", index));
    t.rotation = UnitWithinFloatRounding(q);  // as the writer: an exported rig reads back the same
  }
  if (!node.scale.empty()) {
    if (node.scale.size() != 3)
      return Invalid(
          absl::StrFormat("nodes[%d].scale has %d numbers, expected 3", index, node.scale.size()));
    t.scale = Eigen::Vector3d(node.scale[0], node.scale[1], node.scale[2]);
    if (!t.scale.allFinite())
      return Invalid(absl::StrFormat("nodes[%d].scale is not finite", index));
  }
  return t;
}

// What props need of the node tree, computed once per file: each node's parent (the first one
// found; the skeleton reader rejects nodes with two parents), whether a skin read lists it and
// whether an animation read moves it (translation, rotation or scale).
struct NodeTree {
  std::vector<int> parent;
  std::vector<bool> skin_joint;
  std::vector<bool> animated;

  NodeTree(const tinygltf::Model& model, const std::vector<bool>& skins_read, const std::vector<bool>& animations_read)
      : parent(model.nodes.size(), -1), skin_joint(model.nodes.size(), false), animated(model.nodes.size(), false) {
    const int n = static_cast<int>(model.nodes.size());
    for (int p = 0; p < n; ++p) {
      for (int c : model.nodes[p].children) {
        if (c >= 0 && c < n && parent[c] == -1) parent[c] = p;
      }
    }
    for (size_t s = 0; s < model.skins.size(); ++s) {
      if (!skins_read[s]) continue;
      for (int j : model.skins[s].joints) {
        if (j >= 0 && j < n) skin_joint[j] = true;
      }
    }
    for (size_t a = 0; a < model.animations.size(); ++a) {
      if (!animations_read[a]) continue;
      for (const tinygltf::AnimationChannel& ch : model.animations[a].channels) {
        if (ch.target_node >= 0 && ch.target_node < n && ch.target_path != "weights" && ch.target_path != "pointer")
          animated[ch.target_node] = true;
      }
    }
  }

  // Node n when some skin lists it as a joint, else its nearest ancestor that one lists, or -1.
  // (A mesh on a joint node moves with that joint; it was given the joint's parent.)
  absl::StatusOr<int> PropJointNode(int n) const {
    int steps = 0;
    for (int p = n; p != -1; p = parent[p]) {
      if (++steps > static_cast<int>(parent.size()))
        return Invalid(absl::StrFormat("nodes[%d]: the node hierarchy has a cycle", n));
      if (skin_joint[p]) return p;
    }
    return -1;
  }

  // The node a prop n below skin joint node `joint` (PropJointNode) moves with: the nearest node
  // from n up to the joint (n included, the joint not) that an animation moves, else the joint.
  int PropAnchorNode(int n, int joint) const {
    for (int p = n; p != joint; p = parent[p]) {
      if (animated[p]) return p;
    }
    return joint;
  }
};

// What of the file the character is read from. With several scenes, one: the nodes it reaches
// (from its `nodes`, through `children`), the skins that its mesh nodes use or that no mesh node
// uses, and the animations that move one of its nodes or no node at all. Else everything, as
// before scenes were looked at (a node outside the one scene is read too).
struct SceneSelection {
  std::vector<bool> node, skin, animation;
  std::string read;  // with several scenes, the one read: `scenes[1] ("Main") of 3`; else empty
};

absl::StatusOr<SceneSelection> SelectScene(const tinygltf::Model& model, const GltfReadOptions& options) {
  SceneSelection s;
  s.node.assign(model.nodes.size(), true);
  s.skin.assign(model.skins.size(), true);
  s.animation.assign(model.animations.size(), true);
  const int num_scenes = static_cast<int>(model.scenes.size());
  if (options.scene >= num_scenes) {
    return Invalid(absl::StrFormat("scene %d was asked for; the file has %d scene%s", options.scene, num_scenes,
                                   num_scenes == 1 ? "" : "s"));
  }
  if (num_scenes <= 1) return s;
  const int chosen = options.scene >= 0 ? options.scene : std::max(model.defaultScene, 0);
  if (chosen >= num_scenes) {
    return Invalid(absl::StrFormat("scene: scene %d is out of range (%d scenes)", chosen, num_scenes));
  }
  auto describe = [&](int scene) {
    const std::string& name = model.scenes[scene].name;
    return absl::StrFormat("scenes[%d]%s", scene, name.empty() ? "" : absl::StrFormat(" (\"%s\")", name));
  };
  const int num_nodes = static_cast<int>(model.nodes.size());
  // Walks the nodes a scene reaches through `children`: visit(n) marks n and says whether it was
  // unmarked; a node reached twice, or through a cycle, is walked once (the skeleton reader
  // refuses cycles, nodes with two parents and children out of range).
  auto walk = [&](int scene, auto&& visit) {
    std::vector<int> stack(model.scenes[scene].nodes.rbegin(), model.scenes[scene].nodes.rend());
    while (!stack.empty()) {
      const int n = stack.back();
      stack.pop_back();
      if (n < 0 || n >= num_nodes || !visit(n)) continue;
      stack.insert(stack.end(), model.nodes[n].children.rbegin(), model.nodes[n].children.rend());
    }
  };
  for (int n : model.scenes[chosen].nodes) {
    if (n < 0 || n >= num_nodes) {
      return Invalid(absl::StrFormat("scenes[%d].nodes: node %d is out of range (%d nodes)", chosen, n, num_nodes));
    }
  }
  s.node.assign(num_nodes, false);
  walk(chosen, [&](int n) {
    if (s.node[n]) return false;
    s.node[n] = true;
    return true;
  });
  const int num_skins = static_cast<int>(model.skins.size());
  auto skinned_mesh = [&](int n) {
    const tinygltf::Node& node = model.nodes[n];
    return node.mesh >= 0 && node.skin >= 0 && node.skin < num_skins;
  };
  std::vector<bool> used(num_skins, false), used_here(num_skins, false);
  bool any_skinned = false, skinned_here = false;
  for (int n = 0; n < num_nodes; ++n) {
    if (!skinned_mesh(n)) continue;
    used[model.nodes[n].skin] = true;
    any_skinned = true;
    if (s.node[n]) used_here[model.nodes[n].skin] = skinned_here = true;
  }
  if (any_skinned && !skinned_here) {
    // Name a scene that has one: the first that reaches the first skinned mesh node any scene
    // reaches (each node labelled with the first scene to reach it, each node walked once).
    std::vector<int> scene_of(num_nodes, -1);
    for (int other = 0; other < num_scenes; ++other) {
      walk(other, [&](int n) {
        if (scene_of[n] != -1) return false;
        scene_of[n] = other;
        return true;
      });
    }
    const char* which = options.scene >= 0 ? "the one asked for" : "the file's default scene";
    for (int n = 0; n < num_nodes; ++n) {
      if (!skinned_mesh(n) || scene_of[n] == -1) continue;
      return Invalid(absl::StrFormat("%s, %s, has no skinned mesh; %s has one (nodes[%d])", describe(chosen), which,
                                     describe(scene_of[n]), n));
    }
    return Invalid(absl::StrFormat("%s, %s, has no skinned mesh, and no scene reaches one", describe(chosen), which));
  }
  for (int k = 0; k < num_skins; ++k) s.skin[k] = used_here[k] || !used[k];
  for (size_t a = 0; a < model.animations.size(); ++a) {
    bool here = false, any_node = false;
    for (const tinygltf::AnimationChannel& ch : model.animations[a].channels) {
      if (ch.target_node < 0 || ch.target_node >= num_nodes) continue;
      any_node = true;
      here = here || s.node[ch.target_node];
    }
    s.animation[a] = here || !any_node;
  }
  s.read = absl::StrFormat("%s of %d", describe(chosen), num_scenes);
  return s;
}

// A node's local transform as a matrix (a `matrix` as given, else T·R·S).
absl::StatusOr<Eigen::Affine3d> LocalAffine(const tinygltf::Node& node, int index) {
  if (!node.matrix.empty()) return NodeMatrix(node, index);
  ASSIGN_OR_RETURN(const Transform t, NodeTransform(node, index));
  return t.ToAffine();
}

// KHR_mesh_quantization: positions, normals and morph target deltas may be stored as (normalized)
// integers; the file's transforms (for a skinned mesh, its inverse bind matrices) dequantize.
using gltf_internal::kDracoExtension;
using gltf_internal::kMeshoptExtension;
using gltf_internal::kMeshQuantizationExtension;

bool UsesMeshQuantization(const tinygltf::Model& model) {
  return std::find(model.extensionsUsed.begin(), model.extensionsUsed.end(), kMeshQuantizationExtension) !=
         model.extensionsUsed.end();
}

// Refuses what the reader does not support yet instead of dropping it: every message names the
// feature and where it is. Static meshes are left out instead, and named in `skipped`, with
// options.skip_static_meshes. Props that an animation moves below their joint add the nodes from
// their anchor (NodeTree::PropAnchorNode) up to the joint to `prop_joints`, anchors in `anchors`.
absl::Status CheckSupportedFeatures(const tinygltf::Model& model, const SceneSelection& selection, const NodeTree& tree,
                                    const GltfReadOptions& options, std::vector<std::string>* skipped,
                                    std::set<int>* prop_joints, std::set<int>* anchors) {
  std::vector<std::string> unsupported;
  for (const std::string& e : model.extensionsRequired)
    if (!gltf_internal::SupportedExtension(e) && !gltf_internal::UnreadExtension(e)) unsupported.push_back(e);
  if (!unsupported.empty()) {
    return Invalid(absl::StrFormat(
        "extensionsRequired: %s %s not supported (the required extensions the reader supports are %s, %s, %s and "
        "%s, and those of materials, textures, lights and metadata, which it does not read)",
        absl::StrJoin(unsupported, ", ",
                      [](std::string* out, const std::string& e) { absl::StrAppend(out, "\"", e, "\""); }),
        unsupported.size() == 1 ? "is" : "are", kMeshQuantizationExtension, kMeshoptExtension, kDracoExtension,
        gltf_internal::kAnimationPointerExtension));
  }
  for (size_t n = 0; n < model.nodes.size(); ++n) {
    const tinygltf::Node& node = model.nodes[n];
    if (!selection.node[n]) continue;  // in another scene
    if (node.mesh < 0 || static_cast<size_t>(node.mesh) >= model.meshes.size()) continue;
    const tinygltf::Mesh& mesh = model.meshes[node.mesh];
    bool triangles = false;
    for (size_t p = 0; p < mesh.primitives.size(); ++p) {
      const tinygltf::Primitive& prim = mesh.primitives[p];
      const int mode = prim.mode < 0 ? TINYGLTF_MODE_TRIANGLES : prim.mode;
      // (The JSON scan refuses a negative mode.) Past 6 the primitive is neither points, lines
      // nor triangles: skipped with them, the mesh seemed to have no triangles.
      if (mode > TINYGLTF_MODE_TRIANGLE_FAN) {
        return Invalid(absl::StrFormat("meshes[%d].primitives[%d].mode is %d, not a primitive mode (0 to 6)",
                                       node.mesh, p, mode));
      }
      // The spec (3.7.2.2): every primitive of a mesh has the same number of morph targets; the
      // reader would take a missing target as zero deltas.
      if (prim.targets.size() != mesh.primitives[0].targets.size()) {
        return Invalid(absl::StrFormat(
            "meshes[%d].primitives[%d] has %d morph targets, primitives[0] has %d; the primitives of a mesh have "
            "the same number",
            node.mesh, p, prim.targets.size(), mesh.primitives[0].targets.size()));
      }
      if (mode != TINYGLTF_MODE_TRIANGLES && mode != TINYGLTF_MODE_TRIANGLE_STRIP &&
          mode != TINYGLTF_MODE_TRIANGLE_FAN) {
        continue;  // points and lines are not part of the surface
      }
      triangles = true;
    }
    if (!triangles) continue;
    const std::string name =
        node.name.empty() ? std::string() : absl::StrFormat(" (\"%s\")", node.name);
    if (node.skin < 0 && !model.skins.empty()) {  // no skin at all: ReadSkeleton says so
      // A prop: it must hang below a skin joint. It moves rigidly with the nearest node up to that
      // joint that an animation moves, or with the joint: such nodes become joints of the rig.
      ASSIGN_OR_RETURN(const int joint_node, tree.PropJointNode(static_cast<int>(n)));
      if (joint_node < 0) {
        if (options.skip_static_meshes) {
          skipped->push_back(absl::StrFormat("nodes[%d]%s", n, name));
          continue;
        }
        return Invalid(absl::StrFormat(
            "nodes[%d]%s has a triangle mesh, no skin, is no skin joint and has none above it; static meshes "
            "are not supported yet (skip_static_meshes leaves them out)",
            n, name));
      }
      const int anchor = tree.PropAnchorNode(static_cast<int>(n), joint_node);
      if (anchor != joint_node) {
        anchors->insert(anchor);
        for (int m = anchor; m != joint_node; m = tree.parent[m]) prop_joints->insert(m);
      }
      continue;
    }
    if (node.skin >= static_cast<int>(model.skins.size())) {
      return Invalid(absl::StrFormat("nodes[%d].skin: skin %d is out of range (%d skins)", n,
                                     node.skin, model.skins.size()));
    }
  }
  return absl::OkStatus();
}

// Fills skeleton, num_skin_joints, node_of_joint and the skins' joint maps and bind offsets
// from every skin read and the node hierarchy. The rig's joints are the union of the skins' joints
// (skins in order, each skin's joints in order, a node listed by several skins once), then
// their non-joint ancestors, then `prop_joints` (CheckSupportedFeatures; of them `anchors` carry
// weight). A joint's inverse bind matrix is the first listing skin's; a
// later skin s may bind its joints differently only by one transform for the whole skin,
// IBM_s(j) = IBM(j) · D_s (exporters that bind each mesh at its own place), and its vertices
// are then pre-transformed by D_s, which poses them exactly as the spec does.
absl::Status ReadSkeleton(const tinygltf::Model& model, const SceneSelection& selection,
                          const std::set<int>& prop_joints, const std::set<int>& anchors, GltfCharacter* character,
                          std::vector<int>* joint_of_node, std::vector<SkinMap>* skins) {
  const int num_nodes = static_cast<int>(model.nodes.size());
  std::vector<int> parent(num_nodes, -1);
  for (int n = 0; n < num_nodes; ++n) {
    for (int c : model.nodes[n].children) {
      if (c < 0 || c >= num_nodes)
        return Invalid(absl::StrFormat("nodes[%d].children: node %d is out of range (%d nodes)", n,
                                       c, num_nodes));
      if (c == n) return Invalid(absl::StrFormat("nodes[%d] is its own child", n));
      if (parent[c] != -1)
        return Invalid(
            absl::StrFormat("nodes[%d] has two parents (nodes %d and %d)", c, parent[c], n));
      parent[c] = n;
    }
  }
  if (model.skins.empty()) return Invalid("the file has no skin (skins is empty)");

  joint_of_node->assign(num_nodes, -1);
  std::vector<int>& node_of_joint = character->node_of_joint;
  node_of_joint.clear();
  skins->assign(model.skins.size(), SkinMap());
  for (size_t s = 0; s < model.skins.size(); ++s) {
    if (!selection.skin[s]) continue;  // only another scene's meshes use it
    const tinygltf::Skin& skin = model.skins[s];
    if (skin.joints.empty()) return Invalid(absl::StrFormat("skins[%d] has no joints", s));
    std::set<int> seen;
    for (size_t j = 0; j < skin.joints.size(); ++j) {
      const int n = skin.joints[j];
      if (n < 0 || n >= num_nodes)
        return Invalid(absl::StrFormat("skins[%d].joints[%d]: node %d is out of range (%d nodes)",
                                       s, j, n, num_nodes));
      if (!seen.insert(n).second)
        return Invalid(absl::StrFormat("skins[%d].joints[%d]: node %d is listed twice", s, j, n));
      if ((*joint_of_node)[n] == -1) {
        (*joint_of_node)[n] = static_cast<int>(node_of_joint.size());
        node_of_joint.push_back(n);
      }
      (*skins)[s].joint.push_back((*joint_of_node)[n]);
    }
  }
  const int num_skin_joints = static_cast<int>(node_of_joint.size());
  // Non-joint ancestors of the joints, in increasing node index. A walk longer than the node
  // count means a cycle.
  std::set<int> ancestors;
  for (int j = 0; j < num_skin_joints; ++j) {
    int steps = 0;
    for (int p = parent[node_of_joint[j]]; p != -1; p = parent[p]) {
      if (++steps > num_nodes)
        return Invalid(
            absl::StrFormat("nodes[%d]: the node hierarchy has a cycle", node_of_joint[j]));
      if ((*joint_of_node)[p] == -1) ancestors.insert(p);
    }
  }
  for (int n : ancestors) {
    (*joint_of_node)[n] = static_cast<int>(node_of_joint.size());
    node_of_joint.push_back(n);
  }
  // Then the nodes animated props move with, and those between them and their skin joint (a node
  // that is also a joint's ancestor is there once).
  for (int n : prop_joints) {
    if ((*joint_of_node)[n] != -1) continue;
    (*joint_of_node)[n] = static_cast<int>(node_of_joint.size());
    node_of_joint.push_back(n);
  }

  Skeleton& skeleton = character->skeleton;
  skeleton.joints.assign(node_of_joint.size(), Joint());
  for (size_t j = 0; j < node_of_joint.size(); ++j) {
    const int n = node_of_joint[j];
    Joint& joint = skeleton.joints[j];
    joint.name = model.nodes[n].name.empty() ? absl::StrFormat("node%d", n) : model.nodes[n].name;
    joint.parent = parent[n] == -1 ? -1 : (*joint_of_node)[parent[n]];
    ASSIGN_OR_RETURN(joint.rest, NodeTransform(model.nodes[n], n));
    // Non-joint ancestors carry no weights (an "Armature" or "Z_UP" node), nor do the nodes
    // between an animated prop's anchor and its joint; the anchor carries the prop's.
    joint.deforms = static_cast<int>(j) < num_skin_joints || anchors.count(n) > 0;
  }

  // Inverse bind matrices: the first listing skin's, then each skin's offset D_s.
  std::vector<bool> bound(num_skin_joints, false);
  for (size_t s = 0; s < model.skins.size(); ++s) {
    if (!selection.skin[s]) continue;
    const tinygltf::Skin& skin = model.skins[s];
    const int count = static_cast<int>(skin.joints.size());
    std::vector<Eigen::Affine3d> ibm(count, Eigen::Affine3d::Identity());
    if (skin.inverseBindMatrices >= 0) {
      const std::string what = absl::StrFormat("skins[%d].inverseBindMatrices", s);
      ASSIGN_OR_RETURN(Decoded d, ReadAccessor(model, skin.inverseBindMatrices, TINYGLTF_TYPE_MAT4,
                                               Components::kFloat, what, static_cast<size_t>(count)));
      if (d.count < static_cast<size_t>(count))
        return Invalid(absl::StrFormat("accessors[%d] (%s): %d matrices for %d joints",
                                       skin.inverseBindMatrices, what, d.count, count));
      for (int j = 0; j < count; ++j) {
        for (int c = 0; c < 4; ++c)
          for (int r = 0; r < 3; ++r) ibm[j].matrix()(r, c) = d.at(j, c * 4 + r);  // column-major
        // Skinning matrices are affine: a last row other than (0, 0, 0, 1) was dropped unread.
        const double last[4] = {d.at(j, 3), d.at(j, 7), d.at(j, 11), d.at(j, 15)};
        if (std::abs(last[0]) > 1e-6 || std::abs(last[1]) > 1e-6 || std::abs(last[2]) > 1e-6 ||
            std::abs(last[3] - 1) > 1e-6)
          return Invalid(absl::StrFormat("accessors[%d] (%s): matrix %d's last row is (%g, %g, %g, %g), not (0, 0, "
                                         "0, 1); inverse bind matrices are affine",
                                         skin.inverseBindMatrices, what, j, last[0], last[1], last[2], last[3]));
      }
    }
    SkinMap& map = (*skins)[s];
    // D_s from the joints an earlier skin binds: IBM_s(j) = IBM(j) · D_s.
    bool have_offset = false;
    for (int j = 0; j < count; ++j) {
      const int joint = map.joint[j];
      if (!bound[joint]) continue;
      const Eigen::Matrix4d offset =
          (skeleton.joints[joint].inverse_bind.inverse() * ibm[j]).matrix();
      if (!offset.allFinite())
        return Invalid(absl::StrFormat("skins[%d]: joint %d's inverse bind matrix is singular",
                                       s, j));
      if (!have_offset) {
        map.offset.matrix() = offset;
        have_offset = true;
      } else if ((offset - map.offset.matrix()).cwiseAbs().maxCoeff() >
                 1e-5 * std::max(1.0, map.offset.matrix().cwiseAbs().maxCoeff())) {
        return Invalid(absl::StrFormat(
            "skins[%d] binds joint \"%s\" (nodes[%d]) differently from an earlier skin, and not "
            "by one transform for the whole skin; such skins are not supported",
            s, skeleton.joints[joint].name, node_of_joint[joint]));
      }
    }
    // Joints this skin is the first to list: IBM(j) = IBM_s(j) · D_s⁻¹.
    const Eigen::Affine3d undo = map.offset.inverse();
    for (int j = 0; j < count; ++j) {
      const int joint = map.joint[j];
      if (bound[joint]) continue;
      skeleton.joints[joint].inverse_bind = ibm[j] * undo;
      bound[joint] = true;
    }
  }
  character->num_skin_joints = num_skin_joints;

  absl::StatusOr<std::vector<int>> order = TopologicalOrder(skeleton);
  if (!order.ok()) return Invalid("skeleton: " + std::string(order.status().message()));
  if (node_of_joint.size() > static_cast<size_t>(num_skin_joints)) {
    // From the rest transforms rounded to float32, as a rig stores them and a file exported from
    // it holds them: that file then reads back with the same inverse binds (from the file's
    // double-precision values they differed by 1e-8, and by sign in entries near 0).
    std::vector<Transform> rest;
    for (const Joint& joint : skeleton.joints) rest.push_back(RoundedToFloat(joint.rest));
    const std::vector<Eigen::Affine3d> world = ForwardKinematics(skeleton, *order, rest);
    for (size_t j = num_skin_joints; j < node_of_joint.size(); ++j)
      skeleton.joints[j].inverse_bind = world[j].inverse();
  }
  return ValidateSkeleton(skeleton);
}

// Triangles of one primitive (local vertex indices) from its index list and mode.
absl::StatusOr<std::vector<int>> PrimitiveTriangles(const std::vector<uint32_t>& idx, int mode,
                                                    const std::string& where) {
  std::vector<int> tri;
  const size_t n = idx.size();
  if (mode == TINYGLTF_MODE_TRIANGLES) {
    if (n % 3 != 0)
      return Invalid(absl::StrFormat("%s: %d indices is not a multiple of 3", where, n));
    tri.assign(idx.begin(), idx.end());
  } else if (mode == TINYGLTF_MODE_TRIANGLE_STRIP) {
    for (size_t i = 0; i + 2 < n; ++i) {
      // glTF: triangle i = (p_i, p_{i+(1+i%2)}, p_{i+(2-i%2)}), keeping the winding.
      const size_t odd = i % 2;
      tri.insert(tri.end(), {static_cast<int>(idx[i]), static_cast<int>(idx[i + 1 + odd]),
                             static_cast<int>(idx[i + 2 - odd])});
    }
  } else {  // TRIANGLE_FAN: triangle i = (p_{i+1}, p_{i+2}, p_0).
    for (size_t i = 0; i + 2 < n; ++i)
      tri.insert(tri.end(), {static_cast<int>(idx[i + 1]), static_cast<int>(idx[i + 2]),
                             static_cast<int>(idx[0])});
  }
  return tri;
}

// The accessors a primitive's vertices are read from: its POSITION, NORMAL, JOINTS_n and
// WEIGHTS_n, and each morph target's deltas. Primitives of one node with the same ones share the
// rig's vertices: UniVRM, for one, writes a mesh's submeshes (one per material) as primitives over
// one vertex buffer.
struct VertexAccessors {
  std::map<std::string, int> attributes;
  std::vector<std::map<std::string, int>> targets;
  bool operator<(const VertexAccessors& other) const {
    return std::tie(attributes, targets) < std::tie(other.attributes, other.targets);
  }
  bool operator==(const VertexAccessors& other) const {
    return attributes == other.attributes && targets == other.targets;
  }
};

VertexAccessors VertexAccessorsOf(const tinygltf::Primitive& prim) {
  auto read = [](const std::map<std::string, int>& all) {
    std::map<std::string, int> out;
    for (const auto& [key, accessor] : all)
      if (key == "POSITION" || key == "NORMAL" || absl::StartsWith(key, "JOINTS_") || absl::StartsWith(key, "WEIGHTS_"))
        out.emplace(key, accessor);
    return out;
  };
  VertexAccessors v{read(prim.attributes), {}};
  for (const auto& target : prim.targets) v.targets.push_back(read(target));
  return v;
}

absl::Status ReadMesh(const tinygltf::Model& model, const SceneSelection& selection, const NodeTree& tree,
                      const std::vector<SkinMap>& skins, const std::vector<int>& joint_of_node,
                      GltfCharacter* character) {
  struct Item {
    int node, mesh, primitive, skin;  // skin −1: a prop, moved rigidly by prop_joint
    int prop_joint = -1;
    Eigen::Affine3d prop_matrix = Eigen::Affine3d::Identity();  // mesh space → rig bind space
  };
  std::vector<Item> items;
  for (size_t n = 0; n < model.nodes.size(); ++n) {
    const tinygltf::Node& node = model.nodes[n];
    if (node.mesh < 0 || !selection.node[n]) continue;
    // A prop (CheckSupportedFeatures: below a skin joint) is weighted 1 to the joint it moves with
    // (its anchor: the nearest animated node up to its skin joint, else that joint), its vertices
    // taken to where the joint's inverse bind expects them: v' = IBM(J)⁻¹ · R · v, R the rest
    // transforms from J down to the node, so that world(J) · IBM(J) · v' = world(J) · R · v, the
    // spec's pose of a non-skinned node.
    int prop_joint = -1;
    Eigen::Affine3d prop_matrix = Eigen::Affine3d::Identity();
    if (node.skin < 0) {
      ASSIGN_OR_RETURN(const int skin_joint_node, tree.PropJointNode(static_cast<int>(n)));
      if (skin_joint_node < 0) continue;  // no skin in the file: ReadSkeleton said so
      const int joint_node = tree.PropAnchorNode(static_cast<int>(n), skin_joint_node);
      prop_joint = joint_of_node[joint_node];
      Eigen::Affine3d R = Eigen::Affine3d::Identity();
      for (int m = static_cast<int>(n); m != joint_node; m = tree.parent[m]) {
        ASSIGN_OR_RETURN(const Eigen::Affine3d local, LocalAffine(model.nodes[m], m));
        R = local * R;
      }
      prop_matrix = character->skeleton.joints[prop_joint].inverse_bind.inverse() * R;
    }
    if (static_cast<size_t>(node.mesh) >= model.meshes.size())
      return Invalid(absl::StrFormat("nodes[%d].mesh: mesh %d is out of range (%d meshes)", n,
                                     node.mesh, model.meshes.size()));
    if (character->name.empty()) character->name = model.meshes[node.mesh].name;
    const auto& primitives = model.meshes[node.mesh].primitives;
    for (size_t p = 0; p < primitives.size(); ++p) {
      const int mode = primitives[p].mode < 0 ? TINYGLTF_MODE_TRIANGLES : primitives[p].mode;
      if (mode != TINYGLTF_MODE_TRIANGLES && mode != TINYGLTF_MODE_TRIANGLE_STRIP &&
          mode != TINYGLTF_MODE_TRIANGLE_FAN)
        continue;  // points and lines are not part of the surface
      items.push_back({static_cast<int>(n), node.mesh, static_cast<int>(p), node.skin, prop_joint,
                       prop_matrix});
    }
  }
  if (items.empty()) return Invalid("no node with a triangle mesh has a skin");

  auto attribute = [&](const Item& item, const char* key) {
    const auto& attrs = model.meshes[item.mesh].primitives[item.primitive].attributes;
    auto it = attrs.find(key);
    return it == attrs.end() ? -1 : it->second;
  };
  // Influences come in sets of four (JOINTS_n, WEIGHTS_n); the rig keeps as many as the
  // primitive with the most sets has, up to kMaxInfluenceSets.
  constexpr int kMaxInfluenceSets = 16;
  bool all_normals = true;
  int sets = 1;
  for (const Item& item : items) {
    all_normals = all_normals && attribute(item, "NORMAL") >= 0;
    for (int set = 1;; ++set) {
      const std::string jname = absl::StrFormat("JOINTS_%d", set), wname = absl::StrFormat("WEIGHTS_%d", set);
      const bool j = attribute(item, jname.c_str()) >= 0, w = attribute(item, wname.c_str()) >= 0;
      if (j != w)
        return Invalid(absl::StrFormat("meshes[%d].primitives[%d]: %s without %s", item.mesh, item.primitive,
                                       j ? jname : wname, j ? wname : jname));
      if (!j) break;
      if (set >= kMaxInfluenceSets)
        return Invalid(absl::StrFormat("meshes[%d].primitives[%d]: more than %d sets of JOINTS_n/WEIGHTS_n (%d "
                                       "influences per vertex); this reader takes at most that many",
                                       item.mesh, item.primitive, kMaxInfluenceSets, 4 * kMaxInfluenceSets));
      sets = std::max(sets, set + 1);
    }
  }
  const int k = 4 * sets;
  const bool quantized = UsesMeshQuantization(model);

  std::vector<double> V, N;
  std::vector<int> F, joints;
  struct TargetPiece {
    int target = 0;
    size_t base = 0;                // first vertex of the primitive in the rig
    std::vector<double> dv, dn;     // its deltas (dn empty without NORMAL deltas)
  };
  std::vector<TargetPiece> pieces;
  std::vector<MorphTarget> targets;
  std::vector<int> target_nodes;            // the node of each target
  std::map<int, int> first_target_of_node;  // node → its first target
  std::vector<float> weights;
  // A primitive's triangles, its vertices starting at `base` in the rig (nv of them).
  auto add_triangles = [&](const tinygltf::Primitive& prim, const std::string& where, size_t nv,
                           size_t base) -> absl::Status {
    std::vector<uint32_t> idx;
    if (prim.indices >= 0) {
      ASSIGN_OR_RETURN(Decoded id, ReadAccessor(model, prim.indices, TINYGLTF_TYPE_SCALAR,
                                                Components::kVertexIndices, where + ".indices"));
      idx.reserve(id.count);
      for (size_t i = 0; i < id.count; ++i) {
        const double x = id.data[i];
        if (x >= static_cast<double>(nv))
          return Invalid(
              absl::StrFormat("accessors[%d] (%s.indices): index %d = %d is out of "
                              "range (%d vertices)",
                              prim.indices, where, i, static_cast<uint64_t>(x), nv));
        idx.push_back(static_cast<uint32_t>(x));
      }
    } else {
      idx.resize(nv);
      for (size_t i = 0; i < nv; ++i) idx[i] = static_cast<uint32_t>(i);
    }
    const int mode = prim.mode < 0 ? TINYGLTF_MODE_TRIANGLES : prim.mode;
    ASSIGN_OR_RETURN(std::vector<int> tri, PrimitiveTriangles(idx, mode, where));
    for (int t : tri) F.push_back(t + static_cast<int>(base));
    return absl::OkStatus();
  };
  // Primitives of one node with the same VertexAccessors share the rig's vertices: the later ones
  // add their triangles only (read apart, a VRM avatar had each vertex once per material).
  struct VertexSource {
    int node;
    VertexAccessors accessors;
    size_t base, count;
  };
  std::vector<VertexSource> sources;
  for (const Item& item : items) {
    const tinygltf::Primitive& prim = model.meshes[item.mesh].primitives[item.primitive];
    const std::string where =
        absl::StrFormat("meshes[%d].primitives[%d]", item.mesh, item.primitive);
    VertexSource source{item.node, VertexAccessorsOf(prim), V.size() / 3, 0};
    auto same = absl::c_find_if(sources, [&](const VertexSource& other) {
      return other.node == source.node && other.accessors == source.accessors;
    });
    if (same != sources.end()) {
      RETURN_IF_ERROR(add_triangles(prim, where, same->count, same->base));
      continue;
    }
    const int pos_index = attribute(item, "POSITION");
    if (pos_index < 0) return Invalid(where + ": no POSITION attribute");
    ASSIGN_OR_RETURN(Decoded pos, ReadAccessor(model, pos_index, TINYGLTF_TYPE_VEC3,
                                               quantized ? Components::kQuantizedPosition : Components::kFloat,
                                               where + ".POSITION"));
    const size_t nv = pos.count;
    const size_t base = V.size() / 3;
    // A prop reads as a skin of one joint with the prop's matrix as its offset.
    SkinMap prop;
    if (item.skin < 0) {
      prop.joint = {item.prop_joint};
      prop.offset = item.prop_matrix;
    }
    const SkinMap& skin = item.skin >= 0 ? skins[item.skin] : prop;
    const int num_skin_joints = static_cast<int>(skin.joint.size());
    const bool offset = !skin.offset.matrix().isIdentity(0.0);
    const Eigen::Matrix3d normal_matrix = skin.offset.linear().inverse().transpose();
    if (character->parts.empty() || character->parts.back().node != item.node) {
      GltfCharacter::Part part;
      part.node = item.node;
      part.name = model.nodes[item.node].name;
      part.skin = item.skin;
      part.first_vertex = static_cast<int>(base);
      character->parts.push_back(part);
    }
    character->parts.back().num_vertices += static_cast<int>(nv);

    if (base + nv > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
      return Invalid(where + ": too many vertices");
    // Checked on the declared count before the accessor is decoded: one without a buffer view
    // (zeros) declaring 16M elements cost 525 MB before it was refused.
    auto same_count = [&](int accessor, const std::string& what) -> absl::Status {
      if (accessor < 0 || static_cast<size_t>(accessor) >= model.accessors.size()) return absl::OkStatus();
      const size_t count = model.accessors[accessor].count;
      if (count != nv)
        return Invalid(absl::StrFormat("accessors[%d] (%s.%s): count %d differs from POSITION's %d", accessor, where,
                                       what, count, nv));
      return absl::OkStatus();
    };
    if (offset) {
      for (size_t v = 0; v < nv; ++v) {
        const Eigen::Vector3d p =
            skin.offset * Eigen::Vector3d(pos.data[3 * v], pos.data[3 * v + 1], pos.data[3 * v + 2]);
        V.insert(V.end(), {p.x(), p.y(), p.z()});
      }
    } else {
      V.insert(V.end(), pos.data.begin(), pos.data.end());
    }
    if (all_normals) {
      const int ni = attribute(item, "NORMAL");
      RETURN_IF_ERROR(same_count(ni, "NORMAL"));
      ASSIGN_OR_RETURN(Decoded nor, ReadAccessor(model, ni, TINYGLTF_TYPE_VEC3,
                                                 quantized ? Components::kQuantizedNormal : Components::kFloat,
                                                 where + ".NORMAL"));
      // Quantized normals are unit length only to within their precision: renormalized, as the
      // offset path below does anyway.
      const bool renormalize = model.accessors[ni].componentType != TINYGLTF_COMPONENT_TYPE_FLOAT;
      if (offset || renormalize) {
        for (size_t v = 0; v < nv; ++v) {
          const Eigen::Vector3d q = (normal_matrix * Eigen::Vector3d(nor.data[3 * v],
                                                                     nor.data[3 * v + 1],
                                                                     nor.data[3 * v + 2]))
                                        .normalized();
          N.insert(N.end(), {q.x(), q.y(), q.z()});
        }
      } else {
        N.insert(N.end(), nor.data.begin(), nor.data.end());
      }
    }

    // Weights: `sets` sets of four influences (a primitive with fewer pads with zeros).
    std::vector<int> pj(nv * k, 0);
    std::vector<double> pw(nv * k, 0.0);
    for (int set = 0; set < sets; ++set) {
      const std::string jname = absl::StrFormat("JOINTS_%d", set);
      const std::string wname = absl::StrFormat("WEIGHTS_%d", set);
      const int ji = attribute(item, jname.c_str()), wi = attribute(item, wname.c_str());
      if (item.skin < 0) {  // a prop: joint 0 of its one-joint skin, weight 1
        if (set == 0) {
          for (size_t v = 0; v < nv; ++v) {
            pj[v * k] = skin.joint[0];
            pw[v * k] = 1.0;
          }
        }
        continue;
      }
      if (set == 0 && (ji < 0 || wi < 0))
        return Invalid(absl::StrFormat("%s: no %s attribute (the mesh is not skinned)", where,
                                       ji < 0 ? "JOINTS_0" : "WEIGHTS_0"));
      if (ji < 0) continue;
      RETURN_IF_ERROR(same_count(ji, jname));
      RETURN_IF_ERROR(same_count(wi, wname));
      ASSIGN_OR_RETURN(Decoded jd, ReadAccessor(model, ji, TINYGLTF_TYPE_VEC4,
                                                Components::kJointIndices, where + "." + jname));
      ASSIGN_OR_RETURN(Decoded wd,
                       ReadAccessor(model, wi, TINYGLTF_TYPE_VEC4,
                                    Components::kFloatOrNormalizedUnsigned, where + "." + wname));
      for (size_t v = 0; v < nv; ++v) {
        for (int c = 0; c < 4; ++c) {
          const double w = wd.at(v, c);
          const int j = static_cast<int>(jd.at(v, c));
          if (w < 0)
            return Invalid(
                absl::StrFormat("accessors[%d] (%s.%s): vertex %d has negative weight "
                                "%g",
                                wi, where, wname, v, w));
          if (w == 0) continue;  // unused slot: joint 0, weight 0
          if (j >= num_skin_joints)
            return Invalid(
                absl::StrFormat("accessors[%d] (%s.%s): vertex %d uses joint %d, out "
                                "of range (%d skin joints)",
                                ji, where, jname, v, j, num_skin_joints));
          pj[v * k + set * 4 + c] = skin.joint[j];  // the skin's joint j, in the rig
          pw[v * k + set * 4 + c] = w;
        }
      }
    }
    for (size_t v = 0; v < nv; ++v) {
      double sum = 0;
      for (int c = 0; c < k; ++c) sum += pw[v * k + c];
      if (!(sum > 0))
        return Invalid(
            absl::StrFormat("%s: vertex %d (mesh vertex %d) has no weight (weights "
                            "sum to 0)",
                            where, v, base + v));
    }
    joints.insert(joints.end(), pj.begin(), pj.end());
    for (double w : pw) weights.push_back(static_cast<float>(w));

    // Morph targets: the node's mesh's targets become rig targets (once per node), each with
    // this primitive's deltas at its vertices (taken through the skin's offset like them).
    if (!prim.targets.empty()) {
      const tinygltf::Mesh& gmesh = model.meshes[item.mesh];
      const int count = static_cast<int>(prim.targets.size());
      auto found = first_target_of_node.find(item.node);
      if (found == first_target_of_node.end()) {
        found = first_target_of_node.emplace(item.node, static_cast<int>(targets.size())).first;
        const tinygltf::Node& node = model.nodes[item.node];
        const std::vector<double>& defaults =
            static_cast<int>(node.weights.size()) == count ? node.weights : gmesh.weights;
        // The names: the mesh's extras.targetNames (three.js and Blender's convention), else a
        // primitive's (UniVRM writes VRM 0.x avatars' blend shape names there).
        auto names_in = [](const tinygltf::Value& extras) -> const tinygltf::Value* {
          if (!extras.IsObject() || !extras.Get("targetNames").IsArray()) return nullptr;
          return &extras.Get("targetNames");
        };
        const tinygltf::Value* names_at = names_in(gmesh.extras);
        for (size_t q = 0; names_at == nullptr && q < gmesh.primitives.size(); ++q)
          names_at = names_in(gmesh.primitives[q].extras);
        const tinygltf::Value no_names;
        const tinygltf::Value& names = names_at != nullptr ? *names_at : no_names;
        for (int t = 0; t < count; ++t) {
          MorphTarget target;
          if (names.IsArray() && t < static_cast<int>(names.ArrayLen()) &&
              names.Get(t).IsString()) {
            target.name = names.Get(t).Get<std::string>();
          } else {
            target.name = absl::StrFormat("target%d", t);
          }
          target.default_weight = static_cast<int>(defaults.size()) == count ? defaults[t] : 0.0;
          targets.push_back(std::move(target));
          target_nodes.push_back(item.node);
        }
      }  // else: the same count as the node's first primitive (CheckSupportedFeatures)
      const Eigen::Matrix3d linear = skin.offset.linear();
      for (int t = 0; t < count; ++t) {
        TargetPiece piece;
        piece.target = found->second + t;
        piece.base = base;
        for (const auto& [key, transform] :
             {std::pair<const char*, const Eigen::Matrix3d*>{"POSITION", &linear},
              {"NORMAL", &normal_matrix}}) {
          auto it = prim.targets[t].find(key);
          if (it == prim.targets[t].end()) continue;
          const std::string what = absl::StrFormat("%s.targets[%d].%s", where, t, key);
          const Components allowed = !quantized     ? Components::kFloat
                                     : key[0] == 'P' ? Components::kQuantizedTargetPosition
                                                     : Components::kQuantizedNormal;
          RETURN_IF_ERROR(same_count(it->second, absl::StrFormat("targets[%d].", t) + key));
          ASSIGN_OR_RETURN(Decoded d, ReadAccessor(model, it->second, TINYGLTF_TYPE_VEC3, allowed, what));
          std::vector<double>& out = key[0] == 'P' ? piece.dv : piece.dn;
          out.resize(3 * nv);
          for (size_t v = 0; v < nv; ++v) {
            const Eigen::Vector3d delta =
                *transform * Eigen::Vector3d(d.data[3 * v], d.data[3 * v + 1], d.data[3 * v + 2]);
            out[3 * v] = delta.x(), out[3 * v + 1] = delta.y(), out[3 * v + 2] = delta.z();
          }
        }
        pieces.push_back(std::move(piece));
      }
    }

    RETURN_IF_ERROR(add_triangles(prim, where, nv, base));
    source.count = nv;
    sources.push_back(std::move(source));
  }

  const int nv = static_cast<int>(V.size() / 3);
  // The rig's morph targets: zero deltas but where a piece says otherwise; names prefixed by
  // their node's when several nodes have targets.
  const bool prefix = first_target_of_node.size() > 1;
  for (size_t t = 0; t < targets.size(); ++t) {
    targets[t].dV = RowMatrixX3d::Zero(nv, 3);
    targets[t].dN.resize(0, 3);
    if (prefix) {
      const std::string& node_name = model.nodes[target_nodes[t]].name;
      targets[t].name = absl::StrCat(
          node_name.empty() ? absl::StrFormat("node%d", target_nodes[t]) : node_name, "/",
          targets[t].name);
    }
  }
  for (const TargetPiece& piece : pieces) {
    MorphTarget& target = targets[piece.target];
    for (size_t i = 0; i < piece.dv.size(); ++i) target.dV.data()[3 * piece.base + i] = piece.dv[i];
    if (!piece.dn.empty() && all_normals) {
      if (target.dN.rows() == 0) target.dN = RowMatrixX3d::Zero(nv, 3);
      for (size_t i = 0; i < piece.dn.size(); ++i) target.dN.data()[3 * piece.base + i] = piece.dn[i];
    }
  }
  character->morph_targets = std::move(targets);
  character->morph_target_node = std::move(target_nodes);
  Mesh& mesh = character->mesh;
  mesh.V = Eigen::Map<const RowMatrixX3d>(V.data(), nv, 3);
  mesh.F = Eigen::Map<const RowMatrixX3i>(F.data(), static_cast<int>(F.size() / 3), 3);
  if (all_normals)
    mesh.N = Eigen::Map<const RowMatrixX3d>(N.data(), nv, 3);
  else
    mesh.N.resize(0, 3);
  SparseWeights& W = character->weights;
  W.joints = Eigen::Map<const RowMatrixXi>(joints.data(), nv, k);
  W.weights = Eigen::Map<const RowMatrixXf>(weights.data(), nv, k);
  NormalizeRows(&W);
  return ValidateMesh(mesh);
}

// A channel's sampler, its interpolation (LINEAR when not given) and its input times (strictly
// increasing); INVALID_ARGUMENT naming what is wrong.
struct SamplerKeys {
  const tinygltf::AnimationSampler* sampler = nullptr;
  std::string where;  // "animations[a].samplers[s]"
  Interpolation interpolation = Interpolation::kLinear;
  int keys_per_time = 1;  // 3 for CUBICSPLINE (in-tangent, value, out-tangent)
  std::vector<double> times;
};

absl::StatusOr<SamplerKeys> ReadSamplerKeys(const tinygltf::Model& model,
                                            const tinygltf::Animation& in,
                                            const tinygltf::AnimationChannel& ch, size_t a,
                                            const std::string& channel_where) {
  if (ch.sampler < 0 || static_cast<size_t>(ch.sampler) >= in.samplers.size())
    return Invalid(absl::StrFormat("%s: sampler %d is out of range (%d samplers)", channel_where,
                                   ch.sampler, in.samplers.size()));
  SamplerKeys keys;
  keys.sampler = &in.samplers[ch.sampler];
  keys.where = absl::StrFormat("animations[%d].samplers[%d]", a, ch.sampler);
  const std::string& interpolation = keys.sampler->interpolation;
  if (interpolation == "LINEAR" || interpolation.empty()) {
    keys.interpolation = Interpolation::kLinear;
  } else if (interpolation == "STEP") {
    keys.interpolation = Interpolation::kStep;
  } else if (interpolation == "CUBICSPLINE") {
    keys.interpolation = Interpolation::kCubicSpline;
    keys.keys_per_time = 3;
  } else {
    return Invalid(
        absl::StrFormat("%s: unknown interpolation \"%s\"", keys.where, interpolation));
  }
  ASSIGN_OR_RETURN(Decoded input, ReadAccessor(model, keys.sampler->input, TINYGLTF_TYPE_SCALAR,
                                               Components::kFloat, keys.where + ".input"));
  keys.times = std::move(input.data);
  for (size_t i = 1; i < keys.times.size(); ++i) {
    if (!(keys.times[i] > keys.times[i - 1]))
      return Invalid(absl::StrFormat(
          "accessors[%d] (%s.input): time %d (%g) is not greater than time %d (%g)",
          keys.sampler->input, keys.where, i, keys.times[i], i - 1, keys.times[i - 1]));
  }
  if (keys.times.empty()) return Invalid(keys.where + ".input has no times");
  return keys;
}

// A "weights" channel: the keys of the morph weights of the node's targets (ignored when the
// node has none: such a channel animates nothing).
absl::Status ReadMorphWeightChannel(const tinygltf::Model& model, const tinygltf::Animation& in,
                                    const tinygltf::AnimationChannel& ch, size_t a,
                                    const GltfCharacter& character, Animation* out, bool* any) {
  const auto& nodes = character.morph_target_node;
  const auto first = std::find(nodes.begin(), nodes.end(), ch.target_node);
  if (first == nodes.end()) return absl::OkStatus();
  MorphWeightChannel channel;
  channel.first_target = static_cast<int>(first - nodes.begin());
  channel.count = static_cast<int>(std::count(nodes.begin(), nodes.end(), ch.target_node));
  ASSIGN_OR_RETURN(SamplerKeys keys,
                   ReadSamplerKeys(model, in, ch, a, absl::StrFormat("animations[%d]", a)));
  channel.interpolation = keys.interpolation;
  ASSIGN_OR_RETURN(Decoded output,
                   ReadAccessor(model, keys.sampler->output, TINYGLTF_TYPE_SCALAR,
                                Components::kFloatOrNormalized, keys.where + ".output"));
  if (output.count != keys.times.size() * keys.keys_per_time * channel.count)
    return Invalid(absl::StrFormat(
        "%s: output has %d weights for %d input times and %d morph targets", keys.where,
        output.count, keys.times.size(), channel.count));
  channel.times = std::move(keys.times);
  channel.values = std::move(output.data);
  out->start = *any ? std::min(out->start, channel.times.front()) : channel.times.front();
  out->end = *any ? std::max(out->end, channel.times.back()) : channel.times.back();
  *any = true;
  out->morph_channels.push_back(std::move(channel));
  return absl::OkStatus();
}

// The KHR_animation_pointer pointer that a channel's node and path were read from
// (PatchForParser), else empty.
std::string AnimationPointerOf(const tinygltf::AnimationChannel& ch) {
  const auto ext = ch.target_extensions.find(gltf_internal::kAnimationPointerExtension);
  if (ext == ch.target_extensions.end() || !ext->second.IsObject() || !ext->second.Has("pointer")) return "";
  const tinygltf::Value& pointer = ext->second.Get("pointer");
  if (!pointer.IsString()) return "";
  const std::optional<gltf_internal::NodePointer> node = gltf_internal::ParseNodePointer(pointer.Get<std::string>());
  return node && node->node == ch.target_node && node->path == ch.target_path ? pointer.Get<std::string>() : "";
}

absl::Status ReadAnimations(const tinygltf::Model& model, const SceneSelection& selection,
                            const std::vector<int>& joint_of_node, GltfCharacter* character) {
  for (size_t a = 0; a < model.animations.size(); ++a) {
    if (!selection.animation[a]) continue;  // it moves another scene's nodes only
    const tinygltf::Animation& in = model.animations[a];
    Animation out;
    out.name = in.name;
    bool any = false;
    std::map<std::pair<int, std::string>, size_t> channel_of_target;  // (node, path) → channel
    for (size_t c = 0; c < in.channels.size(); ++c) {
      const tinygltf::AnimationChannel& ch = in.channels[c];
      const std::string where = absl::StrFormat("animations[%d].channels[%d]", a, c);
      // A channel without a node (−1) is an extension's; one past the nodes, or with a path the
      // spec does not have, animated nothing and was ignored. "pointer" is KHR_animation_pointer's
      // of materials, cameras and the like, nothing of a rig (one of a node's transform or
      // weights came with that node and path: PatchForParser).
      if (ch.target_node >= static_cast<int>(model.nodes.size())) {
        const std::string pointer = AnimationPointerOf(ch);
        if (!pointer.empty()) {
          return Invalid(absl::StrFormat("%s.target.extensions.%s.pointer: \"%s\" is out of range (%d nodes)", where,
                                         gltf_internal::kAnimationPointerExtension, pointer, model.nodes.size()));
        }
        return Invalid(absl::StrFormat("%s.target.node: node %d is out of range (%d nodes)", where, ch.target_node,
                                       model.nodes.size()));
      }
      if (ch.target_path != "translation" && ch.target_path != "rotation" && ch.target_path != "scale" &&
          ch.target_path != "weights" && ch.target_path != "pointer") {
        return Invalid(absl::StrFormat("%s.target.path: \"%s\" is not translation, rotation, scale or weights", where,
                                       ch.target_path));
      }
      if (ch.target_node >= 0) {
        const auto [first, added] = channel_of_target.emplace(std::pair(ch.target_node, ch.target_path), c);
        if (!added) {
          return Invalid(absl::StrFormat("%s.target: node %d's %s is animated by channels[%d] too", where,
                                         ch.target_node, ch.target_path, first->second));
        }
      }
      if (ch.target_path == "weights") {
        RETURN_IF_ERROR(ReadMorphWeightChannel(model, in, ch, a, *character, &out, &any));
        continue;
      }
      if (ch.target_node < 0 || static_cast<size_t>(ch.target_node) >= joint_of_node.size() ||
          joint_of_node[ch.target_node] < 0)
        continue;  // not a skeleton joint
      AnimationChannel channel;
      channel.joint = joint_of_node[ch.target_node];
      int width = 3;
      if (ch.target_path == "translation") {
        channel.path = AnimationPath::kTranslation;
      } else if (ch.target_path == "rotation") {
        channel.path = AnimationPath::kRotation;
        width = 4;
      } else if (ch.target_path == "scale") {
        channel.path = AnimationPath::kScale;
      } else {
        continue;  // KHR_animation_pointer's "pointer"
      }
      ASSIGN_OR_RETURN(SamplerKeys keys, ReadSamplerKeys(model, in, ch, a, where));
      channel.interpolation = keys.interpolation;
      ASSIGN_OR_RETURN(
          Decoded output,
          ReadAccessor(model, keys.sampler->output,
                       width == 4 ? TINYGLTF_TYPE_VEC4 : TINYGLTF_TYPE_VEC3,
                       width == 4 ? Components::kFloatOrNormalized : Components::kFloat,
                       keys.where + ".output"));
      if (output.count != keys.times.size() * keys.keys_per_time)
        return Invalid(absl::StrFormat(
            "%s: output has %d values for %d input times (expected %d for %s)", keys.where,
            output.count, keys.times.size(), keys.times.size() * keys.keys_per_time,
            keys.sampler->interpolation));
      if (width == 4) {
        // Rotation keys are unit quaternions (the spec); a zero one has no direction to normalize
        // to and was read as the identity. (A CUBICSPLINE key's tangents may be anything.)
        for (size_t k = 0; k < output.count; ++k) {
          if (keys.keys_per_time == 3 && k % 3 != 1) continue;
          const double norm = std::sqrt(output.at(k, 0) * output.at(k, 0) + output.at(k, 1) * output.at(k, 1) +
                                        output.at(k, 2) * output.at(k, 2) + output.at(k, 3) * output.at(k, 3));
          if (!(norm >= 1e-6))
            return Invalid(absl::StrFormat("accessors[%d] (%s.output): rotation key %d (%g, %g, %g, %g) is not a "
                                           "unit quaternion",
                                           keys.sampler->output, keys.where, keys.keys_per_time == 3 ? k / 3 : k,
                                           output.at(k, 0), output.at(k, 1), output.at(k, 2), output.at(k, 3)));
        }
      }
      channel.times = std::move(keys.times);
      channel.values = std::move(output.data);
      const double t0 = channel.times.front(), t1 = channel.times.back();
      out.start = any ? std::min(out.start, t0) : t0;
      out.end = any ? std::max(out.end, t1) : t1;
      any = true;
      out.channels.push_back(std::move(channel));
    }
    character->animations.push_back(std::move(out));
  }
  return absl::OkStatus();
}

}  // namespace

int GltfCharacter::NumSkins() const {
  std::set<int> skins;
  for (const Part& p : parts) {
    if (p.skin >= 0) skins.insert(p.skin);
  }
  return static_cast<int>(skins.size());
}

std::vector<MeshPart> GltfCharacter::MeshParts() const {
  std::vector<MeshPart> out;
  for (const Part& p : parts) {
    out.push_back(MeshPart{p.name.empty() ? absl::StrFormat("node%d", p.node) : p.name,
                           p.first_vertex, p.num_vertices});
  }
  return out;
}

namespace {

// KHR_mesh_quantization leaves a skinned mesh in its integer grid: gltfpack folds the
// dequantization into the inverse bind matrices, so the rig's bind space (its stored vertices,
// GetRig's mesh, the bakes' grid) would be that grid. When every skin joint's skinning transform
// in the rest pose is one similarity M (the mesh bound in its rest pose, as exporters bind), the
// bind space becomes the rest pose's world space: V ← M·V, normals and morph deltas rotated
// (position deltas scaled too), the skin joints' inverse binds ← IB·M⁻¹; the appended ancestors'
// (inverse rest world) already map world space. Posing is unchanged: T_j·v = (T_j·M⁻¹)·(M·v).
// Otherwise (bound away from the rest pose, or M not a similarity) the grid stays.
void BindQuantizedMeshInRestSpace(GltfCharacter* c) {
  if (c->mesh.V.rows() == 0 || c->num_skin_joints == 0) return;
  absl::StatusOr<std::vector<int>> order = TopologicalOrder(c->skeleton);
  if (!order.ok()) return;
  absl::StatusOr<std::vector<Eigen::Affine3d>> T = SkinningTransforms(c->skeleton, *order, RestPose(c->skeleton));
  if (!T.ok()) return;
  const Eigen::Affine3d M = (*T)[0];
  // Every skin joint carries the mesh's bounding box to the same place, within 1e-5 of its diagonal.
  const Eigen::Vector3d lo = c->mesh.V.colwise().minCoeff(), hi = c->mesh.V.colwise().maxCoeff();
  std::vector<Eigen::Vector3d> corners;
  for (int i = 0; i < 8; ++i)
    corners.emplace_back((i & 1) ? hi.x() : lo.x(), (i & 2) ? hi.y() : lo.y(), (i & 4) ? hi.z() : lo.z());
  const double diagonal = (M * hi - M * lo).norm();
  if (!(diagonal > 0)) return;
  for (int j = 1; j < c->num_skin_joints; ++j)
    for (const Eigen::Vector3d& x : corners)
      if (((*T)[j] * x - M * x).norm() > 1e-5 * diagonal) return;
  // M's linear part is s·R, R a rotation.
  const Eigen::Matrix3d A = M.linear();
  const double det = A.determinant();
  if (!(det > 0)) return;
  const double scale = std::cbrt(det);
  const Eigen::Matrix3d R = A / scale;
  if (!(R.transpose() * R).isApprox(Eigen::Matrix3d::Identity(), 1e-5)) return;
  if ((M.matrix() - Eigen::Matrix4d::Identity()).norm() <= 1e-12) return;  // already world space

  c->mesh.V = (c->mesh.V * A.transpose()).rowwise() + M.translation().transpose();
  if (c->mesh.N.rows() > 0) c->mesh.N = c->mesh.N * R.transpose();
  for (MorphTarget& t : c->morph_targets) {
    t.dV = t.dV * A.transpose();
    if (t.dN.rows() > 0) t.dN = t.dN * R.transpose();
  }
  const Eigen::Affine3d inverse = M.inverse();
  for (int j = 0; j < c->num_skin_joints; ++j) c->skeleton.joints[j].inverse_bind = c->skeleton.joints[j].inverse_bind * inverse;
}

// The sizes the file's accessors declare (meshes, animations), against `limits`.
absl::Status CheckDeclaredSize(const tinygltf::Model& model, const GltfSizeLimits& limits) {
  // In doubles: the counts come from the file and their sums must not wrap around.
  double vertices = 0, triangles = 0, targets = 0, deltas = 0;
  auto count = [&](int accessor) -> double {
    return accessor >= 0 && static_cast<size_t>(accessor) < model.accessors.size()
               ? static_cast<double>(model.accessors[accessor].count)
               : 0.0;
  };
  // Each mesh as often as nodes instance it (as it is read), and once when none does (its
  // compressed data is decoded all the same).
  std::vector<double> instances(model.meshes.size(), 0);
  for (const tinygltf::Node& node : model.nodes)
    if (node.mesh >= 0 && static_cast<size_t>(node.mesh) < model.meshes.size()) ++instances[node.mesh];
  // Primitives over the same vertex accessors count their vertices once (the reader shares them);
  // a mesh's targets are a node's, counted once.
  for (size_t m = 0; m < model.meshes.size(); ++m) {
    const double times = std::max(1.0, instances[m]);
    std::set<VertexAccessors> counted;
    double mesh_targets = 0;
    for (const tinygltf::Primitive& p : model.meshes[m].primitives) {
      auto position = p.attributes.find("POSITION");
      const double n = position == p.attributes.end() ? 0.0 : count(position->second);
      triangles += times * std::floor((p.indices >= 0 ? count(p.indices) : n) / 3);
      mesh_targets = std::max(mesh_targets, static_cast<double>(p.targets.size()));
      if (!counted.insert(VertexAccessorsOf(p)).second) continue;
      vertices += times * n;
      deltas += times * static_cast<double>(p.targets.size()) * n;
    }
    targets += times * mesh_targets;
  }
  double animation_values = 0;
  for (const tinygltf::Animation& animation : model.animations) {
    for (const tinygltf::AnimationChannel& channel : animation.channels) {
      if (channel.sampler < 0 || static_cast<size_t>(channel.sampler) >= animation.samplers.size()) continue;
      const tinygltf::AnimationSampler& sampler = animation.samplers[channel.sampler];
      const double outputs = count(sampler.output);
      if (outputs > 0) animation_values += outputs * NumComponents(model.accessors[sampler.output].type);
      animation_values += count(sampler.input);
    }
  }
  std::set<int> joint_nodes;
  for (const tinygltf::Skin& skin : model.skins) joint_nodes.insert(skin.joints.begin(), skin.joints.end());
  // "the <what> declare <value> <noun>, more than the limit of <limit>"
  auto check = [](double value, int64_t limit, const char* what, const char* noun) -> absl::Status {
    if (limit <= 0 || value <= static_cast<double>(limit)) return absl::OkStatus();
    return absl::ResourceExhaustedError(
        absl::StrFormat("the %s declare %.0f %s, more than the limit of %d", what, value, noun, limit));
  };
  RETURN_IF_ERROR(check(static_cast<double>(joint_nodes.size()), limits.max_joints, "skins",
                        "joints (distinct nodes over every skin)"));
  RETURN_IF_ERROR(check(vertices, limits.max_vertices, "meshes", "vertices (POSITION elements over every mesh node)"));
  RETURN_IF_ERROR(check(triangles, limits.max_triangles, "meshes", "triangles (over every mesh node)"));
  RETURN_IF_ERROR(
      check(targets, limits.max_morph_targets, "meshes", "morph targets (over every mesh node and primitive)"));
  RETURN_IF_ERROR(check(deltas, limits.max_morph_deltas, "meshes",
                        "morph target vertices (each target's vertices, over every mesh node and primitive)"));
  return check(animation_values, limits.max_animation_values, "animations",
               "key times and values (over every channel)");
}

// The character of a parsed model; `label` prefixes every message, `stem` names a character
// whose file names none.
absl::StatusOr<GltfCharacter> ReadCharacter(tinygltf::Model model, const std::string& label,
                                            const std::string& stem, const GltfSizeLimits& limits,
                                            const GltfReadOptions& options) {
  auto fail = [&](const absl::Status& s) {
    return absl::Status(s.code(), absl::StrFormat("%s: %s", label, s.message()));
  };
  GltfCharacter character;
  absl::StatusOr<SceneSelection> selection = SelectScene(model, options);
  if (!selection.ok()) return fail(selection.status());
  character.scene = selection->read;
  const NodeTree tree(model, selection->skin, selection->animation);
  std::set<int> prop_joints, anchors;
  if (absl::Status s = CheckSupportedFeatures(model, *selection, tree, options, &character.skipped_static_meshes,
                                              &prop_joints, &anchors);
      !s.ok())
    return fail(s);
  if (absl::Status s = CheckDeclaredSize(model, limits); !s.ok()) return fail(s);
  // One budget for both codecs: Draco gets what the meshopt views leave.
  const double decompress_limit = limits.max_decompressed_bytes > 0
                                      ? static_cast<double>(limits.max_decompressed_bytes)
                                      : std::numeric_limits<double>::infinity();
  double meshopt_bytes = 0;
  if (absl::Status s = gltf_internal::DecodeMeshoptViews(&model, decompress_limit, &meshopt_bytes); !s.ok())
    return fail(s);
  if (absl::Status s = gltf_internal::DecodeDracoPrimitives(&model, decompress_limit - meshopt_bytes); !s.ok())
    return fail(s);
  if (absl::Status s = CheckAllAccessors(model); !s.ok()) return fail(s);
  std::vector<int> joint_of_node;
  std::vector<SkinMap> skins;
  if (absl::Status s = ReadSkeleton(model, *selection, prop_joints, anchors, &character, &joint_of_node, &skins);
      !s.ok())
    return fail(s);
  if (absl::Status s = ReadMesh(model, *selection, tree, skins, joint_of_node, &character); !s.ok())
    return fail(s);
  if (UsesMeshQuantization(model)) BindQuantizedMeshInRestSpace(&character);
  if (absl::Status s = ReadAnimations(model, *selection, joint_of_node, &character); !s.ok()) return fail(s);
  if (character.name.empty()) character.name = stem;
  return character;
}

}  // namespace

absl::StatusOr<GltfCharacter> ReadGltf(const std::string& path, const GltfReadOptions& options) {
  ASSIGN_OR_RETURN(tinygltf::Model model, LoadModel(path));
  return ReadCharacter(std::move(model), path, std::filesystem::path(path).stem().string(), {}, options);
}

absl::StatusOr<GltfCharacter> ReadGltfBytes(absl::string_view bytes, const std::string& label,
                                            const GltfSizeLimits& limits, const GltfReadOptions& options) {
  ASSIGN_OR_RETURN(tinygltf::Model model,
                   LoadModelFromBytes(std::vector<unsigned char>(bytes.begin(), bytes.end()), label, std::nullopt, limits));
  return ReadCharacter(std::move(model), label, "character", limits, options);
}

}  // namespace skinning
