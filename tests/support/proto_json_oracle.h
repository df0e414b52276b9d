// The oracle for server/http/proto_json.h, shared by its unit test and its fuzz target: on a JSON
// text, the fast path either declines (leaving the message cleared) or answers as protobuf's
// converter does, called as the Connect door calls it (unknown names are errors): protobuf
// accepts the text with the same message, and the fast print of that message, where it answers,
// is protobuf's print.
#ifndef SKINNING_TESTS_SUPPORT_PROTO_JSON_ORACLE_H_
#define SKINNING_TESTS_SUPPORT_PROTO_JSON_ORACLE_H_

#include <google/protobuf/message.h>
#include <google/protobuf/util/json_util.h>

#include <memory>
#include <string>

#include "server/http/proto_json.h"
#include "tests/support/proto_bytes.h"

namespace skinning::testing {

struct JsonVerdict {
  bool answered = false;     // the fast parse took the text
  std::string disagreement;  // empty when the fast path agrees with protobuf
};

inline JsonVerdict CheckFastJson(const google::protobuf::Message& prototype,
                                 const std::string& json) {
  JsonVerdict verdict;
  std::unique_ptr<google::protobuf::Message> fast(prototype.New());
  if (!proto_json::Parse(json, fast.get())) {
    if (fast->ByteSizeLong() != 0) verdict.disagreement = "a declined parse left fields set";
    return verdict;
  }
  verdict.answered = true;
  std::unique_ptr<google::protobuf::Message> reference(prototype.New());
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  if (!google::protobuf::util::JsonStringToMessage(json, reference.get(), options).ok()) {
    verdict.disagreement = "protobuf refuses what the fast parse took";
  } else if (DeterministicBytes(*fast) != DeterministicBytes(*reference)) {
    verdict.disagreement = "a different message";
  } else {
    std::string printed, expected;
    if (proto_json::Print(*fast, &printed) &&
        (!google::protobuf::util::MessageToJsonString(*fast, &expected).ok() ||
         printed != expected))
      verdict.disagreement = "a different print";
  }
  return verdict;
}

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_PROTO_JSON_ORACLE_H_
