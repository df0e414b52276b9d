// Fuzz target: the Connect door's JSON fast path (server/http/proto_json.h) against protobuf's
// converter. The first byte picks a request type, the rest is its JSON text. Wherever the fast
// parse answers, protobuf must accept the text and give the same message, and the fast print of
// that message (where it answers) must be protobuf's bytes; otherwise the target aborts.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "skinning/v1/bake_service.pb.h"
#include "skinning/v1/fast_service.pb.h"
#include "skinning/v1/pose_service.pb.h"
#include "skinning/v1/rig_service.pb.h"
#include "tests/support/proto_json_oracle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const google::protobuf::Message* const kTypes[] = {
      &skinning::v1::PoseRequest::default_instance(),
      &skinning::v1::PoseSessionRequest::default_instance(),
      &skinning::v1::PoseClipRequest::default_instance(),
      &skinning::v1::CreateRigRequest::default_instance(),
      &skinning::v1::StartBakeRequest::default_instance(),
      &skinning::v1::SolveSessionRequest::default_instance(),
      &skinning::v1::CreateExampleRequest::default_instance()};
  const auto* prototype = kTypes[data[0] % (sizeof kTypes / sizeof kTypes[0])];
  const std::string json(reinterpret_cast<const char*>(data) + 1, size - 1);
  const auto verdict = skinning::testing::CheckFastJson(*prototype, json);
  if (!verdict.disagreement.empty()) {
    std::fprintf(stderr, "proto_json disagrees with protobuf (%s) on: %s\n",
                 verdict.disagreement.c_str(), json.c_str());
    std::abort();
  }
  return 0;
}
