#include "core/io/tgf.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/io/dmat.h"
#include "core/rig/pose.h"
#include "core/rig/skeleton.h"
#include "tests/support/data.h"
#include "tests/support/temp_files.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

using ::skinning::testing::DataPath;
using ::skinning::testing::TempPath;
using EdgeMatrix = Eigen::Matrix<int32_t, Eigen::Dynamic, 2, Eigen::RowMajor>;

bool HasSubstr(const absl::Status& s, const std::string& part) {
  return s.message().find(part) != absl::string_view::npos;
}

TgfGraph Graph(const RowMatrixX3d& C, std::vector<std::pair<int, int>> edges) {
  TgfGraph g;
  g.C = C;
  g.E.resize(static_cast<Eigen::Index>(edges.size()), 2);
  for (size_t e = 0; e < edges.size(); ++e) g.E.row(e) << edges[e].first, edges[e].second;
  return g;
}

TEST(TgfTest, HandHas21JointsAnd20Bones) {
  const std::string path = DataPath("libigl/hand/hand.tgf");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<TgfGraph> g = ReadTgf(path);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->C.rows(), 21);
  EXPECT_EQ(g->E.rows(), 20);
  EXPECT_TRUE(g->C.allFinite());
  EXPECT_EQ(g->E.row(0), Eigen::RowVector2i(5, 6));   // file line `6 7`
  EXPECT_EQ(g->E.row(10), Eigen::RowVector2i(0, 1));  // the palm bone `1 2`
  EXPECT_EQ(g->C.row(0), Eigen::RowVector3d(0.11429762, -0.76590296, -0.11140733));
}

TEST(TgfTest, ArmChainIgnoresAbsurdExtraColumns) {
  const std::string path = DataPath("libigl/arm/arm.tgf");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<TgfGraph> g = ReadTgf(path);  // joint 5 carries 2.7982368e+199 in column 5
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->C.rows(), 5);
  ASSERT_EQ(g->E.rows(), 4);
  EdgeMatrix expected(4, 2);
  expected << 0, 1, 1, 2, 2, 3, 3, 4;
  EXPECT_EQ(g->E, expected);
  EXPECT_EQ(g->C.row(4), Eigen::RowVector3d(0.73572894, -0.17523362, 0.090210152));
  EXPECT_LT(g->C.cwiseAbs().maxCoeff(), 10.0);
}

TEST(TgfTest, StopsAtALaterHashSectionAndIgnoresEdgeFlags) {
  absl::StatusOr<TgfGraph> g = ParseTgf(
      "1 0 0 0 9e+300 garbage\n2 0 1 0\n3 0 2 0\n#\n1 2 1 0 0\n\n2 3\n#\nnot an edge at all\n",
      "flags.tgf");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->C.rows(), 3);
  EdgeMatrix expected(2, 2);
  expected << 0, 1, 1, 2;
  EXPECT_EQ(g->E, expected);
}

TEST(TgfTest, RejectsEdgeIndexOutOfRangeNamingTheLine) {
  absl::StatusOr<TgfGraph> g = ParseTgf("1 0 0 0\n2 0 1 0\n#\n1 2\n2 3\n", "bad.tgf");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(g.status().message(), "bad.tgf:5: point index 3 is out of range (2 points, 1-based)");
}

TEST(TgfTest, RejectsNonNumericTokens) {
  EXPECT_EQ(ParseTgf("1 0 x 0\n", "a.tgf").status().message(), "a.tgf:1: 'x' is not a number");
  EXPECT_EQ(ParseTgf("1 0 0 0\n2 1 0 0\n#\n1 two\n", "b.tgf").status().message(),
            "b.tgf:4: 'two' is not a point index");
  EXPECT_EQ(ParseTgf("1 0 0\n", "c.tgf").status().message(),
            "c.tgf:1: a joint line needs 'index x y z'");
}

TEST(TgfTest, MissingFileIsNotFound) {
  EXPECT_EQ(ReadTgf("/nonexistent/none.tgf").status().code(), absl::StatusCode::kNotFound);
}

TEST(TgfTest, RoundTripIsExact) {
  const std::string path = DataPath("libigl/hand/hand.tgf");
  SKINNING_REQUIRE_DATA(path);
  absl::StatusOr<TgfGraph> g = ReadTgf(path);
  ASSERT_TRUE(g.ok()) << g.status();
  g->C(3, 1) = 1.0 / 3.0;  // a value that needs all 17 digits
  const std::string copy = TempPath(".tgf");
  ASSERT_TRUE(WriteTgf(copy, *g).ok());
  absl::StatusOr<TgfGraph> back = ReadTgf(copy);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->C, g->C);
  EXPECT_EQ(back->E, g->E);
  std::remove(copy.c_str());
}

// Reads a shared .tgf and builds its skeleton, which must be valid with `joints` joints.
void ReadBones(const std::string& path, int joints, TgfGraph* graph, Skeleton* skeleton) {
  absl::StatusOr<TgfGraph> g = ReadTgf(path);
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<Skeleton> s = SkeletonFromBones(*g);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->size(), joints);
  EXPECT_TRUE(ValidateSkeleton(*s).ok());
  *graph = *std::move(g);
  *skeleton = *std::move(s);
}

TEST(SkeletonFromBonesTest, ArmIsAChainWithOffsetsBetweenBoneHeads) {
  const std::string path = DataPath("libigl/arm/arm.tgf");
  SKINNING_REQUIRE_DATA(path);
  TgfGraph graph;
  Skeleton skeleton;
  ASSERT_NO_FATAL_FAILURE(ReadBones(path, 4, &graph, &skeleton));
  for (int j = 0; j < 4; ++j) {
    const Joint& joint = skeleton.joints[j];
    EXPECT_EQ(joint.name, "bone" + std::to_string(j));
    EXPECT_EQ(joint.parent, j - 1);
    const Eigen::Vector3d head = graph.C.row(j).transpose();
    const Eigen::Vector3d parent_head =
        j == 0 ? Eigen::Vector3d::Zero() : Eigen::Vector3d(graph.C.row(j - 1).transpose());
    EXPECT_EQ(joint.rest.translation, head - parent_head);
    EXPECT_TRUE(joint.rest.rotation.coeffs().isApprox(Eigen::Quaterniond::Identity().coeffs()));
    EXPECT_TRUE(joint.inverse_bind.isApprox(Eigen::Affine3d(Eigen::Translation3d(-head))));
  }
}

TEST(SkeletonFromBonesTest, HandParentIsTheBoneEndingAtTheHead) {
  const std::string path = DataPath("libigl/hand/hand.tgf");
  SKINNING_REQUIRE_DATA(path);
  TgfGraph graph;
  Skeleton skeleton;
  ASSERT_NO_FATAL_FAILURE(ReadBones(path, 20, &graph, &skeleton));
  int roots = 0;
  for (int j = 0; j < 20; ++j) {
    const int p = skeleton.joints[j].parent;
    if (p < 0) {
      ++roots;
      EXPECT_EQ(j, 10);  // the palm bone `1 2`
    } else {
      EXPECT_EQ(graph.E(p, 1), graph.E(j, 0)) << "bone " << j;
    }
  }
  EXPECT_EQ(roots, 1);
}

TEST(SkeletonFromBonesTest, RestPoseGivesIdentitySkinningTransforms) {
  const std::string path = DataPath("libigl/hand/hand.tgf");
  SKINNING_REQUIRE_DATA(path);
  TgfGraph graph;
  Skeleton skeleton;
  ASSERT_NO_FATAL_FAILURE(ReadBones(path, 20, &graph, &skeleton));
  absl::StatusOr<std::vector<int>> order = TopologicalOrder(skeleton);
  ASSERT_TRUE(order.ok());
  absl::StatusOr<std::vector<Eigen::Affine3d>> T = SkinningTransforms(skeleton, *order, RestPose(skeleton));
  ASSERT_TRUE(T.ok()) << T.status();
  for (const Eigen::Affine3d& A : *T)
    EXPECT_LT((A.matrix() - Eigen::Matrix4d::Identity()).cwiseAbs().maxCoeff(), 1e-15);
}

TEST(SkeletonFromBonesTest, RejectsMalformedGraphs) {
  RowMatrixX3d C(4, 3);
  C << 0, 0, 0, 0, 1, 0, 0, 2, 0, 0, 1, 0;  // point 3 coincides with point 1
  EXPECT_TRUE(SkeletonFromBones(Graph(C, {{0, 1}, {1, 2}})).ok());

  const absl::Status zero = SkeletonFromBones(Graph(C, {{0, 1}, {1, 3}})).status();
  EXPECT_EQ(zero.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(HasSubstr(zero, "bones[1]: zero length")) << zero;

  const absl::Status range = SkeletonFromBones(Graph(C, {{0, 1}, {1, 4}})).status();
  EXPECT_TRUE(HasSubstr(range, "bones[1]: child point 4 is out of range (4 points)")) << range;
  const absl::Status negative = SkeletonFromBones(Graph(C, {{-1, 1}})).status();
  EXPECT_TRUE(HasSubstr(negative, "bones[0]: parent point -1 is out of range")) << negative;

  const absl::Status two = SkeletonFromBones(Graph(C, {{0, 2}, {1, 2}})).status();
  EXPECT_TRUE(HasSubstr(two, "bones[1]: point 2 is already the child of bones[0]")) << two;

  const absl::Status cycle = SkeletonFromBones(Graph(C, {{0, 1}, {1, 2}, {2, 0}})).status();
  EXPECT_EQ(cycle.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(HasSubstr(cycle, "cycle")) << cycle;

  EXPECT_FALSE(SkeletonFromBones(Graph(C, {})).ok());
}

// libigl's forward_kinematics(C, BE, P, dQ, vQ, vT), written out independently from the TGF
// edges: bones are processed parents-first; for bone b with head r = C[E(b,0)] and parent p,
//   vQ[b] = vQ[p] * dQ[b],   vT[b] = vQ[p] * r + vT[p] - vQ[b] * r,
// and for a root vQ[b] = dQ[b], vT[b] = r - dQ[b] * r. A vertex x then moves to vQ·x + vT.
void LibiglForwardKinematics(const TgfGraph& g, const std::vector<Eigen::Quaterniond>& dQ,
                             std::vector<Eigen::Quaterniond>* vQ,
                             std::vector<Eigen::Vector3d>* vT) {
  const int nb = static_cast<int>(g.E.rows());
  std::vector<int> parent(nb, -1);
  for (int b = 0; b < nb; ++b)
    for (int c = 0; c < nb; ++c)
      if (g.E(c, 1) == g.E(b, 0)) parent[b] = c;
  vQ->assign(nb, Eigen::Quaterniond::Identity());
  vT->assign(nb, Eigen::Vector3d::Zero());
  std::vector<bool> done(nb, false);
  std::function<void(int)> compute = [&](int b) {
    if (done[b]) return;
    const Eigen::Vector3d r = g.C.row(g.E(b, 0)).transpose();
    const int p = parent[b];
    if (p < 0) {
      (*vQ)[b] = dQ[b];
      (*vT)[b] = r - dQ[b] * r;
    } else {
      compute(p);
      (*vQ)[b] = (*vQ)[p] * dQ[b];
      (*vT)[b] = (*vQ)[p] * r + (*vT)[p] - (*vQ)[b] * r;
    }
    done[b] = true;
  };
  for (int b = 0; b < nb; ++b) compute(b);
}

TEST(SkeletonFromBonesTest, ForwardKinematicsMatchesLibiglConvention) {
  const std::string tgf = DataPath("libigl/hand/hand.tgf");
  const std::string pose_path = DataPath("libigl/hand/hand-pose.dmat");
  SKINNING_REQUIRE_DATA(tgf);
  SKINNING_REQUIRE_DATA(pose_path);
  absl::StatusOr<TgfGraph> g = ReadTgf(tgf);
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<Eigen::MatrixXd> P = ReadDmat(pose_path);
  ASSERT_TRUE(P.ok()) << P.status();
  // Header `1 80`: one column of 80 rows (what the data README calls "1 x 80").
  ASSERT_EQ(P->rows(), 80);
  ASSERT_EQ(P->cols(), 1);
  const int nb = static_cast<int>(g->E.rows());
  ASSERT_EQ(nb, 20);

  // libigl column_to_quats: x, y, z, w per bone. The file's quaternions are unit to 2e-13;
  // both computations below use the same normalized ones.
  std::vector<Eigen::Quaterniond> dQ;
  for (int b = 0; b < nb; ++b) {
    Eigen::Quaterniond q((*P)(4 * b + 3), (*P)(4 * b), (*P)(4 * b + 1), (*P)(4 * b + 2));
    EXPECT_NEAR(q.norm(), 1.0, 1e-12);
    dQ.push_back(q.normalized());
  }

  absl::StatusOr<Skeleton> s = SkeletonFromBones(*g);
  ASSERT_TRUE(s.ok()) << s.status();
  absl::StatusOr<std::vector<int>> order = TopologicalOrder(*s);
  ASSERT_TRUE(order.ok()) << order.status();
  Pose pose = RestPose(*s);
  for (int b = 0; b < nb; ++b) pose.local[b].rotation = dQ[b];
  absl::StatusOr<std::vector<Eigen::Affine3d>> T = SkinningTransforms(*s, *order, pose);
  ASSERT_TRUE(T.ok()) << T.status();

  std::vector<Eigen::Quaterniond> vQ;
  std::vector<Eigen::Vector3d> vT;
  LibiglForwardKinematics(*g, dQ, &vQ, &vT);
  double worst = 0;
  for (int b = 0; b < nb; ++b) {
    const Eigen::Matrix3d R = vQ[b].toRotationMatrix();
    const double dr = ((*T)[b].linear() - R).cwiseAbs().maxCoeff();
    const double dt = ((*T)[b].translation() - vT[b]).cwiseAbs().maxCoeff();
    EXPECT_LT(dr, 1e-12) << "bone " << b;
    EXPECT_LT(dt, 1e-12) << "bone " << b;
    worst = std::max({worst, dr, dt});
  }
  // The pose is not the identity: some bone really moved.
  double moved = 0;
  for (int b = 0; b < nb; ++b) moved = std::max(moved, vT[b].norm());
  EXPECT_GT(moved, 0.01);
  RecordProperty("max_abs_difference", absl::StrCat(worst));
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
