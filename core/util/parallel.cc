#include "core/util/parallel.h"

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace skinning {

int ResolveThreads(int threads) {
  if (threads > 0) return threads;
  const int hw = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, hw);
}

void ParallelChunks(int n, int threads, const std::function<void(int, int, int)>& fn) {
  threads = std::max(1, std::min(threads, n / 256 + 1));
  if (threads == 1) {
    fn(0, n, 0);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (int t = 0; t + 1 < threads; ++t) {
    const int b = static_cast<int>(static_cast<int64_t>(n) * t / threads);
    const int e = static_cast<int>(static_cast<int64_t>(n) * (t + 1) / threads);
    pool.emplace_back(fn, b, e, t);
  }
  fn(static_cast<int>(static_cast<int64_t>(n) * (threads - 1) / threads), n, threads - 1);
  for (std::thread& th : pool) th.join();
}

}  // namespace skinning
