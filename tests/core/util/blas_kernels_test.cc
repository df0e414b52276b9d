// OpenBLAS's kernels. The choice is checked on OpenBLAS's core names for the CPUs it may meet;
// the re-execution runs for real: this test process was started by the suites' main, which calls
// UseFastestBlasKernels (tests/e2e/server_test.cc checks the server's, started without
// OPENBLAS_CORETYPE).
#include "core/util/blas_kernels.h"

#include <cstdlib>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace skinning {
namespace {
namespace SKINNING_TEST_FILE {

constexpr CpuVectorSupport kSse{false, false};
constexpr CpuVectorSupport kAvx2{true, false};
constexpr CpuVectorSupport kAvx512{true, true};

TEST(BlasKernels, OpenBlasFallbackForAnUnknownCpuIsReplacedByWhatTheCpuRuns) {
  // Debian 12's OpenBLAS 0.3.21 on a Xeon of family 6 model 207 ("Emerald Rapids") says Prescott.
  EXPECT_EQ(BetterOpenBlasCore("Prescott", kAvx512), "SkylakeX");
  EXPECT_EQ(BetterOpenBlasCore("Prescott", kAvx2), "Haswell");
  EXPECT_EQ(BetterOpenBlasCore("PRESCOTT", kAvx2), "Haswell");  // any case
  // Older cores chosen for a CPU that has more (e.g. a VM that hides the model).
  EXPECT_EQ(BetterOpenBlasCore("Sandybridge", kAvx2), "Haswell");
  EXPECT_EQ(BetterOpenBlasCore("Nehalem", kAvx512), "SkylakeX");
  EXPECT_EQ(BetterOpenBlasCore("Core2", kAvx2), "Haswell");
  EXPECT_EQ(BetterOpenBlasCore("Barcelona", kAvx2), "Haswell");
  EXPECT_EQ(BetterOpenBlasCore("Excavator", kAvx2), "Haswell");
}

TEST(BlasKernels, ACoreOpenBlasChoseForACpuItKnowsIsKept) {
  for (const char* core : {"Haswell", "SkylakeX", "Cooperlake", "SapphireRapids", "Zen", "Zen4"}) {
    EXPECT_EQ(BetterOpenBlasCore(core, kAvx512), "") << core;
    EXPECT_EQ(BetterOpenBlasCore(core, kAvx2), "") << core;
  }
  // A CPU without AVX2 keeps its SSE kernels: the AVX2 ones would stop at an illegal instruction.
  EXPECT_EQ(BetterOpenBlasCore("Prescott", kSse), "");
  EXPECT_EQ(BetterOpenBlasCore("Sandybridge", kSse), "");
  EXPECT_EQ(BetterOpenBlasCore("", kAvx512), "");  // not OpenBLAS
}

TEST(BlasKernels, ThisProcessRunsTheFastestKernelsItsCpuHas) {
  const std::string core = OpenBlasCoreName();
  if (core.empty()) {
    EXPECT_EQ(DescribeBlas(), "not OpenBLAS");
    GTEST_SKIP() << "the loaded BLAS is not OpenBLAS: nothing to choose";
  }
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  const char* chose = std::getenv("SKINNING_OPENBLAS_CHOSE");
  if (forced != nullptr && (chose == nullptr || chose[0] == '\0')) {
    // Whoever ran the suite chose the kernels; they are kept, and said to be theirs.
    EXPECT_THAT(DescribeBlas(), ::testing::HasSubstr("from OPENBLAS_CORETYPE=" + std::string(forced)));
    return;
  }
  EXPECT_EQ(BetterOpenBlasCore(core, DetectCpuVectorSupport()), "")
      << "OpenBLAS runs its " << core << " kernels on a CPU with AVX2: " << DescribeBlas();
  EXPECT_THAT(DescribeBlas(), ::testing::StartsWith("OpenBLAS "));
  EXPECT_THAT(DescribeBlas(), ::testing::HasSubstr(core + " kernels"));
  if (chose != nullptr && chose[0] != '\0') {
    // Re-executed: the line names OpenBLAS's own choice too.
    EXPECT_THAT(DescribeBlas(), ::testing::HasSubstr("OpenBLAS chose " + std::string(chose) + " for this CPU"));
  }
}

}  // namespace SKINNING_TEST_FILE
}  // namespace
}  // namespace skinning
