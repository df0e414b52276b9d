// The names of stored animation clips (AnimationStore::Get, Client::GetAnimations), for tests
// that compare them with what they stored.
#ifndef SKINNING_TESTS_SUPPORT_CLIP_NAMES_H_
#define SKINNING_TESTS_SUPPORT_CLIP_NAMES_H_

#include <string>
#include <vector>

#include <gtest/gtest.h>

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

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_CLIP_NAMES_H_
