// Fuzz target: the front door's gzip (server/http/gzip.h) on outside bytes. Gunzip of the input
// (a request body with Content-Encoding: gzip) either fails with INVALID_ARGUMENT or
// RESOURCE_EXHAUSTED or gives at most its limit, which Gzip then compresses and Gunzip gives back
// unchanged; and the input itself, compressed at a level it picks, inflates back to itself.
// Anything else aborts.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "server/http/gzip.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kLimit = size_t{1} << 20;
  const absl::string_view in(reinterpret_cast<const char*>(data), size);
  auto fail = [](const char* what) {
    std::fprintf(stderr, "gzip_fuzz: %s\n", what);
    std::abort();
  };
  absl::StatusOr<std::string> out = skinning::Gunzip(in, kLimit);
  if (out.ok()) {
    if (out->size() > kLimit) fail("Gunzip passed its limit");
    absl::StatusOr<std::string> again = skinning::Gunzip(skinning::Gzip(*out, 1).value(), kLimit);
    if (!again.ok() || *again != *out) fail("Gzip of Gunzip's output does not inflate back to it");
  } else if (out.status().code() != absl::StatusCode::kInvalidArgument &&
             out.status().code() != absl::StatusCode::kResourceExhausted) {
    fail("Gunzip failed with another code");
  }
  const int level = size > 0 ? 1 + data[0] % 9 : 1;
  absl::StatusOr<std::string> back = skinning::Gunzip(skinning::Gzip(in, level).value(), size);
  if (!back.ok() || *back != in) fail("the input compressed does not inflate back to itself");
  return 0;
}
