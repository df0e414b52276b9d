// Tests of the independent glTF skinning reference (tests/support/gltf_reference.h) against
// facts derivable by hand: the glTF tutorial's SimpleSkin, a synthetic file exercising STEP,
// CUBICSPLINE, shorter-arc slerp, interleaved/normalized attributes and JOINTS_1/WEIGHTS_1, and
// consistency across the shared sample characters. Nothing here uses core/.
#include "tests/support/gltf_reference.h"

#include <gtest/gtest.h>
#include <tiny_gltf.h>

#include <Eigen/Core>
#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/support/data.h"
#include "tests/support/temp_files.h"
#include "tests/support/tinygltf_load.h"

namespace skinning::testing::gltf_reference {
namespace {
namespace SKINNING_TEST_FILE {

using Eigen::Vector3d;

constexpr double kTol = 1e-6;
constexpr double kPi = 3.14159265358979323846;

// --- Minimal direct reads with tinygltf, independent of the reference's accessor code. --------

tinygltf::Model LoadDirect(const std::string& path) {
  absl::StatusOr<tinygltf::Model> model = testing::LoadTinyGltf(path);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *std::move(model) : tinygltf::Model();
}

// Float accessor in a tightly packed buffer view.
std::vector<float> TightFloats(const tinygltf::Model& model, int accessor_index) {
  const tinygltf::Accessor& a = model.accessors[accessor_index];
  EXPECT_EQ(a.componentType, TINYGLTF_COMPONENT_TYPE_FLOAT);
  const tinygltf::BufferView& view = model.bufferViews[a.bufferView];
  const size_t n = a.count * tinygltf::GetNumComponentsInType(a.type);
  EXPECT_TRUE(view.byteStride == 0 || view.byteStride == n / a.count * 4);
  std::vector<float> out(n);
  std::memcpy(out.data(), model.buffers[view.buffer].data.data() + view.byteOffset + a.byteOffset,
              n * sizeof(float));
  return out;
}

Vector3d RotateZAbout(const Vector3d& v, const Vector3d& center, double angle) {
  return Eigen::AngleAxisd(angle, Vector3d::UnitZ()) * (v - center) + center;
}

#define EXPECT_VEC_NEAR(a, b, tol) \
  EXPECT_LT(((a) - (b)).norm(), tol) << "got " << (a).transpose() << " want " << (b).transpose()

// --- SimpleSkin (glTF tutorial, chapter "Simple Skin"). -----------------------------------------
//
// Ten vertices at x = ±0.5, y ∈ {0, 0.5, 1, 1.5, 2}; joint 0 is the root at the origin (not
// animated), joint 1 is its child at (0, 1, 0) and is rotated about z by the animation. The
// tutorial's weights put y/2 on joint 1 and 1 - y/2 on joint 0, so a vertex poses to
//   (1 - y/2) v + (y/2) (Rz(θ) (v - (0,1,0)) + (0,1,0)).

std::string SimpleSkinPath() { return DataPath("gltf/SimpleSkin/SimpleSkin.gltf"); }

Vector3d SimpleSkinExpected(const Vector3d& v, double angle) {
  const double w1 = v.y() / 2.0;
  return (1.0 - w1) * v + w1 * RotateZAbout(v, Vector3d(0, 1, 0), angle);
}

TEST(GltfReferenceSimpleSkin, RestPositionsAreTheTutorialGrid) {
  SKINNING_REQUIRE_DATA(SimpleSkinPath());
  auto result = SkinAtTime(SimpleSkinPath(), 0, 0.0);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->rest.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    EXPECT_VEC_NEAR(result->rest[i], Vector3d(i % 2 == 0 ? -0.5 : 0.5, 0.5 * (i / 2), 0), 1e-12);
  }
}

TEST(GltfReferenceSimpleSkin, IdentityKeyAtZeroLeavesRestPose) {
  SKINNING_REQUIRE_DATA(SimpleSkinPath());
  auto result = SkinAtTime(SimpleSkinPath(), 0, 0.0);
  ASSERT_TRUE(result.ok()) << result.status();
  for (size_t i = 0; i < result->rest.size(); ++i) {
    EXPECT_VEC_NEAR(result->posed[i], result->rest[i], 1e-9);
  }
}

TEST(GltfReferenceSimpleSkin, RootWeightedVerticesStayPut) {
  SKINNING_REQUIRE_DATA(SimpleSkinPath());
  for (double t : {0.0, 0.25, 0.5, 1.0, 1.7, 2.0, 3.3, 4.0, 5.5, 9.0}) {
    auto result = SkinAtTime(SimpleSkinPath(), 0, t);
    ASSERT_TRUE(result.ok()) << result.status();
    // Vertices 0 and 1 (y = 0) are fully on joint 0.
    for (int i : {0, 1}) EXPECT_VEC_NEAR(result->posed[i], result->rest[i], 1e-12) << "t=" << t;
  }
}

TEST(GltfReferenceSimpleSkin, KeyRotationsAboutJointOne) {
  SKINNING_REQUIRE_DATA(SimpleSkinPath());
  // Key times and rotations straight from the file.
  const tinygltf::Model model = LoadDirect(SimpleSkinPath());
  ASSERT_EQ(model.animations.size(), 1u);
  const tinygltf::AnimationSampler& sampler = model.animations[0].samplers[0];
  ASSERT_EQ(model.animations[0].channels[0].target_node, 2);
  ASSERT_EQ(model.animations[0].channels[0].target_path, "rotation");
  const std::vector<float> times = TightFloats(model, sampler.input);
  const std::vector<float> quats = TightFloats(model, sampler.output);
  ASSERT_EQ(quats.size(), 4 * times.size());

  int checked_rotated = 0;
  for (size_t k = 0; k < times.size(); ++k) {
    // The tutorial's keys are rotations about z: (0, 0, sin(θ/2), cos(θ/2)).
    ASSERT_EQ(quats[4 * k], 0.0f);
    ASSERT_EQ(quats[4 * k + 1], 0.0f);
    const double angle = 2.0 * std::atan2(quats[4 * k + 2], quats[4 * k + 3]);
    if (std::abs(angle) > 0.1) ++checked_rotated;
    auto result = SkinAtTime(SimpleSkinPath(), 0, times[k]);
    ASSERT_TRUE(result.ok()) << result.status();
    for (size_t i = 0; i < result->rest.size(); ++i) {
      EXPECT_VEC_NEAR(result->posed[i], SimpleSkinExpected(result->rest[i], angle), kTol)
          << "key " << k << " vertex " << i;
    }
  }
  EXPECT_GE(checked_rotated, 4);

  // Key t = 1 is a quarter turn: the top vertices (fully on joint 1) land at x = -1.
  ASSERT_EQ(times[2], 1.0f);
  auto quarter = SkinAtTime(SimpleSkinPath(), 0, 1.0);
  ASSERT_TRUE(quarter.ok()) << quarter.status();
  EXPECT_VEC_NEAR(quarter->posed[8], Vector3d(-1.0, 0.5, 0.0), kTol);
  EXPECT_VEC_NEAR(quarter->posed[9], Vector3d(-1.0, 1.5, 0.0), kTol);
}

TEST(GltfReferenceSimpleSkin, LinearRotationIsSlerpBetweenKeys) {
  SKINNING_REQUIRE_DATA(SimpleSkinPath());
  const tinygltf::Model model = LoadDirect(SimpleSkinPath());
  const tinygltf::AnimationSampler& sampler = model.animations[0].samplers[0];
  const std::vector<float> times = TightFloats(model, sampler.input);
  const std::vector<float> quats = TightFloats(model, sampler.output);
  for (size_t k = 0; k + 1 < times.size(); ++k) {
    const double a0 = 2.0 * std::atan2(quats[4 * k + 2], quats[4 * k + 3]);
    const double a1 = 2.0 * std::atan2(quats[4 * k + 6], quats[4 * k + 7]);
    for (double s : {0.25, 0.5, 0.8}) {
      // Slerp between two rotations about the same axis interpolates the angle linearly.
      const double t = times[k] + s * (times[k + 1] - times[k]);
      auto result = SkinAtTime(SimpleSkinPath(), 0, t);
      ASSERT_TRUE(result.ok()) << result.status();
      for (size_t i = 0; i < result->rest.size(); ++i) {
        EXPECT_VEC_NEAR(result->posed[i], SimpleSkinExpected(result->rest[i], a0 + s * (a1 - a0)),
                        kTol)
            << "t=" << t << " vertex " << i;
      }
    }
  }
}

TEST(GltfReferenceSimpleSkin, TimeIsClampedToTheKeyRange) {
  SKINNING_REQUIRE_DATA(SimpleSkinPath());
  // The first and last keys are identity.
  for (double t : {-3.0, 5.5, 100.0}) {
    auto result = SkinAtTime(SimpleSkinPath(), 0, t);
    ASSERT_TRUE(result.ok()) << result.status();
    for (size_t i = 0; i < result->rest.size(); ++i) {
      EXPECT_VEC_NEAR(result->posed[i], result->rest[i], 1e-9) << "t=" << t;
    }
  }
}

// --- Synthetic file: every interpolation mode and the attribute layouts. --------------------

std::string Base64(const std::string& bytes) {
  static const char kTable[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v =
        (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    for (int s : {18, 12, 6, 0}) out += kTable[(v >> s) & 63];
  }
  if (i + 1 == bytes.size()) {
    const uint32_t v = uint8_t(bytes[i]) << 16;
    out += kTable[(v >> 18) & 63];
    out += kTable[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == bytes.size()) {
    const uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8);
    out += kTable[(v >> 18) & 63];
    out += kTable[(v >> 12) & 63];
    out += kTable[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

// Accumulates one binary buffer plus the JSON of its buffer views and accessors.
class GltfBuilder {
 public:
  int View(const std::string& data, int stride = 0) {
    while (bin_.size() % 4 != 0) bin_.push_back('\0');
    views_.push_back(absl::StrCat("{\"buffer\":0,\"byteOffset\":", bin_.size(),
                                  ",\"byteLength\":", data.size(),
                                  stride ? absl::StrCat(",\"byteStride\":", stride) : "", "}"));
    bin_ += data;
    return static_cast<int>(views_.size()) - 1;
  }
  int Accessor(int view, int offset, int component_type, int count, const std::string& type,
               bool normalized = false) {
    accessors_.push_back(absl::StrCat("{\"bufferView\":", view, ",\"byteOffset\":", offset,
                                      ",\"componentType\":", component_type, ",\"count\":", count,
                                      ",\"type\":\"", type, "\"",
                                      normalized ? ",\"normalized\":true" : "", "}"));
    return static_cast<int>(accessors_.size()) - 1;
  }
  int Floats(const std::vector<float>& values, int count, const std::string& type) {
    return Accessor(View(Bytes(values)), 0, TINYGLTF_COMPONENT_TYPE_FLOAT, count, type);
  }
  template <typename T>
  static std::string Bytes(const std::vector<T>& values) {
    return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  }
  std::string Json(const std::string& rest) const {
    return absl::StrCat(
        "{\"asset\":{\"version\":\"2.0\"},", rest, ",\"buffers\":[{\"byteLength\":", bin_.size(),
        ",\"uri\":\"data:application/octet-stream;base64,", Base64(bin_), "\"}],\"bufferViews\":[",
        absl::StrJoin(views_, ","), "],\"accessors\":[", absl::StrJoin(accessors_, ","), "]}");
  }

 private:
  std::string bin_;
  std::vector<std::string> views_;
  std::vector<std::string> accessors_;
};

// Node 0: the skinned mesh, translated by (100, 0, 0) — which skinning must ignore.
// Node 1: root with a matrix translating by (0, 0, 5); children 2 (joint A at (1, 0, 0)) and
//         3 (joint B at (0, 2, 0)). Bind globals: A at (1, 0, 5), B at (0, 2, 5).
// Vertices: v0 = (1, 0, 5) fully on A, v1 = (1, 2, 5) fully on B, v2 = (0.5, 1, 5) with
// normalized-ubyte weight 100 on A in set 0 and 100 on B in set 1 (renormalized: ½ + ½).
// Position/JOINTS_0/WEIGHTS_0 are interleaved with byteStride 20.
// Animations: 0 STEP translation of A; 1 CUBICSPLINE translation of A; 2 CUBICSPLINE rotation of
// B; 3 LINEAR rotation of B to a quarter turn stored with a negated quaternion.
std::string WriteSyntheticGltf() {
  GltfBuilder b;
  std::string interleaved;
  const float positions[3][3] = {{1, 0, 5}, {1, 2, 5}, {0.5f, 1, 5}};
  const uint8_t joints0[3][4] = {{0, 0, 0, 0}, {1, 0, 0, 0}, {0, 0, 0, 0}};
  const uint8_t weights0[3][4] = {{255, 0, 0, 0}, {255, 0, 0, 0}, {100, 0, 0, 0}};
  for (int v = 0; v < 3; ++v) {
    interleaved.append(reinterpret_cast<const char*>(positions[v]), 12);
    interleaved.append(reinterpret_cast<const char*>(joints0[v]), 4);
    interleaved.append(reinterpret_cast<const char*>(weights0[v]), 4);
  }
  const int vertex_view = b.View(interleaved, 20);
  const int position = b.Accessor(vertex_view, 0, TINYGLTF_COMPONENT_TYPE_FLOAT, 3, "VEC3");
  const int j0 = b.Accessor(vertex_view, 12, TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE, 3, "VEC4");
  const int w0 =
      b.Accessor(vertex_view, 16, TINYGLTF_COMPONENT_TYPE_UNSIGNED_BYTE, 3, "VEC4", true);
  const int j1 = b.Accessor(
      b.View(GltfBuilder::Bytes(std::vector<uint16_t>{0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0})), 0,
      TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT, 3, "VEC4");
  const int w1 = b.Accessor(b.View(GltfBuilder::Bytes(std::vector<uint16_t>{
                                0, 0, 0, 0, 0, 0, 0, 0, 25700, 0, 0, 0})),  // 100/255·65535
                            0, TINYGLTF_COMPONENT_TYPE_UNSIGNED_SHORT, 3, "VEC4", true);
  const int ibm = b.Floats({1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, -1, 0,  -5, 1,   //
                            1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0,  -2, -5, 1},  //
                           2, "MAT4");
  const int t01 = b.Floats({0, 1}, 2, "SCALAR");
  const int t02 = b.Floats({0, 2}, 2, "SCALAR");
  const int step_out = b.Floats({1, 0, 0, 2, 0, 0}, 2, "VEC3");
  // CUBICSPLINE translation: keys (in, value, out): ((0), (1,0,0), (1,0,0)), ((0), (2,0,0), (0)).
  const int cubic_out = b.Floats({0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0}, 6, "VEC3");
  const float h = static_cast<float>(std::sqrt(0.5));
  // CUBICSPLINE rotation, zero tangents: identity → quarter turn about z.
  const int cubic_rot =
      b.Floats({0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, h, h, 0, 0, 0, 0}, 6, "VEC4");
  // LINEAR rotation: identity → quarter turn stored as -q (same rotation).
  const int linear_rot = b.Floats({0, 0, 0, 1, 0, 0, -h, -h}, 2, "VEC4");

  auto animation = [](int node, const std::string& path, const std::string& interpolation,
                      int input, int output) {
    return absl::StrCat("{\"channels\":[{\"sampler\":0,\"target\":{\"node\":", node, ",\"path\":\"",
                        path, "\"}}],\"samplers\":[{\"input\":", input, ",\"output\":", output,
                        ",\"interpolation\":\"", interpolation, "\"}]}");
  };
  const std::string json = b.Json(absl::StrCat(
      "\"scene\":0,\"scenes\":[{\"nodes\":[0,1]}],"
      "\"nodes\":[{\"mesh\":0,\"skin\":0,\"translation\":[100,0,0]},"
      "{\"matrix\":[1,0,0,0,0,1,0,0,0,0,1,0,0,0,5,1],\"children\":[2,3]},"
      "{\"translation\":[1,0,0]},{\"translation\":[0,2,0]}],"
      "\"meshes\":[{\"primitives\":[{\"attributes\":{\"POSITION\":",
      position, ",\"JOINTS_0\":", j0, ",\"WEIGHTS_0\":", w0, ",\"JOINTS_1\":", j1,
      ",\"WEIGHTS_1\":", w1, "}}]}],\"skins\":[{\"joints\":[2,3],\"inverseBindMatrices\":", ibm,
      "}],\"animations\":[", animation(2, "translation", "STEP", t01, step_out), ",",
      animation(2, "translation", "CUBICSPLINE", t02, cubic_out), ",",
      animation(3, "rotation", "CUBICSPLINE", t01, cubic_rot), ",",
      animation(3, "rotation", "LINEAR", t01, linear_rot), "]"));
  const std::string path = ::skinning::testing::TempPath("_synthetic.gltf");  // unique: tests run in parallel
  std::ofstream(path) << json;
  return path;
}

TEST(GltfReferenceSynthetic, RestPoseReproducesBindPositions) {
  const std::string path = WriteSyntheticGltf();
  auto result = SkinAtTime(path, /*animation=*/-1, 0.0);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->rest.size(), 3u);
  EXPECT_VEC_NEAR(result->rest[2], Vector3d(0.5, 1, 5), 1e-12);
  for (int i = 0; i < 3; ++i) EXPECT_VEC_NEAR(result->posed[i], result->rest[i], 1e-12);
}

TEST(GltfReferenceSynthetic, StepHoldsThePreviousKey) {
  const std::string path = WriteSyntheticGltf();
  struct Case {
    double t;
    double dx;  // displacement of joint A
  };
  for (const Case& c :
       {Case{-1, 0}, Case{0, 0}, Case{0.5, 0}, Case{0.999, 0}, Case{1, 1}, Case{7, 1}}) {
    auto result = SkinAtTime(path, 0, c.t);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_VEC_NEAR(result->posed[0], Vector3d(1 + c.dx, 0, 5), 1e-12) << "t=" << c.t;
    EXPECT_VEC_NEAR(result->posed[1], Vector3d(1, 2, 5), 1e-12) << "t=" << c.t;
    EXPECT_VEC_NEAR(result->posed[2], Vector3d(0.5 + c.dx / 2, 1, 5), 1e-6) << "t=" << c.t;
  }
}

TEST(GltfReferenceSynthetic, CubicSplineScalesTangentsByKeyInterval) {
  const std::string path = WriteSyntheticGltf();
  // Δt = 2, s = ½: p = ½·1 + 2·(⅛ - ½ + ½)·1 + ½·2 + 0 = 1.75, i.e. A moves by 0.75
  // (an unscaled tangent would give 0.625).
  auto mid = SkinAtTime(path, 1, 1.0);
  ASSERT_TRUE(mid.ok()) << mid.status();
  EXPECT_VEC_NEAR(mid->posed[0], Vector3d(1.75, 0, 5), 1e-12);
  // s = ¼ (t = 0.5): h00 = 27/32, h10 = 9/64, h01 = 5/32 → 27/32 + 2·9/64 + 5/32·2 = 1.4375.
  auto quarter = SkinAtTime(path, 1, 0.5);
  ASSERT_TRUE(quarter.ok()) << quarter.status();
  EXPECT_VEC_NEAR(quarter->posed[0], Vector3d(1.4375, 0, 5), 1e-12);
  // Ends hold the key values (the middle element of each triplet).
  auto end = SkinAtTime(path, 1, 3.0);
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_VEC_NEAR(end->posed[0], Vector3d(2, 0, 5), 1e-12);
}

TEST(GltfReferenceSynthetic, CubicSplineRotationIsNormalized) {
  const std::string path = WriteSyntheticGltf();
  // Zero tangents, s = ½: the spline is ½ q0 + ½ q1, normalized → an eighth turn about z.
  auto result = SkinAtTime(path, 2, 0.5);
  ASSERT_TRUE(result.ok()) << result.status();
  const Vector3d joint_b(0, 2, 5);
  EXPECT_VEC_NEAR(result->posed[1], RotateZAbout(Vector3d(1, 2, 5), joint_b, kPi / 4), 1e-6);
  EXPECT_VEC_NEAR(result->posed[0], Vector3d(1, 0, 5), 1e-12);
}

TEST(GltfReferenceSynthetic, LinearRotationTakesTheShorterArc) {
  const std::string path = WriteSyntheticGltf();
  const Vector3d joint_b(0, 2, 5);
  for (double s : {0.25, 0.5, 1.0}) {
    auto result = SkinAtTime(path, 3, s);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_VEC_NEAR(result->posed[1], RotateZAbout(Vector3d(1, 2, 5), joint_b, s * kPi / 2), 1e-6)
        << "t=" << s;
    // v2: half on A (still), half on B (rotated).
    const Vector3d expected =
        0.5 * Vector3d(0.5, 1, 5) + 0.5 * RotateZAbout(Vector3d(0.5, 1, 5), joint_b, s * kPi / 2);
    EXPECT_VEC_NEAR(result->posed[2], expected, 1e-4) << "t=" << s;  // ubyte/ushort weights
  }
}

TEST(GltfReferenceSynthetic, KeyTimesMergeSamplers) {
  const std::string path = WriteSyntheticGltf();
  auto keys = AnimationKeyTimes(path, 1);
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_EQ(keys->keys, (std::vector<double>{0, 2}));
  EXPECT_EQ(keys->start, 0);
  EXPECT_EQ(keys->end, 2);
  EXPECT_FALSE(AnimationKeyTimes(path, 4).ok());
  EXPECT_FALSE(SkinAtTime(path, 4, 0.0).ok());
}

TEST(GltfReferenceErrors, MissingFileIsAnError) {
  EXPECT_FALSE(SkinAtTime(::testing::TempDir() + "/no_such_file.glb", 0, 0.0).ok());
  EXPECT_FALSE(AnimationKeyTimes(::testing::TempDir() + "/no_such_file.gltf", 0).ok());
}

// --- The shared sample characters. --------------------------------------------------------

TEST(GltfReferenceSamples, RiggedSimpleGltfAndGlbAgree) {
  const std::string gltf = DataPath("gltf/RiggedSimple/RiggedSimple.gltf");
  const std::string glb = DataPath("gltf/RiggedSimple/RiggedSimple.glb");
  SKINNING_REQUIRE_DATA(gltf);
  SKINNING_REQUIRE_DATA(glb);
  auto a = SkinAtTime(gltf, 0, 0.5);
  auto b = SkinAtTime(glb, 0, 0.5);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(a->posed.size(), b->posed.size());
  ASSERT_GT(a->posed.size(), 0u);
  double moved = 0;
  for (size_t i = 0; i < a->posed.size(); ++i) {
    EXPECT_VEC_NEAR(a->rest[i], b->rest[i], 1e-12);
    EXPECT_VEC_NEAR(a->posed[i], b->posed[i], 1e-12);
    moved = std::max(moved, (a->posed[i] - a->rest[i]).norm());
  }
  EXPECT_GT(moved, 1e-3);  // the pose at 0.5 s is not the rest pose
}

TEST(GltfReferenceSamples, CesiumManKeyTimes) {
  const std::string path = DataPath("gltf/CesiumMan/CesiumMan.glb");
  SKINNING_REQUIRE_DATA(path);
  auto keys = AnimationKeyTimes(path, 0);
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_EQ(keys->keys.size(), 48u);
  EXPECT_TRUE(std::is_sorted(keys->keys.begin(), keys->keys.end()));
  EXPECT_EQ(std::adjacent_find(keys->keys.begin(), keys->keys.end()), keys->keys.end());
  EXPECT_EQ(keys->start, keys->keys.front());
  EXPECT_EQ(keys->end, keys->keys.back());
  EXPECT_GE(keys->start, 0.0);
  EXPECT_LT(keys->start, 0.1);
  EXPECT_NEAR(keys->end, 2.0, 0.05);
  // Against the accessors' declared min/max, read directly.
  const tinygltf::Model model = LoadDirect(path);
  double min = 1e30, max = -1e30;
  for (const tinygltf::AnimationSampler& s : model.animations[0].samplers) {
    const tinygltf::Accessor& input = model.accessors[s.input];
    ASSERT_EQ(input.minValues.size(), 1u);
    ASSERT_EQ(input.maxValues.size(), 1u);
    min = std::min(min, input.minValues[0]);
    max = std::max(max, input.maxValues[0]);
  }
  EXPECT_NEAR(keys->start, min, 1e-6);
  EXPECT_NEAR(keys->end, max, 1e-6);
}

class GltfReferenceAllSamples : public ::testing::TestWithParam<const char*> {};

TEST_P(GltfReferenceAllSamples, LoadsAndGivesFinitePositions) {
  const std::string path = DataPath(GetParam());
  SKINNING_REQUIRE_DATA(path);
  auto keys = AnimationKeyTimes(path, 0);
  ASSERT_TRUE(keys.ok()) << keys.status();
  ASSERT_LT(keys->start, keys->end);
  size_t vertices = 0;
  for (double f : {0.0, 0.25, 0.5, 0.75, 1.0}) {
    const double t = keys->start + f * (keys->end - keys->start);
    auto result = SkinAtTime(path, 0, t);
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_GT(result->posed.size(), 0u);
    ASSERT_EQ(result->posed.size(), result->rest.size());
    if (vertices == 0) vertices = result->posed.size();
    EXPECT_EQ(result->posed.size(), vertices);
    for (size_t i = 0; i < result->posed.size(); ++i) {
      ASSERT_TRUE(result->posed[i].allFinite()) << "t=" << t << " vertex " << i;
    }
  }
}

// Global transform of a node from its parent chain (matrix or T·R·S per node).
Eigen::Matrix4d NodeGlobal(const tinygltf::Model& model, int node) {
  Eigen::Matrix4d global = Eigen::Matrix4d::Identity();
  for (int n = node; n >= 0;) {
    const tinygltf::Node& nd = model.nodes[n];
    Eigen::Matrix4d local = Eigen::Matrix4d::Identity();
    if (nd.matrix.size() == 16) {
      local = Eigen::Map<const Eigen::Matrix4d>(nd.matrix.data());
    } else {
      Eigen::Affine3d a = Eigen::Affine3d::Identity();
      if (nd.translation.size() == 3) {
        a.translate(Vector3d(nd.translation[0], nd.translation[1], nd.translation[2]));
      }
      if (nd.rotation.size() == 4) {
        a.rotate(Eigen::Quaterniond(nd.rotation[3], nd.rotation[0], nd.rotation[1], nd.rotation[2])
                     .normalized());
      }
      if (nd.scale.size() == 3) a.scale(Vector3d(nd.scale[0], nd.scale[1], nd.scale[2]));
      local = a.matrix();
    }
    global = local * global;
    int parent = -1;
    for (size_t p = 0; p < model.nodes.size(); ++p) {
      for (int c : model.nodes[p].children) {
        if (c == n) parent = static_cast<int>(p);
      }
    }
    n = parent;
  }
  return global;
}

// With no animation applied the joints sit in their bind pose, so every joint matrix
// global(joint) · inverseBind is the same bind-shape transform (the identity for SimpleSkin and
// CesiumMan-style exports, the Z-up correction for RiggedSimple), and each vertex poses to that
// transform of its rest position whatever its weights. The expected transform is computed here
// from joint 0 with a direct parent-chain walk and a direct read of the matrices.
TEST_P(GltfReferenceAllSamples, UnanimatedPoseIsTheBindShape) {
  const std::string path = DataPath(GetParam());
  SKINNING_REQUIRE_DATA(path);
  auto result = SkinAtTime(path, /*animation=*/-1, 0.0);
  ASSERT_TRUE(result.ok()) << result.status();
  const tinygltf::Model model = LoadDirect(path);
  const tinygltf::Skin& skin = model.skins[0];
  Eigen::Matrix4d inverse_bind = Eigen::Matrix4d::Identity();
  if (skin.inverseBindMatrices >= 0) {
    const std::vector<float> ibm = TightFloats(model, skin.inverseBindMatrices);
    ASSERT_GE(ibm.size(), 16u);
    inverse_bind = Eigen::Map<const Eigen::Matrix4f>(ibm.data()).cast<double>();
  }
  const Eigen::Matrix4d bind_shape = NodeGlobal(model, skin.joints[0]) * inverse_bind;
  double scale = 0;
  for (const Vector3d& p : result->rest) scale = std::max(scale, p.cwiseAbs().maxCoeff());
  for (size_t i = 0; i < result->posed.size(); ++i) {
    const Vector3d expected = (bind_shape * result->rest[i].homogeneous()).head<3>();
    EXPECT_VEC_NEAR(result->posed[i], expected, 1e-4 * std::max(scale, 1.0)) << "vertex " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    GltfReference, GltfReferenceAllSamples,
    ::testing::Values("gltf/SimpleSkin/SimpleSkin.gltf", "gltf/RiggedSimple/RiggedSimple.gltf",
                      "gltf/RiggedSimple/RiggedSimple.glb", "gltf/RiggedFigure/RiggedFigure.gltf",
                      "gltf/RiggedFigure/RiggedFigure.glb", "gltf/CesiumMan/CesiumMan.glb"));

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning::testing::gltf_reference
