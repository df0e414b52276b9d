// Wall-clock durations for the reports (BakeReport, domain and solver reports).
#ifndef SKINNING_CORE_UTIL_TIMING_H_
#define SKINNING_CORE_UTIL_TIMING_H_

#include <chrono>

namespace skinning {

// Seconds from `start` to now on the steady clock.
inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace skinning

#endif  // SKINNING_CORE_UTIL_TIMING_H_
