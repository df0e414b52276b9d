#include "tests/support/morph_gltf.h"

#include <tiny_gltf.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <cstring>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace skinning::testing {
namespace {

// Appends raw bytes to buffers[0] as a view of their own (no byteStride); returns the view.
int AddView(tinygltf::Model* model, const void* data, size_t bytes) {
  std::vector<unsigned char>& buffer = model->buffers[0].data;
  while (buffer.size() % 4 != 0) buffer.push_back(0);
  tinygltf::BufferView view;
  view.buffer = 0;
  view.byteOffset = buffer.size();
  view.byteLength = bytes;
  const auto* p = static_cast<const unsigned char*>(data);
  buffer.insert(buffer.end(), p, p + bytes);
  model->bufferViews.push_back(view);
  return static_cast<int>(model->bufferViews.size()) - 1;
}

// Per-component min and max of float elements of `components` numbers.
void SetMinMax(const std::vector<float>& values, int components, tinygltf::Accessor* accessor) {
  accessor->minValues.assign(components, std::numeric_limits<double>::infinity());
  accessor->maxValues.assign(components, -std::numeric_limits<double>::infinity());
  for (size_t i = 0; i < values.size(); ++i) {
    accessor->minValues[i % components] = std::min<double>(accessor->minValues[i % components], values[i]);
    accessor->maxValues[i % components] = std::max<double>(accessor->maxValues[i % components], values[i]);
  }
}

// Appends floats to buffers[0] with a view and an accessor of `type` (VEC3 or SCALAR), with
// min and max per component when asked.
int AddFloats(tinygltf::Model* model, const std::vector<float>& values, int type, bool min_max) {
  const int components = type == TINYGLTF_TYPE_VEC3 ? 3 : 1;
  tinygltf::Accessor accessor;
  accessor.bufferView = AddView(model, values.data(), values.size() * sizeof(float));
  accessor.componentType = TINYGLTF_COMPONENT_TYPE_FLOAT;
  accessor.type = type;
  accessor.count = values.size() / components;
  if (min_max) SetMinMax(values, components, &accessor);
  model->accessors.push_back(accessor);
  return static_cast<int>(model->accessors.size()) - 1;
}

int AddVec3(tinygltf::Model* model, const std::vector<float>& values) {
  return AddFloats(model, values, TINYGLTF_TYPE_VEC3, /*min_max=*/true);
}

// A float VEC3 accessor holding `values` as a sparse accessor: the elements `listed` says (by
// element index) are in the sparse list; the others come from `base` (a view of its own), or
// are zeros when `base` is empty. min and max are those of `values`.
int AddSparseVec3(tinygltf::Model* model, const std::vector<float>& values, const std::vector<float>& base,
                  const std::function<bool(size_t)>& listed) {
  const size_t count = values.size() / 3;
  std::vector<uint32_t> indices;
  std::vector<float> listed_values;
  for (size_t i = 0; i < count; ++i) {
    if (!listed(i)) continue;
    indices.push_back(static_cast<uint32_t>(i));
    listed_values.insert(listed_values.end(), values.begin() + 3 * i, values.begin() + 3 * i + 3);
  }
  tinygltf::Accessor accessor;
  accessor.componentType = TINYGLTF_COMPONENT_TYPE_FLOAT;
  accessor.type = TINYGLTF_TYPE_VEC3;
  accessor.count = count;
  SetMinMax(values, 3, &accessor);
  accessor.bufferView = base.empty() ? -1 : AddView(model, base.data(), base.size() * sizeof(float));
  accessor.sparse.isSparse = true;
  accessor.sparse.count = static_cast<int>(indices.size());
  if (count <= 65535) {
    const std::vector<uint16_t> shorts(indices.begin(), indices.end());
    accessor.sparse.indices.bufferView = AddView(model, shorts.data(), shorts.size() * sizeof(uint16_t));
    accessor.sparse.indices.componentType = TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT;
  } else {
    accessor.sparse.indices.bufferView = AddView(model, indices.data(), indices.size() * sizeof(uint32_t));
    accessor.sparse.indices.componentType = TINYGLTF_COMPONENT_TYPE_UNSIGNED_INT;
  }
  accessor.sparse.indices.byteOffset = 0;
  accessor.sparse.values.bufferView = AddView(model, listed_values.data(), listed_values.size() * sizeof(float));
  accessor.sparse.values.byteOffset = 0;
  model->accessors.push_back(accessor);
  return static_cast<int>(model->accessors.size()) - 1;
}

// A tightly packed float VEC3 accessor's values.
absl::Status ReadVec3(const tinygltf::Model& model, int index, std::vector<float>* out) {
  const tinygltf::Accessor& a = model.accessors[index];
  if (a.type != TINYGLTF_TYPE_VEC3 || a.componentType != TINYGLTF_COMPONENT_TYPE_FLOAT ||
      a.sparse.isSparse || a.bufferView < 0) {
    return absl::InvalidArgumentError(absl::StrCat("accessor ", index, " is not a plain VEC3"));
  }
  const tinygltf::BufferView& v = model.bufferViews[a.bufferView];
  const size_t stride = v.byteStride == 0 ? 12 : v.byteStride;
  const unsigned char* base = model.buffers[v.buffer].data.data() + v.byteOffset + a.byteOffset;
  out->resize(3 * a.count);
  for (size_t i = 0; i < a.count; ++i) std::memcpy(&(*out)[3 * i], base + i * stride, 12);
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteWithMorphTargets(const std::string& in, const std::string& out, MorphEncoding encoding) {
  tinygltf::Model model;
  tinygltf::TinyGLTF io;
  std::string err, warn;
  if (!io.LoadBinaryFromFile(&model, &err, &warn, in)) {
    return absl::InvalidArgumentError(absl::StrCat(in, ": ", err));
  }
  if (model.meshes.empty()) return absl::InvalidArgumentError(in + ": no mesh");
  tinygltf::Mesh& mesh = model.meshes[0];
  // The bounding box over every primitive.
  float lo[3] = {1e30f, 1e30f, 1e30f}, hi[3] = {-1e30f, -1e30f, -1e30f};
  std::vector<std::vector<float>> positions(mesh.primitives.size()), normals(mesh.primitives.size());
  for (size_t p = 0; p < mesh.primitives.size(); ++p) {
    const auto& attributes = mesh.primitives[p].attributes;
    if (absl::Status s = ReadVec3(model, attributes.at("POSITION"), &positions[p]); !s.ok()) return s;
    if (attributes.count("NORMAL")) {
      if (absl::Status s = ReadVec3(model, attributes.at("NORMAL"), &normals[p]); !s.ok()) return s;
    }
    for (size_t i = 0; i < positions[p].size(); ++i) {
      lo[i % 3] = std::min(lo[i % 3], positions[p][i]);
      hi[i % 3] = std::max(hi[i % 3], positions[p][i]);
    }
  }
  const float diag = std::sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                               (hi[2] - lo[2]) * (hi[2] - lo[2]));
  for (size_t p = 0; p < mesh.primitives.size(); ++p) {
    const std::vector<float>& v = positions[p];
    const std::vector<float>& n = normals[p];
    std::vector<float> bulge(v.size(), 0.f), bulge_normals, lean(v.size(), 0.f);
    for (size_t i = 0; i < v.size() / 3; ++i) {
      if (!n.empty()) {
        for (int a = 0; a < 3; ++a) bulge[3 * i + a] = 0.02f * diag * n[3 * i + a];
      } else {
        bulge[3 * i + 1] = 0.02f * diag;
      }
      const float mid = 0.5f * (lo[1] + hi[1]);
      lean[3 * i] = 0.1f * diag * std::max(0.f, v[3 * i + 1] - mid) / std::max(1e-9f, hi[1] - mid);
    }
    tinygltf::Primitive& prim = mesh.primitives[p];
    const bool sparse = encoding == MorphEncoding::kSparse;
    // Sparse: the nonzero elements listed over zeros.
    auto positions_accessor = [&](const std::vector<float>& d) {
      if (!sparse) return AddVec3(&model, d);
      return AddSparseVec3(&model, d, {}, [&d](size_t i) { return d[3 * i] != 0 || d[3 * i + 1] != 0 || d[3 * i + 2] != 0; });
    };
    std::map<std::string, int> first = {{"POSITION", positions_accessor(bulge)}};
    if (!n.empty()) {
      bulge_normals.assign(n.size(), 0.f);
      for (size_t i = 0; i < n.size() / 3; ++i) bulge_normals[3 * i + 1] = 0.1f;  // a tilt
      if (sparse) {
        // Sparse over a base: the base has the even elements zeroed, the list restores them.
        std::vector<float> base = bulge_normals;
        for (size_t i = 0; i < base.size() / 3; i += 2) base[3 * i] = base[3 * i + 1] = base[3 * i + 2] = 0.f;
        first["NORMAL"] = AddSparseVec3(&model, bulge_normals, base, [](size_t i) { return i % 2 == 0; });
      } else {
        first["NORMAL"] = AddVec3(&model, bulge_normals);
      }
    }
    prim.targets = {first, {{"POSITION", positions_accessor(lean)}}};
  }
  mesh.weights = {0.5, 0.0};
  // Animate the weights in animations[0]: LINEAR keys at the animation's first, middle and last
  // input times of its first sampler, (0.5, 0) → (1, 0.6) → (0, 1), on the node of meshes[0].
  if (!model.animations.empty() && !model.animations[0].samplers.empty()) {
    tinygltf::Animation& animation = model.animations[0];
    const tinygltf::Accessor& first_input = model.accessors[animation.samplers[0].input];
    const float t0 = static_cast<float>(first_input.minValues.at(0));
    const float t1 = static_cast<float>(first_input.maxValues.at(0));
    const std::vector<float> times = {t0, 0.5f * (t0 + t1), t1};
    const std::vector<float> weights = {0.5f, 0.f, 1.f, 0.6f, 0.f, 1.f};
    tinygltf::AnimationSampler sampler;
    sampler.input = AddFloats(&model, times, TINYGLTF_TYPE_SCALAR, /*min_max=*/true);
    sampler.output = AddFloats(&model, weights, TINYGLTF_TYPE_SCALAR, /*min_max=*/false);
    sampler.interpolation = "LINEAR";
    animation.samplers.push_back(sampler);
    int mesh_node = -1;
    for (size_t n = 0; n < model.nodes.size(); ++n) {
      if (model.nodes[n].mesh == 0) mesh_node = static_cast<int>(n);
    }
    tinygltf::AnimationChannel channel;
    channel.sampler = static_cast<int>(animation.samplers.size()) - 1;
    channel.target_node = mesh_node;
    channel.target_path = "weights";
    animation.channels.push_back(channel);
  }
  tinygltf::Value::Array names = {tinygltf::Value(std::string("bulge")),
                                  tinygltf::Value(std::string("lean"))};
  tinygltf::Value::Object extras;
  extras["targetNames"] = tinygltf::Value(names);
  mesh.extras = tinygltf::Value(extras);
  model.buffers[0].uri.clear();
  if (!io.WriteGltfSceneToFile(&model, out, /*embedImages=*/true, /*embedBuffers=*/true,
                               /*prettyPrint=*/false, /*writeBinary=*/true)) {
    return absl::InternalError("writing " + out + " failed");
  }
  return absl::OkStatus();
}

}  // namespace skinning::testing
