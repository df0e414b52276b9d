// OpenBLAS's kernels on CPUs newer than the OpenBLAS build.
//
// OpenBLAS chooses its kernels by CPU model when it is loaded. Debian 12's OpenBLAS (0.3.21) does
// not know CPUs released after it, such as Intel's Xeon "Emerald Rapids" (family 6, model 207),
// and falls back to its Prescott kernels (SSE3), although such a CPU has AVX-512. Every
// supernodal CHOLMOD factorization and solve runs through those kernels: on such a CPU
// bench/bake_bench's BBW on RiggedFigure took 6.3 s with them and 3.0 s with the SkylakeX ones,
// and the elastic gold standard's cold solve (bench/emw_bench) 1.27 s and 0.88 s.
//
// OpenBLAS takes the kernels from OPENBLAS_CORETYPE, read once when the library is loaded, which
// is before main. So UseFastestBlasKernels re-executes the program with that variable set.
#ifndef SKINNING_CORE_UTIL_BLAS_KERNELS_H_
#define SKINNING_CORE_UTIL_BLAS_KERNELS_H_

#include <string>
#include <string_view>

namespace skinning {

// What the CPU can run and the OS saves the registers of (XCR0), as the compiler's runtime sees
// it (__builtin_cpu_supports).
struct CpuVectorSupport {
  bool avx2_fma = false;  // AVX2 and FMA
  bool avx512 = false;    // AVX-512 F, DQ, BW and VL (what OpenBLAS's SkylakeX kernels use)
};
CpuVectorSupport DetectCpuVectorSupport();

// The OpenBLAS core to force where OpenBLAS chose `chosen` (openblas_get_corename, any case):
// "SkylakeX" with AVX-512, else "Haswell" with AVX2 and FMA, when `chosen` is one of OpenBLAS's
// cores without AVX2 (Prescott, its fallback for an unknown CPU; Core2, Nehalem, Sandybridge,
// Atom; AMD's before Zen). "" (keep OpenBLAS's choice) otherwise: a core OpenBLAS chose for a CPU
// it knows is never replaced.
std::string BetterOpenBlasCore(std::string_view chosen, CpuVectorSupport cpu);

// The first thing in main: when the loaded BLAS is OpenBLAS, OPENBLAS_CORETYPE is not set and
// BetterOpenBlasCore names a core, re-executes this program (/proc/self/exe: same arguments,
// descriptors and process id) with OPENBLAS_CORETYPE set to it, and
// SKINNING_OPENBLAS_CHOSE to OpenBLAS's own choice (DescribeBlas reports both). Returns, having
// changed nothing, in every other case and when the exec fails. The variables are inherited, so
// the program's children do not re-execute again.
void UseFastestBlasKernels(char** argv);

// The kernels OpenBLAS runs on (openblas_get_corename: "Prescott", "SkylakeX"), or "" when the
// loaded BLAS is not OpenBLAS.
std::string OpenBlasCoreName();

// Stops OpenBLAS's worker threads and starts them again from the calling thread, so that they
// take its signal mask. OpenBLAS starts them when it is loaded, before main: a server that blocks
// its shutdown signals in main (and takes them with sigwait) still had threads that SIGTERM could
// be delivered to, and while METIS orders a matrix for CHOLMOD its error handler (a longjmp to the
// METIS caller's stack, GKlib's SIGTERM handler) is the process's SIGTERM handler: a SIGTERM then
// crashed the server (SIGSEGV in ____longjmp_chk). Nothing without OpenBLAS (dlsym).
void RestartOpenBlasThreads();

// OpenBLAS's version ("OpenBLAS 0.3.21", from openblas_get_config), or "" when the loaded BLAS
// is not OpenBLAS.
std::string OpenBlasVersion();

// The kernels OpenBLAS itself chose for this CPU when UseFastestBlasKernels replaced them (e.g.
// "Prescott"), else "".
std::string ReplacedOpenBlasCore();

// One line for logs: "OpenBLAS 0.3.21, SkylakeX kernels (OpenBLAS chose Prescott for this CPU)",
// "OpenBLAS 0.3.21, Haswell kernels", "… (from OPENBLAS_CORETYPE)", or "not OpenBLAS".
std::string DescribeBlas();

}  // namespace skinning

#endif  // SKINNING_CORE_UTIL_BLAS_KERNELS_H_
