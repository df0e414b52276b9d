// Animation clips as tests compare them: the names of stored clips (AnimationStore::Get,
// Client::GetAnimations), and how far one clip's frames are from another's.
#ifndef SKINNING_TESTS_SUPPORT_CLIPS_H_
#define SKINNING_TESTS_SUPPORT_CLIPS_H_

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <google/protobuf/repeated_field.h>

#include "absl/status/statusor.h"
#include "skinning/v1/rig_service.pb.h"

namespace skinning::testing {

// The clips' names in order; none (and a test failure) for an error.
inline std::vector<std::string> ClipNames(const absl::StatusOr<std::vector<v1::AnimationClip>>& clips) {
  EXPECT_TRUE(clips.ok()) << clips.status();
  std::vector<std::string> names;
  if (clips.ok())
    for (const v1::AnimationClip& c : *clips) names.push_back(c.name());
  return names;
}

// The largest absolute difference of two float fields' elements (vertices, transform components,
// weights); they must be as long (checked).
inline double LargestDifference(const google::protobuf::RepeatedField<float>& a,
                                const google::protobuf::RepeatedField<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double most = 0;
  for (int i = 0; i < std::min(a.size(), b.size()); ++i)
    most = std::max(most, std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
  return most;
}

// The largest difference between two clips' joint transform components and morph weights; they
// must have the same name, rate, start and frame count (checked).
inline double ClipDifference(const v1::AnimationClip& got, const v1::AnimationClip& want) {
  EXPECT_EQ(got.name(), want.name());
  EXPECT_EQ(got.frames_per_second(), want.frames_per_second());
  EXPECT_NEAR(got.start(), want.start(), 1e-6);
  EXPECT_EQ(got.poses_size(), want.poses_size());
  double most = 0;
  for (int f = 0; f < std::min(got.poses_size(), want.poses_size()); ++f) {
    const v1::Pose &g = got.poses(f), &w = want.poses(f);
    EXPECT_EQ(g.joints_size(), w.joints_size());
    for (int j = 0; j < std::min(g.joints_size(), w.joints_size()); ++j)
      most = std::max({most, LargestDifference(g.joints(j).translation(), w.joints(j).translation()),
                       LargestDifference(g.joints(j).rotation(), w.joints(j).rotation()),
                       LargestDifference(g.joints(j).scale(), w.joints(j).scale())});
    most = std::max(most, LargestDifference(g.morph_weights(), w.morph_weights()));
  }
  return most;
}

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_CLIPS_H_
