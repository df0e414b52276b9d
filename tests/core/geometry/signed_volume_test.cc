#include <cmath>

#include <gtest/gtest.h>

#include "core/geometry/mesh.h"
#include "tests/support/fixtures.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

// The generated cylinder is closed and outward-facing: its volume is the inscribed prism's,
// (segments/2)·sin(2π/segments)·r²·length, exactly.
TEST(SignedVolume, ClosedCylinderEqualsPrismVolume) {
  const int segments = 24;
  const Rig rig = testing::MakeCylinderRig(41, segments, 2.0, 0.25);
  const double expected = 0.5 * segments * std::sin(2 * M_PI / segments) * 0.25 * 0.25 * 2.0;
  EXPECT_NEAR(SignedVolume(rig.mesh.V, rig.mesh.F), expected, 1e-12);
}

TEST(SignedVolume, ClosedBoxEqualsBoxVolume) {
  const Rig rig = testing::MakeBoxRig(41, 7, 2.0, 0.25);
  EXPECT_NEAR(SignedVolume(rig.mesh.V, rig.mesh.F), 2.0 * 0.5 * 0.5, 1e-12);
}

TEST(SignedVolume, FlippedTrianglesNegateIt) {
  Rig rig = testing::MakeBoxRig(5, 3, 1.0, 0.5);
  rig.mesh.F.col(1).swap(rig.mesh.F.col(2));
  EXPECT_NEAR(SignedVolume(rig.mesh.V, rig.mesh.F), -1.0, 1e-12);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
