#include "core/rig/swing_twist.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

constexpr double kPi = 3.14159265358979323846;

Eigen::Quaterniond RandomRotation(std::mt19937& gen) {
  std::normal_distribution<double> g(0.0, 1.0);
  return Eigen::Quaterniond(g(gen), g(gen), g(gen), g(gen)).normalized();
}

Eigen::Vector3d RandomAxis(std::mt19937& gen) {
  std::normal_distribution<double> g(0.0, 1.0);
  return Eigen::Vector3d(g(gen), g(gen), g(gen)).normalized();
}

// A random rotation q split about a random axis: q = swing · twist(theta about axis).
struct RandomSplit {
  explicit RandomSplit(std::mt19937& gen) : q(RandomRotation(gen)), axis(RandomAxis(gen)) {
    SwingTwistSplit(q, axis, &swing, &theta);
  }
  Eigen::Quaterniond q;
  Eigen::Vector3d axis;
  Eigen::Quaterniond swing;
  double theta = 0;
};

TEST(SwingTwistSplit, RecomposesRandomQuaternions) {
  std::mt19937 gen(7);
  for (int trial = 0; trial < 1000; ++trial) {
    const RandomSplit split(gen);
    const Eigen::Quaterniond& q = split.q;
    const Eigen::Vector3d& axis = split.axis;
    const Eigen::Quaterniond& swing = split.swing;
    const double theta = split.theta;
    const Eigen::Matrix3d R = swing.toRotationMatrix() *
                              Eigen::AngleAxisd(theta, axis).toRotationMatrix();
    EXPECT_LT((R - q.toRotationMatrix()).cwiseAbs().maxCoeff(), 1e-12) << "trial " << trial;
    EXPECT_NEAR(swing.norm(), 1.0, 1e-12);
    EXPECT_GT(theta, -kPi);
    EXPECT_LE(theta, kPi);
  }
}

TEST(SwingTwistSplit, SwingAxisIsPerpendicularToTwistAxis) {
  std::mt19937 gen(8);
  for (int trial = 0; trial < 1000; ++trial) {
    const RandomSplit split(gen);
    const Eigen::Quaterniond& q = split.q;
    const Eigen::Vector3d& axis = split.axis;
    const Eigen::Quaterniond& swing = split.swing;
    EXPECT_LT(std::abs(swing.vec().dot(axis)), 1e-12);
    // Independent characterization: the twist fixes the axis, so the swing alone must carry the
    // axis where q does.
    EXPECT_LT((swing * axis - q * axis).norm(), 1e-12);
  }
}

TEST(SwingTwistSplit, PureTwistHasIdentitySwingAndItsAngle) {
  std::mt19937 gen(9);
  std::uniform_real_distribution<double> angle(-kPi + 1e-6, kPi);
  for (int trial = 0; trial < 200; ++trial) {
    const Eigen::Vector3d axis = RandomAxis(gen);
    const double a = angle(gen);
    const Eigen::Quaterniond q(Eigen::AngleAxisd(a, axis));
    Eigen::Quaterniond swing;
    double theta = 0;
    SwingTwistSplit(q, axis, &swing, &theta);
    EXPECT_NEAR(theta, a, 1e-12);
    EXPECT_LT(swing.angularDistance(Eigen::Quaterniond::Identity()), 1e-9);
  }
}

TEST(SwingTwistSplit, PureSwingHasZeroTwist) {
  std::mt19937 gen(10);
  std::uniform_real_distribution<double> angle(-3.0, 3.0);
  for (int trial = 0; trial < 200; ++trial) {
    const Eigen::Vector3d axis = RandomAxis(gen);
    const Eigen::Vector3d perp = axis.cross(RandomAxis(gen)).normalized();
    const Eigen::Quaterniond q(Eigen::AngleAxisd(angle(gen), perp));
    Eigen::Quaterniond swing;
    double theta = 1;
    SwingTwistSplit(q, axis, &swing, &theta);
    EXPECT_NEAR(theta, 0.0, 1e-12);
    EXPECT_LT(swing.angularDistance(q), 1e-9);
  }
}

TEST(SwingTwistSplit, NegatedQuaternionGivesTheSameSplit) {
  std::mt19937 gen(11);
  for (int trial = 0; trial < 200; ++trial) {
    const Eigen::Quaterniond q = RandomRotation(gen);
    const Eigen::Vector3d axis = RandomAxis(gen);
    Eigen::Quaterniond s1, s2;
    double t1 = 0, t2 = 0;
    SwingTwistSplit(q, axis, &s1, &t1);
    SwingTwistSplit(Eigen::Quaterniond(-q.coeffs()), axis, &s2, &t2);
    EXPECT_NEAR(t1, t2, 1e-12);
    EXPECT_LT((s1.coeffs() - s2.coeffs()).norm(), 1e-12);
  }
}

TEST(SwingTwistSplit, HalfTurnSwingHasIdentityTwist) {
  const Eigen::Vector3d axis = Eigen::Vector3d::UnitZ();
  const Eigen::Quaterniond q(Eigen::AngleAxisd(kPi, Eigen::Vector3d(1, 1, 0).normalized()));
  Eigen::Quaterniond swing;
  double theta = 1;
  SwingTwistSplit(q, axis, &swing, &theta);
  EXPECT_EQ(theta, 0.0);
  EXPECT_LT(swing.angularDistance(q), 1e-9);
}

TEST(SwingTwistSplit, HalfTurnTwistAngleIsPlusPi) {
  const Eigen::Vector3d axis = Eigen::Vector3d::UnitX();
  for (double sign : {1.0, -1.0}) {
    Eigen::Quaterniond swing;
    double theta = 0;
    SwingTwistSplit(Eigen::Quaterniond(Eigen::AngleAxisd(sign * kPi, axis)), axis, &swing, &theta);
    EXPECT_NEAR(theta, kPi, 1e-12);
  }
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
