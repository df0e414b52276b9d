// Small thread helpers for the volumetric builders' and solvers' loops.
#ifndef SKINNING_CORE_UTIL_PARALLEL_H_
#define SKINNING_CORE_UTIL_PARALLEL_H_

#include <functional>

#include "core/util/progress.h"

namespace skinning {

// `threads` when positive, else the CPUs this process may use (AvailableCpus: affinity and cgroup quota).
int ResolveThreads(int threads);

// Runs fn(begin, end, chunk) over [0, n) in up to `threads` contiguous chunks (chunk = 0 …
// chunks − 1; at most one chunk per 256 items), the last on the caller's thread, and waits.
void ParallelChunks(int n, int threads, const std::function<void(int, int, int)>& fn);

// Runs fn(i) for every i in [0, n) on up to min(max_threads, AvailableCpus()) threads (the
// caller's included, at most one per 256 items), handing out chunks of 256 indices in order as
// threads become free. Stops handing out chunks once progress is cancelled and then returns
// false (some fn(i) were not run); true when every fn(i) ran.
bool ParallelFor(int n, int max_threads, const Progress& progress, const std::function<void(int)>& fn);

// Turns off the OpenMP parallel regions that the calling thread starts (libgomp keeps
// max-active-levels per thread, so each worker thread calls this for itself). Found with dlsym
// (no link dependency); nothing if libgomp is not loaded.
void DisableOpenMpOnThisThread();

// While one is alive (constructed with active = true), OpenBLAS runs on one thread; the last
// one to go restores the thread count found (reference-counted across concurrent bakes and
// solves). For solvers that run their own loops on several threads between sparse solves: a
// multithreaded OpenBLAS there oversubscribes the cores, and its idle threads spin (sched_yield)
// through the solver's own parallel loops. Measured on 2 cores: BBW's handles 3–4× slower with it;
// the elastic solve's local step (bench/emw_bench, 40k nodes) 31 ms instead of 17. Found with
// dlsym, so there is no link dependency on OpenBLAS; with another BLAS it does nothing.
// (CHOLMOD's own OpenMP loops are turned off per worker thread instead, DisableOpenMpOnThisThread:
// they use a thread count fixed when SuiteSparse is built, 4 in Debian's, which OMP_NUM_THREADS
// does not bound; inside several BBW solver threads on 2 cores half the time went to futex
// waits, libigl hand on its tet mesh 10.4 s with, 5.1 s without.)
class SingleThreadedBlas {
 public:
  explicit SingleThreadedBlas(bool active);
  ~SingleThreadedBlas();
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;

 private:
  void (*set_)(int) = nullptr;  // openblas_set_num_threads while this one counts
};

// For a step that cannot check for cancellation itself (a sparse factorization: seconds at a
// fine resolution): runs `work` on a helper thread and waits for it, calling `stop` every 20 ms.
// Returns true when `work` finished; false as soon as stop() is true, leaving `work` to finish
// on the helper thread with its result dropped. So `work` must own (hold shared_ptrs to)
// everything it touches. The helper has the caller's OpenMP nesting setting. At process exit,
// helpers still running are waited for (up to a minute) before the libraries are torn down.
bool RunUnlessStopped(std::function<void()> work, const std::function<bool()>& stop);

}  // namespace skinning

#endif  // SKINNING_CORE_UTIL_PARALLEL_H_
