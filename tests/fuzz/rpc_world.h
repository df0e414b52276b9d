// The server the RPC fuzz target calls into, in-process: a filesystem store in a fresh temporary
// folder holding a weighted rig (with one PSD example), an unweighted rig, a bone-heat bake and a
// FAST model bake of it. Built the same way by make_seeds (which writes seed requests naming these
// resources) and by rpc_fuzz (whose inputs then find them): the names are content addresses.
#ifndef SKINNING_TESTS_FUZZ_RPC_WORLD_H_
#define SKINNING_TESTS_FUZZ_RPC_WORLD_H_

#include <cstdint>
#include <memory>
#include <string>

#include "server/api/call_context.h"
#include "server/server.h"

namespace skinning::fuzz {

// The methods of rpc_fuzz, by an input's first byte (modulo kMethodCount).
enum RpcMethod : uint8_t {
  kCreateRig, kGetRig, kListRigs, kDeleteRig, kCreateExample, kGetExample, kListExamples, kDeleteExample,
  kPose, kPoseClip, kPoseSession, kStartBake, kGetBake, kWatchBake, kCancelBake, kGetWeights, kSolve,
  kSolveSession, kGetAnimations, kMethodCount
};

struct RpcWorld {
  std::unique_ptr<SkinningServer> server;
  std::string store_dir;
  std::string rig;        // rigs/rig-…, weighted, two joints
  std::string bare_rig;   // rigs/rig-…, no weights
  std::string example;    // rigs/rig-…/examples/bend
  std::string heat_bake;  // bone heat of bare_rig
  std::string fast_bake;  // FAST model of rig
};

// Started on first use; aborts with a message when it cannot be built.
RpcWorld& World();

// A context whose deadline is `seconds` from now (so no input runs long).
CallContext ShortCall(double seconds = 1.0);

}  // namespace skinning::fuzz

#endif  // SKINNING_TESTS_FUZZ_RPC_WORLD_H_
