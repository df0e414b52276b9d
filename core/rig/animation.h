// Keyframed joint animations (as glTF 2.0 stores them) and their sampling into local transforms.
#ifndef SKINNING_CORE_RIG_ANIMATION_H_
#define SKINNING_CORE_RIG_ANIMATION_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/rig/skeleton.h"
#include "core/rig/transform.h"

namespace skinning {

enum class AnimationPath { kTranslation, kRotation, kScale };
enum class Interpolation { kStep, kLinear, kCubicSpline };

struct AnimationChannel {
  int joint = -1;  // skeleton joint index
  AnimationPath path = AnimationPath::kRotation;
  Interpolation interpolation = Interpolation::kLinear;
  std::vector<double> times;  // #keys input times in seconds, strictly increasing
  // Output values, 3 per key for translation/scale, 4 (x, y, z, w) for rotation. For
  // kCubicSpline each key holds in-tangent, value, out-tangent (3× as many numbers).
  std::vector<double> values;
};

// Keys of morph target weights (a glTF "weights" channel on a mesh node): `count` weights per
// key, for the rig's morph targets first_target .. first_target + count − 1.
struct MorphWeightChannel {
  int first_target = 0;
  int count = 0;
  Interpolation interpolation = Interpolation::kLinear;
  std::vector<double> times;   // strictly increasing
  std::vector<double> values;  // count per key (3 × count for kCubicSpline: in, value, out)
};

struct Animation {
  std::string name;
  double start = 0.0;  // smallest key time over all channels
  double end = 0.0;    // largest key time over all channels
  std::vector<AnimationChannel> channels;
  std::vector<MorphWeightChannel> morph_channels;
};

// The morph weights at time t: `defaults` (one per morph target of the rig) with the animated
// ones replaced, sampled as SampleAnimation samples translations (STEP, LINEAR, CUBICSPLINE;
// the first or last key outside the range).
std::vector<double> SampleMorphWeights(const Animation& animation, double t,
                                       std::vector<double> defaults);

// Local transforms of every joint at time t (seconds): each joint's rest transform, with the
// animated properties replaced by the sampled channels. Outside a channel's key range the first
// or last value holds. STEP holds the previous key; LINEAR lerps translation and scale and
// slerps rotation along the shorter arc; CUBICSPLINE is the glTF Hermite spline (tangents
// scaled by the key interval), with the rotation normalized.
std::vector<Transform> SampleAnimation(const Skeleton& skeleton, const Animation& animation,
                                       double t);

// INVALID_ARGUMENT naming `where` and the offending index unless the channel's joint is in
// [0, num_joints), its times are finite and strictly increasing (at least one), and its values
// are finite and as many as its times, path and interpolation need.
absl::Status ValidateAnimationChannel(const AnimationChannel& channel, int num_joints,
                                      const std::string& where);

// The same of a morph weights channel: its targets in [0, num_targets), at least one, and `count`
// values a key (3 × count for CUBICSPLINE).
absl::Status ValidateMorphWeightChannel(const MorphWeightChannel& channel, int num_targets,
                                        const std::string& where);

}  // namespace skinning

#endif  // SKINNING_CORE_RIG_ANIMATION_H_
