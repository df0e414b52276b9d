// Written from the glTF 2.0 specification (sections 3.6 Accessors, 3.7 Geometry/Skins,
// 3.11 Animations, Appendix C Interpolation). Shares nothing with core/.
#include "tests/support/gltf_reference.h"

#include <tiny_gltf.h>

#include <Eigen/Core>
#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "tests/support/tinygltf_load.h"

namespace skinning::testing::gltf_reference {
namespace {

using Eigen::Matrix3d;
using Eigen::Matrix4d;
using Eigen::Vector3d;
using Eigen::Vector4d;

// ---------------------------------------------------------------------------------------------
// Accessors (spec 3.6): elements of `count` × `components` numbers, read from raw bytes.

struct AccessorData {
  int count = 0;
  int components = 0;
  std::vector<double> values;  // count × components, element-major
  double at(int element, int component) const {
    return values[static_cast<size_t>(element) * components + component];
  }
};

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
      return 0;
  }
}

int ComponentCount(int type) {
  switch (type) {
    case TINYGLTF_TYPE_SCALAR:
      return 1;
    case TINYGLTF_TYPE_VEC2:
      return 2;
    case TINYGLTF_TYPE_VEC3:
      return 3;
    case TINYGLTF_TYPE_VEC4:
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

// One component at `p` as a double; integer types are mapped to [0, 1] / [-1, 1] when the
// accessor is normalized (spec 3.11 "Animations" / 3.7.2.1 normalization equations).
double ReadComponent(const unsigned char* p, int component_type, bool normalized) {
  switch (component_type) {
    case TINYGLTF_COMPONENT_TYPE_BYTE: {
      int8_t v;
      std::memcpy(&v, p, 1);
      return normalized ? std::max(v / 127.0, -1.0) : v;
    }
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE: {
      uint8_t v;
      std::memcpy(&v, p, 1);
      return normalized ? v / 255.0 : v;
    }
    case TINYGLTF_COMPONENT_TYPE_SHORT: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return normalized ? std::max(v / 32767.0, -1.0) : v;
    }
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return normalized ? v / 65535.0 : v;
    }
    case TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case TINYGLTF_COMPONENT_TYPE_FLOAT: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default:
      return 0.0;
  }
}

// Returns the bytes [offset, offset + size) of buffer view `view_index`, validated against the
// view and its buffer.
absl::StatusOr<const unsigned char*> ViewBytes(const tinygltf::Model& model, int view_index,
                                               size_t offset, size_t size,
                                               const std::string& what) {
  if (view_index < 0 || view_index >= static_cast<int>(model.bufferViews.size())) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": bad bufferView ", view_index));
  }
  const tinygltf::BufferView& view = model.bufferViews[view_index];
  if (view.buffer < 0 || view.buffer >= static_cast<int>(model.buffers.size())) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": bad buffer ", view.buffer));
  }
  const tinygltf::Buffer& buffer = model.buffers[view.buffer];
  if (view.byteOffset + view.byteLength > buffer.data.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": bufferView ", view_index, " exceeds its buffer"));
  }
  if (offset + size > view.byteLength) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": data exceeds bufferView ", view_index));
  }
  return buffer.data.data() + view.byteOffset + offset;
}

absl::StatusOr<AccessorData> ReadAccessor(const tinygltf::Model& model, int index) {
  const std::string what = absl::StrCat("accessor ", index);
  if (index < 0 || index >= static_cast<int>(model.accessors.size())) {
    return absl::InvalidArgumentError(absl::StrCat("missing ", what));
  }
  const tinygltf::Accessor& accessor = model.accessors[index];
  const int size = ComponentSize(accessor.componentType);
  const int components = ComponentCount(accessor.type);
  if (size == 0 || components == 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": unsupported type"));
  }
  if (components > 4 && accessor.type != TINYGLTF_TYPE_MAT4 && size < 4) {
    // MAT2/MAT3 of 1- or 2-byte components have column padding; no skinning data uses them.
    return absl::UnimplementedError(absl::StrCat(what, ": padded matrix layout"));
  }
  if (accessor.type == TINYGLTF_TYPE_MAT4 && size < 4) {
    return absl::UnimplementedError(absl::StrCat(what, ": non-float matrix"));
  }
  AccessorData data;
  data.count = static_cast<int>(accessor.count);
  data.components = components;
  data.values.assign(accessor.count * components, 0.0);  // no bufferView: zeros (spec)
  const size_t element_size = static_cast<size_t>(size) * components;

  if (accessor.bufferView >= 0 && accessor.count > 0) {
    const tinygltf::BufferView& view =
        accessor.bufferView < static_cast<int>(model.bufferViews.size())
            ? model.bufferViews[accessor.bufferView]
            : tinygltf::BufferView();
    const size_t stride = view.byteStride != 0 ? view.byteStride : element_size;
    if (stride < element_size) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": byteStride too small"));
    }
    const size_t span = stride * (accessor.count - 1) + element_size;
    ASSIGN_OR_RETURN(const unsigned char* base,
                     ViewBytes(model, accessor.bufferView, accessor.byteOffset, span, what));
    for (size_t e = 0; e < accessor.count; ++e) {
      const unsigned char* element = base + e * stride;
      for (int c = 0; c < components; ++c) {
        data.values[e * components + c] =
            ReadComponent(element + c * size, accessor.componentType, accessor.normalized);
      }
    }
  }

  if (accessor.sparse.isSparse && accessor.sparse.count > 0) {
    const size_t n = static_cast<size_t>(accessor.sparse.count);
    const int index_type = accessor.sparse.indices.componentType;
    const int index_size = ComponentSize(index_type);
    if (index_size == 0 || index_type == TINYGLTF_COMPONENT_TYPE_FLOAT) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": bad sparse index type"));
    }
    ASSIGN_OR_RETURN(
        const unsigned char* indices,
        ViewBytes(model, accessor.sparse.indices.bufferView, accessor.sparse.indices.byteOffset,
                  n * index_size, what + " sparse indices"));
    ASSIGN_OR_RETURN(
        const unsigned char* values,
        ViewBytes(model, accessor.sparse.values.bufferView, accessor.sparse.values.byteOffset,
                  n * element_size, what + " sparse values"));
    for (size_t i = 0; i < n; ++i) {
      const auto target =
          static_cast<size_t>(ReadComponent(indices + i * index_size, index_type, false));
      if (target >= accessor.count) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": sparse index out of range"));
      }
      for (int c = 0; c < components; ++c) {
        data.values[target * components + c] = ReadComponent(
            values + i * element_size + c * size, accessor.componentType, accessor.normalized);
      }
    }
  }
  return data;
}

// ---------------------------------------------------------------------------------------------
// Node local transforms (spec 3.5.3): T · R · S, or the node's matrix.

struct Trs {
  Vector3d translation = Vector3d::Zero();
  Vector4d rotation = Vector4d(0, 0, 0, 1);  // x, y, z, w
  Vector3d scale = Vector3d::Ones();
};

Matrix4d ToMatrix(const Trs& trs) {
  Vector4d q = trs.rotation;
  const double norm = q.norm();
  if (norm > 0) q /= norm;
  const Eigen::Quaterniond rotation(q[3], q[0], q[1], q[2]);
  Matrix4d m = Matrix4d::Identity();
  m.topLeftCorner<3, 3>() = rotation.toRotationMatrix() * trs.scale.asDiagonal();
  m.topRightCorner<3, 1>() = trs.translation;
  return m;
}

// Splits an affine matrix without shear into TRS (only needed when an animation targets a
// node that, against the spec, was given a matrix).
Trs Decompose(const Matrix4d& m) {
  Trs trs;
  trs.translation = m.topRightCorner<3, 1>();
  Matrix3d basis = m.topLeftCorner<3, 3>();
  for (int i = 0; i < 3; ++i) trs.scale[i] = basis.col(i).norm();
  if (basis.determinant() < 0) trs.scale[0] = -trs.scale[0];
  for (int i = 0; i < 3; ++i) {
    if (trs.scale[i] != 0) basis.col(i) /= trs.scale[i];
  }
  const Eigen::Quaterniond q(basis);
  trs.rotation = Vector4d(q.x(), q.y(), q.z(), q.w());
  return trs;
}

// ---------------------------------------------------------------------------------------------
// Animation sampling (spec 3.11 and Appendix C).

enum class Path { kTranslation, kRotation, kScale };
enum class Mode { kStep, kLinear, kCubic };

Vector4d Slerp(Vector4d a, Vector4d b, double s) {
  if (a.norm() > 0) a.normalize();
  if (b.norm() > 0) b.normalize();
  double d = a.dot(b);
  if (d < 0) {  // the shorter arc
    b = -b;
    d = -d;
  }
  Vector4d r;
  if (d > 1.0 - 1e-12) {
    r = (1 - s) * a + s * b;
  } else {
    const double theta = std::acos(std::min(d, 1.0));
    const double sin_theta = std::sin(theta);
    r = (std::sin((1 - s) * theta) / sin_theta) * a + (std::sin(s * theta) / sin_theta) * b;
  }
  return r.normalized();
}

// Samples one channel: returns `components` numbers.
Eigen::VectorXd SampleChannel(const AccessorData& input, const AccessorData& output, Mode mode,
                              Path path, double t) {
  const int n = input.count;
  const int c = output.components;
  const int per_key = mode == Mode::kCubic ? 3 : 1;
  const int value_offset = mode == Mode::kCubic ? 1 : 0;
  auto element = [&](int e) {
    Eigen::VectorXd v(c);
    for (int i = 0; i < c; ++i) v[i] = output.at(e, i);
    return v;
  };
  auto value = [&](int key) { return element(key * per_key + value_offset); };
  auto finish = [&](Eigen::VectorXd v) {
    if (path == Path::kRotation && v.norm() > 0) v.normalize();
    return v;
  };

  if (n == 1 || t <= input.at(0, 0)) return finish(value(0));
  if (t >= input.at(n - 1, 0)) return finish(value(n - 1));
  // k with t_k <= t < t_{k+1}.
  int k = 0;
  while (k + 1 < n && input.at(k + 1, 0) <= t) ++k;
  const double t0 = input.at(k, 0);
  const double t1 = input.at(k + 1, 0);
  const double dt = t1 - t0;
  const double s = (t - t0) / dt;

  switch (mode) {
    case Mode::kStep:
      return finish(value(k));
    case Mode::kLinear:
      if (path == Path::kRotation) {
        const Eigen::VectorXd a = value(k);
        const Eigen::VectorXd b = value(k + 1);
        return Slerp(Vector4d(a[0], a[1], a[2], a[3]), Vector4d(b[0], b[1], b[2], b[3]), s);
      }
      return (1 - s) * value(k) + s * value(k + 1);
    case Mode::kCubic: {
      // Appendix C: p(s) = (2s³-3s²+1) v_k + Δt (s³-2s²+s) b_k + (-2s³+3s²) v_{k+1}
      //                     + Δt (s³-s²) a_{k+1}, with b_k the out-tangent of key k and a_{k+1}
      //                     the in-tangent of key k+1.
      const double s2 = s * s;
      const double s3 = s2 * s;
      const Eigen::VectorXd v0 = element(3 * k + 1);
      const Eigen::VectorXd b0 = element(3 * k + 2);
      const Eigen::VectorXd v1 = element(3 * (k + 1) + 1);
      const Eigen::VectorXd a1 = element(3 * (k + 1));
      return finish((2 * s3 - 3 * s2 + 1) * v0 + dt * (s3 - 2 * s2 + s) * b0 +
                    (-2 * s3 + 3 * s2) * v1 + dt * (s3 - s2) * a1);
    }
  }
  return finish(value(k));
}

// A sampler's interpolation mode (LINEAR when not given).
absl::StatusOr<Mode> SamplerMode(const tinygltf::AnimationSampler& sampler) {
  if (sampler.interpolation == "STEP") return Mode::kStep;
  if (sampler.interpolation == "LINEAR" || sampler.interpolation.empty()) return Mode::kLinear;
  if (sampler.interpolation == "CUBICSPLINE") return Mode::kCubic;
  return absl::InvalidArgumentError(absl::StrCat("sampler interpolation ", sampler.interpolation));
}

// The spec's morph weights of `node` at time t: its animation "weights" channel sampled (the
// output holds one weight per target per key, key-major) over `w`, which holds the defaults.
absl::Status AnimatedMorphWeights(const tinygltf::Model& model, int animation, double t, int node,
                                  std::vector<double>* w) {
  if (animation < 0 || animation >= static_cast<int>(model.animations.size())) {
    return absl::OkStatus();
  }
  const tinygltf::Animation& anim = model.animations[animation];
  for (const tinygltf::AnimationChannel& channel : anim.channels) {
    if (channel.target_node != node || channel.target_path != "weights") continue;
    if (channel.sampler < 0 || channel.sampler >= static_cast<int>(anim.samplers.size())) {
      return absl::InvalidArgumentError("weights channel: bad sampler");
    }
    const tinygltf::AnimationSampler& sampler = anim.samplers[channel.sampler];
    ASSIGN_OR_RETURN(const Mode mode, SamplerMode(sampler));
    ASSIGN_OR_RETURN(AccessorData input, ReadAccessor(model, sampler.input));
    ASSIGN_OR_RETURN(AccessorData output, ReadAccessor(model, sampler.output));
    const int targets = static_cast<int>(w->size());
    const int per_input = (mode == Mode::kCubic ? 3 : 1) * targets;
    if (input.components != 1 || output.components != 1 || targets == 0 ||
        output.count != per_input * input.count) {
      return absl::InvalidArgumentError("weights channel: sampler shapes do not match");
    }
    AccessorData keyed;  // one element per key (or tangent), `targets` components
    keyed.count = output.count / targets;
    keyed.components = targets;
    keyed.values = output.values;
    const Eigen::VectorXd v = SampleChannel(input, keyed, mode, Path::kTranslation, t);
    for (int k = 0; k < targets; ++k) (*w)[k] = v[k];
  }
  return absl::OkStatus();
}

// Local matrices of every node, with animations[animation] sampled at t (animation < 0: none).
absl::StatusOr<std::vector<Matrix4d>> LocalMatrices(const tinygltf::Model& model, int animation,
                                                    double t) {
  const int num_nodes = static_cast<int>(model.nodes.size());
  std::vector<Trs> trs(num_nodes);
  std::vector<bool> use_matrix(num_nodes, false);
  std::vector<Matrix4d> matrices(num_nodes, Matrix4d::Identity());
  for (int i = 0; i < num_nodes; ++i) {
    const tinygltf::Node& node = model.nodes[i];
    if (node.matrix.size() == 16) {
      use_matrix[i] = true;
      for (int j = 0; j < 16; ++j) matrices[i](j % 4, j / 4) = node.matrix[j];  // column-major
    } else {
      if (node.translation.size() == 3) {
        trs[i].translation =
            Vector3d(node.translation[0], node.translation[1], node.translation[2]);
      }
      if (node.rotation.size() == 4) {
        trs[i].rotation =
            Vector4d(node.rotation[0], node.rotation[1], node.rotation[2], node.rotation[3]);
      }
      if (node.scale.size() == 3) {
        trs[i].scale = Vector3d(node.scale[0], node.scale[1], node.scale[2]);
      }
    }
  }

  if (animation >= 0) {
    if (animation >= static_cast<int>(model.animations.size())) {
      return absl::InvalidArgumentError(absl::StrCat("no animation ", animation));
    }
    const tinygltf::Animation& anim = model.animations[animation];
    for (size_t ci = 0; ci < anim.channels.size(); ++ci) {
      const tinygltf::AnimationChannel& channel = anim.channels[ci];
      const int node = channel.target_node;
      if (node < 0) continue;  // not targeting a node (e.g. an extension's target)
      if (node >= num_nodes) {
        return absl::InvalidArgumentError(absl::StrCat("channel ", ci, ": bad node"));
      }
      Path path;
      int expected_components;
      if (channel.target_path == "translation") {
        path = Path::kTranslation;
        expected_components = 3;
      } else if (channel.target_path == "rotation") {
        path = Path::kRotation;
        expected_components = 4;
      } else if (channel.target_path == "scale") {
        path = Path::kScale;
        expected_components = 3;
      } else {
        continue;  // "weights": morph targets do not move skinned positions here
      }
      if (channel.sampler < 0 || channel.sampler >= static_cast<int>(anim.samplers.size())) {
        return absl::InvalidArgumentError(absl::StrCat("channel ", ci, ": bad sampler"));
      }
      const tinygltf::AnimationSampler& sampler = anim.samplers[channel.sampler];
      ASSIGN_OR_RETURN(const Mode mode, SamplerMode(sampler));
      ASSIGN_OR_RETURN(AccessorData input, ReadAccessor(model, sampler.input));
      ASSIGN_OR_RETURN(AccessorData output, ReadAccessor(model, sampler.output));
      const int keys_per_input = mode == Mode::kCubic ? 3 : 1;
      if (input.components != 1 || input.count < 1 || output.components != expected_components ||
          output.count != keys_per_input * input.count ||
          (mode == Mode::kCubic && input.count < 2)) {
        return absl::InvalidArgumentError(
            absl::StrCat("channel ", ci, ": sampler input/output shapes do not match"));
      }
      for (int k = 0; k + 1 < input.count; ++k) {
        if (!(input.at(k, 0) < input.at(k + 1, 0))) {
          return absl::InvalidArgumentError(
              absl::StrCat("channel ", ci, ": input times not strictly increasing"));
        }
      }
      const Eigen::VectorXd v = SampleChannel(input, output, mode, path, t);
      if (use_matrix[node]) {  // spec violation, but recoverable: animate its TRS parts
        trs[node] = Decompose(matrices[node]);
        use_matrix[node] = false;
      }
      switch (path) {
        case Path::kTranslation:
          trs[node].translation = v.head<3>();
          break;
        case Path::kRotation:
          trs[node].rotation = v.head<4>();
          break;
        case Path::kScale:
          trs[node].scale = v.head<3>();
          break;
      }
    }
  }

  for (int i = 0; i < num_nodes; ++i) {
    if (!use_matrix[i]) matrices[i] = ToMatrix(trs[i]);
  }
  return matrices;
}

// Global matrices of all nodes: walk the hierarchy down from every root (spec 3.5.2).
absl::StatusOr<std::vector<Matrix4d>> GlobalMatrices(const tinygltf::Model& model,
                                                     const std::vector<Matrix4d>& local) {
  const int num_nodes = static_cast<int>(model.nodes.size());
  std::vector<int> parent(num_nodes, -1);
  for (int i = 0; i < num_nodes; ++i) {
    for (int child : model.nodes[i].children) {
      if (child < 0 || child >= num_nodes || parent[child] != -1 || child == i) {
        return absl::InvalidArgumentError(
            absl::StrCat("node ", i, ": bad or shared child ", child));
      }
      parent[child] = i;
    }
  }
  std::vector<Matrix4d> global(num_nodes, Matrix4d::Identity());
  std::vector<bool> done(num_nodes, false);
  std::vector<int> stack;
  for (int i = 0; i < num_nodes; ++i) {
    if (parent[i] == -1) stack.push_back(i);
  }
  int visited = 0;
  while (!stack.empty()) {
    const int n = stack.back();
    stack.pop_back();
    global[n] = parent[n] == -1 ? local[n] : Matrix4d(global[parent[n]] * local[n]);
    done[n] = true;
    ++visited;
    for (int child : model.nodes[n].children) stack.push_back(child);
  }
  if (visited != num_nodes) return absl::InvalidArgumentError("node hierarchy has a cycle");
  return global;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

absl::StatusOr<KeyTimes> AnimationKeyTimes(const std::string& path, int animation) {
  ASSIGN_OR_RETURN(tinygltf::Model model, LoadTinyGltf(path));
  if (animation < 0 || animation >= static_cast<int>(model.animations.size())) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no animation ", animation));
  }
  const tinygltf::Animation& anim = model.animations[animation];
  std::set<int> inputs;
  for (const tinygltf::AnimationChannel& channel : anim.channels) {
    if (channel.sampler < 0 || channel.sampler >= static_cast<int>(anim.samplers.size())) {
      return absl::InvalidArgumentError("channel with a bad sampler");
    }
    inputs.insert(anim.samplers[channel.sampler].input);
  }
  std::set<double> times;
  for (int input : inputs) {
    ASSIGN_OR_RETURN(AccessorData data, ReadAccessor(model, input));
    if (data.components != 1) return absl::InvalidArgumentError("sampler input is not SCALAR");
    times.insert(data.values.begin(), data.values.end());
  }
  if (times.empty()) return absl::InvalidArgumentError("animation has no keys");
  KeyTimes result;
  result.keys.assign(times.begin(), times.end());
  result.start = result.keys.front();
  result.end = result.keys.back();
  return result;
}

namespace {

// A unit dual quaternion (real part r, dual part d) of a rigid 4×4 transform (Kavan et al. 2008:
// d = ½ (0, t) r).
struct DualQuaternion {
  Eigen::Quaterniond r, d;
};

absl::StatusOr<DualQuaternion> ToDualQuaternion(const Matrix4d& m) {
  const Eigen::Matrix3d rotation = m.topLeftCorner<3, 3>();
  if ((rotation.transpose() * rotation - Eigen::Matrix3d::Identity()).cwiseAbs().maxCoeff() >
          1e-6 ||
      rotation.determinant() < 0) {
    return absl::InvalidArgumentError("DQS reference: a joint matrix is not rigid");
  }
  DualQuaternion q;
  q.r = Eigen::Quaterniond(rotation).normalized();
  const Eigen::Vector3d t = m.block<3, 1>(0, 3);
  const Eigen::Quaterniond tq(0.0, t.x(), t.y(), t.z());
  q.d.coeffs() = 0.5 * (tq * q.r).coeffs();
  return q;
}

// Per skin: the joint matrices of the spec, global(joint) · inverseBindMatrix.
absl::StatusOr<std::vector<std::vector<Matrix4d>>> JointMatrices(
    const tinygltf::Model& model, const std::vector<Matrix4d>& global) {
  const int num_nodes = static_cast<int>(model.nodes.size());
  std::vector<std::vector<Matrix4d>> all;
  for (const tinygltf::Skin& skin : model.skins) {
    const int num_joints = static_cast<int>(skin.joints.size());
    for (int joint : skin.joints) {
      if (joint < 0 || joint >= num_nodes) {
        return absl::InvalidArgumentError(absl::StrCat("skin joint node ", joint));
      }
    }
    // Inverse bind matrices: column-major MAT4 floats, identity when absent.
    std::vector<Matrix4d> inverse_bind(num_joints, Matrix4d::Identity());
    if (skin.inverseBindMatrices >= 0) {
      ASSIGN_OR_RETURN(AccessorData ibm, ReadAccessor(model, skin.inverseBindMatrices));
      if (ibm.components != 16 || ibm.count < num_joints) {
        return absl::InvalidArgumentError("inverseBindMatrices is not #joints MAT4");
      }
      for (int j = 0; j < num_joints; ++j) {
        for (int e = 0; e < 16; ++e) inverse_bind[j](e % 4, e / 4) = ibm.at(j, e);
      }
    }
    std::vector<Matrix4d> joint_matrix(num_joints);
    for (int j = 0; j < num_joints; ++j) {
      joint_matrix[j] = global[skin.joints[j]] * inverse_bind[j];
    }
    all.push_back(std::move(joint_matrix));
  }
  return all;
}

}  // namespace

absl::StatusOr<SkinnedPositions> SkinAtTime(const std::string& path, int animation, double t,
                                            Blend blend, const std::vector<double>* morph_weights) {
  ASSIGN_OR_RETURN(tinygltf::Model model, LoadTinyGltf(path));
  if (model.skins.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no skin"));
  const int num_nodes = static_cast<int>(model.nodes.size());
  ASSIGN_OR_RETURN(std::vector<Matrix4d> local, LocalMatrices(model, animation, t));
  ASSIGN_OR_RETURN(std::vector<Matrix4d> global, GlobalMatrices(model, local));
  ASSIGN_OR_RETURN(const std::vector<std::vector<Matrix4d>> joint_matrices,
                   JointMatrices(model, global));
  // The rest pose: the same nodes without the animation (for `bind`).
  ASSIGN_OR_RETURN(std::vector<Matrix4d> rest_local, LocalMatrices(model, -1, 0.0));
  ASSIGN_OR_RETURN(std::vector<Matrix4d> rest_global, GlobalMatrices(model, rest_local));
  ASSIGN_OR_RETURN(const std::vector<std::vector<Matrix4d>> rest_matrices,
                   JointMatrices(model, rest_global));

  SkinnedPositions result;
  for (int n = 0; n < num_nodes; ++n) {
    const tinygltf::Node& node = model.nodes[n];
    if (node.mesh < 0) continue;
    if (node.skin >= static_cast<int>(model.skins.size())) {
      return absl::InvalidArgumentError(absl::StrCat("node ", n, ": bad skin"));
    }
    // A mesh without a skin is drawn by its node's world matrix (the spec): here a skin of one
    // "joint" whose joint matrix is that world matrix, every vertex weighted 1 to it.
    const bool rigid = node.skin < 0;
    const std::vector<Matrix4d> node_matrix = {global[n]}, rest_node_matrix = {rest_global[n]};
    const std::vector<Matrix4d>& joint_matrix = rigid ? node_matrix : joint_matrices[node.skin];
    const std::vector<Matrix4d>& rest_matrix = rigid ? rest_node_matrix : rest_matrices[node.skin];
    const int num_joints = static_cast<int>(joint_matrix.size());
    result.nodes.push_back(n);
    result.first_vertex.push_back(static_cast<int>(result.rest.size()));
    if (node.mesh >= static_cast<int>(model.meshes.size())) {
      return absl::InvalidArgumentError(absl::StrCat("node ", n, ": bad mesh"));
    }
    const tinygltf::Mesh& mesh = model.meshes[node.mesh];
    for (size_t p = 0; p < mesh.primitives.size(); ++p) {
      const tinygltf::Primitive& primitive = mesh.primitives[p];
      const int mode = primitive.mode < 0 ? TINYGLTF_MODE_TRIANGLES : primitive.mode;
      if (mode != TINYGLTF_MODE_TRIANGLES && mode != TINYGLTF_MODE_TRIANGLE_STRIP &&
          mode != TINYGLTF_MODE_TRIANGLE_FAN) {
        continue;  // points and lines are not part of the skinned mesh (contract)
      }
      const std::string where = absl::StrCat("node ", n, " primitive ", p);
      auto attribute = [&](const std::string& name) -> int {
        auto it = primitive.attributes.find(name);
        return it == primitive.attributes.end() ? -1 : it->second;
      };
      if (attribute("POSITION") < 0) {
        return absl::InvalidArgumentError(where + ": no POSITION");
      }
      ASSIGN_OR_RETURN(AccessorData positions, ReadAccessor(model, attribute("POSITION")));
      if (positions.components != 3) {
        return absl::InvalidArgumentError(where + ": POSITION is not VEC3");
      }
      const int count = positions.count;
      // Morph targets (spec: the morphed position is the base plus the weighted sum of the
      // targets' POSITION deltas, before skinning). Weights: the caller's, else node.weights,
      // else mesh.weights, else 0.
      if (!primitive.targets.empty()) {
        const size_t num_targets = primitive.targets.size();
        std::vector<double> w(num_targets, 0.0);
        if (morph_weights != nullptr) {
          if (morph_weights->size() != num_targets) {
            return absl::InvalidArgumentError(where + ": morph weight count");
          }
          w = *morph_weights;
        } else if (node.weights.size() == num_targets) {
          w = node.weights;
        } else if (mesh.weights.size() == num_targets) {
          w = mesh.weights;
        }
        if (morph_weights == nullptr) {
          RETURN_IF_ERROR(AnimatedMorphWeights(model, animation, t, n, &w));
        }
        for (size_t k = 0; k < num_targets; ++k) {
          auto it = primitive.targets[k].find("POSITION");
          if (it == primitive.targets[k].end() || w[k] == 0.0) continue;
          ASSIGN_OR_RETURN(AccessorData delta, ReadAccessor(model, it->second));
          if (delta.components != 3 || delta.count != count) {
            return absl::InvalidArgumentError(where + ": morph target POSITION shape");
          }
          for (size_t i = 0; i < positions.values.size(); ++i) {
            positions.values[i] += w[k] * delta.values[i];
          }
        }
      }

      std::vector<AccessorData> joints;
      std::vector<AccessorData> weights;
      if (rigid) {
        AccessorData one_joint, full_weight;
        one_joint.components = full_weight.components = 4;
        one_joint.count = full_weight.count = count;
        one_joint.values.assign(static_cast<size_t>(count) * 4, 0.0);
        full_weight.values.assign(static_cast<size_t>(count) * 4, 0.0);
        for (int v = 0; v < count; ++v) full_weight.values[static_cast<size_t>(v) * 4] = 1.0;
        joints.push_back(std::move(one_joint));
        weights.push_back(std::move(full_weight));
      }
      for (int set = 0; !rigid; ++set) {
        const int j_index = attribute(absl::StrCat("JOINTS_", set));
        const int w_index = attribute(absl::StrCat("WEIGHTS_", set));
        if (j_index < 0 && w_index < 0) break;
        if (j_index < 0 || w_index < 0) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, ": JOINTS_", set, "/WEIGHTS_", set, " not paired"));
        }
        const int joint_type = model.accessors[j_index].componentType;
        if (joint_type != TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE &&
            joint_type != TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT) {
          return absl::InvalidArgumentError(absl::StrCat(where, ": JOINTS_", set, " type"));
        }
        ASSIGN_OR_RETURN(AccessorData j, ReadAccessor(model, j_index));
        ASSIGN_OR_RETURN(AccessorData w, ReadAccessor(model, w_index));
        if (j.components != 4 || w.components != 4 || j.count != count || w.count != count) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, ": JOINTS_", set, "/WEIGHTS_", set, " shape"));
        }
        joints.push_back(std::move(j));
        weights.push_back(std::move(w));
      }
      if (joints.empty()) return absl::InvalidArgumentError(where + ": no JOINTS_0/WEIGHTS_0");

      for (int v = 0; v < count; ++v) {
        const Eigen::Vector4d rest(positions.at(v, 0), positions.at(v, 1), positions.at(v, 2), 1.0);
        double sum = 0;
        Eigen::Vector4d posed = Eigen::Vector4d::Zero(), bind = Eigen::Vector4d::Zero();
        std::vector<std::pair<int, double>> influences;
        for (size_t set = 0; set < joints.size(); ++set) {
          for (int k = 0; k < 4; ++k) {
            const double w = weights[set].at(v, k);
            if (w == 0) continue;
            const int j = static_cast<int>(joints[set].at(v, k));
            if (j < 0 || j >= num_joints) {
              return absl::InvalidArgumentError(
                  absl::StrCat(where, " vertex ", v, ": joint ", j, " out of range"));
            }
            sum += w;
            posed += w * (joint_matrix[j] * rest);
            bind += w * (rest_matrix[j] * rest);
            influences.push_back({j, w});
          }
        }
        if (!(sum > 0)) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, " vertex ", v, ": weights sum to zero"));
        }
        result.rest.push_back(rest.head<3>());
        result.bind.push_back(bind.head<3>() / sum);
        if (blend == Blend::kLinear) {
          result.posed.push_back(posed.head<3>() / sum);
          continue;
        }
        // DQS (Kavan et al. 2008): blend the joints' unit dual quaternions, each flipped to the
        // hemisphere of the most influential joint's (the first of equal weights), normalize by
        // the real part's norm, apply.
        size_t pivot = 0;
        for (size_t i = 1; i < influences.size(); ++i) {
          if (influences[i].second > influences[pivot].second) pivot = i;
        }
        ASSIGN_OR_RETURN(const DualQuaternion q0,
                         ToDualQuaternion(joint_matrix[influences[pivot].first]));
        Eigen::Vector4d real = Eigen::Vector4d::Zero(), dual = Eigen::Vector4d::Zero();
        for (const auto& [j, w] : influences) {
          ASSIGN_OR_RETURN(const DualQuaternion q, ToDualQuaternion(joint_matrix[j]));
          const double sign = q.r.coeffs().dot(q0.r.coeffs()) < 0 ? -1.0 : 1.0;
          real += sign * (w / sum) * q.r.coeffs();
          dual += sign * (w / sum) * q.d.coeffs();
        }
        const double norm = real.norm();
        Eigen::Quaterniond r, d;
        r.coeffs() = real / norm;
        d.coeffs() = dual / norm;
        // Translation t = 2 d r*, rotation r.
        const Eigen::Quaterniond tq = Eigen::Quaterniond((2.0 * d.coeffs())) * r.conjugate();
        result.posed.push_back(r * rest.head<3>() + tq.vec());
      }
    }
  }
  if (result.rest.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no mesh node has a skin"));
  }
  return result;
}

}  // namespace skinning::testing::gltf_reference
