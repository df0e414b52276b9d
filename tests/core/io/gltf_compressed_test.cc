// Compressed glTF on real characters: each sample character packed by third-party tools —
// Debian's gltfpack (KHR_mesh_quantization: integer positions, normals and weights, the
// dequantization folded into the inverse bind matrices; with -c/-cc EXT_meshopt_compression
// too) and glTF-Transform with Google's Draco encoder (KHR_draco_mesh_compression) — reads and
// poses where the original does, to within the precision the packer stored.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <tiny_gltf.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_format.h"
#include "core/io/gltf.h"
#include "core/rig/animation.h"
#include "core/rig/pose.h"
#include "core/rig/skeleton.h"
#include "core/skinning/lbs.h"
#include "tests/support/data.h"
#include "tests/support/glb.h"
#include "tests/support/morph_gltf.h"
#include "tests/support/server_process.h"

// Skips the test when Debian's gltfpack is missing — but only outside CI, where the install script
// has installed it; in CI a missing gltfpack fails the test.
#define SKINNING_REQUIRE_GLTFPACK()                                                                   \
  do {                                                                                                \
    if (std::system("command -v gltfpack >/dev/null 2>&1") != 0) {                                    \
      if (::skinning::testing::InCi()) FAIL() << "gltfpack is not installed in CI (scripts/install-deps.sh)"; \
      GTEST_SKIP() << "gltfpack is not installed (CI is unset, so skipping; scripts/install-deps.sh installs it)"; \
    }                                                                                                 \
  } while (0)

// The same for the Draco packer: node and the npm packages of tests/package.json.
#define SKINNING_REQUIRE_DRACO_TOOL()                                                                 \
  do {                                                                                                \
    const bool _ok = std::system("command -v node >/dev/null 2>&1") == 0 &&                           \
                     std::filesystem::exists(std::string(SKINNING_SOURCE_DIR) +                        \
                                             "/tests/node_modules/draco3dgltf/package.json");          \
    if (!_ok) {                                                                                       \
      if (::skinning::testing::InCi()) FAIL() << "node or tests/node_modules missing in CI (scripts/install-deps.sh)"; \
      GTEST_SKIP() << "node or tests/node_modules missing (CI is unset, so skipping; scripts/install-deps.sh)"; \
    }                                                                                                 \
  } while (0)

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::testing::HasSubstr;

// Runs `packer` on `in`, writing `out`: "gltfpack" with its flags after it, or "draco" with its
// method after it, if any (tests/tools/draco_compress.mjs under node). Its output goes to
// `out`.log.
::testing::AssertionResult Pack(const std::string& packer, const std::string& in, const std::string& out) {
  const bool draco = packer.rfind("draco", 0) == 0;
  const std::string command =
      (draco ? "node '" + std::string(SKINNING_SOURCE_DIR) + "/tests/tools/draco_compress.mjs' '" + in + "' '" + out +
                   "'" + packer.substr(5)
             : packer + " -i '" + in + "' -o '" + out + "'") +
      " > '" + out + ".log' 2>&1";
  if (std::system(command.c_str()) != 0) return ::testing::AssertionFailure() << "failed: " << command;
  return ::testing::AssertionSuccess();
}

// A .glb's JSON chunk and the bytes after it.
struct Glb {
  nlohmann::json json;
  std::string rest;
};

Glb ReadGlb(const std::string& path) {
  const testing::GlbChunks chunks = testing::SplitGlb(testing::FileBytes(path));
  return Glb{nlohmann::json::parse(chunks.json), chunks.rest};
}

void WriteGlb(const Glb& glb, const std::string& path) {
  std::ofstream f(path, std::ios::binary);
  f << testing::JoinGlb(glb.json.dump(), glb.rest);
}

// The Draco stream of a file's meshes[0].primitives[0], and its replacement: appended to the end
// of the BIN chunk (the only one after the JSON), the primitive's view pointed at it.
nlohmann::json& DracoView(Glb* g) {
  const int view = g->json["meshes"][0]["primitives"][0]["extensions"]["KHR_draco_mesh_compression"]["bufferView"];
  return g->json["bufferViews"][view];
}

std::string DracoStream(Glb g) {
  const nlohmann::json& view = DracoView(&g);
  return g.rest.substr(8 + view.value("byteOffset", size_t{0}), view["byteLength"].get<size_t>());
}

void SetDracoStream(Glb* g, const std::string& stream) {
  uint32_t length = 0;
  std::memcpy(&length, g->rest.data(), 4);
  std::string data = g->rest.substr(8, length);
  while (data.size() % 4 != 0) data.push_back('\0');
  DracoView(g)["byteOffset"] = data.size();
  DracoView(g)["byteLength"] = stream.size();
  data += stream;
  while (data.size() % 4 != 0) data.push_back('\0');
  length = static_cast<uint32_t>(data.size());
  g->json["buffers"][0]["byteLength"] = length;
  g->rest = std::string(reinterpret_cast<const char*>(&length), 4) + std::string("BIN\0", 4) + data;
}

// varUI32 of the Draco bitstream: 7 bits a byte, least significant first.
std::string Varint(uint32_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out.push_back(static_cast<char>((v & 0x7f) | 0x80));
  out.push_back(static_cast<char>(v));
  return out;
}

// An edgebreaker stream (without metadata) with the vertex and face counts of its connectivity
// header replaced: they follow the 11-byte header and the traversal byte.
std::string WithEdgebreakerCounts(const std::string& stream, uint32_t vertices, uint32_t faces) {
  size_t at = 12;
  for (int field = 0; field < 2; ++field) {
    while ((static_cast<unsigned char>(stream[at]) & 0x80) != 0) ++at;
    ++at;
  }
  return stream.substr(0, 12) + Varint(vertices) + Varint(faces) + stream.substr(at);
}

// Posed positions (world space) of a character: first in its rest pose (its joints' own rest
// transforms, from `source` by name), then at each of `times` of `source`'s first animation, the
// joints' local transforms taken from `source` by joint name (so that both files pose alike
// whatever each one's joint order and keyframe encoding). `V` replaces the character's bind
// vertices (e.g. morphed ones) when given.
std::vector<RowMatrixX3d> PosedByName(const GltfCharacter& c, const GltfCharacter& source,
                                      const std::vector<double>& times, const RowMatrixX3d* V = nullptr) {
  std::vector<RowMatrixX3d> out;
  const std::vector<int> order = *TopologicalOrder(c.skeleton);
  auto posed = [&](const std::vector<Transform>& local) {
    Pose pose = RestPose(c.skeleton);
    for (int j = 0; j < c.skeleton.size(); ++j) {
      const int s = source.skeleton.Find(c.skeleton.joints[j].name);
      if (s >= 0) pose.local[j] = local[s];
    }
    const std::vector<Eigen::Affine3d> T = *SkinningTransforms(c.skeleton, order, pose);
    RowMatrixX3d X;
    Lbs(V != nullptr ? *V : c.mesh.V, c.weights, T, &X);
    return X;
  };
  out.push_back(posed(RestPose(source.skeleton).local));
  for (double t : times) out.push_back(posed(SampleAnimation(source.skeleton, source.animations[0], t)));
  return out;
}

// For each row of A, the row of B nearest to it.
std::vector<Eigen::Index> Nearest(const RowMatrixX3d& A, const RowMatrixX3d& B) {
  std::vector<Eigen::Index> match(A.rows());
  for (Eigen::Index i = 0; i < A.rows(); ++i) {
    double best = std::numeric_limits<double>::infinity();
    for (Eigen::Index j = 0; j < B.rows(); ++j) {
      const double d = (A.row(i) - B.row(j)).squaredNorm();
      if (d < best) best = d, match[i] = j;
    }
  }
  return match;
}

// (sample character, packer): "gltfpack" quantizes, "gltfpack -c" and "gltfpack -cc" also
// compress the buffer views with EXT_meshopt_compression ("-cc" harder, with filters), "draco"
// compresses each primitive with KHR_draco_mesh_compression (glTF-Transform with Google's
// draco3d encoder, tests/tools/draco_compress.mjs; edgebreaker, or "draco sequential").
class GltfQuantizedTest : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(GltfQuantizedTest, PackedCharacterPosesLikeTheOriginal) {
  const auto& [file, packer] = GetParam();
  const std::string in = testing::DataPath(file);
  SKINNING_REQUIRE_DATA(in);
  const bool draco = packer.rfind("draco", 0) == 0;
  const bool meshopt = !draco && packer != "gltfpack";
  if (draco) {
    SKINNING_REQUIRE_DRACO_TOOL();
  } else {
    SKINNING_REQUIRE_GLTFPACK();
  }
  const std::filesystem::path dir = testing::MakeTempDir("gltf_packed_" + testing::DataFileTestName(in));
  const std::string packed = (dir / "packed.glb").string();
  ASSERT_TRUE(Pack(packer, in, packed));

  // The packer did its work: the extensions are required, and POSITION is stored as integers
  // (gltfpack) or only in the Draco stream. Read from the file's JSON chunk (tinygltf alone
  // refuses a meshopt file whose fallback buffer is larger than its BIN chunk).
  {
    const nlohmann::json doc = ReadGlb(packed).json;
    const auto required = doc.value("extensionsRequired", std::vector<std::string>());
    const nlohmann::json& primitive = doc.at("meshes").at(0).at("primitives").at(0);
    const nlohmann::json& position = doc.at("accessors").at(primitive.at("attributes").at("POSITION").get<int>());
    if (draco) {
      ASSERT_THAT(required, ::testing::Contains("KHR_draco_mesh_compression"));
      EXPECT_TRUE(primitive.at("extensions").contains("KHR_draco_mesh_compression"));
      EXPECT_FALSE(position.contains("bufferView")) << "POSITION only in the Draco stream";
      const std::string stream = DracoStream(ReadGlb(packed));
      ASSERT_GT(stream.size(), 8u);
      EXPECT_EQ(stream[8], packer == "draco sequential" ? 0 : 1) << "the encoding method byte: sequential or edgebreaker";
    } else {
      ASSERT_THAT(required, ::testing::Contains("KHR_mesh_quantization"));
      EXPECT_NE(position.at("componentType"), TINYGLTF_COMPONENT_TYPE_FLOAT);
    }
    if (meshopt) {
      ASSERT_THAT(required, ::testing::Contains("EXT_meshopt_compression"));
      int views = 0;
      for (const auto& view : doc.at("bufferViews")) views += view.contains("extensions");
      EXPECT_GT(views, 0);
    }
  }

  absl::StatusOr<GltfCharacter> original = ReadGltf(in);
  absl::StatusOr<GltfCharacter> quantized = ReadGltf(packed);
  ASSERT_TRUE(original.ok()) << original.status();
  ASSERT_TRUE(quantized.ok()) << quantized.status().message();
  ASSERT_FALSE(original->animations.empty());
  // The packers reorder vertices; gltfpack merges those identical in every attribute, Draco's
  // edgebreaker splits some along attribute seams.
  EXPECT_LE(quantized->mesh.V.rows(), draco ? original->mesh.V.rows() * 6 / 5 : original->mesh.V.rows());
  EXPECT_GE(quantized->mesh.V.rows(), original->mesh.V.rows() * 9 / 10);

  const Animation& animation = original->animations[0];
  std::vector<double> times;
  for (int f = 0; f <= 10; ++f) times.push_back(animation.start + (animation.end - animation.start) * f / 10.0);
  const std::vector<RowMatrixX3d> want = PosedByName(*original, *original, times);
  const std::vector<RowMatrixX3d> got = PosedByName(*quantized, *original, times);
  const double diag = (want[0].colwise().maxCoeff() - want[0].colwise().minCoeff()).norm();
  // gltfpack's integer grid is not kept as the bind space: a quantized character's bind vertices
  // are where its rest pose puts them (its skin joints' rest transforms are all identity).
  if (!draco) {
    const double off = (quantized->mesh.V - got[0]).rowwise().norm().maxCoeff();
    std::printf("%s: bind vertices from the rest pose: max %.2e of the diagonal\n", packer.c_str(), off / diag);
    EXPECT_LT(off, 1e-5 * diag) << "the bind space is the rest pose's world space";
  }

  // Vertices are matched in the rest pose, both ways (every packed vertex is an original one and
  // every original one is kept), copies of one point being interchangeable; then compared in
  // every pose of the animation. gltfpack's precision: positions 14 bits over the mesh's extent
  // (at most about 5e-5 of the diagonal: all the rest pose shows, its joints carrying every
  // vertex alike) and weights 8 bits (1/255 each), which moves a posed vertex by at most about
  // 4/255 of how far its joints carry it apart — a few tenths of a percent of the diagonal.
  const std::vector<Eigen::Index> packed_to_original = Nearest(got[0], want[0]);
  const std::vector<Eigen::Index> original_to_packed = Nearest(want[0], got[0]);
  double rest_worst = 0, worst = 0, sum_sq = 0;
  long compared = 0;
  for (const bool from_packed : {true, false}) {
    const std::vector<RowMatrixX3d>& a = from_packed ? got : want;
    const std::vector<RowMatrixX3d>& b = from_packed ? want : got;
    const std::vector<Eigen::Index>& match = from_packed ? packed_to_original : original_to_packed;
    for (size_t f = 0; f < a.size(); ++f)
      for (Eigen::Index i = 0; i < a[f].rows(); ++i) {
        const double d = (a[f].row(i) - b[f].row(match[i])).norm();
        if (f == 0) {
          rest_worst = std::max(rest_worst, d);
        } else {
          worst = std::max(worst, d);
          sum_sq += d * d;
          ++compared;
        }
      }
  }
  const double rms = std::sqrt(sum_sq / compared);
  std::printf("%s packed by %s (%lld of %lld vertices): rest pose %.2e, over %zu animation poses RMS %.2e "
              "and max %.2e of the diagonal\n",
              file.c_str(), packer.c_str(), static_cast<long long>(quantized->mesh.V.rows()),
              static_cast<long long>(original->mesh.V.rows()), rest_worst / diag, times.size(), rms / diag,
              worst / diag);
  EXPECT_LT(rest_worst, 1e-4 * diag);
  EXPECT_LT(rms, 1e-3 * diag);
  EXPECT_LT(worst, 5e-3 * diag);

  // The packed file's own animation (rotations as 16-bit quaternions, with -cc through the
  // QUATERNION and EXPONENTIAL filters; keys resampled at 30 Hz) poses it as the original's does.
  ASSERT_EQ(quantized->animations.size(), original->animations.size());
  const std::vector<RowMatrixX3d> own = PosedByName(*quantized, *quantized, times);
  double own_worst = 0;
  for (size_t f = 1; f < own.size(); ++f)
    for (Eigen::Index i = 0; i < own[f].rows(); ++i)
      own_worst = std::max(own_worst, (own[f].row(i) - want[f].row(packed_to_original[i])).norm());
  std::printf("  posed by its own animation: max %.2e of the diagonal\n", own_worst / diag);
  EXPECT_LT(own_worst, 1e-2 * diag);

  // Normals, 8 bits per component in the packed file, point the same way: within 2 degrees.
  // Draco keeps the original's bind space; gltfpack's files are read into the rest pose's world
  // space (above), where the original's normals go by its rest skinning transform (one for every
  // joint: these characters are bound in their rest pose). Copies of a point along a hard edge
  // differ in normal, so each packed normal is compared with the closest original one at its point.
  ASSERT_EQ(original->mesh.N.rows(), original->mesh.V.rows());
  ASSERT_EQ(quantized->mesh.N.rows(), quantized->mesh.V.rows());
  RowMatrixX3d original_normals = original->mesh.N;
  if (!draco) {
    const Eigen::Matrix3d A =
        (*SkinningTransforms(original->skeleton, *TopologicalOrder(original->skeleton), RestPose(original->skeleton)))[0]
            .linear();
    original_normals = original_normals * A.inverse();  // rows: (A⁻ᵀ n)ᵀ
  }
  double worst_degrees = 0;
  for (Eigen::Index i = 0; i < got[0].rows(); ++i) {
    EXPECT_NEAR(quantized->mesh.N.row(i).norm(), 1.0, 1e-6) << "normals are renormalized (Draco's in float)";
    double best = 180;
    for (Eigen::Index j = 0; j < want[0].rows(); ++j) {
      if ((got[0].row(i) - want[0].row(j)).norm() > 1e-4 * diag) continue;
      const double cosine =
          std::clamp(quantized->mesh.N.row(i).dot(original_normals.row(j).normalized()), -1.0, 1.0);
      best = std::min(best, std::acos(cosine) * 180 / M_PI);
    }
    worst_degrees = std::max(worst_degrees, best);
  }
  std::printf("  normals within %.2f degrees\n", worst_degrees);
  EXPECT_LT(worst_degrees, 2.0);

  // The same file without the extension declared is refused, naming the attribute's type.
  if (packer != "gltfpack") return;
  tinygltf::Model model;
  tinygltf::TinyGLTF io;
  std::string err, warn;
  ASSERT_TRUE(io.LoadBinaryFromFile(&model, &err, &warn, packed)) << err;
  model.extensionsRequired.clear();
  model.extensionsUsed.erase(std::remove(model.extensionsUsed.begin(), model.extensionsUsed.end(), "KHR_mesh_quantization"),
                             model.extensionsUsed.end());
  const std::string undeclared = (dir / "undeclared.glb").string();
  ASSERT_TRUE(io.WriteGltfSceneToFile(&model, undeclared, true, true, false, true));
  absl::StatusOr<GltfCharacter> refused = ReadGltf(undeclared);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("is not allowed here (expected FLOAT)"));
  std::filesystem::remove_all(dir);
}

// Morph targets quantized too (BYTE/SHORT deltas): CesiumMan with the test's two targets, packed,
// morphs and poses where the original does.
TEST(GltfQuantizedMorphTest, GltfpackedMorphTargetsMorphLikeTheOriginal) {
  const std::string in = testing::DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(in);
  SKINNING_REQUIRE_GLTFPACK();
  const std::filesystem::path dir = testing::MakeTempDir("gltf_quantized_morph");
  const std::string morphed = (dir / "morph.glb").string(), packed = (dir / "packed.glb").string();
  ASSERT_TRUE(testing::WriteWithMorphTargets(in, morphed).ok());
  ASSERT_TRUE(Pack("gltfpack", morphed, packed));
  absl::StatusOr<GltfCharacter> original = ReadGltf(morphed);
  absl::StatusOr<GltfCharacter> quantized = ReadGltf(packed);
  ASSERT_TRUE(original.ok()) << original.status();
  ASSERT_TRUE(quantized.ok()) << quantized.status().message();
  ASSERT_EQ(quantized->morph_targets.size(), 2u);
  {
    const nlohmann::json doc = ReadGlb(packed).json;
    const int delta = doc.at("meshes").at(0).at("primitives").at(0).at("targets").at(0).at("POSITION");
    EXPECT_NE(doc.at("accessors").at(delta).at("componentType"), TINYGLTF_COMPONENT_TYPE_FLOAT)
        << "the deltas are quantized";
  }
  // Morphed by (0.2, 0.8), then posed in the rest pose and at the animation's middle.
  auto morph_and_pose = [&](const GltfCharacter& c) {
    RowMatrixX3d V = c.mesh.V;
    const double w[2] = {0.2, 0.8};
    for (int k = 0; k < 2; ++k) V += w[k] * c.morph_targets[k].dV;
    const double middle = 0.5 * (original->animations[0].start + original->animations[0].end);
    return PosedByName(c, *original, {middle}, &V);
  };
  const std::vector<RowMatrixX3d> want_poses = morph_and_pose(*original), got_poses = morph_and_pose(*quantized);
  const RowMatrixX3d &want_rest = want_poses[0], &got_rest = got_poses[0];
  const RowMatrixX3d &want = want_poses[1], &got = got_poses[1];
  const double diag = (want_rest.colwise().maxCoeff() - want_rest.colwise().minCoeff()).norm();
  const std::vector<Eigen::Index> match = Nearest(got_rest, want_rest);
  double rest_worst = 0, worst = 0;
  for (Eigen::Index i = 0; i < got.rows(); ++i) {
    rest_worst = std::max(rest_worst, (got_rest.row(i) - want_rest.row(match[i])).norm());
    worst = std::max(worst, (got.row(i) - want.row(match[i])).norm());
  }
  std::printf("morphed CesiumMan packed by gltfpack: rest pose %.2e, mid-animation %.2e of the diagonal\n",
              rest_worst / diag, worst / diag);
  // Deltas carry their own quantization (gltfpack: 8 to 16 bits over their range, up to 10 % of
  // the diagonal here) on top of the positions'.
  EXPECT_LT(rest_worst, 1e-3 * diag);
  EXPECT_LT(worst, 5e-3 * diag);
  std::filesystem::remove_all(dir);
}

// The fuzz seeds of tests/fuzz/seeds/gltf (no shared data needed): the hand-made triangle with
// sparse accessors, and the same file packed by gltfpack -cc (quantized, every view compressed),
// read to the same triangle, weights and morph target, within the packing's precision.
TEST(GltfMeshoptTest, PackedSeedReadsAsItsSource) {
  const std::string seeds = std::string(SKINNING_SOURCE_DIR) + "/tests/fuzz/seeds/gltf/";
  absl::StatusOr<GltfCharacter> plain = ReadGltf(seeds + "sparse_triangle.gltf");
  absl::StatusOr<GltfCharacter> packed = ReadGltf(seeds + "triangle_meshopt.glb");
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(packed.ok()) << packed.status();
  ASSERT_EQ(packed->mesh.V.rows(), 3);
  ASSERT_EQ(plain->mesh.V.rows(), 3);
  EXPECT_EQ(plain->mesh.V.row(2), Eigen::RowVector3d(1, 1, 1)) << "the sparse substitution";
  ASSERT_EQ(packed->morph_targets.size(), 1u);
  // Rest positions in world space: the packed bind space is gltfpack's quantized grid.
  auto world = [](const GltfCharacter& c, const RowMatrixX3d& V) { return PosedByName(c, c, {}, &V)[0]; };
  const RowMatrixX3d a = world(*plain, plain->mesh.V), b = world(*packed, packed->mesh.V);
  const RowMatrixX3d am = world(*plain, plain->mesh.V + plain->morph_targets[0].dV);
  const RowMatrixX3d bm = world(*packed, packed->mesh.V + packed->morph_targets[0].dV);
  const std::vector<Eigen::Index> match = Nearest(b, a);
  for (Eigen::Index i = 0; i < 3; ++i) {
    EXPECT_LT((b.row(i) - a.row(match[i])).norm(), 1e-3) << "vertex " << i;
    EXPECT_LT((bm.row(i) - am.row(match[i])).norm(), 1e-3) << "morphed vertex " << i;
  }
}

// The Draco seed: a hand-made two-bone quad, compressed by tests/tools/draco_compress.mjs, reads
// as its source and poses alike by its own animation.
TEST(GltfDracoTest, PackedSeedReadsAsItsSource) {
  const std::string seeds = std::string(SKINNING_SOURCE_DIR) + "/tests/fuzz/seeds/gltf/";
  absl::StatusOr<GltfCharacter> plain = ReadGltf(seeds + "quad.gltf");
  absl::StatusOr<GltfCharacter> packed = ReadGltf(seeds + "quad_draco.glb");
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(packed.ok()) << packed.status();
  ASSERT_EQ(plain->mesh.V.rows(), 4);
  ASSERT_EQ(packed->mesh.V.rows(), 4);
  ASSERT_EQ(packed->mesh.F.rows(), 2);
  ASSERT_FALSE(packed->animations.empty());
  const std::vector<double> times = {0.0, 0.5, 1.0};
  const std::vector<RowMatrixX3d> want = PosedByName(*plain, *plain, times);
  const std::vector<RowMatrixX3d> got = PosedByName(*packed, *packed, times);
  const std::vector<Eigen::Index> match = Nearest(got[0], want[0]);
  std::vector<bool> hit(4, false);
  for (Eigen::Index i = 0; i < 4; ++i) {
    hit[match[i]] = true;
    for (size_t f = 0; f < want.size(); ++f)
      EXPECT_LT((got[f].row(i) - want[f].row(match[i])).norm(), 1e-3) << "vertex " << i << " pose " << f;
  }
  EXPECT_EQ(std::count(hit.begin(), hit.end(), true), 4) << "every corner is one of the packed vertices";
}

// One change of a .glb each, written to `path`: the reader refuses each with INVALID_ARGUMENT
// whose message holds `message`.
struct Case {
  std::string name;
  std::function<void(Glb*)> change;
  std::string message;
};

void ExpectEachRefused(const Glb& original, const std::vector<Case>& cases, const std::string& path) {
  for (const Case& c : cases) {
    Glb g = original;
    c.change(&g);
    WriteGlb(g, path);
    absl::StatusOr<GltfCharacter> r = ReadGltf(path);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.message)) << c.name;
  }
}

// Malformed EXT_meshopt_compression data (a gltfpack -c file changed in one place) is
// INVALID_ARGUMENT naming the buffer view and what is wrong; never a crash, never a huge
// allocation from a small file.
TEST(GltfMeshoptTest, RejectsMalformedCompressedViews) {
  const std::string in = testing::DataPath("gltf/RiggedSimple/RiggedSimple.glb");
  SKINNING_REQUIRE_DATA(in);
  SKINNING_REQUIRE_GLTFPACK();
  const std::filesystem::path dir = testing::MakeTempDir("gltf_meshopt_malformed");
  const std::string packed = (dir / "packed.glb").string(), changed = (dir / "changed.glb").string();
  ASSERT_TRUE(Pack("gltfpack -c", in, packed));
  ASSERT_TRUE(ReadGltf(packed).ok()) << ReadGltf(packed).status();
  const Glb original = ReadGlb(packed);
  // The first compressed ATTRIBUTES view and the first view into the fallback buffer.
  int attributes = -1;
  for (size_t v = 0; v < original.json["bufferViews"].size() && attributes < 0; ++v) {
    const nlohmann::json& view = original.json["bufferViews"][v];
    if (view.contains("extensions") && view["extensions"]["EXT_meshopt_compression"]["mode"] == "ATTRIBUTES")
      attributes = static_cast<int>(v);
  }
  ASSERT_GE(attributes, 0);
  const std::string where = absl::StrFormat("bufferViews[%d].extensions.EXT_meshopt_compression", attributes);
  auto ext = [attributes](Glb* g) -> nlohmann::json& {
    return g->json["bufferViews"][attributes]["extensions"]["EXT_meshopt_compression"];
  };
  const std::vector<Case> cases = {
      {"mode", [&](Glb* g) { ext(g)["mode"] = "STRIPS"; }, where + ".mode: \"STRIPS\" is not ATTRIBUTES"},
      {"stride", [&](Glb* g) { ext(g)["byteStride"] = 6; }, where + ".byteStride: 6 (ATTRIBUTES: a multiple of 4"},
      {"filter", [&](Glb* g) { ext(g)["filter"] = "QUATERNION"; ext(g)["byteStride"] = 4; },
       where + ".filter: \"QUATERNION\" does not go with mode ATTRIBUTES and byteStride 4"},
      {"ratio", [&](Glb* g) { ext(g)["count"] = 100000000; }, "more than 128 times as many"},
      {"source range", [&](Glb* g) { ext(g)["byteOffset"] = 1 << 30; }, where + ": "},
      {"corrupt data",
       [&](Glb* g) {
         // The compressed stream's first byte is its header (0xa0 | version): make it invalid.
         const size_t offset = 8 + ext(g).value("byteOffset", size_t{0});  // past the BIN chunk header
         g->rest[offset] = static_cast<char>(0x00);
       },
       "the compressed data does not decode"},
      {"plain view into the fallback",
       [&](Glb* g) { g->json["bufferViews"][attributes].erase("extensions"); },
       absl::StrFormat("bufferViews[%d] is not compressed but points into buffers[", attributes)},
  };
  ExpectEachRefused(original, cases, changed);
  std::filesystem::remove_all(dir);
}

// Malformed KHR_draco_mesh_compression data (a glTF-Transform Draco file changed in one place) is
// INVALID_ARGUMENT naming the primitive and what is wrong.
TEST(GltfDracoTest, RejectsMalformedDracoPrimitives) {
  const std::string in = testing::DataPath("gltf/RiggedSimple/RiggedSimple.glb");
  SKINNING_REQUIRE_DATA(in);
  SKINNING_REQUIRE_DRACO_TOOL();
  const std::filesystem::path dir = testing::MakeTempDir("gltf_draco_malformed");
  const std::string packed = (dir / "packed.glb").string(), changed = (dir / "changed.glb").string();
  ASSERT_TRUE(Pack("draco", in, packed));
  ASSERT_TRUE(ReadGltf(packed).ok()) << ReadGltf(packed).status();
  const Glb original = ReadGlb(packed);
  const std::string where = "meshes[0].primitives[0].extensions.KHR_draco_mesh_compression";
  auto ext = [](Glb* g) -> nlohmann::json& {
    return g->json["meshes"][0]["primitives"][0]["extensions"]["KHR_draco_mesh_compression"];
  };
  auto position = [&](Glb* g) -> nlohmann::json& {
    return g->json["accessors"][g->json["meshes"][0]["primitives"][0]["attributes"]["POSITION"].get<int>()];
  };
  const std::vector<Case> cases = {
      {"corrupt stream",
       [&](Glb* g) {
         // The stream starts with "DRACO"; without it nothing decodes.
         const nlohmann::json& view = g->json["bufferViews"][ext(g)["bufferView"].get<int>()];
         g->rest[8 + view.value("byteOffset", size_t{0})] = 'X';  // past the BIN chunk header
       },
       where + ": the Draco data does not decode"},
      {"unknown attribute id", [&](Glb* g) { ext(g)["attributes"]["POSITION"] = 77; },
       where + ".attributes.POSITION: the Draco mesh has no attribute with id 77"},
      {"count", [&](Glb* g) { position(g)["count"] = 161; },
       where + ".attributes.POSITION: accessors["},
      {"attribute the primitive lacks", [&](Glb* g) { ext(g)["attributes"]["TEXCOORD_3"] = 0; },
       where + ".attributes.TEXCOORD_3: the primitive has no such attribute accessor"},
      {"ratio", [&](Glb* g) { position(g)["count"] = 100000000; }, "more than 256 times as many"},
  };
  ExpectEachRefused(original, cases, changed);
  std::filesystem::remove_all(dir);
}

// A Draco stream's header is checked before libdraco decodes it: it allocates for the counts
// there, so a 2 kB file whose header claimed 100M faces used to take 2.4 GB before failing. Now
// counts the accessors do not have, other bitstream versions, point clouds and streams cut short
// are refused first, and so are more attribute seam tables (libdraco allocates for each per
// corner) than the extension has attributes. (The hand-made seed quad: edgebreaker, 4 vertices,
// 2 faces.)
TEST(GltfDracoTest, RefusesStreamHeadersTheAccessorsDoNotMatch) {
  const Glb seed = ReadGlb(std::string(SKINNING_SOURCE_DIR) + "/tests/fuzz/seeds/gltf/quad_draco.glb");
  const std::string stream = DracoStream(seed);
  ASSERT_EQ(stream.substr(0, 5), "DRACO");
  ASSERT_EQ(stream.substr(5, 4), std::string("\x02\x02\x01\x01", 4)) << "bitstream 2.2, mesh, edgebreaker";
  ASSERT_EQ(stream.substr(11, 4), std::string("\x00\x04\x02\x02", 4))
      << "traversal 0, 4 vertices, 2 faces, 2 attribute seam tables (JOINTS_0 and WEIGHTS_0)";
  auto with_stream = [](std::string changed) { return [changed](Glb* g) { SetDracoStream(g, changed); }; };
  auto byte = [&](size_t at, char value) {
    std::string changed = stream;
    changed[at] = value;
    return changed;
  };
  std::string metadata_cut = byte(10, '\x80');  // the metadata flag, then nothing after the header
  metadata_cut.resize(11);
  const std::string where = "meshes[0].primitives[0].extensions.KHR_draco_mesh_compression: ";
  const std::vector<Case> cases = {
      {"faces", with_stream(WithEdgebreakerCounts(stream, 4, 100000000)),
       where + "the Draco stream declares 100000000 faces but accessors[0] (indices) has count 6"},
      {"vertices", with_stream(WithEdgebreakerCounts(stream, 5000000, 2)),
       where + "the Draco stream declares 5000000 vertices but accessors[2] (JOINTS_0) has count 4"},
      {"bitstream 2.1", with_stream(byte(6, '\x01')),
       where + "the Draco data does not decode (it is Draco bitstream 2.1; KHR_draco_mesh_compression is written "
               "against 2.2)"},
      {"point cloud", with_stream(byte(7, '\x00')),
       where + "the Draco data does not decode (it is not a triangle mesh (encoder type 0))"},
      {"method", with_stream(byte(8, '\x07')),
       where + "the Draco data does not decode (encoding method 7 is neither sequential (0) nor edgebreaker (1))"},
      {"seam tables", with_stream(byte(14, '\x04')),
       where + "the Draco stream declares 4 attribute seam tables but the extension names 3 attributes"},
      {"cut short", with_stream(stream.substr(0, 13)),
       where + "the Draco data does not decode (its connectivity header is truncated)"},
      {"metadata cut short", with_stream(metadata_cut),
       where + "the Draco data does not decode (its metadata is malformed)"},
  };
  const std::filesystem::path dir = testing::MakeTempDir("gltf_draco_header");
  const std::string path = (dir / "changed.glb").string();
  // The stream moved unchanged still reads: the rewriting itself is sound.
  Glb moved = seed;
  SetDracoStream(&moved, stream);
  WriteGlb(moved, path);
  ASSERT_TRUE(ReadGltf(path).ok()) << ReadGltf(path).status();
  ExpectEachRefused(seed, cases, path);
  std::filesystem::remove_all(dir);
}

// A metadata section (optional in a Draco stream; our encoders write none) is skipped as libdraco
// reads it, so the counts after it are the ones libdraco sees: the seed quad with attribute and
// file metadata — nested sub-elements, and a value of 200 bytes, whose length takes two bytes —
// reads exactly as without.
TEST(GltfDracoTest, ReadsStreamsWithMetadata) {
  const std::string seed_path = std::string(SKINNING_SOURCE_DIR) + "/tests/fuzz/seeds/gltf/quad_draco.glb";
  const Glb seed = ReadGlb(seed_path);
  const std::string stream = DracoStream(seed);
  auto name = [](const std::string& n) { return std::string(1, static_cast<char>(n.size())) + n; };
  auto entry = [&](const std::string& key, const std::string& value) {
    return name(key) + Varint(static_cast<uint32_t>(value.size())) + value;
  };
  std::string metadata = Varint(1) + Varint(0);  // one attribute's metadata: unique id 0
  metadata += Varint(1) + entry("name", "position") + Varint(1);  // one entry, one sub-element
  metadata += name("sub") + Varint(0) + Varint(1);                // no entries, one sub-element
  metadata += name("leaf") + Varint(1) + entry("k", "v") + Varint(0);
  metadata += Varint(2) + entry("author", "test") + entry("blob", std::string(200, 'x')) + Varint(0);  // the file's
  std::string with = stream.substr(0, 11) + metadata + stream.substr(11);
  with[10] = static_cast<char>(static_cast<unsigned char>(with[10]) | 0x80);  // flags (UI16, little-endian): 0x8000
  Glb changed = seed;
  SetDracoStream(&changed, with);
  const std::filesystem::path dir = testing::MakeTempDir("gltf_draco_metadata");
  const std::string path = (dir / "metadata.glb").string();
  WriteGlb(changed, path);
  absl::StatusOr<GltfCharacter> plain = ReadGltf(seed_path);
  absl::StatusOr<GltfCharacter> read = ReadGltf(path);
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->mesh.V, plain->mesh.V);
  EXPECT_EQ(read->mesh.F, plain->mesh.F);
  EXPECT_EQ(ToDense(read->weights, read->skeleton.size()), ToDense(plain->weights, plain->skeleton.size()));
  std::filesystem::remove_all(dir);
}

// A sequential Draco stream (bitstream 2.2, no metadata) written by hand: `points` points and
// the faces of `indices` (3 per face) stored plainly (connectivity method 1: two bytes each,
// for 256 to 65,535 points), then one attributes decoder with the seed quad's three attributes
// stored raw (generic decoders), unique ids 0, 1, 2 as its extension names them: POSITION as
// `position_components` of Draco data type `position_type` (9 FLOAT32, 10 FLOAT64), JOINTS_0 as
// UINT16 × 4 (type 4), WEIGHTS_0 as FLOAT32 × 4 (type 9). `values` follow: every point's value
// of each attribute in turn.
std::string SequentialDracoStream(uint32_t points, const std::vector<uint16_t>& indices, int position_type,
                                  int position_components, const std::string& values) {
  std::string s = std::string("DRACO\x02\x02\x01\x00\x00\x00", 11);  // 2.2, mesh, sequential, no flags
  s += Varint(static_cast<uint32_t>(indices.size() / 3)) + Varint(points) + '\x01';
  EXPECT_TRUE(points >= 256 && points < 65536 && indices.size() % 3 == 0);
  for (uint16_t i : indices) s += std::string(reinterpret_cast<const char*>(&i), 2);  // little-endian
  s += '\x01';                                                                         // one attributes decoder
  s += Varint(3);
  auto descriptor = [](int type, int data_type, int components, uint32_t id) {
    return std::string{static_cast<char>(type), static_cast<char>(data_type), static_cast<char>(components), '\0'} +
           Varint(id);
  };
  s += descriptor(0, position_type, position_components, 0) + descriptor(4, 4, 4, 1) + descriptor(4, 9, 4, 2);
  s += std::string(3, '\0');  // generic (raw) decoders
  return s + values;
}

// A sequential stream's attributes are held to 8 times the bytes of the accessors they fill (and
// 1 MiB) before libdraco allocates for their values: points × (byte stride + 4 per component, the
// integer form an integer or quantized attribute decodes through). Before, a 2 MB file whose
// POSITION declared 255 FLOAT64 components on 2M points took 4 GB. The hand-built stream is
// first shown to be one libdraco reads: with 256 points (the quad's 4 and 252 copies of its first
// one) it reads as the seed. Then 50,000 points with POSITION of 21 FLOAT64 components stay under
// the bound (and fail later: no values follow), 22 and 255 are refused naming the bytes.
// (tests/fuzz/seeds/gltf/quad_draco_sequential.glb, gltf_fuzz's sequential seed, is the seed
// quad with a stream of this form, its 4 points raw.)
TEST(GltfDracoTest, RefusesStreamAttributesTooLargeForTheirAccessors) {
  const std::string seed_path = std::string(SKINNING_SOURCE_DIR) + "/tests/fuzz/seeds/gltf/quad_draco.glb";
  const Glb seed = ReadGlb(seed_path);
  absl::StatusOr<GltfCharacter> plain = ReadGltf(seed_path);
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_EQ(plain->mesh.V.rows(), 4);
  ASSERT_EQ(plain->skeleton.size(), 2);
  const Eigen::MatrixXd W = ToDense(plain->weights, plain->skeleton.size());
  auto accessor = [](Glb* g, const std::string& attribute) -> nlohmann::json& {
    const nlohmann::json& prim = g->json["meshes"][0]["primitives"][0];
    return g->json["accessors"][attribute.empty() ? prim["indices"].get<int>() : prim["attributes"][attribute].get<int>()];
  };
  const std::filesystem::path dir = testing::MakeTempDir("gltf_draco_attribute_bytes");
  const std::string path = (dir / "stream.glb").string();
  // The seed with a sequential stream of `points` points (SequentialDracoStream): the quad's two
  // faces, then degenerate ones on point 0, as many as libdraco wants (at most 3 points per face);
  // the accessors' counts follow.
  auto write_stream = [&](uint32_t points, int position_type, int position_components, const std::string& values) {
    std::vector<uint16_t> indices(3 * ((points + 2) / 3), 0);
    for (int f = 0; f < 2; ++f)
      for (int c = 0; c < 3; ++c) indices[3 * f + c] = static_cast<uint16_t>(plain->mesh.F(f, c));
    Glb g = seed;
    SetDracoStream(&g, SequentialDracoStream(points, indices, position_type, position_components, values));
    accessor(&g, "")["count"] = indices.size();
    for (const char* name : {"POSITION", "JOINTS_0", "WEIGHTS_0"}) accessor(&g, name)["count"] = points;
    WriteGlb(g, path);
  };

  // The seed's own values, the first point repeated: read back as the seed.
  const uint32_t n = 256;
  std::string values;
  auto append = [&](const auto& v) { values.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
  auto vertex = [](uint32_t p) { return p < 4 ? static_cast<int>(p) : 0; };
  for (uint32_t p = 0; p < n; ++p)
    for (int c = 0; c < 3; ++c) append(static_cast<float>(plain->mesh.V(vertex(p), c)));
  for (uint32_t p = 0; p < n; ++p)
    for (uint16_t j : {0, 1, 0, 0}) append(j);
  for (uint32_t p = 0; p < n; ++p)
    for (int c = 0; c < 4; ++c) append(static_cast<float>(c < 2 ? W(vertex(p), c) : 0.0));
  write_stream(n, 9, 3, values);
  absl::StatusOr<GltfCharacter> read = ReadGltf(path);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->mesh.V.rows(), n);
  EXPECT_EQ(read->mesh.V.topRows(4), plain->mesh.V);
  EXPECT_EQ(read->mesh.F.topRows(2), plain->mesh.F);
  EXPECT_LE((ToDense(read->weights, 2).topRows(4) - W).cwiseAbs().maxCoeff(), 1e-7);
  // gltf_fuzz's sequential seed is such a stream too: the quad's 4 points, raw.
  const std::string sequential_seed =
      std::string(SKINNING_SOURCE_DIR) + "/tests/fuzz/seeds/gltf/quad_draco_sequential.glb";
  EXPECT_EQ(DracoStream(ReadGlb(sequential_seed)).substr(0, 9), std::string("DRACO\x02\x02\x01\x00", 9));
  absl::StatusOr<GltfCharacter> seeded = ReadGltf(sequential_seed);
  ASSERT_TRUE(seeded.ok()) << seeded.status();
  EXPECT_EQ(seeded->mesh.V.rows(), 4);
  EXPECT_EQ(seeded->mesh.F.rows(), 2);

  // 50,000 points: the bound is 8 × 50,000 × (12 + 8 + 16) accessor bytes + 1 MiB.
  const uint32_t points = 50000;
  const double limit = 8.0 * points * (12 + 8 + 16) + (1 << 20);
  for (int components : {21, 22, 255}) {
    SCOPED_TRACE(components);
    write_stream(points, 10, components, "");
    const double bytes = static_cast<double>(points) * ((8 + 4) * components + (2 + 4) * 4 + (4 + 4) * 4);
    EXPECT_EQ(bytes <= limit, components == 21) << "21 components fall under the bound, 22 and 255 over it";
    absl::StatusOr<GltfCharacter> r = ReadGltf(path);
    ASSERT_FALSE(r.ok());
    if (bytes <= limit) {
      EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
      EXPECT_THAT(std::string(r.status().message()), HasSubstr("the Draco data does not decode"));
    } else {
      EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
      EXPECT_THAT(std::string(r.status().message()),
                  HasSubstr(absl::StrFormat("the Draco stream's attributes would take %.0f bytes to decode (50000 "
                                            "points), more than the %.0f allowed",
                                            bytes, limit)));
    }
  }
  std::filesystem::remove_all(dir);
}

// The bytes of a file as a string_view for ReadGltfBytes.
absl::StatusOr<GltfCharacter> ReadBytes(const std::string& bytes, const GltfSizeLimits& limits) {
  return ReadGltfBytes(bytes, "gltf", limits);
}

// No limit but this many decompressed bytes.
GltfSizeLimits Decompressing(int64_t bytes) {
  GltfSizeLimits limits;
  limits.max_decompressed_bytes = bytes;
  return limits;
}

// What compressed data decodes to is held to GltfSizeLimits::max_decompressed_bytes in all
// (RESOURCE_EXHAUSTED), counted from the file's JSON before decoding: meshopt views by count ×
// byteStride, Draco primitives by their accessors' sizes. And meshopt views sharing one
// compressed source (each within 128× of it) are refused together beyond 128× the file's
// buffers, whatever the limit: 2,000 copies of one view of a packed RiggedSimple.
TEST(GltfMeshoptTest, DecompressedBytesAreBoundedInAll) {
  const std::string in = testing::DataPath("gltf/RiggedSimple/RiggedSimple.glb");
  SKINNING_REQUIRE_DATA(in);
  SKINNING_REQUIRE_GLTFPACK();
  SKINNING_REQUIRE_DRACO_TOOL();
  const std::filesystem::path dir = testing::MakeTempDir("gltf_decompressed_bytes");
  const std::string meshopt = (dir / "meshopt.glb").string(), draco = (dir / "draco.glb").string();
  ASSERT_TRUE(Pack("gltfpack -c", in, meshopt));
  ASSERT_TRUE(Pack("draco", in, draco));
  auto expect_exhausted = [](const std::string& bytes, int64_t limit, const std::string& message) {
    absl::StatusOr<GltfCharacter> r = ReadBytes(bytes, Decompressing(limit));
    ASSERT_FALSE(r.ok()) << message;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(message));
  };

  // meshopt: the views' count × byteStride, summed from the JSON.
  const Glb packed = ReadGlb(meshopt);
  int64_t views_bytes = 0;
  int first = -1;
  for (size_t v = 0; v < packed.json["bufferViews"].size(); ++v) {
    const nlohmann::json& view = packed.json["bufferViews"][v];
    if (!view.contains("extensions")) continue;
    const nlohmann::json& ext = view["extensions"]["EXT_meshopt_compression"];
    views_bytes += ext["count"].get<int64_t>() * ext["byteStride"].get<int64_t>();
    if (first < 0 && ext["mode"] == "ATTRIBUTES") first = static_cast<int>(v);
  }
  ASSERT_GT(views_bytes, 0);
  ASSERT_GE(first, 0);
  const std::string meshopt_bytes = testing::FileBytes(meshopt);
  expect_exhausted(meshopt_bytes, views_bytes - 1,
                   absl::StrFormat("gltf: the EXT_meshopt_compression views would decode to %d bytes in all, more "
                                   "than the limit of %d",
                                   views_bytes, views_bytes - 1));
  EXPECT_TRUE(ReadBytes(meshopt_bytes, Decompressing(views_bytes)).ok());

  // Draco: the primitive's indices as 4-byte integers plus its attribute accessors.
  const Glb compressed = ReadGlb(draco);
  const nlohmann::json& primitive = compressed.json["meshes"][0]["primitives"][0];
  auto accessor_bytes = [&](int index) {
    const nlohmann::json& a = compressed.json["accessors"][index];
    const std::map<std::string, int64_t> components = {{"SCALAR", 1}, {"VEC2", 2}, {"VEC3", 3}, {"VEC4", 4}};
    const std::map<int, int64_t> sizes = {{5120, 1}, {5121, 1}, {5122, 2}, {5123, 2}, {5125, 4}, {5126, 4}};
    return a["count"].get<int64_t>() * components.at(a["type"].get<std::string>()) *
           sizes.at(a["componentType"].get<int>());
  };
  int64_t draco_bytes = compressed.json["accessors"][primitive["indices"].get<int>()]["count"].get<int64_t>() * 4;
  for (const auto& [name, id] : primitive["extensions"]["KHR_draco_mesh_compression"]["attributes"].items())
    draco_bytes += accessor_bytes(primitive["attributes"][name].get<int>());
  ASSERT_EQ(compressed.json["meshes"].size(), 1u);
  ASSERT_EQ(compressed.json["meshes"][0]["primitives"].size(), 1u);
  const std::string draco_file = testing::FileBytes(draco);
  expect_exhausted(draco_file, draco_bytes - 1,
                   absl::StrFormat("the Draco primitives would decode to %d bytes so far, more than the limit of %d",
                                   draco_bytes, draco_bytes - 1));
  EXPECT_TRUE(ReadBytes(draco_file, Decompressing(draco_bytes)).ok());

  // 2,000 more views decoding the first one's compressed bytes, each into its own place in the
  // fallback buffer (each alone within the per-view ratio).
  Glb aliased = packed;
  nlohmann::json& views = aliased.json["bufferViews"];
  const nlohmann::json view = views[first];
  const int fallback = view["buffer"].get<int>();
  int64_t end = aliased.json["buffers"][fallback]["byteLength"].get<int64_t>();
  for (int copy = 0; copy < 2000; ++copy) {
    nlohmann::json extra = view;
    extra["byteOffset"] = end;
    end += view["byteLength"].get<int64_t>();
    views.push_back(extra);
  }
  aliased.json["buffers"][fallback]["byteLength"] = end;
  const std::string aliased_path = (dir / "aliased.glb").string();
  WriteGlb(aliased, aliased_path);
  absl::StatusOr<GltfCharacter> refused = ReadGltf(aliased_path);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("the EXT_meshopt_compression views would decode to"));
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("more than 128 times the"));
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(SampleCharacters, GltfQuantizedTest,
                         ::testing::Combine(::testing::Values("gltf/CesiumMan/CesiumMan.glb",
                                                              "gltf/RiggedFigure/RiggedFigure.glb",
                                                              "gltf/RiggedSimple/RiggedSimple.glb"),
                                            ::testing::Values("gltfpack", "gltfpack -cc", "gltfpack -c", "draco",
                                                              "draco sequential")),
                         [](const auto& info) {
                           std::string packer = std::get<1>(info.param);
                           std::replace(packer.begin(), packer.end(), ' ', '_');
                           std::replace(packer.begin(), packer.end(), '-', '_');
                           return testing::DataFileTestName(std::get<0>(info.param)) + "_" + packer;
                         });

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
