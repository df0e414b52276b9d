// What the server and skinctl say for --version: the build (core/util/build_info.h) with the RPC
// libraries both programs link, in one place so that the two say the same.
#ifndef SKINNING_SERVER_CONVERT_PROGRAM_BUILD_H_
#define SKINNING_SERVER_CONVERT_PROGRAM_BUILD_H_

#include <string>

namespace skinning {

// "0.1.0 (Release build; gRPC 1.51.1, protobuf 3.21.12, Eigen 3.4.0, CHOLMOD 3.0.14)".
std::string DescribeProgramBuild();

}  // namespace skinning

#endif  // SKINNING_SERVER_CONVERT_PROGRAM_BUILD_H_
