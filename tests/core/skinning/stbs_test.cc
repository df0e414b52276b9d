#include "core/skinning/stbs.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/rig/bones.h"
#include "core/skinning/dqs.h"
#include "core/skinning/lbs.h"
#include "core/weights/bake.h"
#include "core/weights/endpoint_weights.h"
#include "tests/support/fixtures.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

constexpr double kPi = 3.14159265358979323846;

// The cylinder rig (joint 0 at 0 with tail (1,0,0), joint 1 "elbow" at (1,0,0) with tail
// (1.9,0,0)) with BBW bone weights and both kinds of endpoint weights, baked once.
struct Baked {
  Rig rig;
  std::vector<int> order;
  std::vector<StbsBone> bones;
  Eigen::MatrixXd W;       // bone weights
  Eigen::MatrixXd E_bbw;   // joint-BBW endpoint weights
  Eigen::MatrixXd E_proj;  // projection endpoint weights
};

const Baked& GetBaked() {
  static const Baked* baked = [] {
    auto* b = new Baked;
    b->rig = testing::MakeCylinderRig();
    b->order = *TopologicalOrder(b->rig.skeleton);
    b->bones = StbsBones(*JointHandles(b->rig.skeleton));
    BakeOptions bo;
    bo.method = BakeMethod::kBbw;
    bo.domain.voxel.resolution = 28;
    auto w = Bake(b->rig.mesh, b->rig.skeleton, bo);
    EXPECT_TRUE(w.ok()) << w.status();
    b->W = w->weights;
    EndpointBakeOptions eo;
    eo.domain.voxel.resolution = 28;
    auto e = BakeEndpointWeights(b->rig.mesh, b->rig.skeleton, eo);
    EXPECT_TRUE(e.ok()) << e.status();
    b->E_bbw = e->endpoint;
    eo.method = EndpointMethod::kProjection;
    b->E_proj = BakeEndpointWeights(b->rig.mesh, b->rig.skeleton, eo)->endpoint;
    return b;
  }();
  return *baked;
}

Pose RandomPose(const Skeleton& sk, std::mt19937& gen) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Pose pose = RestPose(sk);
  for (Transform& t : pose.local) {
    t.rotation = Eigen::Quaterniond(u(gen), u(gen), u(gen), u(gen)).normalized();
    t.translation += 0.2 * Eigen::Vector3d(u(gen), u(gen), u(gen));
  }
  return pose;
}

// Indices of vertices with x > x0.
std::vector<int> Beyond(const RowMatrixX3d& V, double x0) {
  std::vector<int> out;
  for (int i = 0; i < V.rows(); ++i)
    if (V(i, 0) > x0) out.push_back(i);
  return out;
}

double Spread(const RowMatrixX3d& V, const std::vector<int>& idx) {
  double lo = 1e300, hi = -1e300;
  for (int i : idx) lo = std::min(lo, V(i, 0)), hi = std::max(hi, V(i, 0));
  return hi - lo;
}

TEST(StbsBones, CylinderBonesAreTheTwoTails) {
  const Baked& b = GetBaked();
  ASSERT_EQ(b.bones.size(), 2u);
  EXPECT_TRUE(b.bones[0].valid);
  EXPECT_TRUE(b.bones[1].valid);
  EXPECT_LT((b.bones[0].a - Eigen::Vector3d(0, 0, 0)).norm(), 1e-12);
  EXPECT_LT((b.bones[0].b - Eigen::Vector3d(1, 0, 0)).norm(), 1e-12);
  EXPECT_LT((b.bones[1].a - Eigen::Vector3d(1, 0, 0)).norm(), 1e-12);
  EXPECT_LT((b.bones[1].b - Eigen::Vector3d(1.9, 0, 0)).norm(), 1e-12);
}

TEST(StretchedSkinningTransforms, EqualSkinningTransformsWhenUnstretched) {
  const Baked& b = GetBaked();
  std::mt19937 gen(1);
  BoneStretchTwist st;
  st.stretch = {1.0, 1.0};
  st.twist_a = {0.3, -0.2};  // twists do not enter the transforms
  for (int trial = 0; trial < 5; ++trial) {
    const Pose pose = RandomPose(b.rig.skeleton, gen);
    auto T = StretchedSkinningTransforms(b.rig.skeleton, b.order, pose, b.bones, st);
    auto R = SkinningTransforms(b.rig.skeleton, b.order, pose);
    ASSERT_TRUE(T.ok() && R.ok());
    for (int j = 0; j < 2; ++j) EXPECT_TRUE((*T)[j].matrix() == (*R)[j].matrix());
  }
}

TEST(StretchedSkinningTransforms, ChildMovesByRotatedStretchOffset) {
  const Baked& b = GetBaked();
  std::mt19937 gen(2);
  BoneStretchTwist st;
  st.stretch = {1.7, 1.0};
  for (int trial = 0; trial < 5; ++trial) {
    const Pose pose = RandomPose(b.rig.skeleton, gen);
    auto T = StretchedSkinningTransforms(b.rig.skeleton, b.order, pose, b.bones, st);
    auto R = SkinningTransforms(b.rig.skeleton, b.order, pose);
    ASSERT_TRUE(T.ok() && R.ok());
    // Closed form: joint 1's transform is shifted by 0.7 × bone 0 as posed by joint 0.
    const Eigen::Vector3d offset = (*R)[0].linear() * Eigen::Vector3d(0.7, 0, 0);
    EXPECT_LT(((*T)[0].matrix() - (*R)[0].matrix()).cwiseAbs().maxCoeff(), 1e-12);
    EXPECT_LT(((*T)[1].linear() - (*R)[1].linear()).cwiseAbs().maxCoeff(), 1e-12);
    EXPECT_LT(((*T)[1].translation() - (*R)[1].translation() - offset).norm(), 1e-12);
  }
}

// Stretching bone 0 by 2 (offset (1,0,0)) with projection endpoint weights.
class StbsStretch : public ::testing::TestWithParam<bool> {};

TEST_P(StbsStretch, MovesVerticesBeyondTheFarJointRigidly) {
  const bool dqs = GetParam();
  const Baked& b = GetBaked();
  BoneStretchTwist st;
  st.stretch = {2.0, 1.0};
  auto T = StretchedSkinningTransforms(b.rig.skeleton, b.order, Pose{}, b.bones, st);
  ASSERT_TRUE(T.ok());
  RowMatrixX3d U;
  if (dqs)
    StbsDqs(b.rig.mesh.V, b.W, b.E_proj, b.bones, *T, st, &U);
  else
    StbsLbs(b.rig.mesh.V, b.W, b.E_proj, b.bones, *T, st, &U);
  const std::vector<int> far = Beyond(b.rig.mesh.V, 1.3);
  ASSERT_GT(far.size(), 100u);
  double worst = 0;
  for (int i : far)
    worst = std::max(worst, (U.row(i) - b.rig.mesh.V.row(i) - Eigen::RowVector3d(1, 0, 0)).norm());
  EXPECT_LT(worst, 1e-6);
  EXPECT_NEAR(Spread(U, far), Spread(b.rig.mesh.V, far), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(LbsAndDqs, StbsStretch, ::testing::Values(false, true));

TEST(StbsStretch, LbsWithScaledJointScalesTheFarPart) {
  const Baked& b = GetBaked();
  Pose pose = RestPose(b.rig.skeleton);
  pose.local[0].scale = Eigen::Vector3d(2, 1, 1);
  auto T = SkinningTransforms(b.rig.skeleton, b.order, pose);
  ASSERT_TRUE(T.ok());
  RowMatrixX3d U;
  Lbs(b.rig.mesh.V, b.W, *T, &U);
  const std::vector<int> far = Beyond(b.rig.mesh.V, 1.3);
  EXPECT_NEAR(Spread(U, far) / Spread(b.rig.mesh.V, far), 2.0, 1e-9);
}

// Mean twist angle (radians) about the x-axis of the vertices with |x − x0| < 0.02.
double MeanRingTwist(const RowMatrixX3d& V, const RowMatrixX3d& U, double x0) {
  double sum = 0;
  int count = 0;
  for (int i = 0; i < V.rows(); ++i) {
    if (std::abs(V(i, 0) - x0) > 0.02) continue;
    const Eigen::Vector2d a(V(i, 1), V(i, 2)), c(U(i, 1), U(i, 2));
    if (a.norm() < 1e-6) continue;
    sum += std::atan2(a.x() * c.y() - a.y() * c.x(), a.dot(c));
    ++count;
  }
  EXPECT_GT(count, 0);
  return sum / std::max(count, 1);
}

class StbsTwist : public ::testing::TestWithParam<bool> {};

TEST_P(StbsTwist, HalfTurnAtBoneEndSpreadsToQuarterTurnAtMiddle) {
  const bool dqs = GetParam();
  const Baked& b = GetBaked();
  BoneStretchTwist st;
  st.twist_a = {0.0, 0.0};
  st.twist_b = {0.0, kPi};
  auto T = StretchedSkinningTransforms(b.rig.skeleton, b.order, Pose{}, b.bones, st);
  ASSERT_TRUE(T.ok());
  RowMatrixX3d U;
  if (dqs)
    StbsDqs(b.rig.mesh.V, b.W, b.E_bbw, b.bones, *T, st, &U);
  else
    StbsLbs(b.rig.mesh.V, b.W, b.E_bbw, b.bones, *T, st, &U);
  const double mid = MeanRingTwist(b.rig.mesh.V, U, 1.45) * 180 / kPi;
  const double near = MeanRingTwist(b.rig.mesh.V, U, 1.15) * 180 / kPi;
  const double far = MeanRingTwist(b.rig.mesh.V, U, 1.75) * 180 / kPi;
  std::printf("twist at x = 1.15 / 1.45 / 1.75: %.1f / %.1f / %.1f degrees (%s)\n", near, mid, far,
              dqs ? "dqs" : "lbs");
  EXPECT_NEAR(mid, 90.0, 10.0);
  EXPECT_LT(near, mid);
  EXPECT_LT(mid, far);
}

INSTANTIATE_TEST_SUITE_P(LbsAndDqs, StbsTwist, ::testing::Values(false, true));

TEST(Stbs, RestStretchAndTwistEqualPlainSkinning) {
  const Baked& b = GetBaked();
  std::mt19937 gen(3);
  BoneStretchTwist st;
  st.stretch = {1.0, 1.0};
  st.twist_a = {0.0, 0.0};
  st.twist_b = {0.0, 0.0};
  for (int trial = 0; trial < 3; ++trial) {
    auto T = SkinningTransforms(b.rig.skeleton, b.order, RandomPose(b.rig.skeleton, gen));
    ASSERT_TRUE(T.ok());
    RowMatrixX3d U, L, Ud, D;
    StbsLbs(b.rig.mesh.V, b.W, b.E_bbw, b.bones, *T, st, &U);
    Lbs(b.rig.mesh.V, b.W, *T, &L);
    EXPECT_TRUE(U == L);
    StbsDqs(b.rig.mesh.V, b.W, b.E_bbw, b.bones, *T, st, &Ud);
    Dqs(b.rig.mesh.V, b.W, *T, &D);
    EXPECT_LT((Ud - D).cwiseAbs().maxCoeff(), 1e-12);
  }
}

TEST(Stbs, FloatPathMatchesReference) {
  const Baked& b = GetBaked();
  const Eigen::Index n = b.rig.mesh.V.rows();
  const std::vector<float> V(b.rig.mesh.V.data(), b.rig.mesh.V.data() + 3 * n);
  // The lane kernels skip the sines' reduction to [−π, π] for a joint whose twists are within
  // π (LBS: the angle) or 2π (DQS: the half angle). First set: joint 0 within π, joint 1 within
  // 2π; second: joint 0 within 2π, joint 1 beyond.
  for (const double twist_scale : {1.0, 2.5}) {
    BoneStretchTwist st;
    st.stretch = {1.6, 0.7};
    st.twist_a = {0.4 * twist_scale, -1.0 * twist_scale};
    st.twist_b = {2.5 * twist_scale, 4.0 * twist_scale};
    for (int k : {4, 2, 1}) {  // k = 4: 8-lane kernels; others scalar
      const SparseWeights W = TopK(b.W, k);
      const Eigen::MatrixXd Wd = ToDense(W, 2);
      const RowMatrixXf Ek = AlignEndpointWeights(W, b.E_bbw);
      std::mt19937 gen(4);
      for (bool with_scale : {false, true}) {
        Pose pose = RandomPose(b.rig.skeleton, gen);
        if (with_scale) pose.local[1].scale = Eigen::Vector3d(1.3, 0.8, 1.1);
        auto T = StretchedSkinningTransforms(b.rig.skeleton, b.order, pose, b.bones, st);
        ASSERT_TRUE(T.ok());
        const StbsFrameFloat frame = PrepareStbsFloat(b.bones, *T, st);
        EXPECT_EQ(frame.any_stretch, with_scale);
        for (bool dqs : {false, true}) {
          RowMatrixX3d ref;
          if (dqs)
            StbsDqs(b.rig.mesh.V, Wd, b.E_bbw, b.bones, *T, st, &ref);
          else
            StbsLbs(b.rig.mesh.V, Wd, b.E_bbw, b.bones, *T, st, &ref);
          std::vector<float> U(3 * n);
          StbsFloat(V.data(), static_cast<int>(n), W, Ek, frame, dqs, U.data());
          const double scale = std::max(1.0, ref.cwiseAbs().maxCoeff());
          double worst = 0;
          for (Eigen::Index i = 0; i < n; ++i)
            for (int d = 0; d < 3; ++d) worst = std::max(worst, std::abs(U[3 * i + d] - ref(i, d)));
          EXPECT_LT(worst / scale, 1e-5) << "k " << k << " dqs " << dqs << " scale " << with_scale
                                         << " twist scale " << twist_scale;
        }
      }
    }
  }
}

// Through the DQS vertex order (the server's path for a bake whose order pays) the float kernel
// gives what it gives in the file's order, up to the order of its sums; 333 of the fixture's
// vertices, so that the last block of 8 is partial and goes to the per-vertex kernels. DQS with
// a scaled joint (the two-phase path) does not take the order and writes nothing.
TEST(Stbs, FloatPathThroughTheDqsVertexOrderMatchesTheFileOrder) {
  const Rig rig = testing::MakeInterleavedJointSetsTube();
  constexpr int n = 333;
  const int joints = rig.skeleton.size();
  SparseWeights W;
  W.joints = rig.sparse_weights->joints.topRows(n);
  W.weights = rig.sparse_weights->weights.topRows(n);
  const std::vector<float> V(rig.mesh.V.data(), rig.mesh.V.data() + 3 * n);
  const DqsLaneOrder lanes = PrepareDqsLaneOrder(W);
  ASSERT_FALSE(lanes.empty()) << "the fixture's order pays";
  std::mt19937 gen(12);
  std::uniform_real_distribution<double> u01(0.0, 1.0), u(-1.0, 1.0);
  Eigen::MatrixXd E(n, joints);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < joints; ++j) E(i, j) = u01(gen);
  const RowMatrixXf aligned = AlignEndpointWeights(W, E);
  const RowMatrixXf in_lanes = LaneEndpointWeights(W, aligned, lanes);
  ASSERT_EQ(in_lanes.rows(), n);
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < 4; ++c) {
      const float w = lanes.weights[4 * r + c];
      EXPECT_EQ(in_lanes(r, c), w == 0.f ? 0.f : static_cast<float>(E(lanes.order[r], lanes.joints[4 * r + c])))
          << "row " << r << " slot " << c;
    }
  const std::vector<StbsBone> bones = StbsBones(*JointHandles(rig.skeleton));
  BoneStretchTwist st;
  int stretched = 0;
  for (int j = 0; j < joints; ++j) {  // the joints with a single bone (the extras share joint 1's place)
    const bool bone = bones[j].valid;
    stretched += bone;
    st.stretch.push_back(bone ? 1.0 + 0.3 * u(gen) : 1.0);
    st.twist_a.push_back(bone ? u(gen) : 0.0);
    st.twist_b.push_back(bone ? 2.0 * u(gen) : 0.0);
  }
  ASSERT_GE(stretched, 1);
  const std::vector<int> order = *TopologicalOrder(rig.skeleton);
  for (bool with_scale : {false, true}) {
    Pose pose = RandomPose(rig.skeleton, gen);
    if (with_scale) pose.local[1].scale = Eigen::Vector3d(1.3, 0.8, 1.1);
    const StbsFrameFloat frame = PrepareStbsFloat(bones, *StretchedSkinningTransforms(rig.skeleton, order, pose, bones, st), st);
    for (bool dqs : {false, true}) {
      std::vector<float> file(3 * n), sorted(3 * n, -7.f);
      StbsFloat(V.data(), n, W, aligned, frame, dqs, file.data());
      const bool taken = StbsFloat(V.data(), lanes, in_lanes, frame, dqs, sorted.data());
      if (dqs && with_scale) {
        EXPECT_FALSE(taken);
        EXPECT_TRUE(std::all_of(sorted.begin(), sorted.end(), [](float x) { return x == -7.f; }));
        continue;
      }
      ASSERT_TRUE(taken) << "dqs " << dqs << " scale " << with_scale;
      double worst = 0, moved = 0;
      for (int i = 0; i < 3 * n; ++i) {
        worst = std::max(worst, static_cast<double>(std::abs(sorted[i] - file[i])));
        moved = std::max(moved, static_cast<double>(std::abs(file[i] - V[i])));
      }
      EXPECT_LT(worst, 1e-5) << "dqs " << dqs << " scale " << with_scale;
      EXPECT_GT(moved, 0.1);
    }
  }
  // Endpoint weights of another shape: not taken.
  std::vector<float> U(3 * n);
  EXPECT_FALSE(StbsFloat(V.data(), lanes, aligned.topRows(n - 1), PrepareStbsFloat(bones, std::vector<Eigen::Affine3d>(joints, Eigen::Affine3d::Identity()), st), false, U.data()));
}

TEST(AlignEndpointWeights, PicksTheSlotJointsColumn) {
  SparseWeights W;
  W.joints.resize(2, 2);
  W.weights.resize(2, 2);
  W.joints << 1, 0, 2, 0;
  W.weights << 0.6f, 0.4f, 1.0f, 0.0f;
  Eigen::MatrixXd E(2, 3);
  E << 0.1, 0.2, 0.3, 0.4, 0.5, 0.6;
  const RowMatrixXf A = AlignEndpointWeights(W, E);
  EXPECT_FLOAT_EQ(A(0, 0), 0.2f);
  EXPECT_FLOAT_EQ(A(0, 1), 0.1f);
  EXPECT_FLOAT_EQ(A(1, 0), 0.6f);
  EXPECT_FLOAT_EQ(A(1, 1), 0.0f);
}

// A root "hips" with two children: the hips have two segments, so no single bone.
Skeleton ForkSkeleton() {
  Skeleton sk;
  auto add = [&](const char* name, int parent, const Eigen::Vector3d& world) {
    Joint j;
    j.name = name;
    j.parent = parent;
    const Eigen::Vector3d pw = parent < 0 ? Eigen::Vector3d::Zero()
                                          : Eigen::Vector3d(-sk.joints[parent].inverse_bind.translation());
    j.rest.translation = world - pw;
    j.inverse_bind = Eigen::Translation3d(-world);
    sk.joints.push_back(j);
  };
  add("hips", -1, Eigen::Vector3d(0, 0, 0));
  add("left", 0, Eigen::Vector3d(1, 0, 0));
  add("right", 0, Eigen::Vector3d(-1, 0, 0));
  return sk;
}

TEST(ValidateStretchTwist, NamesFieldIndexValueAndJoint) {
  const Skeleton sk = ForkSkeleton();
  const std::vector<StbsBone> bones = StbsBones(*JointHandles(sk));
  ASSERT_FALSE(bones[0].valid);
  ASSERT_TRUE(bones[1].valid);
  BoneStretchTwist st;
  st.stretch = {2.0, 1.0, 1.0};
  absl::Status s = ValidateStretchTwist(sk, bones, st);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "pose.bone_stretch[0] = 2: joint 0 (hips) has no single bone (it is a leaf without a tail, has several "
            "children, or its bone has zero length)");
  st.stretch = {1.0, 2.0, 1.5};
  EXPECT_TRUE(ValidateStretchTwist(sk, bones, st).ok());
  st.twist_b = {0.5, 0.0, 0.0};
  s = ValidateStretchTwist(sk, bones, st);
  EXPECT_THAT(std::string(s.message()),
              ::testing::StartsWith("pose.bone_twist[1] = 0.5: joint 0 (hips) has no single bone ("));
  st.twist_b.clear();
  st.stretch = {1.0, -1.0, 1.0};
  s = ValidateStretchTwist(sk, bones, st, "frame");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("frame.bone_stretch[1] = -1"), std::string::npos) << s.message();
  st.stretch = {1.0, 1.0};
  s = ValidateStretchTwist(sk, bones, st);
  EXPECT_NE(s.message().find("pose.bone_stretch has 2 entries"), std::string::npos) << s.message();
  st.stretch.clear();
  st.twist_a = {0.0, std::nan(""), 0.0};
  s = ValidateStretchTwist(sk, bones, st);
  EXPECT_NE(s.message().find("pose.bone_twist[2] = nan is not finite"), std::string::npos)
      << s.message();
}

// Twists the kernels' sine and cosine cannot reduce (2e5 rad gave NaN vertices) and stretches
// that overflow (3e38) are refused; the bounds themselves are taken.
TEST(ValidateStretchTwist, TwistAndStretchStayWithinTheKernelsRange) {
  const Skeleton sk = ForkSkeleton();
  const std::vector<StbsBone> bones = StbsBones(*JointHandles(sk));
  ASSERT_TRUE(bones[1].valid);
  BoneStretchTwist st;
  st.twist_a = {0.0, 2e5, 0.0};
  absl::Status s = ValidateStretchTwist(sk, bones, st);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              ::testing::HasSubstr("pose.bone_twist[2] = 200000 rad is outside [-10000, 10000]"));
  st.twist_a = {0.0, -kMaxBoneTwist, 0.0};
  st.twist_b = {0.0, kMaxBoneTwist, 0.0};
  EXPECT_TRUE(ValidateStretchTwist(sk, bones, st).ok()) << ValidateStretchTwist(sk, bones, st);
  st = {};
  st.stretch = {1.0, 3e38, 1.0};
  s = ValidateStretchTwist(sk, bones, st);
  EXPECT_THAT(std::string(s.message()),
              ::testing::HasSubstr("pose.bone_stretch[1] = 3e+38 is outside [1e-06, 1e+06]"));
  st.stretch = {1.0, 1e-7, 1.0};
  EXPECT_FALSE(ValidateStretchTwist(sk, bones, st).ok());
  st.stretch = {1.0, kMaxBoneStretch, 1.0};
  EXPECT_TRUE(ValidateStretchTwist(sk, bones, st).ok());
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
