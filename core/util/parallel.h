// Small thread helpers for the volumetric solvers' per-element loops.
#ifndef SKINNING_CORE_UTIL_PARALLEL_H_
#define SKINNING_CORE_UTIL_PARALLEL_H_

#include <functional>

namespace skinning {

// `threads` when positive, else the hardware concurrency (at least 1).
int ResolveThreads(int threads);

// Runs fn(begin, end, chunk) over [0, n) in up to `threads` contiguous chunks (chunk = 0 …
// chunks − 1; at most one chunk per 256 items), the last on the caller's thread, and waits.
void ParallelChunks(int n, int threads, const std::function<void(int, int, int)>& fn);

}  // namespace skinning

#endif  // SKINNING_CORE_UTIL_PARALLEL_H_
