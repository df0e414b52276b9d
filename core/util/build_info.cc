#include "core/util/build_info.h"

#include <cholmod.h>

#include <Eigen/Core>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

// Set by core/CMakeLists.txt on this file alone, so that a new version recompiles one file.
#ifndef SKINNING_PROJECT_VERSION
#error "SKINNING_PROJECT_VERSION is set by core/CMakeLists.txt"
#endif
#ifndef SKINNING_BUILD_TYPE
#error "SKINNING_BUILD_TYPE is set by core/CMakeLists.txt"
#endif

namespace skinning {

std::string ProjectVersion() { return SKINNING_PROJECT_VERSION; }

std::string BuildType() { return SKINNING_BUILD_TYPE; }

std::string CoreLibraryVersions() {
  int cholmod[3] = {0, 0, 0};
  cholmod_version(cholmod);
  return absl::StrCat("Eigen ", EIGEN_WORLD_VERSION, ".", EIGEN_MAJOR_VERSION, ".", EIGEN_MINOR_VERSION,
                      ", CHOLMOD ", cholmod[0], ".", cholmod[1], ".", cholmod[2]);
}

std::string DescribeBuild(const std::vector<std::string>& libraries) {
  std::vector<std::string> all = libraries;
  all.push_back(CoreLibraryVersions());
  const std::string type = BuildType().empty() ? "no build type" : BuildType() + " build";
  return absl::StrCat(ProjectVersion(), " (", type, "; ", absl::StrJoin(all, ", "), ")");
}

}  // namespace skinning
