// Order statistics for the benchmarks' tables.
#ifndef SKINNING_BENCH_BENCH_STATS_H_
#define SKINNING_BENCH_BENCH_STATS_H_

#include <algorithm>
#include <cmath>
#include <vector>

namespace skinning {

// The p-quantile (0 ≤ p ≤ 1) of sorted values: element ⌊p·n⌋ (the last one for p = 1); NaN for
// no values.
inline double PercentileOfSorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return NAN;
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(p * sorted.size()))];
}

// The same of values in any order.
inline double Percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  return PercentileOfSorted(values, p);
}

}  // namespace skinning

#endif  // SKINNING_BENCH_BENCH_STATS_H_
