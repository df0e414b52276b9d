// Precompiled for every translation unit of the core library (core/CMakeLists.txt): the standard,
// Eigen and Abseil headers nearly all of them parse, parsed once per build instead of once per
// file (most of a small core file's compile time; CI builds the core twice, plain and sanitized).
// Only third-party and standard headers go here, so a change to our own code never rebuilds it;
// each file still includes what it uses.
#ifndef SKINNING_CORE_UTIL_PCH_H_
#define SKINNING_CORE_UTIL_PCH_H_

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <Eigen/Dense>
#include <Eigen/Geometry>
#include <Eigen/Sparse>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#endif  // SKINNING_CORE_UTIL_PCH_H_
