// FAST handle constraints the tests build.
#ifndef SKINNING_TESTS_SUPPORT_FAST_CONSTRAINTS_H_
#define SKINNING_TESTS_SUPPORT_FAST_CONSTRAINTS_H_

#include "skinning/v1/fast.pb.h"

namespace skinning::testing {

// Joint `joint` held at its bind transform: KIND_TRANSFORM to the identity (a 3 by 4 row-major
// target).
inline v1::HandleConstraint FixedJoint(int joint) {
  v1::HandleConstraint c;
  c.set_joint(joint);
  c.set_kind(v1::HandleConstraint::KIND_TRANSFORM);
  for (float x : {1.f, 0.f, 0.f, 0.f, 0.f, 1.f, 0.f, 0.f, 0.f, 0.f, 1.f, 0.f}) c.add_target(x);
  return c;
}

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_FAST_CONSTRAINTS_H_
