#include "core/rig/animation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

Skeleton OneJoint() {
  Skeleton s;
  s.joints.resize(1);
  s.joints[0].name = "bone";
  s.joints[0].rest.translation = Eigen::Vector3d(0, 7, 0);
  s.joints[0].rest.scale = Eigen::Vector3d(2, 2, 2);
  return s;
}

Animation Translation(Interpolation interpolation, std::vector<double> times, std::vector<double> values) {
  AnimationChannel ch;
  ch.joint = 0;
  ch.path = AnimationPath::kTranslation;
  ch.interpolation = interpolation;
  ch.times = std::move(times);
  ch.values = std::move(values);
  Animation a;
  a.start = ch.times.front();
  a.end = ch.times.back();
  a.channels.push_back(std::move(ch));
  return a;
}

Eigen::Vector3d At(const Animation& a, double t) { return SampleAnimation(OneJoint(), a, t)[0].translation; }

TEST(SampleAnimation, StepHoldsThePreviousKeyAndLinearLerps) {
  const Animation step = Translation(Interpolation::kStep, {0, 1, 2}, {0, 0, 0, 1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(At(step, 0.99).isZero());
  EXPECT_TRUE(At(step, 1.5).isApprox(Eigen::Vector3d(1, 2, 3)));
  const Animation linear = Translation(Interpolation::kLinear, {0, 1, 3}, {0, 0, 0, 1, 2, 3, 3, 2, 1});
  EXPECT_TRUE(At(linear, 0.25).isApprox(Eigen::Vector3d(0.25, 0.5, 0.75)));
  EXPECT_TRUE(At(linear, 2.0).isApprox(Eigen::Vector3d(2, 2, 2)));
}

TEST(SampleAnimation, CubicSplineIsTheHermiteSplineWithTangentsScaledByTheInterval) {
  // Per key: in-tangent, value, out-tangent; Δt = 2. At s = 0.5: h00 = 0.5, h10 = 0.125,
  // h01 = 0.5, h11 = -0.125: 0.125·2·(1,0,0) + 0.5·(2,4,6) − 0.125·2·(0,1,0) = (1.25, 1.75, 3).
  const Animation a = Translation(Interpolation::kCubicSpline, {1, 3},
                                  {100, 100, 100, 0, 0, 0, 1, 0, 0, 0, 1, 0, 2, 4, 6, -100, -100, -100});
  EXPECT_TRUE(At(a, 2.0).isApprox(Eigen::Vector3d(1.25, 1.75, 3), 1e-12)) << At(a, 2.0).transpose();
  EXPECT_TRUE(At(a, 0.0).isZero());                            // clamped to the first value
  EXPECT_TRUE(At(a, 9.0).isApprox(Eigen::Vector3d(2, 4, 6)));  // and to the last
}

TEST(SampleAnimation, UnanimatedPropertiesKeepTheRestTransform) {
  const Animation a = Translation(Interpolation::kLinear, {0, 1}, {1, 0, 0, 3, 0, 0});
  const Transform t = SampleAnimation(OneJoint(), a, 0.5)[0];
  EXPECT_TRUE(t.translation.isApprox(Eigen::Vector3d(2, 0, 0)));
  EXPECT_TRUE(t.scale.isApprox(Eigen::Vector3d(2, 2, 2)));
  EXPECT_TRUE(t.rotation.isApprox(Eigen::Quaterniond::Identity()));
}

TEST(ValidateAnimationChannel, RejectsBadJointTimesAndValueCounts) {
  const Animation good = Translation(Interpolation::kLinear, {0, 1}, {1, 0, 0, 3, 0, 0});
  EXPECT_TRUE(ValidateAnimationChannel(good.channels[0], 1, "c").ok());
  AnimationChannel ch = good.channels[0];
  ch.joint = 1;
  EXPECT_EQ(ValidateAnimationChannel(ch, 1, "c").message(), "c: joint 1 is out of range (1 joints)");
  ch = good.channels[0];
  ch.times = {1, 1};
  EXPECT_EQ(ValidateAnimationChannel(ch, 1, "c").code(), absl::StatusCode::kInvalidArgument);
  ch = good.channels[0];
  ch.values.pop_back();
  EXPECT_EQ(ValidateAnimationChannel(ch, 1, "c").message(), "c: 5 values for 2 keys (expected 6)");
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
