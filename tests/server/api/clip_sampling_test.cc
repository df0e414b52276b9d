// CreateRig's clips of a file's animations (SampleClips): bounded in size, and every frame one
// that PoseClip takes back.
#include "server/convert/gltf_import.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/rig/animation.h"
#include "core/rig/pose.h"
#include "core/rig/skeleton.h"
#include "server/convert/convert.h"
#include "tests/support/fixtures.h"

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

// Joint 1 of the two-bone tube scaled from 1 to 0 over `seconds` (a part hidden, as exporters
// animate it) and turned about z.
Animation Hide(double seconds) {
  Animation a;
  a.name = "hide";
  a.end = seconds;
  AnimationChannel scale;
  scale.joint = 1;
  scale.path = AnimationPath::kScale;
  scale.times = {0, seconds};
  scale.values = {1, 1, 1, 0, 0, 0};
  AnimationChannel turn;
  turn.joint = 1;
  turn.path = AnimationPath::kRotation;
  turn.times = {0, seconds};
  turn.values = {0, 0, 0, 1, 0, 0, std::sin(0.5), std::cos(0.5)};
  a.channels = {scale, turn};
  return a;
}

// A scale of 0 came back as a frame PoseClip refused ("every |scale| ≥ 1e-12"): the clips keep
// it as the smallest scale a pose takes, and every frame validates.
TEST(ClipSamplingTest, AZeroScaleKeyGivesFramesThatPoseClipTakes) {
  const Rig rig = testing::MakeTwoBoneTube();
  absl::StatusOr<std::vector<v1::AnimationClip>> clips = SampleClips({Hide(1.0)}, rig, 30, 10000, 0);
  ASSERT_TRUE(clips.ok()) << clips.status();
  ASSERT_EQ(clips->size(), 1u);
  const v1::AnimationClip& clip = clips->front();
  ASSERT_EQ(clip.poses_size(), 31);
  for (int f = 0; f < clip.poses_size(); ++f) {
    absl::StatusOr<Pose> pose = PoseFromProto(clip.poses(f), rig.skeleton);
    ASSERT_TRUE(pose.ok()) << "frame " << f << ": " << pose.status();
    EXPECT_TRUE(ValidatePose(rig.skeleton, *pose).ok()) << "frame " << f << ": " << ValidatePose(rig.skeleton, *pose);
  }
  const v1::Transform& last = clip.poses(30).joints(1);
  for (int c = 0; c < 3; ++c) {
    EXPECT_GE(last.scale(c), kMinPoseScale);
    EXPECT_LE(last.scale(c), 1e-11);
  }
  // Between the keys the scale is the animation's own.
  EXPECT_NEAR(clip.poses(15).joints(1).scale(0), 0.5, 1e-6);
}

// The clips are held to `max_bytes`: past it every animation's rate is lowered by one factor (the
// clip says its rate, and its frames are the animation at their times); when not even a frame of
// each fits, RESOURCE_EXHAUSTED.
TEST(ClipSamplingTest, ClipsPastTheByteBoundAreSampledAtALowerRate) {
  const Rig rig = testing::MakeTwoBoneTube();
  const std::vector<Animation> animations = {Hide(100.0), Hide(50.0)};
  absl::StatusOr<std::vector<v1::AnimationClip>> full = SampleClips(animations, rig, 30, 10000, 0);
  ASSERT_TRUE(full.ok()) << full.status();
  ASSERT_EQ((*full)[0].poses_size(), 3001);
  ASSERT_EQ((*full)[1].poses_size(), 1501);
  const size_t frame_bytes = (*full)[0].poses(0).ByteSizeLong();
  const size_t bound = 300 * frame_bytes;  // about a fifteenth of the frames
  absl::StatusOr<std::vector<v1::AnimationClip>> fit = SampleClips(animations, rig, 30, 10000, bound);
  ASSERT_TRUE(fit.ok()) << fit.status();
  size_t bytes = 0;
  for (const v1::AnimationClip& clip : *fit) bytes += clip.ByteSizeLong();
  EXPECT_LE(bytes, bound + bound / 10);  // the frames, and a few bytes of framing each
  EXPECT_GT(bytes, bound / 2);
  const double rate = (*fit)[0].frames_per_second();
  EXPECT_LT(rate, 3.0);
  EXPECT_FLOAT_EQ((*fit)[1].frames_per_second(), rate);  // one factor for all
  for (int a = 0; a < 2; ++a) {
    const v1::AnimationClip& clip = (*fit)[a];
    EXPECT_EQ(clip.poses_size(), static_cast<int>(std::floor(animations[a].end * rate + 1e-4)) + 1);
    const int f = clip.poses_size() / 2;
    const std::vector<Transform> want = SampleAnimation(rig.skeleton, animations[a], f / rate);
    EXPECT_NEAR(clip.poses(f).joints(1).scale(0), want[1].scale(0), 1e-4) << "animation " << a;
  }
  absl::StatusOr<std::vector<v1::AnimationClip>> none = SampleClips(animations, rig, 30, 10000, frame_bytes);
  ASSERT_EQ(none.status().code(), absl::StatusCode::kResourceExhausted) << none.status();
  EXPECT_NE(std::string(none.status().message()).find("--max_message_mb"), std::string::npos);
}

// ClipAnimations inverts SampleClips: its keyed animations, sampled again at the clip's rate, give
// the clip's frames back (within float rounding), and only the joint paths that move are keyed.
// A frame without joints keys the bind pose, which differs from the rest here (joint 1 turned
// after binding), and a frame of the wrong morph weight count is refused, naming it.
TEST(ClipAnimations, SampledAgainTheyGiveTheClipsBack) {
  Rig rig = testing::MakeTwoBoneTube();
  rig.skeleton.joints[1].rest.rotation = Eigen::Quaterniond(Eigen::AngleAxisd(0.3, Eigen::Vector3d::UnitY()));
  absl::StatusOr<std::vector<v1::AnimationClip>> clips = SampleClips({Hide(1.0)}, rig, 30, 10000, 0);
  ASSERT_TRUE(clips.ok()) << clips.status();
  (*clips)[0].mutable_poses(3)->clear_joints();
  absl::StatusOr<std::vector<Animation>> keyed = ClipAnimations(*clips, rig);
  ASSERT_TRUE(keyed.ok()) << keyed.status();
  ASSERT_EQ(keyed->size(), 1u);
  // Joint 1's rotation and scale move; its translation and joint 0 stay at rest in every frame,
  // the bind pose's included (joint 0's rest is its bind pose): they are not keyed.
  ASSERT_EQ((*keyed)[0].channels.size(), 2u);
  for (const AnimationChannel& ch : (*keyed)[0].channels) EXPECT_EQ(ch.joint, 1);
  EXPECT_EQ((*keyed)[0].channels[0].path, AnimationPath::kRotation);
  EXPECT_EQ((*keyed)[0].channels[1].path, AnimationPath::kScale);
  absl::StatusOr<std::vector<v1::AnimationClip>> again = SampleClips(*keyed, rig, 30, 10000, 0);
  ASSERT_TRUE(again.ok()) << again.status();
  const v1::AnimationClip &want = (*clips)[0], &got = (*again)[0];
  ASSERT_EQ(got.poses_size(), want.poses_size());
  const std::vector<Transform> bind = BindPoseLocals(rig.skeleton);
  double most = 0;
  for (int f = 0; f < want.poses_size(); ++f) {
    for (int j = 0; j < 2; ++j) {
      const Transform g = TransformFromProto(got.poses(f).joints(j));
      const Transform w = f == 3 ? bind[j] : TransformFromProto(want.poses(f).joints(j));
      most = std::max({most, (g.translation - w.translation).norm(), (g.scale - w.scale).norm(),
                       g.rotation.angularDistance(w.rotation)});
    }
  }
  EXPECT_LT(most, 1e-6);
  EXPECT_GT(bind[1].rotation.angularDistance(rig.skeleton.joints[1].rest.rotation), 0.29);
  (*clips)[0].mutable_poses(5)->add_morph_weights(1);
  absl::StatusOr<std::vector<Animation>> refused = ClipAnimations(*clips, rig);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("animations[0].poses[5].morph_weights"), std::string::npos)
      << refused.status();
}

// A clip written a frame at a time, its key times as floats (as every glTF file holds them), is
// read back with every frame: the last key at start + 58/30 s, rounded to a float, fell short of
// 58 frame intervals after the start's float for 419 of the 1,460 starts below, and sampling lost
// the last frame (a stored clip written by `skinctl get` and read again had 58 frames of 59).
TEST(FramesIn, ClipsWithFloatKeyTimesKeepTheirLastFrame) {
  int short_before = 0, starts = 0;
  for (double start = 0; start < 20; start += 0.0137, ++starts) {
    const float first = static_cast<float>(start), last = static_cast<float>(start + 58 / 30.0);
    const double length = static_cast<double>(last) - static_cast<double>(first);
    EXPECT_EQ(FramesIn(length, 30), 59) << "start " << start;
    if (static_cast<int>(std::floor(length * 30 + 1e-9)) + 1 != 59) ++short_before;
  }
  EXPECT_GT(short_before, starts / 10) << "the case this checks did not come up";
  // Exact lengths, and a frame interval short by more than the slack.
  EXPECT_EQ(FramesIn(2.0, 30), 61);
  EXPECT_EQ(FramesIn(0, 30), 1);
  EXPECT_EQ(FramesIn(2.0 - 0.01 / 30, 30), 60);
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
