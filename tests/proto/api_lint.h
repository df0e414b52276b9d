// The API conventions that `buf lint` does not know (Google's AIPs), checked over a descriptor
// set that protoc wrote with --include_source_info.
#ifndef SKINNING_TESTS_PROTO_API_LINT_H_
#define SKINNING_TESTS_PROTO_API_LINT_H_

#include <string>
#include <vector>

#include "google/protobuf/descriptor.pb.h"

namespace skinning {

// One broken convention: `rule` is a short id (listed in api_lint.cc), `where` the element's full
// name, `message` what is wrong.
struct ApiViolation {
  std::string rule;
  std::string where;
  std::string message;
};

// Checks every file of `set` whose package is `package` (the others are only imported). Errors in
// the set itself (a file that does not build) are reported as rule "descriptor".
std::vector<ApiViolation> LintApi(const google::protobuf::FileDescriptorSet& set,
                                  const std::string& package);

}  // namespace skinning

#endif  // SKINNING_TESTS_PROTO_API_LINT_H_
