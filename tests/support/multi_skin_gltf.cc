#include "tests/support/multi_skin_gltf.h"

#include <Eigen/Geometry>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tests/support/base64.h"

namespace skinning::testing {
namespace {

// One buffer, a view and an accessor per array.
struct Builder {
  std::string buffer;
  std::vector<std::string> views, accessors;
  template <typename T>
  int Add(const std::vector<T>& data, int component_type, const char* type, size_t count) {
    while (buffer.size() % 4) buffer.push_back('\0');
    views.push_back(absl::StrFormat(R"({"buffer":0,"byteOffset":%d,"byteLength":%d})",
                                    buffer.size(), data.size() * sizeof(T)));
    buffer.append(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(T));
    accessors.push_back(absl::StrFormat(R"({"bufferView":%d,"componentType":%d,"count":%d,)"
                                        R"("type":"%s"})",
                                        views.size() - 1, component_type, count, type));
    return static_cast<int>(accessors.size()) - 1;
  }
};

Eigen::Vector3d Axis(int chain) {
  return Eigen::Vector3d::Unit(chain % 3);
}

}  // namespace

std::string WriteMultiSkinGltf(const MultiSkinGltf& spec, const std::string& path) {
  Builder b;
  const int n = spec.chain_joints;
  const double length = n - 1;  // from the chain's first joint (at the root) to its last

  // The mesh: a tube along +x with hat-function weights over skin-local joints 1..n (joint 0,
  // the root, at x = 0).
  std::vector<float> positions;
  std::vector<uint16_t> joints;
  std::vector<float> weights;
  std::vector<uint16_t> indices;
  for (int r = 0; r < spec.rings; ++r) {
    const double x = length * r / (spec.rings - 1);
    // Between chain joints `below` and `below + 1` (skin-local 1 + below, 2 + below).
    const int below = std::max(0, std::min(static_cast<int>(std::floor(x)), n - 2));
    const double f = std::min(1.0, std::max(0.0, x - below));
    for (int s = 0; s < spec.segments; ++s) {
      const double a = 2 * M_PI * s / spec.segments;
      positions.insert(positions.end(), {static_cast<float>(x), static_cast<float>(0.2 * std::cos(a)),
                                         static_cast<float>(0.2 * std::sin(a))});
      joints.insert(joints.end(),
                    {static_cast<uint16_t>(1 + below), static_cast<uint16_t>(2 + below), 0, 0});
      const float w1 = static_cast<float>(f);
      weights.insert(weights.end(), {1.f - w1, w1, 0.f, 0.f});
      // A slot of zero weight names joint 0, as the spec recommends.
      for (size_t k = weights.size() - 4; k < weights.size(); ++k) {
        if (weights[k] == 0.f) joints[k] = 0;
      }
    }
  }
  for (int r = 0; r + 1 < spec.rings; ++r) {
    for (int s = 0; s < spec.segments; ++s) {
      const int a = r * spec.segments + s, c = r * spec.segments + (s + 1) % spec.segments;
      const int a2 = a + spec.segments, c2 = c + spec.segments;
      indices.insert(indices.end(), {static_cast<uint16_t>(a), static_cast<uint16_t>(c),
                                     static_cast<uint16_t>(a2), static_cast<uint16_t>(c),
                                     static_cast<uint16_t>(c2), static_cast<uint16_t>(a2)});
    }
  }
  const size_t nv = positions.size() / 3;
  const int position_accessor = b.Add(positions, 5126, "VEC3", nv);
  // POSITION needs min and max.
  {
    Eigen::Vector3f lo(1e30f, 1e30f, 1e30f), hi(-1e30f, -1e30f, -1e30f);
    for (size_t v = 0; v < nv; ++v) {
      const Eigen::Vector3f p(positions[3 * v], positions[3 * v + 1], positions[3 * v + 2]);
      lo = lo.cwiseMin(p);
      hi = hi.cwiseMax(p);
    }
    std::string& a = b.accessors[position_accessor];
    a.pop_back();
    a += absl::StrFormat(R"(,"min":[%.9g,%.9g,%.9g],"max":[%.9g,%.9g,%.9g]})", lo.x(), lo.y(),
                         lo.z(), hi.x(), hi.y(), hi.z());
  }
  const int joints_accessor = b.Add(joints, 5123, "VEC4", nv);
  const int weights_accessor = b.Add(weights, 5126, "VEC4", nv);
  const int indices_accessor = b.Add(indices, 5123, "SCALAR", indices.size());

  // Nodes: 0 the root, then each chain's joints (each the child of the previous), then the mesh
  // nodes, one per chain, each with skin = its chain.
  std::vector<std::string> nodes;
  const int prop_node = 1 + spec.chains * n + spec.chains;  // after the joints and mesh nodes
  std::vector<int> root_children;
  std::vector<std::vector<int>> chain_nodes(spec.chains);
  int next = 1;
  for (int c = 0; c < spec.chains; ++c) {
    for (int j = 0; j < n; ++j) chain_nodes[c].push_back(next++);
    root_children.push_back(chain_nodes[c][0]);
  }
  nodes.push_back(absl::StrFormat(R"({"name":"root","translation":[0.1,-0.2,0.3],"children":[%s]})",
                                  absl::StrJoin(root_children, ",")));
  for (int c = 0; c < spec.chains; ++c) {
    const Eigen::Vector3d axis = Axis(c);
    for (int j = 0; j < n; ++j) {
      // The first joint sits at the root; the others one unit along the chain's axis.
      const Eigen::Vector3d t = j == 0 ? Eigen::Vector3d::Zero() : axis;
      std::string children =
          j + 1 < n ? absl::StrFormat(R"(,"children":[%d])", chain_nodes[c][j + 1])
                    : (c == 0 && spec.prop ? (spec.prop_on_joint ? std::string(R"(,"mesh":1)")
                                                                : absl::StrFormat(R"(,"children":[%d])", prop_node))
                                           : "");
      nodes.push_back(absl::StrFormat(R"({"name":"chain%d_%d","translation":[%g,%g,%g]%s})", c, j,
                                      t.x(), t.y(), t.z(), children));
    }
  }
  const int first_mesh_node = next;
  std::vector<int> scene_nodes = {0};
  for (int c = 0; c < spec.chains; ++c) {
    nodes.push_back(absl::StrFormat(R"({"name":"instance%d","mesh":0,"skin":%d})", c, c));
    scene_nodes.push_back(first_mesh_node + c);
  }

  // The prop: a box of its own mesh (mesh 1), below chain 0's last joint.
  int prop_positions = -1, prop_indices = -1;
  if (spec.prop) {
    std::vector<float> box;
    for (int i = 0; i < 8; ++i) {
      box.insert(box.end(), {0.15f * ((i & 1) ? 1 : -1), 0.1f * ((i & 2) ? 1 : -1),
                             0.05f * ((i & 4) ? 1 : -1)});
    }
    const std::vector<uint16_t> faces = {0, 2, 1, 1, 2, 3, 4, 5, 6, 5, 7, 6, 0, 1, 4, 1, 5, 4,
                                         2, 6, 3, 3, 6, 7, 0, 4, 2, 2, 4, 6, 1, 3, 5, 3, 7, 5};
    prop_positions = b.Add(box, 5126, "VEC3", 8);
    b.accessors[prop_positions].pop_back();
    b.accessors[prop_positions] += R"(,"min":[-0.15,-0.1,-0.05],"max":[0.15,0.1,0.05]})";
    prop_indices = b.Add(faces, 5123, "SCALAR", faces.size());
    if (!spec.prop_on_joint && spec.animated_prop) {
      nodes.push_back(absl::StrFormat(R"({"name":"mount","translation":[0.3,0.1,-0.05],"children":[%d]})",
                                      prop_node + 1));
      nodes.push_back(R"({"name":"helmet","mesh":1,"translation":[0.1,0,0],"rotation":[0,0,0.258819,0.965926]})");
    } else if (!spec.prop_on_joint) {
      nodes.push_back(
          R"({"name":"helmet","mesh":1,"translation":[0.3,0.1,-0.05],"rotation":[0,0,0.258819,0.965926]})");
    }
  }

  std::string scenes = absl::StrFormat(R"("scene":0,"scenes":[{"nodes":[%s]}],)", absl::StrJoin(scene_nodes, ","));
  if (spec.scenery) {
    const int ground = static_cast<int>(nodes.size());
    nodes.push_back(R"({"name":"ground","mesh":0,"translation":[0,-3,0]})");
    if (spec.scenery_scene) {
      if (spec.ground_in_both_scenes) scene_nodes.push_back(ground);
      scenes = absl::StrFormat(R"("scene":%d,"scenes":[{"name":"Character","nodes":[%s]},)"
                               R"({"name":"Props","nodes":[%d]}],)",
                               spec.default_scene, absl::StrJoin(scene_nodes, ","), ground);
    } else {
      scene_nodes.push_back(ground);
      scenes = absl::StrFormat(R"("scene":0,"scenes":[{"nodes":[%s]}],)", absl::StrJoin(scene_nodes, ","));
    }
  }

  // Skins: [root, chain c's joints]; IBM = inverse(bind world) · P_c.
  const Eigen::Vector3d root_t(0.1, -0.2, 0.3);
  std::vector<std::string> skins;
  for (int c = 0; c < spec.chains; ++c) {
    const Eigen::Affine3d P(Eigen::Quaterniond::FromTwoVectors(Eigen::Vector3d::UnitX(), Axis(c)));
    std::vector<float> ibm;
    std::vector<int> skin_joints = {0};
    auto add_ibm = [&](const Eigen::Vector3d& world_t, const Eigen::Vector3d& extra) {
      const Eigen::Affine3d m =
          Eigen::Translation3d(extra) * Eigen::Translation3d(-world_t) * P;
      for (int col = 0; col < 4; ++col)
        for (int row = 0; row < 4; ++row) ibm.push_back(static_cast<float>(m.matrix()(row, col)));
    };
    const bool inconsistent = spec.inconsistent_shared_binds && c == 1;
    add_ibm(root_t, inconsistent ? Eigen::Vector3d(0, 0, 0.5) : Eigen::Vector3d::Zero());
    for (int j = 0; j < n; ++j) {
      skin_joints.push_back(chain_nodes[c][j]);
      add_ibm(root_t + Axis(c) * j, Eigen::Vector3d::Zero());
    }
    if (inconsistent) {
      skin_joints.push_back(chain_nodes[0][0]);
      add_ibm(root_t, Eigen::Vector3d::Zero());
    }
    const int accessor = b.Add(ibm, 5126, "MAT4", skin_joints.size());
    skins.push_back(absl::StrFormat(R"({"joints":[%s],"inverseBindMatrices":%d,"skeleton":0})",
                                    absl::StrJoin(skin_joints, ","), accessor));
  }

  // Animation: rotations about several axes on the root and every chain joint.
  const float stretch = static_cast<float>(spec.key_time_scale);
  const std::vector<float> times = {0.f, 0.5f * stretch, 1.5f * stretch};
  const int input = b.Add(times, 5126, "SCALAR", times.size());
  // The input accessor needs min and max.
  b.accessors[input].pop_back();
  b.accessors[input] += absl::StrFormat(R"(,"min":[0],"max":[%.9g]})", times[2]);
  std::vector<std::string> channels, samplers;
  auto animate = [&](int node, const Eigen::Vector3d& axis, double degrees) {
    std::vector<float> q;
    for (int k = 0; k < 3; ++k) {
      const double angle = degrees * M_PI / 180 * (k == 0 ? 0.0 : (k == 1 ? 1.0 : -0.6));
      const Eigen::Quaterniond r(Eigen::AngleAxisd(angle, axis.normalized()));
      q.insert(q.end(), {static_cast<float>(r.x()), static_cast<float>(r.y()),
                         static_cast<float>(r.z()), static_cast<float>(r.w())});
    }
    const int output = b.Add(q, 5126, "VEC4", 3);
    samplers.push_back(absl::StrFormat(R"({"input":%d,"output":%d,"interpolation":"LINEAR"})",
                                       input, output));
    channels.push_back(absl::StrFormat(R"({"sampler":%d,"target":{"node":%d,"path":"rotation"}})",
                                       samplers.size() - 1, node));
  };
  animate(0, Eigen::Vector3d(0.3, 1, 0.2), 25);
  if (spec.prop && spec.animated_prop && !spec.prop_on_joint) animate(prop_node, Eigen::Vector3d(1, 0.2, 0.4), 50);
  for (int c = 0; c < spec.chains; ++c) {
    for (int j = 0; j < n; ++j) {
      animate(chain_nodes[c][j], Eigen::Vector3d(0.2 + 0.3 * j, 0.7, 1.0 - 0.2 * c), 35 + 10 * j);
    }
  }
  while (b.buffer.size() % 4) b.buffer.push_back('\0');

  const std::string json = absl::StrCat(
      R"({"asset":{"version":"2.0","generator":"skinning tests"},)", scenes,
      R"("nodes":[)", absl::StrJoin(nodes, ","), "],",
      absl::StrFormat(R"("meshes":[{"name":"tube","primitives":[{"attributes":{"POSITION":%d,)"
                      R"("JOINTS_0":%d,"WEIGHTS_0":%d},"indices":%d,"mode":4}]}%s],)",
                      position_accessor, joints_accessor, weights_accessor, indices_accessor,
                      spec.prop ? absl::StrFormat(R"(,{"name":"box","primitives":[{"attributes":)"
                                                  R"({"POSITION":%d},"indices":%d,"mode":4}]})",
                                                  prop_positions, prop_indices)
                                : ""),
      R"("skins":[)", absl::StrJoin(skins, ","), "],",
      R"("animations":[{"name":"bend","channels":[)", absl::StrJoin(channels, ","),
      R"(],"samplers":[)", absl::StrJoin(samplers, ","), "]}],",
      absl::StrFormat(R"("buffers":[{"byteLength":%d,"uri":"data:application/octet-stream;base64,%s"}],)",
                      b.buffer.size(), Base64(b.buffer)),
      R"("bufferViews":[)", absl::StrJoin(b.views, ","), R"(],"accessors":[)",
      absl::StrJoin(b.accessors, ","), "]}");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << json;
  return path;
}

}  // namespace skinning::testing
