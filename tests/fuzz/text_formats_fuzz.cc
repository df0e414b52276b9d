// Fuzz targets for the text formats a client or the tests read: one binary per format, chosen
// at compile time (SKINNING_FUZZ_FORMAT). Each parse must return a value or a clear error for any
// bytes: no crash, no hang, no sanitizer report, no allocation the input does not justify.
#include <cstdint>
#include <string>

#include "core/io/dmat.h"
#include "core/io/medit.h"
#include "core/io/obj.h"
#include "core/io/off.h"
#include "core/io/tgf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
#if SKINNING_FUZZ_FORMAT == 1
  (void)skinning::ParseObj(text, "fuzz.obj");
#elif SKINNING_FUZZ_FORMAT == 2
  (void)skinning::ParseOff(text, "fuzz.off");
#elif SKINNING_FUZZ_FORMAT == 3
  (void)skinning::ParseMedit(text, "fuzz.mesh");
#elif SKINNING_FUZZ_FORMAT == 4
  if (auto graph = skinning::ParseTgf(text, "fuzz.tgf"); graph.ok()) (void)skinning::SkeletonFromBones(*graph);
#elif SKINNING_FUZZ_FORMAT == 5
  (void)skinning::ParseDmat(text, "fuzz.dmat");
#else
#error "SKINNING_FUZZ_FORMAT must be 1 (obj) .. 5 (dmat)"
#endif
  return 0;
}
