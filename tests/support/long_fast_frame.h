// A FAST model whose first frame is long: CesiumMan with the most extra weights (256), baked
// through the real server, and a frame whose new constraint set and 1,000 iterations take about
// a second there. The shutdown and front-door tests use it as the frame that outlasts the rest.
#ifndef SKINNING_TESTS_SUPPORT_LONG_FAST_FRAME_H_
#define SKINNING_TESTS_SUPPORT_LONG_FAST_FRAME_H_

#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "client/client.h"
#include "skinning/v1/fast_service.pb.h"
#include "tests/support/data.h"
#include "tests/support/server_process.h"

namespace skinning::testing {

struct LongFastModel {
  std::string rig;   // "rigs/…", empty when a step failed (the test then has a failure)
  std::string bake;  // "rigs/…/bakes/…"
};

inline LongFastModel BakeLongFastModel(Client& client) {
  auto created = client.CreateRigFromGltf(FileBytes(DataPath("gltf/CesiumMan/CesiumMan.glb")));
  EXPECT_TRUE(created.ok()) << created.status();
  if (!created.ok()) return {};
  v1::BakeOptions fast;
  fast.mutable_fast_model()->set_extra_weight_count(256);
  auto started = client.StartBake(created->rig().name(), fast);
  EXPECT_TRUE(started.ok()) << started.status();
  if (!started.ok()) return {};
  auto baked = client.WatchBake(started->bake().name(), [](const v1::Bake&) { return true; });
  EXPECT_TRUE(baked.ok()) << baked.status();
  if (!baked.ok()) return {};
  EXPECT_EQ(baked->metadata().state(), v1::BAKE_STATE_SUCCEEDED) << baked->error().message();
  if (baked->metadata().state() != v1::BAKE_STATE_SUCCEEDED) return {};
  return {created->rig().name(), started->bake().name()};
}

// The same through a client of `server` that waits up to 120 s (the bake takes seconds).
inline LongFastModel BakeLongFastModel(const ServerProcess& server) {
  ClientOptions o;
  o.target = server.address();
  o.deadline = std::chrono::seconds(120);
  Client client(o);
  return BakeLongFastModel(client);
}

// The long frame: joint `joint` (the root by default) moved by 0.5 along z, 1,000 iterations.
// Frames of different joints are different constraint sets, each computed anew.
inline v1::SolveSessionRequest LongFastFrame(const std::string& bake, int joint = 0) {
  v1::SolveSessionRequest frame;
  frame.set_bake(bake);
  v1::HandleConstraint* c = frame.add_constraints();
  c->set_joint(joint);
  c->set_kind(v1::HandleConstraint::KIND_TRANSFORM);
  for (float x : {1.f, 0.f, 0.f, 0.f, 0.f, 1.f, 0.f, 0.f, 0.f, 0.f, 1.f, 0.5f}) c->add_target(x);
  frame.set_iteration_count(1000);
  return frame;
}

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_LONG_FAST_FRAME_H_
