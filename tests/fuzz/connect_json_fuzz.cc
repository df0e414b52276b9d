// Fuzz target: the Connect door's JSON fast path (server/http/proto_json.h) against protobuf's
// converter. The first byte picks a request type, the rest is its JSON text. Wherever the fast
// parse answers, protobuf must accept the text and give the same message, and the fast print of
// that message (where it answers) must be protobuf's bytes; otherwise the target aborts.
#include <google/protobuf/util/json_util.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "server/http/proto_json.h"
#include "skinning/v1/bake_service.pb.h"
#include "skinning/v1/fast_service.pb.h"
#include "skinning/v1/pose_service.pb.h"
#include "skinning/v1/rig_service.pb.h"
#include "tests/support/proto_bytes.h"

namespace {

[[noreturn]] void Fail(const char* what, const std::string& json) {
  std::fprintf(stderr, "proto_json disagrees with protobuf (%s) on: %s\n", what, json.c_str());
  std::abort();
}

}  // namespace

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
  std::unique_ptr<google::protobuf::Message> fast(prototype->New());
  if (!skinning::proto_json::Parse(json, fast.get())) {
    if (fast->ByteSizeLong() != 0) Fail("a declined parse left fields set", json);
    return 0;
  }
  std::unique_ptr<google::protobuf::Message> reference(prototype->New());
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  if (!google::protobuf::util::JsonStringToMessage(json, reference.get(), options).ok())
    Fail("protobuf refuses what the fast parse took", json);
  using skinning::testing::DeterministicBytes;
  if (DeterministicBytes(*fast) != DeterministicBytes(*reference))
    Fail("a different message", json);
  std::string printed, expected;
  if (skinning::proto_json::Print(*fast, &printed) &&
      (!google::protobuf::util::MessageToJsonString(*fast, &expected).ok() || printed != expected))
    Fail("a different print", json);
  return 0;
}
