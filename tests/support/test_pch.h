// Precompiled for every test suite and the test support library (tests/CMakeLists.txt): the
// headers nearly every test parses (the standard library, GoogleTest, Eigen, Abseil's status and
// strings, gRPC). Parsing them once per target instead of once per file takes about a third off
// the suites' compile time on the 2-core CI machine. Only third-party and standard headers go
// here, so a change to our own code never rebuilds the header.
#ifndef SKINNING_TESTS_SUPPORT_TEST_PCH_H_
#define SKINNING_TESTS_SUPPORT_TEST_PCH_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <Eigen/Dense>
#include <Eigen/Geometry>
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#endif  // SKINNING_TESTS_SUPPORT_TEST_PCH_H_
