// api_lint DESCRIPTOR_SET PACKAGE: checks PACKAGE's files in a descriptor set written by
// `protoc --include_imports --include_source_info --descriptor_set_out=...` against the API
// conventions of api_lint.cc. Prints one line per violation and exits 1 if there is any.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "tests/proto/api_lint.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s DESCRIPTOR_SET PACKAGE\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  google::protobuf::FileDescriptorSet set;
  if (!in || !set.ParseFromString(bytes.str())) {
    std::fprintf(stderr, "%s: cannot read a descriptor set\n", argv[1]);
    return 2;
  }
  const std::vector<skinning::ApiViolation> violations = skinning::LintApi(set, argv[2]);
  for (const auto& v : violations)
    std::printf("[%s] %s: %s\n", v.rule.c_str(), v.where.c_str(), v.message.c_str());
  std::printf("%zu violation(s) of the API conventions in package %s\n", violations.size(), argv[2]);
  return violations.empty() ? 0 : 1;
}
