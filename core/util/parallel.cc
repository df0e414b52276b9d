#include "core/util/parallel.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "core/util/cpus.h"

namespace skinning {

int ResolveThreads(int threads) {
  if (threads > 0) return threads;
  return AvailableCpus();
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
  const int threads = std::max(1, std::min({AvailableCpus(), max_threads, (n + kChunk - 1) / kChunk}));
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

namespace {

// Helpers of RunUnlessStopped that are still running.
struct AbandonedHelpers {
  std::mutex mu;
  std::condition_variable cv;
  int running = 0;
};

AbandonedHelpers& Helpers() {
  static AbandonedHelpers* helpers = new AbandonedHelpers;  // never destroyed: see ExitWaiter
  return *helpers;
}

// Waits at exit for helpers still running, before the shared libraries' finalizers run (OpenBLAS
// frees its buffers there). The helpers' state is never destroyed, because a helper that
// outlives the wait still touches it.
struct ExitWaiter {
  ~ExitWaiter() {
    AbandonedHelpers& h = Helpers();
    std::unique_lock<std::mutex> lock(h.mu);
    h.cv.wait_for(lock, std::chrono::minutes(1), [&h] { return h.running == 0; });
  }
};

int OpenMpMaxActiveLevels() {
  using GetFn = int (*)();
  static const GetFn get = reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "omp_get_max_active_levels"));
  return get != nullptr ? get() : -1;
}

void SetOpenMpMaxActiveLevels(int levels) {
  using SetFn = void (*)(int);
  static const SetFn set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "omp_set_max_active_levels"));
  if (set != nullptr && levels >= 0) set(levels);
}

}  // namespace

void DisableOpenMpOnThisThread() { SetOpenMpMaxActiveLevels(0); }

bool RunUnlessStopped(std::function<void()> work, const std::function<bool()>& stop) {
  static ExitWaiter exit_waiter;
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
  };
  auto shared = std::make_shared<Shared>();
  AbandonedHelpers& helpers = Helpers();
  {
    std::lock_guard<std::mutex> lock(helpers.mu);
    ++helpers.running;
  }
  const int levels = OpenMpMaxActiveLevels();
  std::thread helper([shared, &helpers, levels, work = std::move(work)]() mutable {
    SetOpenMpMaxActiveLevels(levels);
    work();
    work = nullptr;  // release what it owns before saying done
    {
      std::lock_guard<std::mutex> lock(shared->mu);
      shared->done = true;
    }
    shared->cv.notify_all();
    std::lock_guard<std::mutex> lock(helpers.mu);
    --helpers.running;
    helpers.cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(shared->mu);
  while (!shared->done) {
    if (stop()) {
      lock.unlock();
      helper.detach();
      return false;
    }
    shared->cv.wait_for(lock, std::chrono::milliseconds(20));
  }
  lock.unlock();
  helper.join();
  return true;
}

namespace {
std::mutex& BlasMutex() {
  static std::mutex mutex;
  return mutex;
}
int blas_users = 0;     // guarded by BlasMutex()
int blas_previous = 1;  // the thread count before the first user, guarded by BlasMutex()
}  // namespace

SingleThreadedBlas::SingleThreadedBlas(bool active) {
  if (!active) return;
  using SetFn = void (*)(int);
  using GetFn = int (*)();
  const auto set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  const auto get = reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (set == nullptr || get == nullptr) return;
  set_ = set;
  std::lock_guard<std::mutex> lock(BlasMutex());
  if (blas_users++ == 0) {
    blas_previous = get();
    set_(1);
  }
}

SingleThreadedBlas::~SingleThreadedBlas() {
  if (set_ == nullptr) return;
  std::lock_guard<std::mutex> lock(BlasMutex());
  if (--blas_users == 0) set_(blas_previous);
}

}  // namespace skinning
