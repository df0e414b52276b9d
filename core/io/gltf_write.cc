#include "core/io/gltf.h"

#include <tiny_gltf.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "core/io/text_io.h"
#include "core/rig/transform.h"
#include "core/util/status_macros.h"

namespace skinning {
namespace {

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

// Serialized in memory, then written whole through io_internal::WriteStringToFile (tinygltf's
// own file writer did not check its writes: a full disk left a cut-off .glb and success).
absl::Status WriteModel(const tinygltf::Model& model, const std::string& path) {
  const bool binary = absl::EndsWithIgnoreCase(path, ".glb");
  std::ostringstream bytes;
  tinygltf::TinyGLTF writer;
  bool ok = false;
  try {
    ok = writer.WriteGltfSceneToStream(&model, bytes, /*prettyPrint=*/!binary, /*writeBinary=*/binary);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrFormat("writing \"%s\": %s", path, e.what()));
  }
  if (!ok || !bytes) return absl::InternalError(absl::StrFormat("writing \"%s\" failed", path));
  return io_internal::WriteStringToFile(path, bytes.str());
}

const char* InterpolationName(Interpolation interpolation) {
  return interpolation == Interpolation::kStep     ? "STEP"
         : interpolation == Interpolation::kLinear ? "LINEAR"
                                                   : "CUBICSPLINE";
}

// The keys of one mesh's "weights" channel: one weight per target of the mesh a key (for
// CUBICSPLINE in-tangents, values, out-tangents).
struct PieceWeights {
  Interpolation interpolation = Interpolation::kLinear;
  std::vector<double> times, values;
};

// The weights keys of the mesh whose targets are the rig's `targets` (in order) in `animation`;
// nullopt when no channel of it moves them. One channel that moves them gives its own keys (a
// target it leaves out keeps its default weight); several (a mesh whose targets came from several
// nodes) are sampled at the union of their key times as LINEAR keys, exact at those times.
std::optional<PieceWeights> PieceWeightKeys(const Animation& animation, const std::vector<int>& targets,
                                            const std::vector<MorphTarget>& morph_targets) {
  auto moves = [](const MorphWeightChannel& ch, int t) {
    return t >= ch.first_target && t < ch.first_target + ch.count;
  };
  std::vector<const MorphWeightChannel*> moving;
  for (const MorphWeightChannel& ch : animation.morph_channels)
    if (absl::c_any_of(targets, [&](int t) { return moves(ch, t); })) moving.push_back(&ch);
  if (moving.empty()) return std::nullopt;
  PieceWeights keys;
  if (moving.size() == 1) {
    const MorphWeightChannel& ch = *moving[0];
    const bool cubic = ch.interpolation == Interpolation::kCubicSpline;
    const int blocks = cubic ? 3 : 1;  // in-tangent, value, out-tangent
    keys.interpolation = ch.interpolation;
    keys.times = ch.times;
    for (size_t key = 0; key < ch.times.size(); ++key)
      for (int b = 0; b < blocks; ++b)
        for (int t : targets) {
          const bool value = !cubic || b == 1;
          keys.values.push_back(moves(ch, t) ? ch.values[(key * blocks + b) * ch.count + (t - ch.first_target)]
                                : value ? morph_targets[t].default_weight
                                        : 0.0);
        }
    return keys;
  }
  std::vector<double> defaults;
  for (const MorphTarget& target : morph_targets) defaults.push_back(target.default_weight);
  // As floats (the file's), so that no two are equal once written.
  for (const MorphWeightChannel* ch : moving)
    for (double time : ch->times) keys.times.push_back(static_cast<float>(time));
  absl::c_sort(keys.times);
  keys.times.erase(std::unique(keys.times.begin(), keys.times.end()), keys.times.end());
  for (double time : keys.times) {
    const std::vector<double> w = SampleMorphWeights(animation, time, defaults);
    for (int t : targets) keys.values.push_back(w[t]);
  }
  return keys;
}

}  // namespace

absl::Status WriteSkinnedGltf(const std::string& path, const Mesh& mesh, const Skeleton& skeleton,
                              const SparseWeights& weights,
                              const std::vector<Animation>& animations,
                              const std::vector<MeshPart>& parts,
                              const std::vector<MorphTarget>& morph_targets) {
  RETURN_IF_ERROR(ValidateMesh(mesh));
  RETURN_IF_ERROR(ValidateMeshParts(parts, mesh));
  RETURN_IF_ERROR(ValidateMorphTargets(morph_targets, mesh));
  RETURN_IF_ERROR(ValidateSkeleton(skeleton));
  const int nj = skeleton.size();
  if (nj > 65536)
    return absl::InvalidArgumentError(
        absl::StrFormat("skeleton has %d joints; JOINTS_n as UNSIGNED_SHORT holds at "
                        "most 65536",
                        nj));
  const int nv = static_cast<int>(mesh.V.rows());
  RETURN_IF_ERROR(ValidateWeights(weights, nv, nj));
  const int k = weights.k();  // written as ⌈k / 4⌉ sets JOINTS_n/WEIGHTS_n
  for (size_t a = 0; a < animations.size(); ++a) {
    for (size_t c = 0; c < animations[a].channels.size(); ++c)
      RETURN_IF_ERROR(ValidateAnimationChannel(animations[a].channels[c], nj,
                                      absl::StrFormat("animations[%d].channels[%d]", a, c)));
    for (size_t c = 0; c < animations[a].morph_channels.size(); ++c)
      RETURN_IF_ERROR(ValidateMorphWeightChannel(animations[a].morph_channels[c],
                                                 static_cast<int>(morph_targets.size()),
                                                 absl::StrFormat("animations[%d].morph_channels[%d]", a, c)));
  }

  // The skin's joints: every joint but the chain of unweighted non-deforming joints above the
  // skeleton (a file's "Z_UP" and "Armature" nodes). Those stay plain nodes, as the file that
  // brought them had them: listed as joints, Blender imported them as two more bones. (ReadGltf
  // takes such ancestors back as non-deforming joints, in the same order.)
  std::vector<bool> weighted(nj, false);
  for (int v = 0; v < nv; ++v)
    for (int c = 0; c < k; ++c)
      if (weights.weights(v, c) != 0.f) weighted[weights.joints(v, c)] = true;
  std::vector<std::vector<int>> children(nj);
  std::vector<int> roots;
  for (int j = 0; j < nj; ++j) {
    const int parent = skeleton.joints[j].parent;
    (parent < 0 ? roots : children[parent]).push_back(j);
  }
  std::vector<bool> plain(nj, false);
  for (int j = roots.size() == 1 ? roots[0] : -1;
       j >= 0 && !skeleton.joints[j].deforms && !weighted[j] && children[j].size() == 1; j = children[j][0])
    plain[j] = true;
  std::vector<int> skin_joints;  // skeleton joint of each skin joint
  std::vector<int> skin_index(nj, -1);
  for (int j = 0; j < nj; ++j)
    if (!plain[j]) {
      skin_index[j] = static_cast<int>(skin_joints.size());
      skin_joints.push_back(j);
    }

  tinygltf::Model model;
  model.asset.version = "2.0";
  model.asset.generator = "skinning";
  BufferBuilder builder(&model);

  // Joint nodes 0..nj-1, then a mesh node per part, each with the one skin.
  const std::vector<Mesh> pieces = SplitByParts(mesh, parts);
  const int num_pieces = static_cast<int>(pieces.size());
  model.nodes.resize(nj + num_pieces);
  for (int j = 0; j < nj; ++j) {
    const Joint& joint = skeleton.joints[j];
    tinygltf::Node& node = model.nodes[j];
    node.name = joint.name;
    const Transform& t = joint.rest;
    const Eigen::Quaterniond q = UnitWithinFloatRounding(t.rotation);  // as the reader takes it
    node.translation = {t.translation.x(), t.translation.y(), t.translation.z()};
    node.rotation = {q.x(), q.y(), q.z(), q.w()};
    node.scale = {t.scale.x(), t.scale.y(), t.scale.z()};
    if (joint.parent >= 0) model.nodes[joint.parent].children.push_back(j);
  }
  tinygltf::Scene scene;
  for (int j = 0; j < nj; ++j)
    if (skeleton.joints[j].parent < 0) scene.nodes.push_back(j);
  for (int p = 0; p < num_pieces; ++p) scene.nodes.push_back(nj + p);
  model.scenes.push_back(scene);
  model.defaultScene = 0;

  std::vector<std::vector<int>> piece_targets(num_pieces);  // the rig's targets of each piece's mesh, in order
  for (int p = 0; p < num_pieces; ++p) {
    const int first = parts.empty() ? 0 : parts[p].first_vertex;
    const int count = static_cast<int>(pieces[p].V.rows());
    tinygltf::Primitive prim = AddMeshGeometry(pieces[p], &builder);
    const int num_sets = std::max(1, (k + 3) / 4);
    for (int set = 0; set < num_sets; ++set) {
      std::vector<uint16_t> js(static_cast<size_t>(count) * 4, 0);
      std::vector<float> ws(static_cast<size_t>(count) * 4, 0.f);
      for (int v = 0; v < count; ++v)
        for (int c = 0; c < 4; ++c) {
          const int col = set * 4 + c;
          if (col >= k) continue;  // padding
          // An influence of weight 0 names joint 0, as the spec's validator expects (a top-k row
          // of a bake with fewer than k nonzero weights still lists k joints).
          ws[v * 4 + c] = weights.weights(first + v, col);
          js[v * 4 + c] = ws[v * 4 + c] != 0.f ? static_cast<uint16_t>(skin_index[weights.joints(first + v, col)]) : 0;
        }
      prim.attributes[absl::StrFormat("JOINTS_%d", set)] = builder.Add(
          js, kArrayBuffer, TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT, TINYGLTF_TYPE_VEC4, count);
      prim.attributes[absl::StrFormat("WEIGHTS_%d", set)] =
          builder.Add(ws, kArrayBuffer, TINYGLTF_COMPONENT_TYPE_FLOAT, TINYGLTF_TYPE_VEC4, count);
    }
    tinygltf::Mesh gmesh;
    if (!parts.empty()) gmesh.name = parts[p].name;
    // Morph targets of this piece: every one on a single piece, else those that move it.
    std::vector<tinygltf::Value> target_names;
    const bool normals = prim.attributes.count("NORMAL") > 0;
    for (size_t t = 0; t < morph_targets.size(); ++t) {
      const MorphTarget& target = morph_targets[t];
      const auto dV = target.dV.middleRows(first, count);
      if (num_pieces > 1 && dV.cwiseAbs().maxCoeff() == 0) continue;
      piece_targets[p].push_back(static_cast<int>(t));
      std::vector<float> d(static_cast<size_t>(count) * 3);
      std::vector<double> lo(3, std::numeric_limits<double>::infinity()),
          hi(3, -std::numeric_limits<double>::infinity());
      for (int v = 0; v < count; ++v)
        for (int a = 0; a < 3; ++a) {
          const float f = static_cast<float>(dV(v, a));
          d[v * 3 + a] = f;
          lo[a] = std::min<double>(lo[a], f);
          hi[a] = std::max<double>(hi[a], f);
        }
      std::map<std::string, int> attributes;
      attributes["POSITION"] =
          builder.Add(d, kArrayBuffer, TINYGLTF_COMPONENT_TYPE_FLOAT, TINYGLTF_TYPE_VEC3, count, lo, hi);
      if (normals && target.dN.rows() == target.dV.rows()) {
        for (int v = 0; v < count; ++v)
          for (int a = 0; a < 3; ++a) d[v * 3 + a] = static_cast<float>(target.dN(first + v, a));
        attributes["NORMAL"] = builder.Add(d, kArrayBuffer, TINYGLTF_COMPONENT_TYPE_FLOAT, TINYGLTF_TYPE_VEC3, count);
      }
      prim.targets.push_back(std::move(attributes));
      gmesh.weights.push_back(target.default_weight);
      target_names.emplace_back(target.name);
    }
    if (!target_names.empty()) {
      tinygltf::Value::Object extras;
      extras["targetNames"] = tinygltf::Value(std::move(target_names));
      gmesh.extras = tinygltf::Value(std::move(extras));
    }
    gmesh.primitives.push_back(prim);
    model.meshes.push_back(gmesh);
    tinygltf::Node& node = model.nodes[nj + p];
    if (!parts.empty()) node.name = parts[p].name;
    node.mesh = p;
    node.skin = 0;
  }

  // Skin with column-major inverse bind matrices.
  const int ns = static_cast<int>(skin_joints.size());
  std::vector<float> ibm(static_cast<size_t>(ns) * 16);
  for (int s = 0; s < ns; ++s) {
    Eigen::Matrix4d M = skeleton.joints[skin_joints[s]].inverse_bind.matrix();
    M.row(3) << 0, 0, 0, 1;
    for (int c = 0; c < 4; ++c)
      for (int r = 0; r < 4; ++r) ibm[s * 16 + c * 4 + r] = static_cast<float>(M(r, c));
  }
  tinygltf::Skin skin;
  skin.inverseBindMatrices =
      builder.Add(ibm, kNoTarget, TINYGLTF_COMPONENT_TYPE_FLOAT, TINYGLTF_TYPE_MAT4, ns);
  skin.joints = skin_joints;
  model.skins.push_back(skin);

  for (const Animation& animation : animations) {
    tinygltf::Animation out;
    out.name = animation.name;
    // A sampler of the keys (written as floats, `width` values an element of `type`) and a channel
    // that plays it on `node`'s `path`.
    auto add_channel = [&](const std::vector<double>& key_times, const std::vector<double>& key_values, int type,
                           int width, Interpolation interpolation, int node, const char* path) {
      const std::vector<float> times(key_times.begin(), key_times.end());
      const std::vector<float> values(key_values.begin(), key_values.end());
      tinygltf::AnimationSampler sampler;
      sampler.input = builder.Add(times, kNoTarget, TINYGLTF_COMPONENT_TYPE_FLOAT, TINYGLTF_TYPE_SCALAR,
                                  times.size(), {times.front()}, {times.back()});
      sampler.output = builder.Add(values, kNoTarget, TINYGLTF_COMPONENT_TYPE_FLOAT, type, values.size() / width);
      sampler.interpolation = InterpolationName(interpolation);
      tinygltf::AnimationChannel channel;
      channel.sampler = static_cast<int>(out.samplers.size());
      channel.target_node = node;
      channel.target_path = path;
      out.samplers.push_back(std::move(sampler));
      out.channels.push_back(std::move(channel));
    };
    for (const AnimationChannel& ch : animation.channels) {
      const bool rotation = ch.path == AnimationPath::kRotation;
      add_channel(ch.times, ch.values, rotation ? TINYGLTF_TYPE_VEC4 : TINYGLTF_TYPE_VEC3, rotation ? 4 : 3,
                  ch.interpolation, ch.joint,
                  ch.path == AnimationPath::kTranslation ? "translation" : rotation ? "rotation" : "scale");
    }
    for (int p = 0; p < num_pieces; ++p) {
      const std::optional<PieceWeights> keys = PieceWeightKeys(animation, piece_targets[p], morph_targets);
      if (keys) add_channel(keys->times, keys->values, TINYGLTF_TYPE_SCALAR, 1, keys->interpolation, nj + p, "weights");
    }
    model.animations.push_back(out);
  }
  builder.Finish();
  return WriteModel(model, path);
}

absl::Status WritePosedGltf(const std::string& path, const Mesh& mesh,
                            const std::vector<MeshPart>& parts) {
  RETURN_IF_ERROR(ValidateMesh(mesh));
  RETURN_IF_ERROR(ValidateMeshParts(parts, mesh));
  tinygltf::Model model;
  model.asset.version = "2.0";
  model.asset.generator = "skinning";
  BufferBuilder builder(&model);
  tinygltf::Scene scene;
  const std::vector<Mesh> pieces = SplitByParts(mesh, parts);
  for (size_t p = 0; p < pieces.size(); ++p) {
    tinygltf::Mesh gmesh;
    if (!parts.empty()) gmesh.name = parts[p].name;
    gmesh.primitives.push_back(AddMeshGeometry(pieces[p], &builder));
    model.meshes.push_back(gmesh);
    tinygltf::Node node;
    if (!parts.empty()) node.name = parts[p].name;
    node.mesh = static_cast<int>(p);
    model.nodes.push_back(node);
    scene.nodes.push_back(static_cast<int>(p));
  }
  model.scenes.push_back(scene);
  model.defaultScene = 0;
  builder.Finish();
  return WriteModel(model, path);
}

}  // namespace skinning
