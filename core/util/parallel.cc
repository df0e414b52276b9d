#include "core/util/parallel.h"

#include <algorithm>
#include <atomic>
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

bool ParallelFor(int n, int max_threads, const Progress& progress, const std::function<void(int)>& fn) {
  constexpr int kChunk = 256;
  const int hw = static_cast<int>(std::thread::hardware_concurrency());
  const int threads = std::max(1, std::min({hw, max_threads, (n + kChunk - 1) / kChunk}));
  std::atomic<int> next{0};
  std::atomic<bool> stop{false};
  auto work = [&]() {
    while (!stop.load(std::memory_order_relaxed)) {
      const int begin = next.fetch_add(kChunk);
      if (begin >= n) break;
      if (progress.Cancelled()) {
        stop = true;
        break;
      }
      const int end = std::min(n, begin + kChunk);
      for (int i = begin; i < end; ++i) fn(i);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  return !stop.load();
}

}  // namespace skinning
