// What a build of the project is: its version (CMakeLists.txt's project()), its CMake build type,
// and the versions of the numerical libraries the results depend on. The programs print it for
// --version and at start, and the server exports it as the metric skinning_build_info, so that a
// fleet of replicas shows which build each runs.
#ifndef SKINNING_CORE_UTIL_BUILD_INFO_H_
#define SKINNING_CORE_UTIL_BUILD_INFO_H_

#include <string>
#include <vector>

namespace skinning {

// "0.1.0": the project's version.
std::string ProjectVersion();
// "Release", "Debug", …: CMake's build type ("" when none was set).
std::string BuildType();
// "Eigen 3.4.0, CHOLMOD 3.0.14": Eigen's as compiled (headers only), CHOLMOD's as loaded.
std::string CoreLibraryVersions();
// "0.1.0 (Release build; gRPC 1.51.1, Eigen 3.4.0, CHOLMOD 3.0.14)": `libraries` ("gRPC 1.51.1")
// come before CoreLibraryVersions().
std::string DescribeBuild(const std::vector<std::string>& libraries = {});

}  // namespace skinning

#endif  // SKINNING_CORE_UTIL_BUILD_INFO_H_
