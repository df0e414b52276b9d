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
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "core/rig/pose.h"
#include "core/util/status_macros.h"

namespace skinning {
namespace {

// ---------------------------------------------------------------------------------------------
// Small helpers.

absl::Status Invalid(const std::string& message) { return absl::InvalidArgumentError(message); }

// Images are never decoded: textures are irrelevant to skinning, and a decoder is attack surface.
bool SkipImage(tinygltf::Image* /*image*/, const int /*image_idx*/, std::string* /*err*/,
               std::string* /*warn*/, int /*req_width*/, int /*req_height*/,
               const unsigned char* /*bytes*/, int /*size*/, void* /*user_data*/) {
  return true;
}

int ComponentSize(int component_type) {
  switch (component_type) {
    case TINYGLTF_COMPONENT_TYPE_BYTE:
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE:
      return 1;
    case TINYGLTF_COMPONENT_TYPE_SHORT:
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT:
      return 2;
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT:
    case TINYGLTF_COMPONENT_TYPE_FLOAT:
      return 4;
    default:
      return 0;  // INT and DOUBLE are not glTF 2.0 accessor component types.
  }
}

const char* ComponentTypeName(int component_type) {
  switch (component_type) {
    case TINYGLTF_COMPONENT_TYPE_BYTE:
      return "BYTE";
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE:
      return "UNSIGNED_BYTE";
    case TINYGLTF_COMPONENT_TYPE_SHORT:
      return "SHORT";
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT:
      return "UNSIGNED_SHORT";
    case TINYGLTF_COMPONENT_TYPE_INT:
      return "INT";
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT:
      return "UNSIGNED_INT";
    case TINYGLTF_COMPONENT_TYPE_FLOAT:
      return "FLOAT";
    case TINYGLTF_COMPONENT_TYPE_DOUBLE:
      return "DOUBLE";
    default:
      return "unknown component type";
  }
}

int NumComponents(int type) {
  switch (type) {
    case TINYGLTF_TYPE_SCALAR:
      return 1;
    case TINYGLTF_TYPE_VEC2:
      return 2;
    case TINYGLTF_TYPE_VEC3:
      return 3;
    case TINYGLTF_TYPE_VEC4:
      return 4;
    case TINYGLTF_TYPE_MAT2:
      return 4;
    case TINYGLTF_TYPE_MAT3:
      return 9;
    case TINYGLTF_TYPE_MAT4:
      return 16;
    default:
      return 0;
  }
}

const char* TypeName(int type) {
  switch (type) {
    case TINYGLTF_TYPE_SCALAR:
      return "SCALAR";
    case TINYGLTF_TYPE_VEC2:
      return "VEC2";
    case TINYGLTF_TYPE_VEC3:
      return "VEC3";
    case TINYGLTF_TYPE_VEC4:
      return "VEC4";
    case TINYGLTF_TYPE_MAT2:
      return "MAT2";
    case TINYGLTF_TYPE_MAT3:
      return "MAT3";
    case TINYGLTF_TYPE_MAT4:
      return "MAT4";
    default:
      return "unknown type";
  }
}

// Which component types an accessor may use in a given role.
enum class Components {
  kFloat,                      // FLOAT only (positions, normals, times, matrices, T/S keys)
  kFloatOrNormalizedUnsigned,  // FLOAT, normalized UNSIGNED_BYTE/SHORT (WEIGHTS_n)
  kFloatOrNormalized,          // FLOAT, normalized (UNSIGNED_)BYTE/SHORT (rotation keys)
  kJointIndices,               // UNSIGNED_BYTE/SHORT, not normalized (JOINTS_n)
  kVertexIndices,              // UNSIGNED_BYTE/SHORT/INT, not normalized (indices)
};

bool ComponentAllowed(Components allowed, int component_type, bool normalized) {
  const bool is_float = component_type == TINYGLTF_COMPONENT_TYPE_FLOAT;
  const bool is_unsigned_small = component_type == TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE ||
                                 component_type == TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT;
  const bool is_signed_small = component_type == TINYGLTF_COMPONENT_TYPE_BYTE ||
                               component_type == TINYGLTF_COMPONENT_TYPE_SHORT;
  switch (allowed) {
    case Components::kFloat:
      return is_float && !normalized;
    case Components::kFloatOrNormalizedUnsigned:
      return (is_float && !normalized) || (is_unsigned_small && normalized);
    case Components::kFloatOrNormalized:
      return (is_float && !normalized) || ((is_unsigned_small || is_signed_small) && normalized);
    case Components::kJointIndices:
      return is_unsigned_small && !normalized;
    case Components::kVertexIndices:
      return (is_unsigned_small || component_type == TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT) &&
             !normalized;
  }
  return false;
}

const char* AllowedText(Components allowed) {
  switch (allowed) {
    case Components::kFloat:
      return "FLOAT";
    case Components::kFloatOrNormalizedUnsigned:
      return "FLOAT or normalized UNSIGNED_BYTE/UNSIGNED_SHORT";
    case Components::kFloatOrNormalized:
      return "FLOAT or normalized BYTE/UNSIGNED_BYTE/SHORT/UNSIGNED_SHORT";
    case Components::kJointIndices:
      return "non-normalized UNSIGNED_BYTE/UNSIGNED_SHORT";
    case Components::kVertexIndices:
      return "non-normalized UNSIGNED_BYTE/UNSIGNED_SHORT/UNSIGNED_INT";
  }
  return "";
}

// An accessor's elements decoded to doubles (integers exactly, normalized integers to [0, 1] or
// [-1, 1]), count × components numbers, element-major.
struct Decoded {
  std::vector<double> data;
  size_t count = 0;
  int components = 0;
  double at(size_t i, int c) const { return data[i * components + c]; }
};

// Bytes of one element, with the column padding the spec requires for byte/short matrices.
size_t ElementSize(int component_type, int type) {
  const size_t csize = ComponentSize(component_type);
  if (type == TINYGLTF_TYPE_MAT2 && csize == 1) return 8;
  if (type == TINYGLTF_TYPE_MAT3 && csize == 1) return 12;
  if (type == TINYGLTF_TYPE_MAT3 && csize == 2) return 24;
  return csize * NumComponents(type);
}

absl::Status CheckBufferView(const tinygltf::Model& model, int view) {
  const tinygltf::BufferView& bv = model.bufferViews[view];
  if (bv.buffer < 0 || static_cast<size_t>(bv.buffer) >= model.buffers.size())
    return Invalid(absl::StrFormat("bufferViews[%d]: buffer %d is out of range (%d buffers)", view,
                                   bv.buffer, model.buffers.size()));
  const size_t size = model.buffers[bv.buffer].data.size();
  if (bv.byteOffset > size || bv.byteLength > size - bv.byteOffset)
    return Invalid(absl::StrFormat("bufferViews[%d]: %d bytes at offset %d but buffers[%d] has %d",
                                   view, bv.byteLength, bv.byteOffset, bv.buffer, size));
  if (bv.byteStride != 0 && (bv.byteStride < 4 || bv.byteStride > 252 || bv.byteStride % 4 != 0))
    return Invalid(
        absl::StrFormat("bufferViews[%d]: byteStride %d is invalid (a multiple of 4 in [4, 252])",
                        view, bv.byteStride));
  return absl::OkStatus();
}

// Where a (non-sparse) accessor's elements live: null `base` for an accessor without a buffer
// view (all zeros).
struct Layout {
  const unsigned char* base = nullptr;
  size_t stride = 0;
};

// Checks accessors[index]'s componentType, type, count, byteOffset and byteStride against its
// buffer view and buffer.
absl::StatusOr<Layout> CheckAccessorLayout(const tinygltf::Model& model, int index) {
  const tinygltf::Accessor& a = model.accessors[index];
  if (ComponentSize(a.componentType) == 0)
    return Invalid(
        absl::StrFormat("accessors[%d]: componentType %d (%s) is not a glTF 2.0 "
                        "accessor component type",
                        index, a.componentType, ComponentTypeName(a.componentType)));
  if (NumComponents(a.type) == 0)
    return Invalid(absl::StrFormat("accessors[%d]: unknown type %d", index, a.type));
  if (a.count == 0) return Invalid(absl::StrFormat("accessors[%d]: count is 0", index));
  const size_t elem = ElementSize(a.componentType, a.type);
  if (a.bufferView < 0) return Layout{};
  if (static_cast<size_t>(a.bufferView) >= model.bufferViews.size())
    return Invalid(
        absl::StrFormat("accessors[%d]: bufferView %d is out of range (%d "
                        "bufferViews)",
                        index, a.bufferView, model.bufferViews.size()));
  RETURN_IF_ERROR(CheckBufferView(model, a.bufferView));
  const tinygltf::BufferView& bv = model.bufferViews[a.bufferView];
  const size_t stride = bv.byteStride == 0 ? elem : bv.byteStride;
  if (stride < elem)
    return Invalid(
        absl::StrFormat("accessors[%d]: byteStride %d of bufferViews[%d] is smaller "
                        "than the %d-byte element",
                        index, stride, a.bufferView, elem));
  // Every element needs at least one byte, so a count above byteLength cannot fit; below it the
  // products cannot overflow (byteLength is bounded by a buffer held in memory).
  if (a.count > bv.byteLength || a.byteOffset > bv.byteLength)
    return Invalid(absl::StrFormat(
        "accessors[%d]: %d elements of %d bytes at offset %d do not fit in bufferViews[%d] (%d "
        "bytes)",
        index, a.count, elem, a.byteOffset, a.bufferView, bv.byteLength));
  const size_t needed = (a.count - 1) * stride + elem;
  if (needed > bv.byteLength - a.byteOffset)
    return Invalid(
        absl::StrFormat("accessors[%d]: %d bytes needed at offset %d but "
                        "bufferViews[%d] has %d",
                        index, needed, a.byteOffset, a.bufferView, bv.byteLength));
  return Layout{model.buffers[bv.buffer].data.data() + bv.byteOffset + a.byteOffset, stride};
}

// Every buffer view and every non-sparse accessor of the file, used or not.
absl::Status CheckAllAccessors(const tinygltf::Model& model) {
  for (size_t v = 0; v < model.bufferViews.size(); ++v)
    RETURN_IF_ERROR(CheckBufferView(model, static_cast<int>(v)));
  for (size_t i = 0; i < model.accessors.size(); ++i) {
    if (model.accessors[i].sparse.isSparse) continue;  // rejected if ever used
    RETURN_IF_ERROR(CheckAccessorLayout(model, static_cast<int>(i)).status());
  }
  return absl::OkStatus();
}

// Largest accessor without a bufferView (all zeros per the spec) that we materialize.
constexpr size_t kMaxZeroAccessorNumbers = size_t{1} << 26;

// Validates accessors[index] for the given role (`type`, `allowed` component types) against its
// buffer view and buffer, then decodes it. `use` says where the accessor is referenced from.
absl::StatusOr<Decoded> ReadAccessor(const tinygltf::Model& model, int index, int type,
                                     Components allowed, const std::string& use) {
  if (index < 0 || static_cast<size_t>(index) >= model.accessors.size())
    return Invalid(absl::StrFormat("%s: accessor %d is out of range (%d accessors)", use, index,
                                   model.accessors.size()));
  const tinygltf::Accessor& a = model.accessors[index];
  const std::string name = absl::StrFormat("accessors[%d] (%s)", index, use);
  if (a.sparse.isSparse) return Invalid(name + ": sparse accessors are not supported");
  if (a.type != type)
    return Invalid(
        absl::StrFormat("%s: type is %s, expected %s", name, TypeName(a.type), TypeName(type)));
  if (!ComponentAllowed(allowed, a.componentType, a.normalized))
    return Invalid(absl::StrFormat("%s: componentType %s%s is not allowed here (expected %s)", name,
                                   a.normalized ? "normalized " : "",
                                   ComponentTypeName(a.componentType), AllowedText(allowed)));
  ASSIGN_OR_RETURN(Layout layout, CheckAccessorLayout(model, index));
  const int csize = ComponentSize(a.componentType);
  const int ncomp = NumComponents(a.type);
  const size_t stride = layout.stride;

  Decoded out;
  out.count = a.count;
  out.components = ncomp;
  if (layout.base == nullptr) {
    // No buffer view and not sparse: the spec says every element is zero.
    if (a.count > kMaxZeroAccessorNumbers / ncomp)
      return Invalid(
          absl::StrFormat("%s: count %d is too large for an accessor without data", name, a.count));
    out.data.assign(a.count * ncomp, 0.0);
    return out;
  }
  const unsigned char* base = layout.base;
  out.data.resize(a.count * ncomp);
  for (size_t i = 0; i < a.count; ++i) {
    const unsigned char* element = base + i * stride;
    for (int c = 0; c < ncomp; ++c) {
      const unsigned char* p = element + static_cast<size_t>(c) * csize;
      double v = 0;
      switch (a.componentType) {
        case TINYGLTF_COMPONENT_TYPE_FLOAT: {
          float f;
          std::memcpy(&f, p, 4);
          if (!std::isfinite(f))
            return Invalid(
                absl::StrFormat("accessors[%d] (%s): element %d component %d is not "
                                "finite",
                                index, use, i, c));
          v = f;
          break;
        }
        case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE: {
          uint8_t u;
          std::memcpy(&u, p, 1);
          v = a.normalized ? u / 255.0 : u;
          break;
        }
        case TINYGLTF_COMPONENT_TYPE_BYTE: {
          int8_t s;
          std::memcpy(&s, p, 1);
          v = a.normalized ? std::max(s / 127.0, -1.0) : s;
          break;
        }
        case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT: {
          uint16_t u;
          std::memcpy(&u, p, 2);
          v = a.normalized ? u / 65535.0 : u;
          break;
        }
        case TINYGLTF_COMPONENT_TYPE_SHORT: {
          int16_t s;
          std::memcpy(&s, p, 2);
          v = a.normalized ? std::max(s / 32767.0, -1.0) : s;
          break;
        }
        case TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT: {
          uint32_t u;
          std::memcpy(&u, p, 4);
          v = u;
          break;
        }
        default:
          return Invalid(name + ": unsupported componentType");
      }
      out.data[i * ncomp + c] = v;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Reading.

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

absl::StatusOr<tinygltf::Model> LoadModel(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrFormat("cannot open \"%s\"", path));
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  if (in.bad()) return absl::DataLossError(absl::StrFormat("error reading \"%s\"", path));
  if (bytes.empty()) return Invalid(absl::StrFormat("%s: the file is empty", path));
  if (bytes.size() > std::numeric_limits<unsigned int>::max())
    return Invalid(absl::StrFormat("%s: files of 4 GiB or more are not supported", path));
  const bool binary = bytes.size() >= 4 && std::memcmp(bytes.data(), "glTF", 4) == 0;
  if (binary) {
    if (absl::Status s = CheckGlbHeader(bytes); !s.ok())
      return Invalid(absl::StrFormat("%s: %s", path, s.message()));
  }
  const std::string base_dir = std::filesystem::path(path).parent_path().string();

  tinygltf::Model model;
  tinygltf::TinyGLTF loader;
  loader.SetImageLoader(&SkipImage, nullptr);
  std::string err, warn;
  bool ok = false;
  try {
    const auto size = static_cast<unsigned int>(bytes.size());
    if (binary) {
      ok = loader.LoadBinaryFromMemory(&model, &err, &warn, bytes.data(), size, base_dir);
    } else {
      ok = loader.LoadASCIIFromString(&model, &err, &warn,
                                      reinterpret_cast<const char*>(bytes.data()), size, base_dir);
    }
  } catch (const std::exception& e) {
    return Invalid(absl::StrFormat("%s: not a valid glTF file: %s", path, e.what()));
  } catch (...) {
    return Invalid(absl::StrFormat("%s: not a valid glTF file", path));
  }
  if (!ok) {
    std::string message(absl::StripAsciiWhitespace(err));
    if (message.empty()) message = "unknown parse error";
    return Invalid(absl::StrFormat("%s: not a valid glTF file: %s", path, message));
  }
  return model;
}

absl::StatusOr<Transform> NodeTransform(const tinygltf::Node& node, int index) {
  Transform t;
  if (!node.matrix.empty()) {
    if (node.matrix.size() != 16)
      return Invalid(absl::StrFormat("nodes[%d].matrix has %d numbers, expected 16", index,
                                     node.matrix.size()));
    Eigen::Affine3d A = Eigen::Affine3d::Identity();
    for (int c = 0; c < 4; ++c)
      for (int r = 0; r < 3; ++r) A.matrix()(r, c) = node.matrix[c * 4 + r];  // column-major
    if (!A.matrix().allFinite())
      return Invalid(absl::StrFormat("nodes[%d].matrix is not finite", index));
    return DecomposeAffine(A);
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
    t.rotation = q.normalized();
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

// Fills skeleton, num_skin_joints and node_of_joint from skins[0] and the node hierarchy.
absl::Status ReadSkeleton(const tinygltf::Model& model, GltfCharacter* character,
                          std::vector<int>* joint_of_node) {
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
  const tinygltf::Skin& skin = model.skins[0];
  if (skin.joints.empty()) return Invalid("skins[0] has no joints");

  joint_of_node->assign(num_nodes, -1);
  std::vector<int>& node_of_joint = character->node_of_joint;
  node_of_joint.clear();
  for (size_t j = 0; j < skin.joints.size(); ++j) {
    const int n = skin.joints[j];
    if (n < 0 || n >= num_nodes)
      return Invalid(absl::StrFormat("skins[0].joints[%d]: node %d is out of range (%d nodes)", j,
                                     n, num_nodes));
    if ((*joint_of_node)[n] != -1)
      return Invalid(absl::StrFormat("skins[0].joints[%d]: node %d is already joint %d", j, n,
                                     (*joint_of_node)[n]));
    (*joint_of_node)[n] = static_cast<int>(j);
    node_of_joint.push_back(n);
  }
  const int num_skin_joints = static_cast<int>(skin.joints.size());
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

  Skeleton& skeleton = character->skeleton;
  skeleton.joints.assign(node_of_joint.size(), Joint());
  for (size_t j = 0; j < node_of_joint.size(); ++j) {
    const int n = node_of_joint[j];
    Joint& joint = skeleton.joints[j];
    joint.name = model.nodes[n].name.empty() ? absl::StrFormat("node%d", n) : model.nodes[n].name;
    joint.parent = parent[n] == -1 ? -1 : (*joint_of_node)[parent[n]];
    ASSIGN_OR_RETURN(joint.rest, NodeTransform(model.nodes[n], n));
    // Non-joint ancestors carry no weights (an "Armature" or "Z_UP" node).
    joint.deforms = static_cast<int>(j) < num_skin_joints;
  }

  if (skin.inverseBindMatrices >= 0) {
    ASSIGN_OR_RETURN(Decoded ibm, ReadAccessor(model, skin.inverseBindMatrices, TINYGLTF_TYPE_MAT4,
                                               Components::kFloat, "skins[0].inverseBindMatrices"));
    if (ibm.count < static_cast<size_t>(num_skin_joints))
      return Invalid(
          absl::StrFormat("accessors[%d] (skins[0].inverseBindMatrices): %d matrices for %d joints",
                          skin.inverseBindMatrices, ibm.count, num_skin_joints));
    for (int j = 0; j < num_skin_joints; ++j) {
      Eigen::Affine3d A = Eigen::Affine3d::Identity();
      for (int c = 0; c < 4; ++c)
        for (int r = 0; r < 3; ++r) A.matrix()(r, c) = ibm.at(j, c * 4 + r);  // column-major
      skeleton.joints[j].inverse_bind = A;
    }
  }
  character->num_skin_joints = num_skin_joints;

  absl::StatusOr<std::vector<int>> order = TopologicalOrder(skeleton);
  if (!order.ok()) return Invalid("skeleton: " + std::string(order.status().message()));
  if (node_of_joint.size() > static_cast<size_t>(num_skin_joints)) {
    std::vector<Transform> rest;
    for (const Joint& joint : skeleton.joints) rest.push_back(joint.rest);
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

absl::Status ReadMesh(const tinygltf::Model& model, GltfCharacter* character) {
  struct Item {
    int node, mesh, primitive;
  };
  std::vector<Item> items;
  for (size_t n = 0; n < model.nodes.size(); ++n) {
    const tinygltf::Node& node = model.nodes[n];
    if (node.skin != 0 || node.mesh < 0) continue;
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
      items.push_back({static_cast<int>(n), node.mesh, static_cast<int>(p)});
    }
  }
  if (items.empty()) return Invalid("no node with a triangle mesh uses skins[0]");

  auto attribute = [&](const Item& item, const char* key) {
    const auto& attrs = model.meshes[item.mesh].primitives[item.primitive].attributes;
    auto it = attrs.find(key);
    return it == attrs.end() ? -1 : it->second;
  };
  bool all_normals = true, any_second_set = false;
  for (const Item& item : items) {
    all_normals = all_normals && attribute(item, "NORMAL") >= 0;
    const bool j1 = attribute(item, "JOINTS_1") >= 0, w1 = attribute(item, "WEIGHTS_1") >= 0;
    if (j1 != w1)
      return Invalid(absl::StrFormat("meshes[%d].primitives[%d]: %s without %s", item.mesh,
                                     item.primitive, j1 ? "JOINTS_1" : "WEIGHTS_1",
                                     j1 ? "WEIGHTS_1" : "JOINTS_1"));
    any_second_set = any_second_set || j1;
  }
  const int k = any_second_set ? 8 : 4;
  const int num_skin_joints = character->num_skin_joints;

  std::vector<double> V, N;
  std::vector<int> F, joints;
  std::vector<float> weights;
  for (const Item& item : items) {
    const tinygltf::Primitive& prim = model.meshes[item.mesh].primitives[item.primitive];
    const std::string where =
        absl::StrFormat("meshes[%d].primitives[%d]", item.mesh, item.primitive);
    const int pos_index = attribute(item, "POSITION");
    if (pos_index < 0) return Invalid(where + ": no POSITION attribute");
    ASSIGN_OR_RETURN(Decoded pos, ReadAccessor(model, pos_index, TINYGLTF_TYPE_VEC3,
                                               Components::kFloat, where + ".POSITION"));
    const size_t nv = pos.count;
    const size_t base = V.size() / 3;
    if (base + nv > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
      return Invalid(where + ": too many vertices");
    auto same_count = [&](const Decoded& d, int accessor, const char* what) -> absl::Status {
      if (d.count != nv)
        return Invalid(
            absl::StrFormat("accessors[%d] (%s.%s): count %d differs from POSITION's "
                            "%d",
                            accessor, where, what, d.count, nv));
      return absl::OkStatus();
    };
    V.insert(V.end(), pos.data.begin(), pos.data.end());
    if (all_normals) {
      const int ni = attribute(item, "NORMAL");
      ASSIGN_OR_RETURN(Decoded nor, ReadAccessor(model, ni, TINYGLTF_TYPE_VEC3, Components::kFloat,
                                                 where + ".NORMAL"));
      RETURN_IF_ERROR(same_count(nor, ni, "NORMAL"));
      N.insert(N.end(), nor.data.begin(), nor.data.end());
    }

    // Weights: up to two sets of four influences.
    std::vector<int> pj(nv * k, 0);
    std::vector<double> pw(nv * k, 0.0);
    for (int set = 0; set < 2; ++set) {
      const std::string jname = absl::StrFormat("JOINTS_%d", set);
      const std::string wname = absl::StrFormat("WEIGHTS_%d", set);
      const int ji = attribute(item, jname.c_str()), wi = attribute(item, wname.c_str());
      if (set == 0 && (ji < 0 || wi < 0))
        return Invalid(absl::StrFormat("%s: no %s attribute (the mesh is not skinned)", where,
                                       ji < 0 ? "JOINTS_0" : "WEIGHTS_0"));
      if (ji < 0) continue;
      ASSIGN_OR_RETURN(Decoded jd, ReadAccessor(model, ji, TINYGLTF_TYPE_VEC4,
                                                Components::kJointIndices, where + "." + jname));
      RETURN_IF_ERROR(same_count(jd, ji, jname.c_str()));
      ASSIGN_OR_RETURN(Decoded wd,
                       ReadAccessor(model, wi, TINYGLTF_TYPE_VEC4,
                                    Components::kFloatOrNormalizedUnsigned, where + "." + wname));
      RETURN_IF_ERROR(same_count(wd, wi, wname.c_str()));
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
          pj[v * k + set * 4 + c] = j;
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

    // Triangles.
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
  }

  const int nv = static_cast<int>(V.size() / 3);
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

absl::Status ReadAnimations(const tinygltf::Model& model, const std::vector<int>& joint_of_node,
                            GltfCharacter* character) {
  for (size_t a = 0; a < model.animations.size(); ++a) {
    const tinygltf::Animation& in = model.animations[a];
    Animation out;
    out.name = in.name;
    bool any = false;
    for (size_t c = 0; c < in.channels.size(); ++c) {
      const tinygltf::AnimationChannel& ch = in.channels[c];
      const std::string where = absl::StrFormat("animations[%d].channels[%d]", a, c);
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
        continue;  // morph-target "weights" or an extension's path
      }
      if (ch.sampler < 0 || static_cast<size_t>(ch.sampler) >= in.samplers.size())
        return Invalid(absl::StrFormat("%s: sampler %d is out of range (%d samplers)", where,
                                       ch.sampler, in.samplers.size()));
      const tinygltf::AnimationSampler& sampler = in.samplers[ch.sampler];
      const std::string swhere = absl::StrFormat("animations[%d].samplers[%d]", a, ch.sampler);
      int keys_per_time = 1;
      if (sampler.interpolation == "LINEAR" || sampler.interpolation.empty()) {
        channel.interpolation = Interpolation::kLinear;
      } else if (sampler.interpolation == "STEP") {
        channel.interpolation = Interpolation::kStep;
      } else if (sampler.interpolation == "CUBICSPLINE") {
        channel.interpolation = Interpolation::kCubicSpline;
        keys_per_time = 3;
      } else {
        return Invalid(
            absl::StrFormat("%s: unknown interpolation \"%s\"", swhere, sampler.interpolation));
      }
      ASSIGN_OR_RETURN(Decoded input, ReadAccessor(model, sampler.input, TINYGLTF_TYPE_SCALAR,
                                                   Components::kFloat, swhere + ".input"));
      ASSIGN_OR_RETURN(
          Decoded output,
          ReadAccessor(model, sampler.output, width == 4 ? TINYGLTF_TYPE_VEC4 : TINYGLTF_TYPE_VEC3,
                       width == 4 ? Components::kFloatOrNormalized : Components::kFloat,
                       swhere + ".output"));
      if (output.count != input.count * keys_per_time)
        return Invalid(absl::StrFormat(
            "%s: output has %d values for %d input times (expected "
            "%d for %s)",
            swhere, output.count, input.count, input.count * keys_per_time, sampler.interpolation));
      channel.times = input.data;
      for (size_t i = 0; i < channel.times.size(); ++i) {
        if (i > 0 && !(channel.times[i] > channel.times[i - 1]))
          return Invalid(absl::StrFormat(
              "accessors[%d] (%s.input): time %d (%g) is not greater "
              "than time %d (%g)",
              sampler.input, swhere, i, channel.times[i], i - 1, channel.times[i - 1]));
      }
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

// ---------------------------------------------------------------------------------------------
// Sampling.

Eigen::Quaterniond SafeNormalized(const Eigen::Quaterniond& q) {
  const double n = q.norm();
  if (!(n > 1e-12) || !std::isfinite(n)) return Eigen::Quaterniond::Identity();
  return Eigen::Quaterniond(q.coeffs() / n);
}

// Spherical interpolation from a to b along the shorter arc.
Eigen::Quaterniond Slerp(const Eigen::Quaterniond& qa, const Eigen::Quaterniond& qb, double s) {
  const Eigen::Quaterniond a = SafeNormalized(qa);
  Eigen::Quaterniond b = SafeNormalized(qb);
  double d = a.dot(b);
  if (d < 0) {
    b.coeffs() = -b.coeffs();
    d = -d;
  }
  Eigen::Vector4d c;
  if (d > 1.0 - 1e-10) {
    c = (1 - s) * a.coeffs() + s * b.coeffs();
  } else {
    const double theta = std::acos(std::min(d, 1.0));
    const double sin_theta = std::sin(theta);
    c = (std::sin((1 - s) * theta) / sin_theta) * a.coeffs() +
        (std::sin(s * theta) / sin_theta) * b.coeffs();
  }
  return SafeNormalized(Eigen::Quaterniond(c(3), c(0), c(1), c(2)));
}

// The channel's value (width numbers) at time t.
Eigen::VectorXd SampleChannel(const AnimationChannel& ch, int width, double t) {
  const size_t n = ch.times.size();
  const bool cubic = ch.interpolation == Interpolation::kCubicSpline;
  const size_t per_key = static_cast<size_t>(width) * (cubic ? 3 : 1);
  // Element e (0 in-tangent, 1 value, 2 out-tangent for cubic; 0 value otherwise) of key k.
  auto element = [&](size_t key, int e) {
    return Eigen::Map<const Eigen::VectorXd>(ch.values.data() + key * per_key + e * width, width);
  };
  const int value_element = cubic ? 1 : 0;
  if (n == 1 || !(t > ch.times.front())) return element(0, value_element);
  if (!(t < ch.times.back())) return element(n - 1, value_element);
  const size_t k = static_cast<size_t>(std::upper_bound(ch.times.begin(), ch.times.end(), t) -
                                       ch.times.begin()) -
                   1;  // times[k] <= t < times[k + 1]
  const double dt = ch.times[k + 1] - ch.times[k];
  const double s = (t - ch.times[k]) / dt;
  switch (ch.interpolation) {
    case Interpolation::kStep:
      return element(k, 0);
    case Interpolation::kLinear: {
      if (width == 4) {
        const auto a = element(k, 0), b = element(k + 1, 0);
        const Eigen::Quaterniond q = Slerp(Eigen::Quaterniond(a(3), a(0), a(1), a(2)),
                                           Eigen::Quaterniond(b(3), b(0), b(1), b(2)), s);
        return q.coeffs();  // Eigen stores x, y, z, w
      }
      return (1 - s) * element(k, 0) + s * element(k + 1, 0);
    }
    case Interpolation::kCubicSpline: {
      const double s2 = s * s, s3 = s2 * s;
      return (2 * s3 - 3 * s2 + 1) * element(k, 1) + (s3 - 2 * s2 + s) * dt * element(k, 2) +
             (-2 * s3 + 3 * s2) * element(k + 1, 1) + (s3 - s2) * dt * element(k + 1, 0);
    }
  }
  return element(k, value_element);
}

// ---------------------------------------------------------------------------------------------
// Writing.

// Appends typed arrays to buffers[0] with a buffer view and an accessor each.
class BufferBuilder {
 public:
  explicit BufferBuilder(tinygltf::Model* model) : model_(model) { model_->buffers.resize(1); }

  int Add(const void* data, size_t bytes, int target, int component_type, int type, size_t count,
          std::vector<double> min = {}, std::vector<double> max = {}) {
    std::vector<unsigned char>& buffer = model_->buffers[0].data;
    while (buffer.size() % 4 != 0) buffer.push_back(0);
    tinygltf::BufferView view;
    view.buffer = 0;
    view.byteOffset = buffer.size();
    view.byteLength = bytes;
    view.target = target;
    const auto* p = static_cast<const unsigned char*>(data);
    buffer.insert(buffer.end(), p, p + bytes);
    model_->bufferViews.push_back(view);

    tinygltf::Accessor accessor;
    accessor.bufferView = static_cast<int>(model_->bufferViews.size()) - 1;
    accessor.byteOffset = 0;
    accessor.componentType = component_type;
    accessor.type = type;
    accessor.count = count;
    accessor.minValues = std::move(min);
    accessor.maxValues = std::move(max);
    model_->accessors.push_back(accessor);
    return static_cast<int>(model_->accessors.size()) - 1;
  }

  template <typename T>
  int Add(const std::vector<T>& values, int target, int component_type, int type, size_t count,
          std::vector<double> min = {}, std::vector<double> max = {}) {
    return Add(values.data(), values.size() * sizeof(T), target, component_type, type, count,
               std::move(min), std::move(max));
  }

  void Finish() {
    std::vector<unsigned char>& buffer = model_->buffers[0].data;
    while (buffer.size() % 4 != 0) buffer.push_back(0);
  }

 private:
  tinygltf::Model* model_;
};

constexpr int kArrayBuffer = TINYGLTF_TARGET_ARRAY_BUFFER;
constexpr int kElementArrayBuffer = TINYGLTF_TARGET_ELEMENT_ARRAY_BUFFER;
constexpr int kNoTarget = 0;

// Adds the mesh's POSITION (with min/max), NORMAL and indices to a new primitive.
tinygltf::Primitive AddMeshGeometry(const Mesh& mesh, BufferBuilder* builder) {
  const size_t nv = mesh.V.rows();
  tinygltf::Primitive prim;
  prim.mode = TINYGLTF_MODE_TRIANGLES;
  std::vector<float> pos(nv * 3);
  std::vector<double> lo(3, std::numeric_limits<double>::infinity()),
      hi(3, -std::numeric_limits<double>::infinity());
  for (size_t i = 0; i < nv; ++i)
    for (int a = 0; a < 3; ++a) {
      const float f = static_cast<float>(mesh.V(i, a));
      pos[i * 3 + a] = f;
      lo[a] = std::min<double>(lo[a], f);
      hi[a] = std::max<double>(hi[a], f);
    }
  prim.attributes["POSITION"] = builder->Add(pos, kArrayBuffer, TINYGLTF_COMPONENT_TYPE_FLOAT,
                                             TINYGLTF_TYPE_VEC3, nv, lo, hi);
  if (mesh.N.rows() == static_cast<Eigen::Index>(nv) && nv > 0) {
    std::vector<float> nor(nv * 3);
    for (size_t i = 0; i < nv; ++i)
      for (int a = 0; a < 3; ++a) nor[i * 3 + a] = static_cast<float>(mesh.N(i, a));
    prim.attributes["NORMAL"] =
        builder->Add(nor, kArrayBuffer, TINYGLTF_COMPONENT_TYPE_FLOAT, TINYGLTF_TYPE_VEC3, nv);
  }
  std::vector<uint32_t> idx(mesh.F.size());
  for (Eigen::Index f = 0; f < mesh.F.rows(); ++f)
    for (int c = 0; c < 3; ++c) idx[f * 3 + c] = static_cast<uint32_t>(mesh.F(f, c));
  prim.indices = builder->Add(idx, kElementArrayBuffer, TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT,
                              TINYGLTF_TYPE_SCALAR, idx.size());
  return prim;
}

absl::Status WriteModel(const tinygltf::Model& model, const std::string& path) {
  const bool binary = absl::EndsWithIgnoreCase(path, ".glb");
  {
    std::ofstream probe(path, std::ios::binary | std::ios::trunc);
    if (!probe) return Invalid(absl::StrFormat("cannot open \"%s\" for writing", path));
  }
  tinygltf::TinyGLTF writer;
  bool ok = false;
  try {
    ok = writer.WriteGltfSceneToFile(&model, path, /*embedImages=*/true, /*embedBuffers=*/true,
                                     /*prettyPrint=*/!binary, /*writeBinary=*/binary);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrFormat("writing \"%s\": %s", path, e.what()));
  } catch (...) {
    return absl::InternalError(absl::StrFormat("writing \"%s\" failed", path));
  }
  std::error_code ec;
  if (!ok || std::filesystem::file_size(path, ec) == 0 || ec)
    return absl::InternalError(absl::StrFormat("writing \"%s\" failed", path));
  return absl::OkStatus();
}

absl::Status ValidateChannel(const AnimationChannel& ch, int num_joints, const std::string& where) {
  if (ch.joint < 0 || ch.joint >= num_joints)
    return Invalid(
        absl::StrFormat("%s: joint %d is out of range (%d joints)", where, ch.joint, num_joints));
  if (ch.times.empty()) return Invalid(where + ": no keys");
  for (size_t i = 0; i < ch.times.size(); ++i) {
    if (!std::isfinite(ch.times[i]))
      return Invalid(absl::StrFormat("%s.times[%d] is not finite", where, i));
    if (i > 0 && !(ch.times[i] > ch.times[i - 1]))
      return Invalid(absl::StrFormat("%s.times[%d] = %g is not greater than the previous time",
                                     where, i, ch.times[i]));
  }
  const size_t width = ch.path == AnimationPath::kRotation ? 4 : 3;
  const size_t per_key = width * (ch.interpolation == Interpolation::kCubicSpline ? 3 : 1);
  if (ch.values.size() != ch.times.size() * per_key)
    return Invalid(absl::StrFormat("%s: %d values for %d keys (expected %d)", where,
                                   ch.values.size(), ch.times.size(), ch.times.size() * per_key));
  for (size_t i = 0; i < ch.values.size(); ++i)
    if (!std::isfinite(ch.values[i]))
      return Invalid(absl::StrFormat("%s.values[%d] is not finite", where, i));
  return absl::OkStatus();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Public API.

std::vector<Transform> SampleAnimation(const Skeleton& skeleton, const Animation& animation,
                                       double t) {
  std::vector<Transform> local;
  local.reserve(skeleton.joints.size());
  for (const Joint& joint : skeleton.joints) local.push_back(joint.rest);
  if (std::isnan(t)) t = animation.start;
  for (const AnimationChannel& ch : animation.channels) {
    if (ch.joint < 0 || ch.joint >= skeleton.size() || ch.times.empty()) continue;
    const int width = ch.path == AnimationPath::kRotation ? 4 : 3;
    const size_t per_key =
        static_cast<size_t>(width) * (ch.interpolation == Interpolation::kCubicSpline ? 3 : 1);
    if (ch.values.size() < ch.times.size() * per_key) continue;  // malformed channel
    const Eigen::VectorXd v = SampleChannel(ch, width, t);
    Transform& out = local[ch.joint];
    switch (ch.path) {
      case AnimationPath::kTranslation:
        out.translation = v.head<3>();
        break;
      case AnimationPath::kScale:
        out.scale = v.head<3>();
        break;
      case AnimationPath::kRotation:
        out.rotation = SafeNormalized(Eigen::Quaterniond(v(3), v(0), v(1), v(2)));
        break;
    }
  }
  return local;
}

absl::StatusOr<GltfCharacter> ReadGltf(const std::string& path) {
  ASSIGN_OR_RETURN(tinygltf::Model model, LoadModel(path));
  auto fail = [&](const absl::Status& s) {
    return absl::Status(s.code(), absl::StrFormat("%s: %s", path, s.message()));
  };
  GltfCharacter character;
  if (absl::Status s = CheckAllAccessors(model); !s.ok()) return fail(s);
  std::vector<int> joint_of_node;
  if (absl::Status s = ReadSkeleton(model, &character, &joint_of_node); !s.ok()) return fail(s);
  if (absl::Status s = ReadMesh(model, &character); !s.ok()) return fail(s);
  if (absl::Status s = ReadAnimations(model, joint_of_node, &character); !s.ok()) return fail(s);
  if (character.name.empty()) character.name = std::filesystem::path(path).stem().string();
  return character;
}

absl::Status WriteSkinnedGltf(const std::string& path, const Mesh& mesh, const Skeleton& skeleton,
                              const SparseWeights& weights,
                              const std::vector<Animation>& animations) {
  RETURN_IF_ERROR(ValidateMesh(mesh));
  RETURN_IF_ERROR(ValidateSkeleton(skeleton));
  const int nj = skeleton.size();
  if (nj > 65536)
    return Invalid(
        absl::StrFormat("skeleton has %d joints; JOINTS_n as UNSIGNED_SHORT holds at "
                        "most 65536",
                        nj));
  const int nv = static_cast<int>(mesh.V.rows());
  RETURN_IF_ERROR(ValidateWeights(weights, nv, nj));
  const int k = weights.k();
  if (k > 8)
    return Invalid(
        absl::StrFormat("weights: k = %d influences, at most 8 (JOINTS_0/JOINTS_1) "
                        "can be written",
                        k));
  for (size_t a = 0; a < animations.size(); ++a)
    for (size_t c = 0; c < animations[a].channels.size(); ++c)
      RETURN_IF_ERROR(ValidateChannel(animations[a].channels[c], nj,
                                      absl::StrFormat("animations[%d].channels[%d]", a, c)));

  tinygltf::Model model;
  model.asset.version = "2.0";
  model.asset.generator = "skinning";
  BufferBuilder builder(&model);

  // Joint nodes 0..nj-1, then the mesh node.
  model.nodes.resize(nj + 1);
  for (int j = 0; j < nj; ++j) {
    const Joint& joint = skeleton.joints[j];
    tinygltf::Node& node = model.nodes[j];
    node.name = joint.name;
    const Transform& t = joint.rest;
    const Eigen::Quaterniond q = t.rotation.normalized();
    node.translation = {t.translation.x(), t.translation.y(), t.translation.z()};
    node.rotation = {q.x(), q.y(), q.z(), q.w()};
    node.scale = {t.scale.x(), t.scale.y(), t.scale.z()};
    if (joint.parent >= 0) model.nodes[joint.parent].children.push_back(j);
  }
  tinygltf::Scene scene;
  for (int j = 0; j < nj; ++j)
    if (skeleton.joints[j].parent < 0) scene.nodes.push_back(j);
  scene.nodes.push_back(nj);
  model.scenes.push_back(scene);
  model.defaultScene = 0;

  tinygltf::Primitive prim = AddMeshGeometry(mesh, &builder);
  const int num_sets = k > 4 ? 2 : 1;
  for (int set = 0; set < num_sets; ++set) {
    std::vector<uint16_t> js(static_cast<size_t>(nv) * 4, 0);
    std::vector<float> ws(static_cast<size_t>(nv) * 4, 0.f);
    for (int v = 0; v < nv; ++v)
      for (int c = 0; c < 4; ++c) {
        const int col = set * 4 + c;
        if (col >= k) continue;  // padding
        js[v * 4 + c] = static_cast<uint16_t>(weights.joints(v, col));
        ws[v * 4 + c] = weights.weights(v, col);
      }
    prim.attributes[absl::StrFormat("JOINTS_%d", set)] = builder.Add(
        js, kArrayBuffer, TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT, TINYGLTF_TYPE_VEC4, nv);
    prim.attributes[absl::StrFormat("WEIGHTS_%d", set)] =
        builder.Add(ws, kArrayBuffer, TINYGLTF_COMPONENT_TYPE_FLOAT, TINYGLTF_TYPE_VEC4, nv);
  }
  tinygltf::Mesh gmesh;
  gmesh.primitives.push_back(prim);
  model.meshes.push_back(gmesh);
  model.nodes[nj].mesh = 0;
  model.nodes[nj].skin = 0;

  // Skin with column-major inverse bind matrices.
  std::vector<float> ibm(static_cast<size_t>(nj) * 16);
  for (int j = 0; j < nj; ++j) {
    Eigen::Matrix4d M = skeleton.joints[j].inverse_bind.matrix();
    M.row(3) << 0, 0, 0, 1;
    for (int c = 0; c < 4; ++c)
      for (int r = 0; r < 4; ++r) ibm[j * 16 + c * 4 + r] = static_cast<float>(M(r, c));
  }
  tinygltf::Skin skin;
  skin.inverseBindMatrices =
      builder.Add(ibm, kNoTarget, TINYGLTF_COMPONENT_TYPE_FLOAT, TINYGLTF_TYPE_MAT4, nj);
  for (int j = 0; j < nj; ++j) skin.joints.push_back(j);
  model.skins.push_back(skin);

  for (const Animation& animation : animations) {
    tinygltf::Animation out;
    out.name = animation.name;
    for (const AnimationChannel& ch : animation.channels) {
      std::vector<float> times(ch.times.begin(), ch.times.end());
      const double t0 = times.front(), t1 = times.back();
      const std::vector<float> values(ch.values.begin(), ch.values.end());
      const bool rotation = ch.path == AnimationPath::kRotation;
      tinygltf::AnimationSampler sampler;
      sampler.input = builder.Add(times, kNoTarget, TINYGLTF_COMPONENT_TYPE_FLOAT,
                                  TINYGLTF_TYPE_SCALAR, times.size(), {t0}, {t1});
      sampler.output = builder.Add(values, kNoTarget, TINYGLTF_COMPONENT_TYPE_FLOAT,
                                   rotation ? TINYGLTF_TYPE_VEC4 : TINYGLTF_TYPE_VEC3,
                                   values.size() / (rotation ? 4 : 3));
      sampler.interpolation = ch.interpolation == Interpolation::kStep     ? "STEP"
                              : ch.interpolation == Interpolation::kLinear ? "LINEAR"
                                                                           : "CUBICSPLINE";
      tinygltf::AnimationChannel channel;
      channel.sampler = static_cast<int>(out.samplers.size());
      channel.target_node = ch.joint;
      channel.target_path = ch.path == AnimationPath::kTranslation ? "translation"
                            : rotation                             ? "rotation"
                                                                   : "scale";
      out.samplers.push_back(sampler);
      out.channels.push_back(channel);
    }
    model.animations.push_back(out);
  }
  builder.Finish();
  return WriteModel(model, path);
}

absl::Status WritePosedGltf(const std::string& path, const Mesh& mesh) {
  RETURN_IF_ERROR(ValidateMesh(mesh));
  tinygltf::Model model;
  model.asset.version = "2.0";
  model.asset.generator = "skinning";
  BufferBuilder builder(&model);
  tinygltf::Mesh gmesh;
  gmesh.primitives.push_back(AddMeshGeometry(mesh, &builder));
  model.meshes.push_back(gmesh);
  tinygltf::Node node;
  node.mesh = 0;
  model.nodes.push_back(node);
  tinygltf::Scene scene;
  scene.nodes.push_back(0);
  model.scenes.push_back(scene);
  model.defaultScene = 0;
  builder.Finish();
  return WriteModel(model, path);
}

}  // namespace skinning
