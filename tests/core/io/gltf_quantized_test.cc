// KHR_mesh_quantization on real characters: each sample character packed by gltfpack (Debian's
// meshoptimizer tool, a third party: integer positions, normals and weights, the dequantization
// folded into the inverse bind matrices) reads and poses where the original does, to within the
// precision gltfpack stored.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <tiny_gltf.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/io/gltf.h"
#include "core/rig/animation.h"
#include "core/rig/pose.h"
#include "core/rig/skeleton.h"
#include "core/skinning/lbs.h"
#include "tests/support/data.h"
#include "tests/support/morph_gltf.h"

namespace skinning {
namespace {

using ::testing::HasSubstr;

// Posed positions (world space) of a character: first in its rest pose (its joints' own rest
// transforms, from `source` by name), then at each of `times` of `source`'s first animation, the
// joints' local transforms taken from `source` by joint name (so that both files pose alike
// whatever each one's joint order and keyframe encoding).
std::vector<RowMatrixX3d> PosedByName(const GltfCharacter& c, const GltfCharacter& source,
                                      const std::vector<double>& times) {
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
    Lbs(c.mesh.V, c.weights, T, &X);
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

class GltfQuantizedTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GltfQuantizedTest, GltfpackOutputPosesLikeTheOriginal) {
  const std::string in = testing::DataPath(GetParam());
  SKINNING_REQUIRE_DATA(in);
  if (std::system("command -v gltfpack >/dev/null 2>&1") != 0) {
    if (testing::InCi()) FAIL() << "gltfpack is not installed in CI (scripts/install-deps.sh installs it)";
    GTEST_SKIP() << "gltfpack is not installed (CI is unset, so skipping; scripts/install-deps.sh installs it)";
  }
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    absl::StrFormat("gltf_quantized_%d_%s", getpid(), testing::DataFileTestName(in));
  std::filesystem::create_directories(dir);
  const std::string packed = (dir / "packed.glb").string();
  const std::string command = "gltfpack -i '" + in + "' -o '" + packed + "' > '" + (dir / "log").string() + "' 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;

  // gltfpack did quantize: the extension is required and POSITION is stored as integers.
  tinygltf::Model model;
  {
    tinygltf::TinyGLTF io;
    std::string err, warn;
    ASSERT_TRUE(io.LoadBinaryFromFile(&model, &err, &warn, packed)) << err;
    ASSERT_THAT(model.extensionsRequired, ::testing::Contains("KHR_mesh_quantization"));
    const auto& attributes = model.meshes.at(0).primitives.at(0).attributes;
    EXPECT_NE(model.accessors[attributes.at("POSITION")].componentType, TINYGLTF_COMPONENT_TYPE_FLOAT);
  }

  absl::StatusOr<GltfCharacter> original = ReadGltf(in);
  absl::StatusOr<GltfCharacter> quantized = ReadGltf(packed);
  ASSERT_TRUE(original.ok()) << original.status();
  ASSERT_TRUE(quantized.ok()) << quantized.status().message();
  ASSERT_FALSE(original->animations.empty());
  // gltfpack merges vertices that are identical in every attribute and reorders them.
  EXPECT_LE(quantized->mesh.V.rows(), original->mesh.V.rows());
  EXPECT_GE(quantized->mesh.V.rows(), original->mesh.V.rows() * 9 / 10);

  const Animation& animation = original->animations[0];
  std::vector<double> times;
  for (int f = 0; f <= 10; ++f) times.push_back(animation.start + (animation.end - animation.start) * f / 10.0);
  const std::vector<RowMatrixX3d> want = PosedByName(*original, *original, times);
  const std::vector<RowMatrixX3d> got = PosedByName(*quantized, *original, times);
  const double diag = (want[0].colwise().maxCoeff() - want[0].colwise().minCoeff()).norm();

  // Vertices are matched in the rest pose, both ways (every packed vertex is an original one and
  // every original one is kept), copies of one point being interchangeable; then compared in
  // every pose of the animation. gltfpack's precision: positions 14 bits over the mesh's extent
  // (at most about 5e-5 of the diagonal: all the rest pose shows, its joints carrying every
  // vertex alike) and weights 8 bits (1/255 each), which moves a posed vertex by at most about
  // 4/255 of how far its joints carry it apart — a few tenths of a percent of the diagonal.
  double rest_worst = 0, worst = 0, sum_sq = 0;
  long compared = 0;
  for (const bool packed_to_original : {true, false}) {
    const std::vector<RowMatrixX3d>& a = packed_to_original ? got : want;
    const std::vector<RowMatrixX3d>& b = packed_to_original ? want : got;
    const std::vector<Eigen::Index> match = Nearest(a[0], b[0]);
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
  std::printf("%s packed by gltfpack (%lld of %lld vertices): rest pose %.2e, over %zu animation poses RMS %.2e "
              "and max %.2e of the diagonal\n",
              GetParam().c_str(), static_cast<long long>(quantized->mesh.V.rows()),
              static_cast<long long>(original->mesh.V.rows()), rest_worst / diag, times.size(), rms / diag,
              worst / diag);
  EXPECT_LT(rest_worst, 1e-4 * diag);
  EXPECT_LT(rms, 1e-3 * diag);
  EXPECT_LT(worst, 5e-3 * diag);

  // Normals, 8 bits per component in the packed file, point the same way (bind space differs by
  // gltfpack's uniform scale only): within 2 degrees. Copies of a point along a hard edge differ
  // in normal, so each packed normal is compared with the closest original one at its point.
  ASSERT_EQ(original->mesh.N.rows(), original->mesh.V.rows());
  ASSERT_EQ(quantized->mesh.N.rows(), quantized->mesh.V.rows());
  double worst_degrees = 0;
  for (Eigen::Index i = 0; i < got[0].rows(); ++i) {
    EXPECT_NEAR(quantized->mesh.N.row(i).norm(), 1.0, 1e-9) << "normals are renormalized";
    double best = 180;
    for (Eigen::Index j = 0; j < want[0].rows(); ++j) {
      if ((got[0].row(i) - want[0].row(j)).norm() > 1e-4 * diag) continue;
      const double cosine =
          std::clamp(quantized->mesh.N.row(i).dot(original->mesh.N.row(j).normalized()), -1.0, 1.0);
      best = std::min(best, std::acos(cosine) * 180 / M_PI);
    }
    worst_degrees = std::max(worst_degrees, best);
  }
  std::printf("  normals within %.2f degrees\n", worst_degrees);
  EXPECT_LT(worst_degrees, 2.0);

  // The same file without the extension declared is refused, naming the attribute's type.
  model.extensionsRequired.clear();
  model.extensionsUsed.erase(std::remove(model.extensionsUsed.begin(), model.extensionsUsed.end(), "KHR_mesh_quantization"),
                             model.extensionsUsed.end());
  const std::string undeclared = (dir / "undeclared.glb").string();
  tinygltf::TinyGLTF io;
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
  if (std::system("command -v gltfpack >/dev/null 2>&1") != 0) {
    if (testing::InCi()) FAIL() << "gltfpack is not installed in CI (scripts/install-deps.sh installs it)";
    GTEST_SKIP() << "gltfpack is not installed (CI is unset, so skipping; scripts/install-deps.sh installs it)";
  }
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / absl::StrFormat("gltf_quantized_morph_%d", getpid());
  std::filesystem::create_directories(dir);
  const std::string morphed = (dir / "morph.glb").string(), packed = (dir / "packed.glb").string();
  ASSERT_TRUE(testing::WriteWithMorphTargets(in, morphed).ok());
  const std::string command = "gltfpack -i '" + morphed + "' -o '" + packed + "' > /dev/null 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  absl::StatusOr<GltfCharacter> original = ReadGltf(morphed);
  absl::StatusOr<GltfCharacter> quantized = ReadGltf(packed);
  ASSERT_TRUE(original.ok()) << original.status();
  ASSERT_TRUE(quantized.ok()) << quantized.status().message();
  ASSERT_EQ(quantized->morph_targets.size(), 2u);
  {
    tinygltf::Model model;
    tinygltf::TinyGLTF io;
    std::string err, warn;
    ASSERT_TRUE(io.LoadBinaryFromFile(&model, &err, &warn, packed)) << err;
    const int delta = model.meshes.at(0).primitives.at(0).targets.at(0).at("POSITION");
    EXPECT_NE(model.accessors[delta].componentType, TINYGLTF_COMPONENT_TYPE_FLOAT) << "the deltas are quantized";
  }
  // Morphed by (0.2, 0.8), then posed in the rest pose and at the animation's middle.
  auto morph_and_pose = [&](const GltfCharacter& c, double t) {
    RowMatrixX3d V = c.mesh.V;
    const double w[2] = {0.2, 0.8};
    for (int k = 0; k < 2; ++k) V += w[k] * c.morph_targets[k].dV;
    Pose pose = RestPose(c.skeleton);
    if (t >= 0) {
      const std::vector<Transform> local = SampleAnimation(original->skeleton, original->animations[0], t);
      for (int j = 0; j < c.skeleton.size(); ++j) {
        const int s = original->skeleton.Find(c.skeleton.joints[j].name);
        if (s >= 0) pose.local[j] = local[s];
      }
    }
    const std::vector<Eigen::Affine3d> T = *SkinningTransforms(c.skeleton, *TopologicalOrder(c.skeleton), pose);
    RowMatrixX3d X;
    Lbs(V, c.weights, T, &X);
    return X;
  };
  const RowMatrixX3d want_rest = morph_and_pose(*original, -1), got_rest = morph_and_pose(*quantized, -1);
  const double middle = 0.5 * (original->animations[0].start + original->animations[0].end);
  const RowMatrixX3d want = morph_and_pose(*original, middle), got = morph_and_pose(*quantized, middle);
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

INSTANTIATE_TEST_SUITE_P(SampleCharacters, GltfQuantizedTest,
                         ::testing::Values("gltf/CesiumMan/CesiumMan.glb", "gltf/RiggedFigure/RiggedFigure.glb",
                                           "gltf/RiggedSimple/RiggedSimple.glb"),
                         [](const auto& info) { return testing::DataFileTestName(info.param); });

}  // namespace
}  // namespace skinning
