#include "server/convert/program_build.h"

#include <google/protobuf/stubs/common.h>
#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "core/util/build_info.h"

namespace skinning {

std::string DescribeProgramBuild() {
  return DescribeBuild({absl::StrCat("gRPC ", grpc::Version()),
                        absl::StrCat("protobuf ", google::protobuf::internal::VersionString(GOOGLE_PROTOBUF_VERSION))});
}

}  // namespace skinning
