#include "core/util/blas_kernels.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

namespace skinning {

namespace {

constexpr char kCoreVariable[] = "OPENBLAS_CORETYPE";
constexpr char kChoseVariable[] = "SKINNING_OPENBLAS_CHOSE";

using NameFn = char* (*)();

// The text an OpenBLAS function without arguments returns, or "" when the loaded BLAS is not
// OpenBLAS. Found with dlsym: there is no link dependency on OpenBLAS.
std::string OpenBlasFunction(const char* name) {
  const auto fn = reinterpret_cast<NameFn>(dlsym(RTLD_DEFAULT, name));
  if (fn == nullptr) return "";
  const char* text = fn();
  return text == nullptr ? "" : std::string(text);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

CpuVectorSupport DetectCpuVectorSupport() {
  CpuVectorSupport cpu;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  cpu.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  cpu.avx512 = cpu.avx2_fma && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
#endif
  return cpu;
}

std::string BetterOpenBlasCore(std::string_view chosen, CpuVectorSupport cpu) {
  // OpenBLAS's x86-64 cores without AVX2 kernels (its names from openblas_get_corename).
  static constexpr const char* kWithoutAvx2[] = {
      "prescott", "core2",     "penryn",     "dunnington", "nehalem",   "sandybridge", "atom",
      "opteron",  "opteron(sse3)", "barcelona", "bobcat",  "bulldozer", "piledriver",  "steamroller",
      "excavator"};
  const std::string name = Lower(chosen);
  const bool weak = std::any_of(std::begin(kWithoutAvx2), std::end(kWithoutAvx2),
                                [&](const char* w) { return name == w; });
  if (!weak) return "";
  if (cpu.avx512) return "SkylakeX";
  if (cpu.avx2_fma) return "Haswell";
  return "";
}

std::string OpenBlasCoreName() { return OpenBlasFunction("openblas_get_corename"); }

void UseFastestBlasKernels(char** argv) {
  if (argv == nullptr || argv[0] == nullptr) return;
  if (const char* set = std::getenv(kCoreVariable); set != nullptr && set[0] != '\0') return;
  const std::string chosen = OpenBlasCoreName();
  if (chosen.empty()) return;
  const std::string better = BetterOpenBlasCore(chosen, DetectCpuVectorSupport());
  if (better.empty()) return;
  setenv(kCoreVariable, better.c_str(), 1);
  setenv(kChoseVariable, chosen.c_str(), 1);
  execv("/proc/self/exe", argv);
  // No exec (no /proc): go on with OpenBLAS's choice, and say nothing false about it.
  unsetenv(kCoreVariable);
  unsetenv(kChoseVariable);
}

void RestartOpenBlasThreads() {
  using Fn = int (*)();
  const auto shutdown = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "blas_thread_shutdown_"));
  const auto init = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "blas_thread_init"));
  if (shutdown == nullptr || init == nullptr) return;
  shutdown();
  init();
}

std::string OpenBlasVersion() {
  if (OpenBlasCoreName().empty()) return "";
  // openblas_get_config: "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Prescott MAX_THREADS=64".
  std::string version = OpenBlasFunction("openblas_get_config");
  if (const size_t space = version.find(' '); space != std::string::npos) {
    version = version.substr(0, version.find(' ', space + 1));
  }
  return version.empty() ? "OpenBLAS" : version;
}

std::string ReplacedOpenBlasCore() {
  const std::string core = OpenBlasCoreName();
  const char* forced = std::getenv(kCoreVariable);
  const char* chose = std::getenv(kChoseVariable);
  if (core.empty() || forced == nullptr || chose == nullptr || chose[0] == '\0' || Lower(forced) != Lower(core))
    return "";
  return chose;
}

std::string DescribeBlas() {
  const std::string core = OpenBlasCoreName();
  if (core.empty()) return "not OpenBLAS";
  std::string out = OpenBlasVersion() + ", " + core + " kernels";
  const char* forced = std::getenv(kCoreVariable);
  if (const std::string replaced = ReplacedOpenBlasCore(); !replaced.empty()) {
    out += " (OpenBLAS chose " + replaced + " for this CPU)";
  } else if (forced != nullptr && forced[0] != '\0') {
    out += " (from OPENBLAS_CORETYPE=" + std::string(forced) + ")";
  }
  return out;
}

}  // namespace skinning
