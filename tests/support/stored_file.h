// What a store wrote, read from outside the server (whole files with data.h's FileBytes): the
// little-endian fields of the stores' 20-byte header (magic "SKB1", version, length, CRC-32;
// server/store/blob_framing.h), and a stored file's payload, for tests that look at or damage
// what the server stored.
#ifndef SKINNING_TESTS_SUPPORT_STORED_FILE_H_
#define SKINNING_TESTS_SUPPORT_STORED_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/support/data.h"

namespace skinning::testing {

// The unsigned little-endian integer of `bytes` bytes at `at` in `s`.
inline uint64_t LittleEndian(const std::string& s, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(s[at + i])) << (8 * i);
  return v;
}

// The payload of the stored file `path`; a file without the header (written before the
// framing) as it is; empty when it cannot be read.
inline std::string StoredPayload(const std::string& path) {
  const std::string raw = FileBytes(path);
  constexpr size_t kHeader = 20;
  return raw.size() >= kHeader && raw.compare(0, 4, "SKB1") == 0 ? raw.substr(kHeader) : raw;
}

}  // namespace skinning::testing

#endif  // SKINNING_TESTS_SUPPORT_STORED_FILE_H_
