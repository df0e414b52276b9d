#include "tests/support/fixtures.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/io/gltf.h"
#include "core/skinning/weights.h"
#include "tests/support/data.h"

namespace skinning::testing {

Rig MakeTwoBoneTube(int rings, int segments, double length, double radius) {
  Rig rig;
  rig.name = "two-bone-tube";
  const int nv = rings * segments;
  rig.mesh.V.resize(nv, 3);
  rig.mesh.N.resize(nv, 3);
  SparseWeights W;
  W.joints.resize(nv, 2);
  W.weights.resize(nv, 2);
  const double mid = length / 2, half_band = length / 10;
  for (int r = 0; r < rings; ++r) {
    const double x = length * r / (rings - 1);
    const double b = std::clamp((x - (mid - half_band)) / (2 * half_band), 0.0, 1.0);
    for (int s = 0; s < segments; ++s) {
      const double a = 2 * M_PI * s / segments;
      const int i = r * segments + s;
      rig.mesh.V.row(i) << x, radius * std::cos(a), radius * std::sin(a);
      rig.mesh.N.row(i) << 0, std::cos(a), std::sin(a);
      W.joints.row(i) << 0, 1;
      W.weights.row(i) << static_cast<float>(1 - b), static_cast<float>(b);
    }
  }
  const int nf = 2 * (rings - 1) * segments;
  rig.mesh.F.resize(nf, 3);
  int f = 0;
  for (int r = 0; r + 1 < rings; ++r)
    for (int s = 0; s < segments; ++s) {
      const int a = r * segments + s, b = r * segments + (s + 1) % segments;
      const int c = a + segments, d = b + segments;
      rig.mesh.F.row(f++) << a, b, d;
      rig.mesh.F.row(f++) << a, d, c;
    }
  rig.skeleton.joints.resize(2);
  rig.skeleton.joints[0].name = "root";
  rig.skeleton.joints[0].parent = -1;
  rig.skeleton.joints[1].name = "elbow";
  rig.skeleton.joints[1].parent = 0;
  rig.skeleton.joints[1].rest.translation = Eigen::Vector3d(mid, 0, 0);
  rig.skeleton.joints[1].inverse_bind.translation() = Eigen::Vector3d(-mid, 0, 0);
  rig.sparse_weights = std::move(W);
  return rig;
}

Rig MakeInterleavedJointSetsTube() {
  Rig rig = MakeTwoBoneTube();
  const Joint like = rig.skeleton.joints[1];
  while (rig.skeleton.joints.size() < 8) {
    Joint j = like;
    j.name = "extra" + std::to_string(rig.skeleton.joints.size());
    j.parent = 1;
    j.rest = Transform();
    rig.skeleton.joints.push_back(j);
  }
  const int n = static_cast<int>(rig.mesh.V.rows());
  SparseWeights W;
  W.joints.resize(n, 4);
  W.weights.setConstant(n, 4, 0.25f);
  for (int i = 0; i < n; ++i)
    for (int s = 0; s < 4; ++s) W.joints(i, s) = (i % 2) * 4 + s;
  rig.sparse_weights = W;
  return rig;
}

Rig MakeTubeForBaking() {
  Rig rig = MakeTwoBoneTube(41, 24);
  rig.sparse_weights.reset();
  rig.skeleton.joints[0].tail = Eigen::Vector3d(1.0, 0, 0);
  rig.skeleton.joints[1].tail = Eigen::Vector3d(1.9, 0, 0);
  return rig;
}

namespace {

void TwoBoneSkeleton(double length, Rig* rig) {
  const double mid = length / 2;
  rig->skeleton.joints.resize(2);
  rig->skeleton.joints[0].name = "root";
  rig->skeleton.joints[0].parent = -1;
  rig->skeleton.joints[0].tail = Eigen::Vector3d(mid, 0, 0);
  rig->skeleton.joints[1].name = "elbow";
  rig->skeleton.joints[1].parent = 0;
  rig->skeleton.joints[1].rest.translation = Eigen::Vector3d(mid, 0, 0);
  rig->skeleton.joints[1].inverse_bind.translation() = Eigen::Vector3d(-mid, 0, 0);
  rig->skeleton.joints[1].tail = Eigen::Vector3d(0.95 * length, 0, 0);
}

}  // namespace

Rig MakeCylinderRig(int rings, int segments, double length, double radius) {
  Rig rig;
  rig.name = "cylinder";
  const int nv = rings * segments + 2;
  rig.mesh.V.resize(nv, 3);
  for (int r = 0; r < rings; ++r) {
    const double x = length * r / (rings - 1);
    for (int s = 0; s < segments; ++s) {
      const double a = 2 * M_PI * s / segments;
      rig.mesh.V.row(r * segments + s) << x, radius * std::cos(a), radius * std::sin(a);
    }
  }
  const int c0 = rings * segments, c1 = c0 + 1;
  rig.mesh.V.row(c0) << 0, 0, 0;
  rig.mesh.V.row(c1) << length, 0, 0;
  std::vector<Eigen::Vector3i> faces;
  for (int r = 0; r + 1 < rings; ++r)
    for (int s = 0; s < segments; ++s) {
      const int a = r * segments + s, b = r * segments + (s + 1) % segments;
      const int c = a + segments, d = b + segments;
      faces.emplace_back(a, b, d);  // normal points away from the axis
      faces.emplace_back(a, d, c);
    }
  for (int s = 0; s < segments; ++s) {
    const int a = s, b = (s + 1) % segments;
    faces.emplace_back(c0, b, a);  // -x cap
    const int off = (rings - 1) * segments;
    faces.emplace_back(c1, off + a, off + b);  // +x cap
  }
  rig.mesh.F = TriangleRows(faces);
  TwoBoneSkeleton(length, &rig);
  return rig;
}

RowMatrixX3d PositionRows(const std::vector<Eigen::Vector3d>& v) {
  RowMatrixX3d V(static_cast<Eigen::Index>(v.size()), 3);
  for (size_t i = 0; i < v.size(); ++i) V.row(static_cast<Eigen::Index>(i)) = v[i].transpose();
  return V;
}

RowMatrixX3i TriangleRows(const std::vector<Eigen::Vector3i>& f) {
  RowMatrixX3i F(static_cast<Eigen::Index>(f.size()), 3);
  for (size_t i = 0; i < f.size(); ++i) F.row(static_cast<Eigen::Index>(i)) = f[i].transpose();
  return F;
}

Rig MakeBoxRig(int nx, int nyz, double length, double h) {
  Rig rig;
  rig.name = "box";
  const int n[3] = {nx, nyz, nyz};
  auto on_boundary = [&](int i, int j, int k) {
    return i == 0 || j == 0 || k == 0 || i == n[0] - 1 || j == n[1] - 1 || k == n[2] - 1;
  };
  std::vector<int> index(static_cast<size_t>(n[0]) * n[1] * n[2], -1);
  auto id = [&](int i, int j, int k) -> int& { return index[(static_cast<size_t>(k) * n[1] + j) * n[0] + i]; };
  std::vector<Eigen::Vector3d> verts;
  for (int k = 0; k < n[2]; ++k)
    for (int j = 0; j < n[1]; ++j)
      for (int i = 0; i < n[0]; ++i)
        if (on_boundary(i, j, k)) {
          id(i, j, k) = static_cast<int>(verts.size());
          verts.emplace_back(length * i / (n[0] - 1), -h + 2 * h * j / (n[1] - 1), -h + 2 * h * k / (n[2] - 1));
        }
  std::vector<Eigen::Vector3i> faces;
  // Each side: axis a fixed at 0 or n[a]-1; quads over the other two axes, oriented outward.
  for (int a = 0; a < 3; ++a) {
    const int b = (a + 1) % 3, c = (a + 2) % 3;
    for (int side = 0; side < 2; ++side) {
      const int fixed = side == 0 ? 0 : n[a] - 1;
      for (int u = 0; u + 1 < n[b]; ++u)
        for (int v = 0; v + 1 < n[c]; ++v) {
          int q[4];
          const int uv[4][2] = {{u, v}, {u + 1, v}, {u + 1, v + 1}, {u, v + 1}};
          for (int t = 0; t < 4; ++t) {
            int ijk[3];
            ijk[a] = fixed;
            ijk[b] = uv[t][0];
            ijk[c] = uv[t][1];
            q[t] = id(ijk[0], ijk[1], ijk[2]);
          }
          // (b, c, a) is a right-handed permutation, so u × v points along +a: flip for side 0.
          if (side == 1) {
            faces.emplace_back(q[0], q[1], q[2]);
            faces.emplace_back(q[0], q[2], q[3]);
          } else {
            faces.emplace_back(q[0], q[2], q[1]);
            faces.emplace_back(q[0], q[3], q[2]);
          }
        }
    }
  }
  rig.mesh.V = PositionRows(verts);
  rig.mesh.F = TriangleRows(faces);
  TwoBoneSkeleton(length, &rig);
  return rig;
}

std::vector<Eigen::Affine3d> RandomRigids(int m, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<Eigen::Affine3d> T;
  for (int j = 0; j < m; ++j) {
    Eigen::Affine3d A = Eigen::Affine3d::Identity();
    A.translate(Eigen::Vector3d(u(gen), u(gen), u(gen)));
    A.rotate(Eigen::Quaterniond(u(gen), u(gen), u(gen), u(gen)).normalized());
    T.push_back(A);
  }
  return T;
}

RandomSkinningData RandomRig(int n, int joints, int k, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  RandomSkinningData r;
  r.V.resize(n, 3);
  r.N.resize(n, 3);
  for (int i = 0; i < n; ++i) {
    r.V.row(i) << u(gen), u(gen), u(gen);
    Eigen::Vector3d nn(u(gen), u(gen), u(gen));
    if (nn.norm() < 1e-3) nn = Eigen::Vector3d::UnitZ();
    r.N.row(i) = nn.normalized().transpose();
  }
  Eigen::MatrixXd D(n, joints);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < joints; ++j) D(i, j) = 0.5 * (u(gen) + 1.0);
  r.W = TopK(D, k);
  return r;
}

void OrientOutward(Mesh* mesh, const std::function<Eigen::Vector3d(const Eigen::Vector3d&)>& core) {
  for (int f = 0; f < mesh->F.rows(); ++f) {
    const Eigen::Vector3d a = mesh->V.row(mesh->F(f, 0)), b = mesh->V.row(mesh->F(f, 1)),
                          c = mesh->V.row(mesh->F(f, 2));
    const Eigen::Vector3d centroid = (a + b + c) / 3.0;
    if ((b - a).cross(c - a).dot(centroid - core(centroid)) < 0)
      std::swap(mesh->F(f, 1), mesh->F(f, 2));
  }
}

Mesh MakeSphere(const Eigen::Vector3d& centre, double r, int nu, int nv) {
  Mesh m;
  m.V.resize(2 + nu * (nv - 1), 3);
  m.V.row(0) = (centre + Eigen::Vector3d(0, 0, r)).transpose();
  for (int i = 1; i < nv; ++i)
    for (int j = 0; j < nu; ++j) {
      const double theta = M_PI * i / nv, phi = 2 * M_PI * j / nu;
      m.V.row(1 + (i - 1) * nu + j) =
          (centre + r * Eigen::Vector3d(std::sin(theta) * std::cos(phi),
                                        std::sin(theta) * std::sin(phi), std::cos(theta)))
              .transpose();
    }
  const int south = 1 + nu * (nv - 1);
  m.V.row(south) = (centre - Eigen::Vector3d(0, 0, r)).transpose();
  std::vector<Eigen::Vector3i> tris;
  auto ring = [&](int i, int j) { return 1 + (i - 1) * nu + (j % nu); };
  for (int j = 0; j < nu; ++j) {
    tris.emplace_back(0, ring(1, j), ring(1, j + 1));
    tris.emplace_back(south, ring(nv - 1, j + 1), ring(nv - 1, j));
    for (int i = 1; i + 1 < nv; ++i) {
      tris.emplace_back(ring(i, j), ring(i + 1, j), ring(i + 1, j + 1));
      tris.emplace_back(ring(i, j), ring(i + 1, j + 1), ring(i, j + 1));
    }
  }
  m.F = TriangleRows(tris);
  OrientOutward(&m, [&](const Eigen::Vector3d&) { return centre; });
  return m;
}

absl::StatusOr<Rig> CesiumManWithUnweightedRoot() {
  absl::StatusOr<GltfCharacter> g = ReadGltf(DataPath("gltf/CesiumMan/CesiumMan.glb"));
  if (!g.ok()) return g.status();
  const Eigen::Vector3d lo = g->mesh.V.colwise().minCoeff().transpose();
  const Eigen::Vector3d hi = g->mesh.V.colwise().maxCoeff().transpose();
  const double diag = (hi - lo).norm();
  const Eigen::Vector3d r = lo - 0.1 * diag * Eigen::Vector3d::Ones();  // outside the box
  Rig rig;
  rig.name = "CesiumMan-rooted";
  Joint root;
  root.name = "_rootJoint";
  root.rest.translation = r;
  root.inverse_bind = Eigen::Affine3d(Eigen::Translation3d(-r));
  root.tail = r - 0.1 * diag * Eigen::Vector3d::Ones();
  rig.skeleton.joints.push_back(root);
  for (Joint j : g->skeleton.joints) {
    if (j.parent < 0) {
      j.parent = 0;
      j.rest.translation -= r;  // world(old root) unchanged: T(r) · T(t − r) R S
    } else {
      j.parent += 1;
    }
    rig.skeleton.joints.push_back(j);
  }
  rig.mesh = g->mesh;
  const Eigen::MatrixXd W = ToDense(g->weights, g->skeleton.size());
  Eigen::MatrixXd rooted = Eigen::MatrixXd::Zero(W.rows(), W.cols() + 1);
  rooted.rightCols(W.cols()) = W;
  rig.dense_weights = std::move(rooted);
  return rig;
}

}  // namespace skinning::testing
