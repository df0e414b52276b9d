#include "core/skinning/dqs.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/fixtures.h"

#include "core/skinning/lbs.h"
#include "core/skinning/weights.h"
#include "core/io/dmat.h"
#include "core/io/obj.h"
#include "core/io/tgf.h"
#include "tests/support/data.h"
#include "tests/support/geometry_metrics.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

constexpr double kPi = 3.14159265358979323846;

using ::skinning::testing::RandomRig;
using ::skinning::testing::RandomRigids;

std::vector<float> Floats(const RowMatrixX3d& M) {
  return std::vector<float>(M.data(), M.data() + M.size());
}
RowMatrixX3d FromFloats(const std::vector<float>& f) {
  return Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, 3, Eigen::RowMajor>>(f.data(),
                                                                                    f.size() / 3, 3)
      .cast<double>();
}
RowMatrixX3d RoundToFloat(const RowMatrixX3d& M) { return M.cast<float>().cast<double>(); }

// Float DQS of a rig; NU filled when with_normals.
RowMatrixX3d DqsF(const RowMatrixX3d& V, const SparseWeights& W, const DqsTransformsFloat& prepared,
                  const RowMatrixX3d* N = nullptr, RowMatrixX3d* NU = nullptr) {
  const std::vector<float> Vf = Floats(V);
  std::vector<float> Uf(Vf.size()), Nf, NUf;
  if (N != nullptr) {
    Nf = Floats(*N);
    NUf.resize(Nf.size());
  }
  DqsFloat(Vf.data(), V.rows(), W.joints.data(), W.weights.data(), W.k(), prepared, Uf.data(),
           N ? Nf.data() : nullptr, N ? NUf.data() : nullptr);
  if (NU != nullptr) *NU = FromFloats(NUf);
  return FromFloats(Uf);
}

TEST(DqsTest, IdentityTransformsReproduceInput) {
  // The blended real part is (0, 0, 0, Σw): the rotation is I - f·0 and the translation f·0
  // whatever Σw is, so any weights reproduce v exactly.
  for (int k : {4, 3}) {
    const auto r = RandomRig(300, 6, k, 1 + k);
    const RowMatrixX3d V = RoundToFloat(r.V);
    const std::vector<Eigen::Affine3d> T(6, Eigen::Affine3d::Identity());
    RowMatrixX3d U, NU;
    Dqs(V, r.W, T, &U, &r.N, &NU);
    EXPECT_EQ(U, V);
    EXPECT_LT((NU - r.N).cwiseAbs().maxCoeff(), 1e-15);
    Dqs(V, ToDense(r.W, 6), T, &U);
    EXPECT_EQ(U, V);
    EXPECT_EQ(DqsF(V, r.W, PrepareDqsFloat(T)), V) << "k = " << k;
  }
}

TEST(DqsTest, SingleInfluenceMovesRigidly) {
  // Weight 1 on one joint: DQS must reproduce T_j v, and so equal LBS.
  auto r = RandomRig(100, 5, 4, 3);
  const std::vector<Eigen::Affine3d> T = RandomRigids(5, 4);
  for (int i = 0; i < r.W.rows(); ++i) {
    r.W.weights.row(i).setZero();
    r.W.weights(i, i % 4) = 1.f;
    r.W.joints(i, i % 4) = i % 5;
  }
  RowMatrixX3d Ud, Ul, NU;
  Dqs(r.V, r.W, T, &Ud, &r.N, &NU);
  Lbs(r.V, r.W, T, &Ul);
  const RowMatrixX3d Uf = DqsF(r.V, r.W, PrepareDqsFloat(T));
  for (int i = 0; i < r.V.rows(); ++i) {
    const Eigen::Vector3d expected = T[i % 5] * Eigen::Vector3d(r.V.row(i).transpose());
    EXPECT_LT((Ud.row(i).transpose() - expected).norm(), 1e-12) << "vertex " << i;
    EXPECT_LT((Uf.row(i).transpose() - expected).norm(), 1e-5) << "vertex " << i;
    EXPECT_LT((Ud.row(i) - Ul.row(i)).norm(), 1e-12) << "vertex " << i;
    const Eigen::Vector3d n = T[i % 5].linear() * r.N.row(i).transpose();
    EXPECT_LT((NU.row(i).transpose() - n).norm(), 1e-12) << "vertex " << i;
  }
}

TEST(DqsTest, SparseAndDenseAgree) {
  const auto r = RandomRig(400, 9, 4, 5);
  std::vector<Eigen::Affine3d> T = RandomRigids(9, 6);
  for (bool stretch : {false, true}) {
    if (stretch) T[4].scale(Eigen::Vector3d(1.5, 0.7, 1.0));
    RowMatrixX3d Us, Ud;
    Dqs(r.V, r.W, T, &Us);
    Dqs(r.V, ToDense(r.W, 9), T, &Ud);
    EXPECT_LT((Us - Ud).cwiseAbs().maxCoeff(), 1e-12) << "stretch " << stretch;
  }
}

TEST(DqsTest, FloatPathMatchesDoublePath) {
  for (bool stretch : {false, true}) {
    for (int k : {4, 8, 3}) {  // the 4- and 8-influence vector kernels and the generic one
      const auto r = RandomRig(1000, 8, k, 7 + k);
      std::vector<Eigen::Affine3d> T = RandomRigids(8, 8 + k);
      if (stretch) {
        T[1].scale(Eigen::Vector3d(1.3, 0.8, 1.1));
        T[5].linear() *= 1.5;
      }
      const RowMatrixX3d V = RoundToFloat(r.V), N = RoundToFloat(r.N);
      RowMatrixX3d U, NU, NUf;
      Dqs(V, r.W, T, &U, &N, &NU);
      const DqsTransformsFloat prepared = PrepareDqsFloat(T);
      EXPECT_EQ(prepared.stretch.empty(), !stretch);
      const RowMatrixX3d Uf = DqsF(V, r.W, prepared, &N, &NUf);
      const double scale = U.cwiseAbs().maxCoeff();
      EXPECT_LT((Uf - U).cwiseAbs().maxCoeff() / scale, 1e-5)
          << "k " << k << " stretch " << stretch;
      EXPECT_LT((NUf - NU).cwiseAbs().maxCoeff(), 1e-5) << "k " << k << " stretch " << stretch;
      EXPECT_EQ(DqsF(V, r.W, prepared), Uf) << "positions only must not change positions";
    }
  }
}

// The 8-lane kernel blends a slot in one pass where the 8 vertices of a block share its joint and
// the block's distinct joints one by one otherwise (a joint's weights summed over the slots that
// hold it); the pivot (largest weight) may sit in any slot, and slots may be unused; a block with
// more than 2k distinct joints goes to the per-vertex kernel. Blocks of each kind, against the
// double path (block b, first row f = 8b): b % 4 = 0, every row is row f; 1, row f's joints
// with the row's own weights rotated by its lane (the pivot's slot varies across the lanes); 2,
// row f's joints, slots from 2 on unused; 3, row f with slots 0 and 1 swapped in odd lanes;
// block 50 keeps its random rows (k = 4: 9 distinct joints, so the per-vertex kernel). Joint 3's
// dual quaternion is given as its antipode. n = 1003 leaves 3 vertices to the per-vertex kernel.
TEST(DqsTest, FloatLaneBlocksOfSharedMixedAndUnusedSlotsMatchDoublePath) {
  for (int k : {4, 8}) {
    for (bool stretch : {false, true}) {
      auto r = RandomRig(1003, 9, k, 40 + k);
      SparseWeights& W = r.W;
      const SparseWeights original = W;
      for (int i = 0; i < 1000; ++i) {
        const int block = i / 8, first = 8 * block, lane = i % 8;
        if (block == 50) continue;
        W.joints.row(i) = original.joints.row(first);
        W.weights.row(i) = original.weights.row(first);
        if (block % 4 == 1) {
          for (int c = 0; c < k; ++c) W.weights(i, c) = original.weights(i, (c + lane) % k);
        } else if (block % 4 == 2) {
          float rest = 0.f;
          for (int c = 2; c < k; ++c) {
            rest += W.weights(i, c);
            W.weights(i, c) = 0.f;
          }
          W.weights(i, 0) += rest;
        } else if (block % 4 == 3 && lane % 2 == 1) {
          std::swap(W.joints(i, 0), W.joints(i, 1));
          std::swap(W.weights(i, 0), W.weights(i, 1));
        }
      }
      std::vector<Eigen::Affine3d> T = RandomRigids(9, 50 + k);
      if (stretch) T[4].scale(Eigen::Vector3d(1.5, 0.7, 1.2));
      const RowMatrixX3d V = RoundToFloat(r.V), N = RoundToFloat(r.N);
      RowMatrixX3d U, NU, NUf;
      Dqs(V, W, T, &U, &N, &NU);
      DqsTransformsFloat prepared = PrepareDqsFloat(T);
      for (int l = 0; l < 8; ++l) prepared.q8[8 * 3 + l] = -prepared.q8[8 * 3 + l];  // same motion
      const RowMatrixX3d Uf = DqsF(V, W, prepared, &N, &NUf);
      for (int i = 0; i < W.rows(); ++i) {
        ASSERT_LT((Uf.row(i) - U.row(i)).norm(), 1e-5)
            << "k " << k << " stretch " << stretch << " vertex " << i << " block kind " << (i / 8) % 4;
        ASSERT_LT((NUf.row(i) - NU.row(i)).norm(), 1e-5)
            << "k " << k << " stretch " << stretch << " vertex " << i << " block kind " << (i / 8) % 4;
      }
      EXPECT_EQ(DqsF(V, W, prepared), Uf) << "positions only must not change positions";
    }
  }
}

// Weights as a file gives them: each vertex uses one of 10 joint sets of 12 joints (some with
// unused slots), in a shuffled slot order, and the vertices come in random order, so few blocks of
// 8 share their joints. PrepareDqsLaneOrder sorts them by joint set; posing through the order must
// match the double path in the mesh's own order, and every row must keep its vertex's influences.
TEST(DqsTest, LaneOrderGroupsVerticesByJointSetAndMatchesDoublePath) {
  for (int k : {4, 8}) {
    const int n = 1003, joints = 12;
    auto r = RandomRig(n, joints, k, 60 + k);
    std::mt19937 gen(70 + k);
    std::uniform_real_distribution<float> u(0.05f, 1.f);
    std::vector<std::vector<int>> sets(10);
    for (int s = 0; s < 10; ++s) {
      std::vector<int> all(joints);
      for (int j = 0; j < joints; ++j) all[j] = j;
      std::shuffle(all.begin(), all.end(), gen);
      sets[s].assign(all.begin(), all.begin() + (s % 3 == 2 ? k - 2 : k));  // every third: 2 unused
    }
    SparseWeights W = r.W;
    for (int i = 0; i < n; ++i) {
      const std::vector<int>& set = sets[gen() % 10];
      std::vector<int> slots(k);
      for (int c = 0; c < k; ++c) slots[c] = c;
      std::shuffle(slots.begin(), slots.end(), gen);
      float sum = 0.f;
      for (int c = 0; c < k; ++c) {
        const bool used = c < static_cast<int>(set.size());
        W.joints(i, slots[c]) = used ? set[c] : set[0];
        W.weights(i, slots[c]) = used ? u(gen) : 0.f;
        sum += W.weights(i, slots[c]);
      }
      W.weights.row(i) /= sum;
    }
    const DqsLaneOrder lanes = PrepareDqsLaneOrder(W);
    ASSERT_FALSE(lanes.empty()) << "k " << k;
    ASSERT_EQ(lanes.k, k);
    ASSERT_EQ(static_cast<int>(lanes.order.size()), n);
    std::vector<int> seen(n, 0);
    for (int row = 0; row < n; ++row) {
      const int i = lanes.order[row];
      ASSERT_TRUE(i >= 0 && i < n && seen[i]++ == 0) << "not a permutation at row " << row;
      std::vector<std::pair<int, float>> mine, theirs;
      for (int c = 0; c < k; ++c) {
        if (W.weights(i, c) != 0.f) mine.emplace_back(W.joints(i, c), W.weights(i, c));
        if (lanes.weights[k * row + c] != 0.f) theirs.emplace_back(lanes.joints[k * row + c], lanes.weights[k * row + c]);
      }
      std::sort(mine.begin(), mine.end());
      EXPECT_TRUE(std::is_sorted(theirs.begin(), theirs.end())) << "row " << row << ": used slots by joint";
      EXPECT_EQ(mine, theirs) << "row " << row;
      for (int c = static_cast<int>(theirs.size()); c < k; ++c)
        EXPECT_EQ(lanes.weights[k * row + c], 0.f) << "row " << row << ": unused slots last";
    }
    for (bool stretch : {false, true}) {
      std::vector<Eigen::Affine3d> T = RandomRigids(joints, 80 + k);
      if (stretch) T[sets[0][0]].scale(Eigen::Vector3d(1.4, 0.75, 1.1));
      const RowMatrixX3d V = RoundToFloat(r.V), N = RoundToFloat(r.N);
      RowMatrixX3d U, NU;
      Dqs(V, W, T, &U, &N, &NU);
      const DqsTransformsFloat prepared = PrepareDqsFloat(T);
      const std::vector<float> Vf = Floats(V), Nf = Floats(N);
      std::vector<float> Uf(Vf.size()), NUf(Vf.size()), Uonly(Vf.size());
      DqsFloat(Vf.data(), lanes, prepared, Uf.data(), Nf.data(), NUf.data());
      DqsFloat(Vf.data(), lanes, prepared, Uonly.data());
      const RowMatrixX3d Ul = FromFloats(Uf), NUl = FromFloats(NUf);
      for (int i = 0; i < n; ++i) {
        ASSERT_LT((Ul.row(i) - U.row(i)).norm(), 1e-5) << "k " << k << " stretch " << stretch << " vertex " << i;
        ASSERT_LT((NUl.row(i) - NU.row(i)).norm(), 1e-5) << "k " << k << " stretch " << stretch << " vertex " << i;
      }
      EXPECT_EQ(Uonly, Uf) << "positions only must not change positions";
    }
    // Weights already in the order: nothing to gain, so no order; nor for k = 3 or tiny meshes.
    SparseWeights sorted = W;
    for (int row = 0; row < n; ++row)
      for (int c = 0; c < k; ++c) {
        sorted.joints(row, c) = lanes.joints[k * row + c];
        sorted.weights(row, c) = lanes.weights[k * row + c];
      }
    EXPECT_TRUE(PrepareDqsLaneOrder(sorted).empty()) << "k " << k;
  }
  EXPECT_TRUE(PrepareDqsLaneOrder(RandomRig(1000, 8, 3, 5).W).empty());
  EXPECT_TRUE(PrepareDqsLaneOrder(RandomRig(40, 8, 4, 5).W).empty());
  // Joint indices pack 16 bits each into a row's key: a rig with 65,535 joints or more gets none.
  SparseWeights many = RandomRig(1000, 8, 4, 5).W;
  ASSERT_FALSE(PrepareDqsLaneOrder(many).empty());
  many.joints(500, 0) = 70000;
  many.weights(500, 0) = std::max(many.weights(500, 0), 0.1f);
  EXPECT_TRUE(PrepareDqsLaneOrder(many).empty());
}

// LazyDqsLaneOrder: threads asking at once get one order, prepared once (its bytes reported to
// exactly one of them), equal to PrepareDqsLaneOrder's.
TEST(DqsTest, LazyLaneOrderIsPreparedOnceForConcurrentCallers) {
  const SparseWeights W = *testing::MakeInterleavedJointSetsTube().sparse_weights;
  const DqsLaneOrder direct = PrepareDqsLaneOrder(W);
  ASSERT_FALSE(direct.empty());
  const LazyDqsLaneOrder lazy;
  constexpr int kThreads = 8;
  std::vector<const DqsLaneOrder*> got(kThreads);
  std::vector<size_t> bytes(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back([&, t] { got[t] = &lazy.Get(W, &bytes[t]); });
  for (std::thread& t : threads) t.join();
  size_t counted = 0;
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(got[t], got[0]);
    counted += bytes[t];
  }
  EXPECT_EQ(counted, direct.bytes());
  EXPECT_EQ(got[0]->order, direct.order);
  EXPECT_EQ(got[0]->joints, direct.joints);
  EXPECT_EQ(got[0]->weights, direct.weights);
  size_t again = 1;
  EXPECT_EQ(&lazy.Get(W, &again), got[0]);
  EXPECT_EQ(again, 0u);
}

TEST(DqsTest, NormalsStayUnitAndMatchRigidRotation) {
  const auto r = RandomRig(500, 6, 4, 9);
  const std::vector<Eigen::Affine3d> one = RandomRigids(1, 10);
  const std::vector<Eigen::Affine3d> same(6, one[0]);
  RowMatrixX3d U, NU, NUf;
  Dqs(r.V, r.W, same, &U, &r.N, &NU);
  const RowMatrixX3d expected = r.N * one[0].linear().transpose();
  EXPECT_LT((NU - expected).cwiseAbs().maxCoeff(), 1e-12);
  DqsF(r.V, r.W, PrepareDqsFloat(same), &r.N, &NUf);
  EXPECT_LT((NUf - expected).cwiseAbs().maxCoeff(), 1e-5);

  const std::vector<Eigen::Affine3d> T = RandomRigids(6, 11);
  Dqs(r.V, r.W, T, &U, &r.N, &NU);
  EXPECT_LT((NU.rowwise().norm().array() - 1.0).abs().maxCoeff(), 1e-12);
  DqsF(r.V, r.W, PrepareDqsFloat(T), &r.N, &NUf);
  EXPECT_LT((NUf.rowwise().norm().array() - 1.0).abs().maxCoeff(), 1e-5);
}

// Two joints rotating about z by ±angle, vertex (0, 1, 0) weighted w / 1 - w.
SparseWeights TwoJointWeights(const std::vector<double>& w0) {
  SparseWeights W;
  const int n = static_cast<int>(w0.size());
  W.joints = RowMatrixXi(n, 4);
  W.weights = RowMatrixXf::Zero(n, 4);
  for (int i = 0; i < n; ++i) {
    W.joints.row(i) << 0, 1, 0, 0;
    W.weights(i, 0) = static_cast<float>(w0[i]);
    W.weights(i, 1) = 1.f - W.weights(i, 0);
  }
  return W;
}

TEST(DqsTest, DqsHandlesAntipodalQuaternions) {
  // (1) The same transforms given through q_j and -q_j skin identically (float path, where the
  // prepared quaternions are inputs).
  const auto r = RandomRig(300, 6, 4, 12);
  const std::vector<Eigen::Affine3d> T = RandomRigids(6, 13);
  const DqsTransformsFloat prepared = PrepareDqsFloat(T);
  const RowMatrixX3d U = DqsF(r.V, r.W, prepared);
  for (int j : {0, 3}) {
    DqsTransformsFloat flipped = prepared;
    for (int l = 0; l < 8; ++l) flipped.q8[8 * j + l] = -flipped.q8[8 * j + l];
    EXPECT_EQ(DqsF(r.V, r.W, flipped), U) << "joint " << j << " given as -q";
  }
  // ... and likewise for the double path with the prepared transforms.
  DqsTransforms pd = PrepareDqs(T);
  RowMatrixX3d Ud, Ud2;
  Dqs(r.V, r.W, pd, &Ud);
  pd.real[2].coeffs() *= -1;
  pd.dual[2].coeffs() *= -1;
  Dqs(r.V, r.W, pd, &Ud2);
  EXPECT_LT((Ud - Ud2).cwiseAbs().maxCoeff(), 1e-15);

  // (2) Joints at +a and -a about z (a = 170°, 100°): the short arc between them passes through
  // 180°, not 0°. Closed form: with q_0 = (sin(a/2) z, cos(a/2)) and q_1 taken to the same
  // hemisphere, b = (sin(a/2) z, (2w - 1) cos(a/2)) and the blended angle is
  // 2 atan2(sin(a/2), (2w - 1) cos(a/2)) ∈ [a, 360° - a].
  std::vector<double> w0;
  for (int s = 0; s <= 20; ++s) w0.push_back(s / 20.0);
  const SparseWeights W = TwoJointWeights(w0);
  const RowMatrixX3d V = RowMatrixX3d::Zero(w0.size(), 3).rowwise() + Eigen::RowVector3d(0, 1, 0);
  for (double deg : {170.0, 100.0}) {
    const double a = deg * kPi / 180;
    std::vector<Eigen::Affine3d> Tz(2, Eigen::Affine3d::Identity());
    Tz[0].rotate(Eigen::AngleAxisd(a, Eigen::Vector3d::UnitZ()));
    Tz[1].rotate(Eigen::AngleAxisd(-a, Eigen::Vector3d::UnitZ()));
    RowMatrixX3d Uz;
    Dqs(V, W, Tz, &Uz);
    const RowMatrixX3d Uzf = DqsF(V, W, PrepareDqsFloat(Tz));
    for (size_t i = 0; i < w0.size(); ++i) {
      // w0[i] goes to joint 0 (+a), which is the pivot for w0 > 0.5; equal weights tie.
      const double angle = 2 * std::atan2(std::sin(a / 2), (2 * w0[i] - 1) * std::cos(a / 2));
      const Eigen::Vector3d expected(-std::sin(angle), std::cos(angle), 0);
      EXPECT_LT((Uz.row(i).transpose() - expected).norm(), 1e-6) << deg << "° w0 " << w0[i];
      EXPECT_LT((Uzf.row(i).transpose() - expected).norm(), 1e-5) << deg << "° w0 " << w0[i];
      // Never through the identity: y stays at most cos(a).
      EXPECT_LE(Uz(i, 1), std::cos(a) + 1e-9);
    }
    EXPECT_LT((Uz.row(10) - Eigen::RowVector3d(0, -1, 0)).norm(), 1e-9) << "half way = 180°";
  }
}

// ---- candy wrapper: a twisted cylinder ---------------------------------------------------------

constexpr int kRingPoints = 64;

// Rings of radius 1 about the x axis at x = -0.5, -0.375, ..., 1.5 (ring 8 at x = 0.5). Joint 0
// at x = 0, joint 1 at x = 1; w1 = clamp(x, 0, 1) blends linearly over the middle.
void Cylinder(RowMatrixX3d* V, SparseWeights* W, int* middle_ring) {
  const int rings = 17;
  V->resize(rings * kRingPoints, 3);
  W->joints = RowMatrixXi(rings * kRingPoints, 2);
  W->weights = RowMatrixXf(rings * kRingPoints, 2);
  for (int r = 0; r < rings; ++r) {
    const double x = -0.5 + 0.125 * r;
    const float w1 = static_cast<float>(std::clamp(x, 0.0, 1.0));
    for (int p = 0; p < kRingPoints; ++p) {
      const int i = r * kRingPoints + p;
      const double t = 2 * kPi * p / kRingPoints;
      V->row(i) << x, std::cos(t), std::sin(t);
      W->joints.row(i) << 0, 1;
      W->weights.row(i) << 1.f - w1, w1;
    }
  }
  *middle_ring = 8;
}

// Shoelace area of ring `ring` projected to the yz plane.
double RingArea(const RowMatrixX3d& U, int ring) {
  double a = 0;
  for (int p = 0; p < kRingPoints; ++p) {
    const int i = ring * kRingPoints + p, j = ring * kRingPoints + (p + 1) % kRingPoints;
    a += U(i, 1) * U(j, 2) - U(j, 1) * U(i, 2);
  }
  return std::abs(a) / 2;
}

std::vector<Eigen::Affine3d> TwistJoint1(double angle) {
  std::vector<Eigen::Affine3d> T(2, Eigen::Affine3d::Identity());
  T[1].rotate(Eigen::AngleAxisd(angle, Eigen::Vector3d::UnitX()));
  return T;
}

TEST(DqsTest, LbsCollapsesUnderTwist) {
  RowMatrixX3d V, U;
  SparseWeights W;
  int mid;
  Cylinder(&V, &W, &mid);
  Lbs(V, W, TwistJoint1(kPi), &U);
  const double rest = RingArea(V, mid);
  // ½ (I + R_x(π)) projects onto the x axis: the candy-wrapper artifact.
  EXPECT_LT(RingArea(U, mid), 0.05 * rest);
}

TEST(DqsTest, DqsPreservesLengthUnderTwist) {
  RowMatrixX3d V, U;
  SparseWeights W;
  int mid;
  Cylinder(&V, &W, &mid);
  const std::vector<Eigen::Affine3d> T = TwistJoint1(kPi);
  Dqs(V, W, T, &U);
  const RowMatrixX3d Uf = DqsF(V, W, PrepareDqsFloat(T));
  const double rest = RingArea(V, mid);
  EXPECT_NEAR(RingArea(U, mid), rest, 0.05 * rest);
  EXPECT_NEAR(RingArea(Uf, mid), rest, 0.05 * rest);
  // Stronger: every vertex keeps its distance to the axis and its position along it.
  for (int i = 0; i < V.rows(); ++i) {
    EXPECT_NEAR(U.row(i).tail<2>().norm(), 1.0, 1e-9) << "vertex " << i;
    EXPECT_NEAR(U(i, 0), V(i, 0), 1e-9) << "vertex " << i;
  }
}

TEST(DqsTest, DqsScaleFallback) {
  const auto r = RandomRig(200, 5, 4, 14);
  // Uniform scale 2 on every joint: the stretch phase gives 2v, the rigid phase the identity.
  std::vector<Eigen::Affine3d> T(5, Eigen::Affine3d::Identity());
  for (auto& A : T) A.scale(2.0);
  const DqsTransforms D = PrepareDqs(T);
  EXPECT_TRUE(D.any_stretch);
  RowMatrixX3d U;
  Dqs(r.V, r.W, T, &U);
  EXPECT_LT((U - 2 * r.V).cwiseAbs().maxCoeff(), 1e-9);
  EXPECT_LT((DqsF(r.V, r.W, PrepareDqsFloat(T)) - 2 * r.V).cwiseAbs().maxCoeff(), 1e-5);

  // Non-uniform scale and shear on one joint, weight 1 on it: exactly T v (A = R S recombined).
  std::vector<Eigen::Affine3d> T2 = RandomRigids(5, 15);
  T2[2].linear() =
      T2[2].linear() * (Eigen::Matrix3d() << 1.5, 0.2, 0, 0.2, 0.6, 0.1, 0, 0.1, 2.0).finished();
  auto one = r;
  for (int i = 0; i < one.W.rows(); ++i) {
    one.W.weights.row(i) << 0.f, 1.f, 0.f, 0.f;
    one.W.joints.row(i) << 0, 2, 1, 3;
  }
  RowMatrixX3d NU;
  Dqs(one.V, one.W, T2, &U, &one.N, &NU);
  const RowMatrixX3d Uf = DqsF(one.V, one.W, PrepareDqsFloat(T2));
  const Eigen::Matrix3d inv_t = T2[2].linear().inverse().transpose();
  for (int i = 0; i < one.V.rows(); ++i) {
    const Eigen::Vector3d expected = T2[2] * Eigen::Vector3d(one.V.row(i).transpose());
    EXPECT_LT((U.row(i).transpose() - expected).norm(), 1e-9) << "vertex " << i;
    EXPECT_LT((Uf.row(i).transpose() - expected).norm(), 1e-5) << "vertex " << i;
    const Eigen::Vector3d n = (inv_t * one.N.row(i).transpose()).normalized();
    EXPECT_LT((NU.row(i).transpose() - n).norm(), 1e-9) << "vertex " << i;
  }

  // A mirror (det < 0) keeps a proper rotation and leaves the reflection in S: still T v.
  T2[2] = Eigen::Translation3d(0.5, -1, 2) * Eigen::Scaling(-1.0, 1.0, 1.0);
  Dqs(one.V, one.W, T2, &U);
  for (int i = 0; i < one.V.rows(); ++i) {
    const Eigen::Vector3d expected = T2[2] * Eigen::Vector3d(one.V.row(i).transpose());
    EXPECT_LT((U.row(i).transpose() - expected).norm(), 1e-9) << "vertex " << i;
  }
}

TEST(DqsTest, PrepareDqsSplitsRigidPartAndStretch) {
  std::vector<Eigen::Affine3d> T = RandomRigids(4, 16);
  DqsTransforms D = PrepareDqs(T);
  EXPECT_FALSE(D.any_stretch);
  for (int j = 0; j < 4; ++j) {
    EXPECT_TRUE(D.stretch[j].isIdentity(0));
    EXPECT_LT((D.real[j].toRotationMatrix() - T[j].linear()).cwiseAbs().maxCoeff(), 1e-12);
    // t = 2 vec(dual · conj(real)) for a unit dual quaternion.
    const Eigen::Vector3d t = 2 * (D.dual[j] * D.real[j].conjugate()).vec();
    EXPECT_LT((t - T[j].translation()).norm(), 1e-12);
  }
  const Eigen::Matrix3d S = (Eigen::Matrix3d() << 1.2, 0.1, 0, 0.1, 0.9, 0, 0, 0, 1).finished();
  const Eigen::Matrix3d R = T[1].linear();
  T[1].linear() = R * S;
  D = PrepareDqs(T);
  EXPECT_TRUE(D.any_stretch);
  EXPECT_LT((D.stretch[1] - S).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((D.real[1].toRotationMatrix() - R).cwiseAbs().maxCoeff(), 1e-12);
}

// ---- the libigl arm --------------------------------------------------------------------------
//
// Minimal ASCII readers, local on purpose (the project's own readers are written elsewhere).

TEST(DqsTest, ConvexHullAreaOfSquareWithInteriorPoints) {
  std::vector<Eigen::Vector2d> p{{0, 0}, {2, 0}, {2, 2}, {0, 2}, {1, 1}, {0.5, 1.5}, {1, 0}};
  EXPECT_DOUBLE_EQ(::skinning::testing::ConvexHullArea(p), 4.0);
}

TEST(DqsTest, ArmTwistLbsCollapsesDqsKeepsCrossSection) {
  const std::string dir = ::skinning::testing::DataPath("libigl/arm/");
  SKINNING_REQUIRE_DATA(dir + "arm.obj");
  SKINNING_REQUIRE_DATA(dir + "arm.tgf");
  SKINNING_REQUIRE_DATA(dir + "arm-weights.dmat");
  auto mesh = ReadObj(dir + "arm.obj");
  auto graph = ReadTgf(dir + "arm.tgf");
  auto dmat = ReadDmat(dir + "arm-weights.dmat");
  ASSERT_TRUE(mesh.ok() && graph.ok() && dmat.ok());
  const RowMatrixX3d V = mesh->V, C = graph->C;
  std::vector<std::pair<int, int>> BE;
  for (int b = 0; b < graph->E.rows(); ++b) BE.emplace_back(graph->E(b, 0), graph->E(b, 1));
  Eigen::MatrixXd W = *dmat;
  ASSERT_EQ(W.rows(), V.rows());
  ASSERT_EQ(W.cols(), static_cast<int>(BE.size()));
  ASSERT_GE(BE.size(), 3u);
  ASSERT_LT((W.rowwise().sum().array() - 1.0).abs().maxCoeff(), 1e-3);
  NormalizeRows(&W);

  // Bone 2 and the bones below it turn by π about bone 2's own axis (through its start joint).
  constexpr int kBone = 2;
  const Eigen::Vector3d cs = C.row(BE[kBone].first).transpose();
  const Eigen::Vector3d cd = C.row(BE[kBone].second).transpose();
  const Eigen::Vector3d axis = (cd - cs).normalized();
  const Eigen::Affine3d twist =
      Eigen::Translation3d(cs) * Eigen::AngleAxisd(kPi, axis) * Eigen::Translation3d(-cs);
  std::vector<bool> moved(BE.size(), false);
  moved[kBone] = true;
  for (bool grew = true; grew;) {  // descendants: bones starting where a moved bone ends
    grew = false;
    for (size_t b = 0; b < BE.size(); ++b)
      for (size_t m = 0; m < BE.size(); ++m)
        if (moved[m] && !moved[b] && BE[b].first == BE[m].second) moved[b] = grew = true;
  }
  std::vector<Eigen::Affine3d> T(BE.size(), Eigen::Affine3d::Identity());
  for (size_t b = 0; b < BE.size(); ++b)
    if (moved[b]) T[b] = twist;

  // The cross-section where bones 1 and 2 weigh the same: the mean axial coordinate of the
  // vertices with |w1 - w2| small, then a thin slab around it.
  auto axial = [&](int i) { return (V.row(i).transpose() - cs).dot(axis); };
  double s_sum = 0;
  int s_count = 0;
  for (int i = 0; i < V.rows(); ++i) {
    if (W(i, 1) + W(i, 2) > 0.9 && std::abs(W(i, 1) - W(i, 2)) < 0.05) {
      s_sum += axial(i);
      ++s_count;
    }
  }
  ASSERT_GT(s_count, 0) << "no vertex where bones 1 and 2 weigh the same";
  const double s0 = s_sum / s_count;
  const double length = (cd - cs).norm();
  std::vector<int> slab;
  for (double h = 0.005 * length; slab.size() < 24 && h < 0.05 * length; h *= 1.5) {
    slab.clear();
    for (int i = 0; i < V.rows(); ++i)
      if (std::abs(axial(i) - s0) < h) slab.push_back(i);
  }
  ASSERT_GE(slab.size(), 8u);

  RowMatrixX3d Ul, Ud;
  Lbs(V, W, T, &Ul);
  Dqs(V, W, T, &Ud);
  const Eigen::Vector3d e1 = axis.unitOrthogonal(), e2 = axis.cross(e1);
  auto section = [&](const RowMatrixX3d& P) {
    std::vector<Eigen::Vector2d> q;
    for (int i : slab) {
      const Eigen::Vector3d d = P.row(i).transpose() - cs;
      q.emplace_back(d.dot(e1), d.dot(e2));
    }
    return ::skinning::testing::ConvexHullArea(q);
  };
  const double rest = section(V), lbs = section(Ul), dqs = section(Ud);
  ASSERT_GT(rest, 0);
  std::cout << "[ arm      ] cross-section at axial offset " << s0 << " (" << slab.size()
            << " vertices): rest area " << rest << ", LBS/rest " << lbs / rest << ", DQS/rest "
            << dqs / rest << std::endl;
  RecordProperty("lbs_area_ratio", std::to_string(lbs / rest));
  RecordProperty("dqs_area_ratio", std::to_string(dqs / rest));
  EXPECT_LT(lbs / rest, 0.25) << "LBS should collapse the twisted forearm (candy wrapper)";
  EXPECT_GE(dqs / rest, 0.8) << "DQS should keep the cross-section";
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
